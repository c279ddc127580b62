"""controller_mutation_rate on CreateTopics / CreatePartitions / DeleteTopics (KIP-599: strict
versions refuse a topic with THROTTLING_QUOTA_EXCEEDED while the client's token bucket is
negative, older versions only throttle), and a throttled client that keeps sending: its
requests wait, everyone else is served."""
from __future__ import annotations

import time

from protocol.errors import ErrorCode as E
from protocol.messages.create_partitions import CreatePartitionsRequest as CP
from protocol.messages.create_topics import CreateTopicsRequest as CT
from protocol.messages.delete_topics import DeleteTopicsRequest as DT
from protocol.messages.metadata import MetadataRequest as MD
from tests.helpers.raw import RawClient
from tests.quotas.test_quota_throttling import set_quota

THROTTLED = (E.THROTTLING_QUOTA_EXCEEDED, "The throttling quota has been exceeded.")


def create(c, version, *names, partitions=3):
    return c.request(19, version, CT(topics=[CT.CreatableTopic(name=n, num_partitions=partitions, replication_factor=1,
                                                               assignments=[], configs=[]) for n in names],
                                     timeout_ms=5000, validate_only=False))


def test_controller_mutation_rate(broker_factory):
    # 1 partition/s with 2 windows of 1 s: a burst of 2 partitions' worth of tokens
    b = broker_factory({"controller.quota.window.num": 2, "controller.quota.window.size.seconds": 1})
    set_quota(b.bootstrap, [("client-id", "mut")], "controller_mutation_rate", 1.0)
    c, free = RawClient(b.bootstrap, client_id="mut"), RawClient(b.bootstrap, client_id="free")
    try:
        r = create(c, 7, "m1", "m2")
        # m1 takes the full bucket and more (3 > 2 tokens: allowed, the bucket goes negative)
        assert [(t.name, t.error_code) for t in r.topics] == [("m1", 0), ("m2", E.THROTTLING_QUOTA_EXCEEDED)]
        assert r.topics[1].error_message == THROTTLED[1]
        assert 500 <= r.throttle_time_ms <= 1000, r.throttle_time_ms
        t0 = time.monotonic()
        r = c.request(37, 3, CP(topics=[CP.CreatePartitionsTopic(name="m1", count=4, assignments=None)],
                                timeout_ms=5000, validate_only=False))
        # the connection was muted for the throttle time; by now the bucket has refilled a bit
        assert time.monotonic() - t0 >= 0.4
        assert r.results[0].error_code == 0, r
        r = c.request(20, 5, DT(topic_names=["m1"], timeout_ms=5000))
        assert (r.responses[0].error_code, r.responses[0].error_message) == THROTTLED
        # an older version is permissive: done, and only throttled
        r = create(c, 5, "m3", partitions=1)
        assert r.topics[0].error_code == 0 and r.throttle_time_ms > 0
        # another client is not touched
        r = create(free, 7, "f1", "f2", "f3", partitions=5)
        assert [t.error_code for t in r.topics] == [0, 0, 0] and r.throttle_time_ms == 0
    finally:
        c.close()
        free.close()


def test_a_throttled_client_that_keeps_sending_waits_and_others_are_served(broker_factory):
    b = broker_factory({"quota.window.num": 2})
    set_quota(b.bootstrap, [("client-id", "greedy")], "request_percentage", 0.001)
    greedy, other = RawClient(b.bootstrap, client_id="greedy"), RawClient(b.bootstrap, client_id="other")
    md = MD(topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    try:
        # pipelined requests, not waiting for throttles: the broker reads them one mute at a time
        for _ in range(5):
            greedy.send_frame(greedy.encode(3, 12, md))
        t0 = time.monotonic()
        for _ in range(20):
            assert other.request(3, 12, md).throttle_time_ms == 0
        assert time.monotonic() - t0 < 5
        for _ in range(5):
            greedy.recv_frame()
        assert time.monotonic() - t0 >= 1.0  # at least one mute of up to a window in between
    finally:
        greedy.close()
        other.close()


def test_connection_creation_rate_per_ip(broker_factory):
    """ip=127.0.0.1 at 2 connections/s (2 windows of 1 s: 2 connections at once): the third
    connection from that address is closed unanswered; an ip=<default> quota does not apply
    to an address with its own; removing the quota lets connections in again."""
    b = broker_factory({"quota.window.num": 2})
    set_quota(b.bootstrap, [("ip", "127.0.0.1")], "connection_creation_rate", 2.0)
    set_quota(b.bootstrap, [("ip", None)], "connection_creation_rate", 1000.0)
    md = MD(topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    ok, refused = 0, 0
    clients = []
    for _ in range(4):
        c = RawClient(b.bootstrap, timeout=3)
        clients.append(c)
        try:
            c.request(3, 12, md)
            ok += 1
        except (ConnectionError, OSError):
            refused += 1
    for c in clients:
        c.close()
    assert ok == 2 and refused == 2, (ok, refused)
    time.sleep(2.1)  # the quota's samples expire (2 windows), so the alteration's own connection is let in
    set_quota(b.bootstrap, [("ip", "127.0.0.1")], "connection_creation_rate", None)
    set_quota(b.bootstrap, [("ip", None)], "connection_creation_rate", None)
    for _ in range(6):
        c = RawClient(b.bootstrap)
        c.request(3, 12, md)
        c.close()


def test_clients_closing_while_muted_leave_nothing_behind(broker_factory):
    """Rounds of a throttled client that pipelines requests and hangs up while its connection
    is muted, next to a client without a quota: the muted connections go away, the broker keeps
    answering the other client at once, and a quota removed mid-way stops the throttling."""
    b = broker_factory({"quota.window.num": 2, "metrics.port": 0})
    set_quota(b.bootstrap, [("client-id", "greedy")], "request_percentage", 0.001)
    md = MD(topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    other = RawClient(b.bootstrap, client_id="other")
    try:
        for round_ in range(30):
            g = RawClient(b.bootstrap, client_id="greedy")
            for _ in range(3):
                g.send_frame(g.encode(3, 12, md))
            g.recv_frame()  # answered at once; the connection is muted now
            g.close()
            t0 = time.monotonic()
            assert other.request(3, 12, md).throttle_time_ms == 0
            assert time.monotonic() - t0 < 1.0, round_
        set_quota(b.bootstrap, [("client-id", "greedy")], "request_percentage", None)
        g = RawClient(b.bootstrap, client_id="greedy")
        assert [g.request(3, 12, md).throttle_time_ms for _ in range(3)] == [0, 0, 0]
        g.close()
        # every muted connection was closed once its mute ended (1 s at most)
        import re
        import urllib.request
        url = re.search(r"metrics on (http://\S+)/metrics", b.log_text()).group(1)

        def open_connections():
            text = urllib.request.urlopen(url + "/metrics", timeout=5).read().decode()
            return float(re.search(r"^hourglass_connections_open (\S+)$", text, re.M).group(1))
        from tests.helpers.clients import wait_until
        wait_until(lambda: open_connections() == 1, timeout=5, what="muted connections closed")
    finally:
        other.close()


def test_a_fetch_over_its_request_quota_is_answered_empty(broker_factory):
    """Kafka answers a Fetch over request_percentage with the throttle time and no data (its
    bytes are not counted); the same fetch from a client without a quota gets the records."""
    from protocol.messages.fetch import FetchRequest as FR
    from protocol.messages.produce import ProduceRequest as PR
    from protocol.records import build_batch

    b = broker_factory({"quota.window.num": 2})
    c = RawClient(b.bootstrap, client_id="free")
    create(c, 7, "ft", partitions=1)
    batch = build_batch([(None, b"v" * 100, 1_700_000_000_000 + i) for i in range(10)])
    r = c.request(0, 9, PR(transactional_id=None, acks=1, timeout_ms=5000, topic_data=[
        PR.TopicProduceData(name="ft", partition_data=[PR.PartitionProduceData(index=0, records=batch)])]))
    assert r.responses[0].partition_responses[0].error_code == 0
    set_quota(b.bootstrap, [("client-id", "busy")], "request_percentage", 0.0001)
    fetch = FR(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=65536, isolation_level=0, session_id=0,
               session_epoch=-1, topics=[FR.FetchTopic(topic="ft", partitions=[FR.FetchPartition(
                   partition=0, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
                   partition_max_bytes=65536)])], forgotten_topics_data=[], rack_id="")
    busy = RawClient(b.bootstrap, client_id="busy")
    try:
        got = busy.request(1, 12, fetch)
        assert got.throttle_time_ms > 0 and got.responses == []
        free = c.request(1, 12, fetch)
        assert free.throttle_time_ms == 0 and len(free.responses[0].partitions[0].records) > 0
    finally:
        busy.close()
        c.close()
