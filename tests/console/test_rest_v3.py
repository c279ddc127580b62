"""Kafka REST v3 (/v3) against a real broker over HTTP, compared with Confluent's documented
shapes and with what stock clients (confluent-kafka) see through the Kafka protocol."""
from __future__ import annotations

import base64
import json
import os
import time
from urllib.parse import quote

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from hourglass.embedded import EmbeddedBroker
from tests.helpers.rest_v3 import Rest

# one module-scoped broker whose later tests use what earlier ones made (the `produced`
# topic): the module stays on one xdist worker (make test runs --dist loadgroup)
pytestmark = pytest.mark.xdist_group("rest_v3")


# The fields of each resource in Confluent's REST v3 API reference examples
SHAPES = {
    "KafkaCluster": {"kind", "metadata", "cluster_id", "controller", "acls", "brokers", "broker_configs",
                     "consumer_groups", "topics", "partition_reassignments"},
    "KafkaBroker": {"kind", "metadata", "cluster_id", "broker_id", "host", "port", "rack", "configs",
                    "partition_replicas"},
    "KafkaTopic": {"kind", "metadata", "cluster_id", "topic_name", "is_internal", "replication_factor",
                   "partitions_count", "partitions", "configs", "partition_reassignments", "authorized_operations"},
    "KafkaPartition": {"kind", "metadata", "cluster_id", "topic_name", "partition_id", "leader", "replicas",
                       "reassignment"},
    "KafkaTopicConfig": {"kind", "metadata", "cluster_id", "topic_name", "name", "value", "is_default",
                         "is_read_only", "is_sensitive", "source", "synonyms"},
    "KafkaConsumerGroup": {"kind", "metadata", "cluster_id", "consumer_group_id", "is_simple", "partition_assignor",
                           "state", "coordinator", "consumers", "lag_summary"},
    "KafkaConsumer": {"kind", "metadata", "cluster_id", "consumer_group_id", "consumer_id", "instance_id",
                      "client_id", "assignments"},
    "KafkaConsumerAssignment": {"kind", "metadata", "cluster_id", "consumer_group_id", "consumer_id", "topic_name",
                                "partition_id", "partition", "lag"},
    "KafkaConsumerLag": {"kind", "metadata", "cluster_id", "consumer_group_id", "topic_name", "partition_id",
                         "current_offset", "log_end_offset", "lag", "consumer_id", "instance_id", "client_id"},
    "KafkaConsumerGroupLagSummary": {"kind", "metadata", "cluster_id", "consumer_group_id", "max_lag_consumer_id",
                                     "max_lag_instance_id", "max_lag_client_id", "max_lag_topic_name",
                                     "max_lag_partition_id", "max_lag", "total_lag", "max_lag_consumer",
                                     "max_lag_partition"},
    "KafkaAcl": {"kind", "metadata", "cluster_id", "resource_type", "resource_name", "pattern_type", "principal",
                 "host", "operation", "permission"},
}
# key and value are absent for a record without one (Confluent: NON_ABSENT)
PRODUCE_RESPONSE = {"error_code", "cluster_id", "topic_name", "partition_id", "offset", "timestamp"}


def check_shape(rest: Rest, res: dict, kind: str, follow: bool = True) -> None:
    """Confluent's fields are all there, ``metadata.self`` is an absolute URL of this resource
    and answers the same resource, ``resource_name`` is its CRN."""
    assert res["kind"] == kind
    assert SHAPES[kind] <= set(res), SHAPES[kind] - set(res)
    assert res["cluster_id"] == rest.cluster_id
    self_url = res["metadata"]["self"]
    assert self_url.startswith(rest.url + rest.c)
    if kind != "KafkaAcl":
        assert res["metadata"]["resource_name"].startswith(f"crn:///kafka={rest.cluster_id}")
    for v in res.values():
        if isinstance(v, dict) and "related" in v:
            assert v["related"].startswith(rest.url + rest.c)
    if follow:
        s, again, _ = rest.get(self_url[len(rest.url):])
        assert s == 200 and again["kind"] == kind
        assert again["metadata"]["self"] == self_url


def check_list(rest: Rest, body: dict, kind: str) -> list:
    assert body["kind"] == kind + "List" and body["metadata"]["self"].startswith(rest.url)
    assert "next" in body["metadata"]
    for r in body["data"]:
        check_shape(rest, r, kind, follow=False)
    return body["data"]


def error(body, status: int, code: int, got: int) -> None:
    assert got == status, (got, body)
    assert set(body) == {"error_code", "message"} and body["error_code"] == code and body["message"], body


@pytest.fixture(scope="module")
def hg():
    with EmbeddedBroker({"log.retention.check.interval.ms": 3600000}, console=True) as b:
        yield b


@pytest.fixture(scope="module")
def rest(hg):
    return Rest(hg.console_url, hg.broker.cluster_id)


@pytest.fixture(scope="module")
def admin(hg):
    return AdminClient({"bootstrap.servers": hg.bootstrap_servers})


def _produce(hg, topic: str, items, partition: int = 0) -> None:
    """Produce with confluent-kafka in small batches (a batch may not exceed segment.bytes)."""
    p = Producer({"bootstrap.servers": hg.bootstrap_servers, "linger.ms": 0, "batch.num.messages": 10})
    errors = []
    for key, value, ts in items:
        p.produce(topic, key=key, value=value, timestamp=ts or 0, partition=partition,
                  on_delivery=lambda err, _m: err and errors.append(err))
    assert p.flush(10) == 0 and not errors, errors


def test_clusters_and_brokers(rest, hg):
    clusters = check_list(rest, rest.ok("GET", "/v3/clusters"), "KafkaCluster")
    assert [c["cluster_id"] for c in clusters] == [hg.broker.cluster_id]
    check_shape(rest, clusters[0], "KafkaCluster")
    brokers = check_list(rest, rest.ok("GET", rest.c + "/brokers"), "KafkaBroker")
    assert [(b["broker_id"], b["port"]) for b in brokers] == [(1, int(hg.bootstrap_servers.rsplit(":", 1)[1]))]
    check_shape(rest, brokers[0], "KafkaBroker")
    s, body, headers = rest.get(rest.c)
    assert s == 200 and headers["Content-Type"].startswith("application/json")


def test_topics_over_rest_and_kafka_are_the_same(rest, admin):
    t = rest.ok("POST", rest.c + "/topics", {"topic_name": "made-by-rest", "partitions_count": 3,
                                              "replication_factor": 1,
                                              "configs": [{"name": "cleanup.policy", "value": "compact"}]}, 201)
    check_shape(rest, t, "KafkaTopic")
    assert (t["topic_name"], t["partitions_count"], t["replication_factor"]) == ("made-by-rest", 3, 1)
    md = admin.list_topics(timeout=10)
    assert len(md.topics["made-by-rest"].partitions) == 3
    cfg = admin.describe_configs([ConfigResource("topic", "made-by-rest")])
    assert list(cfg.values())[0].result(10)["cleanup.policy"].value == "compact"
    for f in admin.create_topics([NewTopic("made-by-kafka", 2, 1)]).values():
        f.result(10)
    listed = {t["topic_name"]: t for t in check_list(rest, rest.ok("GET", rest.c + "/topics"), "KafkaTopic")}
    assert listed["made-by-kafka"]["partitions_count"] == 2 and "made-by-rest" in listed
    # delete over REST: gone for the Kafka client; delete over Kafka: gone for REST
    assert rest.call("DELETE", rest.c + "/topics/made-by-rest")[0] == 204
    assert "made-by-rest" not in admin.list_topics(timeout=10).topics
    for f in admin.delete_topics(["made-by-kafka"]).values():
        f.result(10)
    s, body, _ = rest.get(rest.c + "/topics/made-by-kafka")
    error(body, 404, 40403, s)
    # validate_only creates nothing
    assert rest.ok("POST", rest.c + "/topics", {"topic_name": "dry", "validate_only": True})["topic_name"] == "dry"
    assert "dry" not in admin.list_topics(timeout=10).topics


def test_partitions_with_offsets(rest, hg, admin):
    for f in admin.create_topics([NewTopic("parts", 2, 1)]).values():
        f.result(10)
    _produce(hg, "parts", [(b"k", b"v%d" % i, 1000 + i) for i in range(7)], partition=1)
    parts = check_list(rest, rest.ok("GET", rest.c + "/topics/parts/partitions"), "KafkaPartition")
    assert [(p["partition_id"], p["earliest_offset"], p["latest_offset"], p["last_stable_offset"]) for p in parts] \
        == [(0, 0, 0, 0), (1, 0, 7, 7)]
    check_shape(rest, parts[1], "KafkaPartition")
    c = Consumer({"bootstrap.servers": hg.bootstrap_servers, "group.id": "wm"})
    assert c.get_watermark_offsets(TopicPartition("parts", 1), timeout=10) == (0, 7)
    c.close()
    s, body, _ = rest.get(rest.c + "/topics/parts/partitions/9")
    error(body, 404, 40403, s)


def test_configs_list_get_update_reset_alter(rest, admin):
    rest.ok("POST", rest.c + "/topics", {"topic_name": "cfg", "partitions_count": 1}, 201)
    configs = check_list(rest, rest.ok("GET", rest.c + "/topics/cfg/configs"), "KafkaTopicConfig")
    by = {c["name"]: c for c in configs}
    assert by["retention.ms"]["is_default"] and by["retention.ms"]["source"] == "DEFAULT_CONFIG"
    check_shape(rest, by["retention.ms"], "KafkaTopicConfig")

    def described(name):
        res = admin.describe_configs([ConfigResource("topic", "cfg")])
        return list(res.values())[0].result(10)[name]

    assert rest.call("PUT", rest.c + "/topics/cfg/configs/retention.ms", {"value": "60000"})[0] == 204
    c = rest.ok("GET", rest.c + "/topics/cfg/configs/retention.ms")
    assert (c["value"], c["source"], c["is_default"]) == ("60000", "DYNAMIC_TOPIC_CONFIG", False)
    assert described("retention.ms").value == "60000"
    assert rest.call("POST", rest.c + "/topics/cfg/configs:alter", {"data": [
        {"name": "segment.ms", "value": "3600000"}, {"name": "retention.ms", "operation": "DELETE"}]})[0] == 204
    assert described("segment.ms").value == "3600000" and described("retention.ms").is_default
    assert rest.call("DELETE", rest.c + "/topics/cfg/configs/segment.ms")[0] == 204
    assert described("segment.ms").is_default
    s, body, _ = rest.call("PUT", rest.c + "/topics/cfg/configs/retention.ms", {"value": "soon"})
    error(body, 400, 40002, s)
    s, body, _ = rest.get(rest.c + "/topics/cfg/configs/no.such.config")
    error(body, 404, 404, s)


def test_produce_read_back_by_confluent_kafka(rest, hg):
    rest.ok("POST", rest.c + "/topics", {"topic_name": "produced", "partitions_count": 2}, 201)
    ts = 1_700_000_000_123
    bodies = [
        {"partition_id": 1, "key": {"type": "STRING", "data": "k1"}, "value": {"type": "JSON", "data": {"a": [1, 2]}},
         "headers": [{"name": "h", "value": base64.b64encode(b"\x00hv").decode()}],
         "timestamp": "2023-11-14T22:13:20.123Z"},
        {"partition_id": 1, "key": {"type": "BINARY", "data": base64.b64encode(b"\xff\x00").decode()},
         "value": {"type": "BINARY", "data": base64.b64encode(b"\x01\x02\x03").decode()}, "timestamp": ts},
        {"partition_id": 1, "value": {"type": "STRING", "data": "no key"}},
        {"partition_id": 1, "value": {"data": "untyped is JSON"}},
    ]
    answers = []
    for b in bodies:
        r = rest.ok("POST", rest.c + "/topics/produced/records", b)
        assert PRODUCE_RESPONSE <= set(r) and r["error_code"] == 200 and r["cluster_id"] == rest.cluster_id
        answers.append(r)
    assert [a["offset"] for a in answers] == [0, 1, 2, 3]
    assert answers[0]["key"] == {"type": "STRING", "size": 2} and answers[0]["value"] == {"type": "JSON", "size": 11}
    assert answers[0]["timestamp"] == "2023-11-14T22:13:20.123Z" and "key" not in answers[2]  # absent, as Confluent (NON_ABSENT)
    c = Consumer({"bootstrap.servers": hg.bootstrap_servers, "group.id": "read-back", "enable.auto.commit": False})
    c.assign([TopicPartition("produced", 1, 0)])
    got = []
    deadline = time.time() + 20
    while len(got) < 4 and time.time() < deadline:
        m = c.poll(1)
        if m is not None and not m.error():
            got.append(m)
    c.close()
    assert [(m.key(), m.value()) for m in got] == [
        (b"k1", b'{"a":[1,2]}'), (b"\xff\x00", b"\x01\x02\x03"), (None, b"no key"), (None, b'"untyped is JSON"')]
    assert got[0].headers() == [("h", b"\x00hv")]
    assert got[0].timestamp() == (1, ts) and got[1].timestamp() == (1, ts)
    # streaming mode: several requests in one body, one answer each, in order
    lines = rest.ok("POST", rest.c + "/topics/produced/records",
                    raw=b'{"partition_id":0,"value":{"type":"STRING","data":"a"}}\n'
                        b'{"partition_id":0,"value":{"type":"NOPE","data":"b"}}\n'
                        b'{"partition_id":0,"value":{"type":"STRING","data":"c"}}')
    assert [(x["error_code"], x.get("offset")) for x in lines] == [(200, 0), (400, None), (200, 1)]


def test_keyed_records_land_where_the_java_partitioner_puts_them(rest, hg):
    rest.ok("POST", rest.c + "/topics", {"topic_name": "keyed", "partitions_count": 7}, 201)
    keys = [f"key-{i}".encode() for i in range(40)] + [b"", b"a", b"ab", b"abc", "ключ".encode()]
    p = Producer({"bootstrap.servers": hg.bootstrap_servers, "partitioner": "murmur2_random"})
    expected = {}

    def remember(err, msg):
        assert err is None
        expected[msg.key()] = msg.partition()
    for k in keys:
        p.produce("keyed", key=k, value=b"x", on_delivery=remember)
    assert p.flush(10) == 0
    for k in keys:
        r = rest.ok("POST", rest.c + "/topics/keyed/records",
                    {"key": {"type": "BINARY", "data": base64.b64encode(k).decode()}, "value": {"data": 1}})
        assert r["partition_id"] == expected[k], k


def test_records_from_a_time_equal_offsets_for_times(rest, hg):
    rest.ok("POST", rest.c + "/topics", {"topic_name": "timed", "partitions_count": 1,
                                          "configs": [{"name": "segment.bytes", "value": "2048"},
                                                      {"name": "index.interval.bytes", "value": "128"}]}, 201)
    base = 1_600_000_000_000
    # out of order on purpose: the answer is the first offset whose timestamp is >= T
    stamps = [base + 10 * i for i in range(300)]
    stamps[150] = base + 5
    _produce(hg, "timed", [(b"k%d" % i, b"value-%d" % i, ts) for i, ts in enumerate(stamps)])
    c = Consumer({"bootstrap.servers": hg.bootstrap_servers, "group.id": "oft"})
    for target in (base - 1, base, base + 5, base + 6, base + 1234, base + 2990, base + 2991):
        want = c.offsets_for_times([TopicPartition("timed", 0, target)], timeout=10)[0].offset
        page = rest.ok("GET", rest.c + f"/topics/timed/partitions/0/records?from={target}&max_records=5")
        assert page["kind"] == "HourglassRecordPage"
        if want < 0:  # no record at or after T: an empty page at the end, as ListOffsets says
            assert page["data"] == [] and page["start"]["offset"] is None and page["next_offset"] == 300
            continue
        assert page["data"] and page["data"][0]["offset"] == want, (target, want, page)
        assert page["start"]["offset"] == want and len(page["data"]) == min(5, 300 - want)
        assert page["data"][0]["timestamp"] >= target
        # the same through an ISO time
        iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(target // 1000)) + f".{target % 1000:03d}Z"
        assert rest.ok("GET", rest.c + f"/topics/timed/partitions/0/records?from={iso}&max_records=1"
                       )["data"][0]["offset"] == want
    c.close()
    # a time after every record: an empty page at the end, not an error
    page = rest.ok("GET", rest.c + f"/topics/timed/partitions/0/records?from={int(time.time() * 1000) + 86400000}")
    assert page["data"] == [] and page["next_offset"] == 300 and page["end_reached"]
    # pages follow one another through metadata.next
    seen, url = [], rest.c + "/topics/timed/partitions/0/records?position=beginning&max_records=64"
    while True:
        page = rest.ok("GET", url)
        seen += [r["offset"] for r in page["data"]]
        if page["end_reached"]:
            break
        url = page["metadata"]["next"][len(rest.url):]
    assert seen == list(range(300))
    # the end, an offset, a byte bound, a text filter
    assert [r["offset"] for r in rest.ok("GET", rest.c + "/topics/timed/partitions/0/records?position=end&max_records=3"
                                         )["data"]] == [297, 298, 299]
    r = rest.ok("GET", rest.c + "/topics/timed/partitions/0/records?offset=42&max_records=1")["data"][0]
    assert (r["offset"], r["key"]["text"], r["value"]["text"], r["timestamp_type"]) == \
        (42, "k42", "value-42", "CreateTime")
    assert len(rest.ok("GET", rest.c + "/topics/timed/partitions/0/records?offset=0&max_records=1000&max_bytes=100"
                       )["data"]) < 300
    hits = rest.ok("GET", rest.c + "/topics/timed/partitions/0/records?position=beginning&contains=value-29")["data"]
    assert [h["offset"] for h in hits] == [29] + list(range(290, 300))


def test_segment_timeline_matches_the_data_dir(rest, hg):
    page = rest.ok("GET", rest.c + "/topics/timed/partitions/0/segments")
    assert page["kind"] == "HourglassSegmentTimeline"
    d = hg.data_dir / "timed-0"
    logs = sorted(f for f in os.listdir(d) if f.endswith(".log"))
    segs = page["segments"]
    assert len(segs) > 3 and [s["files"][0] for s in segs] == logs
    for s in segs:
        for f in s["files"]:
            assert (d / f).exists(), f
        assert s["size"] == os.path.getsize(d / s["files"][0])
        assert s["base_offset"] == int(s["files"][0][:-4])
        assert s["min_timestamp"] <= s["max_timestamp"]
    assert [s["next_offset"] for s in segs[:-1]] == [s["base_offset"] for s in segs[1:]]
    assert segs[-1]["active"] and segs[-1]["next_offset"] == 300
    cut = page["retention"]["time"]
    # the records are from 2020: retention.ms (7 days) is overdue for the first segment
    assert cut["segment_base_offset"] == 0 and cut["overdue"] and cut["new_log_start_offset"] == segs[1]["base_offset"]


def _consume_some(consumer, n: int, timeout: float = 30):
    got = []
    deadline = time.time() + timeout
    while len(got) < n and time.time() < deadline:
        m = consumer.poll(0.5)
        if m is not None and not m.error():
            got.append(m)
    return got


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_consumer_groups_members_assignments_and_lags(rest, hg, admin, protocol):
    topic, gid = f"lagged-{protocol}", f"g-{protocol}"
    rest.ok("POST", rest.c + "/topics", {"topic_name": topic, "partitions_count": 2}, 201)
    for p in (0, 1):
        _produce(hg, topic, [(None, b"x", None)] * (10 + p), partition=p)
    conf = {"bootstrap.servers": hg.bootstrap_servers, "group.id": gid, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "client.id": "lag-client"}
    if protocol == "consumer":
        conf["group.protocol"] = "consumer"
    c = Consumer(conf)
    c.subscribe([topic])
    assert len(_consume_some(c, 21)) == 21
    c.commit(offsets=[TopicPartition(topic, 0, 4), TopicPartition(topic, 1, 11)], asynchronous=False)
    groups = check_list(rest, rest.ok("GET", rest.c + "/consumer-groups"), "KafkaConsumerGroup")
    g = next(g for g in groups if g["consumer_group_id"] == gid)
    check_shape(rest, g, "KafkaConsumerGroup")
    assert g["state"] == "STABLE" and g["type"] == protocol.upper()
    consumers = check_list(rest, rest.ok("GET", rest.c + f"/consumer-groups/{gid}/consumers"), "KafkaConsumer")
    assert len(consumers) == 1 and consumers[0]["client_id"] == "lag-client"
    check_shape(rest, consumers[0], "KafkaConsumer")
    cid = consumers[0]["consumer_id"]
    assignments = check_list(rest, rest.ok("GET", rest.c + f"/consumer-groups/{gid}/consumers/{quote(cid, safe='')}"
                                                           "/assignments"),
                             "KafkaConsumerAssignment")
    assert sorted((a["topic_name"], a["partition_id"]) for a in assignments) == [(topic, 0), (topic, 1)]
    check_shape(rest, assignments[0], "KafkaConsumerAssignment")
    lags = check_list(rest, rest.ok("GET", rest.c + f"/consumer-groups/{gid}/lags"), "KafkaConsumerLag")
    committed = {(tp.topic, tp.partition): tp.offset for tp in
                 c.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=10)}
    assert {(r["topic_name"], r["partition_id"]): (r["current_offset"], r["log_end_offset"], r["lag"], r["consumer_id"])
            for r in lags} == {(topic, 0): (committed[(topic, 0)], 10, 6, cid), (topic, 1): (committed[(topic, 1)], 11, 0, cid)}
    check_shape(rest, lags[0], "KafkaConsumerLag")
    summary = rest.ok("GET", rest.c + f"/consumer-groups/{gid}/lag-summary")
    check_shape(rest, summary, "KafkaConsumerGroupLagSummary")
    assert (summary["max_lag"], summary["total_lag"], summary["max_lag_partition_id"]) == (6, 6, 0)
    # resetting a live group's offsets is refused, as Kafka's tool refuses it
    s, body, _ = rest.call("POST", rest.c + f"/consumer-groups/{gid}/offsets:reset",
                           {"position": "earliest", "dry_run": False})
    error(body, 409, 409, s)
    c.close()
    plan = rest.ok("POST", rest.c + f"/consumer-groups/{gid}/offsets:reset", {"position": "earliest"})
    assert plan["dry_run"] and [(r["partition_id"], r["current_offset"], r["new_offset"]) for r in plan["data"]] == \
        [(0, 4, 0), (1, 11, 0)]
    rest.ok("POST", rest.c + f"/consumer-groups/{gid}/offsets:reset", {"position": "earliest", "dry_run": False})
    after = admin.list_consumer_group_offsets([_group_request(gid)])[gid].result(10)
    assert sorted((tp.partition, tp.offset) for tp in after.topic_partitions) == [(0, 0), (1, 0)]


def _group_request(gid):
    from confluent_kafka import ConsumerGroupTopicPartitions
    return ConsumerGroupTopicPartitions(gid)


def test_reset_offsets_to_a_time(rest, hg):
    base = 1_650_000_000_000
    rest.ok("POST", rest.c + "/topics", {"topic_name": "reset-time", "partitions_count": 1}, 201)
    _produce(hg, "reset-time", [(None, b"x", base + 1000 * i) for i in range(10)])
    c = Consumer({"bootstrap.servers": hg.bootstrap_servers, "group.id": "rt", "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition("reset-time", 0, 9)], asynchronous=False)
    want = c.offsets_for_times([TopicPartition("reset-time", 0, base + 3500)], timeout=10)[0].offset
    c.close()
    plan = rest.ok("POST", rest.c + "/consumer-groups/rt/offsets:reset",
                   {"timestamp": base + 3500, "dry_run": False})
    assert [r["new_offset"] for r in plan["data"]] == [want] == [4]
    lags = rest.ok("GET", rest.c + "/consumer-groups/rt/lags")["data"]
    assert [(r["current_offset"], r["lag"]) for r in lags] == [(4, 6)]


def test_lag_history_and_rates(rest, hg):
    import asyncio
    from console.app import CONSOLE
    state = next(r.app[CONSOLE] for r in hg.broker.http.runners if CONSOLE in r.app)

    def on_loop(coro):
        return asyncio.run_coroutine_threadsafe(coro, hg._loop).result(10)

    async def sample():
        state.rates.sample()
        await state.lags.sample()
    on_loop(sample())
    _produce(hg, "reset-time", [(None, b"y" * 100, None)] * 5)
    on_loop(sample())
    hist = rest.ok("GET", rest.c + "/consumer-groups/rt/lag-history")
    assert hist["kind"] == "HourglassConsumerLagHistory"
    assert [h["total_lag"] for h in hist["data"]][-2:] == [6, 11]
    assert hist["data"][-1]["partitions"] == {"reset-time:0": 11}
    rates = rest.ok("GET", rest.c + "/rates")["data"]
    assert rates[-1]["records_in_per_sec"] > 0 and rates[-1]["bytes_in_per_sec"] > 0


def test_open_transaction_holds_the_lso(rest, hg):
    rest.ok("POST", rest.c + "/topics", {"topic_name": "txn", "partitions_count": 1}, 201)
    _produce(hg, "txn", [(None, b"before", None)] * 3)
    p = Producer({"bootstrap.servers": hg.bootstrap_servers, "transactional.id": "tx-1"})
    p.init_transactions(10)
    p.begin_transaction()
    p.produce("txn", value=b"in-txn", partition=0)
    p.flush(10)
    txns = rest.ok("GET", rest.c + "/transactions")["data"]
    t = next(t for t in txns if t["transactional_id"] == "tx-1")
    assert t["state"] == "Ongoing"
    assert t["partitions"] == [{"topic_name": "txn", "partition_id": 0, "first_offset": 3, "last_stable_offset": 3,
                                "high_watermark": 4}]
    part = rest.ok("GET", rest.c + "/topics/txn/partitions/0")
    assert (part["latest_offset"], part["last_stable_offset"]) == (4, 3)
    committed_view = rest.ok("GET", rest.c + "/topics/txn/partitions/0/records?position=beginning&isolation=read_committed")
    assert [r["offset"] for r in committed_view["data"]] == [0, 1, 2]
    p.commit_transaction(10)
    part = rest.ok("GET", rest.c + "/topics/txn/partitions/0")
    assert part["last_stable_offset"] == part["latest_offset"] == 5  # the commit marker took offset 4
    everything = rest.ok("GET", rest.c + "/topics/txn/partitions/0/records?position=beginning")["data"]
    assert [r["offset"] for r in everything] == [0, 1, 2, 3]  # the marker is not a record


BAD = [
    ("POST", "/topics", b"{not json", 400, 400),
    ("POST", "/topics", b"[]", 400, 400),
    ("POST", "/topics", b'{"partitions_count": 1}', 400, 400),
    ("POST", "/topics", b'{"topic_name": "bad name!"}', 400, 40002),
    ("POST", "/topics", b'{"topic_name": "x", "partitions_count": "many"}', 400, 400),
    ("POST", "/topics", b'{"topic_name": "x", "replication_factor": 3}', 400, 40002),
    ("POST", "/topics", b'{"topic_name": "produced"}', 400, 40002),
    ("GET", "/topics/nope", None, 404, 40403),
    ("DELETE", "/topics/nope", None, 404, 40403),
    ("GET", "/topics/nope/partitions", None, 404, 40403),
    ("GET", "/topics/nope/configs", None, 404, 40403),
    ("GET", "/topics/produced/partitions/x", None, 404, 40403),
    ("POST", "/topics/nope/records", b'{"value": {"data": 1}}', 404, 40403),
    ("POST", "/topics/produced/records", b'{"partition_id": 9, "value": {"data": 1}}', 404, 40403),
    ("POST", "/topics/produced/records", b'{"value": {"type": "BINARY", "data": "%%%"}}', 400, 400),
    ("POST", "/topics/produced/records", b'{"value": {"type": "AVRO", "data": {"a": 1}}}', 400, 40002),
    ("POST", "/topics/produced/records", b'{"value": {"schema_id": 1, "data": {"a": 1}}}', 400, 40002),
    ("POST", "/topics/produced/records", b'{"timestamp": "yesterday", "value": {"data": 1}}', 400, 400),
    ("POST", "/topics/produced/records", b'{"partition_id": "one", "value": {"data": 1}}', 400, 400),
    ("POST", "/topics/produced/records", b'', 400, 400),
    ("GET", "/topics/produced/partitions/0/records?offset=999999", None, 400, 40002),
    ("GET", "/topics/produced/partitions/0/records?offset=-5", None, 400, 400),
    ("GET", "/topics/produced/partitions/0/records?from=never", None, 400, 400),
    ("GET", "/topics/produced/partitions/0/records?offset=0&max_records=0", None, 400, 400),
    ("GET", "/topics/produced/partitions/0/records?offset=0&position=end", None, 400, 400),
    ("GET", "/topics/produced/partitions/7/records?offset=0", None, 404, 40403),
    ("GET", "/topics/nope/partitions/0/segments", None, 404, 40403),
    ("GET", "/consumer-groups/no-such-group", None, 404, 404),
    ("GET", "/consumer-groups/no-such-group/lags", None, 404, 404),
    ("GET", "/consumer-groups/no-such-group/consumers/x", None, 404, 404),
    ("POST", "/consumer-groups/g/offsets:reset", b'{"position": "sideways"}', 400, 40002),
    ("POST", "/topics/produced/configs:alter", b'{"data": [{"name": "retention.ms", "operation": "TWIST"}]}', 400,
     40002),
    ("PUT", "/topics/produced/configs/no.such.key", b'{"value": "1"}', 400, 40002),
    ("GET", "/brokers/7", None, 404, 404),
    ("GET", "/nothing-here", None, 404, 404),
]


@pytest.mark.parametrize("method,path,raw,status,code", BAD, ids=[f"{m} {p} {r!r:.40}" for m, p, r, *_ in BAD])
def test_bad_input_gets_confluent_error_json(rest, method, path, raw, status, code):
    s, body, headers = rest.call(method, rest.c + path, raw=raw)
    error(body, status, code, s)
    assert headers["Content-Type"].startswith("application/json")


def test_unknown_cluster_and_the_broker_keeps_serving(rest, hg):
    s, body, _ = rest.get("/v3/clusters/not-this-one/topics")
    error(body, 404, 404, s)
    assert rest.ok("GET", "/v3/clusters")["data"]
    assert AdminClient({"bootstrap.servers": hg.bootstrap_servers}).list_topics(timeout=10).topics


def test_acls_need_an_authorizer(rest):
    s, body, _ = rest.get(rest.c + "/acls")
    error(body, 400, 40002, s)  # Confluent answers SecurityDisabledException so




def test_every_related_link_answers(rest, hg):
    """Confluent's clients follow ``related`` links: each one answers 200 with a resource or a
    list (reassignments: an empty list; one node never reassigns)."""
    rest.ok("POST", rest.c + "/topics", {"topic_name": "linked", "partitions_count": 2}, 201)
    c = Consumer({"bootstrap.servers": hg.bootstrap_servers, "group.id": "linked-g", "auto.offset.reset": "earliest"})
    c.subscribe(["linked"])
    c.poll(1)
    try:
        starts = [rest.c, rest.c + "/brokers/1", rest.c + "/topics/linked", rest.c + "/topics/linked/partitions/0",
                  rest.c + "/consumer-groups/linked-g"]
        seen = set()
        for start in starts:
            res = rest.ok("GET", start)
            for name, v in res.items():
                if isinstance(v, dict) and "related" in v and v["related"] not in seen:
                    seen.add(v["related"])
                    if name == "acls":  # no authorizer on this broker: Confluent's 400 (SecurityDisabled)
                        assert rest.get(v["related"][len(rest.url):])[0] == 400
                        continue
                    if name == "reassignment":  # one partition's reassignment: none in progress, 404
                        assert rest.get(v["related"][len(rest.url):])[0] == 404
                        continue
                    body = rest.ok("GET", v["related"][len(rest.url):])
                    assert body["kind"].startswith("Kafka"), (name, body)
                    if body["kind"].endswith("List"):
                        assert body["metadata"]["self"] == v["related"]
        assert len(seen) >= 15
    finally:
        c.close()
    replicas = rest.ok("GET", rest.c + "/topics/linked/partitions/1/replicas")["data"]
    assert [(r["broker_id"], r["is_leader"], r["is_in_sync"]) for r in replicas] == [(1, True, True)]
    cfg = rest.ok("GET", rest.c + "/brokers/1/configs/log.retention.hours")
    assert cfg["kind"] == "KafkaBrokerConfig" and cfg["value"] == "168"
    s, body, _ = rest.get(rest.c + "/topics/linked/partitions/0/reassignment")
    assert s == 404 and body["error_code"] == 404
