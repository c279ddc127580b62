"""REST v3 on a broker with SASL users and ACLs: basic auth against the broker's own users,
requests act as that principal, a denied user gets Confluent's 403 error JSON (never data),
and no secret reaches a response or the log."""
from __future__ import annotations

import json
import logging

import pytest
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient, ResourcePatternType,
                                   ResourceType, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion)

from hourglass.embedded import EmbeddedBroker
from tests.helpers.rest_v3 import Rest

BOB_PASSWORD = "bob-s3cret-password"


def _error(resp, status, code):
    s, body, _ = resp
    assert s == status, (s, body)
    assert set(body) == {"error_code", "message"} and body["error_code"] == code, body


@pytest.fixture(scope="module")
def secured():
    with EmbeddedBroker(security={"protocol": "SASL_PLAINTEXT", "mechanism": "SCRAM-SHA-256", "acls": True},
                        console=True) as b:
        admin = AdminClient(b.client_config)
        f = admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
            "bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), BOB_PASSWORD.encode())])
        for fut in f.values():
            fut.result(10)
        yield b, admin


def test_denied_user_sees_a_denial_not_data(secured, caplog):
    caplog.set_level(logging.DEBUG)
    b, admin = secured
    alice = Rest(b.console_url, b.broker.cluster_id, auth=(b.security.user, b.security.password))
    bob = Rest(b.console_url, b.broker.cluster_id, auth=("bob", BOB_PASSWORD))
    nobody = Rest(b.console_url, b.broker.cluster_id)
    alice.ok("POST", alice.c + "/topics", {"topic_name": "secret", "partitions_count": 1}, 201)
    alice.ok("POST", alice.c + "/topics/secret/records", {"value": {"type": "STRING", "data": "classified"}})

    # no credentials, or wrong ones: 401 with a basic challenge
    s, body, headers = nobody.get(nobody.c + "/topics")
    assert s == 401 and body["error_code"] == 401 and headers["WWW-Authenticate"].startswith("Basic")
    assert Rest(b.console_url, b.broker.cluster_id, auth=("bob", "wrong")).get(bob.c + "/topics")[0] == 401

    # bob has no ACL: listings leave the topic out, naming it is a 403 with no data
    assert [t["topic_name"] for t in bob.ok("GET", bob.c + "/topics")["data"]] == []
    assert bob.ok("GET", bob.c + "/topic-summaries")["data"] == []
    for path in ("/topics/secret", "/topics/secret/partitions", "/topics/secret/partitions/0",
                 "/topics/secret/configs", "/topics/secret/configs/retention.ms",
                 "/topics/secret/partitions/0/records?position=beginning",
                 "/topics/secret/partitions/0/records?from=0", "/topics/secret/partitions/0/segments",
                 "/acls", "/scram-users", "/brokers/1/configs", "/broker-configs",
                 "/topics/secret/partitions/0/replicas"):
        resp = bob.get(bob.c + path)
        _error(resp, 403, 40301)
        assert "classified" not in json.dumps(resp[1])
    _error(bob.call("POST", bob.c + "/topics/secret/records", {"value": {"type": "STRING", "data": "x"}}), 403, 40301)
    _error(bob.call("POST", bob.c + "/topics", {"topic_name": "bobs"}), 403, 40301)
    _error(bob.call("DELETE", bob.c + "/topics/secret"), 403, 40301)
    _error(bob.call("PUT", bob.c + "/topics/secret/configs/retention.ms", {"value": "1"}), 403, 40301)
    _error(bob.call("POST", bob.c + "/consumer-groups/g/offsets:reset", {"position": "earliest", "topics": ["secret"]}),
           403, 40301)
    assert bob.ok("GET", bob.c + "/consumer-groups")["data"] == []

    # READ and DESCRIBE on the topic: bob reads it, still may not write it
    f = admin.create_acls([AclBinding(ResourceType.TOPIC, "secret", ResourcePatternType.LITERAL, "User:bob", "*",
                                      op, AclPermissionType.ALLOW) for op in (AclOperation.READ, AclOperation.DESCRIBE)])
    for fut in f.values():
        fut.result(10)
    assert [t["topic_name"] for t in bob.ok("GET", bob.c + "/topics")["data"]] == ["secret"]
    page = bob.ok("GET", bob.c + "/topics/secret/partitions/0/records?position=beginning")
    assert [r["value"]["text"] for r in page["data"]] == ["classified"]
    _error(bob.call("POST", bob.c + "/topics/secret/records", {"value": {"type": "STRING", "data": "x"}}), 403, 40301)

    # alice (a super user) sees the ACLs and the users; never a secret
    acls = alice.ok("GET", alice.c + "/acls?principal=User:bob")["data"]
    assert sorted(a["operation"] for a in acls) == ["DESCRIBE", "READ"]
    assert all(a["kind"] == "KafkaAcl" and a["resource_name"] == "secret" and a["permission"] == "ALLOW" for a in acls)
    users = alice.ok("GET", alice.c + "/scram-users")["data"]
    assert {u["user"]: [m["mechanism"] for m in u["mechanisms"]] for u in users} == {
        "alice": ["SCRAM-SHA-256"], "bob": ["SCRAM-SHA-256"]}
    text = json.dumps(users)
    assert "salt" not in text and "key" not in text and BOB_PASSWORD not in text
    assert BOB_PASSWORD not in caplog.text and b.security.password not in caplog.text


def test_broker_configs_never_show_a_secret():
    # PLAIN users' passwords live in the listener's JAAS config, a broker config
    with EmbeddedBroker(security={"protocol": "SASL_SSL", "mechanism": "PLAIN", "acls": True}, console=True) as b:
        alice = Rest(b.console_url, b.broker.cluster_id, auth=(b.security.user, b.security.password))
        s, body, _ = alice.get(alice.c + "/brokers/1/configs")
        assert s == 200 and body["data"]
        text = json.dumps(body)
        assert b.security.password not in text
        sensitive = [c for c in body["data"] if c["is_sensitive"]]
        assert all(c["value"] is None and all(x["value"] is None for x in c["synonyms"]) for c in sensitive)


def test_schemas_follow_the_registry_acl_rules():
    """Producing with a schema registered under another topic's subject needs READ on that
    topic, registering needs WRITE on the subject's topic, as the registry's own routes."""
    from confluent_kafka.admin import AclBinding as AB
    avro = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})
    with EmbeddedBroker(security={"protocol": "SASL_PLAINTEXT", "mechanism": "SCRAM-SHA-256", "acls": True},
                        console=True, schema_registry=True) as b:
        admin = AdminClient(b.client_config)
        for fut in admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
                "bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), BOB_PASSWORD.encode())]).values():
            fut.result(10)
        alice = Rest(b.console_url, b.broker.cluster_id, auth=(b.security.user, b.security.password))
        bob = Rest(b.console_url, b.broker.cluster_id, auth=("bob", BOB_PASSWORD))
        for t in ("secret", "mine"):
            alice.ok("POST", alice.c + "/topics", {"topic_name": t, "partitions_count": 1}, 201)
        alice.ok("POST", alice.c + "/topics/secret/records", {"value": {"type": "AVRO", "schema": avro, "data": {"a": 1}}})
        for fut in admin.create_acls([AB(ResourceType.TOPIC, "mine", ResourcePatternType.LITERAL, "User:bob", "*", op,
                                         AclPermissionType.ALLOW)
                                      for op in (AclOperation.WRITE, AclOperation.READ, AclOperation.DESCRIBE)]).values():
            fut.result(10)
        page = alice.ok("GET", alice.c + "/topics/secret/partitions/0/records?offset=0")["data"]
        schema_id = page[0]["value"]["schema"]["schema_id"]
        # bob may write "mine" but not read "secret": its schema id is not his to use
        s, body, _ = bob.call("POST", bob.c + "/topics/mine/records", {"value": {"schema_id": schema_id, "data": {"a": 2}}})
        assert (s, body["error_code"]) == (403, 40301), body
        # registering under his own topic's subject is fine, and reading it back decodes
        bob.ok("POST", bob.c + "/topics/mine/records", {"value": {"type": "AVRO", "schema": avro, "data": {"a": 3}}})
        mine = bob.ok("GET", bob.c + "/topics/mine/partitions/0/records?offset=0")["data"]
        assert mine[0]["value"]["schema"]["data"] == {"a": 3} and mine[0]["value"]["schema"]["subject"] == "mine-value"
        # registering under "secret-value" (a subject strategy naming another topic) is refused
        s, body, _ = bob.call("POST", bob.c + "/topics/mine/records", {"value": {
            "type": "AVRO", "schema": avro, "subject": "secret-value", "data": {"a": 4}}})
        assert (s, body["error_code"]) == (403, 40301), body
