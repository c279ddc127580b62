"""Transactions in the partition log: markers, last stable offset, aborted-transaction index,
recovery, retention and truncation. Rows of Kafka's UnifiedLogTest (testFirstUnstableOffset*,
testLastStableOffset*, testAbortedTransactionSpanningMultipleSegments, testCollectAbortedTransactions*,
testTransactionIndexUpdated*, testRecoverTransactionIndex, testFullTransactionIndexRecovery,
testRecoverOnlyLastSegment, testTruncateFullyAndStartBelowFirstUnstableOffset,
testOffsetSnapshot / testLogStartOffsetMovementDeletesSnapshots ...) and LogLoaderTest,
checked against a brute-force scan of the log where the log decides."""
from __future__ import annotations

import os
import random

import pytest
from hypothesis import given, settings, strategies as st

from protocol.records.batch import iter_batch_positions
from protocol.records.record import build_batch, end_txn_marker
from storage.clock import ManualClock
from storage.errors import (
    InvalidProducerEpochError, InvalidRecordError, InvalidTxnStateError, OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)
from storage.index.txn_index import AbortedTxn
from storage.log import PartitionLog
from storage.log_config import LogConfig
from storage.producer_state import read_end_txn_marker

NOW = 1_700_000_000_000


def cfg(**kw):
    base = {"index.interval.bytes": "1"}
    base.update({k.replace("_", "."): str(v) for k, v in kw.items()})
    return LogConfig.from_props({}, base)


def open_log(d, recover=False, clock=None, **kw):
    return PartitionLog.open(d, cfg(**kw), clock or ManualClock(NOW), recover=recover, rng=random.Random(3))


def crash(log):
    """A kill -9: handles dropped, nothing trimmed, flushed or snapshotted."""
    for s in log.segments.values():
        s.close_handlers()


class Producer:
    """A transactional producer's batches (sequence numbers kept like the client)."""

    def __init__(self, pid, epoch=0):
        self.pid, self.epoch, self.seq = pid, epoch, 0

    def batch(self, n=1, transactional=True, value=b"v"):
        b = build_batch([(None, value, NOW + i) for i in range(n)], producer_id=self.pid, producer_epoch=self.epoch,
                        base_sequence=self.seq, is_transactional=transactional)
        self.seq += n
        return b


def marker_batch(pid, epoch, commit, coordinator_epoch=0):
    return build_batch([end_txn_marker(commit, coordinator_epoch, NOW)], producer_id=pid, producer_epoch=epoch,
                       is_transactional=True, is_control=True)


# ---- a brute-force reading of the log ---------------------------------------------------------

def scan(log):
    """Every batch of the log as ``(base offset, last offset, header, marker or None)``."""
    out = []
    for seg in log.segments.values():
        for pos, h in seg.iter_headers(0):
            marker = None
            if h.is_control:
                marker = read_end_txn_marker(seg.read_bytes(pos, h.batch_length + 12))
            out.append((h.base_offset, h.base_offset + h.last_offset_delta, h, marker))
    return out


def brute_force(log):
    """Open transactions, aborted transactions (as index entries, with Kafka's LSO rule) and
    the segment each marker sits in, computed from the batches alone."""
    open_at: dict[int, int] = {}
    aborted = []
    for base, _last, h, marker in scan(log):
        pid = h.producer_id
        if pid < 0:
            continue
        if h.is_control:
            if marker is None or pid not in open_at:
                open_at.pop(pid, None)
                continue
            first = open_at.pop(pid)
            if not marker.commit:
                lso = min(open_at.values(), default=base + 1)
                aborted.append(AbortedTxn(pid, first, base, lso))
        elif h.is_transactional:
            open_at.setdefault(pid, base)
    return open_at, aborted


def expected_lso(log, open_at):
    if not open_at:
        return log.log_end_offset
    return min(max(min(open_at.values()), log.log_start_offset), log.log_end_offset)


def index_entries_by_segment(log):
    return {s.base_offset: s.txn_index.all_aborted_txns() for s in log.segments.values()}


def expected_by_segment(log, aborted):
    bases = log.segments.base_offsets()
    out = {b: [] for b in bases}
    for t in aborted:
        out[max(b for b in bases if b <= t.last_offset)].append(t)
    return out


def check_against_brute_force(log):
    open_at, aborted = brute_force(log)
    assert sorted(log.producer_state.ongoing_transactions(), key=lambda t: t[1]) == \
        sorted(open_at.items(), key=lambda t: t[1])
    assert log.last_stable_offset == expected_lso(log, open_at)
    assert index_entries_by_segment(log) == expected_by_segment(log, aborted)
    return open_at, aborted


# ---- markers and the LSO ----------------------------------------------------------------------

def test_commit_and_abort_move_the_last_stable_offset(tmp_path):
    log = open_log(tmp_path / "t-0")
    woken = []
    log.on_append = lambda lg: woken.append(lg.last_stable_offset)
    p1, p2 = Producer(1), Producer(2)
    log.append(build_batch([(None, b"plain", NOW)]))                 # 0
    assert log.last_stable_offset == 1 and log.first_unstable_offset is None
    log.append(p1.batch(2))                                            # 1-2
    log.append(p2.batch())                                             # 3
    log.append(p1.batch())                                             # 4
    assert log.first_unstable_offset == 1 and log.last_stable_offset == 1
    assert log.high_watermark == 5
    assert log.ongoing_transactions() == [(1, 1, 4), (2, 3, 3)]
    info = log.append_marker(1, 0, 0, commit=True)                     # 5
    assert (info.base_offset, info.last_offset, info.record_count) == (5, 5, 1)
    assert log.last_stable_offset == 3, "p2 is still open"
    assert woken[-1] == 3, "a marker calls on_append (read_committed fetches wake on an LSO move)"
    log.append_marker(2, 0, 0, commit=False)                           # 6
    assert log.last_stable_offset == 7 and log.first_unstable_offset is None
    assert log.collect_aborted_transactions(0, 7) == [AbortedTxn(2, 3, 6, 7)]
    assert log.active_segment.txn_index.all_aborted_txns() == [AbortedTxn(2, 3, 6, 7)]
    assert log.ongoing_transactions() == []
    check_against_brute_force(log)


def test_abort_lso_is_the_next_open_transaction(tmp_path):
    """testTransactionIndexUpdated: the LSO stored with an abort is the first offset of the
    earliest other open transaction."""
    log = open_log(tmp_path / "t-0")
    p1, p2, p3 = Producer(1), Producer(2), Producer(3)
    log.append(p1.batch())            # 0
    log.append(p2.batch())            # 1
    log.append(p3.batch())            # 2
    log.append_marker(2, 0, 0, False)  # 3: aborts p2 at 1; p1 open since 0
    log.append_marker(1, 0, 0, False)  # 4: aborts p1; p3 open since 2
    log.append_marker(3, 0, 0, False)  # 5
    assert log.active_segment.txn_index.all_aborted_txns() == [
        AbortedTxn(2, 1, 3, 0), AbortedTxn(1, 0, 4, 2), AbortedTxn(3, 2, 5, 6)]
    check_against_brute_force(log)


def test_marker_checks_refuse_and_write_nothing(tmp_path):
    log = open_log(tmp_path / "t-0")
    p = Producer(7, epoch=3)
    log.append(p.batch())
    log.append_marker(7, 3, 5, commit=True)
    log.append(p.batch())
    end = log.log_end_offset
    with pytest.raises(InvalidProducerEpochError):
        log.append_marker(7, 2, 5, commit=False)
    with pytest.raises(TransactionCoordinatorFencedError):
        log.append_marker(7, 3, 4, commit=False)
    with pytest.raises(TransactionCoordinatorFencedError):
        log.append(marker_batch(7, 3, False, coordinator_epoch=4), from_client=False)
    assert log.log_end_offset == end and log.first_unstable_offset == 2
    log.append_marker(7, 4, 6, commit=False)     # a bumped epoch and a newer coordinator: accepted
    assert log.first_unstable_offset is None
    assert log.producer_state.last_entry(7).producer_epoch == 4


def test_marker_for_a_producer_without_open_transaction_is_written(tmp_path):
    log = open_log(tmp_path / "t-0")
    info = log.append_marker(9, 0, 0, commit=False)
    assert info.base_offset == 0 and log.log_end_offset == 1
    assert log.collect_aborted_transactions(0, 1) == [] and log.active_segment.txn_index.is_empty


def test_control_batches_only_from_the_broker(tmp_path):
    """testControlRecordsNotAllowedFromClients; the coordinator may append them."""
    log = open_log(tmp_path / "t-0")
    log.append(Producer(1).batch())
    with pytest.raises(InvalidRecordError):
        log.append(marker_batch(1, 0, False))
    info = log.append(marker_batch(1, 0, False), from_client=False)
    assert info.base_offset == 1
    assert log.collect_aborted_transactions(0, 2) == [AbortedTxn(1, 0, 1, 2)]


def test_non_transactional_batch_inside_a_transaction_is_refused(tmp_path):
    log = open_log(tmp_path / "t-0")
    p = Producer(1)
    log.append(p.batch())
    with pytest.raises(InvalidTxnStateError):
        log.append(p.batch(transactional=False))
    fresh = Producer(2)
    with pytest.raises(InvalidTxnStateError):   # within one request too
        log.append(fresh.batch(transactional=True) + fresh.batch(transactional=False))
    assert log.log_end_offset == 1


def test_idempotence_still_applies_to_transactional_batches(tmp_path):
    log = open_log(tmp_path / "t-0")
    p = Producer(1)
    first = p.batch(3)
    log.append(first)
    dup = log.append(first)
    assert dup.duplicate and (dup.base_offset, dup.last_offset) == (0, 2) and log.log_end_offset == 3
    p.seq += 1
    with pytest.raises(OutOfOrderSequenceError):
        log.append(p.batch())


def test_coordinator_transactional_data_batch_opens_a_transaction(tmp_path):
    """The group coordinator writes transactional offset commits itself (coordinator origin:
    no sequence check); its epoch is still checked."""
    log = open_log(tmp_path / "t-0")
    b = build_batch([(b"k", b"v", NOW)], producer_id=5, producer_epoch=2, base_sequence=0, is_transactional=True)
    log.append(b, from_client=False)
    log.append(b, from_client=False)    # no idempotence for the coordinator's own writes
    assert log.first_unstable_offset == 0 and log.log_end_offset == 2
    with pytest.raises(InvalidProducerEpochError):
        log.append(build_batch([(b"k", b"v", NOW)], producer_id=5, producer_epoch=1, base_sequence=0,
                               is_transactional=True), from_client=False)
    log.append_marker(5, 2, 0, commit=True)
    assert log.last_stable_offset == 3


def test_aborted_transaction_spanning_segments(tmp_path):
    """testAbortedTransactionSpanningMultipleSegments: the entry lives with the marker's
    segment and is found from a fetch starting in an earlier one."""
    log = open_log(tmp_path / "t-0", segment_bytes=400)
    p = Producer(1)
    for _ in range(12):
        log.append(p.batch(value=b"x" * 40))
    assert len(log.segments) >= 3
    log.append_marker(1, 0, 0, commit=False)
    first_seg = log.segments.first_segment
    assert first_seg.txn_index.is_empty
    expected = [AbortedTxn(1, 0, 12, 13)]
    assert log.collect_aborted_transactions(0, 13) == expected
    assert log.collect_aborted_transactions(5, 6) == expected
    assert log.collect_aborted_transactions(13, 14) == []
    check_against_brute_force(log)


def test_lso_never_below_the_log_start_offset(tmp_path):
    """Kafka 4: DeleteRecords and retention may pass an open transaction's first offset; the
    first unstable offset (and the LSO) then stand at the log start offset."""
    log = open_log(tmp_path / "t-0", segment_bytes=300)
    p = Producer(1)
    for _ in range(10):
        log.append(p.batch(value=b"y" * 40))
    log.append(build_batch([(None, b"plain", NOW)]))
    assert log.last_stable_offset == 0
    log.delete_records(4)
    assert log.log_start_offset == 4
    assert log.first_unstable_offset == 4 and log.last_stable_offset == 4
    assert log.delete_old_segments() > 0
    assert log.last_stable_offset == log.log_start_offset >= 4
    log.append_marker(1, 0, 0, commit=True)
    assert log.last_stable_offset == log.log_end_offset


# ---- snapshots, restart and recovery --------------------------------------------------------

def test_clean_restart_keeps_open_transactions_from_the_snapshot(tmp_path, monkeypatch):
    import storage.loader as loader
    d = tmp_path / "t-0"
    log = open_log(d)
    p1, p2 = Producer(1), Producer(2)
    log.append(p1.batch())
    log.append(p2.batch())
    log.append_marker(2, 0, 7, commit=False)
    log.append(Producer(3).batch(transactional=False))
    log.close()
    monkeypatch.setattr(loader, "replay_segment", lambda *a, **k: pytest.fail("replayed"))
    again = open_log(d)
    assert again.ongoing_transactions() == [(1, 0, 0)]
    assert again.last_stable_offset == 0
    assert again.producer_state.last_entry(2).coordinator_epoch == 7
    with pytest.raises(TransactionCoordinatorFencedError):
        again.append_marker(2, 0, 6, commit=True)
    again.append_marker(1, 0, 7, commit=False)
    assert again.collect_aborted_transactions(0, 10) == [AbortedTxn(2, 1, 2, 0), AbortedTxn(1, 0, 4, 5)]
    check_against_brute_force(again)


def test_crash_recovery_rebuilds_transaction_indexes_and_open_transactions(tmp_path):
    """testRecoverTransactionIndex / testFullTransactionIndexRecovery: after a kill the
    recovered segments' .txnindex files are rebuilt from the log, and the open
    transactions with them."""
    d = tmp_path / "t-0"
    log = open_log(d, segment_bytes=500)
    rng = random.Random(11)
    producers = [Producer(i) for i in range(4)]
    for step in range(80):
        p = rng.choice(producers)
        r = rng.random()
        if r < 0.6:
            log.append(p.batch(value=b"z" * rng.randrange(1, 60)))
        elif r < 0.8:
            log.append_marker(p.pid, 0, 0, commit=rng.random() < 0.5)
        else:
            log.append(build_batch([(None, b"plain", NOW)]))
    assert len(log.segments) > 3
    before = check_against_brute_force(log)
    entries = index_entries_by_segment(log)
    crash(log)
    for f in d.glob("*.txnindex"):
        f.unlink()                         # lost with the crash
    for f in d.glob("*.snapshot"):
        f.unlink()                         # and no snapshot to start from: full replay
    again = open_log(d, recover=True)
    assert check_against_brute_force(again) == before
    assert index_entries_by_segment(again) == entries


def test_crash_recovery_starts_at_the_roll_snapshot(tmp_path, monkeypatch):
    """Kafka takes a producer snapshot at every roll: after a crash only the segments from
    the recovery point are read, and a transaction opened segments earlier is still known."""
    import storage.loader as loader
    d = tmp_path / "t-0"
    log = open_log(d, segment_bytes=300)
    p = Producer(1)
    log.append(p.batch())                                    # opens at 0
    for _ in range(12):
        log.append(build_batch([(None, b"w" * 40, NOW)]))
    bases = log.segments.base_offsets()
    assert len(bases) >= 4
    assert sorted(x.name for x in d.glob("*.snapshot")) == [f"{b:020d}.snapshot" for b in bases[1:]]
    crash(log)
    replayed = []
    real = loader.replay_segment
    monkeypatch.setattr(loader, "replay_segment", lambda st, seg, *a, **k: (replayed.append(seg.base_offset),
                                                                            real(st, seg, *a, **k)))
    again = open_log(d, recover=True)
    assert replayed == [], "the active segment was recovered, nothing else read"
    assert again.first_unstable_offset == 0 and again.last_stable_offset == 0
    again.append_marker(1, 0, 0, commit=False)
    assert again.collect_aborted_transactions(0, 1) == [AbortedTxn(1, 0, again.log_end_offset - 1,
                                                                    again.log_end_offset)]


def test_truncation_truncates_transaction_indexes_and_rebuilds_state(tmp_path):
    log = open_log(tmp_path / "t-0", segment_bytes=400)
    p1, p2 = Producer(1), Producer(2)
    log.append(p1.batch(value=b"a" * 50))        # 0
    log.append(p2.batch(value=b"a" * 50))        # 1
    log.append_marker(1, 0, 0, False)            # 2
    for _ in range(6):
        log.append(build_batch([(None, b"b" * 50, NOW)]))
    log.append_marker(2, 0, 0, False)            # 9
    assert log.collect_aborted_transactions(0, 10) == [AbortedTxn(1, 0, 2, 1), AbortedTxn(2, 1, 9, 10)]
    log.truncate_to(5)
    assert log.collect_aborted_transactions(0, 5) == [AbortedTxn(1, 0, 2, 1)]
    assert log.ongoing_transactions() == [(2, 1, 1)] and log.last_stable_offset == 1
    check_against_brute_force(log)
    log.truncate_fully_and_start_at(20)
    assert log.last_stable_offset == 20 and log.ongoing_transactions() == []
    assert not list((tmp_path / "t-0").glob("*.snapshot"))


def test_producer_entries_for_describe_producers(tmp_path):
    log = open_log(tmp_path / "t-0")
    p = Producer(4, epoch=2)
    log.append(p.batch(3))
    log.append(build_batch([(None, b"i", NOW + 9)], producer_id=5, producer_epoch=0, base_sequence=0))
    entries = sorted(log.producer_entries())
    assert [(e.producer_id, e.producer_epoch, e.last_sequence, e.coordinator_epoch, e.current_txn_start_offset)
            for e in entries] == [(4, 2, 2, -1, 0), (5, 0, 0, -1, -1)]
    assert entries[1].last_timestamp == NOW + 9


# ---- the property: any history, any crash, the log agrees with a scan of itself ----------

OPS = st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["txn", "txn", "plain", "commit", "abort", "roll"])),
               min_size=1, max_size=60)


@settings(max_examples=60, deadline=None)
@given(ops=OPS, restart=st.sampled_from(["none", "clean", "crash", "crash-no-snapshots", "crash-torn"]),
       start=st.integers(0, 70), width=st.integers(1, 70))
def test_property_state_and_indexes_match_a_scan_of_the_log(tmp_path_factory, ops, restart, start, width):
    d = tmp_path_factory.mktemp("prop") / "t-0"
    log = open_log(d, segment_bytes=350)
    producers = {}
    for pid, op in ops:
        p = producers.setdefault(pid, Producer(pid))
        if op == "txn":
            log.append(p.batch(value=b"q" * 30))
        elif op == "plain":
            log.append(build_batch([(None, b"p" * 30, NOW)]))
        elif op == "roll":
            log.roll()
        else:
            log.append_marker(pid, 0, 0, commit=op == "commit")
    if restart == "clean":
        log.close()
        log = open_log(d)
    elif restart.startswith("crash"):
        crash(log)
        if restart == "crash-no-snapshots":
            for f in d.glob("*.snapshot"):
                f.unlink()
        if restart == "crash-torn":
            last = sorted(d.glob("*.log"))[-1]
            size = last.stat().st_size
            if size:
                os.truncate(last, size - 1)
        log = open_log(d, recover=True)
    open_at, aborted = check_against_brute_force(log)
    # read_committed's view: Kafka's walk over the index entries, flattened
    upper = start + width
    floor = log.segments.floor_segment(start)
    walk = [t for t in aborted if floor is None or t.last_offset >= floor.base_offset]
    expected = []
    for t in walk:
        if t.last_offset >= start and t.first_offset < upper:
            expected.append(t)
        if t.last_stable_offset >= upper:
            break
    assert log.collect_aborted_transactions(start, upper) == expected
    log.close()


# ---- dump-log ---------------------------------------------------------------------------------

def test_dump_log_prints_markers_txnindex_and_snapshot_transactions(tmp_path, capsys):
    """``hourglass dump-log`` as kafka-dump-log.sh: control records with their marker, the
    entries of a .txnindex, and the open transaction in a producer snapshot."""
    from hourglass.cli import main
    d = tmp_path / "t-0"
    log = open_log(d)
    p1, p2 = Producer(11, epoch=2), Producer(12)
    log.append(p1.batch())                       # 0
    log.append(p2.batch())                       # 1
    log.append_marker(11, 2, 4, commit=False)    # 2
    log.append_marker(12, 0, 4, commit=True)     # 3
    log.append(p1.batch())                       # 4: open at close
    log.close()
    seg = f"{0:020d}"
    assert main(["dump-log", "--print-data", str(d / f"{seg}.log")]) == 0
    out = capsys.readouterr().out
    assert ("baseOffset: 2 lastOffset: 2 count: 1 baseSequence: -1 lastSequence: -1 producerId: 11 "
            "producerEpoch: 2 partitionLeaderEpoch: 0 isTransactional: true isControl: true "
            "deleteHorizonMs: OptionalLong.empty position: ") in out
    assert (f"| offset: 2 CreateTime: {NOW} keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
            "endTxnMarker: ABORT coordinatorEpoch: 4") in out
    assert "endTxnMarker: COMMIT coordinatorEpoch: 4" in out
    assert main(["dump-log", str(d / f"{seg}.txnindex")]) == 0
    assert "version: 0 producerId: 11 firstOffset: 0 lastOffset: 2 lastStableOffset: 1" in capsys.readouterr().out
    assert main(["dump-log", str(d / f"{5:020d}.snapshot")]) == 0
    out = capsys.readouterr().out
    assert "producerId: 11 producerEpoch: 2 coordinatorEpoch: 4 currentTxnFirstOffset: OptionalLong[4]" in out
    assert "producerId: 12 producerEpoch: 0 coordinatorEpoch: 4 currentTxnFirstOffset: OptionalLong.empty" in out
    (d / f"{seg}.txnindex").write_bytes(b"\x00\x07" + bytes(32))
    assert main(["dump-log", str(d / f"{seg}.txnindex")]) == 1
    assert "cannot read" in capsys.readouterr().out


def test_state_survives_when_retention_emptied_the_log(tmp_path):
    """Retention may leave one empty segment: the producer state (an open transaction
    included) still comes back from the snapshot after a restart."""
    d = tmp_path / "t-0"
    clock = ManualClock(NOW)
    log = open_log(d, clock=clock, retention_ms=1000)
    log.append(Producer(3).batch())
    clock.advance(10_000)
    assert log.delete_old_segments() == 1 and log.segments.size_in_bytes() == 0
    assert log.last_stable_offset == 1 == log.log_start_offset
    log.close()
    again = open_log(d, clock=clock, retention_ms=1000)
    assert again.ongoing_transactions() == [(3, 0, 0)] and again.last_stable_offset == 1
    again.append_marker(3, 0, 0, commit=False)
    assert again.last_stable_offset == 2
