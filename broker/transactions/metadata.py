"""One transactional id's state: Kafka's TransactionMetadata and its state machine (pure).

States (Kafka's ids and names, as written to ``__transaction_state`` and shown by
DescribeTransactions)::

    Empty(0) --AddPartitions/AddOffsets--> Ongoing(1) --EndTxn commit--> PrepareCommit(2) --markers--> CompleteCommit(4)
      ^   \\                                  |   \\--EndTxn abort / timeout--> PrepareAbort(3) --markers--> CompleteAbort(5)
      |    \\--(TV2) EndTxn abort--------------+----> PrepareAbort           ^
      |                                      +--InitProducerId / timeout--> PrepareEpochFence(7) --+
      +--InitProducerId-- Empty, CompleteCommit, CompleteAbort; those three --expiration--> Dead(6)

``VALID_PREVIOUS`` is Kafka's ``validPreviousStates``. PrepareEpochFence is only ever a
*pending* state (never written, never completed): the fence turns into a PrepareAbort with
the bumped epoch. Dead is pending while an expired id's tombstone is written.

Every change is two-phase, as in Kafka: ``prepare_*`` checks the transition and returns a
``TxnTransitMetadata`` (the target values) while setting ``pending_state`` (which blocks
other transitions: callers answer CONCURRENT_TRANSACTIONS); once the record is in the log the
coordinator calls ``complete_transition``, or ``abort_transition`` when the write failed.

Transaction versions (KIP-890 part 2): TV0/TV1 keep the epoch through a transaction; TV2
(``supports_epoch_bump``) bumps it at every EndTxn and rotates to ``next_producer_id`` when
the epoch is exhausted. No clock or I/O here: times come in as arguments.
"""
from __future__ import annotations

from enum import Enum
from typing import NamedTuple, Optional

from protocol.errors import ErrorCode as E

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_EPOCH = 32767  # Short.MaxValue
TV_0, TV_1, TV_2 = 0, 1, 2

TP = tuple[str, int]


def supports_epoch_bump(tv: int) -> bool:
    return tv >= TV_2


def is_epoch_exhausted(epoch: int) -> bool:
    """Kafka keeps the last epoch (Short.MaxValue) for fencing: a producer never gets it."""
    return epoch >= MAX_EPOCH - 1


class TransactionState(Enum):
    EMPTY = (0, "Empty", True)
    ONGOING = (1, "Ongoing", False)
    PREPARE_COMMIT = (2, "PrepareCommit", False)
    PREPARE_ABORT = (3, "PrepareAbort", False)
    COMPLETE_COMMIT = (4, "CompleteCommit", True)
    COMPLETE_ABORT = (5, "CompleteAbort", True)
    DEAD = (6, "Dead", False)
    PREPARE_EPOCH_FENCE = (7, "PrepareEpochFence", False)

    def __init__(self, id_: int, state_name: str, expiration_allowed: bool):
        self.id = id_
        self.state_name = state_name
        self.expiration_allowed = expiration_allowed

    def __str__(self) -> str:
        return self.state_name

    @classmethod
    def from_id(cls, id_: int) -> "TransactionState":
        for s in cls:
            if s.id == id_:
                return s
        raise ValueError(f"unknown transaction state id {id_}")

    @classmethod
    def from_name(cls, name: str) -> Optional["TransactionState"]:
        for s in cls:
            if s.state_name == name:
                return s
        return None


S = TransactionState
VALID_PREVIOUS: dict[TransactionState, frozenset[TransactionState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}


class IllegalTransition(RuntimeError):
    """A transition Kafka's coordinator treats as a bug (IllegalStateException)."""


class TxnTransitMetadata(NamedTuple):
    """The target of a prepared transition: what gets written to ``__transaction_state``."""
    producer_id: int
    prev_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    txn_state: TransactionState
    topic_partitions: frozenset
    txn_start_timestamp: int
    txn_last_update_timestamp: int
    client_transaction_version: int


class TransactionMetadata:
    """Kafka's TransactionMetadata. ``previous_producer_id`` is the id of the last completed
    transaction's producer (TV2 rotation, KIP-360 retries); ``next_producer_id`` the id a TV2
    EndTxn rotates to once the markers are written."""

    def __init__(self, transactional_id: str, producer_id: int, *, previous_producer_id: int = NO_PRODUCER_ID,
                 next_producer_id: int = NO_PRODUCER_ID, producer_epoch: int = NO_PRODUCER_EPOCH,
                 last_producer_epoch: int = NO_PRODUCER_EPOCH, txn_timeout_ms: int = 60000,
                 state: TransactionState = S.EMPTY, topic_partitions=(), txn_start_timestamp: int = -1,
                 txn_last_update_timestamp: int = -1, client_transaction_version: int = TV_0):
        self.transactional_id = transactional_id
        self.producer_id = producer_id
        self.previous_producer_id = previous_producer_id
        self.next_producer_id = next_producer_id
        self.producer_epoch = producer_epoch
        self.last_producer_epoch = last_producer_epoch
        self.txn_timeout_ms = txn_timeout_ms
        self.state = state
        self.topic_partitions: set[TP] = set(topic_partitions)
        self.txn_start_timestamp = txn_start_timestamp
        self.txn_last_update_timestamp = txn_last_update_timestamp
        self.client_transaction_version = client_transaction_version
        self.pending_state: Optional[TransactionState] = None
        # a fence whose record could not be written keeps its bumped epoch for the next try
        # (never returned to a client), so a retried fence does not bump twice
        self.has_failed_epoch_fence = False

    def __repr__(self) -> str:
        return (f"TransactionMetadata({self.transactional_id!r}, pid={self.producer_id}, epoch={self.producer_epoch}, "
                f"state={self.state}, pending={self.pending_state}, partitions={sorted(self.topic_partitions)})")

    @property
    def pending_transition_in_progress(self) -> bool:
        return self.pending_state is not None

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    @property
    def has_pending_transaction(self) -> bool:
        return self.state in (S.ONGOING, S.PREPARE_ABORT, S.PREPARE_COMMIT)

    def remove_partition(self, tp: TP) -> None:
        """A partition that got its marker (or no longer exists) leaves the preparing transaction."""
        if self.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            raise IllegalTransition(f"removing a partition of {self.transactional_id} in state {self.state}")
        self.topic_partitions.discard(tp)

    # ---- prepare ---------------------------------------------------------------------------------
    def prepare_no_transit(self) -> TxnTransitMetadata:
        return self._transit(self.state, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.txn_timeout_ms, self.topic_partitions, self.txn_start_timestamp,
                             self.txn_last_update_timestamp, self.client_transaction_version)

    def prepare_fence_producer_epoch(self) -> TxnTransitMetadata:
        if self.producer_epoch == MAX_EPOCH:
            raise IllegalTransition("cannot fence a producer whose epoch is Short.MaxValue")
        bumped = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        return self._prepare(S.PREPARE_EPOCH_FENCE, self.producer_id, bumped, NO_PRODUCER_EPOCH, self.txn_timeout_ms,
                             self.topic_partitions, self.txn_start_timestamp, self.txn_last_update_timestamp,
                             self.client_transaction_version)

    def prepare_increment_producer_epoch(self, new_timeout_ms: int, expected_epoch: Optional[int],
                                         now_ms: int) -> tuple[int, Optional[TxnTransitMetadata]]:
        """InitProducerId on a known id: (error, transit). ``expected_epoch`` is the KIP-360
        epoch the producer passed (None for a new incarnation)."""
        if self.is_producer_epoch_exhausted:
            raise IllegalTransition(f"no more epochs for producer id {self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            # a new incarnation: bump, and forget the last epoch so an older one cannot retry
            epoch, last = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epoch, last = bumped, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            # a retry of a bump whose answer was lost: the same epoch again
            epoch, last = self.producer_epoch, self.last_producer_epoch
        else:
            return E.PRODUCER_FENCED, None
        return 0, self._prepare(S.EMPTY, self.producer_id, epoch, last, new_timeout_ms, (), -1, now_ms,
                                self.client_transaction_version)

    def prepare_producer_id_rotation(self, new_producer_id: int, new_timeout_ms: int, now_ms: int,
                                     record_last_epoch: bool) -> TxnTransitMetadata:
        if self.has_pending_transaction:
            raise IllegalTransition("cannot rotate producer ids while a transaction is pending")
        return self._prepare(S.EMPTY, new_producer_id, 0, self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
                             new_timeout_ms, (), -1, now_ms, self.client_transaction_version)

    def prepare_add_partitions(self, partitions, now_ms: int, client_tv: int) -> TxnTransitMetadata:
        start = now_ms if self.state in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT) else self.txn_start_timestamp
        return self._prepare(S.ONGOING, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.txn_timeout_ms, self.topic_partitions | set(partitions), start, now_ms, client_tv)

    def prepare_abort_or_commit(self, new_state: TransactionState, client_tv: int, next_producer_id: int,
                                now_ms: int, no_partition_added: bool) -> TxnTransitMetadata:
        if supports_epoch_bump(client_tv):
            epoch, last = self.producer_epoch + 1, self.producer_epoch
        else:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        # TV2 may abort with no partition added: the transaction "starts" now
        start = now_ms if no_partition_added else self.txn_start_timestamp
        return self._prepare(new_state, self.producer_id, epoch, last, self.txn_timeout_ms, self.topic_partitions,
                             start, now_ms, client_tv, next_producer_id=next_producer_id)

    def prepare_complete(self, now_ms: int) -> TxnTransitMetadata:
        new_state = S.COMPLETE_COMMIT if self.state is S.PREPARE_COMMIT else S.COMPLETE_ABORT
        self.has_failed_epoch_fence = False  # the Prepare* record with the bumped epoch is in the log
        if supports_epoch_bump(self.client_transaction_version) and self.next_producer_id != NO_PRODUCER_ID:
            # TV2 epoch overflow: the next transaction uses the new id from epoch 0; the last
            # epoch stays the one the client last saw
            pid, epoch = self.next_producer_id, 0
        else:
            pid, epoch = self.producer_id, self.producer_epoch
        return self._prepare(new_state, pid, epoch, self.last_producer_epoch, self.txn_timeout_ms, (),
                             self.txn_start_timestamp, now_ms, self.client_transaction_version)

    def prepare_dead(self) -> TxnTransitMetadata:
        return self._prepare(S.DEAD, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.txn_timeout_ms, (), self.txn_start_timestamp, self.txn_last_update_timestamp,
                             self.client_transaction_version)

    def _transit(self, state, pid, epoch, last_epoch, timeout, partitions, start, updated, tv,
                 next_producer_id=NO_PRODUCER_ID) -> TxnTransitMetadata:
        return TxnTransitMetadata(pid, self.producer_id, next_producer_id, epoch, last_epoch, timeout, state,
                                  frozenset(partitions), start, updated, tv)

    def _prepare(self, state, pid, epoch, last_epoch, timeout, partitions, start, updated, tv,
                 *, next_producer_id=NO_PRODUCER_ID) -> TxnTransitMetadata:
        if self.pending_state is not None:
            raise IllegalTransition(f"{self.transactional_id}: preparing {state} while {self.pending_state} is pending")
        if pid < 0:
            raise IllegalTransition(f"illegal new producer id {pid}")
        if state is not S.DEAD and epoch < 0:
            raise IllegalTransition(f"illegal new producer epoch {epoch}")
        if self.state not in VALID_PREVIOUS[state]:
            raise IllegalTransition(f"{self.transactional_id}: {state} cannot follow {self.state}")
        self.pending_state = state
        return self._transit(state, pid, epoch, last_epoch, timeout, partitions, start, updated, tv,
                             next_producer_id=next_producer_id)

    # ---- complete --------------------------------------------------------------------------------
    def abort_transition(self) -> None:
        """The record of the pending transition was not written: nothing changes."""
        self.pending_state = None

    def complete_transition(self, t: TxnTransitMetadata) -> None:
        """Apply a prepared transition once its record is in the log (Kafka's
        completeTransitionTo, with the same consistency checks)."""
        to = self.pending_state
        if to is None or to is not t.txn_state:
            self._fail(t)
        tv2 = supports_epoch_bump(t.client_transaction_version)
        if to is S.EMPTY:  # InitProducerId
            bump_ok = t.producer_epoch == self.producer_epoch + 1 or (t.producer_epoch == 0 and t.producer_id != self.producer_id)
            if (self.producer_epoch != t.producer_epoch and not bump_ok) or t.topic_partitions or t.txn_start_timestamp != -1:
                self._fail(t)
            self.txn_timeout_ms = t.txn_timeout_ms
            self.producer_epoch = t.producer_epoch
            self.last_producer_epoch = t.last_producer_epoch
            self.producer_id = t.producer_id
            self.previous_producer_id = t.prev_producer_id
            # Kafka 4.4 takes every field of the transit: no transaction has started (-1)
            self.txn_start_timestamp = t.txn_start_timestamp
        elif to is S.ONGOING:  # AddPartitionsToTxn / AddOffsetsToTxn
            if not self._valid_epoch(t) or not self.topic_partitions <= t.topic_partitions or \
                    self.txn_timeout_ms != t.txn_timeout_ms:
                self._fail(t)
            self.txn_start_timestamp = t.txn_start_timestamp
            self.topic_partitions |= t.topic_partitions
        elif to in (S.PREPARE_ABORT, S.PREPARE_COMMIT):  # EndTxn
            empty_abort = (to is S.PREPARE_ABORT and tv2
                           and self.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT))
            if not self._valid_epoch(t) or set(self.topic_partitions) != set(t.topic_partitions) or \
                    self.txn_timeout_ms != t.txn_timeout_ms or \
                    not (self.txn_start_timestamp == t.txn_start_timestamp or empty_abort):
                self._fail(t)
            if tv2:
                self.producer_epoch = t.producer_epoch
                self.last_producer_epoch = t.last_producer_epoch
                self.next_producer_id = t.next_producer_id
                self.txn_start_timestamp = t.txn_start_timestamp
        elif to in (S.COMPLETE_ABORT, S.COMPLETE_COMMIT):  # markers written
            if not self._valid_epoch(t) or self.txn_timeout_ms != t.txn_timeout_ms or t.txn_start_timestamp == -1:
                self._fail(t)
            self.txn_start_timestamp = t.txn_start_timestamp
            self.topic_partitions.clear()
            if tv2:
                self.producer_epoch = t.producer_epoch
                self.last_producer_epoch = t.last_producer_epoch
                self.previous_producer_id = t.prev_producer_id
                self.producer_id = t.producer_id
                self.next_producer_id = t.next_producer_id
        else:  # PrepareEpochFence and Dead are never completed (the fence becomes PrepareAbort; Dead is removed)
            self._fail(t)
        self.client_transaction_version = t.client_transaction_version
        self.txn_last_update_timestamp = t.txn_last_update_timestamp
        self.pending_state = None
        self.state = to

    def _valid_epoch(self, t: TxnTransitMetadata) -> bool:
        tv2 = supports_epoch_bump(t.client_transaction_version)
        if tv2 and t.txn_state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT) and t.producer_epoch == 0:
            return t.last_producer_epoch == self.last_producer_epoch and t.prev_producer_id == self.producer_id
        if tv2 and t.txn_state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return t.last_producer_epoch == self.producer_epoch and t.producer_id == self.producer_id
        return t.producer_epoch == self.producer_epoch and t.producer_id == self.producer_id

    def _fail(self, t: TxnTransitMetadata):
        raise IllegalTransition(f"{self!r} cannot complete the transition to {t}")

    @classmethod
    def from_transit(cls, transactional_id: str, t: TxnTransitMetadata) -> "TransactionMetadata":
        """The metadata a replayed ``__transaction_state`` record stands for (the last epoch is
        not persisted: Kafka loads it as -1)."""
        return cls(transactional_id, t.producer_id, previous_producer_id=t.prev_producer_id,
                   next_producer_id=t.next_producer_id, producer_epoch=t.producer_epoch,
                   last_producer_epoch=NO_PRODUCER_EPOCH, txn_timeout_ms=t.txn_timeout_ms, state=t.txn_state,
                   topic_partitions=t.topic_partitions, txn_start_timestamp=t.txn_start_timestamp,
                   txn_last_update_timestamp=t.txn_last_update_timestamp,
                   client_transaction_version=t.client_transaction_version)
