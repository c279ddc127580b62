"""The JSON schemas of what the Schema Registry answers (``web.openapi``), named as Confluent's
registry API document names them (``Schema``, ``RegisterSchemaResponse``, ``Config``...),
written by Hourglass from Confluent's registry reference (its REST resources and entities):
field names, types, which fields are optional. Objects are closed: a handler may not answer a
field these do not declare.

Deliberate differences from Confluent's generated document (README, "Confluent's spec
mistakes"): ``DELETE /config`` answers the deleted config object (the document says a bare
compatibility string), ``GET /`` answers ``{}`` (the document says a string), ``Schema`` has
no ``ruleset`` twin of ``ruleSet``, ``DELETE /contexts/{c}`` is 204 on an unknown context.
"""
from __future__ import annotations

from web.openapi import BOOL, INT32, INT64, STRING, array, obj

CONTENT_TYPES = ["application/vnd.schemaregistry.v1+json", "application/vnd.schemaregistry+json",
                 "application/json"]
ERROR = "ErrorMessage"
# every route: basic auth (401), the broker's ACLs (403), Accept negotiation (406), the store
# not loaded (500 50001)
COMMON_ERRORS = (401, 403, 406, 500)
# a route reading a JSON body: wrong Content-Type (415), not a JSON object (400 malformed, 422)
BODY_ERRORS = (400, 415, 422)

_LEVELS = ["NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE"]
_MODES = ["READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT", "FORWARD"]

_SCHEMA_FIELDS = {"guid": STRING, "schemaType": {"type": "string", "enum": ["AVRO", "JSON", "PROTOBUF"]},
                  "references": array("SchemaReference"), "metadata": "Metadata", "ruleSet": "RuleSet",
                  "schema": STRING, "schemaTags": array({"type": "object"}), "ts": INT64, "deleted": BOOL}

_CONFIG_FIELDS = {"alias": STRING, "aliasForDeks": STRING, "normalize": BOOL, "validateFields": BOOL,
                  "validateNewSchemas": BOOL, "validateRules": BOOL, "compatibilityPolicy": STRING,
                  "compatibilityGroup": STRING, "defaultMetadata": "Metadata", "overrideMetadata": "Metadata",
                  "defaultRuleSet": "RuleSet", "overrideRuleSet": "RuleSet"}

COMPONENTS: dict[str, dict] = {
    "ErrorMessage": obj({"error_code": INT32, "message": STRING}),
    "SchemaReference": obj({"name": STRING, "subject": STRING, "version": INT32}),
    "Metadata": obj({}, {"tags": {"type": "object", "additionalProperties": array(STRING)},
                         "properties": {"type": "object", "additionalProperties": STRING},
                         "sensitive": array(STRING)}),
    "Rule": obj({"name": STRING}, {
        "doc": STRING, "kind": {"type": "string", "enum": ["TRANSFORM", "CONDITION"]},
        "mode": {"type": "string", "enum": ["UPGRADE", "DOWNGRADE", "UPDOWN", "WRITE", "READ", "WRITEREAD"]},
        "type": STRING, "tags": array(STRING), "params": {"type": "object", "additionalProperties": STRING},
        "expr": STRING, "onSuccess": STRING, "onFailure": STRING, "disabled": BOOL}),
    "RuleSet": obj({}, {"migrationRules": array("Rule"), "domainRules": array("Rule"),
                        "encodingRules": array("Rule"),
                        "enableAt": {"type": "string", "enum": ["ALL", "CLIENT", "GATEWAY", "SERVER", "NONE"]}}),
    # GET /subjects/{s}/versions/{v}, POST /subjects/{s}, GET /schemas
    "Schema": obj({"subject": STRING, "version": INT32, "id": INT32, "schema": STRING}, _SCHEMA_FIELDS),
    # GET /schemas/ids/{id}, /schemas/guids/{guid}
    "SchemaString": obj({"schema": STRING}, {**_SCHEMA_FIELDS, "subject": STRING, "version": INT32,
                                            "maxId": INT32}),
    # Confluent's RegisterSchemaResponse has no schemaTags
    "RegisterSchemaResponse": obj({"id": INT32}, {**{k: v for k, v in _SCHEMA_FIELDS.items() if k != "schemaTags"},
                                                 "version": INT32}),
    "SubjectVersion": obj({"subject": STRING, "version": INT32}),
    "CompatibilityCheckResponse": obj({"is_compatible": BOOL}, {"messages": array(STRING)}),
    "Config": obj({}, {**_CONFIG_FIELDS, "compatibilityLevel": {"type": "string", "enum": _LEVELS}}),
    # PUT /config echoes the typed request; a property sent as null clears it and is left out
    # (Confluent's ConfigUpdateRequest is NON_NULL)
    "ConfigUpdateRequest": obj({}, {**_CONFIG_FIELDS, "compatibility": {"type": "string", "enum": _LEVELS}}),
    "Mode": obj({"mode": {"type": "string", "enum": _MODES}}),
    # DELETE /mode[/{s}] answers the mode deleted, {} when only subjects' modes were (recursive)
    "DeletedMode": obj({}, {"mode": {"type": "string", "enum": _MODES}}),
    "ContextId": obj({"context": STRING, "id": INT32}),
    "ServerClusterId": obj({"scope": obj({"path": array(STRING), "clusters": {
        "type": "object", "additionalProperties": STRING}})}, {"id": STRING}),
    "SchemaRegistryServerVersion": obj({"version": STRING, "commitId": STRING}),
    "SchemaRegistryDeployment": obj({"attributes": array(STRING)}),
    "Root": obj({}),
    # Confluent 8.3's associations (schema_registry.associations)
    "Association": obj({"subject": STRING, "guid": STRING, "resourceName": STRING, "resourceNamespace": STRING,
                        "resourceId": STRING, "resourceType": STRING, "associationType": STRING,
                        "lifecycle": {"type": "string", "enum": ["STRONG", "WEAK"]}, "frozen": BOOL},
                       {"createTs": INT64, "updateTs": INT64}),
    "AssociationInfo": obj({"subject": STRING, "associationType": STRING,
                            "lifecycle": {"type": "string", "enum": ["STRONG", "WEAK"]}, "frozen": BOOL},
                           {"schema": "Schema"}),
    "AssociationResponse": obj({"resourceName": STRING, "resourceNamespace": STRING, "resourceType": STRING},
                               {"resourceId": STRING, "associations": array("AssociationInfo")}),
    # a batch item's result: a batchGet by id that finds nothing names no resource (NON_EMPTY)
    "AssociationBatchItem": obj({"resourceType": STRING},
                                {"resourceName": STRING, "resourceNamespace": STRING, "resourceId": STRING,
                                 "associations": array("AssociationInfo")}),
    "AssociationResult": obj({}, {"error": ERROR, "result": "AssociationBatchItem"}),
    "AssociationBatchResponse": obj({"results": array("AssociationResult")}),
}

# GET .../schema: the schema text itself as the body (an Avro or JSON schema is JSON of any
# kind: an object, a string such as "string", an array); Confluent's document says a string
SCHEMA_TEXT: dict = {}
