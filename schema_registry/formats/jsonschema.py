"""JSON Schema: validated against its meta-schema with ``jsonschema``; Confluent's rules for
compatibility, for the common cases.

The draft is the schema's ``$schema`` (draft 7 when absent, as Confluent's default);
``jsonschema``'s ``check_schema`` gives the parser's message for an invalid schema.

Compatibility (Confluent's JSON Schema rules, ``reader`` reads data valid for ``writer``;
BACKWARD: reader = new schema, FORWARD: reader = old schema):

- ``type``: the reader must accept every type the writer allows (``integer`` is within
  ``number``); fewer types is TYPE_NARROWED, a different one TYPE_CHANGED.
- Objects, by content model: a property the reader has and the writer lacks is
  PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL when the writer is open (its data may hold that name
  with any value), fine when the writer is closed (``additionalProperties: false``) unless
  the reader requires it without a default (REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL);
  in an open writer, a property with an empty schema, or one the writer's
  ``additionalProperties`` schema already satisfies (a partially open model), is fine. A property the
  writer has and the reader lacks is PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL when the
  reader is closed, fine when it is open. Opening is fine; closing an open model is
  ADDITIONAL_PROPERTIES_REMOVED. A name newly in ``required`` is REQUIRED_ATTRIBUTE_ADDED
  unless its schema has a default.
  Shared properties are compared recursively.
- ``enum``: the reader must hold every writer value (ENUM_ARRAY_NARROWED); ``items``
  recursively; ``maxLength``/``maximum``/``maxItems`` may not decrease and ``minLength``/
  ``minimum``/``minItems`` may not increase in the reader.
"""
from __future__ import annotations

import json

import jsonschema
import jsonschema.exceptions
import jsonschema.validators

from schema_registry.formats import BACKWARD, ParsedSchema, SchemaError

_DEFAULT_DRAFT = jsonschema.Draft7Validator
_MAX_KEYS = ("maxLength", "maximum", "maxItems", "maxProperties", "exclusiveMaximum")
_MIN_KEYS = ("minLength", "minimum", "minItems", "minProperties", "exclusiveMinimum")


class JsonSchema(ParsedSchema):
    schema_type = "JSON"

    def __init__(self, data):
        self.data = data
        self._canonical = json.dumps(data, separators=(",", ":"), ensure_ascii=False)

    def canonical(self) -> str:
        return self._canonical

    def normalized(self) -> str:
        return json.dumps(self.data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    def compatibility_errors(self, previous: ParsedSchema, direction: str) -> list[str]:
        if not isinstance(previous, JsonSchema):
            return [f"Incompatible schema type: {previous.schema_type} vs JSON"]
        reader, writer = (self.data, previous.data) if direction == BACKWARD else (previous.data, self.data)
        return [f"{{errorType:'{kind}', description:'{desc}', additionalInfo:'{path}'}}"
                for kind, path, desc in compare(reader, writer, "#")]


def _types(s) -> set[str] | None:
    if not isinstance(s, dict):
        return None
    t = s.get("type")
    if t is None:
        if "properties" in s:
            return {"object"}
        return None  # any type
    return set(t) if isinstance(t, list) else {t}


def _open(s: dict) -> bool:
    return s.get("additionalProperties", True) is not False


def compare(reader, writer, path: str) -> list[tuple[str, str, str]]:
    """(error type, path, description) for each way ``reader`` fails to accept data valid for
    ``writer``; empty when compatible. A pure function of the two schema documents."""
    errs: list[tuple[str, str, str]] = []
    if reader is True or reader == {}:
        return errs
    if writer is False:
        return errs
    if reader is False:
        return [("SCHEMA_NARROWED", path, "the new schema accepts nothing")]
    if not isinstance(reader, dict) or not isinstance(writer, dict):
        return errs
    rt, wt = _types(reader), _types(writer)
    if rt is not None:
        if wt is None:
            errs.append(("TYPE_NARROWED", path + "/type", f"type narrowed to {sorted(rt)}"))
        else:
            missing = {t for t in wt if t not in rt and not (t == "integer" and "number" in rt)}
            if missing:
                kind = "TYPE_NARROWED" if rt & wt else "TYPE_CHANGED"
                errs.append((kind, path + "/type", f"type {sorted(wt)} changed to {sorted(rt)}"))
    if "enum" in reader:
        wvals = writer.get("enum")
        if wvals is None or any(v not in reader["enum"] for v in wvals):
            errs.append(("ENUM_ARRAY_NARROWED", path + "/enum", "enum values removed"))
    for key in _MAX_KEYS:
        if key in reader and (key not in writer or reader[key] < writer[key]):
            errs.append((key.upper() + "_DECREASED" if key in writer else key.upper() + "_ADDED",
                         path + "/" + key, f"{key} is stricter"))
    for key in _MIN_KEYS:
        if key in reader and (key not in writer or reader[key] > writer[key]):
            errs.append((key.upper() + "_INCREASED" if key in writer else key.upper() + "_ADDED",
                         path + "/" + key, f"{key} is stricter"))
    if (rt is None or "object" in rt) and ("properties" in reader or "properties" in writer
                                            or "additionalProperties" in reader):
        errs.extend(_compare_objects(reader, writer, path))
    if "items" in reader and isinstance(reader["items"], dict):
        errs.extend(compare(reader["items"], writer.get("items", True), path + "/items"))
    return errs


def _compare_objects(reader: dict, writer: dict, path: str) -> list[tuple[str, str, str]]:
    errs = []
    rp, wp = reader.get("properties", {}) or {}, writer.get("properties", {}) or {}
    rreq, wreq = set(reader.get("required", []) or []), set(writer.get("required", []) or [])
    if _open(writer) and not _open(reader):
        errs.append(("ADDITIONAL_PROPERTIES_REMOVED", path + "/additionalProperties",
                     "the content model was closed"))
    for name, sub in rp.items():
        p = f"{path}/properties/{name}"
        if name in wp:
            errs.extend(compare(sub, wp[name], p))
        elif _open(writer):
            extra = writer.get("additionalProperties", True)
            if sub is True or sub == {}:
                continue  # PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL
            if isinstance(extra, dict) and not compare(sub, extra, p):
                continue  # PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
            errs.append(("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", p,
                         f"property {name} added to an open content model"))
        elif name in rreq and not (isinstance(sub, dict) and "default" in sub):
            errs.append(("REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", p,
                         f"required property {name} added"))
    for name in wp:
        if name not in rp:
            extra = reader.get("additionalProperties", True)
            if extra is False:
                errs.append(("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", f"{path}/properties/{name}",
                             f"property {name} removed from a closed content model"))
            elif isinstance(extra, dict):
                errs.extend(compare(extra, wp[name], f"{path}/properties/{name}"))
    for name in sorted(rreq - wreq):
        sub = rp.get(name)
        if name in wp and not (isinstance(sub, dict) and "default" in sub):  # REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED is fine
            errs.append(("REQUIRED_ATTRIBUTE_ADDED", f"{path}/required", f"{name} became required"))
    return errs


def parse(text: str, references: dict[str, str]) -> JsonSchema:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SchemaError(f"Invalid JSON {text}: {exc}") from None
    if not isinstance(data, (dict, bool)):
        raise SchemaError(f"Invalid schema {text}: a JSON Schema is an object or a boolean")
    cls = jsonschema.validators.validator_for(data, default=_DEFAULT_DRAFT) if isinstance(data, dict) else _DEFAULT_DRAFT
    try:
        cls.check_schema(data)
    except jsonschema.exceptions.SchemaError as exc:
        raise SchemaError(f"Invalid schema {text}: {exc.message}") from None
    for name, ref_text in references.items():
        try:
            json.loads(ref_text)
        except json.JSONDecodeError as exc:
            raise SchemaError(f"Invalid schema reference {name}: {exc}") from None
    return JsonSchema(data)
