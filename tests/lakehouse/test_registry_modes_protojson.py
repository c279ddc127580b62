"""Protobuf and JSON Schema values in the registry modes end to end: a real broker (a subprocess)
serving its Schema Registry and Iceberg REST catalog, confluent-kafka's ProtobufSerializer /
JSONSerializer registering and framing values, pyiceberg reading the tables by the catalog URL.
Each record of the read_committed log is one row: of the topic's table, its value columns equal
to the model of the object produced (the models of tests/helpers/lake_values.py),
or of ``<topic>~dlq`` with its bytes and the reason."""
from __future__ import annotations

import datetime as dt
import json
import random

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.helpers.lake_values import CUSTOMER, ORDER, event_classes, maps_as_dicts, pb_expected
from tests.helpers.clients import wait_until
from tests.helpers.txn import create_topic
# the registry modes' broker fixture and table readers (the Avro end-to-end tests' own)
from tests.lakehouse.test_registry_modes import (framed, held, log_of, reglake, rows, table,  # noqa: F401
                                                 wait_translated)

UTC = dt.timezone.utc


@pytest.fixture(scope="module")
def pb():
    return event_classes()


def translated_log(bootstrap: str, url: str, topic: str, partitions: int) -> list[tuple]:
    """(partition, offset, value) of the read_committed log, once the topic's table covers it."""
    log = log_of(bootstrap, topic, partitions)
    wait_translated(url, topic, log)
    return [(p, o, value) for p, o, _, _, value in log]


def random_event(rng: random.Random, pb):
    i64 = lambda: rng.randint(-(1 << 63), (1 << 63) - 1)  # noqa: E731
    text = lambda: rng.choice(["", "a", "héllo", "x" * 20])  # noqa: E731
    m = pb.Event(i32=rng.randint(-(1 << 31), (1 << 31) - 1), s64=i64(), u32=rng.randint(0, (1 << 32) - 1),
                 u64=rng.randint(0, (1 << 64) - 1), fl=rng.choice([0.0, 0.5, -1.25]), db=rng.random(),
                 flag=rng.random() < 0.5, text=text(), blob=rng.randbytes(rng.randint(0, 4)),
                 level=rng.randint(0, 2), nums=[i64() for _ in range(rng.randint(0, 3))],
                 levels=[rng.randint(0, 2) for _ in range(rng.randint(0, 2))])
    if rng.random() < 0.5:
        m.maybe = text()
    if rng.random() < 0.5:
        m.inner.label = text()
        m.inner.xs.extend(rng.random() for _ in range(rng.randint(0, 2)))
    for _ in range(rng.randint(0, 2)):
        m.inners.add(label=text())
    for _ in range(rng.randint(0, 2)):
        m.counts[text()] = rng.randint(-5, 5)
        m.by_id[i64()].label = text()
    choice = rng.choice(["none", "name", "price"])
    if choice == "name":
        m.name = text()
    elif choice == "price":
        m.price.currency, m.price.units = "EUR", i64()
    if rng.random() < 0.7:
        m.at.seconds, m.at.nanos = rng.randint(0, 4_000_000_000), rng.randint(0, 999_999_999)
    if rng.random() < 0.5:
        m.took.seconds = rng.randint(0, 1000)
    if rng.random() < 0.5:
        m.extra.update({"k": [1, "two", None], "n": {"b": True}})
    if rng.random() < 0.5:
        m.wrapped.value = i64()
    return m


def pb_table_model(msg) -> dict:
    """The model row as the table reads back: timestamps as UTC datetimes."""
    want = pb_expected(msg)
    if want["at"] is not None:
        want["at"] = dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=want["at"])
    return want


def value_struct(tbl):
    """The table's value columns (all but Redpanda's metadata struct)."""
    from pyiceberg.types import StructType
    return StructType(*[f for f in tbl.schema().fields if f.name != "redpanda"])


def value_columns(row: dict, struct) -> dict:
    return maps_as_dicts({k: v for k, v in row.items() if k != "redpanda"}, struct)


def test_protobuf_values_become_typed_columns_and_bad_ones_the_dlq(reglake, pb):
    b, url, topic = reglake.bootstrap, reglake.catalog_url, "events"
    create_topic(b, topic, 2, {"iceberg.mode": "value_schema_id_prefix"})
    sr = SchemaRegistryClient({"url": reglake.registry_url})
    ctx = SerializationContext(topic, MessageField.VALUE)
    ser = ProtobufSerializer(pb.Event, sr, {"use.deprecated.format": False})
    rng = random.Random(41)
    p = Producer({"bootstrap.servers": b, "linger.ms": 5})
    sent = {}
    for i in range(50):
        msg = random_event(rng, pb)
        data = ser(msg, ctx)
        sent[data] = msg
        p.produce(topic, value=data, partition=i % 2)
    own = sr.get_latest_version(f"{topic}-value").schema_id
    recursive = sr.register_schema("tree-value", Schema(
        'syntax = "proto3"; package r; message Node { repeated Node kids = 1; }', "PROTOBUF"))
    bad = {framed(own, b"\x00\xff\xff"): "not a lk.Event", framed(own, b"\x02\x0e"): "name no message",
           framed(own, b""): "truncated message indexes", framed(recursive, b"\x00"): "recursive type r.Node"}
    for i, v in enumerate(bad):
        p.produce(topic, value=v, partition=i % 2)
    p.flush(30)
    log = translated_log(b, url, topic, 2)

    struct = value_struct(table(url, topic))
    types = {f.name: str(f.field_type) for f in struct.fields}
    assert types["u64"] == "string" and types["u32"] == "long" and types["level"] == "string"
    assert types["at"] == "timestamptz" and types["extra"] == "string" and types["by_id"].startswith("map<long")
    good, dead = rows(url, topic), rows(url, topic + "~dlq")
    assert sorted(set(good) | set(dead)) == [(p_, o) for p_, o, _ in log] and not set(good) & set(dead)
    for part, off, value in log:
        if value in sent:
            assert value_columns(good[(part, off)], struct) == pb_table_model(sent[value]), (part, off)
        else:
            assert dead[(part, off)]["value"] == value and bad[value] in dead[(part, off)]["reason"]
    assert len(dead) == len(bad)


def test_protobuf_value_schema_latest_with_protobuf_name(reglake, pb):
    b, url, topic = reglake.bootstrap, reglake.catalog_url, "deep"
    sr = SchemaRegistryClient({"url": reglake.registry_url})
    # the serializer registers the schema (whose first message is lk.Event) under "elsewhere-value"
    ProtobufSerializer(pb.Other.Deep, sr, {"use.deprecated.format": False})(
        pb.Other.Deep(), SerializationContext("elsewhere", MessageField.VALUE))
    subject = "elsewhere-value"
    create_topic(b, topic, 1, {"iceberg.mode": f"value_schema_latest:subject={subject},protobuf_name=lk.Other.Deep"})
    p = Producer({"bootstrap.servers": b})
    sent = []
    for i in range(20):
        m = pb.Other.Deep(d=i)
        for j in range(i % 3):
            m.more.add(on=j % 2 == 0)
        sent.append(m)
        p.produce(topic, value=m.SerializeToString())  # no wire-format prefix in this mode
    p.flush(30)
    translated_log(b, url, topic, 1)
    got = rows(url, topic)
    struct = value_struct(table(url, topic))
    assert [value_columns(r, struct) for _, r in sorted(got.items())] == \
        [{"d": m.d, "more": [{"on": x.on} for x in m.more]} for m in sent]


def test_protobuf_name_the_schema_lacks_pauses_the_topic_until_fixed(reglake, pb):
    """Redpanda's behaviour for a ``protobuf_name`` naming no message: translation of the topic
    pauses (no row, no dead letter), saying why, and resumes from the start once it is fixed."""
    b, url, topic = reglake.bootstrap, reglake.catalog_url, "paused"
    sr = SchemaRegistryClient({"url": reglake.registry_url})
    ProtobufSerializer(pb.Other.Deep, sr, {"use.deprecated.format": False})(
        pb.Other.Deep(), SerializationContext("paused-schema", MessageField.VALUE))
    mode = "value_schema_latest:subject=paused-schema-value,protobuf_name={}"
    create_topic(b, topic, 1, {"iceberg.mode": mode.format("lk.Other.Nope")})
    p = Producer({"bootstrap.servers": b})
    for i in range(5):
        p.produce(topic, value=pb.Other.Deep(d=i).SerializeToString())
    p.flush(30)
    wait_until(lambda: "no message 'lk.Other.Nope'" in reglake.log_text(), timeout=30, what="the reason in the log")
    assert held(url, topic) == {} and held(url, topic + "~dlq") == {}
    admin = AdminClient({"bootstrap.servers": b})
    fix = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry("iceberg.mode", mode.format("lk.Other.Deep"), incremental_operation=AlterConfigOpType.SET)])
    for f in admin.incremental_alter_configs([fix]).values():
        f.result(30)
    translated_log(b, url, topic, 1)
    assert [r["d"] for _, r in sorted(rows(url, topic).items())] == list(range(5))
    assert held(url, topic + "~dlq") == {}


def test_json_values_become_typed_columns_and_bad_ones_the_dlq(reglake):
    b, url, topic = reglake.bootstrap, reglake.catalog_url, "orders"
    create_topic(b, topic, 2, {"iceberg.mode": "value_schema_id_prefix"})
    sr = SchemaRegistryClient({"url": reglake.registry_url})
    sr.register_schema("customer", Schema(json.dumps(CUSTOMER), "JSON"))
    ser = JSONSerializer(Schema(json.dumps(ORDER), "JSON", [SchemaReference("customer.json", "customer", 1)]), sr)
    ctx = SerializationContext(topic, MessageField.VALUE)
    rng = random.Random(7)
    p = Producer({"bootstrap.servers": b, "linger.ms": 5})
    sent = {}
    for i in range(40):
        at = dt.datetime(2020, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=rng.randint(-5, 5)))) \
            + dt.timedelta(seconds=rng.randint(0, 10**8), microseconds=rng.randint(0, 999_999))
        doc = {"id": rng.randint(-(1 << 63), (1 << 63) - 1), "note": rng.choice([None, "", "gift"]),
               "price": rng.random() * 100, "paid": rng.random() < 0.5, "at": at.isoformat(),
               "day": (dt.date(2024, 1, 1) + dt.timedelta(days=rng.randint(0, 900))).isoformat(),
               "clock": f"{rng.randint(0, 23):02}:{rng.randint(0, 59):02}:00Z",
               "lines": [{"sku": f"s{j}", "qty": j} for j in range(rng.randint(0, 3))],
               "tags": rng.choice([None, [], ["a", None]]), "ship": {"city": "Oslo", "geo": {"lat": 1.5}},
               "customer": {"cid": i}}
        if rng.random() < 0.3:
            del doc["ship"], doc["customer"]
        data = ser(doc, ctx)
        sent[data] = (doc, at)
        p.produce(topic, value=data, partition=i % 2)
    own = sr.get_latest_version(f"{topic}-value").schema_id
    bad = {framed(own, b'{"id": "x"}'): "not valid for the schema at /id", framed(own, b"{"): "not JSON",
           framed(own, b'{"id": 1, "at": "noon"}'): "date-time"}
    for i, v in enumerate(bad):
        p.produce(topic, value=v, partition=i % 2)
    p.flush(30)
    log = translated_log(b, url, topic, 2)

    types = {f.name: str(f.field_type) for f in table(url, topic).schema().fields}
    assert types["id"] == "long" and types["at"] == "timestamptz" and types["day"] == "date"
    assert types["clock"] == "time" and types["lines"].startswith("list<struct<")
    good, dead = rows(url, topic), rows(url, topic + "~dlq")
    assert sorted(set(good) | set(dead)) == [(p_, o) for p_, o, _ in log] and not set(good) & set(dead)
    for part, off, value in log:
        if value not in sent:
            assert dead[(part, off)]["value"] == value and bad[value] in dead[(part, off)]["reason"]
            continue
        doc, at = sent[value]
        row = good[(part, off)]
        assert row["id"] == doc["id"] and row["note"] == doc["note"] and row["price"] == doc["price"]
        assert row["at"] == at and row["day"] == dt.date.fromisoformat(doc["day"])
        assert row["clock"] == dt.time.fromisoformat(doc["clock"][:-1])
        assert row["lines"] == [{"qty": ln["qty"], "sku": ln["sku"]} for ln in doc["lines"]]
        assert row["tags"] == doc["tags"]
        if "ship" in doc:
            assert row["ship"] == {"city": "Oslo", "geo": {"lat": 1.5, "lon": None}}
            assert row["customer"] == {"cid": doc["customer"]["cid"], "email": None}
        else:
            assert row["ship"] is None and row["customer"] is None
    assert len(dead) == len(bad)


def reading_class(extra: bool):
    """``ev.Reading`` (sensor, value) or its next version with ``unit`` and repeated ``tags``
    added, each from a descriptor of its own pool (two versions of one name side by side)."""
    from google.protobuf import descriptor_pb2, descriptor_pool
    from google.protobuf.message_factory import GetMessageClass
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name=f"ev_{random.getrandbits(40):x}.proto", package="ev", syntax="proto3")
    m = fdp.message_type.add(name="Reading")
    m.field.add(name="sensor", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    m.field.add(name="value", number=2, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    if extra:
        m.field.add(name="unit", number=3, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
        m.field.add(name="tags", number=4, type=F.TYPE_STRING, label=F.LABEL_REPEATED)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return GetMessageClass(pool.FindMessageTypeByName("ev.Reading"))


def test_protobuf_next_schema_version_adds_its_fields_as_columns(reglake):
    b, url, topic = reglake.bootstrap, reglake.catalog_url, "readings"
    create_topic(b, topic, 1, {"iceberg.mode": "value_schema_id_prefix"})
    sr = SchemaRegistryClient({"url": reglake.registry_url})
    ctx = SerializationContext(topic, MessageField.VALUE)
    v1, v2 = reading_class(False), reading_class(True)
    p = Producer({"bootstrap.servers": b})
    for i in range(5):
        p.produce(topic, value=ProtobufSerializer(v1, sr, {"use.deprecated.format": False})(
            v1(sensor=f"s{i}", value=i / 2), ctx))
    p.flush(30)
    translated_log(b, url, topic, 1)
    assert [f.name for f in value_struct(table(url, topic)).fields] == ["sensor", "value"]
    ser2 = ProtobufSerializer(v2, sr, {"use.deprecated.format": False})  # a compatible next version
    for i in range(5, 10):
        p.produce(topic, value=ser2(v2(sensor=f"s{i}", value=i / 2, unit="C" if i % 2 else "", tags=["t"] * (i % 3)),
                                    ctx))
    p.flush(30)
    translated_log(b, url, topic, 1)
    assert len(sr.get_versions(f"{topic}-value")) == 2
    t = table(url, topic)
    assert [(f.name, str(f.field_type)) for f in value_struct(t).fields] == [
        ("sensor", "string"), ("value", "double"), ("unit", "string"), ("tags", "list<string>")]
    got = [value_columns(r, value_struct(t)) for _, r in sorted(rows(url, topic).items())]
    assert got == [{"sensor": f"s{i}", "value": i / 2, "unit": None, "tags": None} for i in range(5)] + \
        [{"sensor": f"s{i}", "value": i / 2, "unit": "C" if i % 2 else "", "tags": ["t"] * (i % 3)}
         for i in range(5, 10)]


def test_json_next_schema_version_adds_its_properties_as_columns(reglake):
    b, url, topic = reglake.bootstrap, reglake.catalog_url, "clicks"
    create_topic(b, topic, 1, {"iceberg.mode": "value_schema_id_prefix"})
    sr = SchemaRegistryClient({"url": reglake.registry_url})
    ctx = SerializationContext(topic, MessageField.VALUE)
    v1 = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "additionalProperties": False,
          "properties": {"user": {"type": "integer"}, "page": {"type": "string"}}}
    # a closed content model may take a new optional property compatibly (Confluent's rules)
    v2 = {**v1, "properties": {**v1["properties"], "ms": {"type": ["number", "null"]},
                               "at": {"type": "string", "format": "date-time"}}}
    p = Producer({"bootstrap.servers": b})
    ser1 = JSONSerializer(json.dumps(v1), sr)
    for i in range(4):
        p.produce(topic, value=ser1({"user": i, "page": f"/p{i}"}, ctx))
    p.flush(30)
    translated_log(b, url, topic, 1)
    ser2 = JSONSerializer(json.dumps(v2), sr)
    for i in range(4, 8):
        p.produce(topic, value=ser2({"user": i, "page": f"/p{i}", "ms": i * 1.5 if i % 2 else None,
                                     "at": f"2026-12-07T0{i}:00:00Z"}, ctx))
    p.flush(30)
    translated_log(b, url, topic, 1)
    assert len(sr.get_versions(f"{topic}-value")) == 2
    t = table(url, topic)
    assert [(f.name, str(f.field_type)) for f in value_struct(t).fields] == [
        ("page", "string"), ("user", "long"), ("at", "timestamptz"), ("ms", "double")]
    got = [value_columns(r, value_struct(t)) for _, r in sorted(rows(url, topic).items())]
    assert got == [{"user": i, "page": f"/p{i}", "ms": None, "at": None} for i in range(4)] + \
        [{"user": i, "page": f"/p{i}", "ms": i * 1.5 if i % 2 else None,
          "at": dt.datetime(2026, 12, 7, i, tzinfo=UTC)} for i in range(4, 8)]
