"""JSON Schema values as Iceberg columns, as Redpanda's Iceberg topics translate them.

The schema and its references are read by the registry's own parser
(``schema_registry.formats.jsonschema.parse``); each payload is parsed with ``json``, validated
against the schema with ``jsonschema`` (the validator built once per schema, references served
from a ``referencing`` registry under their reference names), then converted to the columns.
A payload that is not JSON or not valid for its schema raises ``ValueError`` (its record goes
to the dead-letter table with the reason).

Type mapping (Redpanda's "Schema types translation", JSON Schema tab, and its
``iceberg/conversion/ir_json``):

=======================================  ==========================================
JSON Schema                              Iceberg
=======================================  ==========================================
``boolean``                              boolean
``integer``                              long
``number``                               double
``string``                               string
``string`` + ``format: date-time``       timestamptz (RFC 3339, an offset required)
``string`` + ``format: date`` / ``time``  date / time (a time's offset applied: UTC)
``object`` with ``properties``           struct (its properties sorted by name)
``array`` with ``items``                 list (tuple ``items`` all of one type)
``[T, "null"]``                          T (null allowed)
a root that is not an object             struct<root: T>
=======================================  ==========================================

Every struct column is optional; a property absent from the document is null. A property
whose type has no columns (an object without properties, or an array of one) is left out:
Parquet cannot hold an empty struct. Properties the
schema does not name are not columns (they pass when the schema allows them).

Refused, as Redpanda refuses them (``translator`` raises ``ValueError`` naming the place): a
subschema without ``type``; ``type`` with more than one non-null type, or only ``null``;
``allOf`` / ``anyOf`` / ``oneOf``; ``if`` / ``then`` / ``else`` and ``dependencies`` /
``dependentSchemas``; ``patternProperties``; ``additionalProperties`` other than ``false``;
an ``array`` without ``items``, or tuple items of different types; recursive schemas.

Where we differ from Redpanda:

- ``$ref`` is followed (to ``definitions``/``$defs`` and to the schema's registry references,
  which confluent-kafka's ``JSONSerializer`` names by reference name); Redpanda refuses every
  ``$ref``. A ``$ref`` that leads back to itself is refused (recursive).
- The dialect: Redpanda requires ``"$schema"`` to name draft-07. Here a schema without
  ``$schema`` is draft-07 (Confluent's default) and later drafts translate by the same rules
  (``prefixItems`` as tuple items).
- The ``default`` keyword is accepted and ignored (Redpanda refuses it): defaults are not filled.
- A list's elements are optional when the ``items`` schema allows null (required otherwise,
  as Redpanda's).
- Documents are validated against the whole schema (``enum``, ``minimum``, ``required``...);
  Redpanda only checks that values fit the column types.
"""
from __future__ import annotations

import datetime as dt
import json
import re
from typing import Callable

import jsonschema.validators
from pyiceberg.types import (BooleanType, DateType, DoubleType, IcebergType, ListType, LongType, NestedField,
                             StringType, StructType, TimestamptzType, TimeType)
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT7

from lakehouse.value_formats.columns import has_no_columns
from schema_registry.formats import SchemaError
from schema_registry.formats.jsonschema import parse

_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1
#: a \uD800-\uDFFF escape: json.loads keeps a lone one as a surrogate that UTF-8 cannot encode
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
#: keywords that make a subschema's shape depend on the document: no one Iceberg type
_REFUSED = ("allOf", "anyOf", "oneOf", "if", "then", "else", "dependencies", "dependentSchemas",
            "patternProperties", "$dynamicRef", "$recursiveRef")
_FORMATS = {"date-time": TimestamptzType(), "date": DateType(), "time": TimeType()}

Convert = Callable[[object], object]


class JsonSchemaTranslator:
    """One schema version: ``struct`` its columns, ``decode`` a JSON document into a row."""

    def __init__(self, data, references: dict):
        registry = Registry().with_resources(
            (name, Resource.from_contents(doc, default_specification=DRAFT7)) for name, doc in references.items())
        root = Resource.from_contents(data, default_specification=DRAFT7)
        base = data.get("$id", "") if isinstance(data, dict) else ""
        registry = registry.with_resource(base, root).crawl()
        cls = jsonschema.validators.validator_for(data, default=jsonschema.Draft7Validator)
        self._validator = cls(data, registry=registry)
        ids = iter(range(1, 1 << 30))
        itype, nullable, conv = _translate(data, registry.resolver(base), (), "#", ids)
        if has_no_columns(itype):
            self.struct, self._convert = StructType(), lambda doc: {}
        elif isinstance(itype, StructType):
            self.struct, self._convert = itype, conv
        else:  # Redpanda's wrapper for a root that is not an object
            self.struct = StructType(NestedField(next(ids), "root", itype, required=False))
            self._convert = lambda doc: {"root": None if doc is None else conv(doc)}

    def decode(self, payload: bytes) -> dict:
        try:
            doc = json.loads(payload)
            error = next(self._validator.iter_errors(doc), None)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"not JSON: {exc}") from None
        except RecursionError:
            raise ValueError("the document nests deeper than Python's recursion limit") from None
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path)
            raise ValueError(f"not valid for the schema at /{where}: {error.message}")
        if doc is None:
            raise ValueError("the document is null")
        if _SURROGATE_ESCAPE.search(payload):
            try:  # a lone surrogate is no Unicode text: no string column takes it
                json.dumps(doc, ensure_ascii=False).encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError("a string holds a lone UTF-16 surrogate escape, not Unicode text") from None
        return self._convert(doc)


def translator(schema_text: str, references: dict[str, str], message_path: tuple[int, ...] = ()) -> JsonSchemaTranslator:
    """The translator of a JSON schema (``message_path`` is Protobuf's and ignored). Raises
    ValueError for an invalid schema or one Redpanda does not translate (see the module)."""
    try:
        schema = parse(schema_text, dict(references))
    except SchemaError as exc:
        raise ValueError(f"invalid JSON schema: {exc}") from None
    return JsonSchemaTranslator(schema.data, schema.references)


# --------------------------------------------------------------------------- columns

def _translate(s, resolver, stack: tuple[int, ...], where: str, ids) -> tuple[IcebergType, bool, Convert]:
    """A subschema's Iceberg type, whether it admits null, and the conversion of a (non-null)
    valid value to what pyarrow takes for that type."""
    if not isinstance(s, dict):
        raise ValueError(f"JSON schema at {where} not supported: a boolean schema has no type")
    if "$ref" in s:
        try:
            resolved = resolver.lookup(s["$ref"])
        except Unresolvable as exc:
            raise ValueError(f"JSON schema at {where}: $ref {s['$ref']!r} does not resolve: {exc}") from None
        target = resolved.contents
        if id(target) in stack:
            raise ValueError(f"JSON schema at {where} not supported: recursive $ref {s['$ref']!r}")
        # keywords beside a $ref: draft 7 ignores them, and the type is the target's
        return _translate(target, resolved.resolver, (*stack, id(target)), f"{where} -> {s['$ref']}", ids)
    for keyword in _REFUSED:
        if keyword in s:
            raise ValueError(f"JSON schema at {where} not supported: {keyword} (no single Iceberg type)")
    types = s.get("type")
    if types is None:
        raise ValueError(f"JSON schema at {where} not supported: no type keyword")
    types = [types] if isinstance(types, str) else list(types)
    nullable = "null" in types
    rest = [t for t in types if t != "null"]
    if len(rest) != 1:
        raise ValueError(f"JSON schema at {where} not supported: type {types} is not one type (or one and null)")
    t = rest[0]
    stack = (*stack, id(s))
    if t == "boolean":
        return BooleanType(), nullable, _same
    if t == "integer":
        return LongType(), nullable, _long
    if t == "number":
        return DoubleType(), nullable, _double
    if t == "string":
        fmt = s.get("format")
        if fmt in _FORMATS:
            return _FORMATS[fmt], nullable, _PARSE[fmt]
        return StringType(), nullable, _same
    if t == "object":
        struct, conv = _object(s, resolver, stack, where, ids)
        return struct, nullable, conv
    if t == "array":
        ltype, conv = _array(s, resolver, stack, where, ids)
        return ltype, nullable, conv
    raise ValueError(f"JSON schema at {where} not supported: type {t!r}")


def _object(s, resolver, stack, where, ids) -> tuple[StructType, Convert]:
    extra = s.get("additionalProperties", None)
    if "additionalProperties" in s and extra is not False:
        raise ValueError(f"JSON schema at {where} not supported: additionalProperties other than false")
    props = s.get("properties") or {}
    fields, convs = [], []
    for name in sorted(props):
        itype, _, conv = _translate(props[name], resolver, stack, f"{where}/properties/{name}", ids)
        if has_no_columns(itype):
            continue  # Parquet holds no empty struct: the property is left out
        fields.append(NestedField(next(ids), name, itype, required=False))
        convs.append((name, conv))

    def convert(doc: dict) -> dict:
        return {name: None if (v := doc.get(name)) is None else conv(v) for name, conv in convs}

    return StructType(*fields), convert


def _array(s, resolver, stack, where, ids) -> tuple[IcebergType, Convert]:
    items = s.get("prefixItems", s.get("items"))
    if items is None:
        raise ValueError(f"JSON schema at {where} not supported: array without items")
    if isinstance(items, (dict, bool)):
        etype, enull, conv = _translate(items, resolver, stack, f"{where}/items", ids)
    else:
        tuple_items = list(items)
        extra = s.get("items") if "prefixItems" in s else s.get("additionalItems")
        if extra is not None and extra is not False:
            tuple_items.append(extra)
        if not tuple_items:
            raise ValueError(f"JSON schema at {where} not supported: array items without a type")
        found = [_translate(it, resolver, stack, f"{where}/items/{i}", ids) for i, it in enumerate(tuple_items)]
        if any(f[0] != found[0][0] for f in found):
            raise ValueError(f"JSON schema at {where} not supported: array items of different types "
                             f"{[str(f[0]) for f in found]}")
        etype, conv = found[0][0], found[0][2]
        enull = any(f[1] for f in found)
    if has_no_columns(etype):
        return etype, _same  # left out by the caller
    ltype = ListType(next(ids), etype, element_required=not enull)
    return ltype, (lambda xs: [None if x is None else conv(x) for x in xs])


def _same(x):
    return x


def _long(x) -> int:
    v = int(x)  # 1.0 is an integer to JSON Schema (draft 6 on)
    if not _LONG_MIN <= v <= _LONG_MAX:
        raise ValueError(f"integer {x} out of the range of Iceberg's long")
    return v


def _double(x) -> float:
    try:
        return float(x)
    except OverflowError:  # an integer beyond any double
        raise ValueError(f"number {x} out of the range of Iceberg's double") from None


def _rfc3339(parse, text: str, what: str):
    try:
        return parse(text)
    except ValueError:
        raise ValueError(f"{what} {text!r} is not RFC 3339") from None


def _date_time(text: str) -> dt.datetime:
    value = _rfc3339(dt.datetime.fromisoformat, text, "date-time")
    if value.tzinfo is None:
        raise ValueError(f"date-time {text!r} has no offset (RFC 3339 requires one)")
    return value


def _date(text: str) -> dt.date:
    return _rfc3339(dt.date.fromisoformat, text, "full-date")


def _time(text: str) -> dt.time:
    """A full-time as Iceberg's time (no zone): its offset applied, so the time of day in UTC."""
    value = _rfc3339(dt.time.fromisoformat, text, "full-time")
    offset = value.utcoffset()
    if not offset:
        return value.replace(tzinfo=None)
    return (dt.datetime.combine(dt.date(2000, 1, 2), value.replace(tzinfo=None)) - offset).time()


_PARSE = {"date-time": _date_time, "date": _date, "time": _time}
