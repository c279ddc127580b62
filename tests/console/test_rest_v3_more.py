"""REST v3 beyond the basics: share groups, LogAppendTime topics, following a partition live,
and a topic deleted under in-flight requests (answered, never a 500)."""
from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from hourglass.embedded import EmbeddedBroker
from tests.helpers.rest_v3 import Rest


@pytest.fixture(scope="module")
def hg():
    with EmbeddedBroker(console=True) as b:
        yield b


@pytest.fixture(scope="module")
def rest(hg):
    return Rest(hg.console_url, hg.broker.cluster_id)


def test_share_group_members_and_lag(rest, hg):
    from confluent_kafka import ShareConsumer
    rest.ok("POST", rest.c + "/topics", {"topic_name": "shared", "partitions_count": 1}, 201)
    rest.ok("POST", rest.c + "/topics/shared/records",
            raw=b"\n".join(b'{"value": {"type": "STRING", "data": "m%d"}}' % i for i in range(10)))
    admin = AdminClient({"bootstrap.servers": hg.bootstrap_servers})
    res = ConfigResource(ResourceType.GROUP, "sg", incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result(30)
    c = ShareConsumer({"bootstrap.servers": hg.bootstrap_servers, "group.id": "sg", "client.id": "sharer"})
    c.subscribe(["shared"])
    try:
        got, deadline = 0, time.time() + 30
        while got < 10 and time.time() < deadline:
            got += sum(1 for m in c.poll(0.5) if m.error() is None)
        assert got == 10
        c.poll(0.5)  # acknowledges the records (implicit acknowledgement)
        groups = rest.ok("GET", rest.c + "/share-groups")["data"]
        assert [(g["consumer_group_id"], g["type"], g["kind"]) for g in groups] == [("sg", "SHARE", "KafkaShareGroup")]
        assert "sg" not in [g["consumer_group_id"] for g in rest.ok("GET", rest.c + "/consumer-groups")["data"]]
        members = rest.ok("GET", rest.c + "/share-groups/sg/consumers")["data"]
        assert [m["client_id"] for m in members] == ["sharer"]
        deadline = time.time() + 20
        while True:  # the share-partition start offset moves once the acknowledgements land
            lags = rest.ok("GET", rest.c + "/share-groups/sg/lags")["data"]
            if lags and lags[0]["current_offset"] == 10 or time.time() > deadline:
                break
            c.poll(0.2)
        assert [(r["topic_name"], r["current_offset"], r["log_end_offset"], r["lag"]) for r in lags] == \
            [("shared", 10, 10, 0)]
    finally:
        c.close()
    s, body, _ = rest.get(rest.c + "/consumer-groups/sg")
    assert s == 404 and body["error_code"] == 404


def test_log_append_time_topic(rest):
    rest.ok("POST", rest.c + "/topics", {"topic_name": "lat", "partitions_count": 1, "configs": [
        {"name": "message.timestamp.type", "value": "LogAppendTime"}]}, 201)
    before = int(time.time() * 1000)
    r = rest.ok("POST", rest.c + "/topics/lat/records", {"value": {"type": "STRING", "data": "x"},
                                                          "timestamp": "2001-01-01T00:00:00Z"})
    assert not r["timestamp"].startswith("2001")
    rec = rest.ok("GET", rest.c + "/topics/lat/partitions/0/records?position=beginning")["data"][0]
    assert rec["timestamp_type"] == "LogAppendTime" and rec["timestamp"] >= before


def test_follow_live_long_polls_until_a_record_arrives(rest):
    rest.ok("POST", rest.c + "/topics", {"topic_name": "live", "partitions_count": 1}, 201)
    out = {}

    def wait():
        t0 = time.monotonic()
        out["page"] = rest.ok("GET", rest.c + "/topics/live/partitions/0/records?offset=0&wait_ms=10000")
        out["seconds"] = time.monotonic() - t0
    t = threading.Thread(target=wait)
    t.start()
    time.sleep(0.5)
    rest.ok("POST", rest.c + "/topics/live/records", {"value": {"type": "STRING", "data": "now"}})
    t.join(15)
    assert [r["value"]["text"] for r in out["page"]["data"]] == ["now"] and out["seconds"] < 9


def test_topic_deleted_under_in_flight_requests(rest):
    for i in range(25):
        name = f"doomed-{i}"
        rest.ok("POST", rest.c + "/topics", {"topic_name": name, "partitions_count": 2}, 201)
        answers = []

        def reader(path):
            answers.append(rest.get(rest.c + path))
        paths = [f"/topics/{name}/partitions/0/records?offset=0&wait_ms=3000",
                 f"/topics/{name}/partitions/1/records?position=end",
                 f"/topics/{name}/partitions", f"/topics/{name}/partitions/0/segments"]
        threads = [threading.Thread(target=reader, args=(p,)) for p in paths]
        for t in threads:
            t.start()
        assert rest.call("DELETE", rest.c + f"/topics/{name}")[0] == 204
        for t in threads:
            t.join(10)
        assert len(answers) == 4
        for status, body, _ in answers:
            assert status in (200, 404), (status, body)
            if status == 404:
                assert body["error_code"] == 40403
    assert rest.ok("GET", "/v3/clusters")["data"]


def test_records_the_log_refuses_are_bad_requests(rest):
    rest.ok("POST", rest.c + "/topics", {"topic_name": "strict", "partitions_count": 1, "configs": [
        {"name": "message.timestamp.before.max.ms", "value": "60000"}, {"name": "max.message.bytes", "value": "1000"}]},
        201)
    s, body, _ = rest.call("POST", rest.c + "/topics/strict/records",
                           {"value": {"type": "STRING", "data": "old"}, "timestamp": "2001-01-01T00:00:00Z"})
    assert (s, body["error_code"]) == (400, 40002) and "timestamp" in body["message"].lower()
    s, body, _ = rest.call("POST", rest.c + "/topics/strict/records", {"value": {"type": "STRING", "data": "x" * 5000}})
    assert (s, body["error_code"]) == (400, 40002), body
    assert rest.ok("POST", rest.c + "/topics/strict/records", {"value": {"type": "STRING", "data": "ok"}})["offset"] == 0


def test_an_open_console_without_users_is_warned_about(caplog):
    import logging
    caplog.set_level(logging.WARNING, logger="console.app")
    with EmbeddedBroker({"console.listeners": "http://0.0.0.0:0"}) as b:
        assert Rest(b.console_url, b.broker.cluster_id).ok("GET", "/v3/clusters")["data"]
    assert "no SASL users" in caplog.text
    caplog.clear()
    with EmbeddedBroker(console=True) as b:  # loopback: nothing to warn about
        assert Rest(b.console_url, b.broker.cluster_id).ok("GET", "/v3/clusters")["data"]
    assert "no SASL users" not in caplog.text


def test_read_committed_pages_skip_every_aborted_transaction(rest, hg):
    from confluent_kafka import Producer
    rest.ok("POST", rest.c + "/topics", {"topic_name": "aborts", "partitions_count": 1}, 201)
    p = Producer({"bootstrap.servers": hg.bootstrap_servers, "transactional.id": "aborter", "linger.ms": 0})
    p.init_transactions(10)
    for outcome in ("abort", "abort", "commit", "abort"):  # one producer, several aborted stretches
        p.begin_transaction()
        for i in range(2):
            p.produce("aborts", value=f"{outcome}-{i}".encode(), partition=0)
        assert p.flush(10) == 0
        p.abort_transaction(10) if outcome == "abort" else p.commit_transaction(10)
    committed = rest.ok("GET", rest.c + "/topics/aborts/partitions/0/records?position=beginning&isolation=read_committed")
    assert [r["value"]["text"] for r in committed["data"]] == ["commit-0", "commit-1"] and committed["end_reached"]
    everything = rest.ok("GET", rest.c + "/topics/aborts/partitions/0/records?position=beginning")
    assert len(everything["data"]) == 8  # the 4 markers are not records
