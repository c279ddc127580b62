"""Schema ID validation on produce (confluent.key/value.schema.validation), end to end.

A topic with validation takes what the registry's serializers write and refuses, whole, any
batch with a record that lacks the magic byte and id or names an id not registered for the
subject: INVALID_RECORD as confluent-kafka, kafka-python and the Java client report it, the
per-record errors on the wire (Produce v8+), nothing appended; other topics are unaffected.
Without a registry in the broker the topic refuses every produce, saying so.
"""
from __future__ import annotations

import struct

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient, record_subject_name_strategy
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from hourglass import EmbeddedBroker
from protocol.messages.produce import ProduceRequest
from protocol.records.record import build_batch
from tests.helpers.java import run_java
from tests.helpers.raw import RawClient
# at collection, not inside the test: importing a test module rewrites it with ast while the
# test's broker imports in its own threads (CPython 3.11's AST builder is not thread-safe)
from tests.schemas.test_protobuf_clients import generate

ON = "confluent.value.schema.validation"
ORDER = {"type": "record", "name": "Order", "namespace": "com.acme",
         "fields": [{"name": "id", "type": "string"}, {"name": "n", "type": "int"}]}
OTHER = {"type": "record", "name": "Other", "fields": [{"name": "x", "type": "long"}]}


def framed(sid: int, body: bytes = b"\x02a\x02") -> bytes:
    return b"\x00" + struct.pack(">I", sid) + body


def create(broker, name: str, configs: dict[str, str] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(name, 1, 1, config=configs or {})])[name].result(10)


def end_offset(broker, topic: str) -> int:
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "probe"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    finally:
        c.close()


def produce_raw(broker, topic: str, values, keys=None) -> list:
    """confluent-kafka: one delivery result per value (None = delivered, else the KafkaError)."""
    results = []
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0})
    for i, v in enumerate(values):
        p.produce(topic, value=v, key=None if keys is None else keys[i],
                  on_delivery=lambda err, _msg: results.append(err))
        p.flush(10)  # one record a batch: each verdict is its own
    assert len(results) == len(values)
    return results


@pytest.mark.hourglass(schema_registry=True)
def test_validated_topic_takes_serializer_output_and_refuses_the_rest(hourglass_broker):
    b = hourglass_broker
    create(b, "orders", {ON: "true"})
    create(b, "plain")
    sr = SchemaRegistryClient({"url": b.schema_registry_url})
    ser = AvroSerializer(sr, __import__("json").dumps(ORDER))
    ctx = SerializationContext("orders", MessageField.VALUE)
    good = [ser({"id": f"o{i}", "n": i}, ctx) for i in range(3)]
    assert produce_raw(b, "orders", good) == [None, None, None]
    assert end_offset(b, "orders") == 3
    other_id = sr.register_schema("elsewhere-value", Schema(__import__("json").dumps(OTHER), "AVRO"))
    own_id = sr.get_latest_version("orders-value").schema_id
    assert other_id != own_id
    bad = [b"plain bytes", framed(own_id + 1000), framed(other_id), b"", b"\x01" + good[0][1:]]
    errors = produce_raw(b, "orders", bad)
    assert [e.code() if e else None for e in errors] == [KafkaError.INVALID_RECORD] * len(bad)
    assert all(e.name() == "INVALID_RECORD" and not e.retriable() for e in errors)
    assert end_offset(b, "orders") == 3  # nothing of them appended
    # a tombstone passes (as in Confluent Server), so does every record on another topic
    assert produce_raw(b, "orders", [None]) == [None]
    assert produce_raw(b, "plain", bad) == [None] * len(bad)
    assert end_offset(b, "plain") == len(bad)
    # the accepted records read back with the deserializer
    de = AvroDeserializer(sr)
    c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "r", "auto.offset.reset": "earliest"})
    c.subscribe(["orders"])
    got = []
    while len(got) < 4:
        m = c.poll(10)
        assert m is not None and m.error() is None
        got.append(None if m.value() is None else de(m.value(), ctx))
    c.close()
    assert got == [{"id": "o0", "n": 0}, {"id": "o1", "n": 1}, {"id": "o2", "n": 2}, None]
    # DescribeConfigs shows the topic config
    admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
    res = ConfigResource(ConfigResource.Type.TOPIC, "orders")
    cfg = admin.describe_configs([res])[res].result(10)
    assert cfg[ON].value == "true" and cfg["confluent.value.subject.name.strategy"].value == (
        "io.confluent.kafka.serializers.subject.TopicNameStrategy")


@pytest.mark.hourglass(schema_registry=True)
def test_per_record_errors_on_the_wire(hourglass_broker):
    b = hourglass_broker
    create(b, "wire", {ON: "true"})
    sr = SchemaRegistryClient({"url": b.schema_registry_url})
    sid = sr.register_schema("wire-value", Schema(__import__("json").dumps(ORDER), "AVRO"))
    cli = RawClient(b.bootstrap_servers)
    try:
        for version in (3, 7, 8, 9, 11):
            batch = build_batch([(None, framed(sid), 1000), (None, b"raw", 1000), (None, framed(sid), 1000),
                                 (None, framed(sid + 50), 1000)])
            req = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
                ProduceRequest.TopicProduceData(name="wire", partition_data=[
                    ProduceRequest.PartitionProduceData(index=0, records=batch)])])
            p = cli.request(0, version, req).responses[0].partition_responses[0]
            assert p.error_code == 87 and p.base_offset == -1, version
            if version >= 8:
                assert [(e.batch_index, e.batch_index_error_message) for e in p.record_errors] == [
                    (1, "Record value has no schema id: the Schema Registry wire format (magic byte 0 and a "
                        "4-byte schema id) is required on topic wire"),
                    (3, f"Record value names schema id {sid + 50}, which is not registered under subject "
                        "wire-value")]
                assert p.error_message.startswith("One or more records have been rejected due to 2 record errors")
        ok = build_batch([(None, framed(sid), 1000)] * 2)
        req = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
            ProduceRequest.TopicProduceData(name="wire", partition_data=[
                ProduceRequest.PartitionProduceData(index=0, records=ok)])])
        p = cli.request(0, 9, req).responses[0].partition_responses[0]
        assert (p.error_code, p.base_offset) == (0, 0)  # nothing of the refused batches before it
    finally:
        cli.close()


@pytest.mark.hourglass(schema_registry=True)
def test_kafka_python_and_java_see_invalid_record(hourglass_broker):
    from kafka import KafkaProducer
    from kafka.errors import InvalidRecordError
    b = hourglass_broker
    create(b, "jv", {ON: "true"})
    p = KafkaProducer(bootstrap_servers=b.bootstrap_servers, retries=0)
    with pytest.raises(InvalidRecordError):
        p.send("jv", b"not framed").get(timeout=10)
    p.close()
    lines = run_java(["produce", "--bootstrap", b.bootstrap_servers, "--topic", "jv", "--count", "2"], check=False)
    errs = [line for line in lines if "index" in line]
    assert [e.get("error") for e in errs] == ["InvalidRecordException"] * 2
    assert end_offset(b, "jv") == 0


@pytest.mark.hourglass(schema_registry=True)
def test_keys_and_record_name_strategy(hourglass_broker):
    b = hourglass_broker
    create(b, "keyed", {"confluent.key.schema.validation": "true",
                        "confluent.key.subject.name.strategy":
                            "io.confluent.kafka.serializers.subject.RecordNameStrategy"})
    sr = SchemaRegistryClient({"url": b.schema_registry_url})
    ser = AvroSerializer(sr, __import__("json").dumps(ORDER), conf={"subject.name.strategy": record_subject_name_strategy})
    key = ser({"id": "k", "n": 1}, SerializationContext("keyed", MessageField.KEY))
    assert sr.get_subjects() == ["com.acme.Order"]
    assert produce_raw(b, "keyed", [b"any value"], keys=[key]) == [None]
    # the same schema id is fine; one registered only under keyed-key (TopicNameStrategy's subject) is not
    sid = sr.register_schema("keyed-key", Schema(__import__("json").dumps(OTHER), "AVRO"))
    errors = produce_raw(b, "keyed", [b"v", b"v", b"v"], keys=[framed(sid), b"raw", None])
    assert [e.code() if e else None for e in errors] == [KafkaError.INVALID_RECORD, KafkaError.INVALID_RECORD, None]
    assert end_offset(b, "keyed") == 2


@pytest.mark.hourglass(schema_registry=True)
def test_turned_on_by_alter_configs_at_once(hourglass_broker):
    b = hourglass_broker
    create(b, "later")
    assert produce_raw(b, "later", [b"raw"]) == [None]
    admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry
    res = ConfigResource(ConfigResource.Type.TOPIC, "later",
                         incremental_configs=[ConfigEntry(ON, "true", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result(10)
    assert produce_raw(b, "later", [b"raw"])[0].code() == KafkaError.INVALID_RECORD
    bad = ConfigResource(ConfigResource.Type.TOPIC, "later", incremental_configs=[ConfigEntry(
        "confluent.value.subject.name.strategy", "NoSuchStrategy", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(Exception) as exc:
        admin.incremental_alter_configs([bad])[bad].result(10)
    assert "Class NoSuchStrategy could not be found" in str(exc.value)


def test_without_a_registry_validated_topics_refuse_and_say_why():
    with EmbeddedBroker() as b:
        create(b, "lonely", {ON: "true"})
        cli = RawClient(b.bootstrap_servers)
        try:
            req = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
                ProduceRequest.TopicProduceData(name="lonely", partition_data=[
                    ProduceRequest.PartitionProduceData(index=0, records=build_batch([(None, framed(1), 1)]))])])
            p = cli.request(0, 9, req).responses[0].partition_responses[0]
        finally:
            cli.close()
        assert p.error_code == 87
        assert "serves no Schema Registry (schema.registry.listeners is empty)" in p.error_message
        assert produce_raw(b, "lonely", [framed(1)])[0].code() == KafkaError.INVALID_RECORD


@pytest.mark.hourglass(schema_registry=True)
def test_protobuf_record_name_strategy_follows_the_message_indexes(hourglass_broker, tmp_path):
    """RecordNameStrategy with Protobuf: the record name is the message the payload's message
    indexes point to (the second message of a file here), as the serializer names its subject."""
    import uuid
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    b = hourglass_broker
    create(b, "events", {ON: "true", "confluent.value.subject.name.strategy":
                         "io.confluent.kafka.serializers.subject.RecordNameStrategy"})
    mod = f"ev_{uuid.uuid4().hex[:8]}"
    pb = generate(tmp_path, {f"{mod}.proto": 'syntax = "proto3";\npackage ev;\n'
                             "message Created { string id = 1; }\nmessage Deleted { string id = 1; }\n"},
                  f"{mod}_pb2")
    sr = SchemaRegistryClient({"url": b.schema_registry_url})
    conf = {"subject.name.strategy": record_subject_name_strategy}
    ctx = SerializationContext("events", MessageField.VALUE)
    created = ProtobufSerializer(pb.Created, sr, conf)(pb.Created(id="1"), ctx)
    deleted = ProtobufSerializer(pb.Deleted, sr, conf)(pb.Deleted(id="1"), ctx)
    assert sorted(sr.get_subjects()) == ["ev.Created", "ev.Deleted"]
    assert produce_raw(b, "events", [created, deleted]) == [None, None]
    # an id whose schema's message (Z) has no subject of its own name
    other = sr.register_schema("unrelated-value", Schema('syntax = "proto3";\nmessage Z { int32 z = 1; }\n',
                                                         "PROTOBUF"))
    assert produce_raw(b, "events", [framed(other, b"\x00")])[0].code() == KafkaError.INVALID_RECORD
    assert end_offset(b, "events") == 2
