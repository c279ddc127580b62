"""REST v3 as Confluent's v3 OpenAPI document describes it, for what issue 34 found missing:
ACL create/delete/batch, the cluster-wide and per-broker dynamic configs (``broker-configs``,
``brokers/{id}/configs`` writes, ``brokers/-/configs``), ``topics/-/configs``, PATCH of a
topic's partition count, ``partitions/{p}/offset``, ``records:batch``, a lag summary of a
group with no members, ``validate_only`` type-checked, and 405 answers naming the allowed
methods (the registry's too: the same HTTP plumbing). Plain HTTP against a real broker; every
write is checked through the Kafka protocol with confluent-kafka's AdminClient."""
from __future__ import annotations

import urllib.request

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                   ConfigResource, ResourcePatternType, ResourceType)

from hourglass.embedded import EmbeddedBroker
from tests.helpers.rest_v3 import Rest

pytestmark = pytest.mark.xdist_group("rest_v3_conformance")


@pytest.fixture(scope="module")
def hg():
    with EmbeddedBroker(console=True, schema_registry=True) as b:
        yield b


@pytest.fixture(scope="module")
def rest(hg):
    return Rest(hg.console_url, hg.broker.cluster_id)


@pytest.fixture(scope="module")
def admin(hg):
    return AdminClient({"bootstrap.servers": hg.bootstrap_servers})


def _error(resp, status: int, code: int | None = None) -> dict:
    s, body, _ = resp
    assert s == status, (s, body)
    assert set(body) == {"error_code", "message"}, body
    if code is not None:
        assert body["error_code"] == code, body
    return body


def _broker_config(admin, name: str, broker: str = "1"):
    res = ConfigResource(ResourceType.BROKER, broker)
    return admin.describe_configs([res])[res].result(10)[name]


# ---- 405 ------------------------------------------------------------------------------------

def test_405_names_the_allowed_methods_on_both_services(hg, rest):
    for url, method, allowed in (
            (hg.console_url + "/v3/clusters", "DELETE", {"GET"}),
            (hg.console_url + rest.c + "/topics", "PUT", {"GET", "POST"}),
            (hg.console_url + rest.c + "/broker-configs/log.retention.ms", "POST", {"GET", "PUT", "DELETE"}),
            (hg.schema_registry_url + "/subjects", "DELETE", {"GET"}),
            (hg.schema_registry_url + "/config", "POST", {"GET", "PUT"})):
        req = urllib.request.Request(url, method=method, data=b"{}" if method in ("PUT", "POST") else None)
        try:
            urllib.request.urlopen(req, timeout=10)
            raise AssertionError(f"{method} {url} answered 2xx")
        except urllib.error.HTTPError as e:
            assert e.code == 405, (url, e.code)
            got = {m.strip() for m in (e.headers.get("Allow") or "").split(",") if m.strip()}
            assert allowed <= got and method not in got, (url, e.headers.get("Allow"))


# ---- configs --------------------------------------------------------------------------------

def test_cluster_wide_dynamic_broker_configs(rest, admin):
    c = rest.c
    # what the cluster level holds from the start (Kafka 4.1+ writes min.insync.replicas there)
    before = [(x["name"], x["value"]) for x in rest.ok("GET", c + "/broker-configs")["data"]]
    assert "log.retention.ms" not in dict(before)
    _error(rest.get(c + "/broker-configs/log.retention.ms"), 404)
    rest.ok("PUT", c + "/broker-configs/log.retention.ms", {"value": "86400000"}, 204)
    got = rest.ok("GET", c + "/broker-configs/log.retention.ms")
    assert got["kind"] == "KafkaClusterConfig" and got["config_type"] == "BROKER"
    assert (got["value"], got["source"], got["is_default"]) == ("86400000", "DYNAMIC_DEFAULT_BROKER_CONFIG", False)
    assert got["metadata"]["self"].endswith(c + "/broker-configs/log.retention.ms")
    assert got["metadata"]["resource_name"].endswith("/broker-config=log.retention.ms")
    # what a Kafka client sees: the broker's value now comes from the cluster-wide default
    e = _broker_config(admin, "log.retention.ms")
    assert (e.value, e.source) == ("86400000", 3)  # DYNAMIC_DEFAULT_BROKER_CONFIG
    rest.ok("POST", c + "/broker-configs:alter", {"data": [
        {"name": "log.retention.ms", "operation": "DELETE"}, {"name": "log.cleaner.backoff.ms", "value": "20000"}]}, 204)
    listed = rest.ok("GET", c + "/broker-configs")
    assert listed["kind"] == "KafkaClusterConfigList"
    assert [(x["name"], x["value"]) for x in listed["data"]] == sorted(before + [("log.cleaner.backoff.ms", "20000")])
    # validate_only changes nothing; a key Kafka refuses keeps Kafka's error
    rest.ok("POST", c + "/broker-configs:alter", {"data": [{"name": "log.cleaner.backoff.ms", "value": "1"}],
                                                 "validate_only": True}, 204)
    assert _broker_config(admin, "log.cleaner.backoff.ms").value == "20000"
    body = _error(rest.call("PUT", c + "/broker-configs/num.partitions", {"value": "3"}), 400)
    assert "num.partitions" in body["message"]
    _error(rest.call("POST", c + "/broker-configs:alter", {"data": [], "validate_only": "yes"}), 400)
    rest.ok("DELETE", c + "/broker-configs/log.cleaner.backoff.ms", status=204)
    assert [(x["name"], x["value"]) for x in rest.ok("GET", c + "/broker-configs")["data"]] == before


def test_per_broker_config_writes_and_every_brokers_configs(rest, admin):
    c = rest.c
    rest.ok("PUT", c + "/brokers/1/configs/log.segment.bytes", {"value": "2097152"}, 204)
    got = rest.ok("GET", c + "/brokers/1/configs/log.segment.bytes")
    assert (got["value"], got["source"]) == ("2097152", "DYNAMIC_BROKER_CONFIG")
    assert _broker_config(admin, "log.segment.bytes").value == "2097152"
    rest.ok("POST", c + "/brokers/1/configs:alter", {"data": [{"name": "log.segment.bytes", "operation": "DELETE"}]},
            204)
    assert _broker_config(admin, "log.segment.bytes").source != 1  # no DYNAMIC_BROKER_CONFIG any more
    rest.ok("PUT", c + "/brokers/1/configs/log.segment.bytes", {"value": "3145728"}, 204)
    rest.ok("DELETE", c + "/brokers/1/configs/log.segment.bytes", status=204)
    assert rest.ok("GET", c + "/brokers/1/configs/log.segment.bytes")["source"] != "DYNAMIC_BROKER_CONFIG"
    every = rest.ok("GET", c + "/brokers/-/configs")
    assert every["kind"] == "KafkaBrokerConfigList"
    assert every["metadata"]["self"].endswith(c + "/brokers/-/configs")
    one = rest.ok("GET", c + "/brokers/1/configs")["data"]
    assert [(x["broker_id"], x["name"]) for x in every["data"]] == [(1, x["name"]) for x in one]
    for resp in (rest.get(c + "/brokers/7/configs/log.segment.bytes"), rest.get(c + "/brokers/7/configs"),
                 rest.call("PUT", c + "/brokers/7/configs/log.segment.bytes", {"value": "2097152"}),
                 rest.call("DELETE", c + "/brokers/7/configs/log.segment.bytes"),
                 rest.call("POST", c + "/brokers/7/configs:alter", {"data": []})):
        assert _error(resp, 404)["message"] == "Broker 7 could not be found."


def test_every_topics_configs(rest):
    c = rest.c
    for t in ("cfg-a", "cfg-b"):
        rest.ok("POST", c + "/topics", {"topic_name": t, "partitions_count": 1,
                                         "configs": [{"name": "retention.ms", "value": "1234"}]}, 201)
    rows = rest.ok("GET", c + "/topics/-/configs")
    assert rows["kind"] == "KafkaTopicConfigList"
    mine = [(x["topic_name"], x["value"]) for x in rows["data"] if x["name"] == "retention.ms"
            and x["topic_name"] in ("cfg-a", "cfg-b")]
    assert mine == [("cfg-a", "1234"), ("cfg-b", "1234")]
    one = rest.ok("GET", c + "/topics/cfg-a/configs")["data"]
    assert [x for x in rows["data"] if x["topic_name"] == "cfg-a"] == one


def test_configs_alter_type_checks_validate_only(rest):
    c = rest.c
    rest.ok("POST", c + "/topics", {"topic_name": "vo", "partitions_count": 1}, 201)
    for bad in ({}, "true", 1, []):
        _error(rest.call("POST", c + "/topics/vo/configs:alter",
                         {"data": [{"name": "retention.ms", "value": "1000"}], "validate_only": bad}), 400)
    rest.ok("POST", c + "/topics/vo/configs:alter",
            {"data": [{"name": "retention.ms", "value": "1000"}], "validate_only": True}, 204)
    assert rest.ok("GET", c + "/topics/vo/configs/retention.ms")["is_default"] is True
    rest.ok("POST", c + "/topics/vo/configs:alter",
            {"data": [{"name": "retention.ms", "value": "1000"}], "validate_only": False}, 204)
    assert rest.ok("GET", c + "/topics/vo/configs/retention.ms")["value"] == "1000"


# ---- topics and partitions ------------------------------------------------------------------

def test_patch_grows_a_topics_partitions(rest, admin):
    c = rest.c
    rest.ok("POST", c + "/topics", {"topic_name": "grow", "partitions_count": 1}, 201)
    t = rest.ok("PATCH", c + "/topics/grow", {"partitions_count": 3})
    assert t["kind"] == "KafkaTopic" and t["partitions_count"] == 3
    assert len(admin.list_topics("grow", timeout=10).topics["grow"].partitions) == 3
    # fewer partitions: Kafka's INVALID_PARTITIONS; unknown topic 404; bad body 400
    body = _error(rest.call("PATCH", c + "/topics/grow", {"partitions_count": 2}), 400)
    assert "3" in body["message"]
    _error(rest.call("PATCH", c + "/topics/nope", {"partitions_count": 2}), 404)
    _error(rest.call("PATCH", c + "/topics/grow", {"partitions_count": "4"}), 400)
    _error(rest.call("PATCH", c + "/topics/grow", {}), 400)


def test_partition_offsets(rest, hg):
    c = rest.c
    rest.ok("POST", c + "/topics", {"topic_name": "offs", "partitions_count": 2}, 201)
    p = Producer({"bootstrap.servers": hg.bootstrap_servers})
    for i in range(5):
        p.produce("offs", b"x", partition=1)
    assert p.flush(10) == 0
    got = rest.ok("GET", c + "/topics/offs/partitions/1/offset")
    assert got["kind"] == "KafkaPartitionWithOffsets"
    assert (got["topic_name"], got["partition_id"], got["earliest_offset"], got["latest_offset"]) == ("offs", 1, 0, 5)
    assert got["metadata"]["self"].endswith(c + "/topics/offs/partitions/1/offset")
    assert got["metadata"]["resource_name"].endswith("/topic=offs/partition=1/offset_type=earliest_and_latest")
    got = rest.ok("GET", c + "/topics/offs/partitions/0/offset?offset_type=earliest_and_latest")
    assert (got["earliest_offset"], got["latest_offset"]) == (0, 0)
    # Confluent's server knows no other offset type
    assert _error(rest.get(c + "/topics/offs/partitions/0/offset?offset_type=latest"), 400)["message"] == \
        "offset_type:latest is invalid"
    _error(rest.get(c + "/topics/offs/partitions/9/offset"), 404)
    _error(rest.get(c + "/topics/nope/partitions/0/offset"), 404)


# ---- produce batch --------------------------------------------------------------------------

def test_records_batch(rest, hg):
    c = rest.c
    rest.ok("POST", c + "/topics", {"topic_name": "batch", "partitions_count": 1}, 201)
    s, body, _ = rest.call("POST", c + "/topics/batch/records:batch", {"entries": [
        {"id": "a", "value": {"type": "STRING", "data": "one"}},
        {"id": "b", "value": {"type": "NOPE", "data": "x"}},
        {"id": "c", "key": {"type": "STRING", "data": "k"}, "value": {"type": "JSON", "data": {"n": 2}}}]})
    assert s == 207, body
    assert [x["id"] for x in body["successes"]] == ["a", "c"]
    assert [x["offset"] for x in body["successes"]] == [0, 1]
    assert body["successes"][1]["key"]["type"] == "STRING" and body["successes"][1]["value"]["type"] == "JSON"
    assert [x["id"] for x in body["failures"]] == ["b"] and body["failures"][0]["error_code"] >= 400
    consumer = Consumer({"bootstrap.servers": hg.bootstrap_servers, "group.id": "batch-check"})
    consumer.assign([TopicPartition("batch", 0, 0)])
    got = []
    for _ in range(20):
        got += [m.value() for m in consumer.consume(10, 0.5) if m.error() is None]
        if len(got) >= 2:
            break
    consumer.close()
    assert got == [b"one", b'{"n":2}'] or got == [b"one", b'{"n": 2}'], got
    # Confluent's refusals of the batch as a whole: 400 with 42208
    for entries in ([], [{"id": "x"}, {"id": "x"}], [{"id": str(i)} for i in range(11)], [{"id": ""}], [{}]):
        _error(rest.call("POST", c + "/topics/batch/records:batch", {"entries": entries}), 400, 42208)
    _error(rest.call("POST", c + "/topics/batch/records:batch", raw=b""), 400, 42208)
    s, body, _ = rest.call("POST", c + "/topics/nope/records:batch",
                           {"entries": [{"id": "a", "value": {"type": "STRING", "data": "x"}}]})
    assert s == 207 and body["successes"] == [] and body["failures"][0]["id"] == "a", body


# ---- consumer groups ------------------------------------------------------------------------

def test_lag_summary_of_a_group_without_members(rest, hg):
    c = rest.c
    rest.ok("POST", c + "/topics", {"topic_name": "idle", "partitions_count": 1}, 201)
    p = Producer({"bootstrap.servers": hg.bootstrap_servers})
    for _ in range(4):
        p.produce("idle", b"x")
    assert p.flush(10) == 0
    consumer = Consumer({"bootstrap.servers": hg.bootstrap_servers, "group.id": "idle-g",
                         "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition("idle", 0, 1)], asynchronous=False)
    consumer.close()
    s = rest.ok("GET", c + "/consumer-groups/idle-g/lag-summary")
    assert (s["max_lag"], s["total_lag"], s["max_lag_consumer_id"]) == (3, 3, "")
    # Confluent always links both; its URL builder drops the empty consumer id segment
    assert s["max_lag_consumer"] == {"related": f"{rest.url}{c}/consumer-groups/idle-g/consumers"}
    assert s["max_lag_partition"] == {"related": f"{rest.url}{c}/topics/idle/partitions/0"}


# ---- ACLs -----------------------------------------------------------------------------------

BOB_PASSWORD = "bob-acl-password"


@pytest.fixture(scope="module")
def secured():
    from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion
    with EmbeddedBroker(security={"protocol": "SASL_PLAINTEXT", "mechanism": "SCRAM-SHA-256", "acls": True},
                        console=True) as b:
        admin = AdminClient(b.client_config)
        for fut in admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
                "bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), BOB_PASSWORD.encode())]).values():
            fut.result(10)
        yield b, admin


def _acl(**kw) -> dict:
    a = {"resource_type": "TOPIC", "resource_name": "orders", "pattern_type": "LITERAL", "principal": "User:carol",
         "host": "*", "operation": "READ", "permission": "ALLOW"}
    a.update(kw)
    return a


def _kafka_acls(admin) -> set:
    f = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                         AclPermissionType.ANY)
    return {(b.restype.name, b.name, b.resource_pattern_type.name, b.principal, b.host, b.operation.name,
             b.permission_type.name) for b in admin.describe_acls(f).result(10)}


def test_acls_create_batch_and_delete_through_kafkas_handlers(secured):
    b, admin = secured
    alice = Rest(b.console_url, b.broker.cluster_id, auth=(b.security.user, b.security.password))
    bob = Rest(b.console_url, b.broker.cluster_id, auth=("bob", BOB_PASSWORD))
    c = alice.c
    s, body, headers = alice.call("POST", c + "/acls", _acl())
    assert s == 201, body
    assert headers["Location"].startswith(alice.url + c + "/acls?resource_type=TOPIC")
    alice.ok("POST", c + "/acls:batch", {"data": [_acl(operation="WRITE"),
                                                   _acl(resource_type="GROUP", resource_name="g-",
                                                        pattern_type="PREFIXED", operation="READ")]}, 201)
    assert {("TOPIC", "orders", "LITERAL", "User:carol", "*", op, "ALLOW") for op in ("READ", "WRITE")} | \
        {("GROUP", "g-", "PREFIXED", "User:carol", "*", "READ", "ALLOW")} <= _kafka_acls(admin)
    listed = alice.ok("GET", c + "/acls?principal=User:carol")["data"]
    assert len(listed) == 3
    # bob may not alter the cluster's ACLs: Kafka's CLUSTER_AUTHORIZATION_FAILED as a 403
    _error(bob.call("POST", c + "/acls", _acl(principal="User:bob", operation="ALL")), 403, 40301)
    _error(bob.call("POST", c + "/acls:batch", {"data": [_acl(principal="User:bob")]}), 403, 40301)
    _error(bob.call("DELETE", c + "/acls?resource_type=ANY&pattern_type=ANY&operation=ANY&permission=ANY"),
           403, 40301)
    # bad input: 400, and nothing created
    _error(alice.call("POST", c + "/acls", _acl(operation="FLY")), 400)
    # filter values are no binding (Confluent's checks, before Kafka is asked)
    assert _error(alice.call("POST", c + "/acls", _acl(pattern_type="MATCH")), 400)["message"] == \
        "pattern_type cannot be MATCH"
    assert _error(alice.call("POST", c + "/acls:batch", {"data": [_acl(), _acl(operation="ANY")]}),
                  400)["message"] == "operation cannot be ANY"
    _error(alice.call("POST", c + "/acls", {k: v for k, v in _acl().items() if k != "host"}), 400)
    _error(alice.call("POST", c + "/acls:batch", {"data": "x"}), 400)
    _error(alice.call("DELETE", c + "/acls?resource_type=TOPIC&pattern_type=ANY&operation=ANY"), 400)
    # delete by filter: the deleted ones, sorted as Confluent sorts them
    deleted = alice.ok("DELETE", c + "/acls?resource_type=TOPIC&resource_name=orders&pattern_type=LITERAL"
                                     "&principal=User:carol&operation=ANY&permission=ALLOW")
    assert [(a["kind"], a["operation"]) for a in deleted["data"]] == [("KafkaAcl", "READ"), ("KafkaAcl", "WRITE")]
    assert {a[0] for a in _kafka_acls(admin) if a[3] == "User:carol"} == {"GROUP"}
    assert alice.ok("DELETE", c + "/acls?resource_type=TOPIC&pattern_type=ANY&operation=ANY&permission=ANY"
                                  "&principal=User:carol")["data"] == []


def test_acls_without_an_authorizer_answer_kafkas_error(rest):
    """Kafka's SECURITY_DISABLED, with its message, as the REST proxy passes it on."""
    body = _error(rest.call("POST", rest.c + "/acls", _acl()), 400)
    assert body["message"] == "No Authorizer is configured.", body


# ---- a trailing slash -----------------------------------------------------------------------

def test_a_trailing_slash_is_the_same_resource(hg, rest):
    """Confluent's REST Proxy (Jersey) answers ``/v3/clusters/`` as ``/v3/clusters``."""
    for path in ("/v3/clusters", rest.c, rest.c + "/topics", rest.c + "/brokers", rest.c + "/broker-configs"):
        plain, slashed = rest.get(path), rest.get(path + "/")
        assert plain[0] == slashed[0] == 200, (path, plain, slashed)
        assert plain[1] == slashed[1], path
