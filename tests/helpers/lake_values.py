"""Value models of the registry modes' Protobuf and JSON Schema tests (shared by
tests/lakehouse/test_value_formats_protojson.py and test_registry_modes_protojson.py): the
schemas, protobuf's generated classes for them (once per session: protobuf's default pool takes
each name once) and the rows the mapping promises, computed another way than the translators."""
from __future__ import annotations

import base64
import datetime as dt
import functools
import json
import pathlib
import struct
import tempfile
import uuid

from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor as FD
from pyiceberg.types import ListType, MapType, StructType

from tests.schemas.test_protobuf_clients import generate

UTC = dt.timezone.utc


def maps_as_dicts(value, itype):
    """A row with every map (a list of key/value pairs) as a dict, to compare without order."""
    if value is None:
        return None
    if isinstance(itype, StructType):
        return {f.name: maps_as_dicts(value.get(f.name), f.field_type) for f in itype.fields}
    if isinstance(itype, ListType):
        return [maps_as_dicts(v, itype.element_type) for v in value]
    if isinstance(itype, MapType):
        return {k: maps_as_dicts(v, itype.value_type) for k, v in value}
    return value


COMMON = """syntax = "proto3";
package lk.common;
message Money { string currency = 1; sint64 units = 2; }
enum Level { LOW = 0; MID = 1; HIGH = 2; }
"""

EVENT = """syntax = "proto3";
package lk;
import "{common}";
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/struct.proto";
import "google/protobuf/wrappers.proto";
message Event {
  message Inner { string label = 1; repeated double xs = 2; }
  int32 i32 = 1; sint32 s32 = 2; sfixed32 sf32 = 3;
  int64 i64 = 4; sint64 s64 = 5; sfixed64 sf64 = 6;
  uint32 u32 = 7; fixed32 f32 = 8; uint64 u64 = 9; fixed64 f64 = 10;
  float fl = 11; double db = 12; bool flag = 13; string text = 14; bytes blob = 15;
  lk.common.Level level = 16; optional string maybe = 17;
  Inner inner = 18; repeated Inner inners = 19; repeated int64 nums = 20; repeated string words = 21;
  map<string, int32> counts = 22; map<int64, Inner> by_id = 23;
  oneof choice { string name = 24; lk.common.Money price = 25; }
  google.protobuf.Timestamp at = 26; google.protobuf.Duration took = 27;
  google.protobuf.Struct extra = 28; google.protobuf.Int64Value wrapped = 29;
  repeated lk.common.Level levels = 30; optional int64 maybe_n = 31;
}
message Other {
  string a = 1;
  message Deep { int32 d = 1; repeated Other.Deep.Deeper more = 2; message Deeper { bool on = 1; } }
}
"""


@functools.cache
def event_classes():
    """The generated module of EVENT (and COMMON), once per session: its package's names go into
    protobuf's default pool, which takes each name once (the end-to-end tests share it)."""
    tag = uuid.uuid4().hex[:8]
    common, main = f"lkcommon_{tag}.proto", f"lkevent_{tag}.proto"
    return generate(pathlib.Path(tempfile.mkdtemp(prefix="hg-lkproto-")),
                    {common: COMMON, main: EVENT.replace("{common}", common)}, f"lkevent_{tag}_pb2")


class JsonText:
    """Equal to a JSON text of ``value`` (a Struct's map has no order on the wire)."""

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, str) and json.loads(other) == self.value

    def __repr__(self):
        return f"JsonText({self.value!r})"


def pb_model(d: dict | None, desc):
    """The row the mapping promises, from protobuf's JSON printing of the message (every field
    with no presence printed, proto field names): another route to each value than the
    translator's."""
    if d is None:
        return None
    out = {}
    for fd in desc.fields:
        v = d.get(fd.name)
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            kf, vf = fd.message_type.fields_by_name["key"], fd.message_type.fields_by_name["value"]
            out[fd.name] = None if v is None else {pb_scalar(k, kf, key=True): pb_one(x, vf) for k, x in v.items()}
        elif fd.is_repeated:
            out[fd.name] = None if v is None else [pb_one(x, fd) for x in v]
        else:
            out[fd.name] = None if v is None else pb_one(v, fd)
    return out


def pb_one(v, fd):
    if fd.type != FD.TYPE_MESSAGE:
        return pb_scalar(v, fd)
    name = fd.message_type.full_name
    if name == "google.protobuf.Timestamp":
        t = dt.datetime.fromisoformat(v)
        return (t - dt.datetime(1970, 1, 1, tzinfo=UTC)) // dt.timedelta(microseconds=1)
    if name in ("google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue"):
        return JsonText(v)
    if name == "google.protobuf.Duration":  # "1.5s": seconds and nanos, the nanos the sign of seconds
        text = v[:-1]
        neg = text.startswith("-")
        whole, _, frac = text.lstrip("-").partition(".")
        secs, nanos = int(whole), int((frac + "000000000")[:9])
        return {"seconds": -secs if neg else secs, "nanos": -nanos if neg else nanos}
    if name == "google.protobuf.Int64Value":
        return {"value": int(v)}
    return pb_model(v, fd.message_type)


def pb_scalar(v, fd, key=False):
    t = fd.type
    if t in (FD.TYPE_INT64, FD.TYPE_SINT64, FD.TYPE_SFIXED64, FD.TYPE_INT32, FD.TYPE_SINT32, FD.TYPE_SFIXED32,
             FD.TYPE_UINT32, FD.TYPE_FIXED32):
        return int(v)
    if t in (FD.TYPE_UINT64, FD.TYPE_FIXED64):
        return str(int(v))
    if t == FD.TYPE_FLOAT:
        return struct.unpack("<f", struct.pack("<f", float(v)))[0]
    if t == FD.TYPE_DOUBLE:
        return float(v)
    if t == FD.TYPE_BOOL:
        return v if not key else v == "true"
    if t == FD.TYPE_BYTES:
        return base64.b64decode(v)
    return v  # string; enum: its name


def pb_expected(msg) -> dict:
    d = json_format.MessageToDict(msg, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)
    return pb_model(d, msg.DESCRIPTOR)


CUSTOMER = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
            "properties": {"cid": {"type": "integer"}, "email": {"type": "string"}}, "required": ["cid"]}
ORDER = {
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "Order", "type": "object",
    "definitions": {"line": {"type": "object", "additionalProperties": False, "required": ["sku", "qty"],
                             "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}}}},
    "properties": {
        "id": {"type": "integer"}, "note": {"type": ["string", "null"]}, "price": {"type": "number"},
        "paid": {"type": "boolean"}, "at": {"type": "string", "format": "date-time"},
        "day": {"type": "string", "format": "date"}, "clock": {"type": "string", "format": "time"},
        "lines": {"type": "array", "items": {"$ref": "#/definitions/line"}},
        "tags": {"type": ["array", "null"], "items": {"type": ["string", "null"]}},
        "ship": {"type": "object", "properties": {
            "city": {"type": "string"},
            "geo": {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}}}}},
        "customer": {"$ref": "customer.json"},
    },
    "required": ["id"],
}
