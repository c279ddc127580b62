"""Share groups (KIP-932) against a real broker, with confluent-kafka's ShareConsumer
(librdkafka) and, for exact error codes, the raw client.

The broker runs with a 2 s acquisition lock (``group.share.record.lock.duration.ms``, its
lower bound lowered) so lock expiry is seen quickly. No Java share consumer: the only
kafka-clients jar the tests can get is 3.9.1, older than KafkaShareConsumer's GA (4.1).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import (
    AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType,
)

from protocol.errors import ErrorCode as E
from protocol.messages.share_acknowledge import ShareAcknowledgeRequest as AckReq
from protocol.messages.share_fetch import ShareFetchRequest as FetchReq
from protocol.messages.share_group_heartbeat import ShareGroupHeartbeatRequest as HbReq
from tests.helpers.raw import RawClient

LOCK_MS = 2000
# heartbeats every second: as in Kafka 4.4, a member gets its partitions one heartbeat after
# its join (their share state is initialized after the heartbeat that subscribed to them)
HEARTBEAT = {"group.share.heartbeat.interval.ms": 1000, "group.share.min.heartbeat.interval.ms": 1000}
BROKER = {"group.share.record.lock.duration.ms": LOCK_MS, "group.share.min.record.lock.duration.ms": 1000,
          **HEARTBEAT}


@pytest.fixture
def sbroker(broker_factory):
    return broker_factory(BROKER)


def setup_topic(bs: str, topic: str, n: int, *, timestamps=None, group: str = "g", reset: str = "earliest",
                **group_configs) -> None:
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(topic, 1)])[topic].result()
    p = Producer({"bootstrap.servers": bs, "linger.ms": 0})
    for i in range(n):
        kw = {"timestamp": timestamps[i]} if timestamps else {}
        p.produce(topic, value=b"%d" % i, **kw)
        if timestamps:
            p.flush()  # one batch per record: each keeps its own timestamp in the time index
    p.flush()
    set_group_configs(bs, group, **{"share.auto.offset.reset": reset, **group_configs})


def set_group_configs(bs: str, group: str, **configs) -> None:
    admin = AdminClient({"bootstrap.servers": bs})
    res = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(k, str(v), incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()])
    admin.incremental_alter_configs([res])[res].result()


def consumer(bs: str, group: str = "g", explicit: bool = False, topic: str = "t") -> ShareConsumer:
    c = ShareConsumer({"bootstrap.servers": bs, "group.id": group,
                       "share.acknowledgement.mode": "explicit" if explicit else "implicit"})
    c.subscribe([topic])
    return c


def poll(c: ShareConsumer, timeout: float = 0.5) -> list:
    return [m for m in c.poll(timeout) if m.error() is None]


def test_three_consumers_share_one_partition_each_record_at_one_at_a_time(sbroker):
    bs = sbroker.bootstrap
    setup_topic(bs, "t", 0)
    cs = [consumer(bs) for _ in range(3)]
    p = Producer({"bootstrap.servers": bs, "linger.ms": 0})
    seen: dict[int, str] = {}
    per_consumer = {i: 0 for i in range(3)}
    produced = 0
    deadline = time.time() + 30
    try:
        while (len(seen) < 300) and time.time() < deadline:
            # the next 20 once the last are consumed: all three members (assigned one
            # heartbeat after their join) are there for most of the records
            if produced < 300 and len(seen) >= produced:
                for _ in range(20):
                    p.produce("t", value=b"%d" % produced)
                    produced += 1
                p.flush()
            for i, c in enumerate(cs):
                for m in poll(c, 0.1):
                    assert m.offset() not in seen, f"offset {m.offset()} delivered twice"
                    seen[m.offset()] = i
                    per_consumer[i] += 1
                    assert m.delivery_count() == 1
        assert sorted(seen) == list(range(300))
        assert sum(1 for n in per_consumer.values() if n) >= 2, per_consumer  # the partition was shared
    finally:
        for c in cs:
            c.close()


def test_release_redelivers_with_count_2_and_reject_never(sbroker):
    bs = sbroker.bootstrap
    setup_topic(bs, "t", 4)
    c1 = consumer(bs, explicit=True)
    try:
        first = []
        deadline = time.time() + 15
        while len(first) < 4 and time.time() < deadline:
            for m in poll(c1):
                first.append(m)
                # offset 0 released, 1 rejected, the rest accepted
                c1.acknowledge(m, {0: AcknowledgeType.RELEASE, 1: AcknowledgeType.REJECT}.get(
                    m.offset(), AcknowledgeType.ACCEPT))
        assert [m.offset() for m in first] == [0, 1, 2, 3]
        assert all(m.delivery_count() == 1 for m in first)
        c1.commit_sync()
        again = []
        deadline = time.time() + 2 * LOCK_MS / 1000 + 3
        while time.time() < deadline:
            for m in poll(c1):
                again.append((m.offset(), m.delivery_count()))
                c1.acknowledge(m, AcknowledgeType.ACCEPT)
            c1.commit_sync()
        assert again == [(0, 2)]  # the rejected record never comes back, accepted ones neither
    finally:
        c1.close()


HOLDER = textwrap.dedent("""
    import sys
    from confluent_kafka import ShareConsumer
    c = ShareConsumer({"bootstrap.servers": sys.argv[1], "group.id": "g", "share.acknowledgement.mode": "explicit"})
    c.subscribe(["t"])
    got = []
    while not got:
        got = [m.offset() for m in c.poll(0.5) if m.error() is None]
    print(",".join(map(str, got)), flush=True)
    sys.stdin.read()  # hold the records until killed
""")


@pytest.mark.parametrize("sig", ["SIGKILL", "SIGSTOP"])
def test_member_dying_or_hanging_with_records_has_them_redelivered(sbroker, sig):
    """kill -9 closes the member's connection: as Kafka 4.2's share session cache, the broker
    releases its records at once. A member that hangs (SIGSTOP: connection open, session
    alive) keeps them until the acquisition lock expires."""
    bs = sbroker.bootstrap
    setup_topic(bs, "t", 5)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, bs], stdout=subprocess.PIPE, stdin=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONPATH": ""})
    try:
        c = consumer(bs)  # joined first: it holds the partition by the time the records are released
        held = [int(x) for x in holder.stdout.readline().strip().split(",")]
        assert held == [0, 1, 2, 3, 4]
        stopped_at = time.time()
        os.kill(holder.pid, getattr(signal, sig))
        got = []
        deadline = time.time() + 15
        while len(got) < 5 and time.time() < deadline:
            got += [(m.offset(), m.delivery_count(), time.time() - stopped_at) for m in poll(c)]
        c.close()
        assert [(o, n) for o, n, _ in got] == [(o, 2) for o in held]
        first = min(t for _, _, t in got)
        if sig == "SIGSTOP":
            assert first >= LOCK_MS / 1000 - 0.5  # not before the lock expired
        else:
            assert first < LOCK_MS / 1000  # released with the connection
    finally:
        holder.kill()
        holder.wait()


def test_delivery_count_limit_archives(sbroker):
    bs = sbroker.bootstrap
    setup_topic(bs, "t", 2, **{"share.delivery.count.limit": 2})
    c = consumer(bs, explicit=True)
    deliveries = []
    try:
        deadline = time.time() + 12
        while time.time() < deadline and not any(o == 1 for o, _ in deliveries):
            for m in poll(c):
                deliveries.append((m.offset(), m.delivery_count()))
                c.acknowledge(m, AcknowledgeType.RELEASE if m.offset() == 0 else AcknowledgeType.ACCEPT)
            c.commit_sync()
        for _ in range(4):  # nothing more comes
            for m in poll(c):
                deliveries.append((m.offset(), m.delivery_count()))
                c.acknowledge(m, AcknowledgeType.ACCEPT)
    finally:
        c.close()
    assert sorted(deliveries) == [(0, 1), (0, 2), (1, 1)] or sorted(deliveries) == [(0, 1), (0, 2), (1, 1), (1, 2)]
    assert [d for d in deliveries if d[0] == 0] == [(0, 1), (0, 2)]


def test_by_duration_starts_at_the_first_record_stamped_within_the_duration(sbroker):
    bs = sbroker.bootstrap
    now = int(time.time() * 1000)
    minutes = [180, 150, 120, 90, 61, 59, 30, 1]
    setup_topic(bs, "t", len(minutes), timestamps=[now - m * 60_000 for m in minutes], reset="by_duration:PT1H")
    c = consumer(bs)
    got = []
    try:
        deadline = time.time() + 10
        while len(got) < 3 and time.time() < deadline:
            got += [m.offset() for m in poll(c)]
    finally:
        c.close()
    assert got == [5, 6, 7]


@pytest.mark.parametrize("how", ["restart", "kill"])
def test_acknowledged_records_stay_acknowledged_across_restart(broker_factory, how):
    b = broker_factory(BROKER)
    bs = b.bootstrap
    setup_topic(bs, "t", 10)
    c = consumer(bs, explicit=True)
    seen = []
    deadline = time.time() + 10
    while len(seen) < 10 and time.time() < deadline:
        for m in poll(c):
            seen.append(m.offset())
            if m.offset() < 6:
                c.acknowledge(m, AcknowledgeType.ACCEPT)
    assert seen == list(range(10))
    res = c.commit_sync()
    assert all(v is None for v in res.values()), res
    # 6..9 are in flight (acquired, never acknowledged) when the broker goes down
    if how == "kill":
        b.kill()
    else:
        b.stop()
    b.restart(port=int(bs.rsplit(":", 1)[1]))
    try:
        c.close()
    except Exception:
        pass
    c2 = consumer(b.bootstrap)
    again = []
    try:
        deadline = time.time() + 15
        while len(again) < 4 and time.time() < deadline:
            again += [(m.offset(), m.delivery_count()) for m in poll(c2)]
        for _ in range(2):
            again += [(m.offset(), m.delivery_count()) for m in poll(c2)]
    finally:
        c2.close()
    assert [o for o, _ in again] == [6, 7, 8, 9]


# ---- exact errors through the raw client ----------------------------------------------------------

def _topic_id(raw: RawClient, topic: str) -> bytes:
    from protocol.messages.metadata import MetadataRequest
    md = raw.request(3, 12, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(topic_id=bytes(16), name=topic)],
                                            allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    return md.topics[0].topic_id


def _fetch(raw, member, epoch, tid, acks=(), max_wait=0):
    P = FetchReq.FetchTopic.FetchPartition
    B = P.AcknowledgementBatch
    return raw.request(78, 1, FetchReq(
        group_id="g", member_id=member, share_session_epoch=epoch, max_wait_ms=max_wait, min_bytes=1,
        max_bytes=1 << 20, max_records=100, batch_size=100,
        topics=[FetchReq.FetchTopic(topic_id=tid, partitions=[P(partition_index=0, acknowledgement_batches=[
            B(first_offset=a, last_offset=z, acknowledge_types=[t]) for a, z, t in acks])])],
        forgotten_topics_data=[]))


def _ack(raw, member, epoch, tid, acks):
    P = AckReq.AcknowledgeTopic.AcknowledgePartition
    B = P.AcknowledgementBatch
    return raw.request(79, 1, AckReq(group_id="g", member_id=member, share_session_epoch=epoch, topics=[
        AckReq.AcknowledgeTopic(topic_id=tid, partitions=[P(partition_index=0, acknowledgement_batches=[
            B(first_offset=a, last_offset=z, acknowledge_types=[t]) for a, z, t in acks])])]))


def test_raw_errors(sbroker):
    bs = sbroker.bootstrap
    setup_topic(bs, "t", 5)
    set_group_configs(bs, "g", **{"share.assignment.interval.ms": 0})  # each change assigned at once
    raw = RawClient(bs)
    try:
        tid = _topic_id(raw, "t")
        hb = raw.request(76, 1, HbReq(group_id="g", member_id="m1", member_epoch=0, subscribed_topic_names=["t"]))
        assert hb.error_code == 0 and hb.member_epoch == 2  # a new group is at epoch 1 (Kafka 4.4)
        assert hb.assignment.topic_partitions == []  # the share-partition is initialized after this heartbeat
        hb = raw.request(76, 1, HbReq(group_id="g", member_id="m1", member_epoch=2))
        assert hb.error_code == 0 and hb.member_epoch == 3
        assert [(tp.topic_id, tp.partitions) for tp in hb.assignment.topic_partitions] == [(tid, [0])]
        # heartbeats: empty member id, unknown member, fenced epoch
        assert raw.request(76, 1, HbReq(group_id="g", member_id="", member_epoch=0,
                                        subscribed_topic_names=["t"])).error_code == E.INVALID_REQUEST
        assert raw.request(76, 1, HbReq(group_id="g", member_id="nobody", member_epoch=3)).error_code \
            == E.UNKNOWN_MEMBER_ID
        assert raw.request(76, 1, HbReq(group_id="g", member_id="m1", member_epoch=7)).error_code \
            == E.FENCED_MEMBER_EPOCH
        assert raw.request(76, 1, HbReq(group_id="g", member_id="m1", member_epoch=2)).error_code == 0  # the previous
        assert raw.request(76, 1, HbReq(group_id="g", member_id="m1", member_epoch=1)).error_code \
            == E.FENCED_MEMBER_EPOCH
        # no session yet
        assert _fetch(raw, "m1", 1, tid).error_code == E.SHARE_SESSION_NOT_FOUND
        assert _ack(raw, "m1", 1, tid, [(0, 0, 1)]).error_code == E.SHARE_SESSION_NOT_FOUND
        r = _fetch(raw, "m1", 0, tid, max_wait=1000)
        assert r.error_code == 0
        part = r.responses[0].partitions[0]
        assert [(a.first_offset, a.last_offset, a.delivery_count) for a in part.acquired_records] == [(0, 4, 1)]
        assert r.acquisition_lock_timeout_ms == LOCK_MS
        # wrong epoch (the next one is 1)
        assert _fetch(raw, "m1", 5, tid).error_code == E.INVALID_SHARE_SESSION_EPOCH
        assert _ack(raw, "m1", 0, tid, [(0, 0, 1)]).error_code == E.INVALID_SHARE_SESSION_EPOCH
        # a record never acquired (offset 7, past the in-flight 0..4: Kafka's INVALID_REQUEST),
        # then one acquired
        a = _ack(raw, "m1", 1, tid, [(7, 7, 1)])
        assert a.error_code == 0 and a.responses[0].partitions[0].error_code == E.INVALID_REQUEST
        a = _ack(raw, "m1", 2, tid, [(0, 0, 1)])
        assert a.responses[0].partitions[0].error_code == 0
        # another member cannot acknowledge m1's records
        raw.request(76, 1, HbReq(group_id="g", member_id="m2", member_epoch=0, subscribed_topic_names=["t"]))
        assert _fetch(raw, "m2", 0, tid).error_code == 0
        a = _ack(raw, "m2", 1, tid, [(1, 1, 1)])
        assert a.responses[0].partitions[0].error_code == E.INVALID_RECORD_STATE
        # after the lock expired, m1 cannot acknowledge what it held
        time.sleep(LOCK_MS / 1000 + 0.5)
        a = _ack(raw, "m1", 3, tid, [(1, 1, 1)])
        assert a.responses[0].partitions[0].error_code == E.INVALID_RECORD_STATE
        # ShareGroupDescribe: two members on the one partition
        from protocol.messages.share_group_describe import ShareGroupDescribeRequest
        d = raw.request(77, 1, ShareGroupDescribeRequest(group_ids=["g", "nope"], include_authorized_operations=False))
        g, nope = d.groups
        assert g.error_code == 0 and g.group_state == "Stable" and g.assignor_name == "simple"
        assert sorted(m.member_id for m in g.members) == ["m1", "m2"]
        assert all(m.assignment.topic_partitions[0].partitions == [0] for m in g.members)
        assert nope.error_code == E.GROUP_ID_NOT_FOUND
        # one namespace of group ids: a consumer-protocol heartbeat cannot take the share group
        from protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest as CHb
        assert raw.request(68, 1, CHb(group_id="g", member_id="c1", member_epoch=0, rebalance_timeout_ms=30000,
                                      subscribed_topic_names=["t"], topic_partitions=[])).error_code \
            == E.GROUP_ID_NOT_FOUND
        # a group config outside Kafka's bounds is refused
        with pytest.raises(Exception):
            set_group_configs(bs, "g", **{"share.auto.offset.reset": "sometimes"})
        with pytest.raises(Exception):
            set_group_configs(bs, "g", **{"no.such.key": "1"})
    finally:
        raw.close()


def test_share_group_offsets_list_and_delete_groups(sbroker):
    from protocol.messages.alter_share_group_offsets import AlterShareGroupOffsetsRequest as Alter
    from protocol.messages.delete_groups import DeleteGroupsRequest
    from protocol.messages.delete_share_group_offsets import DeleteShareGroupOffsetsRequest as Delete
    from protocol.messages.describe_share_group_offsets import DescribeShareGroupOffsetsRequest as Describe
    from protocol.messages.list_groups import ListGroupsRequest
    bs = sbroker.bootstrap
    setup_topic(bs, "t", 6)
    raw = RawClient(bs)
    try:
        tid = _topic_id(raw, "t")
        raw.request(76, 1, HbReq(group_id="g", member_id="m1", member_epoch=0, subscribed_topic_names=["t"]))
        _fetch(raw, "m1", 0, tid, max_wait=1000)
        _ack(raw, "m1", 1, tid, [(0, 2, 1)])  # 0..2 accepted: the start offset moves to 3

        def start_offset():
            d = raw.request(90, 0, Describe(groups=[Describe.DescribeShareGroupOffsetsRequestGroup(
                group_id="g", topics=None)]))
            (grp,) = d.groups
            assert grp.error_code == 0
            return [(t.topic_name, p.partition_index, p.start_offset) for t in grp.topics for p in t.partitions]
        assert start_offset() == [("t", 0, 3)]
        listed = raw.request(16, 5, ListGroupsRequest(states_filter=[], types_filter=["share"]))
        assert [(g.group_id, g.group_type, g.group_state, g.protocol_type) for g in listed.groups] == \
            [("g", "share", "Stable", "share")]
        alter = Alter(group_id="g", topics=[Alter.AlterShareGroupOffsetsRequestTopic(topic_name="t", partitions=[
            Alter.AlterShareGroupOffsetsRequestTopic.AlterShareGroupOffsetsRequestPartition(
                partition_index=0, start_offset=1)])])
        refused = raw.request(91, 0, alter)  # Kafka 4.4: a top-level error, no topics
        assert (refused.error_code, refused.error_message, refused.responses) == (
            E.NON_EMPTY_GROUP, "The group is not empty.", [])
        assert raw.request(42, 2, DeleteGroupsRequest(groups_names=["g"])).results[0].error_code == E.NON_EMPTY_GROUP
        assert raw.request(76, 1, HbReq(group_id="g", member_id="m1", member_epoch=-1)).member_epoch == -1
        # empty now: start over at offset 1 (in-flight state dropped)
        assert raw.request(91, 0, alter).responses[0].partitions[0].error_code == 0
        assert start_offset() == [("t", 0, 1)]
        raw.request(76, 1, HbReq(group_id="g", member_id="m2", member_epoch=0, subscribed_topic_names=["t"]))
        r = _fetch(raw, "m2", 0, tid, max_wait=1000)
        acq = r.responses[0].partitions[0].acquired_records
        assert [(a.first_offset, a.last_offset, a.delivery_count) for a in acq] == [(1, 5, 1)]
        raw.request(76, 1, HbReq(group_id="g", member_id="m2", member_epoch=-1))
        d = raw.request(92, 0, Delete(group_id="g", topics=[Delete.DeleteShareGroupOffsetsRequestTopic(topic_name="t")]))
        assert d.error_code == 0 and [(t.topic_name, t.error_code) for t in d.responses] == [("t", 0)]
        assert start_offset() == []
        assert raw.request(42, 2, DeleteGroupsRequest(groups_names=["g"])).results[0].error_code == 0
        assert raw.request(16, 5, ListGroupsRequest(states_filter=[], types_filter=["share"])).groups == []
    finally:
        raw.close()


def test_groups_cli_lists_describes_and_resets_a_share_group(sbroker):
    from tests.everyday.test_groups_cli import hg, sections
    bs = sbroker.bootstrap
    t0 = 1_700_000_000_000
    setup_topic(bs, "t", 10, timestamps=[t0 + i * 1000 for i in range(10)])
    c = consumer(bs)
    got = []
    deadline = time.time() + 10
    while len(got) < 10 and time.time() < deadline:
        got += [m.offset() for m in poll(c)]
    c.commit_sync()
    listed = hg("list", "--type", "share", "--bootstrap-server", bs)
    assert listed.returncode == 0, listed.stderr
    assert sections(listed.stdout)[0][1] == ["g", "share", "share", "Stable"]
    d = hg("describe", "--group", "g", "--bootstrap-server", bs)
    assert d.returncode == 0, d.stderr
    group, members, parts = sections(d.stdout)
    assert group[1][3:5] == ["simple", "Stable"]
    assert len(members) == 2 and members[1][-1] == "t:0"
    assert parts[1] == ["g", "t", "0", "10", "10", "0", "1"]
    refused = hg("reset-offsets", "--group", "g", "--topic", "t", "--to-earliest", "--execute", "--bootstrap-server", bs)
    assert refused.returncode == 1 and "not empty" in refused.stderr
    c.close()
    # the share-partition starts again at the first record stamped at or after t0 + 4 s
    when = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime((t0 + 4000) / 1000)) + ".000Z"
    r = hg("reset-offsets", "--group", "g", "--to-datetime", when, "--execute", "--bootstrap-server", bs)
    assert r.returncode == 0, r.stderr
    assert sections(r.stdout)[0][1] == ["g", "t", "0", "4"]
    c = consumer(bs)
    again = []
    deadline = time.time() + 10
    while len(again) < 6 and time.time() < deadline:
        again += [m.offset() for m in poll(c)]
    c.close()
    assert again == [4, 5, 6, 7, 8, 9]


def test_read_committed_share_group_skips_aborted_transactions(sbroker):
    bs = sbroker.bootstrap
    setup_topic(bs, "t", 0, **{"share.isolation.level": "read_committed"})
    p = Producer({"bootstrap.servers": bs, "transactional.id": "tx"})
    p.init_transactions(10)
    for commit, values in ((False, [b"a1", b"a2"]), (True, [b"c1", b"c2"]), (False, [b"a3"])):
        p.begin_transaction()
        for v in values:
            p.produce("t", value=v)
        p.flush()
        (p.commit_transaction if commit else p.abort_transaction)(10)
    plain = Producer({"bootstrap.servers": bs})
    plain.produce("t", value=b"plain")
    plain.flush()
    c = consumer(bs)
    got = []
    try:
        deadline = time.time() + 10
        while len(got) < 3 and time.time() < deadline:
            got += [m.value() for m in poll(c)]
    finally:
        c.close()
    assert got == [b"c1", b"c2", b"plain"], got
