"""The Schema Registry through stock clients: confluent-kafka's SchemaRegistryClient for every
endpoint, AvroSerializer/JSONSerializer through the broker, raw HTTP for Confluent's error
answers, and ``_schemas`` read back with a plain consumer, byte for byte."""
from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.request
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.schema_registry import (
    Schema, SchemaReference, SchemaRegistryClient, SchemaRegistryError,
)
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from hourglass.embedded import EmbeddedBroker

CT = "application/vnd.schemaregistry.v1+json"


def rec(*fields, name="R", **extra):
    return json.dumps({"type": "record", "name": name, "fields": list(fields), **extra})


V1 = rec({"name": "a", "type": "int"})
V2 = rec({"name": "a", "type": "int"}, {"name": "b", "type": "string", "default": "x"})
V_BAD = rec({"name": "a", "type": "int"}, {"name": "c", "type": "string"})


@pytest.fixture(scope="module")
def broker():
    with EmbeddedBroker(schema_registry=True) as b:
        yield b


@pytest.fixture
def sr(broker):
    return SchemaRegistryClient({"url": broker.schema_registry_url})


def fresh(sr_or_broker) -> SchemaRegistryClient:
    """A client with an empty cache (so each call goes over the wire)."""
    url = sr_or_broker.schema_registry_url if isinstance(sr_or_broker, EmbeddedBroker) else None
    return SchemaRegistryClient({"url": url})


def subject() -> str:
    return f"s-{uuid.uuid4().hex[:10]}-value"


def call(url, *, method="GET", body=None, ctype=CT, auth=None, raw=False):
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    req = urllib.request.Request(url, method=method, data=data)
    if data is not None and ctype:
        req.add_header("Content-Type", ctype)
    if auth is not None:
        req.add_header("Authorization", "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            text = r.read()
            return r.status, r.headers.get("Content-Type"), (text if raw else json.loads(text))
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), json.loads(e.read())


def schemas_end(broker) -> int:
    return broker.broker.topics.log("_schemas", 0).log_end_offset


def sr_error(fn, *args, **kw) -> tuple[int, int]:
    with pytest.raises(SchemaRegistryError) as info:
        fn(*args, **kw)
    return info.value.http_status_code, info.value.error_code


# ---- serializers through the broker --------------------------------------------------------------------
def _round_trip(broker, topic, serializer, deserializer, values):
    p = Producer(broker.client_config)
    for v in values:
        p.produce(topic, value=serializer(v, SerializationContext(topic, MessageField.VALUE)))
    assert p.flush(10) == 0
    c = Consumer({**broker.client_config, "group.id": "g-" + topic, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.monotonic() + 15
    while len(got) < len(values) and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append(deserializer(m.value(), SerializationContext(topic, MessageField.VALUE)))
    c.close()
    return got


def test_avro_serializer_and_deserializer_through_the_broker(broker, sr):
    topic = f"avro-{uuid.uuid4().hex[:8]}"
    schema = rec({"name": "name", "type": "string"}, {"name": "n", "type": "long"}, name="User", namespace="t")
    values = [{"name": f"u{i}", "n": i} for i in range(5)]
    got = _round_trip(broker, topic, AvroSerializer(sr, schema), AvroDeserializer(fresh(broker)), values)
    assert got == values
    latest = fresh(broker).get_latest_version(f"{topic}-value")
    assert latest.version == 1 and latest.schema.schema_type == "AVRO"
    # the serializer's framing names the registered id
    p_bytes = AvroSerializer(sr, schema)(values[0], SerializationContext(topic, MessageField.VALUE))
    assert p_bytes[0] == 0 and int.from_bytes(p_bytes[1:5], "big") == latest.schema_id


def test_json_serializer_through_the_broker(broker, sr):
    topic = f"json-{uuid.uuid4().hex[:8]}"
    schema = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": "Thing", "type": "object",
                         "properties": {"id": {"type": "integer"}, "tag": {"type": "string"}}, "required": ["id"]})
    values = [{"id": i, "tag": "t"} for i in range(3)]
    got = _round_trip(broker, topic, JSONSerializer(schema, sr), JSONDeserializer(None, schema_registry_client=fresh(broker)),
                      values)
    assert got == values
    assert fresh(broker).get_latest_version(f"{topic}-value").schema.schema_type == "JSON"


# ---- every endpoint through SchemaRegistryClient ---------------------------------------------------------
def test_client_endpoints(broker, sr):
    s = subject()
    id1 = sr.register_schema(s, Schema(V1, "AVRO"))
    assert sr.register_schema(s, Schema(V1, "AVRO")) == id1
    c = fresh(broker)
    assert c.register_schema(s, Schema(json.dumps(json.loads(V1), indent=2), "AVRO")) == id1  # whitespace only
    id2 = c.register_schema(s, Schema(V2, "AVRO"))
    assert id2 > id1
    assert set(c.get_schema_types()) == {"AVRO", "JSON", "PROTOBUF"}
    assert json.loads(c.get_schema(id1).schema_str) == json.loads(V1)
    assert s in c.get_subjects()
    assert c.get_versions(s) == [1, 2]
    assert c.get_version(s, 1).schema_id == id1
    assert c.get_latest_version(s).version == 2
    assert c.get_subjects_by_schema_id(id2) == [s]
    assert [(v.subject, v.version) for v in c.get_schema_versions(id2)] == [(s, 2)]
    found = c.lookup_schema(s, Schema(V1, "AVRO"))
    assert (found.schema_id, found.version) == (id1, 1)
    assert sr_error(c.lookup_schema, s, Schema(rec({"name": "z", "type": "int"}), "AVRO")) == (404, 40403)
    assert c.test_compatibility(s, Schema(V2, "AVRO")) is True
    assert c.test_compatibility(s, Schema(V_BAD, "AVRO")) is False
    assert c.test_compatibility_all_versions(s, Schema(V2, "AVRO")) is True
    assert c.get_referenced_by(s, 1) == []
    # the same schema under another subject keeps its id
    other = subject()
    assert c.register_schema(other, Schema(V1, "AVRO")) == id1
    assert sorted(fresh(broker).get_subjects_by_schema_id(id1)) == sorted([s, other])
    status, ctype, body = call(f"{broker.schema_registry_url}/schemas/ids/{id1}/schema", raw=True)
    assert status == 200 and ctype == CT and json.loads(body) == json.loads(V1)
    status, _, body = call(f"{broker.schema_registry_url}/subjects/{s}/versions/latest/schema", raw=True)
    assert json.loads(body) == json.loads(V2)
    assert call(f"{broker.schema_registry_url}/")[::2] == (200, {})
    assert call(f"{broker.schema_registry_url}/contexts")[2] == ["."]
    assert any(x["subject"] == s for x in call(f"{broker.schema_registry_url}/schemas?subjectPrefix={s}")[2])
    assert call(f"{broker.schema_registry_url}/v1/metadata/id")[2]["scope"]["clusters"]["kafka-cluster"] == \
        broker.broker.cluster_id
    # incompatible registration: 409 / 40901 and nothing written
    before = schemas_end(broker)
    assert sr_error(c.register_schema, s, Schema(V_BAD, "AVRO")) == (409, 40901)
    assert schemas_end(broker) == before
    status, _, body = call(f"{broker.schema_registry_url}/compatibility/subjects/{s}/versions/latest?verbose=true",
                           method="POST", body={"schema": V_BAD})
    assert status == 200 and body["is_compatible"] is False and "READER_FIELD_MISSING_DEFAULT_VALUE" in body["messages"][0]


def test_subject_prefix_and_deleted_listing(broker):
    c = fresh(broker)
    prefix = f"pre-{uuid.uuid4().hex[:6]}"
    for i in range(3):
        c.register_schema(f"{prefix}-{i}", Schema(V1, "AVRO"))
    assert c.get_subjects(subject_prefix=prefix) == [f"{prefix}-{i}" for i in range(3)]
    c.delete_subject(f"{prefix}-1")
    assert fresh(broker).get_subjects(subject_prefix=prefix) == [f"{prefix}-0", f"{prefix}-2"]
    assert fresh(broker).get_subjects(subject_prefix=prefix, deleted=True) == [f"{prefix}-{i}" for i in range(3)]


def test_soft_and_permanent_deletes(broker):
    c = fresh(broker)
    s = subject()
    # schemas of this test only (the module's broker is shared), so the id dies with the subject
    id1 = c.register_schema(s, Schema(rec({"name": "a", "type": "int"}, name="Del"), "AVRO"))
    c.register_schema(s, Schema(rec({"name": "a", "type": "int"}, {"name": "b", "type": "int", "default": 0},
                                    name="Del"), "AVRO"))
    assert sr_error(c.delete_version, s, 1, permanent=True) == (404, 40407)
    assert c.delete_version(s, 1) == 1
    assert sr_error(fresh(broker).delete_version, s, 1) == (404, 40406)
    assert fresh(broker).get_versions(s) == [2]
    assert sr_error(fresh(broker).get_version, s, 1) == (404, 40402)
    assert c.delete_version(s, 1, permanent=True) == 1
    assert sr_error(c.delete_subject, s, permanent=True) == (404, 40405)
    assert c.delete_subject(s) == [2]
    assert sr_error(fresh(broker).delete_subject, s) == (404, 40404)
    assert sr_error(fresh(broker).get_versions, s) == (404, 40401)
    assert c.delete_subject(s, permanent=True) == [2]
    assert s not in fresh(broker).get_subjects(deleted=True)
    assert call(f"{broker.schema_registry_url}/schemas/ids/{id1}")[2]["error_code"] == 40403
    # a new registration never takes a spent id
    s2 = subject()
    new_id = fresh(broker).register_schema(s2, Schema(rec({"name": "q", "type": "int"}), "AVRO"))
    assert new_id > id1


def test_config_endpoints(broker):
    c = fresh(broker)
    url = broker.schema_registry_url
    s = subject()
    c.register_schema(s, Schema(V1, "AVRO"))
    assert c.get_compatibility() == "BACKWARD"
    assert call(f"{url}/config/{s}")[2] == {"error_code": 40408,
                                            "message": f"Subject '{s}' does not have subject-level compatibility configured"}
    assert call(f"{url}/config/{s}?defaultToGlobal=true")[2]["compatibilityLevel"] == "BACKWARD"
    assert c.set_compatibility(s, "NONE") == {"compatibility": "NONE"}
    assert c.get_compatibility(s) == "NONE"
    assert c.register_schema(s, Schema(V_BAD, "AVRO")) > 0  # NONE lets anything through
    assert call(f"{url}/config/{s}", method="PUT", body={"compatibility": "SIDEWAYS"})[2]["error_code"] == 42203
    status, _, body = call(f"{url}/config/{s}", method="PUT", body={"compatibility": "FULL_TRANSITIVE", "normalize": True})
    assert status == 200 and body == {"compatibility": "FULL_TRANSITIVE", "normalize": True}
    assert call(f"{url}/config/{s}")[2] == {"normalize": True, "compatibilityLevel": "FULL_TRANSITIVE"}
    assert call(f"{url}/config/{s}", method="DELETE")[2]["compatibilityLevel"] == "FULL_TRANSITIVE"
    assert call(f"{url}/config/{s}")[2]["error_code"] == 40408


def test_modes_readonly_and_import(broker):
    c = fresh(broker)
    url = broker.schema_registry_url
    s = subject()
    c.register_schema(s, Schema(V1, "AVRO"))
    assert c.get_global_mode() == "READWRITE"
    assert call(f"{url}/mode/{s}")[2]["error_code"] == 40409
    assert call(f"{url}/mode/{s}?defaultToGlobal=true")[2] == {"mode": "READWRITE"}
    assert c.update_mode(s, "READONLY") == "READONLY"
    before = schemas_end(broker)
    status, _, body = call(f"{url}/subjects/{s}/versions", method="POST", body={"schema": V2})
    assert (status, body["error_code"]) == (422, 42205) and "read-only mode" in body["message"]
    assert call(f"{url}/subjects/{s}", method="DELETE")[2]["error_code"] == 42205
    assert schemas_end(broker) == before
    assert call(f"{url}/mode/{s}", method="PUT", body={"mode": "SIDEWAYS"})[2]["error_code"] == 42204
    assert c.delete_mode(s) == "READONLY"
    # IMPORT: explicit ids and versions; refused on a subject that has versions unless forced
    imp = subject()
    assert c.update_mode(imp, "IMPORT") == "IMPORT"
    status, _, body = call(f"{url}/subjects/{imp}/versions", method="POST", body={"schema": V1})
    assert body["error_code"] == 42205 and "not in read-write mode" in body["message"]
    status, _, body = call(f"{url}/subjects/{imp}/versions", method="POST",
                           body={"schema": V_BAD, "id": 5000, "version": 7})
    assert (status, body["id"], body["version"]) == (200, 5000, 7)
    assert c.get_version(imp, 7).schema_id == 5000
    status, _, body = call(f"{url}/subjects/{imp}/versions", method="POST",
                           body={"schema": rec({"name": "other", "type": "int"}), "id": 5000, "version": 8})
    assert body["error_code"] == 42205 and "Overwrite new schema with id 5000" in body["message"]
    assert call(f"{url}/mode/{s}", method="PUT", body={"mode": "IMPORT"})[2]["error_code"] == 42205
    assert call(f"{url}/mode/{s}?force=true", method="PUT", body={"mode": "IMPORT"})[2] == {"mode": "IMPORT"}
    c.update_mode(imp, "READWRITE")
    # back in READWRITE, new ids continue above the imported one
    assert fresh(broker).register_schema(subject(), Schema(rec({"name": "after", "type": "int"}), "AVRO")) > 5000
    status, _, body = call(f"{url}/subjects/{subject()}/versions", method="POST", body={"schema": V2, "id": 6000})
    assert body["error_code"] == 42205


def test_references_across_subjects(broker):
    c = fresh(broker)
    addr_subject, person_subject = subject(), subject()
    addr = rec({"name": "street", "type": "string"}, name="Address", namespace="ref")
    person = rec({"name": "name", "type": "string"}, {"name": "home", "type": "ref.Address"}, name="Person", namespace="ref")
    addr_id = c.register_schema(addr_subject, Schema(addr, "AVRO"))
    refs = [SchemaReference("ref.Address", addr_subject, 1)]
    person_id = c.register_schema(person_subject, Schema(person, "AVRO", refs))
    got = fresh(broker).get_version(person_subject, 1)
    assert got.schema.references[0].subject == addr_subject
    assert fresh(broker).get_referenced_by(addr_subject, 1) == [person_id]
    status, _, body = call(f"{broker.schema_registry_url}/schemas/ids/{person_id}")
    assert body["references"] == [{"name": "ref.Address", "subject": addr_subject, "version": 1}]
    # deleting the referenced schema is refused while it is referenced
    assert sr_error(c.delete_version, addr_subject, 1) == (422, 42206)
    assert sr_error(c.delete_subject, addr_subject) == (422, 42206)
    # a reference to nothing is an invalid schema
    status, _, body = call(f"{broker.schema_registry_url}/subjects/{subject()}/versions", method="POST",
                           body={"schema": person, "references": [{"name": "ref.Address", "subject": "nope", "version": 1}]})
    assert (status, body["error_code"]) == (422, 42201)
    # serializer + deserializer with a referenced schema
    topic = f"refs-{uuid.uuid4().hex[:8]}"
    ser = AvroSerializer(c, None, conf={"auto.register.schemas": False, "use.latest.version": True})
    c.register_schema(f"{topic}-value", Schema(person, "AVRO", refs))
    value = {"name": "ann", "home": {"street": "main"}}
    got = _round_trip(broker, topic, ser, AvroDeserializer(fresh(broker)), [value])
    assert got == [value] and addr_id != person_id


def test_normalize(broker):
    c = fresh(broker)
    s = subject()
    a = rec({"name": "a", "type": {"type": "int"}})
    b = json.dumps({"fields": [{"type": "int", "name": "a"}], "name": "R", "type": "record"})
    ida = c.register_schema(s, Schema(a, "AVRO"), normalize_schemas=True)
    assert c.register_schema(s, Schema(b, "AVRO"), normalize_schemas=True) == ida
    assert fresh(broker).get_versions(s) == [1]


def test_metadata_and_rule_set_are_carried(broker):
    s = subject()
    url = broker.schema_registry_url
    metadata = {"properties": {"owner": "team-a"}, "tags": {"a": ["PII"]}}
    rule_set = {"domainRules": [{"name": "r", "kind": "CONDITION", "type": "CEL", "mode": "WRITE", "expr": "true"}]}
    status, _, body = call(f"{url}/subjects/{s}/versions", method="POST",
                           body={"schema": V1, "metadata": metadata, "ruleSet": rule_set})
    assert status == 200
    got = call(f"{url}/subjects/{s}/versions/1")[2]
    assert got["metadata"] == metadata and got["ruleSet"] == rule_set
    assert call(f"{url}/subjects/{s}/metadata?key=owner&value=team-a")[2]["version"] == 1


def test_as_of(broker):
    c = fresh(broker)
    s = subject()
    c.register_schema(s, Schema(V1, "AVRO"))
    t1 = int(time.time() * 1000)
    time.sleep(0.02)
    c.register_schema(s, Schema(V2, "AVRO"))
    time.sleep(0.02)
    t2 = int(time.time() * 1000)
    url = broker.schema_registry_url
    assert call(f"{url}/subjects/{s}/versions?asOf={t1}")[2]["version"] == 1
    assert call(f"{url}/subjects/{s}/versions?asOf={t2}")[2]["version"] == 2
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t1 / 1000)) + f".{t1 % 1000:03d}Z"
    assert call(f"{url}/subjects/{s}/versions/latest?asOf={iso}")[2]["version"] == 1
    assert call(f"{url}/subjects/{s}/versions?asOf=0")[2]["error_code"] == 40402
    c.delete_version(s, 2)
    assert call(f"{url}/subjects/{s}/versions?asOf={t2}")[2]["version"] == 2  # it was latest then
    assert call(f"{url}/subjects/{s}/versions?asOf={int(time.time() * 1000) + 1000}")[2]["version"] == 1
    assert call(f"{url}/subjects/{s}/versions?asOf=yesterday")[0] == 400


# ---- bad input: Confluent's answer, nothing written, still serving ------------------------------------------
def test_bad_input(broker):
    url = broker.schema_registry_url
    s = subject()
    fresh(broker).register_schema(s, Schema(V1, "AVRO"))
    before = schemas_end(broker)
    cases = [
        (dict(url=f"{url}/subjects/{s}/versions", method="POST", body=b"{not json"), 400, 400, "malformed JSON"),
        (dict(url=f"{url}/subjects/{s}/versions", method="POST", body={"schema": '{"type":"record","name":"R"}'}),
         422, 42201, "Record schema requires a non-empty fields property"),
        (dict(url=f"{url}/subjects/{s}/versions", method="POST", body={"schema": '{"type":"strin"}', "schemaType": "JSON"}),
         422, 42201, "is not valid under any of the given schemas"),
        (dict(url=f"{url}/subjects/{s}/versions", method="POST", body={"schema": V1, "schemaType": "XML"}),
         422, 42201, "Invalid schema type XML"),
        (dict(url=f"{url}/subjects/{s}/versions", method="POST", body={}), 422, 42201, "Empty schema"),
        (dict(url=f"{url}/subjects/{s}/versions", method="POST", body={"schema": V2}, ctype="text/plain"),
         415, 415, "Unsupported Media Type"),
        (dict(url=f"{url}/subjects/{s}/versions", method="POST",
              body=json.dumps({"schema": "x" * (17 << 20)}).encode()), 413, 413, "too large"),
        (dict(url=f"{url}/subjects/nope-{s}/versions"), 404, 40401, f"Subject 'nope-{s}' not found."),
        (dict(url=f"{url}/subjects/{s}/versions/9"), 404, 40402, "Version 9 not found."),
        (dict(url=f"{url}/subjects/{s}/versions/zero"), 422, 42202, "is not a valid version id"),
        (dict(url=f"{url}/subjects/{s}/versions/0"), 422, 42202, "is not a valid version id"),
        (dict(url=f"{url}/schemas/ids/999999"), 404, 40403, "Schema 999999 not found"),
        (dict(url=f"{url}/subjects/{s}/versions/1", method="DELETE", body=None), None, None, None),
    ]
    for kw, status, code, message in cases[:-1]:
        got_status, ctype, body = call(**kw)
        assert (got_status, body["error_code"]) == (status, code), (kw["url"], body)
        assert message in body["message"] and ctype == CT
    assert schemas_end(broker) == before
    assert fresh(broker).get_versions(s) == [1]  # still serving


def test_unauthenticated_call_when_auth_is_on():
    with EmbeddedBroker(security={"protocol": "SASL_PLAINTEXT", "mechanism": "SCRAM-SHA-256"}, schema_registry=True) as b:
        url = b.schema_registry_url
        status, _, body = call(f"{url}/subjects/x/versions", method="POST", body={"schema": V1})
        assert (status, body["error_code"]) == (401, 401)
        assert call(f"{url}/subjects", auth=(b.security.user, "wrong"))[0] == 401
        assert call(f"{url}/subjects/x/versions", method="POST", body={"schema": V1},
                    auth=(b.security.user, b.security.password))[2]["id"] == 1
        c = SchemaRegistryClient({"url": url, "basic.auth.user.info": f"{b.security.user}:{b.security.password}"})
        assert c.get_subjects() == ["x"]


# ---- _schemas in Confluent's exact format ------------------------------------------------------------------
def read_schemas_topic(broker) -> list[tuple[bytes, bytes | None]]:
    c = Consumer({**broker.client_config, "group.id": "raw-" + uuid.uuid4().hex, "enable.partition.eof": True})
    c.assign([TopicPartition("_schemas", 0, 0)])
    out = []
    while True:
        m = c.poll(5)
        assert m is not None
        if m.error():
            break
        out.append((m.key(), m.value()))
    c.close()
    return out


def test_schemas_topic_bytes_are_confluents():
    with EmbeddedBroker(schema_registry=True) as b:
        c = SchemaRegistryClient({"url": b.schema_registry_url})
        # the text as Avro-Java prints it (a field's "name" before its "type"), which the registry keeps
        schema = '{"type":"record","name":"U","namespace":"x","fields":[{"name":"a","type":"int","doc":"a \\"quoted\\" é"}]}'
        c.register_schema("t-value", Schema(schema, "AVRO"))
        c.register_schema("j-value", Schema('{"type":"object"}', "JSON"))
        c.set_compatibility("t-value", "FULL")
        c.set_compatibility(None, "NONE")
        c.update_mode("t-value", "READONLY")
        c.delete_mode("t-value")
        c.delete_subject("j-value")
        c.delete_subject("j-value", permanent=True)
        escaped = json.dumps(schema, ensure_ascii=False)
        expected = [
            (b'{"keytype":"SCHEMA","subject":"t-value","version":1,"magic":1}',
             ('{"subject":"t-value","version":1,"id":1,"schema":' + escaped + ',"deleted":false}').encode()),
            (b'{"keytype":"SCHEMA","subject":"j-value","version":1,"magic":1}',
             b'{"subject":"j-value","version":1,"id":2,"schemaType":"JSON","schema":"{\\"type\\":\\"object\\"}","deleted":false}'),
            (b'{"keytype":"CONFIG","subject":"t-value","magic":0}', b'{"subject":"t-value","compatibilityLevel":"FULL"}'),
            (b'{"keytype":"CONFIG","magic":0}', b'{"compatibilityLevel":"NONE"}'),
            (b'{"keytype":"MODE","subject":"t-value","magic":0}', b'{"subject":"t-value","mode":"READONLY"}'),
            (b'{"keytype":"MODE","subject":"t-value","magic":0}', None),
            (b'{"keytype":"DELETE_SUBJECT","subject":"j-value","magic":0}', b'{"subject":"j-value","version":1}'),
            (b'{"keytype":"SCHEMA","subject":"j-value","version":1,"magic":1}', None),
            (b'{"keytype":"NOOP","magic":0}', b'{"maxId":2}'),
        ]
        assert read_schemas_topic(b) == expected
        assert b.broker.topics.get("_schemas").configs.get("cleanup.policy") == "compact"


def test_metrics(broker):
    from broker.metrics import BrokerCollector
    c = fresh(broker)
    c.register_schema(subject(), Schema(rec({"name": "m", "type": "int"}, name="Metric"), "AVRO"))
    call(f"{broker.schema_registry_url}/subjects/nope-metric/versions")
    families = {f.name: f for f in BrokerCollector(broker.broker).collect()}
    assert families["hourglass_schema_registry_schemas"].samples[0].value >= 1
    assert families["hourglass_schema_registry_subjects"].samples[0].value >= 1
    by_status = {s.labels["status"]: s.value for s in families["hourglass_schema_registry_requests"].samples
                 if s.name.endswith("_total")}
    assert by_status["200"] >= 1 and by_status["404"] >= 1


def test_acls_as_confluents_topic_acl_authorizer():
    """With the broker's ACLs on, a subject needs its topic's READ (reads) or WRITE (writes),
    global config/mode a super user; listings show only readable subjects."""
    from confluent_kafka.admin import (
        AclBinding, AclOperation, AclPermissionType, AdminClient, ResourcePatternType, ResourceType,
        ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion,
    )
    with EmbeddedBroker(security={"protocol": "SASL_PLAINTEXT", "mechanism": "SCRAM-SHA-256", "acls": True},
                        schema_registry=True) as b:
        url = b.schema_registry_url
        admin_auth = (b.security.user, b.security.password)
        admin = AdminClient(b.client_config)
        for f in admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
                "bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"bob-secret")]).values():
            f.result(10)
        for f in admin.create_acls([AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:bob",
                                               "*", AclOperation.READ, AclPermissionType.ALLOW)]).values():
            f.result(10)
        bob = ("bob", "bob-secret")
        assert call(f"{url}/subjects/orders-value/versions", method="POST", body={"schema": V1}, auth=admin_auth)[2]["id"] == 1
        assert call(f"{url}/subjects/secret-value/versions", method="POST", body={"schema": V2}, auth=admin_auth)[2]["id"] == 2
        assert call(f"{url}/subjects/orders-value/versions", auth=bob)[::2] == (200, [1])
        assert call(f"{url}/schemas/ids/1", auth=bob)[0] == 200
        status, _, body = call(f"{url}/schemas/ids/2", auth=bob)
        assert (status, body["error_code"]) == (403, 40301)
        status, _, body = call(f"{url}/subjects/orders-value/versions", method="POST", body={"schema": V2}, auth=bob)
        assert (status, body["error_code"]) == (403, 40301) and "SUBJECT_WRITE" in body["message"]
        assert call(f"{url}/subjects/secret-value/versions/1", auth=bob)[0] == 403
        assert call(f"{url}/config", auth=bob)[0] == 403
        assert call(f"{url}/config", auth=admin_auth)[0] == 200
        assert call(f"{url}/subjects", auth=bob)[2] == ["orders-value"]
        assert call(f"{url}/subjects", auth=admin_auth)[2] == ["orders-value", "secret-value"]
        assert call(f"{url}/schemas/types", auth=bob)[0] == 200
        assert call(f"{url}/no/such/route", auth=bob)[0] == 404


def test_concurrent_identical_registrations_get_one_id(broker):
    """Dozens of rounds of clients registering the same new schema at once: one id, one version."""
    from concurrent.futures import ThreadPoolExecutor
    url = broker.schema_registry_url
    with ThreadPoolExecutor(8) as pool:
        for rnd in range(30):
            s = subject()
            body = {"schema": rec({"name": f"race{rnd}", "type": "int"}, name="Race")}
            answers = list(pool.map(lambda _: call(f"{url}/subjects/{s}/versions", method="POST", body=body), range(8)))
            assert {a[0] for a in answers} == {200}
            assert len({a[2]["id"] for a in answers}) == 1
            assert call(f"{url}/subjects/{s}/versions")[2] == [1]


def test_serves_records_written_by_confluents_registry():
    """The reverse direction: records as Confluent's registry writes them (older and newer
    field sets, a null-subject global config key, NOOP markers), produced by a plain producer
    into ``_schemas``, are served; new ids continue after theirs."""
    with EmbeddedBroker(schema_registry=True) as b:
        c = SchemaRegistryClient({"url": b.schema_registry_url})
        assert c.get_subjects() == []  # the registry is up and _schemas exists
        p = Producer(b.client_config)
        for k, v in [
            (b'{"keytype":"NOOP","magic":0}', None),
            (b'{"keytype":"CONFIG","subject":null,"magic":0}', b'{"compatibilityLevel":"FULL"}'),
            (b'{"keytype":"SCHEMA","subject":"legacy-value","version":1,"magic":1}',
             b'{"subject":"legacy-value","version":1,"id":7,"schemaType":"AVRO","schema":"\\"string\\"","deleted":false}'),
            (b'{"keytype":"SCHEMA","subject":"legacy-value","version":2,"magic":1}',
             b'{"subject":"legacy-value","version":2,"id":9,"md5":"AAAA","schema":"\\"bytes\\"","deleted":false,"ts":1700000000000,"offset":3}'),
            (b'{"keytype":"SCHEMA","subject":"j-value","version":1,"magic":1}',
             b'{"subject":"j-value","version":1,"id":8,"schemaType":"JSON","references":[],"schema":"{}","deleted":true}'),
        ]:
            p.produce("_schemas", key=k, value=v, partition=0)
        assert p.flush(10) == 0
        c = SchemaRegistryClient({"url": b.schema_registry_url})
        assert c.get_subjects() == ["legacy-value"]
        assert c.get_compatibility() == "FULL"
        assert c.get_version("legacy-value", 2).schema_id == 9
        assert c.get_schema(8).schema_type == "JSON"
        assert c.register_schema("new-value", Schema('"int"', "AVRO")) == 10


def test_guids_and_header_serialization(broker):
    """Confluent's schema GUIDs (MD5 of the schema as a UUID): answered on registration and
    versions, served by /schemas/guids/{guid}, and the serializers' header mode round-trips."""
    import hashlib
    from confluent_kafka.schema_registry import dual_schema_id_deserializer, header_schema_id_serializer
    c = fresh(broker)
    s = subject()
    text = rec({"name": "g", "type": "long"}, name="Guid")
    status, _, body = call(f"{broker.schema_registry_url}/subjects/{s}/versions", method="POST", body={"schema": text})
    assert str(uuid.UUID(bytes=hashlib.md5(body["schema"].encode()).digest())) == body["guid"]
    assert c.get_schema_by_guid(body["guid"]).schema_str == body["schema"]
    assert call(f"{broker.schema_registry_url}/schemas/guids/{uuid.uuid4()}")[2]["error_code"] == 40403
    topic = f"hdr-{uuid.uuid4().hex[:8]}"
    # (the client's deserializer wants more than 5 bytes of payload even with the id in a header)
    ser = AvroSerializer(c, rec({"name": "n", "type": "long"}, {"name": "s", "type": "string"}, name="Hdr"),
                         conf={"schema.id.serializer": header_schema_id_serializer})
    de = AvroDeserializer(fresh(broker), conf={"schema.id.deserializer": dual_schema_id_deserializer})
    headers: list = []
    value = {"n": 42, "s": "a string long enough"}
    data = ser(value, SerializationContext(topic, MessageField.VALUE, headers))
    assert headers and headers[0][0] == "__value_schema_id"
    assert de(data, SerializationContext(topic, MessageField.VALUE, headers)) == value


def test_protobuf_text_kept_in_an_older_layout_is_still_the_same_schema():
    """A PROTOBUF version whose stored text predates today's option layout (one-line option
    maps, as the registry wrote them before) is found again by the same schema: same id, no
    new version."""
    old = ('syntax = "proto3";\n\nimport "confluent/meta.proto";\n\nmessage M {\n'
           '  int32 a = 1 [(confluent.field_meta) = { doc: "the a" tags: "PII" }];\n}\n')
    with EmbeddedBroker(schema_registry=True) as b:
        c = SchemaRegistryClient({"url": b.schema_registry_url})
        assert c.get_subjects() == []
        p = Producer(b.client_config)
        p.produce("_schemas", partition=0, key=b'{"keytype":"SCHEMA","subject":"old-pb","version":1,"magic":1}',
                  value=json.dumps({"subject": "old-pb", "version": 1, "id": 5, "schemaType": "PROTOBUF",
                                    "schema": old, "deleted": False}).encode())
        assert p.flush(10) == 0
        c = SchemaRegistryClient({"url": b.schema_registry_url})
        assert c.register_schema("old-pb", Schema(old, "PROTOBUF")) == 5
        assert c.lookup_schema("old-pb", Schema(old, "PROTOBUF")).version == 1
        assert c.get_versions("old-pb") == [1]
