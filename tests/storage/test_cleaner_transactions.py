"""The log cleaner and transactions: Kafka's rules (LogCleanerTest's testAbortMarkerRemoval,
testCommitMarkerRemoval, testAbortedTransactionSpanningSegments, testCleanEmptyControlBatch,
testDeleteEmptyBatchesWithTransactions-like rows), then a property: whatever the history,
cleaning to a fixpoint keeps what a read_committed consumer sees, leaves no record of an
aborted transaction, and keeps a marker only while its transaction has data in the log."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from protocol.records.batch import iter_batch_positions
from protocol.records.record import build_batch, control_record_type, decode_batch
from storage.index.txn_index import AbortedTxn

from tests.storage.test_cleaner_helpers import NOW, batches, clean, open_log

DRM = 1000   # delete.retention.ms of these logs


def txn(log, pid, pairs, epoch=0, seq=0):
    b = build_batch([(k.encode(), None if v is None else v.encode(), log.clock.now_ms()) for k, v in pairs],
                    producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=True)
    return log.append(b)


def plain(log, pairs):
    return log.append(build_batch([(k.encode(), None if v is None else v.encode(), log.clock.now_ms())
                                   for k, v in pairs]))


def layout(log):
    """(base offset, control type or 'data', keys) of every batch."""
    out = []
    for _seg, h, recs in batches(log):
        kind = (control_record_type(recs[0].key) if recs else "empty") if h.is_control else "data"
        keys = [] if h.is_control else [r.key.decode() for r in recs]
        out.append((h.base_offset, kind, keys, h.has_delete_horizon))
    return out


def read_committed(log):
    """key -> value as a read_committed consumer sees the whole log: Kafka's client-side
    filtering with the aborted transactions the log lists (KafkaConsumer's CompletedFetch)."""
    aborted = sorted(log.collect_aborted_transactions(log.log_start_offset, log.last_stable_offset),
                     key=lambda t: t.first_offset)
    out, aborting, i = {}, set(), 0
    for seg in log.segments.values():
        data = seg.read_bytes(0, seg.size)
        for pos, h in iter_batch_positions(data):
            if h.base_offset >= log.last_stable_offset:
                return out
            while i < len(aborted) and aborted[i].first_offset <= h.base_offset + h.last_offset_delta:
                aborting.add(aborted[i].producer_id)
                i += 1
            recs = decode_batch(data, pos)[1]
            if h.is_control:
                if recs and control_record_type(recs[0].key) == 0:
                    aborting.discard(h.producer_id)
                continue
            if h.is_transactional and h.producer_id in aborting:
                continue
            for r in recs:
                out[r.key] = r.value
    return out


def test_aborted_records_go_and_the_abort_marker_follows_after_the_delete_horizon(tmp_path):
    """testAbortMarkerRemoval: records of an aborted transaction are removed at once; its
    marker stays until a cleaning finds no data of it, then gets a delete horizon, then goes."""
    log = open_log(tmp_path, delete_retention_ms=DRM)
    txn(log, 1, [("a", "1"), ("b", "1")])        # 0-1
    log.append_marker(1, 0, 0, commit=False)     # 2
    txn(log, 1, [("c", "1")], seq=2)             # 3
    log.append_marker(1, 0, 0, commit=True)      # 4
    log.roll()
    plain(log, [("d", "1")])                     # 5 (active segment: uncleanable)
    assert log.collect_aborted_transactions(0, 5) == [AbortedTxn(1, 0, 2, 3)]
    clean(log, now=NOW)
    assert layout(log) == [(2, 0, [], False), (3, "data", ["c"], False), (4, 1, [], False),
                           (5, "data", ["d"], False)]
    assert read_committed(log) == {b"c": b"1", b"d": b"1"}
    assert log.segments.first_segment.txn_index.all_aborted_txns() == [AbortedTxn(1, 0, 2, 3)], \
        "data was seen this pass: the abort stays indexed"
    clean(log, now=NOW + 1)
    assert layout(log)[0] == (2, 0, [], True), "no data left: the marker gets a delete horizon"
    assert layout(log)[2] == (4, 1, [], False), "the commit's data is still there"
    assert log.segments.first_segment.txn_index.is_empty
    clean(log, now=NOW + 1 + DRM - 1)
    assert layout(log)[0][:2] == (2, 0)
    clean(log, now=NOW + 1 + DRM)
    assert [b for b, *_ in layout(log)] == [3, 4, 5], "past the horizon the marker is gone"
    assert read_committed(log) == {b"c": b"1", b"d": b"1"}


def test_commit_marker_stays_while_its_data_does(tmp_path):
    """testCommitMarkerRemoval: the marker of a committed transaction goes only once the
    transaction's records were all compacted away (and its delete horizon passed)."""
    log = open_log(tmp_path, delete_retention_ms=DRM)
    txn(log, 1, [("k", "t1")])                  # 0
    log.append_marker(1, 0, 0, commit=True)     # 1
    plain(log, [("x", "1")])                    # 2
    log.roll()
    plain(log, [("z", "0")])
    clean(log, now=NOW)
    assert [k for _b, kind, k, _h in layout(log) if kind == "data"][:2] == [["k"], ["x"]]
    assert layout(log)[1][:2] == (1, 1), "the commit marker stays with its record"
    log.roll()
    plain(log, [("k", "newer")])                # supersedes the transactional record
    txn(log, 1, [("m", "1")], seq=1)            # producer 1's last data batch is now this one
    log.append_marker(1, 0, 0, commit=True)
    log.roll()
    plain(log, [("zz", "0")])
    clean(log, now=NOW + 5)
    kinds = [(b, kind) for b, kind, *_ in layout(log)]
    assert (0, "data") not in kinds and (1, 1) in kinds, "data compacted away; marker waits for its horizon"
    clean(log, now=NOW + 6)
    clean(log, now=NOW + 6 + DRM)
    assert (1, 1) not in [(b, kind) for b, kind, *_ in layout(log)]
    assert read_committed(log)[b"k"] == b"newer"


def test_aborted_transaction_spanning_segments_is_cleaned_and_reindexed(tmp_path):
    """testAbortedTransactionSpanningSegments: the cleaner learns of the abort from the index
    of a later segment and drops the records in the earlier one."""
    log = open_log(tmp_path, delete_retention_ms=DRM, segment_bytes=200)
    for i in range(6):
        txn(log, 1, [(f"k{i}", "a" * 20)], seq=i)
        plain(log, [(f"p{i}", "b" * 20)])
    log.append_marker(1, 0, 0, commit=False)
    log.roll()
    plain(log, [("end", "0")])
    assert len(log.segments) > 3
    before = read_committed(log)
    clean(log, now=NOW)
    assert not any(k.startswith("k") for _b, kind, keys, _h in layout(log) for k in keys)
    assert read_committed(log) == before


def test_active_producers_keep_their_last_batch_and_epoch_marker(tmp_path):
    """isBatchLastRecordOfProducer: an emptied batch holding a producer's last data offset
    stays (empty); so does a marker carrying the epoch of a producer without data."""
    log = open_log(tmp_path, delete_retention_ms=DRM)
    txn(log, 1, [("k", "old")])                  # 0: producer 1's last data batch
    log.append_marker(1, 0, 0, commit=True)      # 1
    txn(log, 2, [("j", "x")])                     # 2
    log.append_marker(2, 1, 0, commit=False)     # 3: fencing abort, epoch 1, no data left for 2
    plain(log, [("k", "new")])                   # 4
    log.roll()
    plain(log, [("z", "0")])
    for now in (NOW, NOW + 1, NOW + 2 + DRM, NOW + 3 + 2 * DRM):
        clean(log, now=now)
    lay = {b: (kind, keys) for b, kind, keys, _h in layout(log)}
    assert lay[0] == ("data", []), "producer 1's last batch is kept, emptied"
    assert lay[1] == (1, []), "and so is its commit marker: a batch of its transaction is still there"
    assert lay[3] == ("empty", []), "producer 2's epoch marker is kept, emptied"
    assert 2 not in lay, "the aborted batch is gone"


def test_cleaning_never_passes_the_last_stable_offset(tmp_path):
    log = open_log(tmp_path, delete_retention_ms=DRM)
    plain(log, [("a", "1")])
    txn(log, 1, [("a", "2")])                    # 1: open
    plain(log, [("a", "3")])
    log.roll()
    plain(log, [("b", "1")])
    end, _stats = clean(log, now=NOW)
    assert end <= log.last_stable_offset == 1
    assert [b for b, *_ in layout(log)][:3] == [0, 1, 2]


# ---- the property ----------------------------------------------------------------------------

OPS = st.lists(st.tuples(st.integers(1, 3), st.sampled_from(["txn", "txn", "plain", "commit", "abort", "roll"]),
                         st.sampled_from(["a", "b", "c", "d"]), st.booleans()),
               min_size=1, max_size=50)


@settings(max_examples=80, deadline=None)
@given(ops=OPS)
def test_property_cleaning_keeps_the_read_committed_view(tmp_path_factory, ops):
    log = open_log(tmp_path_factory.mktemp("ct"), delete_retention_ms=DRM, segment_bytes=300)
    seqs: dict[int, int] = {}
    for i, (pid, op, key, tomb) in enumerate(ops):
        if op == "txn":
            txn(log, pid, [(key, None if tomb else f"t{i}")], seq=seqs.get(pid, 0))
            seqs[pid] = seqs.get(pid, 0) + 1
        elif op == "plain":
            plain(log, [(key, None if tomb else f"p{i}")])
        elif op == "roll":
            log.roll()
        else:
            log.append_marker(pid, 0, 0, commit=op == "commit")
    for pid in seqs:                      # decide everything, then a fresh active segment
        log.append_marker(pid, 0, 0, commit=True)
    log.roll()
    plain(log, [("zz", "end")])

    def view(lg):   # tombstones read as absent keys once they may be gone
        return {k: v for k, v in read_committed(lg).items() if v is not None}

    expected = view(log)
    offsets = {(h.base_offset, h.base_offset + h.last_offset_delta) for _s, h, _r in batches(log)}
    aborted_batches = _aborted_data_batches(log)
    lso, leo = log.last_stable_offset, log.log_end_offset
    now = NOW
    seen = None
    for _ in range(12):                    # to a fixpoint: each pass may set or pass horizons
        clean(log, now=now)
        now += DRM + 1
        if layout(log) == seen:
            break
        seen = layout(log)
        assert view(log) == expected
        assert (log.last_stable_offset, log.log_end_offset) == (lso, leo)
        assert {(h.base_offset, h.base_offset + h.last_offset_delta) for _s, h, _r in batches(log)} <= offsets
    else:
        raise AssertionError("cleaning reached no fixpoint")
    active = log.segments.active_segment.base_offset
    data_since_marker: dict[int, bool] = {}
    for _s, h, recs in batches(log):
        if h.base_offset >= active:
            break
        assert not (recs and h.base_offset in aborted_batches), "a record of an aborted transaction is left"
        if h.producer_id < 0:
            continue
        if not h.is_control:
            if h.is_transactional:
                data_since_marker[h.producer_id] = True
            continue
        had_data = data_since_marker.pop(h.producer_id, False)
        assert not recs or had_data, f"marker at {h.base_offset} kept though its transaction has no data left"


def _aborted_data_batches(log):
    """Base offsets of the transactional data batches that an ABORT marker ends (a scan)."""
    pending: dict[int, list[int]] = {}
    out = set()
    for _s, h, recs in batches(log):
        if h.producer_id < 0 or not h.is_transactional:
            continue
        if h.is_control:
            done = pending.pop(h.producer_id, [])
            if recs and control_record_type(recs[0].key) == 0:
                out.update(done)
        else:
            pending.setdefault(h.producer_id, []).append(h.base_offset)
    return out
