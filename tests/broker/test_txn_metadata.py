"""The transaction state machine (broker.transactions.metadata), pure: no log, no loop.

Every (from, to) pair of Kafka's eight states is tried against ``VALID_PREVIOUS`` (Kafka's
``validPreviousStates``), then each ``prepare_*`` is driven through ``complete_transition``
as the coordinator does, with the cases of Kafka's TransactionMetadataTest: epoch bumps and
their KIP-360 retries, exhaustion and producer id rotation, fencing (once, and again after a
fence whose write failed), transaction version 2 epoch bumps and overflow, and transitions the
coordinator must never complete.
"""
from __future__ import annotations

import itertools

import pytest

from broker.transactions.log import key_bytes, read_key, read_value, value_bytes
from broker.transactions.metadata import (
    MAX_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TV_0, TV_2, VALID_PREVIOUS, IllegalTransition,
    TransactionMetadata, TransactionState, TxnTransitMetadata, is_epoch_exhausted,
)
from protocol.errors import ErrorCode as E

S = TransactionState
NOW = 1_700_000_000_000
TP0, TP1 = ("t", 0), ("t", 1)

# Kafka's TransactionState ids and names (what __transaction_state stores, what clients show)
KAFKA_STATES = {0: "Empty", 1: "Ongoing", 2: "PrepareCommit", 3: "PrepareAbort", 4: "CompleteCommit",
                5: "CompleteAbort", 6: "Dead", 7: "PrepareEpochFence"}


def meta(state=S.EMPTY, epoch=0, partitions=(), start=-1, **kw) -> TransactionMetadata:
    return TransactionMetadata("tx", 1000, producer_epoch=epoch, txn_timeout_ms=60000, state=state,
                               topic_partitions=partitions, txn_start_timestamp=start,
                               txn_last_update_timestamp=NOW - 1000, **kw)


def test_state_ids_names_and_expiration_are_kafkas():
    assert {s.id: s.state_name for s in S} == KAFKA_STATES
    assert {s for s in S if s.expiration_allowed} == {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}
    for s in S:
        assert S.from_id(s.id) is s and S.from_name(s.state_name) is s
    assert S.from_name("ongoing") is None
    with pytest.raises(ValueError):
        S.from_id(8)


@pytest.mark.parametrize("src,dst", list(itertools.product(S, S)), ids=lambda s: s.state_name)
def test_every_transition_is_legal_exactly_when_kafka_allows_it(src, dst):
    m = meta(state=src, epoch=3, partitions=[TP0] if src in (S.ONGOING, S.PREPARE_COMMIT, S.PREPARE_ABORT) else ())
    if src in VALID_PREVIOUS[dst]:
        t = m._prepare(dst, m.producer_id, m.producer_epoch, -1, m.txn_timeout_ms, m.topic_partitions, NOW, NOW, TV_0)
        assert m.pending_state is dst and t.txn_state is dst
    else:
        with pytest.raises(IllegalTransition):
            m._prepare(dst, m.producer_id, m.producer_epoch, -1, m.txn_timeout_ms, m.topic_partitions, NOW, NOW, TV_0)
        assert m.pending_state is None


def test_kafka_valid_previous_states():
    assert VALID_PREVIOUS == {
        S.EMPTY: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
        S.ONGOING: {S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
        S.PREPARE_COMMIT: {S.ONGOING},
        S.PREPARE_ABORT: {S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
        S.COMPLETE_COMMIT: {S.PREPARE_COMMIT},
        S.COMPLETE_ABORT: {S.PREPARE_ABORT},
        S.DEAD: {S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT},
        S.PREPARE_EPOCH_FENCE: {S.ONGOING},
    }


def test_a_pending_transition_blocks_the_next():
    m = meta()
    m.prepare_add_partitions({TP0}, NOW, TV_0)
    assert m.pending_transition_in_progress
    with pytest.raises(IllegalTransition):
        m.prepare_add_partitions({TP1}, NOW, TV_0)
    m.abort_transition()
    assert not m.pending_transition_in_progress and m.state is S.EMPTY and m.topic_partitions == set()


def test_full_commit_cycle_tv0():
    m = meta(epoch=NO_PRODUCER_EPOCH)
    err, t = m.prepare_increment_producer_epoch(30000, None, NOW)
    assert err == 0 and (t.producer_epoch, t.last_producer_epoch, t.txn_state) == (0, -1, S.EMPTY)
    m.complete_transition(t)
    assert (m.producer_epoch, m.txn_timeout_ms, m.state) == (0, 30000, S.EMPTY)

    m.complete_transition(m.prepare_add_partitions({TP0}, NOW + 1, TV_0))
    assert m.state is S.ONGOING and m.txn_start_timestamp == NOW + 1
    m.complete_transition(m.prepare_add_partitions({TP1}, NOW + 2, TV_0))
    assert m.topic_partitions == {TP0, TP1} and m.txn_start_timestamp == NOW + 1  # start kept while Ongoing

    t = m.prepare_abort_or_commit(S.PREPARE_COMMIT, TV_0, NO_PRODUCER_ID, NOW + 3, False)
    assert t.producer_epoch == 0 and t.topic_partitions == {TP0, TP1}
    m.complete_transition(t)
    assert m.state is S.PREPARE_COMMIT and m.producer_epoch == 0
    t = m.prepare_complete(NOW + 4)
    m.remove_partition(TP0)
    m.remove_partition(TP1)
    m.complete_transition(t)
    assert (m.state, m.topic_partitions, m.producer_epoch, m.txn_last_update_timestamp) == (
        S.COMPLETE_COMMIT, set(), 0, NOW + 4)
    # the next transaction starts from a completed one
    m.complete_transition(m.prepare_add_partitions({TP1}, NOW + 5, TV_0))
    assert m.state is S.ONGOING and m.txn_start_timestamp == NOW + 5


def test_increment_epoch_kip360_cases():
    """Kafka's prepareIncrementProducerEpoch: no expected epoch bumps and forgets the last one;
    the current epoch bumps and remembers it; the last epoch (a lost answer) returns the same
    epoch again; anything else is PRODUCER_FENCED."""
    m = meta(epoch=5, last_producer_epoch=4)
    err, t = m.prepare_increment_producer_epoch(60000, None, NOW)
    assert err == 0 and (t.producer_epoch, t.last_producer_epoch) == (6, NO_PRODUCER_EPOCH)
    m.abort_transition()
    err, t = m.prepare_increment_producer_epoch(60000, 5, NOW)
    assert err == 0 and (t.producer_epoch, t.last_producer_epoch) == (6, 5)
    m.complete_transition(t)
    err, t = m.prepare_increment_producer_epoch(60000, 5, NOW)  # retry of the same bump
    assert err == 0 and (t.producer_epoch, t.last_producer_epoch) == (6, 5)
    m.complete_transition(t)
    assert m.prepare_increment_producer_epoch(60000, 3, NOW) == (E.PRODUCER_FENCED, None)
    assert m.pending_state is None


def test_epoch_exhaustion_needs_a_new_producer_id():
    assert not is_epoch_exhausted(MAX_EPOCH - 2) and is_epoch_exhausted(MAX_EPOCH - 1)
    m = meta(epoch=MAX_EPOCH - 1)
    assert m.is_producer_epoch_exhausted
    with pytest.raises(IllegalTransition):
        m.prepare_increment_producer_epoch(60000, None, NOW)
    t = m.prepare_producer_id_rotation(2000, 60000, NOW, record_last_epoch=True)
    assert (t.producer_id, t.producer_epoch, t.last_producer_epoch, t.prev_producer_id) == (2000, 0, MAX_EPOCH - 1, 1000)
    m.complete_transition(t)
    assert (m.producer_id, m.producer_epoch, m.previous_producer_id) == (2000, 0, 1000)


def test_rotation_refused_with_a_transaction_pending():
    with pytest.raises(IllegalTransition):
        meta(state=S.ONGOING, epoch=MAX_EPOCH - 1, partitions=[TP0], start=NOW).prepare_producer_id_rotation(
            2000, 60000, NOW, False)


def test_fence_bumps_once_and_turns_into_prepare_abort():
    m = meta(state=S.ONGOING, epoch=7, partitions=[TP0], start=NOW)
    t = m.prepare_fence_producer_epoch()
    assert t.txn_state is S.PREPARE_EPOCH_FENCE and t.producer_epoch == 8 and m.producer_epoch == 7
    with pytest.raises(IllegalTransition):  # a fence is never completed as such
        m.complete_transition(t)
    # the coordinator turns it into the abort with the bumped epoch (endTransaction)
    m.pending_state = None
    m.producer_epoch = 8
    t = m.prepare_abort_or_commit(S.PREPARE_ABORT, TV_0, NO_PRODUCER_ID, NOW + 1, False)
    m.complete_transition(t)
    assert (m.state, m.producer_epoch) == (S.PREPARE_ABORT, 8)


def test_a_failed_fence_does_not_bump_again():
    m = meta(state=S.ONGOING, epoch=8, partitions=[TP0], start=NOW)
    m.has_failed_epoch_fence = True
    assert m.prepare_fence_producer_epoch().producer_epoch == 8
    m.abort_transition()
    m.pending_state = None
    m.producer_epoch = 8
    m.complete_transition(m.prepare_abort_or_commit(S.PREPARE_ABORT, TV_0, NO_PRODUCER_ID, NOW, False))
    m.prepare_complete(NOW)
    assert not m.has_failed_epoch_fence  # the Prepare record with that epoch is in the log now


def test_fence_at_short_max_value_is_a_bug():
    with pytest.raises(IllegalTransition):
        meta(state=S.ONGOING, epoch=MAX_EPOCH, partitions=[TP0], start=NOW).prepare_fence_producer_epoch()


def test_tv2_bumps_the_epoch_at_end_and_rotates_on_overflow():
    m = meta(state=S.ONGOING, epoch=10, partitions=[TP0], start=NOW)
    t = m.prepare_abort_or_commit(S.PREPARE_COMMIT, TV_2, NO_PRODUCER_ID, NOW + 1, False)
    assert (t.producer_epoch, t.last_producer_epoch) == (11, 10)
    m.complete_transition(t)
    assert (m.producer_epoch, m.last_producer_epoch) == (11, 10)
    m.remove_partition(TP0)
    m.complete_transition(m.prepare_complete(NOW + 2))
    assert (m.state, m.producer_id, m.producer_epoch) == (S.COMPLETE_COMMIT, 1000, 11)

    m = meta(state=S.ONGOING, epoch=MAX_EPOCH - 1, partitions=[TP0], start=NOW)
    t = m.prepare_abort_or_commit(S.PREPARE_ABORT, TV_2, 2000, NOW + 1, False)
    m.complete_transition(t)
    assert (m.producer_epoch, m.next_producer_id) == (MAX_EPOCH, 2000)
    t = m.prepare_complete(NOW + 2)
    assert (t.producer_id, t.producer_epoch, t.last_producer_epoch, t.prev_producer_id) == (2000, 0, MAX_EPOCH - 1, 1000)
    m.remove_partition(TP0)
    m.complete_transition(t)
    assert (m.producer_id, m.producer_epoch, m.previous_producer_id, m.state) == (2000, 0, 1000, S.COMPLETE_ABORT)


def test_tv2_abort_without_a_transaction():
    m = meta(state=S.COMPLETE_COMMIT, epoch=4, start=NOW - 5)
    t = m.prepare_abort_or_commit(S.PREPARE_ABORT, TV_2, NO_PRODUCER_ID, NOW, True)
    assert t.txn_start_timestamp == NOW
    m.complete_transition(t)
    assert (m.state, m.producer_epoch, m.txn_start_timestamp) == (S.PREPARE_ABORT, 5, NOW)


def test_completion_checks_reject_inconsistent_transitions():
    m = meta(state=S.ONGOING, epoch=3, partitions=[TP0], start=NOW)
    t = m.prepare_abort_or_commit(S.PREPARE_COMMIT, TV_0, NO_PRODUCER_ID, NOW, False)
    with pytest.raises(IllegalTransition):  # another epoch than the metadata's
        m.complete_transition(t._replace(producer_epoch=4))
    with pytest.raises(IllegalTransition):  # not the pending state
        m.complete_transition(t._replace(txn_state=S.PREPARE_ABORT))
    with pytest.raises(IllegalTransition):  # partitions changed under the prepare
        m.complete_transition(t._replace(topic_partitions=frozenset({TP1})))
    m.complete_transition(t)
    # Dead is never completed: the expired id is removed instead
    m = meta(state=S.COMPLETE_ABORT, epoch=3, start=NOW)
    with pytest.raises(IllegalTransition):
        m.complete_transition(m.prepare_dead())


def test_remove_partition_only_while_preparing():
    with pytest.raises(IllegalTransition):
        meta(state=S.ONGOING, partitions=[TP0], start=NOW).remove_partition(TP0)


def test_log_records_round_trip_kafka_layout():
    """TransactionLogKey v0 and TransactionLogValue v0 (v1 for TV2), field by field."""
    assert key_bytes("tx") == b"\x00\x00" + b"\x00\x02tx"
    assert read_key(key_bytes("tx")) == "tx"
    t = TxnTransitMetadata(1000, -1, -1, 3, -1, 60000, S.ONGOING, frozenset({("b", 2), ("a", 1), ("a", 0)}),
                           NOW, NOW + 5, TV_0)
    raw = value_bytes(t)
    assert raw == (b"\x00\x00" + (1000).to_bytes(8, "big") + (3).to_bytes(2, "big") + (60000).to_bytes(4, "big")
                   + b"\x01" + (2).to_bytes(4, "big")
                   + b"\x00\x01a" + (2).to_bytes(4, "big") + (0).to_bytes(4, "big") + (1).to_bytes(4, "big")
                   + b"\x00\x01b" + (1).to_bytes(4, "big") + (2).to_bytes(4, "big")
                   + (NOW + 5).to_bytes(8, "big") + NOW.to_bytes(8, "big"))
    m = read_value("tx", raw)
    assert (m.producer_id, m.producer_epoch, m.state, m.topic_partitions, m.txn_start_timestamp,
            m.txn_last_update_timestamp, m.last_producer_epoch) == (1000, 3, S.ONGOING, {("a", 0), ("a", 1), ("b", 2)},
                                                                      NOW, NOW + 5, NO_PRODUCER_EPOCH)
    empty = value_bytes(t._replace(txn_state=S.EMPTY, topic_partitions=frozenset(), txn_start_timestamp=-1))
    assert empty[2 + 8 + 2 + 4 + 1:][:4] == b"\xff\xff\xff\xff"  # null partitions when Empty
    tv2 = value_bytes(t._replace(client_transaction_version=TV_2, next_producer_id=2000, prev_producer_id=999))
    assert tv2[:2] == b"\x00\x01"
    m = read_value("tx", tv2)
    assert (m.next_producer_id, m.previous_producer_id, m.client_transaction_version) == (2000, 999, TV_2)
