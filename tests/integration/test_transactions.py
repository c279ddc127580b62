"""Transactions (issue 17) with confluent-kafka (librdkafka), as a user checks them against a
live broker: commit makes records visible to read_committed consumers, abort hides them
(read_uncommitted still sees them), interleaved transactions of two producers on several
partitions give exact per-partition sets, LSO and end positions; a second producer with the
same transactional.id fences the first and aborts its open transaction; a silent producer's
transaction is aborted after transaction.timeout.ms; a consume-transform-produce loop with
send_offsets_to_transaction copies every input exactly once across a group rebalance.

Offsets the tests spell out follow Kafka's log layout: each transaction ends with one control
batch (the COMMIT/ABORT marker) in every partition it wrote to, taking one offset there.
"""
from __future__ import annotations

import threading
import time

import pytest

from tests.helpers.clients import wait_until
from tests.helpers.txn import (READ_COMMITTED, READ_UNCOMMITTED, consumer, create_topic, end_offsets,  # noqa: F401
                               ctp_topics, group_committed, read_to_end, scan_partition, tbroker,
                               txn_indexes_on_disk, txn_producer, unique)


def _produce(p, topic: str, partition: int, values: list[str]) -> None:
    """Send and wait for delivery, so records land in the log in exactly this order."""
    errors = []
    for v in values:
        p.produce(topic, v.encode(), partition=partition, on_delivery=lambda err, _m: err and errors.append(err))
    assert p.flush(20) == 0
    assert not errors, errors


def offset_for_time(bootstrap: str, topic: str, ts: int, isolation: str) -> int:
    """offsets_for_times of a consumer with that isolation level (-1: none)."""
    from confluent_kafka import TopicPartition
    c = consumer(bootstrap, isolation)
    try:
        return c.offsets_for_times([TopicPartition(topic, 0, ts)], timeout=20)[0].offset
    finally:
        c.close()


def _b(values) -> list[bytes]:
    return [v.encode() for v in values]


# ------------------------------------------------------------------------------- commit / abort
def test_commit_visible_abort_hidden_open_blocks_read_committed(tbroker):
    """One partition: commit a0-a2, abort b0-b2, commit c0-c1. read_committed sees a and c,
    read_uncommitted all eight at offsets 0-2, 4-6, 8-9 (markers at 3, 7, 10); both end at
    11. An open transaction holds the LSO (ListOffsets READ_COMMITTED) at its first offset
    while the high watermark moves; its commit releases it."""
    topic = unique("tx-basic")
    create_topic(tbroker.bootstrap, topic, 1)
    p = txn_producer(tbroker.bootstrap, unique("tid"))
    a, b, c = ["a0", "a1", "a2"], ["b0", "b1", "b2"], ["c0", "c1"]
    p.begin_transaction()
    _produce(p, topic, 0, a)
    p.commit_transaction(20)
    p.begin_transaction()
    _produce(p, topic, 0, b)
    p.abort_transaction(20)
    p.begin_transaction()
    _produce(p, topic, 0, c)
    p.commit_transaction(20)

    rc = read_to_end(tbroker.bootstrap, topic, [0], READ_COMMITTED)
    assert rc.values(0) == _b(a + c)
    assert [o for o, _ in rc.records[0]] == [0, 1, 2, 8, 9]
    ru = read_to_end(tbroker.bootstrap, topic, [0], READ_UNCOMMITTED)
    assert ru.values(0) == _b(a + b + c)
    assert [o for o, _ in ru.records[0]] == [0, 1, 2, 4, 5, 6, 8, 9]
    assert end_offsets(tbroker.bootstrap, topic, [0], READ_COMMITTED) == {0: 11}
    assert end_offsets(tbroker.bootstrap, topic, [0], READ_UNCOMMITTED) == {0: 11}
    assert rc.positions == {0: 11} and ru.positions == {0: 11}     # past the last marker

    p.begin_transaction()
    future = int(time.time() * 1000) + 60_000                        # later than every marker
    for i, v in enumerate(["d0", "d1"]):                              # offsets 11, 12: open
        p.produce(topic, v.encode(), partition=0, timestamp=future + i)
    assert p.flush(20) == 0
    assert end_offsets(tbroker.bootstrap, topic, [0], READ_COMMITTED) == {0: 11}
    assert end_offsets(tbroker.bootstrap, topic, [0], READ_UNCOMMITTED) == {0: 13}
    # by timestamp: nothing at or past the LSO for read_committed (Kafka filters offset < LSO)
    assert offset_for_time(tbroker.bootstrap, topic, future, READ_UNCOMMITTED) == 11
    assert offset_for_time(tbroker.bootstrap, topic, future, READ_COMMITTED) == -1
    rc = read_to_end(tbroker.bootstrap, topic, [0], READ_COMMITTED)
    assert rc.values(0) == _b(a + c) and rc.positions == {0: 11}
    assert read_to_end(tbroker.bootstrap, topic, [0], READ_UNCOMMITTED).values(0) == _b(a + b + c + ["d0", "d1"])
    p.commit_transaction(20)
    assert end_offsets(tbroker.bootstrap, topic, [0], READ_COMMITTED) == {0: 14}
    assert offset_for_time(tbroker.bootstrap, topic, future + 1, READ_COMMITTED) == 12
    assert read_to_end(tbroker.bootstrap, topic, [0], READ_COMMITTED).values(0) == _b(a + c + ["d0", "d1"])
    p.flush(5)


def test_interleaved_transactions_of_two_producers_on_three_partitions(tbroker):
    """Two transactional producers write alternately into the same partitions; one commits,
    the other aborts, then the roles swap on other partitions. Per partition, read_committed
    returns exactly the committed values in log order and read_uncommitted all of them; the
    LSO follows the earliest open transaction; positions end past the markers. After a clean
    restart the same holds, and each partition's .txnindex holds exactly the aborted
    transactions a brute-force scan of its .log files finds (with Kafka's LSO per entry)."""
    topic = unique("tx-mix")
    create_topic(tbroker.bootstrap, topic, 3)
    bs = tbroker.bootstrap
    p1, p2 = txn_producer(bs, unique("tid1")), txn_producer(bs, unique("tid2"))
    log: dict[int, list[tuple[str, str]]] = {0: [], 1: [], 2: []}      # partition -> [(value, txn)]

    def write(prod, name, partition, value):
        _produce(prod, topic, partition, [value])
        log[partition].append((value, name))

    # round 1: p1 (commits) and p2 (aborts) interleaved on all three partitions
    p1.begin_transaction()
    p2.begin_transaction()
    for i in range(2):
        for part in range(3):
            write(p1, "r1-p1", part, f"r1-p1-{part}-{i}")
            write(p2, "r1-p2", part, f"r1-p2-{part}-{i}")
    assert end_offsets(bs, topic, range(3), READ_COMMITTED) == {0: 0, 1: 0, 2: 0}
    p1.commit_transaction(20)
    # p2's first record in each partition is at offset 1 (p1's first at 0): the LSO now
    assert end_offsets(bs, topic, range(3), READ_COMMITTED) == {0: 1, 1: 1, 2: 1}
    partial = read_to_end(bs, topic, range(3), READ_COMMITTED)
    assert {p: partial.values(p) for p in range(3)} == {p: [f"r1-p1-{p}-0".encode()] for p in range(3)}
    p2.abort_transaction(20)
    ends = {p: 4 + 2 for p in range(3)}                            # 4 records + 2 markers
    assert end_offsets(bs, topic, range(3), READ_COMMITTED) == ends

    # round 2: p2 commits on partitions 0 and 1, p1 aborts on 1 and 2
    p2.begin_transaction()
    p1.begin_transaction()
    for i in range(2):
        write(p2, "r2-p2", 0, f"r2-p2-0-{i}")
        write(p1, "r2-p1", 1, f"r2-p1-1-{i}")
        write(p2, "r2-p2", 1, f"r2-p2-1-{i}")
        write(p1, "r2-p1", 2, f"r2-p1-2-{i}")
    p1.abort_transaction(20)
    # partition 1: p2's transaction (first offset 7) is still open; 0: p2's from 6; 2: none
    assert end_offsets(bs, topic, range(3), READ_COMMITTED) == {0: 6, 1: 7, 2: 9}
    p2.commit_transaction(20)
    ends = {0: 6 + 2 + 1, 1: 6 + 4 + 2, 2: 6 + 2 + 1}
    committed_txns = {"r1-p1", "r2-p2"}

    def check():
        assert end_offsets(bs, topic, range(3), READ_COMMITTED) == ends
        assert end_offsets(bs, topic, range(3), READ_UNCOMMITTED) == ends
        rc = read_to_end(bs, topic, range(3), READ_COMMITTED)
        ru = read_to_end(bs, topic, range(3), READ_UNCOMMITTED)
        for part in range(3):
            assert rc.values(part) == _b(v for v, t in log[part] if t in committed_txns), part
            assert ru.values(part) == _b(v for v, _t in log[part]), part
        assert rc.positions == ends and ru.positions == ends

    check()
    p1.flush(5)
    p2.flush(5)
    del p1, p2
    tbroker.restart()
    check()
    tbroker.stop()
    for part in range(3):
        scan = scan_partition(tbroker.data_dir / f"{topic}-{part}")
        assert scan.values("committed") == _b(v for v, t in log[part] if t in committed_txns)
        assert scan.values("aborted") == _b(v for v, t in log[part] if t not in committed_txns)
        assert not scan.ongoing and scan.log_end_offset == ends[part]
        assert txn_indexes_on_disk(tbroker.data_dir / f"{topic}-{part}") == scan.aborted, part
    tbroker.start()


def test_parked_read_committed_fetch_waits_for_the_lso_then_wakes_at_commit(tbroker):
    """A read_committed consumer parked at the end (fetch.wait.max.ms=2000): appends of an
    open transaction do not answer its Fetch early (Kafka's DelayedFetch counts bytes below
    the LSO only), so it does not spin; the commit marker moves the LSO and wakes it at once."""
    import json
    from confluent_kafka import Consumer, TopicPartition
    topic = unique("tx-park")
    create_topic(tbroker.bootstrap, topic, 1)
    fetches = []
    c = Consumer({"bootstrap.servers": tbroker.bootstrap, "group.id": unique("g"), "isolation.level": READ_COMMITTED,
                  "enable.auto.commit": False, "fetch.wait.max.ms": 2000, "statistics.interval.ms": 100,
                  "stats_cb": lambda js: fetches.append(sum(br["req"].get("Fetch", 0)
                                                            for br in json.loads(js)["brokers"].values()))})
    c.assign([TopicPartition(topic, 0, 0)])
    p = txn_producer(tbroker.bootstrap, unique("tid"))
    try:
        c.poll(0.5)                                   # connected and parked
        p.begin_transaction()
        start = fetches[-1]
        for i in range(10):
            _produce(p, topic, 0, [f"u{i}"])
            assert c.poll(0.05) is None
        t_window = time.monotonic()
        while time.monotonic() - t_window < 0.5:
            assert c.poll(0.05) is None
        assert fetches[-1] - start <= 4, f"{fetches[-1] - start} fetches in ~1 s: woken by uncommitted appends"
        p.commit_transaction(20)
        t0 = time.monotonic()
        got = []
        while len(got) < 10 and time.monotonic() - t0 < 5:
            m = c.poll(0.05)
            if m is not None and m.error() is None:
                got.append(m.value())
        assert len(got) == 10
        assert time.monotonic() - t0 < 1.2, "the parked fetch was not woken by the LSO move"
    finally:
        c.close()


# ------------------------------------------------------------------------------------- fencing
def test_second_producer_with_same_id_fences_first_and_aborts_its_transaction(tbroker):
    """p1 opens a transaction and writes x0-x2; p2 with the same transactional.id initialises:
    p1's commit then fails with librdkafka's fatal fenced error, its records are never visible
    to read_committed (an ABORT marker follows them), and p2 commits its own."""
    from confluent_kafka import KafkaError, KafkaException
    topic, tid = unique("tx-fence"), unique("tid")
    create_topic(tbroker.bootstrap, topic, 1)
    p1 = txn_producer(tbroker.bootstrap, tid)
    p1.begin_transaction()
    _produce(p1, topic, 0, ["x0", "x1", "x2"])
    p2 = txn_producer(tbroker.bootstrap, tid)
    # p2's InitProducerId aborted p1's open transaction: nothing is left open
    assert end_offsets(tbroker.bootstrap, topic, [0], READ_COMMITTED) == {0: 4}
    with pytest.raises(KafkaException) as ei:
        p1.commit_transaction(20)
    err = ei.value.args[0]
    assert err.fatal(), err
    assert err.code() == KafkaError._FENCED, err
    p2.begin_transaction()
    _produce(p2, topic, 0, ["y0"])
    p2.commit_transaction(20)
    rc = read_to_end(tbroker.bootstrap, topic, [0], READ_COMMITTED)
    assert rc.values(0) == [b"y0"] and rc.positions == {0: 6}
    assert read_to_end(tbroker.bootstrap, topic, [0], READ_UNCOMMITTED).values(0) == [b"x0", b"x1", b"x2", b"y0"]


# ------------------------------------------------------------------------------------ timeouts
def test_silent_transaction_is_aborted_after_its_timeout_and_read_committed_moves_on(tbroker):
    """A producer with transaction.timeout.ms=5000 writes t0-t2 in a transaction and goes
    silent; plain records written after it wait behind the LSO. A read_committed consumer
    polling all along gets nothing until the coordinator aborts the transaction (no sooner
    than the timeout), then reaches the end: the plain records, never t0-t2."""
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
    topic = unique("tx-timeout")
    create_topic(tbroker.bootstrap, topic, 1)
    # 5 s: the checks before the abort must finish within the timeout even on a loaded CI host
    silent = txn_producer(tbroker.bootstrap, unique("tid"), **{"transaction.timeout.ms": 5000})
    silent.begin_transaction()
    t_open = time.monotonic()
    _produce(silent, topic, 0, ["t0", "t1", "t2"])
    plain = Producer({"bootstrap.servers": tbroker.bootstrap, "linger.ms": 0})
    _produce(plain, topic, 0, ["plain0", "plain1"])
    assert end_offsets(tbroker.bootstrap, topic, [0], READ_COMMITTED) == {0: 0}

    c = Consumer({"bootstrap.servers": tbroker.bootstrap, "group.id": unique("g"), "isolation.level": READ_COMMITTED,
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    got, t_end = [], None
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            m = c.poll(0.1)
            if m is not None and m.error() is None:
                got.append(m.value())
            if c.position([TopicPartition(topic, 0)])[0].offset == 6:
                t_end = time.monotonic()
                break
    finally:
        c.close()
    assert t_end is not None, f"read_committed consumer stuck; got {got}"
    assert got == [b"plain0", b"plain1"]
    assert t_end - t_open >= 4.9, "aborted before transaction.timeout.ms"
    assert end_offsets(tbroker.bootstrap, topic, [0], READ_COMMITTED) == {0: 6}
    assert read_to_end(tbroker.bootstrap, topic, [0], READ_UNCOMMITTED).values(0) == [
        b"t0", b"t1", b"t2", b"plain0", b"plain1"]
    # the producer learns it too late: its transaction is gone
    with pytest.raises(KafkaException):
        silent.commit_transaction(10)


# ------------------------------------------------------------------------ consume-transform-produce
class CopyMember(threading.Thread):
    """A consume-transform-produce member: each poll's records go to the same partition of
    the output (key "<p>:<offset>", value b"out-" + value) in one transaction together with
    the consumed offsets (send_offsets_to_transaction with the consumer's group metadata).
    An abortable failure aborts and rewinds to the group's committed offsets."""

    def __init__(self, bootstrap, group, src, dst, pace=0.1):
        super().__init__(daemon=True)
        self.bootstrap, self.group, self.src, self.dst, self.pace = bootstrap, group, src, dst, pace
        self.txns = self.records = self.aborts = 0
        self.error: BaseException | None = None
        self.stop_evt = threading.Event()
        self.assigned: set[int] = set()

    def run(self):
        try:
            self._run()
        except BaseException as exc:
            self.error = exc

    def _run(self):
        from confluent_kafka import Consumer, KafkaException, OFFSET_BEGINNING, TopicPartition
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group, "isolation.level": READ_COMMITTED,
                      "enable.auto.commit": False, "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
                      "heartbeat.interval.ms": 500, "partition.assignment.strategy": "range"})
        p = txn_producer(self.bootstrap, unique("copy"))

        def on_assign(_c, parts):
            self.assigned = {tp.partition for tp in parts}

        def on_revoke(_c, parts):
            self.assigned -= {tp.partition for tp in parts}

        c.subscribe([self.src], on_assign=on_assign, on_revoke=on_revoke)
        try:
            while not self.stop_evt.is_set():
                msgs = [m for m in c.consume(num_messages=5, timeout=0.2) if m.error() is None]
                if not msgs:
                    continue
                p.begin_transaction()
                offsets: dict[int, int] = {}
                for m in msgs:
                    p.produce(self.dst, b"out-" + m.value(), key=f"{m.partition()}:{m.offset()}".encode(),
                              partition=m.partition())
                    offsets[m.partition()] = m.offset() + 1
                try:
                    p.send_offsets_to_transaction([TopicPartition(self.src, q, o) for q, o in offsets.items()],
                                                  c.consumer_group_metadata(), 20)
                    p.commit_transaction(20)
                    self.txns += 1
                    self.records += len(msgs)
                except KafkaException as exc:
                    if not exc.args[0].txn_requires_abort():
                        raise
                    p.abort_transaction(20)
                    self.aborts += 1
                    for tp in c.committed(c.assignment(), timeout=20):
                        c.seek(TopicPartition(self.src, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_BEGINNING))
                time.sleep(self.pace)
        finally:
            c.close()
            p.flush(5)

    def close(self):
        self.stop_evt.set()
        self.join(30)
        assert not self.is_alive(), "copy member did not stop"


N_PER_PART = 50


def test_consume_transform_produce_exactly_once_across_a_rebalance(tbroker):
    """4 input partitions x 50 records copied by a transactional loop (5 records per
    transaction, paced); a second member joins after the first's second transaction (the
    group rebalances, both copy; librdkafka hands out a partition's records in order, so the
    first member cannot have finished two partitions by then). The output holds every input
    exactly once for a read_committed reader, and the group's committed offsets equal the
    input end offsets."""
    bs = tbroker.bootstrap
    src, dst, group = ctp_topics(bs, "ctp", N_PER_PART)

    a = CopyMember(bs, group, src, dst)
    a.start()
    members = [a]
    try:
        wait_until(lambda: a.error is not None or a.txns >= 2, timeout=20, what="first member copying")
        assert a.error is None, a.error
        b = CopyMember(bs, group, src, dst)
        b.start()
        members.append(b)
        want = {p: N_PER_PART for p in range(4)}

        def done():
            for m in members:
                if m.error is not None:
                    raise m.error
            return group_committed(bs, group, src, range(4)) == want
        wait_until(done, timeout=40, interval=0.3, what="group offsets at the input end")
    finally:
        for m in members:
            m.close()
    assert a.error is None and b.error is None, (a.error, b.error)
    assert b.records > 0, "the second member never copied anything (no rebalance mid-way)"
    assert a.records + b.records == 4 * N_PER_PART
    rc = read_to_end(bs, dst, range(4), READ_COMMITTED)
    for part in range(4):
        assert sorted(rc.values(part)) == sorted(f"out-in-{part}-{i}".encode() for i in range(N_PER_PART)), part
    assert group_committed(bs, group, src, range(4)) == {p: N_PER_PART for p in range(4)}
