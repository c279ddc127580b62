"""The registry's HTTP answers where Confluent's server (the release named in the README) is the
reference: subject names with any character Confluent allows, trailing slashes, Accept
negotiation, typed PUT /config bodies, READONLY_OVERRIDE, the endpoints served since issue 34,
and ``authentication.method``. Plain HTTP and confluent-kafka's SchemaRegistryClient against a
real broker."""
from __future__ import annotations

import base64
import json
import urllib.error
import urllib.parse
import urllib.request
import uuid

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from hourglass.embedded import EmbeddedBroker

CT = "application/vnd.schemaregistry.v1+json"
V1 = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})
V2 = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"},
                                                           {"name": "b", "type": "string", "default": ""}]})


@pytest.fixture(scope="module")
def broker():
    with EmbeddedBroker(schema_registry=True) as b:
        yield b


def call(url, *, method="GET", body=None, accept=None, auth=None):
    """(status, Content-Type, parsed body or None) of one request."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, method=method, data=data)
    if data is not None:
        req.add_header("Content-Type", CT)
    if accept is not None:
        req.add_header("Accept", accept)
    if auth is not None:
        req.add_header("Authorization", "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            raw = r.read()
            return r.status, r.headers.get("Content-Type"), json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        raw = e.read()
        return e.code, e.headers.get("Content-Type"), json.loads(raw) if raw else None


def q(subject: str) -> str:
    return urllib.parse.quote(subject, safe="")


@pytest.mark.parametrize("name", ["{curly}", "a}b{c", "with space", "dots.and:colons", "ünïcödé",
                                  "per%cent", "q?mark#hash", "plus+and&amp", "[brackets]"])
def test_subject_names_with_any_allowed_character(broker, name):
    url = broker.schema_registry_url
    s = f"{name}-{uuid.uuid4().hex[:6]}"
    sr = SchemaRegistryClient({"url": url})  # it URL-encodes the subject
    sid = sr.register_schema(s, Schema(V1, "AVRO"))
    assert s in sr.get_subjects()
    assert sr.get_latest_version(s).schema_id == sid
    assert sr.lookup_schema(s, Schema(V1, "AVRO")).version == 1
    assert sr.test_compatibility(s, Schema(V2, "AVRO")) is True
    assert sr.set_compatibility(s, "FULL") == {"compatibility": "FULL"}
    assert call(f"{url}/config/{q(s)}")[2] == {"compatibilityLevel": "FULL"}
    assert call(f"{url}/mode/{q(s)}", method="PUT", body={"mode": "READONLY"})[2] == {"mode": "READONLY"}
    assert call(f"{url}/mode/{q(s)}", method="DELETE")[2] == {"mode": "READONLY"}
    assert call(f"{url}/subjects/{q(s)}/versions/1")[2]["subject"] == s
    assert sr.delete_subject(s) == [1]


def test_control_characters_in_a_subject_are_refused_42208(broker):
    url = broker.schema_registry_url
    bad, bell = q("bad\u0001subject"), q("bad\u0007")
    status, _, body = call(f"{url}/subjects/{bad}/versions", method="POST", body={"schema": V1})
    assert (status, body["error_code"]) == (422, 42208)
    assert call(f"{url}/config/{bell}", method="PUT", body={"compatibility": "NONE"})[2]["error_code"] == 42208


def test_trailing_slash_is_the_same_resource(broker):
    url = broker.schema_registry_url
    s = f"slash-{uuid.uuid4().hex[:8]}"
    assert call(f"{url}/subjects/{s}/versions/", method="POST", body={"schema": V1})[0] == 200
    assert s in call(f"{url}/subjects/")[2]
    assert call(f"{url}/subjects/{s}/versions/")[2] == [1]
    assert call(f"{url}/config/")[2] == call(f"{url}/config")[2]
    assert call(f"{url}/config/{s}/", method="PUT", body={"compatibility": "NONE"})[2] == {"compatibility": "NONE"}
    assert call(f"{url}/config/{s}/")[2] == {"compatibilityLevel": "NONE"}
    assert call(f"{url}/mode/")[2] == {"mode": "READWRITE"}
    assert call(f"{url}/schemas/types/")[2] == ["JSON", "PROTOBUF", "AVRO"]
    assert call(f"{url}/compatibility/subjects/{s}/versions/latest/", method="POST",
                body={"schema": V2})[2] == {"is_compatible": True}


def test_compatibility_against_an_unknown_version_is_40402(broker):
    url = broker.schema_registry_url
    s = f"cv-{uuid.uuid4().hex[:8]}"
    assert call(f"{url}/subjects/{s}/versions", method="POST", body={"schema": V1})[0] == 200
    for subject, version in ((s, 7), (f"nosuch-{uuid.uuid4().hex[:6]}", 1)):
        status, _, body = call(f"{url}/compatibility/subjects/{subject}/versions/{version}", method="POST",
                               body={"schema": V2})
        assert (status, body) == (404, {"error_code": 40402, "message": f"Version {version} not found."})
    # latest of an unknown subject: compatible with nothing, as Confluent answers
    assert call(f"{url}/compatibility/subjects/nosuch-{uuid.uuid4().hex[:6]}/versions/latest", method="POST",
                body={"schema": V2})[2] == {"is_compatible": True}


@pytest.mark.parametrize("accept, expected", [
    (None, CT),
    ("*/*", CT),
    ("application/json", "application/json"),
    ("application/vnd.schemaregistry+json", "application/vnd.schemaregistry+json"),
    ("application/vnd.schemaregistry.v1+json", CT),
    ("application/*", CT),
    ("text/html, application/json;q=0.8", "application/json"),
    ("application/json, application/vnd.schemaregistry.v1+json;q=0.1", "application/json"),
    ("application/vnd.schemaregistry.v2+json", None),
    ("text/plain", None),
    ("application/json;q=0", None),
])
def test_accept_negotiation(broker, accept, expected):
    url = broker.schema_registry_url
    status, ctype, body = call(f"{url}/subjects", accept=accept)
    if expected is None:
        assert (status, body) == (406, {"error_code": 406, "message": "HTTP 406 Not Acceptable"})
    else:
        assert (status, ctype) == (200, expected)
        status, ctype, body = call(f"{url}/schemas/ids/999999", accept=accept)  # errors too
        assert (status, ctype, body["error_code"]) == (404, expected, 40403)


def test_put_config_reads_confluents_typed_model(broker):
    url = broker.schema_registry_url
    s = f"cfg-{uuid.uuid4().hex[:8]}"
    rule = {"name": "checkLen", "type": "CEL", "expr": "size(message.a) < 10", "unknownRuleKey": 1}
    body = {"compatibility": "full", "normalize": "true", "unknownTop": {"x": 1},
            "defaultMetadata": {"properties": {"owner": "team-a", "b": 2}, "junk": [1, 2]},
            "defaultRuleSet": {"domainRules": [rule], "junk": True}}
    status, _, echo = call(f"{url}/config/{s}", method="PUT", body=body)
    typed_rule = {"name": "checkLen", "kind": "TRANSFORM", "mode": "WRITEREAD", "type": "CEL",
                  "expr": "size(message.a) < 10", "disabled": False}
    assert status == 200
    assert echo == {"normalize": True, "compatibility": "FULL",
                    "defaultMetadata": {"properties": {"b": "2", "owner": "team-a"}},
                    "defaultRuleSet": {"domainRules": [typed_rule]}}
    assert call(f"{url}/config/{s}")[2] == {"normalize": True, "compatibilityLevel": "FULL",
                                            "defaultMetadata": {"properties": {"b": "2", "owner": "team-a"}},
                                            "defaultRuleSet": {"domainRules": [typed_rule]}}
    bad = [
        ({"defaultRuleSet": {"domainRules": [{**rule, "disabled": "AAA"}]}}, 422),
        ({"normalize": "yes"}, 422),
        ({"normalize": {}}, 422),
        ({"alias": ["x"]}, 422),
        ({"defaultMetadata": {"properties": {"k": {"nested": 1}}}}, 422),
        ({"defaultMetadata": "text"}, 422),
        ({"defaultMetadata": {"tags": {"f": "not-a-list"}}}, 422),
        ({"defaultRuleSet": {"domainRules": [{**rule, "kind": "SIDEWAYS"}]}}, 422),
        ({"defaultRuleSet": {"enableAt": "MOON"}}, 422),
        ({"compatibility": "SIDEWAYS"}, 42203),
        ({"defaultRuleSet": {"domainRules": [{"type": "CEL"}]}}, 42210),  # no name
        ({"defaultRuleSet": {"domainRules": [{"name": "1x", "type": "CEL"}]}}, 42210),
        ({"defaultRuleSet": {"domainRules": [{"name": "x"}]}}, 42210),  # no type
        ({"defaultRuleSet": {"domainRules": [rule, rule]}}, 42210),  # duplicate name
        ({"defaultRuleSet": {"migrationRules": [{**rule, "mode": "WRITE"}]}}, 42210),
        ({"defaultRuleSet": {"domainRules": [{**rule, "mode": "WRITE", "onFailure": "ERROR,NONE"}]}}, 42210),
    ]
    for b, code in bad:
        for path in (f"/config/{s}", "/config"):
            status, _, answer = call(url + path, method="PUT", body=b)
            assert (status, answer["error_code"]) == (422, code), (path, b, answer)
    # nothing bad was stored
    assert call(f"{url}/config/{s}")[2]["defaultRuleSet"] == {"domainRules": [typed_rule]}
    assert "defaultRuleSet" not in call(f"{url}/config")[2]
    # null clears one property, as Confluent's Optional.empty()
    assert call(f"{url}/config/{s}", method="PUT", body={"defaultRuleSet": None})[0] == 200
    assert "defaultRuleSet" not in call(f"{url}/config/{s}")[2]
    sr = SchemaRegistryClient({"url": url})
    assert sr.get_compatibility(s) == "FULL"


def test_readonly_override_is_accepted_as_read_only(broker):
    url = broker.schema_registry_url
    s = f"ro-{uuid.uuid4().hex[:8]}"
    assert call(f"{url}/subjects/{s}/versions", method="POST", body={"schema": V1})[0] == 200
    assert call(f"{url}/mode/{s}", method="PUT", body={"mode": "READONLY_OVERRIDE"})[2] == {"mode": "READONLY_OVERRIDE"}
    assert call(f"{url}/mode/{s}")[2] == {"mode": "READONLY_OVERRIDE"}
    status, _, body = call(f"{url}/subjects/{s}/versions", method="POST", body={"schema": V2})
    assert (status, body["error_code"]) == (422, 42205) and "read-only" in body["message"]
    assert call(f"{url}/subjects/{s}", method="DELETE")[2]["error_code"] == 42205
    assert call(f"{url}/mode/{s}", method="DELETE")[2] == {"mode": "READONLY_OVERRIDE"}
    assert call(f"{url}/subjects/{s}/versions", method="POST", body={"schema": V2})[0] == 200


def test_endpoints_served_since_issue_34():
    with EmbeddedBroker(schema_registry=True) as b:  # its own: global mode and contexts change
        url = b.schema_registry_url
        status, ctype, body = call(f"{url}/v1/metadata/version")
        assert status == 200 and ctype == CT and set(body) == {"version", "commitId"} and body["version"]
        assert call(f"{url}/v1/metadata/deployment")[:3] == (200, CT, {"attributes": []})
        # an empty default context may be deleted; one holding a subject (even soft-deleted) may not
        assert call(f"{url}/contexts/.", method="DELETE")[0] == 204
        sid = call(f"{url}/subjects/g-value/versions", method="POST", body={"schema": V1})[2]["id"]
        status, _, body = call(f"{url}/contexts/.", method="DELETE")
        assert (status, body) == (422, {"error_code": 42211, "message": "The specified context '.' is not empty."})
        assert call(f"{url}/contexts/:.other:", method="DELETE")[0] == 204
        assert call(f"{url}/contexts")[2] == ["."]
        # the ids of a GUID, per context
        guid = call(f"{url}/subjects/g-value/versions/1")[2]["guid"]
        assert call(f"{url}/schemas/guids/{guid}/ids")[2] == [{"context": ".", "id": sid}]
        assert call(f"{url}/schemas/guids/{uuid.uuid4()}/ids")[2] == []
        # DELETE /mode: the global mode goes back to the default; none set is 40401
        status, _, body = call(f"{url}/mode", method="DELETE")
        assert (status, body) == (404, {"error_code": 40401, "message": "Subject 'null' not found."})
        assert call(f"{url}/mode", method="PUT", body={"mode": "READONLY"})[2] == {"mode": "READONLY"}
        assert call(f"{url}/mode/g-value", method="PUT", body={"mode": "READWRITE"})[0] == 200
        assert call(f"{url}/mode", method="DELETE")[2] == {"mode": "READONLY"}
        assert call(f"{url}/mode")[2] == {"mode": "READWRITE"}
        assert call(f"{url}/mode/g-value")[2] == {"mode": "READWRITE"}  # not recursive: kept
        assert call(f"{url}/mode", method="PUT", body={"mode": "READONLY"})[0] == 200
        assert call(f"{url}/mode?recursive=true", method="DELETE")[2] == {"mode": "READONLY"}
        assert call(f"{url}/mode/g-value")[2]["error_code"] == 40409
        assert call(f"{url}/mode/g-value", method="DELETE")[2]["error_code"] == 40401
        # associations: served as by Confluent 8.3 (associations.enable=true, its default; the
        # switch and the operations: tests/registry/test_confluent_83.py)
        for method, path, want in (("GET", "/associations/subjects/g-value", (200, None)),
                                   ("POST", "/associations", (422, 42212)),
                                   ("GET", "/associations/resources/lkc-1", (200, None)),
                                   ("DELETE", "/associations/resources/lkc-1", (404, 40410)),
                                   ("PUT", "/associations/resources/lkc-1", (422, 42212))):
            status, _, body = call(url + path, method=method, body={} if method in ("POST", "PUT") else None)
            assert (status, body if want[1] is None else body["error_code"]) == (want[0], want[1] or []), path


def test_authentication_method_none_opens_the_registry_beside_a_sasl_listener():
    sec = {"protocol": "SASL_PLAINTEXT", "mechanism": "SCRAM-SHA-256"}
    with EmbeddedBroker({"authentication.method": "NONE"}, security=sec, schema_registry=True) as b:
        url = b.schema_registry_url
        assert call(f"{url}/subjects/open-value/versions", method="POST", body={"schema": V1})[2]["id"] == 1
        assert SchemaRegistryClient({"url": url}).get_subjects() == ["open-value"]
    with EmbeddedBroker({"authentication.method": "BASIC"}, schema_registry=True) as b:  # no SASL listener
        status, _, body = call(f"{b.schema_registry_url}/subjects")
        assert (status, body["error_code"]) == (401, 401)
    with EmbeddedBroker(security=sec, schema_registry=True) as b:  # unset: basic, as before
        assert call(f"{b.schema_registry_url}/subjects")[0] == 401
        assert call(f"{b.schema_registry_url}/subjects", auth=(b.security.user, b.security.password))[0] == 200


def test_authentication_method_is_checked_at_start():
    with pytest.raises(Exception, match="authentication.method"):
        EmbeddedBroker({"authentication.method": "KERBEROS"}, schema_registry=True).start()


def test_avro_text_kept_before_avro_javas_form_is_still_found():
    """A schema registered with the text this registry kept before it wrote Avro-Java's form
    ("type" before "name") is found again by lookup and by a new registration of the same schema."""
    from confluent_kafka import Producer
    with EmbeddedBroker(schema_registry=True) as b:
        url = b.schema_registry_url
        assert call(f"{url}/subjects")[2] == []
        old_text = '{"type":"record","name":"R","fields":[{"type":"int","name":"a"}]}'
        value = {"subject": "old-value", "version": 1, "id": 3, "schema": old_text, "deleted": False}
        p = Producer(b.client_config)
        p.produce("_schemas", key=b'{"keytype":"SCHEMA","subject":"old-value","version":1,"magic":1}',
                  value=json.dumps(value, separators=(",", ":")).encode(), partition=0)
        assert p.flush(10) == 0
        del p  # closed while the broker still runs
        sr = SchemaRegistryClient({"url": url})
        assert sr.lookup_schema("old-value", Schema(V1, "AVRO")).schema_id == 3
        assert sr.register_schema("old-value", Schema(V1, "AVRO")) == 3
        assert call(f"{url}/subjects/old-value/versions")[2] == [1]
