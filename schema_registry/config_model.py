"""``PUT /config`` bodies read as Confluent's typed model (``ConfigUpdateRequest`` with its
``Metadata``, ``RuleSet`` and ``Rule``), pure functions.

Confluent's server maps the body onto those classes with Jackson before anything is stored, so:

- unknown properties, at any depth, are ignored (every class says ``ignoreUnknown``) and never
  stored or echoed;
- a value of the wrong type (``"disabled": "AAA"``, an object where a string belongs, an enum
  name that does not exist) fails the mapping: 422 with error code 422 and Jackson's wording;
  scalars convert as Jackson converts them (a number where a string belongs is its text,
  ``"true"``/``"false"`` or an integer where a boolean belongs);
- what is stored is the typed value: rule ``kind`` and ``mode`` get their defaults
  (TRANSFORM, WRITEREAD), tags and params are sorted, empty collections left out;
- ``compatibility`` must name a level (42203) and rule sets must pass ``RuleSet.validate()``
  (42210: rule names, types, modes per phase, multiple actions only for WRITEREAD/UPDOWN).

``null`` for a top-level property clears it (Confluent's ``Optional.empty()``).
"""
from __future__ import annotations

import json
import unicodedata
from typing import Any, Callable

from schema_registry.compatibility import LEVELS
from web.http import HttpError

RULE_KINDS = ("TRANSFORM", "CONDITION")
RULE_MODES = ("UPGRADE", "DOWNGRADE", "UPDOWN", "WRITE", "READ", "WRITEREAD")
MIGRATION_MODES = ("UPGRADE", "DOWNGRADE", "UPDOWN")
DOMAIN_MODES = ("WRITE", "READ", "WRITEREAD")
EXECUTION_ENVIRONMENTS = ("ALL", "CLIENT", "GATEWAY", "SERVER", "NONE")
RULE_NAME_MAX_LENGTH = 256


class MappingError(HttpError):
    """The body does not map onto the typed model (Jackson's mapping error): 422/422."""

    def __init__(self, message: str):
        super().__init__(422, 422, message)


def invalid_rule_set(message: str) -> HttpError:
    return HttpError(422, 42210, message)


def _kind(v) -> str:
    if v is None:
        return "null"
    return {bool: "Boolean", int: "Integer", float: "Float", str: "String", list: "Array",
            dict: "Object"}.get(type(v), type(v).__name__)


def as_string(v, where: str) -> str | None:
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return json.dumps(v)
    raise MappingError(f"Cannot deserialize value of type `java.lang.String` from {_kind(v)} value "
                       f"(token `JsonToken.START_{'ARRAY' if isinstance(v, list) else 'OBJECT'}`) at {where}")


def as_bool(v, where: str) -> bool | None:
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v != 0
    if isinstance(v, str) and v.strip().lower() in ("true", "false"):
        return v.strip().lower() == "true"
    raise MappingError(f"Cannot deserialize value of type `boolean` from {_kind(v)} {json.dumps(v)}: "
                       f"only \"true\" or \"false\" recognized at {where}")


def as_enum(v, values: tuple[str, ...], type_name: str, where: str) -> str | None:
    if v is None:
        return None
    s = as_string(v, where)
    if s not in values:
        raise MappingError(f"Cannot deserialize value of type `{type_name}` from String {json.dumps(s)}: "
                           f"not one of the values accepted for Enum class: [{', '.join(values)}] at {where}")
    return s


def _as_object(v, where: str) -> dict | None:
    if v is None or isinstance(v, dict):
        return v
    raise MappingError(f"Cannot construct instance from {_kind(v)} value at {where}: an object was expected")


def _as_list(v, where: str) -> list | None:
    if v is None or isinstance(v, list):
        return v
    raise MappingError(f"Cannot deserialize value of type `java.util.List` from {_kind(v)} value at {where}: "
                       f"an array was expected")


def _string_set(v, where: str) -> list[str]:
    items = _as_list(v, where) or []
    return sorted({as_string(x, where) for x in items if x is not None})


def _string_map(v, where: str, value: Callable[[Any, str], Any]) -> dict:
    obj = _as_object(v, where) or {}
    return {k: value(obj[k], f"{where}[\"{k}\"]") for k in sorted(obj)}


def metadata(v, where: str) -> dict | None:
    """Confluent's ``Metadata``: tags (name -> sorted set), properties (sorted), sensitive (sorted)."""
    obj = _as_object(v, where)
    if obj is None:
        return None
    out: dict[str, Any] = {}
    tags = _string_map(obj.get("tags"), f"{where}.tags", lambda x, w: _string_set(x, w))
    props = _string_map(obj.get("properties"), f"{where}.properties", as_string)
    sensitive = _string_set(obj.get("sensitive"), f"{where}.sensitive")
    if tags:
        out["tags"] = tags
    if props:
        out["properties"] = props
    if sensitive:
        out["sensitive"] = sensitive
    return out


def rule(v, where: str) -> dict:
    obj = _as_object(v, where)
    if obj is None:
        raise invalid_rule_set("Found null rule")
    out: dict[str, Any] = {}
    for k in ("name", "doc"):
        s = as_string(obj.get(k), f"{where}.{k}")
        if s:
            out[k] = s
    out["kind"] = as_enum(obj.get("kind"), RULE_KINDS, "RuleKind", f"{where}.kind") or "TRANSFORM"
    out["mode"] = as_enum(obj.get("mode"), RULE_MODES, "RuleMode", f"{where}.mode") or "WRITEREAD"
    t = as_string(obj.get("type"), f"{where}.type")
    if t:
        out["type"] = t
    tags = _string_set(obj.get("tags"), f"{where}.tags")
    if tags:
        out["tags"] = tags
    params = _string_map(obj.get("params"), f"{where}.params", as_string)
    if params:
        out["params"] = params
    for k in ("expr", "onSuccess", "onFailure"):
        s = as_string(obj.get(k), f"{where}.{k}")
        if s:
            out[k] = s
    out["disabled"] = bool(as_bool(obj.get("disabled"), f"{where}.disabled"))
    return out


def rule_set(v, where: str) -> dict | None:
    """Confluent's ``RuleSet`` (migration, domain and encoding rules, ``enableAt``), validated."""
    obj = _as_object(v, where)
    if obj is None:
        return None
    out: dict[str, Any] = {}
    for phase in ("migrationRules", "domainRules", "encodingRules"):
        rules = [rule(r, f"{where}.{phase}[{i}]") for i, r in enumerate(_as_list(obj.get(phase), f"{where}.{phase}") or [])]
        if rules:
            out[phase] = rules
    enable_at = as_enum(obj.get("enableAt"), EXECUTION_ENVIRONMENTS, "ExecutionEnvironment", f"{where}.enableAt")
    if enable_at:
        out["enableAt"] = enable_at
    validate_rule_set(out)
    return out


def validate_rule_set(rs: dict) -> None:
    """``RuleSet.validate()``: unique names per phase, each rule valid, modes fit the phase."""
    for phase, modes, what in (("migrationRules", MIGRATION_MODES, "Migration rules can only be UPGRADE, DOWNGRADE, UPDOWN"),
                               ("domainRules", DOMAIN_MODES, "Domain rules can only be WRITE, READ, WRITEREAD"),
                               ("encodingRules", DOMAIN_MODES, "Encoding rules can only be WRITE, READ, WRITEREAD")):
        names: set[str] = set()
        for r in rs.get(phase, ()):
            name = r.get("name")
            if name in names:
                raise invalid_rule_set(f"Found rule with duplicate name '{name}'")
            if name is not None:
                names.add(name)
            _validate_rule(r)
            if r["mode"] not in modes:
                raise invalid_rule_set(what)


def _letter(c: str) -> bool:
    return unicodedata.category(c).startswith("L")


def _validate_rule(r: dict) -> None:
    name = r.get("name")
    if name is None:
        raise invalid_rule_set("Missing rule name")
    if len(name) > RULE_NAME_MAX_LENGTH:
        raise invalid_rule_set("Rule name too long")
    if not (_letter(name[0]) or name[0] == "_"):
        raise invalid_rule_set(f"Illegal initial character in rule name: {name}")
    if any(not (_letter(c) or c.isdigit() or c in "_-") for c in name[1:]):
        raise invalid_rule_set(f"Illegal character in rule name: {name}")
    if "type" not in r:
        raise invalid_rule_set("Missing rule type")
    for action in (r.get("onSuccess"), r.get("onFailure")):
        if action and "," in action and r["mode"] not in ("WRITEREAD", "UPDOWN"):
            raise invalid_rule_set("Multiple actions only valid with WRITEREAD and UPDOWN")


# (JSON property, stored ConfigValue field, reader); ConfigUpdateRequest's declared order
_FIELDS: tuple[tuple[str, str, Callable[[Any, str], Any]], ...] = (
    ("alias", "alias", as_string),
    ("aliasForDeks", "aliasForDeks", as_string),
    ("normalize", "normalize", as_bool),
    ("validateFields", "validateFields", as_bool),
    ("validateNewSchemas", "validateNewSchemas", as_bool),
    ("validateRules", "validateRules", as_bool),
    ("compatibility", "compatibilityLevel", as_string),
    ("compatibilityPolicy", "compatibilityPolicy", as_string),
    ("compatibilityGroup", "compatibilityGroup", as_string),
    ("defaultMetadata", "defaultMetadata", metadata),
    ("overrideMetadata", "overrideMetadata", metadata),
    ("defaultRuleSet", "defaultRuleSet", rule_set),
    ("overrideRuleSet", "overrideRuleSet", rule_set),
)


def config_update(body: dict) -> tuple[dict, dict]:
    """(echo, update) for a ``PUT /config`` body: ``echo`` is the typed request as Confluent
    answers it (JSON property names, explicit nulls left out as its NON_NULL entity does), ``update`` maps stored field names to their new value
    (None: cleared). Raises MappingError (422), 42203 or 42210."""
    echo: dict[str, Any] = {}
    update: dict[str, Any] = {}
    for prop, stored, read in _FIELDS:
        if prop not in body:
            continue
        value = read(body[prop], prop)
        if prop == "compatibility" and value is not None:
            if value.upper() not in LEVELS:
                raise HttpError(422, 42203, "Invalid compatibility level. Valid values are none, backward, "
                                            "forward, full, backward_transitive, forward_transitive, and "
                                            "full_transitive")
            value = value.upper()
        if value is not None:  # ConfigUpdateRequest is NON_NULL: an explicit null clears, unechoed
            echo[prop] = value
        if prop == "compatibilityPolicy" and value is not None:
            # stored as Confluent's CompatibilityPolicy.forName: STRICT, LENIENT, or nothing
            value = value.upper() if value.upper() in ("STRICT", "LENIENT") else None
        update[stored] = value
    return echo, update
