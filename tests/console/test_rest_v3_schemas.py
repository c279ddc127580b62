"""REST v3 produce with AVRO, JSONSCHEMA and PROTOBUF keys/values through the broker's own
Schema Registry, read back by confluent-kafka's deserializers; values that do not fit their
schema answer 422; the records page shows the decoded data."""
from __future__ import annotations

import json

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from hourglass.embedded import EmbeddedBroker
from tests.helpers.rest_v3 import Rest

AVRO = json.dumps({"type": "record", "name": "Reading", "namespace": "hg", "fields": [
    {"name": "sensor", "type": "string"}, {"name": "celsius", "type": "double"},
    {"name": "note", "type": ["null", "string"], "default": None}]})
JSON_SCHEMA = json.dumps({"type": "object", "title": "Order", "properties": {"id": {"type": "integer"},
                                                                              "item": {"type": "string"}},
                          "required": ["id"]})
PROTO = 'syntax = "proto3";\npackage hg;\nmessage Ping {\n  string who = 1;\n  int32 count = 2;\n}\n'


@pytest.fixture(scope="module")
def hg():
    with EmbeddedBroker(schema_registry=True, console=True) as b:
        yield b


@pytest.fixture(scope="module")
def rest(hg):
    return Rest(hg.console_url, hg.broker.cluster_id)


def _read(hg, topic: str, n: int):
    c = Consumer({"bootstrap.servers": hg.bootstrap_servers, "group.id": f"read-{topic}", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    out = []
    for _ in range(50):
        m = c.poll(0.5)
        if m is not None and not m.error():
            out.append(m)
        if len(out) >= n:
            break
    c.close()
    return out


def test_avro_values_read_back_by_the_avro_deserializer(rest, hg):
    rest.ok("POST", rest.c + "/topics", {"topic_name": "readings", "partitions_count": 1}, 201)
    first = rest.ok("POST", rest.c + "/topics/readings/records", {
        "partition_id": 0, "key": {"type": "STRING", "data": "s1"},
        "value": {"type": "AVRO", "schema": AVRO, "data": {"sensor": "s1", "celsius": 21.5, "note": {"string": "ok"}}}})
    assert first["value"]["type"] == "AVRO"
    sr = SchemaRegistryClient({"url": hg.schema_registry_url})
    registered = sr.get_latest_version("readings-value")
    # by id, and by the subject's latest version (no schema given)
    rest.ok("POST", rest.c + "/topics/readings/records", {
        "partition_id": 0, "value": {"schema_id": registered.schema_id, "data": {"sensor": "s2", "celsius": 3}}})
    rest.ok("POST", rest.c + "/topics/readings/records", {
        "partition_id": 0, "value": {"type": "AVRO", "data": {"sensor": "s3", "celsius": -1.25, "note": None}}})
    de = AvroDeserializer(sr)
    got = [de(m.value(), SerializationContext("readings", MessageField.VALUE)) for m in _read(hg, "readings", 3)]
    assert got == [{"sensor": "s1", "celsius": 21.5, "note": "ok"}, {"sensor": "s2", "celsius": 3.0, "note": None},
                   {"sensor": "s3", "celsius": -1.25, "note": None}]
    # the page decodes through the registry
    page = rest.ok("GET", rest.c + "/topics/readings/partitions/0/records?position=beginning")["data"]
    assert page[0]["value"]["schema"] == {"schema_id": registered.schema_id, "schema_type": "AVRO",
                                          "subject": "readings-value",
                                          "data": {"sensor": "s1", "celsius": 21.5, "note": "ok"}}
    assert "schema" not in page[0]["key"]
    # data that does not fit: 422, nothing appended
    for bad in ({"sensor": "s4", "celsius": "warm"}, {"celsius": 1.0}, "not a record"):
        s, body, _ = rest.call("POST", rest.c + "/topics/readings/records",
                               {"value": {"schema_id": registered.schema_id, "data": bad}})
        assert (s, body["error_code"]) == (422, 42203), body
    assert rest.ok("GET", rest.c + "/topics/readings/partitions/0")["latest_offset"] == 3


def test_json_schema_values(rest, hg):
    rest.ok("POST", rest.c + "/topics", {"topic_name": "orders", "partitions_count": 1}, 201)
    r = rest.ok("POST", rest.c + "/topics/orders/records", {
        "value": {"type": "JSONSCHEMA", "schema": JSON_SCHEMA, "data": {"id": 7, "item": "tea"}}})
    assert r["value"]["type"] == "JSONSCHEMA"
    s, body, _ = rest.call("POST", rest.c + "/topics/orders/records",
                           {"value": {"type": "JSONSCHEMA", "data": {"item": "no id"}}})
    assert (s, body["error_code"]) == (422, 42203)
    sr = SchemaRegistryClient({"url": hg.schema_registry_url})
    de = JSONDeserializer(JSON_SCHEMA, schema_registry_client=sr)
    [m] = _read(hg, "orders", 1)
    assert de(m.value(), SerializationContext("orders", MessageField.VALUE)) == {"id": 7, "item": "tea"}
    page = rest.ok("GET", rest.c + "/topics/orders/partitions/0/records?position=beginning")["data"]
    assert page[0]["value"]["schema"]["data"] == {"id": 7, "item": "tea"}


def test_protobuf_values(rest, hg):
    rest.ok("POST", rest.c + "/topics", {"topic_name": "pings", "partitions_count": 1}, 201)
    r = rest.ok("POST", rest.c + "/topics/pings/records", {
        "value": {"type": "PROTOBUF", "schema": PROTO, "data": {"who": "me", "count": 3}}})
    assert r["value"]["type"] == "PROTOBUF"
    [m] = _read(hg, "pings", 1)
    sr = SchemaRegistryClient({"url": hg.schema_registry_url})
    sid = sr.get_latest_version("pings-value").schema_id
    raw = m.value()
    assert raw[0] == 0 and int.from_bytes(raw[1:5], "big") == sid and raw[5] == 0  # magic, id, first message
    page = rest.ok("GET", rest.c + "/topics/pings/partitions/0/records?position=beginning")["data"]
    assert page[0]["value"]["schema"]["data"] == {"who": "me", "count": 3}
    s, body, _ = rest.call("POST", rest.c + "/topics/pings/records",
                           {"value": {"type": "PROTOBUF", "data": {"who": 5, "nope": 1}}})
    assert (s, body["error_code"]) == (422, 42203)


@pytest.mark.parametrize("spec,status,code", [
    ({"schema_id": 99999, "data": {}}, 404, 40403),
    ({"type": "AVRO", "subject": "no-such-subject", "data": {}}, 404, 40401),
    ({"type": "AVRO", "schema": "{not avro", "data": {}}, 422, 42201),
    ({"type": "AVRO", "subject_name_strategy": "SIDEWAYS", "data": {}}, 400, 400),
    ({"schema_id": "one", "data": {}}, 400, 400),
])
def test_schema_lookups_that_fail(rest, spec, status, code):
    rest.call("POST", rest.c + "/topics", {"topic_name": "lookups", "partitions_count": 1})
    s, body, _ = rest.call("POST", rest.c + "/topics/lookups/records", {"value": spec})
    assert (s, body["error_code"]) == (status, code), body
