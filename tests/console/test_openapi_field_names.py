"""Our response schemas (``console/rest_v3/schemas.py``, ``schema_registry/schemas.py``, which
the generated-request test holds every answer to) against Confluent's documents, for a sample
checked by hand: the field names below, the required ones, and which schema and success status
each sampled operation answers were written here from reading Confluent's REST v3 document
(kafka-rest ``api/v3/openapi.yaml``, ``components/schemas``) and the registry's generated
document (``schema-registry-api-spec.yaml``); they are not read from any file.

Hourglass's additions beside Confluent's fields are named (``HOURGLASS_EXTRA``) and the one
field left out of the registry's ``Schema`` is Confluent's document's mistake (``ruleset``
beside ``ruleSet``; its server writes ``ruleSet`` only; README).
"""
from __future__ import annotations

import pytest

from console.rest_v3 import schemas as rest_v3
from hourglass.embedded import EmbeddedBroker
from schema_registry import schemas as registry
from tests.helpers.openapi_routes import app_of, document

_RESOURCE = {"kind", "metadata", "cluster_id"}
_CONFIG = _RESOURCE | {"name", "value", "is_default", "is_read_only", "is_sensitive", "source", "synonyms"}

# Confluent's REST v3 components: (all field names, required field names)
CONFLUENT_REST_V3 = {
    "ClusterData": (_RESOURCE | {"controller", "acls", "brokers", "broker_configs", "consumer_groups", "topics",
                                 "partition_reassignments"},
                    _RESOURCE | {"acls", "brokers", "broker_configs", "consumer_groups", "topics",
                                 "partition_reassignments"}),
    "BrokerData": (_RESOURCE | {"broker_id", "host", "port", "rack", "configs", "partition_replicas"},
                   _RESOURCE | {"broker_id", "configs", "partition_replicas"}),
    "TopicData": (_RESOURCE | {"topic_name", "is_internal", "replication_factor", "partitions_count", "partitions",
                               "configs", "partition_reassignments", "authorized_operations"},
                  _RESOURCE | {"topic_name", "is_internal", "replication_factor", "partitions_count", "partitions",
                               "configs", "partition_reassignments"}),
    "PartitionData": (_RESOURCE | {"topic_name", "partition_id", "leader", "replicas", "reassignment"},
                      _RESOURCE | {"topic_name", "partition_id", "replicas", "reassignment"}),
    "PartitionWithOffsetsData": (_RESOURCE | {"topic_name", "partition_id", "earliest_offset", "latest_offset"},
                                 _RESOURCE | {"topic_name", "partition_id", "earliest_offset", "latest_offset"}),
    "ReplicaData": (_RESOURCE | {"topic_name", "partition_id", "broker_id", "is_leader", "is_in_sync", "broker"},
                    _RESOURCE | {"topic_name", "partition_id", "broker_id", "is_leader", "is_in_sync", "broker"}),
    "TopicConfigData": (_CONFIG | {"topic_name"}, _CONFIG - {"value"} | {"topic_name"}),
    "BrokerConfigData": (_CONFIG | {"broker_id"}, _CONFIG - {"value"} | {"broker_id"}),
    "ClusterConfigData": (_CONFIG | {"config_type"}, _CONFIG - {"value"} | {"config_type"}),
    "ConfigSynonymData": ({"name", "value", "source"}, {"name", "source"}),
    "ConsumerGroupData": (_RESOURCE | {"consumer_group_id", "is_simple", "partition_assignor", "state", "type",
                                       "is_mixed_consumer_group", "coordinator", "consumers", "lag_summary"},
                          _RESOURCE | {"consumer_group_id", "is_simple", "partition_assignor", "state", "type",
                                       "is_mixed_consumer_group", "coordinator", "consumers", "lag_summary"}),
    "ConsumerData": (_RESOURCE | {"consumer_group_id", "consumer_id", "instance_id", "client_id", "assignments"},
                     _RESOURCE | {"consumer_group_id", "consumer_id", "client_id", "assignments"}),
    "ConsumerAssignmentData": (_RESOURCE | {"consumer_group_id", "consumer_id", "topic_name", "partition_id",
                                            "partition", "lag"},
                               _RESOURCE | {"consumer_group_id", "consumer_id", "topic_name", "partition_id",
                                            "partition", "lag"}),
    "ConsumerLagData": (_RESOURCE | {"consumer_group_id", "topic_name", "partition_id", "current_offset",
                                     "log_end_offset", "lag", "consumer_id", "instance_id", "client_id"},
                        _RESOURCE | {"consumer_group_id", "topic_name", "partition_id", "current_offset",
                                     "log_end_offset", "lag", "consumer_id", "client_id"}),
    "ConsumerGroupLagSummaryData": (
        _RESOURCE | {"consumer_group_id", "max_lag_consumer_id", "max_lag_instance_id", "max_lag_client_id",
                     "max_lag_topic_name", "max_lag_partition_id", "max_lag", "total_lag", "max_lag_consumer",
                     "max_lag_partition"},
        _RESOURCE | {"consumer_group_id", "max_lag_consumer_id", "max_lag_client_id", "max_lag_topic_name",
                     "max_lag_partition_id", "max_lag", "total_lag", "max_lag_consumer", "max_lag_partition"}),
    "AclData": (_RESOURCE | {"resource_type", "resource_name", "pattern_type", "principal", "host", "operation",
                             "permission"},
                _RESOURCE | {"resource_type", "resource_name", "pattern_type", "principal", "host", "operation",
                             "permission"}),
    "ProduceResponse": ({"error_code", "message", "cluster_id", "topic_name", "partition_id", "offset", "timestamp",
                         "key", "value"}, {"error_code"}),
    "ProduceResponseData": ({"size", "type", "subject", "schema_id", "schema_version"}, {"size", "type"}),
    "Relationship": ({"related"}, {"related"}),
    "ResourceMetadata": ({"self", "resource_name"}, {"self"}),
    "ResourceCollectionMetadata": ({"self", "next"}, {"self"}),
    "Error": ({"error_code", "message"}, {"error_code", "message"}),
}
# the *DataList collections: kind, metadata, data (all required)
CONFLUENT_REST_V3.update({f"{n}List": ({"kind", "metadata", "data"},) * 2 for n in (
    "ClusterData", "BrokerData", "TopicData", "PartitionData", "ReplicaData", "TopicConfigData", "BrokerConfigData",
    "ClusterConfigData", "ConsumerGroupData", "ConsumerData", "ConsumerAssignmentData", "ConsumerLagData",
    "AclData")})

HOURGLASS_EXTRA = {"PartitionData": {"earliest_offset", "latest_offset", "last_stable_offset", "size_bytes"}}

# Confluent's registry components: field names (its document declares no required fields)
CONFLUENT_REGISTRY = {
    "Schema": {"subject", "version", "id", "guid", "schemaType", "references", "metadata", "ruleSet", "schema",
               "schemaTags", "ts", "deleted"},  # and "ruleset", the document's mistake
    "SchemaString": {"subject", "version", "guid", "schemaType", "schema", "references", "metadata", "ruleSet",
                     "schemaTags", "maxId", "ts", "deleted"},
    "RegisterSchemaResponse": {"id", "version", "guid", "schemaType", "references", "metadata", "ruleSet", "schema",
                               "ts", "deleted"},
    "SchemaReference": {"name", "subject", "version"},
    "SubjectVersion": {"subject", "version"},
    "CompatibilityCheckResponse": {"is_compatible", "messages"},
    "Config": {"alias", "aliasForDeks", "normalize", "validateFields", "validateNewSchemas", "validateRules",
               "compatibilityLevel", "compatibilityPolicy", "compatibilityGroup", "defaultMetadata",
               "overrideMetadata", "defaultRuleSet", "overrideRuleSet"},
    "ConfigUpdateRequest": {"alias", "aliasForDeks", "normalize", "validateFields", "validateNewSchemas",
                            "validateRules", "compatibility", "compatibilityPolicy", "compatibilityGroup",
                            "defaultMetadata", "overrideMetadata", "defaultRuleSet", "overrideRuleSet"},
    "Mode": {"mode"},
    "Metadata": {"tags", "properties", "sensitive"},
    "RuleSet": {"migrationRules", "domainRules", "encodingRules", "enableAt"},
    "Rule": {"name", "doc", "kind", "mode", "type", "tags", "params", "expr", "onSuccess", "onFailure", "disabled"},
    "ContextId": {"context", "id"},
    "ServerClusterId": {"scope", "id"},
    "SchemaRegistryServerVersion": {"version", "commitId"},
    "ErrorMessage": {"error_code", "message"},
    "Association": {"subject", "guid", "resourceName", "resourceNamespace", "resourceId", "resourceType",
                    "associationType", "lifecycle", "frozen", "createTs", "updateTs"},
    "AssociationInfo": {"subject", "associationType", "lifecycle", "frozen", "schema"},
    "AssociationResponse": {"resourceName", "resourceNamespace", "resourceId", "resourceType", "associations"},
}


def _fields(components: dict, name: str) -> tuple[set, set]:
    s = components[name]
    return set(s["properties"]), set(s.get("required", ()))


@pytest.mark.parametrize("name", sorted(CONFLUENT_REST_V3))
def test_rest_v3_schema_has_confluents_fields(name):
    names, required = CONFLUENT_REST_V3[name]
    ours, ours_required = _fields(rest_v3.COMPONENTS, name)
    assert ours - HOURGLASS_EXTRA.get(name, set()) == names
    # what Confluent requires we require (always answer); we may require more of ourselves
    assert required <= ours_required


@pytest.mark.parametrize("name", sorted(CONFLUENT_REGISTRY))
def test_registry_schema_has_confluents_fields(name):
    assert _fields(registry.COMPONENTS, name)[0] == CONFLUENT_REGISTRY[name]


# (method, path, success status, the component Confluent's document answers there)
REST_V3_OPERATIONS = [
    ("get", "/v3/clusters", "200", "ClusterDataList"),
    ("get", "/v3/clusters/{cluster_id}", "200", "ClusterData"),
    ("get", "/v3/clusters/{cluster_id}/brokers/{broker_id}", "200", "BrokerData"),
    ("get", "/v3/clusters/{cluster_id}/topics", "200", "TopicDataList"),
    ("post", "/v3/clusters/{cluster_id}/topics", "201", "TopicData"),
    ("get", "/v3/clusters/{cluster_id}/topics/{topic_name}", "200", "TopicData"),
    ("patch", "/v3/clusters/{cluster_id}/topics/{topic_name}", "200", "TopicData"),
    ("delete", "/v3/clusters/{cluster_id}/topics/{topic_name}", "204", None),
    ("get", "/v3/clusters/{cluster_id}/topics/{topic_name}/partitions", "200", "PartitionDataList"),
    ("get", "/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/offset", "200",
     "PartitionWithOffsetsData"),
    ("get", "/v3/clusters/{cluster_id}/topics/{topic_name}/configs/{name}", "200", "TopicConfigData"),
    ("put", "/v3/clusters/{cluster_id}/topics/{topic_name}/configs/{name}", "204", None),
    ("post", "/v3/clusters/{cluster_id}/topics/{topic_name}/configs:alter", "204", None),
    ("post", "/v3/clusters/{cluster_id}/topics/{topic_name}/records", "200", "ProduceResponse"),
    ("post", "/v3/clusters/{cluster_id}/topics/{topic_name}/records:batch", "207", "ProduceBatchResponse"),
    ("get", "/v3/clusters/{cluster_id}/broker-configs/{name}", "200", "ClusterConfigData"),
    ("get", "/v3/clusters/{cluster_id}/consumer-groups/{group_id}", "200", "ConsumerGroupData"),
    ("get", "/v3/clusters/{cluster_id}/consumer-groups/{group_id}/lag-summary", "200",
     "ConsumerGroupLagSummaryData"),
    ("get", "/v3/clusters/{cluster_id}/consumer-groups/{group_id}/lags", "200", "ConsumerLagDataList"),
    ("get", "/v3/clusters/{cluster_id}/acls", "200", "AclDataList"),
    ("post", "/v3/clusters/{cluster_id}/acls", "201", None),
]
REGISTRY_OPERATIONS = [
    ("get", "/subjects/{subject}/versions/{version}", "200", "Schema"),
    ("post", "/subjects/{subject}/versions", "200", "RegisterSchemaResponse"),
    ("post", "/subjects/{subject}", "200", "Schema"),
    ("get", "/schemas/ids/{id}", "200", "SchemaString"),
    ("post", "/compatibility/subjects/{subject}/versions/{version}", "200", "CompatibilityCheckResponse"),
    ("get", "/config", "200", "Config"),
    ("put", "/config", "200", "ConfigUpdateRequest"),
    ("get", "/mode/{subject}", "200", "Mode"),
    ("delete", "/contexts/{context}", "204", None),
    ("post", "/associations", "200", "AssociationResponse"),
    ("put", "/associations/resources/{resourceId}", "200", "AssociationResponse"),
]


@pytest.fixture(scope="module")
def documents():
    with EmbeddedBroker(console=True, schema_registry=True) as b:
        yield (document(app_of(b.broker, "console"), "REST v3", rest_v3, prefix="/v3/"),
               document(app_of(b.broker, "schema-registry"), "registry", registry))


def _answers(doc: dict, method: str, path: str, status: str):
    responses = doc["paths"][path][method]["responses"]
    assert status in responses, (method, path, sorted(responses))
    content = responses[status].get("content")
    return None if content is None else next(iter(content.values()))["schema"]["$ref"].rsplit("/", 1)[1]


def test_rest_v3_operations_answer_confluents_schemas(documents):
    doc = documents[0]
    for method, path, status, component in REST_V3_OPERATIONS:
        assert _answers(doc, method, path, status) == component, (method, path)
        assert "404" in doc["paths"][path][method]["responses"]  # README: Confluent's document omits it


def test_registry_operations_answer_confluents_schemas(documents):
    doc = documents[1]
    for method, path, status, component in REGISTRY_OPERATIONS:
        assert _answers(doc, method, path, status) == component, (method, path)
