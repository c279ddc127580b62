"""Avro values -> Iceberg columns, by Redpanda's mapping ("Schema types translation"):

boolean, int, long, float, double, bytes -> binary, string, record -> struct, array -> list,
map -> map<string, _>, fixed -> fixed[n], enum -> string; logical types decimal -> decimal(p, s),
uuid -> uuid, date -> date, time-millis/-micros -> time, timestamp-millis/-micros -> timestamptz
and local-timestamp-millis/-micros -> timestamp (Redpanda maps both to ``timestamp``: an Avro
timestamp is an instant, so here it is Iceberg's instant type), duration -> its fixed(12)
(Redpanda ignores the logical type). A union of null and one type is that type, optional; any
other union is a struct of one optional field per non-null branch named by its position
("0", "1", ...), the decoded branch set. ``null`` fields are left out; recursive types are refused.

Every column is optional (Redpanda makes a non-null Avro field a required column; optional
columns let a later schema version drop a field, and the table adds columns by name).

Decoding is fastavro's (``schemaless_reader``), the writer's schema being the registry's. A union
branch is chosen by fastavro's ``validate`` of the decoded value against each branch in order
(Avro's binary encoding names the branch, fastavro's reader does not return it): an int that
fits both ``int`` and ``long`` of one union lands in the first.
"""
from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Any, Callable

import fastavro
from fastavro.validation import validate

_PRIMITIVE = {"boolean": "BooleanType", "int": "IntegerType", "long": "LongType", "float": "FloatType",
              "double": "DoubleType", "bytes": "BinaryType", "string": "StringType"}
_LOGICAL = {("int", "date"): "DateType", ("int", "time-millis"): "TimeType", ("long", "time-micros"): "TimeType",
            ("long", "timestamp-millis"): "TimestamptzType", ("long", "timestamp-micros"): "TimestamptzType",
            ("long", "local-timestamp-millis"): "TimestampType",
            ("long", "local-timestamp-micros"): "TimestampType", ("string", "uuid"): "UUIDType"}


def _identity(v):
    return v


class _Ids:
    def __init__(self):
        self.n = 0

    def __call__(self) -> int:
        self.n += 1
        return self.n


@dataclass
class AvroTranslator:
    """One Avro schema version: its columns (``struct``) and decoder."""

    struct: Any
    parsed: Any
    convert: Callable[[Any], dict]

    def decode(self, payload: bytes) -> dict:
        buf = io.BytesIO(payload)
        try:
            datum = fastavro.schemaless_reader(buf, self.parsed, None)
        except Exception as exc:  # fastavro raises EOFError, ValueError, IndexError, UnicodeDecodeError...
            raise ValueError(f"value does not decode with the Avro schema: {type(exc).__name__}: {exc}") from None
        if buf.tell() != len(payload):
            raise ValueError(f"value has {len(payload) - buf.tell()} bytes past the Avro datum")
        return self.convert(datum)


def translator(schema_text: str, references: dict[str, str], message_path: tuple[int, ...] = ()) -> AvroTranslator:
    """The translator of an Avro schema (``references``: name -> Avro text of referenced named types)."""
    named: dict = {}
    try:
        for text in references.values():
            fastavro.parse_schema(json.loads(text), named_schemas=named)
        schema = json.loads(schema_text)
        parsed = fastavro.parse_schema(schema, named_schemas=named)
    except Exception as exc:
        raise ValueError(f"Avro schema does not parse: {exc}") from None
    if not (isinstance(parsed, dict) and parsed.get("type") == "record"):
        raise ValueError("an Avro value maps to columns only when its schema is a record")
    builder = _Builder(named)
    struct, convert = builder.record(parsed, ())
    return AvroTranslator(struct, parsed, convert)


class _Builder:
    """Avro schema (fastavro's parsed form) -> (pyiceberg type, value converter)."""

    def __init__(self, named: dict):
        self.named = named
        self.ids = _Ids()
        from pyiceberg import types
        self.t = types

    def resolve(self, s):
        if isinstance(s, str) and s not in _PRIMITIVE and s != "null":
            if s not in self.named:
                raise ValueError(f"Avro type {s} is not defined")
            return self.named[s]
        return s

    def record(self, s: dict, seen: tuple):
        name = s.get("name")
        if name in seen:
            raise ValueError(f"Avro record {name} is recursive: Iceberg has no recursive types")
        seen = seen + (name,)
        fields, converters = [], []
        for f in s["fields"]:
            kind = self.resolve(f["type"])
            if kind == "null":
                continue  # Redpanda: the null type is not represented
            typ, conv = self.of(kind, seen)
            fields.append(self.t.NestedField(self.ids(), f["name"], typ, required=False))
            converters.append((f["name"], conv))

        def convert(d):
            if d is None:
                return None
            return {n: (None if d.get(n) is None else c(d[n])) for n, c in converters}
        return self.t.StructType(*fields), convert

    def of(self, s, seen: tuple):
        t = self.t
        s = self.resolve(s)
        if isinstance(s, str):
            if s == "null":
                raise ValueError("a null-only Avro type has no Iceberg column")
            return getattr(t, _PRIMITIVE[s])(), _identity
        if isinstance(s, list):
            return self.union(s, seen)
        kind, logical = s.get("type"), s.get("logicalType")
        if isinstance(kind, str) and kind in _PRIMITIVE and logical is None:
            return getattr(t, _PRIMITIVE[kind])(), _identity
        if logical == "decimal" and kind in ("bytes", "fixed"):
            return t.DecimalType(int(s["precision"]), int(s.get("scale", 0))), _identity
        if (kind, logical) in _LOGICAL:
            name = _LOGICAL[(kind, logical)]
            if name == "UUIDType":  # fastavro answers uuid.UUID; Iceberg's uuid is 16 bytes in Arrow
                return t.UUIDType(), lambda u: u.bytes
            return getattr(t, name)(), _identity
        if isinstance(kind, str) and kind in _PRIMITIVE:  # an unknown logical type: the base type
            return getattr(t, _PRIMITIVE[kind])(), _identity
        if kind == "record" or kind == "error":
            return self.record(s, seen)
        if kind == "enum":
            return t.StringType(), _identity
        if kind == "fixed":
            return t.FixedType(int(s["size"])), _identity
        if kind == "array":
            et, ec = self.of(s["items"], seen)
            return t.ListType(self.ids(), et, element_required=False), lambda xs: [None if x is None else ec(x) for x in xs]
        if kind == "map":
            vt, vc = self.of(s["values"], seen)
            return (t.MapType(self.ids(), t.StringType(), self.ids(), vt, value_required=False),
                    lambda m: [(k, None if v is None else vc(v)) for k, v in m.items()])
        raise ValueError(f"Avro type {kind!r} has no Iceberg translation")

    def union(self, branches: list, seen: tuple):
        kept = [b for b in branches if self.resolve(b) != "null"]
        if not kept:
            raise ValueError("a null-only Avro union has no Iceberg column")
        if len(kept) == 1:
            return self.of(kept[0], seen)  # ["null", T]: an optional T
        fields, options = [], []
        for i, b in enumerate(kept):
            typ, conv = self.of(b, seen)
            fields.append(self.t.NestedField(self.ids(), str(i), typ, required=False))
            options.append((str(i), self.resolve(b), conv))

        def convert(v):
            for name, schema, conv in options:
                if validate(v, schema, raise_errors=False):
                    return {name: conv(v)}
            raise ValueError(f"value {v!r} matches no branch of its union")
        return self.t.StructType(*fields), convert

