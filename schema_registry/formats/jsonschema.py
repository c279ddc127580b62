"""JSON Schema: validated against its meta-schema with ``jsonschema``; compatibility by
Confluent's SchemaDiff rules (``schema_registry.formats.jsonschema_diff``).

The draft is the schema's ``$schema`` (draft 7 when absent, as Confluent's default);
``jsonschema``'s ``check_schema`` gives the parser's message for an invalid schema.

Compatibility: ``reader`` reads data valid for ``writer`` (BACKWARD: reader = new schema,
FORWARD: reader = old schema); SchemaDiff walks from the writer's schema to the reader's and
every difference outside Confluent's compatible changes (the ``compatibilityPolicy`` config:
STRICT by default, or LENIENT) is one error, worded as Confluent words it.
"""
from __future__ import annotations

import json

import jsonschema
import jsonschema.exceptions
import jsonschema.validators

from schema_registry.formats import BACKWARD, ParsedSchema, SchemaError, jsonschema_diff

_DEFAULT_DRAFT = jsonschema.Draft7Validator


class JsonSchema(ParsedSchema):
    schema_type = "JSON"

    def __init__(self, data, references: dict | None = None):
        self.data = data
        self.references = references or {}  # reference name -> parsed document
        self._canonical = json.dumps(data, separators=(",", ":"), ensure_ascii=False)

    def canonical(self) -> str:
        return self._canonical

    def normalized(self) -> str:
        return json.dumps(self.data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    def compatibility_errors(self, previous: ParsedSchema, direction: str, policy: str = "STRICT") -> list[str]:
        if not isinstance(previous, JsonSchema):
            return ["Incompatible because of different schema type"]
        if direction == BACKWARD:
            writer, reader, names = previous, self, ("new", "old")
        else:
            writer, reader, names = self, previous, ("old", "new")
        found = jsonschema_diff.incompatibilities(writer.data, reader.data, original_refs=writer.references,
                                                  update_refs=reader.references,
                                                  policy=policy if policy in jsonschema_diff.COMPATIBLE_CHANGES
                                                  else jsonschema_diff.STRICT)
        return [jsonschema_diff.describe(d, *names) for d in found]


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
    refs = {}
    for name, ref_text in references.items():
        try:
            refs[name] = json.loads(ref_text)
        except json.JSONDecodeError as exc:
            raise SchemaError(f"Invalid schema reference {name}: {exc}") from None
    return JsonSchema(data, refs)
