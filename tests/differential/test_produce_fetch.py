"""Produce and fetch edge cases: corrupt and malformed batches, size limits, record errors,
idempotent sequences, fetch limits and offsets, isolation levels with aborted transactions."""
from __future__ import annotations

import pytest

from protocol.records.record import build_batch
from tests.differential.framework import req
from tests.differential.wire import (batch, corrupt_crc, fetch, init_producer, list_offsets, now_ms, produce,
                                     wait_ok, with_magic)

pytestmark = pytest.mark.xdist_group("differential")


def _fetch_all_versions(ex, topic, partitions, scenario, lo=4, **kw):
    for v in ex.versions(1, lo=lo):
        ex.send(1, v, lambda s, v=v: fetch(s, topic, partitions, v, **kw), scenario=scenario)


def test_malformed_batches(ex):
    topic = ex.topic_name()
    ex.create_topic(topic, configs={"max.message.bytes": "2000"})
    t = now_ms()
    good = batch([t, t])
    cases = {
        "corrupt CRC": corrupt_crc(good),
        "magic 1 in v3+": with_magic(good, 1),
        "magic 3": with_magic(good, 3),
        "two batches": good + good,
        "truncated batch": good[:-3],
        "oversized batch": batch([t], value=b"x" * 3000),
        "empty records": b"",
        "base offset not 0": build_batch([(b"k", b"v", t)], base_offset=5),
        "LogAppendTime set by the producer": build_batch([(b"k", b"v", t)], timestamp_type=1),
        "control batch from a client": build_batch([(b"k", b"v", t)], is_control=True),
    }
    for v in ex.versions(0, lo=3):
        for name, records in cases.items():
            ex.send(0, v, produce(topic, {0: records}, v), scenario=name)
        ex.send(0, v, produce(topic, {5: good}, v), scenario="unknown partition")
        ex.send(0, v, produce(ex.topic_name("nosuch"), {0: good}, v, acks=1), scenario="unknown topic")
        ex.send(0, v, lambda s, v=v: req(0, v, acks=2, timeout_ms=1000, topic_data=[
            {"name": topic, "topic_id": s.state["topic_ids"][topic], "partition_data": [{"index": 0, "records": good}]}]),
                scenario="acks=2")
    _fetch_all_versions(ex, topic, [(0, 0)], "after refused batches")


def test_record_errors_compacted_topic_without_key(ex):
    topic = ex.topic_name()
    ex.create_topic(topic, configs={"cleanup.policy": "compact"})
    t = now_ms()
    for v in ex.versions(0, lo=3):
        records = build_batch([(b"k", b"v", t), (None, b"v", t), (b"k", b"v", t), (None, b"v", t)])
        ex.send(0, v, produce(topic, {0: records}, v), scenario="null keys on a compacted topic")


def test_idempotent_sequences(ex):
    topic = ex.topic_name()
    ex.create_topic(topic)
    init_producer(ex)
    t = now_ms()

    def idem(seq, n=2, epoch_delta=0):
        return lambda s: produce(topic, {0: build_batch(
            [(b"k", b"v%d" % i, t) for i in range(n)], producer_id=s.state["pid"],
            producer_epoch=s.state["epoch"] + epoch_delta, base_sequence=seq)}, v)

    v = max(ex.versions(0))
    ex.send(0, v, idem(0), scenario="sequence 0")
    ex.send(0, v, idem(0), scenario="duplicate of sequence 0")
    ex.send(0, v, idem(2), scenario="next sequence 2")
    ex.send(0, v, idem(0), scenario="duplicate of an older batch")
    ex.send(0, v, idem(7), scenario="gap: sequence 7 after 3")
    ex.send(0, v, idem(4, epoch_delta=1), scenario="higher epoch, sequence 4 (not 0)")
    ex.send(0, v, idem(0, epoch_delta=-1) if False else idem(4), scenario="next sequence 4")
    ex.send(0, v, lambda s: produce(topic, {0: build_batch([(b"k", b"v", t)], producer_id=s.state["pid"] + 1000,
                                                           producer_epoch=0, base_sequence=0)}, v),
            scenario="unknown producer id")
    _fetch_all_versions(ex, topic, [(0, 0)], "idempotent batches")


def test_fetch_offsets_and_limits(ex):
    topic = ex.topic_name()
    ex.create_topic(topic, partitions=2)
    t = now_ms()
    for i in range(3):
        ex.send(0, 9, produce(topic, {0: batch([t + i] * 5, value=b"x" * 200)}, 9), scenario="setup")
    _fetch_all_versions(ex, topic, [(0, 15)], "fetch at the end")
    _fetch_all_versions(ex, topic, [(0, 16)], "fetch past the end")
    _fetch_all_versions(ex, topic, [(0, -1)], "fetch offset -1")
    _fetch_all_versions(ex, topic, [(0, 7)], "fetch inside a batch")
    _fetch_all_versions(ex, topic, [(0, 0)], "partition_max_bytes smaller than the first batch",
                        partition_max_bytes=10)
    _fetch_all_versions(ex, topic, [(0, 0)], "max_bytes smaller than the first batch", max_bytes=10)
    _fetch_all_versions(ex, topic, [(0, 0)], "partition_max_bytes between batches",
                        partition_max_bytes=1500)
    _fetch_all_versions(ex, topic, [(0, 0), (1, 0)], "two partitions, one empty")
    _fetch_all_versions(ex, topic, [(0, 0), (0, 5)], "one partition twice")
    _fetch_all_versions(ex, topic, [(9, 0)], "unknown partition")
    for v in ex.versions(1, lo=18):  # KIP-1166: a follower's high watermark, which a consumer's fetch ignores
        for hwm in (0, 7):
            ex.send(1, v, lambda s, v=v, hwm=hwm: _with_high_watermark(fetch(s, topic, [(0, 0)], v), hwm),
                    scenario=f"a consumer fetch carrying high_watermark {hwm}")
    # a full fetch asking for a new fetch session (KIP-227: session id 0, epoch 0)
    for v in ex.versions(1, lo=7):
        ex.send(1, v, lambda s, v=v: _with_session(fetch(s, topic, [(0, 0)], v), 0, 0),
                scenario="a new fetch session")
        ex.send(1, v, lambda s, v=v: _with_session(fetch(s, topic, [(0, 0)], v), 12345, 1),
                scenario="an unknown fetch session")


def _with_high_watermark(body, hwm):
    for t in body.topics:
        for p in t.partitions:
            p.high_watermark = hwm
    return body


def _with_session(body, session_id, epoch):
    body.session_id, body.session_epoch = session_id, epoch
    return body


def test_fetch_isolation_with_aborted_transactions(ex):
    topic = ex.topic_name()
    ex.create_topic(topic)
    txn = f"txn-{topic}"
    init_producer(ex, txn)
    t = now_ms()
    v_add = max(ex.versions(24, hi=3))
    state = {"seq": 0}

    def add():
        body = lambda s: req(24, v_add, v3_and_below_transactional_id=txn,  # noqa: E731
                             v3_and_below_producer_id=s.state["pid"], v3_and_below_producer_epoch=s.state["epoch"],
                             v3_and_below_topics=[{"name": topic, "partitions": [0]}])
        # Kafka answers CONCURRENT_TRANSACTIONS (51) while the previous transaction's markers
        # are still being written, and clients retry; the answer compared is the settled one
        for s in ex.sides:
            wait_ok(s, 24, v_add, body, ok=lambda r: r.results_by_topic_v3_and_below[0]
                    .results_by_partition[0].partition_error_code != 51)
        ex.send(24, v_add, body, scenario="AddPartitionsToTxn (again, once added)")

    def txn_produce(n):
        seq = state["seq"]
        state["seq"] += n
        ex.send(0, 9, lambda s: produce(topic, {0: build_batch(
            [(b"k", b"t%d" % i, t) for i in range(n)], producer_id=s.state["pid"],
            producer_epoch=s.state["epoch"], base_sequence=seq, is_transactional=True)}, 9,
            transactional_id=txn), scenario="transactional produce")

    def end(commit):
        ex.send(26, 3, lambda s: req(26, 3, transactional_id=txn, producer_id=s.state["pid"],
                                     producer_epoch=s.state["epoch"], committed=commit),
                scenario="EndTxn commit" if commit else "EndTxn abort")
        # Kafka writes the markers after EndTxn answers: wait until the last stable offset
        # reaches the high watermark on each side, so later appends land after the marker
        stable = lambda r: r.topics[0].partitions[0].offset  # noqa: E731
        for s in ex.sides:
            wait_ok(s, 2, 9, list_offsets(topic, [(0, -1)], 9, isolation_level=1),
                    ok=lambda r, s=s: stable(r) == stable(s.request(2, 9, list_offsets(topic, [(0, -1)], 9))))

    ex.send(0, 9, produce(topic, {0: batch([t, t])}, 9), scenario="plain produce")
    add(); txn_produce(3); end(False)
    ex.send(0, 9, produce(topic, {0: batch([t])}, 9), scenario="plain produce")
    add(); txn_produce(2)
    # an open transaction: the last stable offset stops at its first offset
    for iso in (0, 1):
        _fetch_all_versions(ex, topic, [(0, 0)], f"open transaction, isolation {iso}", isolation_level=iso)
    end(True)
    for iso in (0, 1):
        _fetch_all_versions(ex, topic, [(0, 0)], f"after abort and commit, isolation {iso}", isolation_level=iso)
        _fetch_all_versions(ex, topic, [(0, 3)], f"from inside the aborted batch, isolation {iso}",
                            isolation_level=iso)


def test_share_fetch_and_acknowledge_errors(ex):
    """ShareFetch/ShareAcknowledge before any ShareGroupHeartbeat: unknown members and sessions."""
    import uuid
    topic = ex.topic_name()
    ex.create_topic(topic)
    group = f"sg-{topic}"
    mid = uuid.uuid4().hex[:22]

    def share_fetch(v, epoch, member=mid, acks=()):
        return lambda s: req(78, v, group_id=group, member_id=member, share_session_epoch=epoch, max_wait_ms=0,
                             min_bytes=1, max_bytes=1 << 20, max_records=100, batch_size=100, share_acquire_mode=0,
                             topics=[{"topic_id": s.state["topic_ids"][topic], "partitions": [
                                 {"partition_index": 0, "acknowledgement_batches": list(acks)}]}],
                             forgotten_topics_data=[])

    def share_ack(v, epoch, member=mid):
        return lambda s: req(79, v, group_id=group, member_id=member, share_session_epoch=epoch, is_renew_ack=False,
                             topics=[{"topic_id": s.state["topic_ids"][topic], "partitions": [
                                 {"partition_index": 0, "acknowledgement_batches": [
                                     {"first_offset": 0, "last_offset": 0, "acknowledge_types": [1]}]}]}])

    for v in ex.versions(78):
        ex.send(78, v, share_fetch(v, 0), scenario="a new session for an unknown member")
        ex.send(78, v, share_fetch(v, 5), scenario="an unknown session, epoch 5")
        ex.send(78, v, share_fetch(v, 0, member=""), scenario="an empty member id")
    for v in ex.versions(79):
        ex.send(79, v, share_ack(v, 0), scenario="acknowledge with epoch 0")
        ex.send(79, v, share_ack(v, 3), scenario="acknowledge in an unknown session")


def test_transactional_produce_to_a_partition_never_added(ex):
    """A transactional batch to a partition the transaction does not have: refused up to v11
    (KIP-890 part 1 verification), added to the transaction by the produce itself from v12
    (KIP-890 part 2); then the transaction is aborted. A topic per version: Kafka writes the
    abort marker after EndTxn answers, so a later produce to the same partition would race it."""
    t = now_ms()
    for v in ex.versions(0, lo=10):
        topic = ex.topic_name(f"v{v}")
        ex.create_topic(topic)
        txn = f"txn-{topic}"
        init_producer(ex, txn)
        ex.send(0, v, lambda s, v=v: produce(topic, {0: build_batch(
            [(b"k", b"v%d" % v, t)], producer_id=s.state["pid"], producer_epoch=s.state["epoch"], base_sequence=0,
            is_transactional=True)}, v, transactional_id=txn), scenario="transactional batch, partition never added")
        ex.send(26, 3, lambda s: req(26, 3, transactional_id=txn, producer_id=s.state["pid"],
                                     producer_epoch=s.state["epoch"], committed=False), scenario="EndTxn abort")
