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
