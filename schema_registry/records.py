"""Confluent's ``_schemas`` records, byte for byte (pure).

Keys and values are compact JSON as Confluent's registry writes them with Jackson (its
``SchemaRegistrySerializer``): properties in the classes' declared order, absent and empty
ones left out (``@JsonInclude(NON_EMPTY)``), non-ASCII characters written as UTF-8.

keys                                                  values
``{"keytype":"SCHEMA","subject":S,"version":V,"magic":1}``  ``{"subject","version","id",["schemaType"],["references"],["metadata"],["ruleSet"],"schema","deleted"}``
``{"keytype":"CONFIG","subject":S,"magic":0}``        ``{"subject","normalize",...,"compatibilityLevel",...}`` (global: no subject)
``{"keytype":"MODE","subject":S,"magic":0}``          ``{"subject","mode"}``
``{"keytype":"DELETE_SUBJECT","subject":S,"magic":0}`` ``{"subject","version"}`` (versions <= V are soft-deleted)
``{"keytype":"CLEAR_SUBJECT","subject":S,"magic":0}``  ``{"subject"}``
``{"keytype":"ASSOC","tenant","resourceName","resourceNamespace","resourceType","associationType","subject","magic":0}``
                                                      ``{"guid","tenant","resourceName","resourceNamespace","resourceId",
                                                      "resourceType","associationType","subject","lifecycle","frozen",["createTs"]}``
                                                      (Confluent 8.3's AssociationKey/AssociationValue)
``{"keytype":"NOOP","magic":0}``                      ignored by Confluent's reader; Hourglass writes
                                                      ``{"maxId":N}`` there after a permanent delete so
                                                      an id is never handed out twice, even once
                                                      compaction has dropped the deleted schema.

``schemaType`` is left out for AVRO (the default a reader assumes), as Confluent's registry
has long written it. A null value is a tombstone (permanent delete, config or mode removal).
"""
from __future__ import annotations

import json
from typing import Any, NamedTuple

SCHEMA, CONFIG, MODE, DELETE_SUBJECT, CLEAR_SUBJECT, NOOP, ASSOC = (
    "SCHEMA", "CONFIG", "MODE", "DELETE_SUBJECT", "CLEAR_SUBJECT", "NOOP", "ASSOC")

# ConfigValue's properties in Confluent's declared (creator) order, after "subject"
CONFIG_FIELDS = ("alias", "aliasForDeks", "normalize", "validateFields", "validateNewSchemas", "validateRules",
                 "compatibilityLevel", "compatibilityPolicy", "compatibilityGroup", "defaultMetadata",
                 "overrideMetadata", "defaultRuleSet", "overrideRuleSet")


def _dumps(obj: dict) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _non_empty(v) -> bool:
    return v is not None and v != "" and v != [] and v != {}


def schema_key(subject: str, version: int) -> bytes:
    return _dumps({"keytype": SCHEMA, "subject": subject, "version": version, "magic": 1})


def subject_key(keytype: str, subject: str | None) -> bytes:
    d: dict[str, Any] = {"keytype": keytype}
    if _non_empty(subject):
        d["subject"] = subject
    d["magic"] = 0
    return _dumps(d)


def noop_key() -> bytes:
    return _dumps({"keytype": NOOP, "magic": 0})


def schema_value(subject: str, version: int, schema_id: int, schema_type: str, schema: str,
                 references: list[dict] | None = None, metadata=None, rule_set=None,
                 deleted: bool = False) -> bytes:
    d: dict[str, Any] = {"subject": subject, "version": version, "id": schema_id}
    if schema_type and schema_type != "AVRO":
        d["schemaType"] = schema_type
    if references:
        d["references"] = [{k: r[k] for k in ("name", "subject", "version") if _non_empty(r.get(k))}
                           for r in references]
    if _non_empty(metadata):
        d["metadata"] = metadata
    if _non_empty(rule_set):
        d["ruleSet"] = rule_set
    d["schema"] = schema
    d["deleted"] = bool(deleted)
    return _dumps(d)


def config_value(subject: str | None, config: dict) -> bytes:
    d: dict[str, Any] = {}
    if _non_empty(subject):
        d["subject"] = subject
    for k in CONFIG_FIELDS:
        if _non_empty(config.get(k)):
            d[k] = config[k]
    return _dumps(d)


def mode_value(subject: str | None, mode: str) -> bytes:
    d: dict[str, Any] = {}
    if _non_empty(subject):
        d["subject"] = subject
    d["mode"] = mode
    return _dumps(d)


def delete_subject_value(subject: str, version: int) -> bytes:
    return _dumps({"subject": subject, "version": version})


def noop_value(max_id: int) -> bytes:
    return _dumps({"maxId": max_id})


def assoc_key(tenant: str, resource_name: str, resource_namespace: str, resource_type: str,
              association_type: str, subject: str) -> bytes:
    return _dumps({"keytype": ASSOC, "tenant": tenant, "resourceName": resource_name,
                   "resourceNamespace": resource_namespace, "resourceType": resource_type,
                   "associationType": association_type, "subject": subject, "magic": 0})


def assoc_value(guid: str, tenant: str, resource_name: str, resource_namespace: str, resource_id: str,
                resource_type: str, association_type: str, subject: str, lifecycle: str, frozen: bool,
                create_ts: int | None) -> bytes:
    d: dict[str, Any] = {"guid": guid, "tenant": tenant, "resourceName": resource_name,
                         "resourceNamespace": resource_namespace, "resourceId": resource_id,
                         "resourceType": resource_type, "associationType": association_type, "subject": subject,
                         "lifecycle": lifecycle, "frozen": bool(frozen)}
    if create_ts is not None:
        d["createTs"] = create_ts
    return _dumps(d)


class Key(NamedTuple):
    keytype: str
    subject: str | None
    version: int | None
    magic: int
    fields: dict | None = None  # the whole key (ASSOC keys carry the resource)


def decode_key(raw: bytes) -> Key:
    """Raises ValueError for a key that is not a registry key."""
    d = json.loads(raw)
    if not isinstance(d, dict) or not isinstance(d.get("keytype"), str):
        raise ValueError(f"not a schema registry key: {raw[:100]!r}")
    return Key(d["keytype"], d.get("subject"), d.get("version"), d.get("magic", 0), d)


def decode_value(raw: bytes | None) -> dict | None:
    return None if raw is None else json.loads(raw)
