"""Share groups on the wire, through the raw client: what every ShareFetch answer carries, the
exact error of each bad acknowledgement (and that nothing else changes), and acknowledgements
around a member's leave, in Kafka 4.2's order of events."""
from __future__ import annotations

import time

import pytest

from protocol.errors import ErrorCode as E
from protocol.messages.describe_share_group_offsets import DescribeShareGroupOffsetsRequest as Describe
from protocol.messages.share_acknowledge import ShareAcknowledgeRequest as AckReq
from protocol.messages.share_fetch import ShareFetchRequest as FetchReq
from protocol.messages.share_group_heartbeat import ShareGroupHeartbeatRequest as HbReq
from tests.helpers.raw import RawClient
from tests.share.test_share_consumers import _topic_id, setup_topic

LOCK_MS = 1000
ACCEPT, RELEASE, REJECT, RENEW = 1, 2, 3, 4


@pytest.fixture
def sbroker(broker_factory):
    return broker_factory({"group.share.heartbeat.interval.ms": 1000, "group.share.min.heartbeat.interval.ms": 1000,
                           "group.share.record.lock.duration.ms": LOCK_MS,
                           "group.share.min.record.lock.duration.ms": LOCK_MS})


def join(raw, member, topic="t"):
    hb = raw.request(76, 1, HbReq(group_id="g", member_id=member, member_epoch=0, subscribed_topic_names=[topic]))
    assert hb.error_code == 0
    return hb


def fetch(raw, member, epoch, tid, parts=(0,), acks=None, max_wait=0, version=1, max_records=100, mode=0):
    """``acks``: partition -> [(first, last, type)]."""
    P = FetchReq.FetchTopic.FetchPartition
    B = P.AcknowledgementBatch
    acks = acks or {}
    return raw.request(78, version, FetchReq(
        group_id="g", member_id=member, share_session_epoch=epoch, max_wait_ms=max_wait, min_bytes=1,
        max_bytes=1 << 20, max_records=max_records, batch_size=max_records, share_acquire_mode=mode,
        topics=[FetchReq.FetchTopic(topic_id=tid, partitions=[P(partition_index=p, acknowledgement_batches=[
            B(first_offset=a, last_offset=z, acknowledge_types=t if isinstance(t, list) else [t])
            for a, z, t in acks.get(p, [])]) for p in parts])] if parts else [],
        forgotten_topics_data=[]))


def ack(raw, member, epoch, tid, batches, partition=0, version=1):
    P = AckReq.AcknowledgeTopic.AcknowledgePartition
    B = P.AcknowledgementBatch
    return raw.request(79, version, AckReq(group_id="g", member_id=member, share_session_epoch=epoch, topics=[
        AckReq.AcknowledgeTopic(topic_id=tid, partitions=[P(partition_index=partition, acknowledgement_batches=[
            B(first_offset=a, last_offset=z, acknowledge_types=t if isinstance(t, list) else [t])
            for a, z, t in batches])])]))


def part_error(resp) -> int:
    assert resp.error_code == 0, resp
    return resp.responses[0].partitions[0].error_code


def acquired(resp) -> dict:
    return {p.partition_index: [(a.first_offset, a.last_offset, a.delivery_count) for a in p.acquired_records]
            for t in resp.responses for p in t.partitions if p.acquired_records}


def start_offset(raw) -> int:
    d = raw.request(90, 0, Describe(groups=[Describe.DescribeShareGroupOffsetsRequestGroup(group_id="g", topics=None)]))
    return d.groups[0].topics[0].partitions[0].start_offset


def assert_no_null_records(resp) -> None:
    for t in resp.responses:
        for p in t.partitions:
            assert p.records is not None, f"partition {p.partition_index} answered null records"


def test_share_fetch_never_answers_null_records(sbroker):
    """librdkafka drops a whole ShareFetch response with a null record set in it: every
    partition in every kind of answer, with records or without (an acknowledgement or an error
    only), carries a record set."""
    bs = sbroker.bootstrap
    setup_topic(bs, "t", 0)
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewPartitions
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_partitions([NewPartitions("t", 5)])["t"].result()
    p = Producer({"bootstrap.servers": bs})
    for part in (0, 2, 4):
        for i in range(3):
            p.produce("t", value=b"x", partition=part)
    p.flush(10)
    raw = RawClient(bs)
    try:
        tid = _topic_id(raw, "t")
        join(raw, "m1")
        answers = []
        r = fetch(raw, "m1", 0, tid, parts=range(5), max_wait=500)
        answers.append(r)
        assert acquired(r) == {0: [(0, 2, 1)], 2: [(0, 2, 1)], 4: [(0, 2, 1)]}
        # the empty partitions are left out, as Kafka 4.4 answers
        assert sorted(p.partition_index for p in r.responses[0].partitions) == [0, 2, 4]
        # an idle long poll (nothing left), with acknowledgements: the acknowledged partitions only
        r = fetch(raw, "m1", 1, tid, parts=range(5), acks={q: [(0, 2, ACCEPT)] for q in (0, 2)}, max_wait=200)
        answers.append(r)
        assert acquired(r) == {} and [(p.partition_index, p.acknowledge_error_code)
                                      for p in r.responses[0].partitions] == [(0, 0), (2, 0)]
        # v2, record-limit mode, and a partition that does not exist
        r = fetch(raw, "m1", 2, tid, parts=[0, 9], version=2, mode=1)
        answers.append(r)
        assert {p.partition_index: p.error_code for p in r.responses[0].partitions}[9] == \
            E.UNKNOWN_TOPIC_OR_PARTITION
        # the final request: acknowledgements only
        answers.append(fetch(raw, "m1", -1, tid, parts=[4], acks={4: [(0, 2, ACCEPT)]}))
        assert answers[-1].responses[0].partitions[0].acknowledge_error_code == 0
        for r in answers:
            assert r.error_code == 0
            assert_no_null_records(r)
    finally:
        raw.close()


def test_acquire_modes(sbroker):
    """v1 and v2's default (batch-optimized) acquire the log batch holding the max_records-th
    record whole; v2's record-limit mode never more than max_records."""
    bs = sbroker.bootstrap
    setup_topic(bs, "t", 0)
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bs, "linger.ms": 100})
    for i in range(10):
        p.produce("t", value=b"%d" % i)
    p.flush(10)  # one batch of ten
    raw = RawClient(bs)
    try:
        tid = _topic_id(raw, "t")
        for m in ("m1", "m2"):
            join(raw, m)
        assert acquired(fetch(raw, "m1", 0, tid, max_records=3, max_wait=500, version=2, mode=1)) == {0: [(0, 2, 1)]}
        # batch-optimized: the batch holding offset 3 is 0..9, of which 3..9 are still available
        assert acquired(fetch(raw, "m2", 0, tid, max_records=1, max_wait=500, version=2, mode=0)) == {0: [(3, 9, 1)]}
        # v1 knows only batch-optimized: released 0..2 come back together though max_records is 1
        r = fetch(raw, "m1", 1, tid, acks={0: [(0, 2, RELEASE)]}, max_records=1)
        assert acquired(r) == {0: [(0, 2, 2)]}
    finally:
        raw.close()


def test_bad_acknowledgements_get_kafkas_error_and_change_nothing(sbroker):
    bs = sbroker.bootstrap
    setup_topic(bs, "t", 5)
    raw = RawClient(bs)
    try:
        tid = _topic_id(raw, "t")
        join(raw, "m1")
        assert acquired(fetch(raw, "m1", 0, tid, max_wait=1000)) == {0: [(0, 4, 1)]}
        epoch = 1

        def m1_ack(batches, version=1):
            nonlocal epoch
            r = ack(raw, "m1", epoch, tid, batches, version=version)
            epoch += 1
            return part_error(r)

        # offsets never acquired: past the in-flight records
        assert m1_ack([(7, 7, ACCEPT)]) == E.INVALID_REQUEST
        assert m1_ack([(3, 6, ACCEPT)]) == E.INVALID_REQUEST
        # malformed: unknown type, RENEW before v2, types not matching the offsets, reversed, out of order
        assert m1_ack([(0, 0, 9)]) == E.INVALID_REQUEST
        assert m1_ack([(0, 0, RENEW)]) == E.INVALID_REQUEST
        assert m1_ack([(0, 2, [ACCEPT, ACCEPT])]) == E.INVALID_REQUEST
        assert m1_ack([(2, 1, ACCEPT)]) == E.INVALID_REQUEST
        assert m1_ack([(3, 3, ACCEPT), (0, 0, ACCEPT)]) == E.INVALID_REQUEST
        # all or nothing: a good batch with a bad one is not applied either
        assert m1_ack([(0, 1, ACCEPT), (4, 9, ACCEPT)]) == E.INVALID_REQUEST
        # a partition with no share-partition
        r = ack(raw, "m1", epoch, tid, [(0, 0, ACCEPT)], partition=3)
        epoch += 1
        assert part_error(r) == E.UNKNOWN_TOPIC_OR_PARTITION
        # a member that never joined: without a session, then with one but holding nothing
        assert ack(raw, "ghost", 1, tid, [(0, 0, ACCEPT)]).error_code == E.SHARE_SESSION_NOT_FOUND
        assert fetch(raw, "ghost", 0, tid, parts=()).error_code == 0
        assert part_error(ack(raw, "ghost", 1, tid, [(0, 0, ACCEPT)])) == E.INVALID_RECORD_STATE
        # nothing changed: m1 still holds 0..4 and acknowledges them
        assert start_offset(raw) == 0
        assert m1_ack([(0, 1, ACCEPT), (2, 2, REJECT)]) == 0
        assert start_offset(raw) == 3
        # below the start offset, nothing in flight there
        assert m1_ack([(0, 0, ACCEPT)]) == E.INVALID_RECORD_STATE
        # after the lock expired
        time.sleep(LOCK_MS / 1000 + 0.3)
        assert m1_ack([(3, 4, ACCEPT)]) == E.INVALID_RECORD_STATE
        assert start_offset(raw) == 3
        # and the expired records go to the next fetch, delivery count 2
        join(raw, "m2")
        assert acquired(fetch(raw, "m2", 0, tid, max_wait=1000)) == {0: [(3, 4, 2)]}
    finally:
        raw.close()


def test_acknowledgements_after_the_leave_heartbeat_are_applied(sbroker):
    """Kafka 4.2 order of events: leaving the group leaves the share session and the records
    alone; acknowledgements that come after the leave are applied; the final request releases
    what is left; another member then gets only that."""
    bs = sbroker.bootstrap
    setup_topic(bs, "t", 6)
    raw, raw2 = RawClient(bs), RawClient(bs)
    try:
        tid = _topic_id(raw, "t")
        join(raw, "m1")
        assert acquired(fetch(raw, "m1", 0, tid, max_wait=1000)) == {0: [(0, 5, 1)]}
        hb = raw2.request(76, 1, HbReq(group_id="g", member_id="m1", member_epoch=-1))
        assert hb.error_code == 0 and hb.member_epoch == -1
        # after the leave: still its records, its session
        assert part_error(ack(raw, "m1", 1, tid, [(0, 1, ACCEPT), (2, 2, REJECT)])) == 0
        join(raw2, "m2")
        assert acquired(fetch(raw2, "m2", 0, tid, max_wait=300)) == {}  # 3..5 are still m1's
        # the final acknowledgement: 3 accepted, 4 and 5 released with the session
        r = ack(raw, "m1", -1, tid, [(3, 3, ACCEPT)])
        assert part_error(r) == 0
        assert acquired(fetch(raw2, "m2", 1, tid, max_wait=1000)) == {0: [(4, 5, 2)]}
        assert ack(raw, "m1", 2, tid, [(4, 4, ACCEPT)]).error_code == E.SHARE_SESSION_NOT_FOUND
    finally:
        raw.close()
        raw2.close()


def test_share_fetch_counts_against_the_request_quota(broker_factory):
    """request_percentage holds ShareFetch as it holds Fetch (Kafka's handleShareFetchRequest):
    with a quota far below one request's handling time the answers are throttled, and a
    throttled answer carries throttle_time_ms and no records -- what it acquired is given
    back, not counted as a delivery: once the quota is removed every record comes, first
    delivery each. The client of another id on the same broker is not throttled."""
    from tests.quotas.test_quota_throttling import set_quota
    b = broker_factory({"quota.window.num": 2})
    bs = b.bootstrap
    setup_topic(bs, "t", 20)
    set_quota(bs, [("client-id", "greedy")], "request_percentage", 0.0001)
    raw, other = RawClient(bs, client_id="greedy"), RawClient(bs, client_id="other")
    try:
        tid = _topic_id(other, "t")
        join(other, "m1")
        epoch, answers = 0, []
        for _ in range(3):
            answers.append(fetch(raw, "m1", epoch, tid, max_wait=200))
            epoch += 1
        throttled = [r for r in answers if r.throttle_time_ms > 0]
        assert throttled, [r.throttle_time_ms for r in answers]
        for r in throttled:
            assert r.error_code == 0 and acquired(r) == {}, r
        got = [a for r in answers for a in acquired(r).get(0, [])]
        set_quota(bs, [("client-id", "greedy")], "request_percentage", None)
        deadline = time.monotonic() + 10
        while sum(z - a + 1 for a, z, _ in got) < 20 and time.monotonic() < deadline:
            r = fetch(raw, "m1", epoch, tid, max_wait=200)
            epoch += 1
            got += acquired(r).get(0, [])
        assert sorted(o for a, z, _ in got for o in range(a, z + 1)) == list(range(20)), got
        assert {c for _a, _z, c in got} == {1}, got
    finally:
        raw.close()
        other.close()


def test_a_partition_the_group_has_not_initialized_is_left_out(sbroker):
    """As Kafka 4.4: a share-partition with no state for the group and in no member's assignment
    is not answered, so a share fetch from a member of a group that does not exist gets no
    partitions (and creates no group); once a member of the group has the partition, a fetch
    for it is answered, whoever asks."""
    from protocol.messages.share_group_describe import ShareGroupDescribeRequest
    bs = sbroker.bootstrap
    setup_topic(bs, "t", 3)
    raw = RawClient(bs)
    try:
        tid = _topic_id(raw, "t")
        r = fetch(raw, "ghost", 0, tid, max_wait=200)
        assert r.error_code == 0 and r.responses == []
        d = raw.request(77, 1, ShareGroupDescribeRequest(group_ids=["g"], include_authorized_operations=False))
        assert d.groups[0].error_code == E.GROUP_ID_NOT_FOUND
        join(raw, "m1")
        r = fetch(raw, "ghost", 1, tid)
        assert r.error_code == 0 and [p.partition_index for t in r.responses for p in t.partitions] == [0]
        assert_no_null_records(r)
    finally:
        raw.close()
