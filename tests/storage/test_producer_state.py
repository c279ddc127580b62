"""Tests for storage.producer_state, porting the idempotence invariants of Kafka's
ProducerStateManagerTest (storage/src/test/java/org/apache/kafka/storage/internals/log/):
testBasicIdempotence, testProducerSequenceWrapAround, testProducerFencedOnOlderEpoch-like
(InvalidProducerEpoch), testNewEpochMustStartAtZero-like, testAcceptAppendWithoutProducerStateOnReplica /
unknown producer after retention, testTruncateAndReloadRemovesOutOfRangeSnapshots (snapshot
round trip), testProducerIdExpiration (removeExpiredProducers)."""
from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from storage.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from storage.producer_state import (
    INT_MAX,
    BatchMetadata,
    ProducerStateManager,
    last_sequence,
    sequence_in_order,
)

PID = 1000


def append(m, epoch, first_seq, last_seq, first_offset, ts=0):
    dup = m.check_and_prepare(PID, epoch, first_seq, last_seq)
    if dup is None:
        m.update(PID, epoch, first_seq, last_seq, first_offset,
                 first_offset + (last_seq - first_seq) % (INT_MAX + 1), ts)
    return dup


def test_basic_idempotence():
    m = ProducerStateManager()
    assert append(m, 0, 0, 0, 0) is None
    assert append(m, 0, 1, 1, 1) is None
    # retry of the same batch: duplicate with the original offsets
    dup = append(m, 0, 1, 1, 99)
    assert dup == BatchMetadata(1, 1, 0, 1, 1)
    assert m.last_entry(PID).last_seq == 1


def test_sequence_gap_is_out_of_order():
    m = ProducerStateManager()
    append(m, 0, 0, 4, 0)
    with pytest.raises(OutOfOrderSequenceError):
        m.check_and_prepare(PID, 0, 6, 6)
    with pytest.raises(OutOfOrderSequenceError):
        m.check_and_prepare(PID, 0, 3, 3)       # not a retained batch range
    assert m.check_and_prepare(PID, 0, 5, 9) is None


def test_duplicates_found_among_last_five_batches_only():
    m = ProducerStateManager()
    for i in range(6):
        append(m, 0, i, i, 10 + i, ts=i)
    for i in range(1, 6):
        assert m.check_and_prepare(PID, 0, i, i) == BatchMetadata(10 + i, 10 + i, i, i, i)
    with pytest.raises(OutOfOrderSequenceError):
        m.check_and_prepare(PID, 0, 0, 0)       # evicted: no longer recognised


def test_producer_sequence_wrap_around():
    """testProducerSequenceWrapAround: Int.MAX is followed by 0."""
    m = ProducerStateManager()
    append(m, 15, INT_MAX - 10, INT_MAX - 1, 0)
    assert m.check_and_prepare(PID, 15, INT_MAX, 0) is None
    append(m, 15, INT_MAX, 0, 10)
    assert m.check_and_prepare(PID, 15, 1, 1) is None
    assert sequence_in_order(INT_MAX, 0) and not sequence_in_order(INT_MAX, 1)
    assert last_sequence(INT_MAX - 1, 3) == 1 and last_sequence(-1, 3) == -1


def test_older_epoch_rejected():
    m = ProducerStateManager()
    append(m, 5, 0, 0, 0)
    with pytest.raises(InvalidProducerEpochError):
        m.check_and_prepare(PID, 4, 1, 1)


def test_new_epoch_must_start_at_zero():
    m = ProducerStateManager()
    append(m, 5, 0, 9, 0)
    with pytest.raises(OutOfOrderSequenceError):
        m.check_and_prepare(PID, 6, 10, 10)
    assert append(m, 6, 0, 0, 10) is None
    # the old epoch's batches are forgotten: the same range is not a duplicate any more
    with pytest.raises(InvalidProducerEpochError):
        m.check_and_prepare(PID, 5, 0, 9)


def test_unknown_producer_accepts_any_sequence():
    """Kafka 2.5+: after retention removed a producer's state, its next batch is accepted
    whatever the sequence (no UNKNOWN_PRODUCER_ID)."""
    m = ProducerStateManager()
    assert m.check_and_prepare(PID, 3, 4242, 4250) is None
    append(m, 3, 4242, 4250, 0)
    assert m.check_and_prepare(PID, 3, 4251, 4251) is None


def test_remove_expired_uses_last_batch_timestamp():
    m = ProducerStateManager()
    m.update(1, 0, 0, 0, 0, 0, 1000)
    m.update(2, 0, 0, 0, 1, 1, 5000)
    assert m.remove_expired(now_ms=6000, producer_id_expiration_ms=5000) == [1]
    assert m.producer_ids() == [2]
    assert m.remove_expired(now_ms=9999, producer_id_expiration_ms=5000) == []
    assert m.remove_expired(now_ms=10000, producer_id_expiration_ms=5000) == [2]


def test_snapshot_round_trip_and_recovery_replay():
    m = ProducerStateManager()
    for i in range(7):
        append(m, 2, 3 * i, 3 * i + 2, 100 + 3 * i, ts=50 + i)
    m2 = ProducerStateManager.from_snapshot(m.snapshot())
    assert m2.snapshot() == m.snapshot()
    assert m2.check_and_prepare(PID, 2, 18, 20) == BatchMetadata(118, 120, 56, 18, 20)
    # replay (recovery) never validates: an out-of-order header is just recorded
    m2.update(PID, 2, 500, 500, 200, 200, 60)
    assert m2.last_entry(PID).last_seq == 500


@given(sizes=st.lists(st.integers(1, 5), min_size=1, max_size=20), start=st.integers(0, INT_MAX))
def test_property_in_order_stream_accepted_and_retries_are_duplicates(sizes, start):
    m = ProducerStateManager()
    seq, off, history = start, 0, []
    for n in sizes:
        last = (seq + n - 1) % (INT_MAX + 1)
        assert m.check_and_prepare(PID, 0, seq, last) is None
        m.update(PID, 0, seq, last, off, off + n - 1, 0)
        history.append(BatchMetadata(off, off + n - 1, 0, seq, last))
        seq, off = (last + 1) % (INT_MAX + 1), off + n
    for b in history[-5:]:
        assert m.check_and_prepare(PID, 0, b.first_seq, b.last_seq) == b


# ---- transactions (Kafka's ProducerStateManagerTest transactional cases) ----------------

from storage.errors import InvalidTxnStateError, TransactionCoordinatorFencedError  # noqa: E402
from storage.producer_snapshot import decode_snapshot, encode_snapshot  # noqa: E402
from storage.producer_state import CompletedTxn  # noqa: E402


def txn_append(m, pid, epoch, seq, offset, n=1, ts=0):
    assert m.check_and_prepare(pid, epoch, seq, seq + n - 1, is_transactional=True) is None
    m.update(pid, epoch, seq, seq + n - 1, offset, offset + n - 1, ts, is_transactional=True)


def marker(m, pid, epoch, commit, offset, coordinator_epoch=0, ts=0):
    """What the log does for a marker: check, update, LSO for the index, complete."""
    m.check_marker(pid, epoch, coordinator_epoch)
    completed = m.update_marker(pid, epoch, coordinator_epoch, commit, offset, ts)
    lso = m.last_stable_offset(completed) if completed else None
    if completed:
        m.complete_txn(completed)
    return completed, lso


def test_first_unstable_offset_follows_the_earliest_open_transaction():
    """testFirstUnstableOffset / testLastStableOffsetCompletedTxn."""
    m = ProducerStateManager()
    assert m.first_unstable_offset is None
    txn_append(m, 1, 0, 0, 99)
    assert m.first_unstable_offset == 99
    txn_append(m, 2, 0, 0, 100)
    txn_append(m, 1, 0, 1, 101)            # a later batch of the same transaction changes nothing
    assert m.first_unstable_offset == 99
    assert m.ongoing_transactions() == [(1, 99), (2, 100)]
    completed, lso = marker(m, 1, 0, True, 102)
    assert completed == CompletedTxn(1, 99, 102, False)
    assert lso == 100, "the LSO stops at the other producer's open transaction"
    assert m.first_unstable_offset == 100
    completed, lso = marker(m, 2, 0, False, 103)
    assert completed == CompletedTxn(2, 100, 103, True) and lso == 104
    assert m.first_unstable_offset is None and m.ongoing_transactions() == []
    assert m.last_entry(1).current_txn_first_offset is None


def test_non_transactional_append_with_ongoing_transaction_is_refused():
    """testNonTransactionalAppendWithOngoingTransaction."""
    m = ProducerStateManager()
    txn_append(m, 1, 0, 0, 0)
    with pytest.raises(InvalidTxnStateError):
        m.check_and_prepare(1, 0, 1, 1, is_transactional=False)
    with pytest.raises(InvalidTxnStateError):
        m.check_coordinator_batch(1, 0, is_transactional=False)


def test_marker_checks_producer_and_coordinator_epochs():
    """testOldEpochForControlRecord, testCoordinatorFencing."""
    m = ProducerStateManager()
    txn_append(m, 1, 3, 0, 0)
    with pytest.raises(InvalidProducerEpochError):
        m.check_marker(1, 2, 0)
    marker(m, 1, 3, True, 1, coordinator_epoch=5)
    assert m.last_entry(1).coordinator_epoch == 5
    with pytest.raises(TransactionCoordinatorFencedError):
        m.check_marker(1, 3, 4)
    m.check_marker(1, 3, 5)           # equal epochs pass (transaction version 0/1)
    m.check_marker(99, 0, 0)          # an unknown producer passes


def test_marker_without_open_transaction_completes_nothing():
    m = ProducerStateManager()
    assert marker(m, 1, 0, False, 5) == (None, None)
    assert m.last_entry(1).producer_epoch == 0 and m.first_unstable_offset is None


def test_fencing_abort_marker_with_bumped_epoch():
    """testProducerStateAfterFencingAbortMarker: the coordinator aborts with a bumped epoch;
    the producer's batches are forgotten and its old epoch is then refused."""
    m = ProducerStateManager()
    txn_append(m, 1, 0, 0, 0, n=2)
    completed, _ = marker(m, 1, 1, False, 2)
    assert completed == CompletedTxn(1, 0, 2, True)
    e = m.last_entry(1)
    assert e.producer_epoch == 1 and not e.batches and e.current_txn_first_offset is None
    with pytest.raises(InvalidProducerEpochError):
        m.check_and_prepare(1, 0, 2, 2, is_transactional=True)


def test_producers_with_an_open_transaction_do_not_expire():
    """testProducersWithOngoingTransactionsDontExpire."""
    m = ProducerStateManager()
    txn_append(m, 1, 0, 0, 0, ts=1000)
    m.update(2, 0, 0, 0, 1, 1, 1000)
    assert m.remove_expired(now_ms=10 ** 9, producer_id_expiration_ms=5000) == [2]
    marker(m, 1, 0, True, 2, ts=2000)
    assert m.remove_expired(now_ms=10 ** 9, producer_id_expiration_ms=5000) == [1]


def test_snapshot_restores_open_transactions_and_coordinator_epochs():
    """testRecoverFromSnapshotUnfinishedTransaction / ...FinishedTransaction, through the
    Kafka snapshot file format."""
    m = ProducerStateManager()
    txn_append(m, 1, 0, 0, 10, n=3, ts=7)
    txn_append(m, 2, 4, 0, 13, ts=8)
    marker(m, 2, 4, False, 14, coordinator_epoch=9)
    txn_append(m, 3, 0, 0, 15)
    back = decode_snapshot(encode_snapshot(m))
    assert back.ongoing_transactions() == [(1, 10), (3, 15)]
    assert back.first_unstable_offset == 10
    assert back.last_entry(2).coordinator_epoch == 9
    assert back.last_entry(1).current_txn_first_offset == 10
    completed, lso = marker(back, 1, 0, False, 16)
    assert completed == CompletedTxn(1, 10, 16, True) and lso == 15
    assert ProducerStateManager.from_snapshot(m.snapshot()).ongoing_transactions() == m.ongoing_transactions()


@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["data", "txn", "commit", "abort"])), max_size=60))
def test_property_first_unstable_offset_against_a_model(ops):
    """Against a brute-force model: the first unstable offset is the smallest first offset
    among producers whose last transactional batch came after their last marker."""
    m = ProducerStateManager()
    open_at: dict[int, int] = {}
    aborted = []
    for offset, (pid, op) in enumerate(ops):
        if op == "data":
            if pid in open_at:
                with pytest.raises(InvalidTxnStateError):
                    m.check_coordinator_batch(pid, 0, is_transactional=False)
                continue
            m.update(pid, 0, -1, -1, offset, offset, 0)
        elif op == "txn":
            m.update(pid, 0, -1, -1, offset, offset, 0, is_transactional=True)
            open_at.setdefault(pid, offset)
        else:
            completed = m.update_marker(pid, 0, 0, op == "commit", offset, 0)
            first = open_at.pop(pid, None)
            assert completed == (None if first is None else CompletedTxn(pid, first, offset, op == "abort"))
            if completed:
                lso = m.last_stable_offset(completed)
                assert lso == min(open_at.values(), default=offset + 1)
                m.complete_txn(completed)
                if completed.is_aborted:
                    aborted.append(completed)
        assert m.first_unstable_offset == min(open_at.values(), default=None)
        assert m.ongoing_transactions() == sorted(((p, o) for p, o in open_at.items()), key=lambda t: t[1])
