"""Confluent 8.3's registry behaviours, through stock clients (confluent-kafka's
SchemaRegistryClient and serializers, raw HTTP for the exact answers); the expected answers
are those Confluent's 8.3 source and OpenAPI document give (no Confluent server runs here):

- a Protobuf schema with a custom option nothing defines registers (wire's parser keeps an
  unresolved option out; protoc alone would refuse it);
- a stored Avro schema is parsed as Confluent parses what it holds (``validateAsNew=false``):
  a namespace Avro 1.11 let through (``com.my-org``) breaks no later compatibility check, lookup
  or registration;
- ``PUT /config`` and ``PUT /config/{subject}`` leave explicit nulls out of the echo
  (ConfigUpdateRequest is NON_NULL);
- the associations API (``associations.enable``, on by default), which confluent-kafka's
  serializers ask first (their default subject name strategy is ASSOCIATED);
- with the broker's ACLs on, an ordinary user registers, produces and consumes through the
  Avro, JSON and Protobuf serializers (the association lookups answer, never 403).
"""
from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.request
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient, SchemaRegistryError
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from hourglass.embedded import EmbeddedBroker
from tests.helpers.clients import reading_message_class

CT = "application/vnd.schemaregistry.v1+json"


@pytest.fixture(scope="module")
def broker():
    with EmbeddedBroker(schema_registry=True) as b:
        yield b


def call(url, method="GET", body=None, auth=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, method=method, data=data)
    if data is not None:
        req.add_header("Content-Type", CT)
    if auth is not None:
        req.add_header("Authorization", "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            raw = r.read()
            return r.status, (json.loads(raw) if raw else None)
    except urllib.error.HTTPError as e:
        raw = e.read()
        return e.code, (json.loads(raw) if raw else None)


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# ---- Protobuf: undefined custom options -----------------------------------------------------------
UNKNOWN_OPTIONS = '''syntax = "proto3";
package shop;

message Order {
  option (acme.message_opt) = { owner: "team-a" retention: 7 };
  string id = 1 [(acme.field_opt) = "pii", json_name = "orderId"];
  oneof payment {
    option (acme.oneof_opt) = true;
    string card = 2;
    string iban = 3 [(acme.field_opt) = "x"];
  }
}
'''


def test_protobuf_with_undefined_custom_options_registers_without_them(broker):
    """Confluent's parser ignores custom options it cannot resolve (on a message, a field, a
    oneof), where protoc reports each as unknown: the schema registers, the options that mean
    something (json_name) stay, the text is served, and the same text finds the same id."""
    url, subject = broker.schema_registry_url, name("opts") + "-value"
    sr = SchemaRegistryClient({"url": url})
    sid = sr.register_schema(subject, Schema(UNKNOWN_OPTIONS, "PROTOBUF"))
    stored = sr.get_version(subject, 1).schema.schema_str
    assert "acme" not in stored and 'json_name = "orderId"' in stored
    assert "oneof payment {" in stored and "string iban = 3;" in stored
    assert sr.lookup_schema(subject, Schema(UNKNOWN_OPTIONS, "PROTOBUF")).schema_id == sid
    # anything else protoc refuses still answers 42201 with its message
    status, body = call(f"{url}/subjects/{subject}/versions", "POST", {
        "schemaType": "PROTOBUF",
        "schema": 'syntax = "proto3";\nmessage M {\n  option (x.y) = 1;\n  Missing m = 1;\n}\n'})
    assert (status, body["error_code"]) == (422, 42201) and '"Missing" is not defined' in body["message"]


# ---- Avro: stored schemas parsed as Confluent parses them -----------------------------------------
def test_stored_avro_schema_failing_strict_name_validation_keeps_serving():
    """A schema Confluent's registry stored under Avro 1.11 (a namespace with a dash, which
    Avro 1.12's strict validator refuses) is in ``_schemas``: compatibility checks against it,
    lookups and registrations under the subject work (Confluent parses stored schemas with
    validateAsNew=false: no namespace check, only simple names by Avro's UTF validator); the
    same text sent as new is refused, as Confluent refuses it."""
    old = json.dumps({"type": "record", "name": "Order", "namespace": "com.my-org",
                      "fields": [{"name": "id", "type": "string"}]})
    with EmbeddedBroker(schema_registry=True) as b:
        url = b.schema_registry_url
        sr = SchemaRegistryClient({"url": url})
        assert sr.get_subjects() == []
        p = Producer(b.client_config)
        p.produce("_schemas", partition=0, key=b'{"keytype":"SCHEMA","subject":"legacy-value","version":1,"magic":1}',
                  value=json.dumps({"subject": "legacy-value", "version": 1, "id": 1, "schema": old,
                                    "deleted": False}).encode())
        assert p.flush(10) == 0
        assert call(f"{url}/subjects/legacy-value/versions/1")[1]["schema"] == old
        new = json.dumps({"type": "record", "name": "Order", "namespace": "com.myorg",
                          "fields": [{"name": "id", "type": "string"}, {"name": "qty", "type": "int"}]})
        status, body = call(f"{url}/compatibility/subjects/legacy-value/versions/latest?verbose=true", "POST",
                            {"schema": new})
        # checked against the stored schema (BACKWARD: a field without a default is new)
        assert status == 200 and body["is_compatible"] is False and "qty" in str(body["messages"]), body
        status, body = call(f"{url}/subjects/legacy-value", "POST", {"schema": new})
        assert (status, body["error_code"]) == (404, 40403)
        assert call(f"{url}/config/legacy-value", "PUT", {"compatibility": "NONE"})[0] == 200
        status, body = call(f"{url}/subjects/legacy-value/versions", "POST", {"schema": new})
        assert status == 200 and body["version"] == 2, body
        # the stored text itself, sent again, is a new schema to Confluent: strictly validated
        status, body = call(f"{url}/subjects/other-value/versions", "POST", {"schema": old})
        assert (status, body["error_code"]) == (422, 42201)


# ---- PUT /config: explicit nulls ------------------------------------------------------------------
def test_put_config_leaves_explicit_nulls_out_of_the_echo(broker):
    url, subject = broker.schema_registry_url, name("cfg")
    assert call(f"{url}/config/{subject}", "PUT", {"compatibility": "FULL", "normalize": True})[1] == {
        "compatibility": "FULL", "normalize": True}
    status, body = call(f"{url}/config/{subject}", "PUT", {"compatibility": "FORWARD", "normalize": None,
                                                           "defaultMetadata": None})
    assert (status, body) == (200, {"compatibility": "FORWARD"})
    assert call(f"{url}/config/{subject}")[1] == {"compatibilityLevel": "FORWARD"}  # null cleared normalize
    status, body = call(f"{url}/config", "PUT", {"compatibility": "BACKWARD", "alias": None})
    assert (status, body) == (200, {"compatibility": "BACKWARD"})


# ---- associations -----------------------------------------------------------------------------------
AVRO = json.dumps({"type": "record", "name": "Reading", "fields": [{"name": "v", "type": "double"}]})


def _assoc(url, body, method="POST", path="/associations"):
    return call(url + path, method, body)


def test_associations_create_read_update_delete(broker):
    """Confluent 8.3's association operations: create (WEAK on an existing subject, STRONG
    with a schema, registered into the default subject), the three lookups with their filters,
    an equivalent create as a no-op, Confluent's conflicts and validation errors, delete
    (frozen only with cascadeLifecycle, which deletes the STRONG subject)."""
    url, ns = broker.schema_registry_url, broker.broker.cluster_id
    topic, shared = name("orders"), name("shared") + "-value"
    rid = uuid.uuid4().hex
    assert call(f"{url}/subjects/{shared}/versions", "POST", {"schema": AVRO})[0] == 200
    weak = {"resourceName": topic, "resourceNamespace": ns, "resourceId": rid,
            "associations": [{"subject": shared, "associationType": "value", "lifecycle": "WEAK"}]}
    status, body = _assoc(url, weak)
    assert status == 200, body
    assert body == {"resourceName": topic, "resourceNamespace": ns, "resourceId": rid, "resourceType": "topic",
                    "associations": [{"subject": shared, "associationType": "value", "lifecycle": "WEAK",
                                      "frozen": False}]}
    status, found = call(f"{url}/associations/resources/{ns}/{topic}?associationType=value")
    assert status == 200 and [a["subject"] for a in found] == [shared]
    a = found[0]
    assert (a["resourceId"], a["resourceType"], a["lifecycle"], a["frozen"]) == (rid, "topic", "WEAK", False)
    assert set(a) == {"subject", "guid", "resourceName", "resourceNamespace", "resourceId", "resourceType",
                      "associationType", "lifecycle", "frozen", "createTs", "updateTs"}
    assert call(f"{url}/associations/resources/-/{topic}")[1] == found  # "-": any namespace
    assert call(f"{url}/associations/resources/{rid}")[1] == found
    assert call(f"{url}/associations/subjects/{shared}")[1] == found
    assert call(f"{url}/associations/resources/{ns}/{topic}?associationType=key")[1] == []
    assert call(f"{url}/associations/resources/{ns}/{topic}?lifecycle=STRONG")[1] == []
    assert call(f"{url}/associations/resources/{ns}/{name('none')}") == (200, [])
    # the same create again changes nothing; another subject for the type is a conflict
    status, body = _assoc(url, weak)
    assert status == 200 and "associations" not in body
    other = name("other") + "-value"
    assert call(f"{url}/subjects/{other}/versions", "POST", {"schema": AVRO})[0] == 200
    status, body = _assoc(url, {**weak, "associations": [{"subject": other, "lifecycle": "WEAK"}]})
    assert (status, body["error_code"]) == (409, 40903)
    # Confluent's validation
    for bad, prop in (({**weak, "resourceName": ""}, "resourceName"),
                      ({**weak, "resourceType": "table"}, "resourceType"),
                      ({**weak, "associations": []}, "associations"),
                      ({**weak, "associations": [{"subject": shared, "associationType": "header"}]}, "associationType"),
                      ({**weak, "associations": [{"lifecycle": "WEAK"}]}, "subject")):
        status, body = _assoc(url, bad)
        assert (status, body["error_code"]) == (422, 42212) and f"property: '{prop}'" in body["message"], body
    status, body = _assoc(url, {**weak, "resourceId": uuid.uuid4().hex,
                                "associations": [{"subject": name("empty"), "lifecycle": "WEAK"}]})
    assert (status, body["error_code"]) == (409, 40907)  # no live version

    # STRONG with a schema: registered into the default subject, frozen
    topic2, rid2 = name("payments"), uuid.uuid4().hex
    status, body = _assoc(url, {"resourceName": topic2, "resourceNamespace": ns, "resourceId": rid2,
                                "associations": [{"associationType": "value", "schema": {"schema": AVRO}}]})
    assert status == 200, body
    info, = body["associations"]
    default_subject = f":.{ns}:{topic2}-value"
    assert (info["subject"], info["lifecycle"], info["frozen"]) == (default_subject, "STRONG", True)
    assert info["schema"]["subject"] == default_subject and info["schema"]["version"] == 1
    # a WEAK association cannot join a subject a STRONG one owns
    status, body = _assoc(url, {"resourceName": name("t"), "resourceNamespace": ns, "resourceId": uuid.uuid4().hex,
                                "associations": [{"subject": default_subject, "lifecycle": "WEAK"}]})
    assert (status, body["error_code"]) == (409, 40905)
    # frozen: no upsert, no delete without cascading
    status, body = _assoc(url, {"resourceName": topic2, "resourceNamespace": ns,
                                "associations": [{"associationType": "value", "lifecycle": "WEAK",
                                                  "subject": default_subject}]},
                          "PUT", f"/associations/resources/{rid2}")
    assert status == 422 and body["error_code"] == 42212, body
    status, body = call(f"{url}/associations/resources/{rid2}", "DELETE")
    assert (status, body["error_code"]) == (409, 40908)
    assert call(f"{url}/associations/resources/{rid2}?cascadeLifecycle=true", "DELETE") == (204, None)
    assert call(f"{url}/associations/resources/{rid2}") == (200, [])
    assert call(f"{url}/subjects/{default_subject}/versions")[1]["error_code"] == 40401
    # upsert a WEAK one's lifecycle to STRONG; delete it; nothing left to delete is 40410
    status, body = _assoc(url, {"resourceName": topic, "resourceNamespace": ns,
                                "associations": [{"associationType": "value", "lifecycle": "STRONG"}]},
                          "PUT", f"/associations/resources/{rid}")
    assert status == 200 and body["associations"][0]["lifecycle"] == "STRONG", body
    assert call(f"{url}/associations/subjects/{shared}")[1][0]["lifecycle"] == "STRONG"
    assert call(f"{url}/associations/resources/{rid}", "DELETE") == (204, None)
    assert call(f"{url}/subjects/{shared}/versions")[1] == [1]  # not cascaded: the subject stays
    status, body = call(f"{url}/associations/resources/{rid}", "DELETE")
    assert (status, body["error_code"]) == (404, 40410)


def _round_trip(bootstrap_config, topic, ser, de, value):
    p = Producer(bootstrap_config)
    ctx = SerializationContext(topic, MessageField.VALUE)
    p.produce(topic, value=ser(value, ctx))
    assert p.flush(15) == 0
    c = Consumer({"group.id": f"g-{topic}", **bootstrap_config, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, 0, 0)])
    errors = []
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                return m.value(), de(m.value(), ctx)
            if m is not None:
                errors.append(m.error())
        raise AssertionError(f"nothing consumed from {topic}: {errors[:3]}")
    finally:
        c.close()


def test_the_serializers_use_an_association_and_survive_a_restart():
    """confluent-kafka's serializers (default strategy ASSOCIATED) write under the subject a
    WEAK association names for the topic; associations are records in ``_schemas`` and are
    there again after a restart."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        topic, shared = name("readings"), name("catalog") + "-value"
        with EmbeddedBroker(schema_registry=True, data_dir=d) as b:
            url, ns = b.schema_registry_url, b.broker.cluster_id
            assert call(f"{url}/subjects/{shared}/versions", "POST", {"schema": AVRO})[0] == 200
            status, body = _assoc(url, {"resourceName": topic, "resourceNamespace": ns, "resourceId": "r-1",
                                        "associations": [{"subject": shared, "lifecycle": "WEAK"}]})
            assert status == 200, body
            sr = SchemaRegistryClient({"url": url})
            ser = AvroSerializer(sr, AVRO, conf={"auto.register.schemas": False, "use.latest.version": True,
                                                 "subject.name.strategy.conf": {
                                                     "subject.name.strategy.kafka.cluster.id": ns}})
            raw, got = _round_trip(b.client_config, topic, ser, AvroDeserializer(sr), {"v": 1.5})
            assert got == {"v": 1.5}
            assert int.from_bytes(raw[1:5], "big") == sr.get_latest_version(shared).schema_id
            assert call(f"{url}/subjects/{topic}-value/versions")[0] == 404  # nothing under the topic's name
        with EmbeddedBroker(schema_registry=True, data_dir=d) as b:
            found = call(f"{b.schema_registry_url}/associations/resources/-/{topic}")[1]
            assert [(a["subject"], a["resourceId"], a["lifecycle"]) for a in found] == [(shared, "r-1", "WEAK")]


def test_association_batches_answer_each_item_on_its_own(broker):
    """Confluent 8.3.1's ``/associations:batchMutate`` and ``:batchGet`` (plain HTTP: the
    Python client has no batch calls): 207 with one result or error per item; an item's ops
    validated together, then applied one by one (no undo of those before a failing one)."""
    url, ns = broker.schema_registry_url, broker.broker.cluster_id
    shared = name("bshared") + "-value"
    assert call(f"{url}/subjects/{shared}/versions", "POST", {"schema": AVRO})[0] == 200
    topic, rid, other = name("btopic"), uuid.uuid4().hex, uuid.uuid4().hex
    key_subject = f":.{ns}:{topic}-key"
    status, body = call(f"{url}/associations:batchMutate", "POST", {"requests": [
        {"resourceName": topic, "resourceNamespace": ns, "resourceId": rid, "associations": [
            {"opType": "CREATE", "subject": shared, "lifecycle": "WEAK"},
            {"opType": "CREATE", "associationType": "key", "schema": {"schema": '"string"'}}]},
        {"resourceName": "bad.name", "resourceNamespace": ns, "resourceId": other,
         "associations": [{"opType": "DELETE"}]},
        {"resourceName": name("none"), "resourceNamespace": ns, "resourceId": other,
         "associations": [{"opType": "DELETE", "associationType": "key"}]}]})
    assert status == 207, body
    first, bad, nothing = body["results"]
    assert first["result"]["associations"] == [
        {"subject": key_subject, "associationType": "key", "lifecycle": "STRONG", "frozen": True,
         "schema": first["result"]["associations"][0]["schema"]},
        {"subject": shared, "associationType": "value", "lifecycle": "WEAK", "frozen": False}]
    assert first["result"]["associations"][0]["schema"]["subject"] == key_subject
    assert (first["result"]["resourceId"], first["result"]["resourceType"]) == (rid, "topic")
    assert bad == {"error": {"error_code": 42212, "message": "The association specified an invalid value for "
                             "property: 'resourceName', detail: illegal character '.'"}}
    assert "associations" not in nothing["result"] and "error" not in nothing  # nothing to delete: no 40410
    # a later op failing leaves the earlier ones applied, as Confluent (no undo)
    empty = name("bempty") + "-value"
    status, body = call(f"{url}/associations:batchMutate", "POST", {"requests": [
        {"resourceName": topic, "resourceNamespace": ns, "resourceId": rid, "associations": [
            {"opType": "DELETE", "associationType": "key", "cascadeLifecycle": True},
            {"opType": "CREATE", "associationType": "key", "subject": empty, "lifecycle": "WEAK"}]}]})
    assert status == 207 and body["results"] == [{"error": {
        "error_code": 40907, "message": f"No active (non-deleted) version exists for subject '{empty}'"}}], body
    assert call(f"{url}/subjects/{key_subject}/versions")[1]["error_code"] == 40401  # cascaded
    # a dry run writes nothing and answers no associations
    status, body = call(f"{url}/associations:batchMutate?dryRun=true", "POST", {"requests": [
        {"resourceName": topic, "resourceNamespace": ns, "resourceId": rid, "associations": [
            {"opType": "UPSERT", "associationType": "value", "lifecycle": "STRONG"}]}]})
    assert status == 207 and body["results"] == [{"result": {"resourceName": topic, "resourceNamespace": ns,
                                                             "resourceId": rid, "resourceType": "topic"}}], body
    assert call(f"{url}/associations/subjects/{shared}")[1][0]["lifecycle"] == "WEAK"
    # batchGet: by id and by name, with schemas; a query naming nothing is its item's 500
    status, body = call(f"{url}/associations:batchGet?includeSchemas=true", "POST", {"requests": [
        {"resourceId": rid}, {"resourceName": topic, "resourceNamespace": ns, "associationTypes": ["key"]},
        {"resourceName": topic}, {"resourceId": uuid.uuid4().hex, "lifecycle": "STRONG"}]})
    assert status == 207, body
    by_id, by_name, bad, missing = body["results"]
    info, = by_id["result"]["associations"]
    assert (by_id["result"]["resourceName"], info["subject"], info["lifecycle"]) == (topic, shared, "WEAK")
    assert info["schema"]["subject"] == shared and info["schema"]["version"] == 1
    assert by_name["result"] == {"resourceName": topic, "resourceNamespace": ns, "resourceType": "topic"}
    assert bad["error"] == {"error_code": 500, "message": "Error while getting associations: property: "
                            "resourceNamespace; detail: resourceNamespace is required when resourceName is specified"}
    assert set(missing["result"]) == {"resourceId", "resourceType"}
    # what fails a whole body: no requests, an op without its opType
    status, body = call(f"{url}/associations:batchGet", "POST", {"requests": []})
    assert (status, body["error_code"]) == (422, 42212)
    status, body = call(f"{url}/associations:batchMutate", "POST", {"requests": [
        {"resourceName": topic, "resourceNamespace": ns, "resourceId": rid, "associations": [{"subject": "s"}]}]})
    assert (status, body["error_code"]) == (422, 422)
    # the server's paths, not the 8.3 document's stale /associations:batch
    assert call(f"{url}/associations:batch", "POST", {"requests": [{"resourceId": rid}]})[0] == 404


def test_a_subject_with_an_association_is_deleted_only_through_it(broker):
    """Confluent 8.3.1: neither a soft nor a permanent subject delete while the subject has an
    association (40904), nor soft-deleting its last live version (40907) or any version
    permanently (40904); deleting the association (cascadeLifecycle for a STRONG one, which then
    removes the subject) frees it. With confluent-kafka's SchemaRegistryClient."""
    from confluent_kafka.schema_registry import AssociationCreateOrUpdateInfo, AssociationCreateOrUpdateRequest
    url, ns = broker.schema_registry_url, broker.broker.cluster_id
    sr = SchemaRegistryClient({"url": url})
    subject = name("held") + "-value"
    sr.register_schema(subject, Schema(AVRO, "AVRO"))
    sr.register_schema(subject, Schema(AVRO.replace('"double"', '["double", "null"]'), "AVRO"))
    rid = uuid.uuid4().hex
    sr.create_association(AssociationCreateOrUpdateRequest(
        resource_name=name("t"), resource_namespace=ns, resource_id=rid,
        associations=[AssociationCreateOrUpdateInfo(subject=subject, lifecycle="WEAK")]))

    def refused(fn, *args, **kwargs):
        with pytest.raises(SchemaRegistryError) as e:
            fn(*args, **kwargs)
        return e.value.http_status_code, e.value.error_code

    assert refused(sr.delete_subject, subject) == (409, 40904)
    assert refused(sr.delete_subject, subject, permanent=True) == (409, 40904)
    assert sr.delete_version(subject, 1) == 1  # another version stays live
    assert refused(sr.delete_version, subject, 2) == (409, 40907)
    assert refused(sr.delete_version, subject, 1, permanent=True) == (409, 40904)
    sr.delete_associations(rid)
    assert sr.delete_subject(subject) == [2]
    assert sr.delete_subject(subject, permanent=True) == [1, 2]
    # STRONG: the association owns the subject; cascading deletes both
    topic, rid2 = name("owned"), uuid.uuid4().hex
    answer = sr.create_association(AssociationCreateOrUpdateRequest(
        resource_name=topic, resource_namespace=ns, resource_id=rid2,
        associations=[AssociationCreateOrUpdateInfo(schema=Schema(AVRO, "AVRO"))]))
    owned = answer.associations[0].subject
    assert owned == f":.{ns}:{topic}-value"
    assert refused(sr.delete_subject, owned) == (409, 40904)
    assert refused(sr.delete_associations, rid2) == (409, 40908)  # frozen: only by cascading
    sr.delete_associations(rid2, cascade_lifecycle=True)
    assert owned not in sr.get_subjects() and sr.get_associations_by_resource_name(topic, ns) == []
    assert call(f"{url}/subjects?deleted=true")[1].count(owned) == 0  # permanently


def test_associations_enable_false_serves_no_association_route():
    with EmbeddedBroker(schema_registry=True, overrides={"associations.enable": "false"}) as b:
        url = b.schema_registry_url
        assert call(f"{url}/associations/resources/-/t")[0] == 404
        assert _assoc(url, {"resourceName": "t", "resourceNamespace": "n", "resourceId": "r",
                            "associations": [{"subject": "s", "lifecycle": "WEAK"}]})[0] == 404
        for batch in ("batchGet", "batchMutate"):
            assert call(f"{url}/associations:{batch}", "POST", {"requests": [{"resourceId": "r"}]})[0] == 404
        # the serializers then fall back to the topic's subject, as against Confluent with the switch off
        sr = SchemaRegistryClient({"url": url})
        raw, got = _round_trip(b.client_config, "plain", AvroSerializer(sr, AVRO), AvroDeserializer(sr), {"v": 2.0})
        assert got == {"v": 2.0} and sr.get_latest_version("plain-value").version == 1


# ---- ACLs: an ordinary user through the serializers -----------------------------------------------
def test_an_ordinary_user_registers_produces_and_consumes_through_every_serializer_under_acls():
    """The broker's ACLs on (StandardAuthorizer), a user who is no super user with READ and
    WRITE on its topics and READ on its groups: confluent-kafka's Avro, JSON and Protobuf
    serializers (default strategy ASSOCIATED: /associations first) register, produce and
    consume; the association lookups answer the user's own associations (none here, so the
    topic's subject); a user without the topic's ACLs is still refused (40301)."""
    from confluent_kafka.admin import (
        AclBinding, AclOperation, AclPermissionType, AdminClient, NewTopic, ResourcePatternType, ResourceType,
        ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion,
    )
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
    with EmbeddedBroker(security={"protocol": "SASL_PLAINTEXT", "mechanism": "SCRAM-SHA-256", "acls": True},
                        schema_registry=True) as b:
        url, ns = b.schema_registry_url, b.broker.cluster_id
        admin = AdminClient(b.client_config)
        for user in ("bob", "eve"):
            for f in admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
                    user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), f"{user}-secret".encode())]).values():
                f.result(10)
        topics = {"avro": "bob-avro", "json": "bob-json", "protobuf": "bob-pb"}
        for f in admin.create_topics([NewTopic(t, 1, 1) for t in topics.values()]).values():
            f.result(10)
        acls = [AclBinding(ResourceType.TOPIC, "bob-", ResourcePatternType.PREFIXED, "User:bob", "*", op,
                           AclPermissionType.ALLOW) for op in (AclOperation.READ, AclOperation.WRITE)]
        acls.append(AclBinding(ResourceType.GROUP, "bob-", ResourcePatternType.PREFIXED, "User:bob", "*",
                               AclOperation.READ, AclPermissionType.ALLOW))
        for f in admin.create_acls(acls).values():
            f.result(10)

        def client(user):
            conf = {**b.client_config, "sasl.username": user, "sasl.password": f"{user}-secret"}
            sr = SchemaRegistryClient({"url": url, "basic.auth.user.info": f"{user}:{user}-secret"})
            return conf, sr

        conf, sr = client("bob")
        conf = {**conf, "group.id": "bob-readers"}
        # the lookup the serializers make first: an answer, not a 403
        status, found = call(f"{url}/associations/resources/{ns}/bob-avro?resourceType=topic&associationType=value",
                             auth=("bob", "bob-secret"))
        assert (status, found) == (200, [])
        json_schema = json.dumps({"type": "object", "properties": {"sensor": {"type": "string"},
                                                                  "value": {"type": "number"}}})
        reading = reading_message_class("acl")
        cases = [
            ("avro", AvroSerializer(sr, json.dumps({"type": "record", "name": "Reading", "fields": [
                {"name": "sensor", "type": "string"}, {"name": "value", "type": "double"}]})), AvroDeserializer(sr),
             {"sensor": "t1", "value": 1.5}),
            ("json", JSONSerializer(json_schema, sr), JSONDeserializer(json_schema, schema_registry_client=sr),
             {"sensor": "t2", "value": 2.5}),
            ("protobuf", ProtobufSerializer(reading, sr, {"use.deprecated.format": False}),
             ProtobufDeserializer(reading, {"use.deprecated.format": False}, sr), reading(sensor="t3", value=3.5)),
        ]
        for kind, ser, de, value in cases:
            topic = topics[kind]
            raw, got = _round_trip(conf, topic, ser, de, value)
            assert got == value, kind
            # registered by bob under the topic's subject, and that id is on the wire
            assert int.from_bytes(raw[1:5], "big") == sr.get_latest_version(f"{topic}-value").schema_id, kind
        # an association bob may write, on his own subject: the serializer then follows it
        status, body = call(f"{url}/associations", "POST", {
            "resourceName": "bob-avro", "resourceNamespace": ns, "resourceId": "bob-avro-id",
            "associations": [{"subject": "bob-json-value", "lifecycle": "WEAK"}]}, auth=("bob", "bob-secret"))
        assert status == 200, body
        status, body = call(f"{url}/associations", "POST", {
            "resourceName": "bob-avro", "resourceNamespace": ns, "resourceId": "bob-avro-id2",
            "associations": [{"subject": "secret-value", "lifecycle": "WEAK"}]}, auth=("bob", "bob-secret"))
        assert (status, body["error_code"]) == (403, 40301) and "SUBJECT_WRITE" in body["message"]
        # a batch decides each item as its single route: bob's own is applied, the other denied
        status, body = call(f"{url}/associations:batchMutate", "POST", {"requests": [
            {"resourceName": "bob-pb", "resourceNamespace": ns, "resourceId": "bob-pb-id",
             "associations": [{"opType": "CREATE", "subject": "bob-pb-value", "lifecycle": "WEAK"}]},
            {"resourceName": "bob-avro", "resourceNamespace": ns, "resourceId": "bob-avro-id3",
             "associations": [{"opType": "CREATE", "subject": "secret-value", "lifecycle": "WEAK"}]}]},
            auth=("bob", "bob-secret"))
        assert status == 207, body
        mine, denied_item = body["results"]
        assert mine["result"]["associations"][0]["subject"] == "bob-pb-value"
        assert denied_item == {"error": {"error_code": 40301,
                                         "message": "User is denied operation SUBJECT_WRITE on Subject: secret-value"}}
        query = {"requests": [{"resourceId": "bob-pb-id"}]}
        status, body = call(f"{url}/associations:batchGet", "POST", query, auth=("bob", "bob-secret"))
        assert status == 207 and body["results"][0]["result"]["associations"][0]["subject"] == "bob-pb-value"
        # server metadata needs only authentication; the global config a super user
        assert call(f"{url}/v1/metadata/version", auth=("bob", "bob-secret"))[0] == 200
        assert call(f"{url}/v1/metadata/deployment", auth=("bob", "bob-secret")) == (200, {"attributes": []})
        assert call(f"{url}/config", auth=("bob", "bob-secret"))[1]["error_code"] == 40301
        # eve has no ACLs: the lookup answers (nothing of hers), the registration is refused
        eve_conf, eve_sr = client("eve")
        status, found = call(f"{url}/associations/resources/-/bob-avro", auth=("eve", "eve-secret"))
        assert (status, found) == (200, [])  # bob's association is not eve's to see
        status, body = call(f"{url}/associations:batchGet", "POST", query, auth=("eve", "eve-secret"))
        assert (status, body) == (207, {"results": [{"result": {"resourceId": "bob-pb-id", "resourceType": "topic"}}]})
        status, body = call(f"{url}/associations:batchMutate", "POST", {"requests": [
            {"resourceName": "bob-pb", "resourceNamespace": ns, "resourceId": "bob-pb-id",
             "associations": [{"opType": "DELETE"}]}]}, auth=("eve", "eve-secret"))
        assert body["results"][0]["error"] == {
            "error_code": 40301, "message": "User is denied operation SUBJECT_DELETE on Subject: bob-pb-value"}
        with pytest.raises(SchemaRegistryError) as denied:
            AvroSerializer(eve_sr, '"string"')("x", SerializationContext("bob-avro", MessageField.VALUE))
        assert (denied.value.http_status_code, denied.value.error_code) == (403, 40301)
