"""The Protobuf and JSON Schema value translators (lakehouse/value_formats/protobuf.py,
jsonschema.py) over bytes written by confluent-kafka's own serializers.

A real broker serves its Schema Registry over HTTP; ``ProtobufSerializer`` / ``JSONSerializer``
register the schemas (references included) and write Confluent's wire format; the translator is
built from the schema text and references the registry answers for the payload's id, as the
table side builds it. Each decoded row is held to a model computed another way from the source
object (Protobuf: protobuf's own JSON printer; JSON: the values the document was rendered from),
and every row must be accepted by pyarrow for the struct's Arrow schema.
"""
from __future__ import annotations

import datetime as dt
import io
import json
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.schema import Schema as IcebergSchema
from pyiceberg.types import DateType, ListType, LongType, MapType, StringType, StructType, TimestamptzType, TimeType

from hourglass.embedded import EmbeddedBroker
from lakehouse.value_formats import jsonschema as jsonfmt
from lakehouse.value_formats import protobuf as pbfmt
from lakehouse.value_formats import translator as translator_for
from tests.helpers.lake_values import CUSTOMER, ORDER, event_classes, maps_as_dicts, pb_expected

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
UTC = dt.timezone.utc


@pytest.fixture(scope="module")
def registry():
    with EmbeddedBroker(schema_registry=True) as b:
        yield SchemaRegistryClient({"url": b.schema_registry_url})


def wire_split(sr: SchemaRegistryClient, data: bytes, protobuf: bool):
    """(schema text, references, message path, payload) of a wire-format value, the schema and
    its references (transitively) fetched from the registry by the payload's id."""
    assert data[0] == 0
    schema = sr.get_schema(int.from_bytes(data[1:5], "big"))
    refs: dict[str, str] = {}

    def collect(references):
        for r in references or ():
            if r.name not in refs:
                got = sr.get_version(r.subject, r.version).schema
                refs[r.name] = got.schema_str
                collect(got.references)

    collect(schema.references)
    rest, path = data[5:], ()
    if protobuf:
        path, used = pbfmt.message_indexes(rest)
        rest = rest[used:]
    return schema.schema_str, refs, path, rest


def arrow_accepts(tr, rows: list[dict]) -> list[dict]:
    """The rows through Arrow (the contract's schema) and a Parquet file, as a commit writes them."""
    arrow = IcebergSchema(*tr.struct.fields).as_arrow()
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=arrow), buf)
    return pq.read_table(io.BytesIO(buf.getvalue())).to_pylist()


# --------------------------------------------------------------------------- Protobuf

@pytest.fixture(scope="module")
def pb():
    return event_classes()


def serialize(sr, msg, topic="t") -> bytes:
    ser = ProtobufSerializer(type(msg), sr, {"use.deprecated.format": False})
    return ser(msg, SerializationContext(topic, MessageField.VALUE))


def pb_translate(sr, data: bytes):
    text, refs, path, payload = wire_split(sr, data, protobuf=True)
    return translator_for("PROTOBUF", text, refs, path), path, payload


def assert_pb_row(sr, msg):
    data = serialize(sr, msg)
    tr, path, payload = pb_translate(sr, data)
    row = tr.decode(payload)
    assert arrow_accepts(tr, [row])
    assert maps_as_dicts(row, tr.struct) == pb_expected(msg)
    return tr, path, row


def test_protobuf_columns_follow_redpanda_mapping(registry, pb):
    tr = translator_for("PROTOBUF", *wire_split(registry, serialize(registry, pb.Event()), True)[:3])
    types = {f.name: f.field_type for f in tr.struct.fields}
    assert all(not f.required for f in tr.struct.fields)
    assert {n: str(types[n]) for n in ("i32", "s32", "sf32", "i64", "s64", "sf64", "u32", "f32", "u64", "f64",
                                       "fl", "db", "flag", "text", "blob", "level", "maybe", "at", "extra")} == {
        "i32": "int", "s32": "int", "sf32": "int", "i64": "long", "s64": "long", "sf64": "long",
        "u32": "long", "f32": "long", "u64": "string", "f64": "string", "fl": "float", "db": "double",
        "flag": "boolean", "text": "string", "blob": "binary", "level": "string", "maybe": "string",
        "at": "timestamptz", "extra": "string"}
    assert isinstance(types["inner"], StructType) and [f.name for f in types["inner"].fields] == ["label", "xs"]
    assert isinstance(types["inners"], ListType) and isinstance(types["inners"].element_type, StructType)
    assert isinstance(types["by_id"], MapType) and types["by_id"].key_type == LongType()
    assert isinstance(types["price"], StructType) and isinstance(types["name"], StringType)
    assert [f.name for f in types["took"].fields] == ["seconds", "nanos"]  # Duration: a struct
    assert types["levels"] == ListType(types["levels"].element_id, StringType(), element_required=False)
    ids = []

    def walk(t):
        if isinstance(t, StructType):
            for f in t.fields:
                ids.append(f.field_id)
                walk(f.field_type)
        elif isinstance(t, ListType):
            ids.append(t.element_id)
            walk(t.element_type)
        elif isinstance(t, MapType):
            ids.extend((t.key_id, t.value_id))
            walk(t.value_type)
    walk(tr.struct)
    assert len(ids) == len(set(ids))


def test_protobuf_rich_message(registry, pb):
    m = pb.Event(i32=-5, s32=-7, sf32=9, i64=-(1 << 62), s64=1 << 40, sf64=-3, u32=(1 << 32) - 1, f32=1 << 31,
                 u64=(1 << 64) - 1, f64=12, fl=0.1, db=-2.5, flag=True, text="héllo", blob=b"\x00\xff",
                 level=2, maybe="", nums=[1, -2], words=["a", ""], levels=[0, 2, 1], maybe_n=0)
    m.inner.label = "in"
    m.inner.xs.extend([1.5, -0.0])
    m.inners.add(label="x")
    m.counts["k"] = 3
    m.by_id[-9].label = "nine"
    m.price.currency, m.price.units = "EUR", -12
    m.at.seconds, m.at.nanos = 1_700_000_000, 123_456_789
    m.took.seconds, m.took.nanos = 5, 500
    m.extra.update({"a": [1, "b", None, {"c": True}]})
    m.wrapped.value = 0
    tr, path, row = assert_pb_row(registry, m)
    assert path == (0,)
    # the promises the model could share a mistake on, spelled out
    assert row["u64"] == "18446744073709551615" and row["u32"] == 4294967295
    assert row["level"] == "HIGH" and row["levels"] == ["LOW", "HIGH", "MID"]
    assert row["maybe"] == "" and row["maybe_n"] == 0  # set optional fields keep their (default) values
    assert row["at"] == 1_700_000_000_123_456  # nanoseconds truncated to microseconds
    assert row["name"] is None and row["price"] == {"currency": "EUR", "units": -12}
    assert json.loads(row["extra"]) == {"a": [1, "b", None, {"c": True}]}
    assert row["wrapped"] == {"value": 0} and row["took"] == {"seconds": 5, "nanos": 500}
    assert arrow_accepts(tr, [row])[0]["at"] == dt.datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=UTC)


def test_protobuf_empty_message_is_defaults_and_nulls(registry, pb):
    _, _, row = assert_pb_row(registry, pb.Event())
    assert row["i32"] == 0 and row["u64"] == "0" and row["text"] == "" and row["blob"] == b""
    assert row["level"] == "LOW" and row["nums"] == [] and row["counts"] == []
    for absent in ("maybe", "maybe_n", "inner", "name", "price", "at", "took", "extra", "wrapped"):
        assert row[absent] is None, absent


def test_protobuf_nested_message_by_its_indexes(registry, pb):
    deep = pb.Other.Deep(d=4)
    deep.more.add(on=True)
    deep.more.add()
    tr, path, row = assert_pb_row(registry, deep)
    assert path == (1, 0)
    assert row == {"d": 4, "more": [{"on": True}, {"on": False}]}
    with pytest.raises(ValueError, match="name no message"):
        translator_for("PROTOBUF", *wire_split(registry, serialize(registry, deep), True)[:2], (1, 5))


def test_protobuf_message_path_of_a_full_name(registry, pb):
    text, refs, _, _ = wire_split(registry, serialize(registry, pb.Other.Deep()), True)
    assert pbfmt.message_path(text, refs, "lk.Event") == (0,)
    assert pbfmt.message_path(text, refs, "lk.Event.Inner") == (0, 0)
    assert pbfmt.message_path(text, refs, "lk.Other.Deep.Deeper") == (1, 0, 0)
    with pytest.raises(LookupError, match="no message 'lk.Nope'"):
        pbfmt.message_path(text, refs, "lk.Nope")
    tr = pbfmt.translator(text, refs, pbfmt.message_path(text, refs, "lk.Other.Deep.Deeper"))
    assert tr.decode(b"\x08\x01") == {"on": True}


def test_protobuf_undecodable_bytes_raise(registry, pb):
    tr, _, payload = pb_translate(registry, serialize(registry, pb.Event(text="x")))
    for bad in (b"\xff\xff\xff", payload[:-1], b"\x0a\x05ab"):
        with pytest.raises(ValueError, match="lk.Event"):
            tr.decode(bad)


def test_protobuf_unknown_enum_number_is_the_default_name(registry, pb):
    tr, _, _ = pb_translate(registry, serialize(registry, pb.Event()))
    raw = pb.Event(level=1).SerializeToString().replace(b"\x80\x01\x01", b"\x80\x01\x07")  # field 16 = 7
    assert tr.decode(raw)["level"] == "LOW"


def test_protobuf_refused_schemas_name_the_reason(registry):
    recursive = 'syntax = "proto3"; package r; message Node { string v = 1; repeated Child kids = 2; }\n' \
                'message Child { Node back = 1; }'
    sid = registry.register_schema(f"rec-{uuid.uuid4().hex[:6]}", Schema(recursive, "PROTOBUF"))
    text = registry.get_schema(sid).schema_str
    with pytest.raises(ValueError, match=r"recursive type r\.Node -> r\.Child -> r\.Node"):
        pbfmt.translator(text, {})
    group = 'syntax = "proto2"; package g; message G { optional group Grp = 1 { optional int32 a = 2; } }'
    sid = registry.register_schema(f"grp-{uuid.uuid4().hex[:6]}", Schema(group, "PROTOBUF"))
    with pytest.raises(ValueError, match="groups"):
        pbfmt.translator(registry.get_schema(sid).schema_str, {})
    with pytest.raises(ValueError, match="invalid PROTOBUF schema"):
        pbfmt.translator("syntax = 'proto3'; message {", {})


def test_protobuf_fields_without_columns_are_left_out(registry):
    text = 'syntax = "proto3"; package e;\nimport "google/protobuf/empty.proto";\n' \
           'message Nothing {}\nmessage Shell { Nothing inner = 1; }\n' \
           'message M { int32 a = 1; google.protobuf.Empty e = 2; repeated Nothing ns = 3; ' \
           'map<string, Shell> m = 4; Shell s = 5; repeated int32 keep = 6; }'
    sid = registry.register_schema(f"empty-{uuid.uuid4().hex[:6]}", Schema(text, "PROTOBUF"))
    tr = pbfmt.translator(registry.get_schema(sid).schema_str, {}, (2,))
    assert [f.name for f in tr.struct.fields] == ["a", "keep"]
    m = tr.message_class(a=3, keep=[1])
    m.e.SetInParent()
    m.ns.add()
    m.m["k"].inner.SetInParent()
    m.s.SetInParent()
    row = tr.decode(m.SerializeToString())
    assert row == {"a": 3, "keep": [1]} and arrow_accepts(tr, [row]) == [row]
    assert pbfmt.translator(registry.get_schema(sid).schema_str, {}, (0,)).struct.fields == ()


def test_proto2_presence_and_defaults(registry):
    text = 'syntax = "proto2"; package p2;\nenum E { A = 1; B = 2; }\n' \
           'message M { optional int32 a = 1; optional int32 b = 2 [default = 7]; required string r = 3; ' \
           'optional E e = 4; optional E f = 5 [default = B]; }'
    sid = registry.register_schema(f"p2-{uuid.uuid4().hex[:6]}", Schema(text, "PROTOBUF"))
    tr = pbfmt.translator(registry.get_schema(sid).schema_str, {})
    # r = "x" only: a has no default (null), b and f their declared defaults, e none (null)
    assert tr.decode(b"\x1a\x01x") == {"a": None, "b": 7, "r": "x", "e": None, "f": "B"}
    with pytest.raises(ValueError, match="missing required fields r"):
        tr.decode(b"\x08\x01")  # the required field missing
    with pytest.raises(ValueError, match="field p2.M.r is not UTF-8"):
        tr.decode(b"\x1a\x02\xff\xfe")  # proto2 parses it; no string column takes it


def test_protobuf_timestamp_out_of_its_range_raises(registry, pb):
    tr, _, _ = pb_translate(registry, serialize(registry, pb.Event()))
    for seconds, nanos in ((253_402_300_800, 0), (-62_135_596_801, 0), (1 << 62, 0), (0, -1)):
        m = pb.Event()
        m.at.seconds, m.at.nanos = seconds, nanos
        with pytest.raises(ValueError, match="out of its range"):
            tr.decode(m.SerializeToString())
    m = pb.Event()
    m.at.seconds, m.at.nanos = 253_402_300_799, 999_999_999
    assert arrow_accepts(tr, [tr.decode(m.SerializeToString())])[0]["at"] == \
        dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)


_i32 = st.integers(-(1 << 31), (1 << 31) - 1)
_i64 = st.integers(-(1 << 63), (1 << 63) - 1)
_u32 = st.integers(0, (1 << 32) - 1)
_u64 = st.integers(0, (1 << 64) - 1)
_text = st.text(max_size=8)
_float = st.floats(allow_nan=False, width=32)
_double = st.floats(allow_nan=False)
_inner = st.fixed_dictionaries({"label": _text, "xs": st.lists(_double, max_size=3)})
_json_value = st.recursive(st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False) | _text,
                           lambda c: st.lists(c, max_size=3) | st.dictionaries(_text, c, max_size=3), max_leaves=6)


@st.composite
def events(draw, pb):
    m = pb.Event(i32=draw(_i32), s32=draw(_i32), sf32=draw(_i32), i64=draw(_i64), s64=draw(_i64), sf64=draw(_i64),
                 u32=draw(_u32), f32=draw(_u32), u64=draw(_u64), f64=draw(_u64), fl=draw(_float),
                 db=draw(_double), flag=draw(st.booleans()), text=draw(_text), blob=draw(st.binary(max_size=8)),
                 level=draw(st.integers(0, 2)), nums=draw(st.lists(_i64, max_size=4)),
                 words=draw(st.lists(_text, max_size=3)), levels=draw(st.lists(st.integers(0, 2), max_size=3)))
    for name, strat in (("maybe", _text), ("maybe_n", _i64)):
        if draw(st.booleans()):
            setattr(m, name, draw(strat))
    if draw(st.booleans()):
        m.inner.CopyFrom(pb.Event.Inner(**draw(_inner)))
    for inner in draw(st.lists(_inner, max_size=3)):
        m.inners.add(**inner)
    for k, v in draw(st.dictionaries(_text, _i32, max_size=3)).items():
        m.counts[k] = v
    for k, v in draw(st.dictionaries(_i64, _inner, max_size=3)).items():
        m.by_id[k].CopyFrom(pb.Event.Inner(**v))
    choice = draw(st.sampled_from(["none", "name", "price"]))
    if choice == "name":
        m.name = draw(_text)
    elif choice == "price":
        m.price.currency, m.price.units = draw(_text), draw(_i64)
    if draw(st.booleans()):
        m.at.seconds = draw(st.integers(-62135596800, 253402300799))
        m.at.nanos = draw(st.integers(0, 999_999_999))
    if draw(st.booleans()):
        secs = draw(st.integers(-10**6, 10**6))
        m.took.seconds = secs
        m.took.nanos = draw(st.integers(0, 999_999_999)) * (-1 if secs < 0 else 1)
    if draw(st.booleans()):
        m.extra.update(draw(st.dictionaries(_text, _json_value, max_size=3)))
    if draw(st.booleans()):
        m.wrapped.value = draw(_i64)
    return m


def test_protobuf_any_event_decodes_to_the_model(registry, pb):
    tr = None

    @SETTINGS
    @given(data=st.data())
    def check(data):
        nonlocal tr
        msg = data.draw(events(pb))
        wire = serialize(registry, msg)
        if tr is None:  # one schema: built once, as the table side builds it once per id
            tr = pb_translate(registry, wire)[0]
        row = tr.decode(wire[6:])
        assert maps_as_dicts(row, tr.struct) == pb_expected(msg)
        assert arrow_accepts(tr, [row])

    check()


@given(path=st.lists(st.integers(0, 1 << 20), min_size=1, max_size=6), tail=st.binary(max_size=4))
def test_message_indexes_read_what_confluent_writes(path, tail):
    buf = io.BytesIO()
    ProtobufSerializer._encode_varints(buf, path)
    written = buf.getvalue()
    assert pbfmt.message_indexes(written + tail) == (tuple(path), len(written))


def test_message_indexes_refuse_truncated():
    for bad in (b"", b"\x04\x02", b"\x80"):
        with pytest.raises(ValueError):
            pbfmt.message_indexes(bad)


# --------------------------------------------------------------------------- JSON Schema

@pytest.fixture(scope="module")
def order_serializer(registry):
    subject = f"customer-{uuid.uuid4().hex[:6]}"
    registry.register_schema(subject, Schema(json.dumps(CUSTOMER), "JSON"))
    version = registry.get_latest_version(subject).version
    schema = Schema(json.dumps(ORDER), "JSON", [SchemaReference("customer.json", subject, version)])
    ser = JSONSerializer(schema, registry, conf={"auto.register.schemas": True})
    return lambda doc: ser(doc, SerializationContext(f"orders-{subject}", MessageField.VALUE))


def json_translate(sr, data: bytes):
    text, refs, _, payload = wire_split(sr, data, protobuf=False)
    return translator_for("JSON", text, refs), payload


def test_json_columns_follow_redpanda_mapping(registry, order_serializer):
    tr, _ = json_translate(registry, order_serializer({"id": 1}))
    types = {f.name: f.field_type for f in tr.struct.fields}
    assert list(types) == sorted(ORDER["properties"])  # Redpanda orders properties by name
    assert all(not f.required for f in tr.struct.fields)
    assert str(types["id"]) == "long" and str(types["price"]) == "double" and str(types["paid"]) == "boolean"
    assert types["note"] == StringType() and types["at"] == TimestamptzType()
    assert types["day"] == DateType() and types["clock"] == TimeType()
    assert isinstance(types["lines"], ListType) and types["lines"].element_required
    assert [f.name for f in types["lines"].element_type.fields] == ["qty", "sku"]
    assert not types["tags"].element_required  # items admit null
    assert [f.name for f in types["ship"].fields] == ["city", "geo"]
    assert [f.name for f in types["customer"].fields] == ["cid", "email"]


def test_json_document_with_everything(registry, order_serializer):
    doc = {"id": 7, "note": None, "price": 3, "paid": False, "at": "2024-05-06T07:08:09.123456+02:00",
           "day": "2024-02-29", "clock": "23:30:00-01:00", "lines": [{"sku": "a", "qty": 2}],
           "tags": ["x", None], "ship": {"city": "Oslo", "geo": {"lat": 59.9}}, "customer": {"cid": 3},
           "unknown": {"kept": "out"}}
    tr, payload = json_translate(registry, order_serializer(doc))
    row = tr.decode(payload)
    assert row == {"id": 7, "note": None, "price": 3.0, "paid": False,
                   "at": dt.datetime(2024, 5, 6, 5, 8, 9, 123456, tzinfo=UTC), "day": dt.date(2024, 2, 29),
                   "clock": dt.time(0, 30), "lines": [{"qty": 2, "sku": "a"}], "tags": ["x", None],
                   "ship": {"city": "Oslo", "geo": {"lat": 59.9, "lon": None}},
                   "customer": {"cid": 3, "email": None}}
    assert isinstance(row["price"], float)
    back = arrow_accepts(tr, [row])[0]
    assert back["at"] == dt.datetime(2024, 5, 6, 5, 8, 9, 123456, tzinfo=UTC)


def test_json_invalid_documents_raise(registry, order_serializer):
    tr, _ = json_translate(registry, order_serializer({"id": 1}))
    for bad, reason in ((b"{", "not JSON"), (b"\xff", "not JSON"), (b'{"note": "x"}', "'id' is a required"),
                        (b'{"id": "1"}', "at /id"), (b'{"id": 1, "lines": [{"sku": "a"}]}', "at /lines/0"),
                        (b'{"id": 1, "at": "yesterday"}', "date-time"),
                        (b'{"id": 1, "at": "2024-01-01T00:00:00"}', "no offset"),
                        (b'{"id": 9223372036854775808}', "range"), (b'{"id": 1e19}', "range"),
                        (b'{"id": 1, "price": 1' + b"0" * 400 + b"}", "double"), (b"null", "not valid"),
                        (b'{"id": 1, "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nests deeper"),
                        (b'{"id": 1, "note": "a\\ud800"}', "surrogate"), (b'{"id": 1, "note": "\\uDFFF"}', "surrogate")):
        with pytest.raises(ValueError, match=reason):
            tr.decode(bad)


def test_json_surrogate_pairs_are_text(registry, order_serializer):
    tr, _ = json_translate(registry, order_serializer({"id": 1}))
    row = tr.decode(b'{"id": 1, "note": "\\ud83d\\ude00 \\\\ud800", "tags": ["\\u00e9"]}')
    assert row["note"] == "\U0001F600 \\ud800" and row["tags"] == ["\u00e9"]
    assert arrow_accepts(tr, [row])[0]["note"] == row["note"]


@pytest.mark.parametrize("schema, reason", [
    ({"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}}, "anyOf"),
    ({"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}]}}}, "oneOf"),
    ({"type": "object", "properties": {"a": {"type": "string"}}, "allOf": [{"required": ["a"]}]}, "allOf"),
    ({"type": "object", "if": {"required": ["a"]}, "then": {"required": ["b"]}}, "if"),
    ({"type": "object", "patternProperties": {"^x": {"type": "string"}}}, "patternProperties"),
    ({"type": "object", "additionalProperties": {"type": "string"}}, "additionalProperties"),
    ({"type": "object", "additionalProperties": True}, "additionalProperties"),
    ({"type": "object", "properties": {"a": {"type": ["string", "integer"]}}}, "not one type"),
    ({"type": "object", "properties": {"a": {"type": "null"}}}, "not one type"),
    ({"type": "object", "properties": {"a": {"enum": [1, 2]}}}, "no type"),
    ({"type": "object", "properties": {"a": True}}, "boolean schema"),
    ({"type": "object", "properties": {"a": {"type": "array"}}}, "without items"),
    ({"type": "object", "properties": {"a": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}}},
     "different types"),
    ({"type": "object", "properties": {"n": {"$ref": "#"}}}, "recursive"),
    ({"type": "object", "definitions": {"t": {"type": "object", "properties": {"kids": {
        "type": "array", "items": {"$ref": "#/definitions/t"}}}}}, "properties": {"t": {"$ref": "#/definitions/t"}}},
     "recursive"),
    ({"type": "object", "properties": {"a": {"$ref": "#/definitions/missing"}}}, "does not resolve"),
])
def test_json_refused_schemas_name_the_reason(registry, schema, reason):
    sid = registry.register_schema(f"refused-{uuid.uuid4().hex[:6]}", Schema(json.dumps(schema), "JSON"))
    with pytest.raises(ValueError, match=reason):
        jsonfmt.translator(registry.get_schema(sid).schema_str, {})


def test_json_properties_without_columns_are_left_out(registry):
    schema = {"type": "object", "properties": {
        "a": {"type": "integer"}, "empty": {"type": "object"}, "closed": {"type": "object", "additionalProperties": False},
        "shell": {"type": "object", "properties": {"inner": {"type": "object"}}},
        "many": {"type": "array", "items": {"type": "object"}}, "keep": {"type": "array", "items": {"type": "string"}}}}
    sid = registry.register_schema(f"jempty-{uuid.uuid4().hex[:6]}", Schema(json.dumps(schema), "JSON"))
    tr = jsonfmt.translator(registry.get_schema(sid).schema_str, {})
    assert [f.name for f in tr.struct.fields] == ["a", "keep"]
    row = tr.decode(b'{"a": 1, "empty": {"x": 1}, "shell": {"inner": {}}, "many": [{}], "keep": ["k"]}')
    assert row == {"a": 1, "keep": ["k"]} and arrow_accepts(tr, [row]) == [row]
    tr = jsonfmt.translator('{"type": "array", "items": {"type": "object"}}', {})
    assert tr.struct.fields == () and tr.decode(b"[{}]") == {}


def test_json_root_that_is_not_an_object(registry):
    ser = JSONSerializer(json.dumps({"type": "array", "items": {"type": "integer"}}), registry)
    data = ser([1, 2, 3], SerializationContext(f"arr-{uuid.uuid4().hex[:6]}", MessageField.VALUE))
    tr, payload = json_translate(registry, data)
    assert [f.name for f in tr.struct.fields] == ["root"]
    assert tr.decode(payload) == {"root": [1, 2, 3]}


_offsets = st.sampled_from([0, 120, -330, 60 * 14, -60 * 12])
_long = st.integers(-(1 << 63), (1 << 63) - 1)
_finite = st.floats(allow_nan=False, allow_infinity=False)


@st.composite
def orders(draw):
    """(document as the producer writes it, the row the mapping promises)."""
    doc, row = {}, {name: None for name in ORDER["properties"]}

    def maybe(name, value, rendered=None):
        if draw(st.booleans()):
            doc[name] = value if rendered is None else rendered
            row[name] = value

    doc["id"] = row["id"] = draw(_long)
    if draw(st.booleans()):
        doc["note"] = row["note"] = draw(st.none() | st.text(max_size=6))
    price = draw(st.integers(-1000, 1000) | _finite)
    maybe("price", float(price), price)
    maybe("paid", draw(st.booleans()))
    at = draw(st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 1, 1)))
    tz = dt.timezone(dt.timedelta(minutes=draw(_offsets)))
    maybe("at", at.replace(tzinfo=tz), at.replace(tzinfo=tz).isoformat())
    day = draw(st.dates(min_value=dt.date(1, 1, 1)))
    maybe("day", day, day.isoformat())
    clock, off = draw(st.times()), draw(_offsets)
    utc_clock = (dt.datetime.combine(dt.date(2000, 1, 2), clock) - dt.timedelta(minutes=off)).time()
    maybe("clock", utc_clock, clock.replace(tzinfo=dt.timezone(dt.timedelta(minutes=off))).isoformat())
    lines = draw(st.lists(st.fixed_dictionaries({"sku": st.text(max_size=4), "qty": _long}), max_size=3))
    maybe("lines", [{"qty": ln["qty"], "sku": ln["sku"]} for ln in lines], lines)
    if draw(st.booleans()):
        doc["tags"] = row["tags"] = draw(st.none() | st.lists(st.none() | st.text(max_size=3), max_size=3))
    if draw(st.booleans()):
        ship, ship_row = {}, {"city": None, "geo": None}
        if draw(st.booleans()):
            ship["city"] = ship_row["city"] = draw(st.text(max_size=4))
        if draw(st.booleans()):
            geo = draw(st.fixed_dictionaries({}, optional={"lat": _finite, "lon": _finite}))
            ship["geo"], ship_row["geo"] = geo, {"lat": geo.get("lat"), "lon": geo.get("lon")}
        doc["ship"], row["ship"] = ship, ship_row
    if draw(st.booleans()):
        cust = {"cid": draw(_long)}
        if draw(st.booleans()):
            cust["email"] = draw(st.text(max_size=5))
        doc["customer"], row["customer"] = cust, {"cid": cust["cid"], "email": cust.get("email")}
    return doc, row


def test_json_any_order_decodes_to_the_model(registry, order_serializer):
    tr = None

    @SETTINGS
    @given(case=orders())
    def check(case):
        nonlocal tr
        doc, expected = case
        wire = order_serializer(doc)
        if tr is None:
            tr = json_translate(registry, wire)[0]
        row = tr.decode(wire[5:])
        assert row == expected
        back = arrow_accepts(tr, [row])[0]
        if expected["at"] is not None:
            assert back["at"] == expected["at"]

    check()

