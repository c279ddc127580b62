"""Protobuf values as Iceberg columns, as Redpanda's Iceberg topics translate them.

The schema text (``.proto`` text or Confluent's base64 descriptor) and its references are
compiled by the registry's own parser (``schema_registry.formats.protobuf.parse``: protoc, the
well-known types on the include path); the files go into one ``descriptor_pool`` and payloads
are decoded by protobuf's generated-at-runtime message class (``message_factory``), never by
hand. ``message_path`` is Confluent's message-index path: ``()`` or ``(0,)`` is the file's
first message, ``(1, 0)`` the first nested message of the second, and so on;
``message_path(schema_text, references, full_name)`` finds the path of a message by its full
name (``value_schema_latest:protobuf_name=``).

Type mapping (Redpanda's "Schema types translation", Protobuf tab, and its
``iceberg/conversion/schema_protobuf``):

==========================================  =============================================
Protobuf                                    Iceberg
==========================================  =============================================
bool                                        boolean
double / float                              double / float
int32, sint32, sfixed32                     int
int64, sint64, sfixed64                     long
uint32, fixed32                             long (holds every unsigned 32-bit value)
uint64, fixed64                             string (base-10: Iceberg has no unsigned long)
string / bytes                              string / binary
enum                                        string (the value's name)
message                                     struct
repeated T                                  list<T>
map<K, V>                                   map<K, V>
google.protobuf.Timestamp                   timestamptz (microseconds; nanos truncated)
google.protobuf.Struct / Value / ListValue  string (the value as JSON text)
==========================================  =============================================

Every column is optional. A field that tracks presence (a message, a proto2 ``optional``, a
proto3 ``optional``, a ``oneof`` member) is null when absent; an implicit-presence proto3 field
is its default (0, "", the enum's first name, an empty list or map), as protobuf reads it. A
oneof is its members, each its own column (at most one non-null). An enum number the enum
does not name is the enum's default name, as Redpanda writes it. A proto2 message missing a
``required`` field does not decode (``ValueError``), as Java's parser refuses it. Other well-known types
(Duration, wrappers, Any, Empty, FieldMask) are the messages they are: structs.

A field whose type has no columns (``google.protobuf.Empty``, a message without fields, or a
list or map of one, at any depth) is left out: Parquet cannot hold an empty struct (Redpanda
keeps such a field as an empty struct).

Refused, as Redpanda refuses them (``translator`` raises ``ValueError``: the records go to the
dead-letter table with the reason): recursive messages (a message that contains itself at any
depth) and proto2 groups.

Where we differ from Redpanda:

- ``google.protobuf.Timestamp`` is ``timestamptz``: it is an instant (UTC), as Avro's
  ``timestamp-*`` and JSON Schema's ``date-time`` are here; Redpanda's table type is
  ``timestamp`` (its values are instants all the same).
- Redpanda's own ``redpanda.datalake.*`` helper types (its Date message) are not known here:
  they are ordinary structs. Extensions are not columns.
"""
from __future__ import annotations

import json
from typing import Callable

from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor as FD
from google.protobuf.message import DecodeError, Message
from google.protobuf.message_factory import GetMessageClass
from pyiceberg.types import (BinaryType, BooleanType, DoubleType, FloatType, IcebergType, IntegerType, ListType,
                             LongType, MapType, NestedField, StringType, StructType, TimestamptzType)

from lakehouse.value_formats.columns import has_no_columns
from schema_registry.formats import SchemaError
from schema_registry.formats.protobuf import descriptor_pool_of, parse
from schema_registry.validation import message_indexes as _message_indexes

_TIMESTAMP = "google.protobuf.Timestamp"
_JSON_TYPES = ("google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue")

_SCALARS: dict[int, IcebergType] = {
    FD.TYPE_BOOL: BooleanType(), FD.TYPE_DOUBLE: DoubleType(), FD.TYPE_FLOAT: FloatType(),
    FD.TYPE_INT32: IntegerType(), FD.TYPE_SINT32: IntegerType(), FD.TYPE_SFIXED32: IntegerType(),
    FD.TYPE_INT64: LongType(), FD.TYPE_SINT64: LongType(), FD.TYPE_SFIXED64: LongType(),
    FD.TYPE_UINT32: LongType(), FD.TYPE_FIXED32: LongType(),
    FD.TYPE_UINT64: StringType(), FD.TYPE_FIXED64: StringType(),
    FD.TYPE_STRING: StringType(), FD.TYPE_BYTES: BinaryType(), FD.TYPE_ENUM: StringType(),
}


def message_indexes(payload: bytes) -> tuple[tuple[int, ...], int]:
    """Confluent's message-index prefix at the start of ``payload`` (the bytes after the magic
    byte and schema id): the message path (``(0,)`` for the single-zero shorthand) and how many
    bytes it took. Raises ValueError when the prefix is truncated or malformed."""
    path, end = _message_indexes(payload, 0)
    if any(i < 0 for i in path):
        raise ValueError(f"negative message index in {path}")
    return tuple(path), end


def message_path(schema_text: str, references: dict[str, str], full_name: str) -> tuple[int, ...]:
    """The message-index path of the message ``full_name`` (package-qualified, as Redpanda's
    ``value_schema_latest:protobuf_name=`` names it) in the schema. Raises ValueError when the
    schema does not compile, and LookupError when it defines no such message: that is the
    topic's misconfiguration, not bad data, and Redpanda pauses translation until it is fixed."""
    schema = _parse(schema_text, references)
    want = full_name.lstrip(".")

    def find(msgs, prefix, path):
        for i, m in enumerate(msgs):
            name = f"{prefix}.{m.name}" if prefix else m.name
            if name == want:
                return (*path, i)
            found = find(m.nested_type, name, (*path, i))
            if found is not None:
                return found
        return None

    found = find(schema.fdp.message_type, schema.fdp.package, ())
    if found is None:
        raise LookupError(f"the schema defines no message {full_name!r}")
    return found


def _parse(schema_text: str, references: dict[str, str]):
    try:
        return parse(schema_text, dict(references))
    except SchemaError as exc:
        raise ValueError(f"invalid PROTOBUF schema: {exc}") from None


class ProtobufTranslator:
    """One message type of one schema version: ``struct`` its columns, ``decode`` a payload
    into a row of them. The converters are built once, here."""

    def __init__(self, descriptor):
        self.descriptor = descriptor
        self.message_class = GetMessageClass(descriptor)
        ids = iter(range(1, 1 << 30))
        self.struct, self._row = _message(descriptor, (), ids)
        # proto2 ``required``: a message missing one does not parse in Java (Confluent's
        # deserializer refuses it); Python's parser takes it, so it is checked here
        self._required = _has_required(descriptor, set())

    def decode(self, payload: bytes) -> dict:
        try:
            msg = self.message_class.FromString(payload)
        except (DecodeError, RuntimeError, ValueError) as exc:
            raise ValueError(f"not a {self.descriptor.full_name}: {exc}") from None
        if self._required and not msg.IsInitialized():
            raise ValueError(f"not a {self.descriptor.full_name}: missing required fields "
                             f"{', '.join(msg.FindInitializationErrors())}")
        return self._row(msg)


def translator(schema_text: str, references: dict[str, str], message_path: tuple[int, ...] = ()) -> ProtobufTranslator:
    """The translator of the message ``message_path`` names in the schema. Raises ValueError
    for a schema that does not compile, a path naming no message, or a message Redpanda does
    not translate (recursive, groups)."""
    schema = _parse(schema_text, references)
    try:
        pool = descriptor_pool_of({**schema.deps, schema.fdp.name: schema.fdp}, [schema.fdp.name])
    except TypeError as exc:  # protoc compiled them, so this is a pool's own refusal
        raise ValueError(f"PROTOBUF schema files do not load into one descriptor pool: {exc}") from None
    path = tuple(message_path) or (0,)
    msgs, name = schema.fdp.message_type, schema.fdp.package
    for i in path:
        if not 0 <= i < len(msgs):
            raise ValueError(f"message indexes {list(path)} name no message of the schema")
        name = f"{name}.{msgs[i].name}" if name else msgs[i].name
        msgs = msgs[i].nested_type
    return ProtobufTranslator(pool.FindMessageTypeByName(name))


def _has_required(descriptor, seen: set) -> bool:
    if descriptor.full_name in seen:
        return False
    seen.add(descriptor.full_name)
    return any(fd.is_required or (fd.message_type is not None and _has_required(fd.message_type, seen))
               for fd in descriptor.fields)


# --------------------------------------------------------------------------- columns

Convert = Callable[[object], object]


def _message(descriptor, stack: tuple[str, ...], ids) -> tuple[StructType, Callable[[Message], dict]]:
    """A message's struct and its row function (message -> dict of its fields)."""
    if descriptor.full_name in stack:
        raise ValueError("Protobuf message not supported: recursive type "
                         f"{' -> '.join((*stack, descriptor.full_name))}")
    stack = (*stack, descriptor.full_name)
    fields, convert, template, fresh_lists = [], {}, {}, []
    for fd in descriptor.fields:
        ftype, conv, default = _field(fd, stack, ids)
        if has_no_columns(ftype):
            continue  # Parquet holds no empty struct: the field is left out
        fields.append(NestedField(next(ids), fd.name, ftype, required=False))
        convert[fd.number] = (fd.name, conv)
        if isinstance(default, list):
            fresh_lists.append(fd.name)
        template[fd.name] = default
    struct = StructType(*fields)

    def row(msg: Message) -> dict:
        out = dict(template)
        for name in fresh_lists:
            out[name] = []
        for fd, value in msg.ListFields():
            target = convert.get(fd.number)
            if target is None or fd.is_extension:
                continue
            name, conv = target
            out[name] = value if conv is None else conv(value)
        return out

    return struct, row


def _field(fd, stack, ids) -> tuple[IcebergType, Convert | None, object]:
    """A field's Iceberg type, the conversion of its Python value (None: as protobuf gives
    it) and its value when ``ListFields`` omits it (null with presence, else the default)."""
    if fd.type == FD.TYPE_MESSAGE and fd.message_type.GetOptions().map_entry:
        kf, vf = fd.message_type.fields_by_name["key"], fd.message_type.fields_by_name["value"]
        ktype, kconv, _ = _single(kf, stack, ids)
        vtype, vconv, _ = _single(vf, stack, ids)
        if has_no_columns(vtype):
            return vtype, None, None  # left out by the caller
        mtype = MapType(next(ids), ktype, next(ids), vtype, value_required=False)
        if kconv is None and vconv is None:
            return mtype, lambda m: list(m.items()), []
        kc = kconv or _same
        vc = vconv or _same
        return mtype, lambda m: [(kc(k), vc(v)) for k, v in m.items()], []
    if fd.is_repeated:
        etype, econv, _ = _single(fd, stack, ids)
        if has_no_columns(etype):
            return etype, None, None  # left out by the caller
        ltype = ListType(next(ids), etype, element_required=False)
        return ltype, (list if econv is None else (lambda xs: [econv(x) for x in xs])), []
    return _single(fd, stack, ids)


def _same(x):
    return x


def _single(fd, stack, ids) -> tuple[IcebergType, Convert | None, object]:
    """One value of ``fd`` (an element, for a repeated field: its default is the caller's)."""
    t = fd.type
    present = fd.is_repeated or (fd.has_presence and not fd.has_default_value)
    if t == FD.TYPE_GROUP:
        raise ValueError(f"Protobuf field {fd.full_name} not supported: groups")
    if t == FD.TYPE_MESSAGE:
        full = fd.message_type.full_name
        if full == _TIMESTAMP:
            return TimestamptzType(), _timestamp, None
        if full in _JSON_TYPES:
            return StringType(), _json_text, None
        struct, row = _message(fd.message_type, stack, ids)
        return struct, row, None
    itype = _SCALARS[t]
    if t == FD.TYPE_ENUM:
        names = {v.number: v.name for v in fd.enum_type.values}
        first = fd.enum_type.values[0].name
        default = None if present else names.get(fd.default_value, first)
        return itype, (lambda n: names.get(n, first)), default
    if t in (FD.TYPE_UINT64, FD.TYPE_FIXED64):
        return itype, str, None if present else str(fd.default_value)
    if t == FD.TYPE_STRING:
        return itype, _utf8_checker(fd.full_name), None if present else fd.default_value
    return itype, None, None if present else fd.default_value


def _utf8_checker(name: str) -> Convert:
    """proto3 refuses a string that is not UTF-8 as it parses; proto2 (and editions without
    validation) hand its bytes over, which no string column takes."""
    def check(v):
        if type(v) is not str:
            raise ValueError(f"field {name} is not UTF-8 text")
        return v
    return check


#: google.protobuf.Timestamp's range: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z
_TS_MIN, _TS_MAX = -62_135_596_800, 253_402_300_799


def _timestamp(ts) -> int:
    """Microseconds since the epoch (Iceberg's timestamp unit; nanoseconds truncated)."""
    if not (_TS_MIN <= ts.seconds <= _TS_MAX and 0 <= ts.nanos < 1_000_000_000):
        raise ValueError(f"google.protobuf.Timestamp {ts.seconds}s {ts.nanos}ns is out of its range "
                         "(0001-01-01 to 9999-12-31)")
    return ts.seconds * 1_000_000 + ts.nanos // 1000


def _json_text(msg) -> str:
    try:
        return json.dumps(json_format.MessageToDict(msg), separators=(",", ":"), allow_nan=False)
    except ValueError as exc:  # NaN and infinities have no JSON text
        raise ValueError(f"{msg.DESCRIPTOR.full_name} not JSON: {exc}") from None
