"""kill -9 of the broker in the middle of transactions (issue 17), restarted on the same data
dir each time, with stock clients (confluent-kafka) that stay up across the crashes:

1. a transaction left open (records written, no EndTxn): after the restart the LSO is still
   held at its first offset, then the coordinator aborts it after transaction.timeout.ms;
2. killed right after commit_transaction() returned: the commit is never lost;
3. killed right after abort_transaction() returned: the records are never visible;
4. killed while commit_transaction() is in flight: all or nothing across both partitions;
5. killed between the coordinator's PrepareCommit/PrepareAbort and its markers: the crash
   point is made exact by appending that record to ``__transaction_state`` (Kafka's
   TransactionLogValue, status patched) while the broker is down; at restart the coordinator
   must finish what was decided, and the producers' own commit/abort retries succeed.

A read_committed consumer polls throughout (reconnecting by itself) and must never see a
record of a transaction that is not committed; at the end, what it saw, a fresh
read_committed read, ListOffsets READ_COMMITTED (the LSO) and each segment's .txnindex all
agree with a brute-force scan of the .log files (``tests.helpers.txn.scan_partition``), and
the producers carry on with new transactions. ``hourglass dump-log`` prints the .txnindex
entries.
"""
from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid

from tests.helpers.broker import REPO_ROOT
from tests.helpers.clients import wait_until
from tests.helpers.txn import (READ_COMMITTED, READ_UNCOMMITTED, TXN_STATUS, create_topic, end_offsets, read_to_end,
                               rewrite_txn_status_offline, scan_partition, txn_indexes_on_disk, txn_producer)

TXN_TIMEOUT_MS = 2500
OVERRIDES = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": 300}
PARTS = (0, 1)


class Watcher(threading.Thread):
    """A read_committed consumer by assignment from offset 0, recording everything it gets."""

    def __init__(self, bootstrap: str, topic: str):
        super().__init__(daemon=True)
        self.bootstrap, self.topic = bootstrap, topic
        self.seen: list[tuple[int, int, bytes]] = []
        self.stop_evt = threading.Event()
        self.error: BaseException | None = None

    def run(self):
        from confluent_kafka import Consumer, TopicPartition
        try:
            c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"w-{uuid.uuid4().hex[:6]}",
                          "isolation.level": READ_COMMITTED, "enable.auto.commit": False,
                          "reconnect.backoff.max.ms": 200, "log_level": 0})
            c.assign([TopicPartition(self.topic, p, 0) for p in PARTS])
            try:
                while not self.stop_evt.is_set():
                    m = c.poll(0.1)
                    if m is not None and m.error() is None:
                        self.seen.append((m.partition(), m.offset(), m.value()))
            finally:
                c.close()
        except BaseException as exc:
            self.error = exc

    def close(self):
        self.stop_evt.set()
        self.join(20)


def _send(p, topic: str, values: list[str]) -> None:
    """Alternate the two partitions; wait for delivery."""
    for i, v in enumerate(values):
        p.produce(topic, v.encode(), partition=PARTS[i % 2])
    assert p.flush(20) == 0


def _producer(bootstrap: str, txn_id: str | None = None, timeout_ms: int = TXN_TIMEOUT_MS):
    return txn_producer(bootstrap, txn_id or f"crash-{uuid.uuid4().hex[:8]}", **{
        "transaction.timeout.ms": timeout_ms, "reconnect.backoff.max.ms": 200, "log_level": 0})


def _settled(bootstrap: str, topic: str, timeout: float) -> dict[int, int]:
    """Wait until no transaction is open (LSO == high watermark on both partitions)."""
    out = {}

    def ok():
        rc = end_offsets(bootstrap, topic, PARTS, READ_COMMITTED)
        ru = end_offsets(bootstrap, topic, PARTS, READ_UNCOMMITTED)
        out.update(ru)
        return rc == ru
    wait_until(ok, timeout=timeout, interval=0.2, what="every transaction completed (LSO at the end)")
    return out


def test_kill9_mid_transactions_nothing_aborted_visible_nothing_committed_lost(rbroker):
    b = rbroker(OVERRIDES)
    bs = b.bootstrap
    topic = f"txcrash-{uuid.uuid4().hex[:6]}"
    # small segments: markers and aborted transactions land in several segments
    create_topic(bs, topic, 2, {"segment.bytes": "1024"})
    committed: set[bytes] = set()       # values whose commit the client saw succeed
    aborted: set[bytes] = set()         # values that must never be read as committed
    watcher = Watcher(bs, topic)
    watcher.start()
    try:
        keeper = _producer(bs)          # carries on across every crash
        for t in range(3):
            keeper.begin_transaction()
            vals = [f"pre{t}-{i}" for i in range(6)]
            _send(keeper, topic, vals)
            if t == 1:
                keeper.abort_transaction(20)
                aborted.update(v.encode() for v in vals)
            else:
                keeper.commit_transaction(20)
                committed.update(v.encode() for v in vals)

        # 1. open transaction at the crash
        opener = _producer(bs)
        opener.begin_transaction()
        open_vals = [f"open-{i}" for i in range(4)]
        _send(opener, topic, open_vals)
        aborted.update(v.encode() for v in open_vals)
        t_open = time.monotonic()
        b.kill()
        b.start()
        scan = {p: scan_partition(b.data_dir / f"{topic}-{p}") for p in PARTS}
        lso_now = end_offsets(bs, topic, PARTS, READ_COMMITTED)
        if time.monotonic() - t_open < TXN_TIMEOUT_MS / 1000 - 0.5:
            # still open: the LSO is its first offset, as the scan finds it
            assert lso_now == {p: scan[p].last_stable_offset for p in PARTS}
            assert all(scan[p].ongoing for p in PARTS), scan
        _settled(bs, topic, TXN_TIMEOUT_MS / 1000 + 10)

        # 2. and 3. killed right after the commit, then an abort, was acknowledged
        for label, end_txn, outcome in (("commit-ack", keeper.commit_transaction, committed),
                                        ("abort-ack", keeper.abort_transaction, aborted)):
            keeper.begin_transaction()
            vals = [f"{label}-{i}" for i in range(4)]
            _send(keeper, topic, vals)
            end_txn(20)
            outcome.update(v.encode() for v in vals)
            b.kill()
            b.start()

        # 4. killed while the commit is in flight: whatever the outcome, all or nothing
        racer = _producer(bs)
        racer.begin_transaction()
        race_vals = [f"race-{i}" for i in range(4)]
        _send(racer, topic, race_vals)
        result: list = []

        def commit():
            try:
                racer.commit_transaction(15)
                result.append("ok")
            except Exception as exc:        # the broker died under it
                result.append(exc)
        th = threading.Thread(target=commit, daemon=True)
        th.start()
        time.sleep(0.002)
        b.kill()
        b.start()
        th.join(20)
        ends = _settled(bs, topic, TXN_TIMEOUT_MS / 1000 + 10)

        # the keeper carries on after three crashes
        keeper.begin_transaction()
        vals = [f"after-{i}" for i in range(4)]
        _send(keeper, topic, vals)
        keeper.commit_transaction(20)
        committed.update(v.encode() for v in vals)
        ends = _settled(bs, topic, 10)

        rc = read_to_end(bs, topic, PARTS, READ_COMMITTED)
        got = set(rc.all_values())
        race = {v.encode() for v in race_vals}
        assert got & race in (set(), race), f"transaction half visible: {sorted(got & race)}"
        if result and result[0] == "ok":
            assert race <= got, "an acknowledged commit was lost"
        assert committed <= got, f"committed records lost: {sorted(committed - got)}"
        assert not (got & aborted), f"aborted records visible: {sorted(got & aborted)}"
        assert got - race == committed
        assert rc.positions == ends
        wait_until(lambda: len(watcher.seen) >= len(rc.all_values()), timeout=10, what="watcher caught up")
    finally:
        watcher.close()
    assert watcher.error is None, watcher.error
    seen = [v for _p, _o, v in watcher.seen]
    assert not (set(seen) & aborted), f"the live read_committed consumer saw aborted records {set(seen) & aborted}"
    assert sorted(seen) == sorted(rc.all_values()), "the live consumer's view differs (lost or duplicated)"

    # the log itself: brute force vs what the broker answers and wrote
    lso = end_offsets(bs, topic, PARTS, READ_COMMITTED)
    b.stop()
    for p in PARTS:
        d = b.data_dir / f"{topic}-{p}"
        scan = scan_partition(d)
        assert len(scan.segments) > 1, "expected several segments"
        assert not scan.ongoing and scan.last_stable_offset == lso[p] == ends[p]
        assert scan.values("committed", "plain") == rc.values(p)
        assert txn_indexes_on_disk(d) == scan.aborted, p
        assert scan.aborted, "no aborted transaction indexed"
        # dump-log as Kafka's DumpLogSegments: one line per .txnindex entry ("version: 0
        # producerId: P firstOffset: F lastOffset: L lastStableOffset: S") and each control
        # record's "endTxnMarker: COMMIT|ABORT coordinatorEpoch: N"
        files = [str(d / f"{base:020d}.txnindex") for base in sorted(scan.aborted)]
        files += [str(d / f"{base:020d}.log") for base in scan.segments]
        r = subprocess.run([sys.executable, "-m", "broker", "dump-log", "--print-data", *files], cwd=REPO_ROOT,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        for entries in scan.aborted.values():
            for pid, first, last, stable in entries:
                assert any({str(pid), str(first), str(last), str(stable)} <= set(_numbers(line))
                           for line in r.stdout.splitlines() if "producerId" in line and "lastStableOffset" in line), \
                    (pid, first, last, stable, r.stdout[-3000:])
        for kind, is_commit in (("COMMIT", True), ("ABORT", False)):
            assert r.stdout.count(f"endTxnMarker: {kind}") == sum(m[2] == is_commit for m in scan.markers), kind
    b.start()


def _numbers(line: str) -> list[str]:
    import re
    return re.findall(r"-?\d+", line)


def test_kill9_between_prepare_and_markers_is_completed_at_restart(rbroker):
    b = rbroker(OVERRIDES)
    bs = b.bootstrap
    topic = f"txprep-{uuid.uuid4().hex[:6]}"
    create_topic(bs, topic, 2)
    ids = {"commit": f"prep-c-{uuid.uuid4().hex[:6]}", "abort": f"prep-a-{uuid.uuid4().hex[:6]}"}
    # a long timeout: only the prepared decision, never the timeout, may complete these
    prods = {k: _producer(bs, tid, timeout_ms=60_000) for k, tid in ids.items()}
    vals = {k: [f"{k}-{i}" for i in range(4)] for k in ids}
    for k, p in prods.items():
        p.begin_transaction()
        _send(p, topic, vals[k])
    assert end_offsets(bs, topic, PARTS, READ_COMMITTED) == {0: 0, 1: 0}
    b.kill()
    for k, status in (("commit", "PrepareCommit"), ("abort", "PrepareAbort")):
        before = rewrite_txn_status_offline(b.data_dir, ids[k], status)
        # what the coordinator had durably recorded for the open transaction (Kafka's format)
        assert before["status"] == TXN_STATUS["Ongoing"] and before["partitions"] == {topic: [0, 1]}, before
    t0 = time.monotonic()
    b.start()
    ends = _settled(bs, topic, 10)
    assert time.monotonic() - t0 < 8, "completed by the timeout, not at load"
    assert ends == {0: 2 + 2 + 2, 1: 2 + 2 + 2}          # 2 records of each + one marker each
    rc = read_to_end(bs, topic, PARTS, READ_COMMITTED)
    assert sorted(rc.all_values()) == sorted(v.encode() for v in vals["commit"])
    assert rc.positions == ends
    # the producers retry their own EndTxn: Kafka answers a completed commit/abort of the
    # same epoch with success, and they carry on
    prods["commit"].commit_transaction(20)
    prods["abort"].abort_transaction(20)
    for k, p in prods.items():
        p.begin_transaction()
        _send(p, topic, [f"{k}-after-0", f"{k}-after-1"])      # one to each partition
        p.commit_transaction(20)
    rc = read_to_end(bs, topic, PARTS, READ_COMMITTED)
    after = [f"{k}-after-{i}".encode() for k in ids for i in range(2)]
    assert sorted(rc.all_values()) == sorted([v.encode() for v in vals["commit"]] + after)
    b.stop()
    for p in PARTS:
        d = b.data_dir / f"{topic}-{p}"
        scan = scan_partition(d)
        assert scan.values("committed") == rc.values(p)
        assert sorted(m[2] for m in scan.markers) == [False, True, True, True]   # 1 ABORT, 3 COMMITs
        assert txn_indexes_on_disk(d) == scan.aborted and sum(map(len, scan.aborted.values())) == 1
    b.start()
