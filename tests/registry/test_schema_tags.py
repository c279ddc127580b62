"""Schema-embedded tags: ``POST /subjects/{s}/versions/{v}/tags`` (Confluent's
``modifySchemaTags``) and ``?findTags=`` on ``GET /subjects/{s}/versions/{v}`` and
``GET /schemas/ids/{id}``, against the broker's registry over HTTP (confluent-kafka's
SchemaRegistryClient has no tags call; it reads the versions back and its serializers use them).

For each format a tag on a record and on a field is added and removed again, the new version's
text is checked against the text Confluent's registry writes (its RestApiRegisterSchemaTagsTest
and ProtobufSchemaTest expectations), the AVRO text against Avro-Java's own ``Schema.toString``,
and the tagged version carries a serializer round trip. Then every error Confluent answers."""
from __future__ import annotations

import base64
import json
import subprocess
import urllib.error
import urllib.request
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from hourglass.embedded import EmbeddedBroker
from tests.helpers import jvm

CT = "application/vnd.schemaregistry.v1+json"


@pytest.fixture(scope="module")
def broker():
    with EmbeddedBroker(schema_registry=True) as b:
        yield b


def call(url, *, method="GET", body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, method=method, data=data)
    if data is not None:
        req.add_header("Content-Type", CT)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def subject() -> str:
    return f"tags-{uuid.uuid4().hex[:10]}-value"


def register(broker, subj, schema: str, schema_type="AVRO") -> dict:
    status, body = call(f"{broker.schema_registry_url}/subjects/{subj}/versions", method="POST",
                        body={"schema": schema, "schemaType": schema_type})
    assert status == 200, body
    return body


def tags(broker, subj, version, body) -> tuple[int, dict]:
    return call(f"{broker.schema_registry_url}/subjects/{subj}/versions/{version}/tags", method="POST", body=body)


def entity(path, kind, *names):
    return {"schemaEntity": {"entityPath": path, "entityType": kind}, "tags": list(names)}


def round_trip(broker, topic, serializer, deserializer, values):
    p = Producer({"bootstrap.servers": broker.bootstrap_servers})
    ctx = SerializationContext(topic, MessageField.VALUE)
    raw = [serializer(v, ctx) for v in values]
    for r in raw:
        p.produce(topic, value=r)
    assert p.flush(10) == 0
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                  "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = []
    try:
        while len(got) < len(values):
            m = c.poll(10)
            assert m is not None, f"only {len(got)} of {len(values)} records"
            assert m.error() is None, m.error()
            got.append(deserializer(m.value(), ctx))
    finally:
        c.close()
    return raw, got


# ---- AVRO ---------------------------------------------------------------------------------------
AVRO = '{"type":"record","name":"myrecord","fields":[{"name":"f1","type":"string"}]}'


def test_avro_record_and_field_tags_added_then_removed(broker):
    url, subj = broker.schema_registry_url, subject()
    first = register(broker, subj, AVRO)
    # Confluent's RestApiRegisterSchemaTagsTest: newVersion 2, two record tags
    status, body = tags(broker, subj, "latest", {"newVersion": 2, "tagsToAdd": [
        entity("myrecord", "sr_record", "TAG1", "TAG2"), entity("myrecord.f1", "sr_field", "PII")]})
    assert status == 200, body
    text = ('{"type":"record","name":"myrecord","fields":[{"name":"f1","type":"string","confluent:tags":["PII"]}],'
            '"confluent:tags":["TAG1","TAG2"]}')
    assert body["version"] == 2 and body["id"] != first["id"]
    assert body["schema"] == text
    assert body["metadata"] == {"properties": {"confluent:version": "2"}}
    sr = SchemaRegistryClient({"url": url})
    latest = sr.get_latest_version(subj)
    assert (latest.version, latest.schema_id, latest.schema.schema_str) == (2, body["id"], text)
    assert latest.schema.metadata.properties.properties == {"confluent:version": "2"}
    # without newVersion: the next version all the same; a leading "." names the same record
    status, body = tags(broker, subj, 2, {"tagsToRemove": [entity(".myrecord", "sr_record", "TAG2"),
                                                          entity("myrecord.f1", "sr_field", "PII")]})
    assert status == 200, body
    assert body["version"] == 3
    assert body["schema"] == '{"type":"record","name":"myrecord","fields":[{"name":"f1","type":"string"}],' \
                             '"confluent:tags":["TAG1"]}'
    assert body["metadata"]["properties"]["confluent:version"] == "3"
    # adding what is there and removing what is not changes nothing: the same version answers
    status, again = tags(broker, subj, 3, {"tagsToAdd": [entity("myrecord", "sr_record", "TAG1")],
                                            "tagsToRemove": [entity("myrecord.f1", "sr_field", "NOPE")]})
    assert status == 200 and (again["version"], again["id"]) == (3, body["id"])
    # every tag gone: the text is the first version's again, as a new version with its own metadata
    status, body = tags(broker, subj, "latest", {"newVersion": 4, "tagsToRemove": [entity("myrecord", "sr_record", "TAG1")]})
    assert status == 200, body
    assert (body["version"], body["schema"]) == (4, AVRO)
    assert [v for v in sr.get_versions(subj)] == [1, 2, 3, 4]


def test_avro_nested_and_namespaced_paths_and_the_java_text(broker):
    subj = subject()
    schema = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
        {"name": "id", "type": "long"},
        {"name": "lines", "type": {"type": "array", "items": {"type": "record", "name": "Line", "fields": [
            {"name": "sku", "type": "string"}, {"name": "qty", "type": "int", "default": 1}]}}},
        {"name": "note", "type": ["null", {"type": "record", "name": "Note", "fields": [{"name": "t", "type": "string"}]}],
         "default": None}]}
    register(broker, subj, json.dumps(schema))
    status, body = tags(broker, subj, 1, {"tagsToAdd": [
        entity("shop.Order", "sr_record", "ORDER"), entity("shop.Line.sku", "sr_field", "PII"),
        entity("Note", "sr_record", "FREE_TEXT"), entity("Line.qty", "sr_field", "Q", "N")]})
    assert status == 200, body
    text = body["schema"]
    assert text == (
        '{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"long"},'
        '{"name":"lines","type":{"type":"array","items":{"type":"record","name":"Line","fields":['
        '{"name":"sku","type":"string","confluent:tags":["PII"]},'
        '{"name":"qty","type":"int","default":1,"confluent:tags":["Q","N"]}]}}},'
        '{"name":"note","type":["null",{"type":"record","name":"Note","fields":[{"name":"t","type":"string"}],'
        '"confluent:tags":["FREE_TEXT"]}],"default":null}],"confluent:tags":["ORDER"]}')
    # Avro-Java prints exactly this text for it (what Java clients fingerprint)
    cp = jvm.classpath(jvm.libs(f"avro-{jvm.version('avro')}"))
    java = subprocess.run([jvm.java(), "-cp", cp, "dev.hourglass.avro.AvroToString"], input=text + "\n",
                          capture_output=True, text=True, encoding="utf-8", timeout=120, check=True).stdout
    assert java.splitlines() == [text]
    # findTags: the tagged entities, as Confluent names them (full names)
    url = broker.schema_registry_url
    status, got = call(f"{url}/subjects/{subj}/versions/2?findTags=PII&findTags=ORDER")
    assert status == 200
    assert got["schemaTags"] == [
        {"schemaEntity": {"entityPath": "shop.Order", "entityType": "sr_record"}, "tags": ["ORDER"]},
        {"schemaEntity": {"entityPath": "shop.Line.sku", "entityType": "sr_field"}, "tags": ["PII"]}]
    status, got = call(f"{url}/schemas/ids/{body['id']}?findTags=*")
    assert [(t["schemaEntity"]["entityPath"], t["tags"]) for t in got["schemaTags"]] == [
        ("shop.Order", ["ORDER"]), ("shop.Line.sku", ["PII"]), ("shop.Line.qty", ["Q", "N"]),
        ("shop.Note", ["FREE_TEXT"])]
    status, got = call(f"{url}/subjects/{subj}/versions/2?findTags=NONE")
    assert status == 200 and "schemaTags" not in got
    status, got = call(f"{url}/subjects/{subj}/versions/1")
    assert "schemaTags" not in got


def test_avro_serializer_round_trip_on_the_tagged_version(broker):
    subj_topic = f"tags-avro-{uuid.uuid4().hex[:8]}"
    subj = f"{subj_topic}-value"
    register(broker, subj, AVRO)
    status, body = tags(broker, subj, 1, {"tagsToAdd": [entity("myrecord.f1", "sr_field", "PII")]})
    assert status == 200, body
    sr = SchemaRegistryClient({"url": broker.schema_registry_url})
    # the serializer finds the tagged version by its text, without registering anything
    ser = AvroSerializer(sr, body["schema"], conf={"auto.register.schemas": False})
    de = AvroDeserializer(sr)
    raw, got = round_trip(broker, subj_topic, ser, de, [{"f1": "a"}, {"f1": "b"}])
    assert all(r[1:5] == body["id"].to_bytes(4, "big") for r in raw)
    assert got == [{"f1": "a"}, {"f1": "b"}]


# ---- JSON Schema --------------------------------------------------------------------------------
JSON_SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string"},
    "address": {"type": "object", "properties": {"street": {"type": "string"}}},
    "phones": {"type": "array", "items": {"type": "object", "properties": {"number": {"type": "string"}}}},
    "contact": {"oneOf": [{"type": "string"}, {"type": "object", "properties": {"email": {"type": "string"}}}]}},
    "definitions": {"Money": {"type": "object", "properties": {"cents": {"type": "integer"}}}}}


def test_json_schema_record_and_field_tags_added_then_removed(broker):
    subj, url = subject(), broker.schema_registry_url
    register(broker, subj, json.dumps(JSON_SCHEMA), "JSON")
    status, body = tags(broker, subj, 1, {"newVersion": 2, "tagsToAdd": [
        entity("object", "sr_record", "PERSON"),
        entity("object.name", "sr_field", "PII"),
        entity("object.address.object.street", "sr_field", "PII", "ADDR"),
        entity("object.phones.array.object.number", "sr_field", "PHONE"),
        # oneOf's subschemas indexed in Confluent's order (by kind first: OBJECT before STRING)
        entity("object.contact.oneof.0.object.email", "sr_field", "EMAIL"),
        entity("object.definitions.Money.object.cents", "sr_field", "MONEY")]})
    assert status == 200, body
    assert body["version"] == 2 and body["schemaType"] == "JSON"
    want = json.loads(json.dumps(JSON_SCHEMA))
    want["properties"]["name"]["confluent:tags"] = ["PII"]
    want["properties"]["address"]["properties"]["street"]["confluent:tags"] = ["PII", "ADDR"]
    want["properties"]["phones"]["items"]["properties"]["number"]["confluent:tags"] = ["PHONE"]
    want["properties"]["contact"]["oneOf"][1]["properties"]["email"]["confluent:tags"] = ["EMAIL"]
    want["definitions"]["Money"]["properties"]["cents"]["confluent:tags"] = ["MONEY"]
    want["confluent:tags"] = ["PERSON"]
    # Confluent keeps the document's key order; a new keyword goes last (Jackson's ObjectNode)
    assert body["schema"] == json.dumps(want, separators=(",", ":"))
    status, got = call(f"{url}/subjects/{subj}/versions/2?findTags=*")
    assert [(t["schemaEntity"]["entityPath"], t["schemaEntity"]["entityType"], t["tags"]) for t in got["schemaTags"]] == [
        ("object", "sr_record", ["PERSON"]), ("object.name", "sr_field", ["PII"]),
        ("object.address.object.street", "sr_field", ["PII", "ADDR"]),
        ("object.phones.array.object.number", "sr_field", ["PHONE"]),
        ("object.contact.oneof.0.object.email", "sr_field", ["EMAIL"]),
        ("object.definitions.Money.object.cents", "sr_field", ["MONEY"])]
    status, body = tags(broker, subj, 2, {"tagsToRemove": [
        entity("object", "sr_record", "PERSON"), entity("object.name", "sr_field", "PII"),
        entity("object.address.object.street", "sr_field", "ADDR")]})
    assert status == 200, body
    data = json.loads(body["schema"])
    assert "confluent:tags" not in data and "confluent:tags" not in data["properties"]["name"]
    assert data["properties"]["address"]["properties"]["street"]["confluent:tags"] == ["PII"]
    assert body["version"] == 3 and body["metadata"]["properties"]["confluent:version"] == "3"


def test_json_serializer_round_trip_on_the_tagged_version(broker):
    topic = f"tags-json-{uuid.uuid4().hex[:8]}"
    subj = f"{topic}-value"
    schema = {"type": "object", "title": "Person", "properties": {"name": {"type": "string"}}}
    register(broker, subj, json.dumps(schema), "JSON")
    status, body = tags(broker, subj, 1, {"tagsToAdd": [entity("object.name", "sr_field", "PII")]})
    assert status == 200, body
    sr = SchemaRegistryClient({"url": broker.schema_registry_url})
    ser = JSONSerializer(Schema(body["schema"], "JSON"), sr, conf={"auto.register.schemas": False})
    de = JSONDeserializer(None, schema_registry_client=sr)
    raw, got = round_trip(broker, topic, ser, de, [{"name": "ann"}])
    assert raw[0][1:5] == body["id"].to_bytes(4, "big")
    assert got == [{"name": "ann"}]


# ---- PROTOBUF -----------------------------------------------------------------------------------
PROTO = """syntax = "proto3";
package com.example.mynamespace;

import "confluent/meta.proto";

message SampleRecord {
  option (confluent.message_meta).tags = "OTHER";
  int32 my_field1 = 1 [(confluent.field_meta).tags = "OTHER", (confluent.field_meta).tags = "PRIVATE"];
  double my_field2 = 2;
  NestedRecord my_field3 = 3 [(confluent.field_meta) = { doc: "field_meta" }];
  oneof choice { string a = 4; int64 b = 5; }
  message NestedRecord {
    int64 nested_field1 = 4;
  }
}
"""

# Confluent's layout for what it read from a descriptor (ProtobufSchemaTest's expectations)
PROTO_TAGGED = """syntax = "proto3";
package com.example.mynamespace;

import "confluent/meta.proto";

message SampleRecord {
  option (confluent.message_meta) = {
    tags: [
      "OTHER",
      "PII"
    ]
  };

  int32 my_field1 = 1 [(confluent.field_meta) = {
    tags: [
      "OTHER",
      "PRIVATE",
      "PII"
    ]
  }];
  double my_field2 = 2 [(confluent.field_meta) = {
    tags: [
      "PII"
    ]
  }];
  .com.example.mynamespace.SampleRecord.NestedRecord my_field3 = 3 [(confluent.field_meta) = {
    doc: "field_meta",
    tags: [
      "PII"
    ]
  }];

  oneof choice {
    string a = 4;
    int64 b = 5 [(confluent.field_meta) = {
      tags: [
        "PII"
      ]
    }];
  }

  message NestedRecord {
    option (confluent.message_meta) = {
      tags: [
        "PII"
      ]
    };
  
    int64 nested_field1 = 4 [(confluent.field_meta) = {
      tags: [
        "PII"
      ]
    }];
  }
}
"""


def test_protobuf_message_and_field_tags_added_then_removed(broker):
    subj, url = subject(), broker.schema_registry_url
    register(broker, subj, PROTO, "PROTOBUF")
    status, body = tags(broker, subj, 1, {"newVersion": 2, "tagsToAdd": [
        entity(".SampleRecord.my_field1", "sr_field", "PII"), entity(".SampleRecord.my_field2", "sr_field", "PII"),
        entity(".SampleRecord.my_field3", "sr_field", "PII"), entity("SampleRecord.choice.b", "sr_field", "PII"),
        entity(".SampleRecord.NestedRecord.nested_field1", "sr_field", "PII"),
        entity(".SampleRecord", "sr_record", "PII"), entity(".SampleRecord.NestedRecord", "sr_record", "PII")]})
    assert status == 200, body
    assert body["version"] == 2 and body["schemaType"] == "PROTOBUF"
    sr = SchemaRegistryClient({"url": url})
    assert sr.get_version(subj, 2).schema.schema_str == PROTO_TAGGED
    status, got = call(f"{url}/subjects/{subj}/versions/2?findTags=PII")
    assert [(t["schemaEntity"]["entityPath"], t["tags"]) for t in got["schemaTags"]] == [
        ("SampleRecord", ["OTHER", "PII"]), ("SampleRecord.b", ["PII"]),
        ("SampleRecord.my_field1", ["OTHER", "PRIVATE", "PII"]), ("SampleRecord.my_field2", ["PII"]),
        ("SampleRecord.my_field3", ["PII"]), ("SampleRecord.NestedRecord", ["PII"]),
        ("SampleRecord.NestedRecord.nested_field1", ["PII"])]
    # removing: an option left with nothing in it goes, one with a doc keeps the doc
    status, body = tags(broker, subj, 2, {"tagsToRemove": [
        entity(".SampleRecord", "sr_record", "OTHER", "PII"), entity("SampleRecord.my_field2", "sr_field", "PII"),
        entity("SampleRecord.my_field3", "sr_field", "PII"), entity("SampleRecord.NestedRecord", "sr_record", "PII")]})
    assert status == 200, body
    text = sr.get_version(subj, 3).schema.schema_str
    assert "message_meta" not in text.split("message NestedRecord")[0].split("message SampleRecord {")[1]
    assert "  double my_field2 = 2;\n" in text
    assert ('  .com.example.mynamespace.SampleRecord.NestedRecord my_field3 = 3 [(confluent.field_meta) = {\n'
            '    doc: "field_meta"\n  }];\n') in text
    assert "message NestedRecord {\n    int64 nested_field1 = 4 [(confluent.field_meta) = {" in text


def test_protobuf_without_the_meta_import_and_the_serializer_round_trip(broker):
    from confluent_kafka.schema_registry.confluent import meta_pb2
    from google.protobuf import descriptor_pb2, descriptor_pool
    from google.protobuf.message_factory import GetMessageClass
    topic = f"tags-pb-{uuid.uuid4().hex[:8]}"
    subj = f"{topic}-value"
    register(broker, subj, 'syntax = "proto3";\npackage tg;\nmessage Reading { string sensor = 1; double value = 2; }\n',
             "PROTOBUF")
    status, body = tags(broker, subj, 1, {"tagsToAdd": [entity("Reading.sensor", "sr_field", "PII")]})
    assert status == 200, body
    url = broker.schema_registry_url
    status, v2 = call(f"{url}/subjects/{subj}/versions/2")
    # the option needs confluent/meta.proto: the new version imports it
    assert 'import "confluent/meta.proto";' in v2["schema"]
    assert '  string sensor = 1 [(confluent.field_meta) = {\n    tags: [\n      "PII"\n    ]\n  }];\n' in v2["schema"]
    # a message class built from the tagged version's descriptor serializes under its id
    status, serialized = call(f"{url}/subjects/{subj}/versions/2?format=serialized")
    fdp = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(serialized["schema"]))
    fdp.name = f"reading_{uuid.uuid4().hex[:6]}.proto"
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(descriptor_pb2.DESCRIPTOR.serialized_pb)
    pool.AddSerializedFile(meta_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(fdp)
    cls = GetMessageClass(pool.FindMessageTypeByName("tg.Reading"))
    sr = SchemaRegistryClient({"url": url})
    ser = ProtobufSerializer(cls, sr, {"auto.register.schemas": False})
    de = ProtobufDeserializer(cls, {}, sr)
    raw, got = round_trip(broker, topic, ser, de, [cls(sensor="t1", value=1.5)])
    assert raw[0][1:5] == body["id"].to_bytes(4, "big")
    assert (got[0].sensor, got[0].value) == ("t1", 1.5)


# ---- rule sets and metadata ---------------------------------------------------------------------
def _rule(name, tag, mode=None):
    r = {"name": name, "kind": "TRANSFORM", "type": "fooType", "tags": [tag], "onFailure": "NONE", "disabled": False}
    if mode:
        r["mode"] = mode
    return r


def test_rules_to_merge_and_remove_and_metadata(broker):
    subj = subject()
    register(broker, subj, AVRO)
    # Confluent's testRegisterSchemaTagsIncrementalRuleSetDeprecated
    m1, m2 = _rule("myMigrationRule", "PII", "UPGRADE"), _rule("myMigrationRule2", "PII", "UPGRADE")
    d1, d2, d3 = _rule("myRule", "PII"), _rule("myRule2", "PII"), _rule("myRule3", "PII")
    status, body = tags(broker, subj, "latest", {"newVersion": 2, "rulesToMerge": {
        "migrationRules": [m1, m2], "domainRules": [d1, d2, d3]}, "rulesToRemove": ["myRule4"]})
    assert status == 200, body
    names = lambda rs: {k: [r["name"] for r in v] for k, v in rs.items() if k.endswith("Rules")}
    assert names(body["ruleSet"]) == {"migrationRules": ["myMigrationRule", "myMigrationRule2"],
                                      "domainRules": ["myRule", "myRule2", "myRule3"]}
    m3, d5, d4 = _rule("myMigrationRule3", "PII2", "UPGRADE"), _rule("myRule5", "PII2"), _rule("myRule4", "PII2")
    d2b = _rule("myRule2", "PII2")
    status, body = tags(broker, subj, "latest", {"newVersion": 3, "rulesToMerge": {
        "migrationRules": [m3], "domainRules": [d5, d4, d2b]}, "rulesToRemove": ["myRule", "myMigrationRule2"]})
    assert status == 200, body
    assert names(body["ruleSet"]) == {"migrationRules": ["myMigrationRule", "myMigrationRule3"],
                                      "domainRules": ["myRule3", "myRule5", "myRule4", "myRule2"]}
    assert body["ruleSet"]["domainRules"][3]["tags"] == ["PII2"]
    # no rule set in the request: the latest version's is kept; metadata given replaces the old
    status, body = tags(broker, subj, 1, {"metadata": {"properties": {"owner": "ann"}},
                                          "tagsToAdd": [entity("myrecord", "sr_record", "T")]})
    assert status == 200, body
    assert body["version"] == 4
    assert body["metadata"] == {"properties": {"confluent:version": "4", "owner": "ann"}}
    assert names(body["ruleSet"])["domainRules"] == ["myRule3", "myRule5", "myRule4", "myRule2"]
    # a whole ruleSet replaces it
    status, body = tags(broker, subj, 4, {"ruleSet": {"domainRules": [_rule("only", "X")]},
                                          "tagsToRemove": [entity("myrecord", "sr_record", "T")]})
    assert status == 200, body
    assert names(body["ruleSet"]) == {"domainRules": ["only"]}
    assert body["metadata"]["properties"] == {"confluent:version": "5", "owner": "ann"}


# ---- errors -------------------------------------------------------------------------------------
def test_errors_as_confluent_answers_them(broker):
    subj, url = subject(), broker.schema_registry_url
    add = {"tagsToAdd": [entity("myrecord", "sr_record", "T")]}
    status, body = tags(broker, f"nope-{uuid.uuid4().hex[:6]}", 1, add)
    assert (status, body["error_code"]) == (404, 40401)
    register(broker, subj, AVRO)
    assert tags(broker, subj, 2, add)[1]["error_code"] == 40402
    assert tags(broker, subj, 2, add)[1]["message"] == "Version 2 not found."
    for bad in ("0", "abc", "-2"):
        status, body = tags(broker, subj, bad, add)
        assert (status, body["error_code"]) == (422, 42202), bad
    # a path that names nothing: Confluent's InvalidSchemaException text
    status, body = tags(broker, subj, 1, {"tagsToAdd": [entity("does.not.exist", "sr_field", "T")]})
    assert (status, body["error_code"]) == (422, 42201)
    assert body["message"] == "java.lang.IllegalArgumentException: No matching path 'does.not.exist' found in the schema"
    status, body = tags(broker, subj, 1, {"tagsToAdd": [entity("otherrecord", "sr_record", "T")]})
    assert (status, body["error_code"]) == (422, 42201)
    # newVersion other than the next one: 42201
    for nv in (1, 3, 99):
        status, body = tags(broker, subj, 1, {"newVersion": nv, **add})
        assert (status, body["error_code"], body["message"]) == (
            422, 42201, "Version is not one more than previous version"), nv
    # a bad entity type, a body of the wrong shape: Jackson's mapping error
    status, body = tags(broker, subj, 1, {"tagsToAdd": [entity("myrecord", "sr_table", "T")]})
    assert (status, body["error_code"]) == (422, 422)
    status, body = tags(broker, subj, 1, {"newVersion": {"x": 1}})
    assert (status, body["error_code"]) == (422, 422)
    # ruleSet with rulesToMerge or rulesToRemove, and an invalid rule set: 42210
    status, body = tags(broker, subj, 1, {"ruleSet": {}, "rulesToRemove": ["x"], **add})
    assert (status, body["error_code"]) == (422, 42210)
    assert body["message"] == "ruleSet should be omitted if specifying rulesToMerge or rulesToRemove"
    status, body = tags(broker, subj, 1, {"rulesToMerge": {"domainRules": [{"name": "1bad", "type": "t"}]}, **add})
    assert (status, body["error_code"]) == (422, 42210)
    # a soft-deleted version is not found
    register(broker, subj, '{"type":"record","name":"myrecord","fields":[{"name":"f1","type":"string"},'
                           '{"name":"f2","type":"int","default":0}]}')
    assert call(f"{url}/subjects/{subj}/versions/2", method="DELETE")[0] == 200
    assert tags(broker, subj, 2, add)[1]["error_code"] == 40402
    # read-only: 42205
    assert call(f"{url}/mode/{subj}", method="PUT", body={"mode": "READONLY"})[0] == 200
    status, body = tags(broker, subj, 1, add)
    assert (status, body["error_code"]) == (422, 42205)
    assert call(f"{url}/mode/{subj}", method="DELETE")[0] == 200
    # nothing was registered by any of these: version 3 is the next one
    status, body = tags(broker, subj, 1, {"newVersion": 3, **add})
    assert (status, body["version"]) == (200, 3), body


def test_the_new_version_is_checked_for_compatibility(broker):
    subj, url = subject(), broker.schema_registry_url
    assert call(f"{url}/config/{subj}", method="PUT", body={"compatibility": "NONE"})[0] == 200
    register(broker, subj, AVRO)
    register(broker, subj, '{"type":"record","name":"myrecord","fields":[{"name":"g","type":"int"}]}')
    assert call(f"{url}/config/{subj}", method="PUT", body={"compatibility": "BACKWARD"})[0] == 200
    # tagging version 1 makes a version 3 that cannot read what version 2 wrote
    status, body = tags(broker, subj, 1, {"tagsToAdd": [entity("myrecord", "sr_record", "T")]})
    assert (status, body["error_code"]) == (409, 40901)
    assert body["message"].startswith(f'Schema being registered is incompatible with an earlier schema for subject "{subj}"')
    status, body = tags(broker, subj, 2, {"tagsToAdd": [entity("myrecord.g", "sr_field", "T")]})
    assert (status, body["version"]) == (200, 3)
    # and the broker keeps serving
    assert call(f"{url}/subjects/{subj}/versions")[1] == [1, 2, 3]


# ---- tags in a registration (RegisterSchemaRequest) ----------------------------------------------
def test_registration_with_schema_tags_and_propagation(broker):
    """``schemaTagsToAdd``/``schemaTagsToRemove``/``propagateSchemaTags`` on ``POST
    /subjects/{s}/versions``, in the steps of Confluent's testRegisterSchemaTagsBasic."""
    subj, url = subject(), broker.schema_registry_url
    versions = f"{url}/subjects/{subj}/versions"
    register(broker, subj, AVRO)
    record = lambda *t: entity("myrecord", "sr_record", *t)
    status, body = call(versions, method="POST", body={"schema": AVRO, "version": 2,
                                                       "schemaTagsToAdd": [record("TAG1", "TAG2")]})
    assert status == 200, body
    tagged = '{"type":"record","name":"myrecord","fields":[{"name":"f1","type":"string"}],"confluent:tags":["TAG1","TAG2"]}'
    assert (body["version"], body["schema"]) == (2, tagged)
    assert body["metadata"] == {"properties": {"confluent:version": "2"}}
    status, got = call(f"{versions}/latest?findTags=*")
    assert got["schemaTags"] == [record("TAG1", "TAG2")]
    # without a version: the next one all the same
    status, body = call(versions, method="POST", body={"schema": tagged, "schemaTagsToRemove": [record("TAG2")]})
    assert status == 200, body
    assert body["version"] == 3 and body["metadata"]["properties"]["confluent:version"] == "3"
    assert body["schema"].endswith('"confluent:tags":["TAG1"]}')
    # an evolved schema takes the latest version's tags with propagateSchemaTags, and its metadata
    evolved = ('{"type":"record","name":"myrecord","fields":[{"name":"f1","type":"string","confluent:tags":["TAG2"]},'
               '{"name":"f2","type":"string","default":"hi"}]}')
    status, body = call(versions, method="POST", body={"schema": evolved, "propagateSchemaTags": True})
    assert status == 200, body
    assert body["version"] == 4
    assert body["schema"] == evolved[:-1] + ',"confluent:tags":["TAG1"]}'
    assert body["metadata"]["properties"]["confluent:version"] == "4"
    status, got = call(f"{url}/schemas/ids/{body['id']}?findTags=TAG1&findTags=TAG2")
    assert got["schemaTags"] == [record("TAG1"), entity("myrecord.f1", "sr_field", "TAG2")]
    # a path that names nothing, a version that is not the next one
    status, body = call(versions, method="POST", body={"schema": AVRO, "schemaTagsToAdd": [entity("x.y", "sr_field", "T")]})
    assert (status, body["error_code"]) == (422, 42201)
    status, body = call(versions, method="POST", body={"schema": AVRO, "version": 9, "schemaTagsToAdd": [record("T")]})
    assert (status, body["error_code"], body["message"]) == (422, 42201, "Version is not one more than previous version")
    assert call(versions)[1] == [1, 2, 3, 4]


def test_registration_with_schema_tags_protobuf(broker):
    subj = subject()
    text = 'syntax = "proto3";\npackage rg;\nmessage Reading { string sensor = 1; }\n'
    status, body = call(f"{broker.schema_registry_url}/subjects/{subj}/versions", method="POST", body={
        "schema": text, "schemaType": "PROTOBUF", "schemaTagsToAdd": [entity("Reading.sensor", "sr_field", "PII")]})
    assert status == 200, body
    # the answer is the tagged text, not the text sent
    assert body["version"] == 1 and 'import "confluent/meta.proto";' in body["schema"]
    assert '  string sensor = 1 [(confluent.field_meta) = {\n    tags: [\n      "PII"\n    ]\n  }];\n' in body["schema"]
    assert body["metadata"] == {"properties": {"confluent:version": "1"}}


@pytest.mark.parametrize("bad", [
    {"tagsToAdd": "PII"}, {"tagsToAdd": [1]}, {"tagsToAdd": [{"schemaEntity": []}]},
    {"tagsToAdd": [{"schemaEntity": {"entityType": "sr_field"}, "tags": ["T"]}]},
    {"tagsToAdd": [{"schemaEntity": {"entityPath": "myrecord", "entityType": "sr_record"}, "tags": {"a": 1}}]},
    {"tagsToRemove": [{"schemaEntity": {"entityPath": "myrecord", "entityType": None}, "tags": ["T"]}]},
    {"tagsToAdd": [{"schemaEntity": {"entityPath": "myrecord", "entityType": "sr_record"}, "tags": [["T"]]}]},
    {"newVersion": "two"}, {"newVersion": True}, {"metadata": []}, {"ruleSet": "x"}, {"rulesToRemove": "x"},
    {"rulesToMerge": {"domainRules": {"x": 1}}},
])
def test_bodies_that_do_not_map_are_422(broker, bad):
    subj, url = subject(), broker.schema_registry_url
    register(broker, subj, AVRO)
    status, body = tags(broker, subj, 1, bad)
    assert status == 422 and body["error_code"] in (422, 42210), (bad, body)
    # the same tag lists in a registration
    renamed = {"schemaTagsToAdd" if k == "tagsToAdd" else "schemaTagsToRemove": v
               for k, v in bad.items() if k in ("tagsToAdd", "tagsToRemove")}
    if renamed:
        status, body = call(f"{url}/subjects/{subj}/versions", method="POST", body={"schema": AVRO, **renamed})
        assert (status, body["error_code"]) == (422, 422), (bad, body)
    assert call(f"{url}/subjects/{subj}/versions")[1] == [1]  # nothing registered, still serving


def test_avro_paths_follow_confluents_search():
    """Pure: Confluent's breadth-first search compares a path's namespace with the top-level
    schema's only, so a nested record in another namespace is found by its short name alone."""
    from schema_registry.tags import Entity, TagRequest, avro_tagged
    schema = json.dumps({"type": "record", "name": "Outer", "namespace": "a", "fields": [
        {"name": "in", "type": {"type": "record", "name": "Inner", "namespace": "b", "fields": [
            {"name": "x", "type": "int"}]}}]})

    def add(path, kind):
        e = Entity(path, kind)
        return avro_tagged(schema, TagRequest(to_add={e.key: (e, ["T"])}))

    assert '"name":"x","type":"int","confluent:tags":["T"]' in add("Inner.x", "sr_field")
    assert '"name":"x","type":"int","confluent:tags":["T"]' in add("a.Inner.x", "sr_field")  # the top's namespace
    with pytest.raises(Exception, match="No matching path 'b.Inner.x'"):
        add("b.Inner.x", "sr_field")
    assert add(".Outer", "sr_record").endswith(',"confluent:tags":["T"]}')
    with pytest.raises(Exception, match="No matching path 'Outer'"):
        add("Outer", "sr_field")
