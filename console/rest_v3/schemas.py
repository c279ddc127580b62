"""The JSON schemas of what REST v3 answers (``web.openapi``), named as Confluent's v3 API
document names them (``TopicData``, ``ConsumerGroupData``...), written by Hourglass from
Confluent's REST v3 reference: the same field names, types, required and nullable fields.
Where an answer has Hourglass's extra fields (partition offsets, the ``Hourglass*`` resources)
they are declared here too. Objects are closed: ``shapes`` may not add a field unsaid.

Deliberate differences from Confluent's document (README, "Confluent's spec mistakes"): 404
is declared wherever a path names something that may not exist (Confluent's document omits
it on most operations, its server answers it).
"""
from __future__ import annotations

from web.openapi import ANY, BOOL, INT, INT32, INT64, STRING, array, nullable, obj

CONTENT_TYPES = ["application/json"]
ERROR = "Error"
COMMON_ERRORS = (400, 401, 403, 404, "5XX")

REL = "Relationship"


def _resource(**fields) -> dict:
    return obj({"kind": STRING, "metadata": "ResourceMetadata", "cluster_id": STRING, **fields})


def _list(item: str) -> dict:
    return obj({"kind": STRING, "metadata": "ResourceCollectionMetadata", "data": array(item)})


_CONFIG = {"name": STRING, "value": nullable(STRING), "is_default": BOOL, "is_read_only": BOOL,
           "is_sensitive": BOOL, "source": "ConfigSource", "synonyms": array("ConfigSynonymData")}
_PRODUCE_DATA = obj({"size": INT64, "type": nullable(STRING)},
                    {"subject": nullable(STRING), "schema_id": nullable(INT), "schema_version": nullable(INT)})
_PRODUCED = {"cluster_id": STRING, "topic_name": STRING, "partition_id": INT32, "offset": INT64,
             "timestamp": nullable({"type": "string", "format": "date-time"}),
             "key": "ProduceResponseData", "value": "ProduceResponseData"}

COMPONENTS: dict[str, dict] = {
    "Error": obj({"error_code": INT32, "message": nullable(STRING)}),
    "Relationship": obj({"related": STRING}),
    "ResourceMetadata": obj({"self": STRING}, {"resource_name": nullable(STRING)}),
    "ResourceCollectionMetadata": obj({"self": STRING}, {"next": nullable(STRING)}),
    "ConfigSource": {"type": "string", "enum": [
        "DYNAMIC_CLUSTER_LINK_CONFIG", "DYNAMIC_TOPIC_CONFIG", "DYNAMIC_BROKER_LOGGER_CONFIG", "DYNAMIC_BROKER_CONFIG",
        "DYNAMIC_DEFAULT_BROKER_CONFIG", "DYNAMIC_CLIENT_METRICS_CONFIG", "DYNAMIC_GROUP_CONFIG",
        "STATIC_BROKER_CONFIG", "DEFAULT_CONFIG", "UNKNOWN"]},
    "ConfigSynonymData": obj({"name": STRING, "source": "ConfigSource"}, {"value": nullable(STRING)}),
    "ClusterData": _resource(controller=nullable(REL), acls=REL, brokers=REL, broker_configs=REL,
                             consumer_groups=REL, topics=REL, partition_reassignments=REL),
    "ClusterDataList": _list("ClusterData"),
    "BrokerData": _resource(broker_id=INT, host=nullable(STRING), port=nullable(INT), rack=nullable(STRING),
                            configs=REL, partition_replicas=REL),
    "BrokerDataList": _list("BrokerData"),
    "TopicData": _resource(topic_name=STRING, is_internal=BOOL, replication_factor=INT, partitions_count=INT,
                           partitions=REL, configs=REL, partition_reassignments=REL,
                           authorized_operations=array({"type": "string", "enum": [
                               "UNKNOWN", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE",
                               "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE"]})),
    "TopicDataList": _list("TopicData"),
    # Hourglass: the offsets ListOffsets answers and the size on disk beside Confluent's fields
    "PartitionData": _resource(topic_name=STRING, partition_id=INT, leader=REL, replicas=REL, reassignment=REL,
                               earliest_offset=INT64, latest_offset=INT64, last_stable_offset=INT64,
                               size_bytes=INT64),
    "PartitionDataList": _list("PartitionData"),
    "PartitionWithOffsetsData": _resource(topic_name=STRING, partition_id=INT, earliest_offset=INT64,
                                          latest_offset=INT64),
    "ReplicaData": _resource(topic_name=STRING, partition_id=INT, broker_id=INT, is_leader=BOOL, is_in_sync=BOOL,
                             broker=REL),
    "ReplicaDataList": _list("ReplicaData"),
    "ReassignmentData": _resource(topic_name=STRING, partition_id=INT, adding_replicas=array(INT),
                                  removing_replicas=array(INT), replicas=REL),
    "ReassignmentDataList": _list("ReassignmentData"),
    "TopicConfigData": _resource(topic_name=STRING, **_CONFIG),
    "TopicConfigDataList": _list("TopicConfigData"),
    "BrokerConfigData": _resource(broker_id=INT, **_CONFIG),
    "BrokerConfigDataList": _list("BrokerConfigData"),
    "ClusterConfigData": _resource(config_type={"type": "string", "enum": ["BROKER"]}, **_CONFIG),
    "ClusterConfigDataList": _list("ClusterConfigData"),
    "ConsumerGroupData": _resource(
        consumer_group_id=STRING, is_simple=BOOL, partition_assignor=STRING,
        state={"type": "string", "enum": ["UNKNOWN", "PREPARING_REBALANCE", "COMPLETING_REBALANCE", "ASSIGNING",
                                          "RECONCILING", "STABLE", "DEAD", "EMPTY"]},
        type={"type": "string", "enum": ["UNKNOWN", "CLASSIC", "CONSUMER", "SHARE"]},
        is_mixed_consumer_group=BOOL, coordinator=REL, consumers=REL, lag_summary=REL),
    "ConsumerGroupDataList": _list("ConsumerGroupData"),
    "ConsumerData": _resource(consumer_group_id=STRING, consumer_id=STRING, instance_id=nullable(STRING),
                              client_id=STRING, assignments=REL),
    "ConsumerDataList": _list("ConsumerData"),
    "ConsumerAssignmentData": _resource(consumer_group_id=STRING, consumer_id=STRING, topic_name=STRING,
                                        partition_id=INT, partition=REL, lag=REL),
    "ConsumerAssignmentDataList": _list("ConsumerAssignmentData"),
    "ConsumerLagData": _resource(consumer_group_id=STRING, topic_name=STRING, partition_id=INT,
                                 current_offset=INT64, log_end_offset=INT64, lag=INT64, consumer_id=STRING,
                                 instance_id=nullable(STRING), client_id=STRING),
    "ConsumerLagDataList": _list("ConsumerLagData"),
    "ConsumerGroupLagSummaryData": _resource(
        consumer_group_id=STRING, max_lag_consumer_id=STRING, max_lag_instance_id=nullable(STRING),
        max_lag_client_id=STRING, max_lag_topic_name=STRING, max_lag_partition_id=INT, max_lag=INT64,
        total_lag=INT64, max_lag_consumer=REL, max_lag_partition=REL),
    "AclData": _resource(resource_type={"type": "string", "enum": [
                             "UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN"]},
                         resource_name=STRING, pattern_type=STRING, principal=STRING, host=STRING,
                         operation=STRING, permission=STRING),
    "AclDataList": _list("AclData"),
    "DeleteAclsData": obj({"data": array("AclData")}),
    "ProduceResponseData": _PRODUCE_DATA,
    # key, value and timestamp are absent (never null) when the record has none (Jackson's NON_ABSENT)
    "ProduceResponse": obj({"error_code": INT32}, {"message": STRING, **_PRODUCED}),
    "ProduceBatchResponse": obj({}, {
        "successes": array(obj({"id": STRING}, _PRODUCED)),
        "failures": array(obj({"id": STRING, "error_code": INT32}, {"message": STRING}))}),
    # ---- Hourglass's own resources (no Confluent counterpart) ---------------------------------
    "HourglassRecordPage": obj({"kind": STRING, "metadata": "ResourceCollectionMetadata", "cluster_id": STRING,
                                "data": array({"type": "object"})}, {}, closed=False),
    "HourglassSegmentTimeline": obj({"kind": STRING, "metadata": "ResourceMetadata", "cluster_id": STRING},
                                    {}, closed=False),
    "HourglassTopicSummaryList": _list("HourglassTopicSummary"),
    "HourglassTopicSummary": obj({**{k: v for k, v in _resource(topic_name=STRING, is_internal=BOOL,
                                                                replication_factor=INT, partitions_count=INT,
                                                                partitions=REL, configs=REL,
                                                                partition_reassignments=REL,
                                                                authorized_operations=array(STRING),
                                                                )["properties"].items()},
                                  "size_bytes": INT64, "offsets": INT64,
                                  "oldest_timestamp": nullable(INT64), "newest_timestamp": nullable(INT64),
                                  "cleanup_policy": nullable(STRING), "retention_ms": nullable(INT64),
                                  "retention_bytes": nullable(INT64)}),
    "HourglassConsumerLagHistory": obj({"kind": STRING, "metadata": "ResourceMetadata", "cluster_id": STRING,
                                        "consumer_group_id": STRING, "interval_seconds": {"type": "number"},
                                        "data": array({"type": "object"})}),
    "HourglassConsumerGroupOffsetsReset": obj({"kind": STRING, "metadata": "ResourceMetadata", "cluster_id": STRING,
                                               "consumer_group_id": STRING, "dry_run": BOOL,
                                               "data": array({"type": "object"})}),
    "HourglassRates": obj({"kind": STRING, "metadata": "ResourceMetadata", "cluster_id": STRING,
                           "interval_seconds": {"type": "number"}, "data": ANY}),
    "HourglassTransactionList": _list("HourglassTransaction"),
    "HourglassTransaction": obj({"kind": STRING}, {}, closed=False),
    # a Streams (KIP-1071) group: Confluent's REST v3 has no Streams resource
    "HourglassStreamsGroupList": _list("HourglassStreamsGroup"),
    "HourglassStreamsGroup": _resource(
        group_id=STRING, state=STRING, group_epoch=INT32, assignment_epoch=INT32, topology_epoch=INT32,
        subtopologies=array("HourglassStreamsSubtopology"), members=array("HourglassStreamsMember"),
        lags=array("HourglassStreamsLag"), total_lag=INT64),
    "HourglassStreamsSubtopology": obj({
        "subtopology_id": STRING, "source_topics": array(STRING), "repartition_sink_topics": array(STRING),
        "repartition_source_topics": array("HourglassStreamsTopicInfo"),
        "state_changelog_topics": array("HourglassStreamsTopicInfo")}),
    "HourglassStreamsTopicInfo": obj({"name": STRING, "partitions": INT32}),
    "HourglassStreamsTasks": obj({"subtopology_id": STRING, "partitions": array(INT32)}),
    "HourglassStreamsMember": obj({
        "member_id": STRING, "member_epoch": INT32, "instance_id": nullable(STRING), "client_id": STRING,
        "client_host": STRING, "process_id": STRING, "user_endpoint": nullable(STRING),
        "active_tasks": array("HourglassStreamsTasks"), "standby_tasks": array("HourglassStreamsTasks"),
        "warmup_tasks": array("HourglassStreamsTasks")}),
    "HourglassStreamsLag": obj({"topic_name": STRING, "partition_id": INT32, "current_offset": INT64,
                                "log_end_offset": INT64, "lag": INT64, "member_id": STRING,
                                "process_id": STRING}),
    "HourglassScramUserList": _list("HourglassScramUser"),
    "HourglassScramUser": obj({"kind": STRING}, {}, closed=False),
}
