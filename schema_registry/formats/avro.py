"""AVRO schemas through Apache Avro's own Python library (the ``avro`` package).

Parsing, name resolution and the reader/writer resolution rules are Avro's
(``avro.schema``, ``avro.compatibility.ReaderWriterCompatibilityChecker``); nothing here
restates them.

- ``canonical()``: the text Avro-Java prints (``schema_registry.formats.avro_text``), as
  Confluent keeps ``Schema.toString(references, false)``: the same schema sent with other
  spacing, key order or ``{"type":"int"}`` for ``"int"`` finds its id, while schemas that
  differ in defaults, docs, aliases or custom properties stay apart; Java clients see the
  same characters (and so the same fingerprints and GUIDs). Referenced named types stay
  references.
- ``normalized()`` (``normalize=true``): the same with keys sorted.
- References: each reference's schema is parsed first into the same ``Names``, so the main
  schema may use the referenced named types by name (as Confluent's AvroSchema does).
"""
from __future__ import annotations

import json
import re

import avro.errors
import avro.schema
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType
from avro.name import Names

from schema_registry.formats import BACKWARD, ParsedSchema, SchemaError
from schema_registry.formats.avro_text import java_text


def _loads(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SchemaError(f"Invalid schema {text!r}: {exc}") from None


class AvroSchema(ParsedSchema):
    schema_type = "AVRO"

    def __init__(self, schema: avro.schema.Schema, json_data, ref_names: frozenset[str], ref_data: list = ()):
        self.schema = schema
        self.json_data = json_data
        self.ref_names = ref_names
        self._canonical = java_text(json_data, ref_data)

    def _to_json(self):
        names = Names()
        # referenced types render as their names, as in the schema that was sent
        names.names = {n: None for n in self.ref_names}  # only membership is tested by to_json
        return self.schema.to_json(names)

    def canonical(self) -> str:
        return self._canonical

    def normalized(self) -> str:
        return json.dumps(self._to_json(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    def compatibility_errors(self, previous: ParsedSchema, direction: str, policy: str = "STRICT") -> list[str]:
        if not isinstance(previous, AvroSchema):
            return [f"Incompatible schema type: {previous.schema_type} vs AVRO"]
        reader, writer = (self, previous) if direction == BACKWARD else (previous, self)
        result = ReaderWriterCompatibilityChecker().get_compatibility(reader.schema, writer.schema)
        if result.compatibility is SchemaCompatibilityType.compatible:
            return []
        kinds = [k.name.upper() for k in result.incompatibilities] or ["INCOMPATIBLE"]
        messages = sorted(result.messages) or [""]
        locations = sorted(result.locations) or ["/"]
        reader_name = "new" if reader is self else "old"
        writer_name = "old" if reader is self else "new"
        return [f"{{errorType:'{kinds[min(i, len(kinds) - 1)]}', description:'{m}' "
                f"(reader: {reader_name} schema, writer: {writer_name} schema), "
                f"additionalInfo:'{locations[min(i, len(locations) - 1)]}'}}"
                for i, m in enumerate(messages)]


# Avro-Java's NameValidator.UTF_VALIDATOR: a letter (any script) or "_", then letters, digits or "_"
_UTF_NAME = re.compile(r"^[^\W\d]\w*$")


def _check_simple_names(schema: avro.schema.Schema, seen: set[int]) -> None:
    """Confluent's AvroSchemaUtils.validateNames on a stored schema: record, enum and fixed
    names (not their namespaces), field names and enum symbols, each by UTF_VALIDATOR."""
    if id(schema) in seen:
        return
    seen.add(id(schema))
    names = []
    if isinstance(schema, avro.schema.NamedSchema):
        names.append(schema.name)
    if isinstance(schema, avro.schema.RecordSchema):
        for f in schema.fields:
            names.append(f.name)
            _check_simple_names(f.type, seen)
    elif isinstance(schema, avro.schema.EnumSchema):
        names.extend(schema.symbols)
    elif isinstance(schema, avro.schema.ArraySchema):
        _check_simple_names(schema.items, seen)
    elif isinstance(schema, avro.schema.MapSchema):
        _check_simple_names(schema.values, seen)
    elif isinstance(schema, avro.schema.UnionSchema):
        for branch in schema.schemas:
            _check_simple_names(branch, seen)
    for name in names:
        if not _UTF_NAME.match(name):
            raise SchemaError(f"Illegal character in: {name}")


def parse(text: str, references: dict[str, str], *, new: bool = True) -> AvroSchema:
    """``new``: Avro's strict name validation (every name and namespace, enum symbols), as
    Confluent validates a schema being registered. A stored schema (``new=False``) is parsed as
    Confluent's AvroSchema parses one with ``validateAsNew=false``: Avro's NO_VALIDATION parser,
    then only the simple names of the main schema checked by Avro-Java's UTF validator (so a
    namespace Avro 1.11 let through, ``com.my-org``, keeps serving)."""
    strict = dict(validate_enum_symbols=new, validate_names=new)
    names = Names(validate_names=new)
    pending = list(references.items())
    # a reference may use another reference: parse in passes until nothing more resolves
    while pending:
        failed = []
        for ref_name, ref_text in pending:
            try:
                avro.schema.make_avsc_object(_loads(ref_text), names, **strict)
            except (avro.errors.AvroException, TypeError, ValueError) as exc:
                failed.append((ref_name, ref_text, exc))
        if len(failed) == len(pending):
            name, _, exc = failed[0]
            raise SchemaError(f"Invalid schema reference {name}: {exc}")
        pending = [(n, t) for n, t, _ in failed]
    ref_names = frozenset(names.names)
    ref_data = [_loads(t) for t in references.values()]
    data = _loads(text)
    try:
        schema = avro.schema.make_avsc_object(data, names, **strict)
        if not new:
            _check_simple_names(schema, set())
    except avro.errors.AvroException as exc:
        raise SchemaError(f"Invalid schema {text}: {exc}") from None
    except (TypeError, ValueError, AttributeError, KeyError) as exc:
        raise SchemaError(f"Invalid schema {text}: {type(exc).__name__}: {exc}") from None
    try:
        return AvroSchema(schema, data, ref_names, ref_data)
    except (KeyError, TypeError, ValueError) as exc:  # what Avro's Python parser let through
        raise SchemaError(f"Invalid schema {text}: {type(exc).__name__}: {exc}") from None
