"""Idempotent and transactional producer state per partition (Kafka ``ProducerStateManager``
/ ``ProducerAppendInfo`` / ``ProducerStateEntry``).

For each producer id the manager keeps the current epoch, the metadata of its last
:data:`NUM_BATCHES_TO_RETAIN` (5) batches (first/last sequence, first/last offset, max
timestamp) and the timestamp of its last batch. Rules for a client batch (Kafka 2.5+):

* epoch lower than the last seen -> :class:`InvalidProducerEpochError`;
* same epoch and the batch's sequence range equals one of the retained batches ->
  duplicate: the original :class:`BatchMetadata` is returned and nothing is appended;
* new (higher) epoch -> the first sequence must be 0, unless the producer had no known
  epoch; an **unknown producer** (no state, e.g. after retention removed its batches) is
  accepted at any sequence;
* same epoch -> the first sequence must follow the last one: ``first == last + 1``, with
  wrap-around from Int.MAX to 0, else :class:`OutOfOrderSequenceError`.

Transactions. Each producer has ``coordinator_epoch`` (of the last marker written for it)
and ``current_txn_first_offset`` (None when no transaction is open here). Its first
transactional data batch opens a transaction at that batch's base offset; the open ones are
kept ordered by first offset, and the first of them is the partition's *first unstable
offset*. A non-transactional batch while a transaction is open is refused
(:class:`InvalidTxnStateError`). A COMMIT/ABORT marker (control batch) is checked as Kafka's
``appendEndTxnMarker`` does for the coordinator origin: epoch lower than the producer's ->
:class:`InvalidProducerEpochError` (transaction version 0/1: an equal epoch is accepted),
coordinator epoch lower than the last one -> :class:`TransactionCoordinatorFencedError`.
It then sets the producer's epoch (a new one drops the retained batches), coordinator epoch
and last timestamp, clears its open transaction and, if one was open, yields a
:class:`CompletedTxn`; the log asks :meth:`last_stable_offset` for the LSO to put in the
``.txnindex`` entry of an aborted one before calling :meth:`complete_txn`. A marker for a
producer with no open transaction completes nothing (Kafka writes it all the same).

Kafka also keeps completed transactions whose marker is above the high watermark
("unreplicated") as unstable; on one node the high watermark is the log end offset once an
append returns, so that set is always empty here and the first unstable offset is the first
open transaction's first offset.

State is rebuilt on recovery by replaying batch headers through :meth:`update` and
:meth:`update_marker` (which never validate, like Kafka's replication/recovery origin).
Producers expire when ``now - last_timestamp >= producer.id.expiration.ms`` (record time, as
Kafka), except those with an open transaction (Kafka's ``isProducerExpired``).
"""
from __future__ import annotations

from bisect import bisect_left
from collections import deque
from dataclasses import field
from typing import Iterable, NamedTuple

from protocol.deferred import dataclass
from protocol.errors import CorruptRecordError
from protocol.records.batch import CONTROL_FLAG, TRANSACTIONAL_FLAG
from protocol.records.record import (
    CONTROL_ABORT, CONTROL_COMMIT, control_record_type, decode_batch, parse_end_txn_marker,
)
from storage.errors import (
    InvalidProducerEpochError, InvalidTxnStateError, OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)

INT_MAX = 2**31 - 1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NUM_BATCHES_TO_RETAIN = 5
NO_COORDINATOR_EPOCH = -1


class CompletedTxn(NamedTuple):
    """A transaction a marker completed (Kafka's ``CompletedTxn``); ``last_offset`` is the
    marker's offset."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


@dataclass(frozen=True)
class BatchMetadata:
    """Where an idempotent batch landed: offsets, max timestamp and sequence range."""

    first_offset: int
    last_offset: int
    timestamp: int
    first_seq: int
    last_seq: int


@dataclass
class ProducerStateEntry:
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    batches: deque = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))
    last_timestamp: int = -1
    coordinator_epoch: int = NO_COORDINATOR_EPOCH
    current_txn_first_offset: int | None = None

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def maybe_update_epoch(self, producer_epoch: int) -> None:
        """A new epoch forgets the batches of the old one (Kafka ``maybeUpdateProducerEpoch``)."""
        if producer_epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = producer_epoch

    def find_duplicate(self, producer_epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if producer_epoch != self.producer_epoch:
            return None
        for b in self.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return b
        return None


def sequence_in_order(last_seq: int, next_seq: int) -> bool:
    """``next_seq`` continues ``last_seq`` (wrapping from Int.MAX to 0)."""
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT_MAX)


def last_sequence(base_sequence: int, last_offset_delta: int) -> int:
    """A batch's last sequence, wrapping past Int.MAX (Kafka ``DefaultRecordBatch``)."""
    if base_sequence == NO_SEQUENCE:
        return NO_SEQUENCE
    s = base_sequence + last_offset_delta
    return s - INT_MAX - 1 if s > INT_MAX else s


class ProducerStateManager:
    """Per-partition producer id -> :class:`ProducerStateEntry`."""

    def __init__(self) -> None:
        self._producers: dict[int, ProducerStateEntry] = {}
        # open transactions: first offset -> producer id, and the first offsets in order
        self._ongoing: dict[int, int] = {}
        self._ongoing_offsets: list[int] = []
        # Bumped by every change: a snapshot file taken at version v still describes the
        # state while the version is v (the log then need not write it again at close).
        self.version = 0

    # ---- queries ----
    def __len__(self) -> int:
        return len(self._producers)

    def __contains__(self, producer_id: int) -> bool:
        return producer_id in self._producers

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self._producers.get(producer_id)

    def producer_ids(self) -> list[int]:
        return list(self._producers)

    def entries(self) -> list[ProducerStateEntry]:
        return list(self._producers.values())

    @property
    def first_unstable_offset(self) -> int | None:
        """First offset of the earliest open transaction (None when none is open)."""
        return self._ongoing_offsets[0] if self._ongoing_offsets else None

    def ongoing_transactions(self) -> list[tuple[int, int]]:
        """``(producer id, first offset)`` of each open transaction, by first offset."""
        return [(self._ongoing[o], o) for o in self._ongoing_offsets]

    def has_ongoing_transaction(self, producer_id: int, producer_epoch: int) -> bool:
        """Kafka ``hasOngoingTransaction``: an open transaction here, under that epoch."""
        e = self._producers.get(producer_id)
        return e is not None and e.current_txn_first_offset is not None and e.producer_epoch == producer_epoch

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        """The LSO once ``completed`` is done (Kafka ``lastStableOffset(CompletedTxn)``): the
        first offset of the earliest open transaction of another producer, else the offset
        after the marker."""
        for o in self._ongoing_offsets:
            if self._ongoing[o] != completed.producer_id:
                return o
        return completed.last_offset + 1

    # ---- client append path ----
    def check_and_prepare(self, producer_id: int, producer_epoch: int, first_seq: int,
                          last_seq: int, is_transactional: bool = False) -> BatchMetadata | None:
        """Validate a client batch; return the original metadata of a duplicate, or None
        when the batch is new and may be appended (then call :meth:`update`).

        Raises :class:`InvalidProducerEpochError` (older epoch),
        :class:`OutOfOrderSequenceError` (sequence gap / new epoch not at 0) or
        :class:`InvalidTxnStateError` (non-transactional batch in an open transaction).
        """
        entry = self._producers.get(producer_id)
        if entry is None:
            return None     # unknown producer: any sequence accepted (Kafka 2.5+)
        dup = entry.find_duplicate(producer_epoch, first_seq, last_seq)
        if dup is not None:
            return dup
        check_epoch(entry, producer_id, producer_epoch)
        if producer_epoch != entry.producer_epoch:
            if first_seq != 0 and entry.producer_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(
                    f"Invalid sequence number for new epoch of producer {producer_id}: "
                    f"{producer_epoch} (request epoch), {first_seq} (seq. number), "
                    f"{entry.producer_epoch} (current producer epoch)")
        else:
            current_last = entry.last_seq
            if entry.producer_epoch != NO_PRODUCER_EPOCH and not sequence_in_order(current_last, first_seq):
                raise OutOfOrderSequenceError(
                    f"Out of order sequence number for producer {producer_id}: {first_seq} "
                    f"(incoming seq. number), {current_last} (current end sequence number)")
        check_txn_state(entry, producer_id, is_transactional)
        return None

    def check_coordinator_batch(self, producer_id: int, producer_epoch: int, is_transactional: bool) -> None:
        """Validate a data batch the broker itself writes with a producer id (Kafka's
        COORDINATOR origin, e.g. transactional offset commits): epoch and transaction state
        only, no sequence check."""
        entry = self._producers.get(producer_id)
        if entry is None:
            return
        check_epoch(entry, producer_id, producer_epoch)
        check_txn_state(entry, producer_id, is_transactional)

    def check_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                     transaction_version: int = 0) -> None:
        """Kafka ``appendEndTxnMarker``'s checks for a marker from the coordinator:
        :class:`InvalidProducerEpochError` for an older producer epoch (from transaction version
        2, KIP-1228, also for the same epoch: a TV2 transaction ends with an epoch bump, so its
        marker always carries a newer epoch than the transaction's data),
        :class:`TransactionCoordinatorFencedError` for an older coordinator epoch."""
        entry = self._producers.get(producer_id)
        if entry is None:
            return
        check_epoch(entry, producer_id, producer_epoch)
        if transaction_version >= 2 and producer_epoch <= entry.producer_epoch:
            raise InvalidProducerEpochError(
                f"Epoch of producer {producer_id} in a transaction version {transaction_version} marker is "
                f"{producer_epoch}, which is not greater than the last seen epoch {entry.producer_epoch}")
        if entry.coordinator_epoch > coordinator_epoch:
            raise TransactionCoordinatorFencedError(
                f"Invalid coordinator epoch for producerId {producer_id}: {coordinator_epoch} (zombie), "
                f"{entry.coordinator_epoch} (current)")

    def _entry(self, producer_id: int) -> ProducerStateEntry:
        entry = self._producers.get(producer_id)
        if entry is None:
            entry = self._producers[producer_id] = ProducerStateEntry(producer_id)
        return entry

    def update(self, producer_id: int, producer_epoch: int, first_seq: int, last_seq: int,
               first_offset: int, last_offset: int, timestamp: int, is_transactional: bool = False) -> None:
        """Record an appended data batch (client path after :meth:`check_and_prepare`, or
        recovery replay). A new epoch drops the retained batches of the old one; the first
        transactional batch of a producer opens its transaction at ``first_offset``."""
        self.version += 1
        entry = self._entry(producer_id)
        entry.maybe_update_epoch(producer_epoch)
        if first_seq != NO_SEQUENCE:
            entry.batches.append(BatchMetadata(first_offset, last_offset, timestamp, first_seq, last_seq))
        entry.last_timestamp = timestamp
        if is_transactional and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = first_offset
            self._add_ongoing(first_offset, producer_id)

    def update_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                      offset: int, timestamp: int) -> CompletedTxn | None:
        """Record an appended COMMIT/ABORT marker at ``offset`` (after :meth:`check_marker`,
        or replay); returns the transaction it completes, if one was open. The transaction
        stays among the open ones until :meth:`complete_txn` (the LSO of its index entry is
        computed in between, as Kafka does)."""
        self.version += 1
        entry = self._entry(producer_id)
        first = entry.current_txn_first_offset
        completed = None if first is None else CompletedTxn(producer_id, first, offset, not commit)
        entry.maybe_update_epoch(producer_epoch)
        entry.coordinator_epoch = coordinator_epoch
        entry.current_txn_first_offset = None
        entry.last_timestamp = timestamp
        return completed

    def touch(self, producer_id: int) -> None:
        """A control batch without records (the cleaner emptied it): no change, but Kafka
        registers an unknown producer with an empty entry all the same."""
        if producer_id not in self._producers:
            self.version += 1
            self._producers[producer_id] = ProducerStateEntry(producer_id)

    def complete_txn(self, completed: CompletedTxn) -> None:
        """The transaction is decided: it no longer holds the first unstable offset back."""
        if self._ongoing.get(completed.first_offset) == completed.producer_id:
            self.version += 1
            del self._ongoing[completed.first_offset]
            offs = self._ongoing_offsets
            del offs[bisect_left(offs, completed.first_offset)]

    def _add_ongoing(self, first_offset: int, producer_id: int) -> None:
        offs = self._ongoing_offsets
        if first_offset in self._ongoing:
            offs.remove(first_offset)
        self._ongoing[first_offset] = producer_id
        if not offs or first_offset > offs[-1]:
            offs.append(first_offset)      # the usual case: offsets only grow
        else:
            offs.insert(bisect_left(offs, first_offset), first_offset)

    # ---- housekeeping ----
    def remove_expired(self, now_ms: int, producer_id_expiration_ms: int) -> list[int]:
        """Forget producers idle for at least ``producer_id_expiration_ms`` (by their last
        batch's timestamp) and with no open transaction; returns the removed ids."""
        gone = [pid for pid, e in self._producers.items()
                if e.current_txn_first_offset is None and now_ms - e.last_timestamp >= producer_id_expiration_ms]
        for pid in gone:
            del self._producers[pid]
        if gone:
            self.version += 1
        return gone

    def truncate_fully(self) -> None:
        self._producers.clear()
        self._ongoing.clear()
        self._ongoing_offsets.clear()
        self.version += 1

    def restore(self, entry: ProducerStateEntry) -> None:
        """Put back a producer's entry as read from a snapshot file, with its open
        transaction (Kafka ``loadProducerEntry``)."""
        self._producers[entry.producer_id] = entry
        if entry.current_txn_first_offset is not None:
            self._add_ongoing(entry.current_txn_first_offset, entry.producer_id)
        self.version += 1

    def snapshot(self) -> list[dict]:
        """Plain-data snapshot (JSON-able) of every producer's state."""
        return [{
            "producer_id": e.producer_id, "producer_epoch": e.producer_epoch,
            "last_timestamp": e.last_timestamp, "coordinator_epoch": e.coordinator_epoch,
            "current_txn_first_offset": e.current_txn_first_offset,
            "batches": [[b.first_offset, b.last_offset, b.timestamp, b.first_seq, b.last_seq]
                        for b in e.batches],
        } for e in self._producers.values()]

    def load(self, snapshot: Iterable[dict]) -> None:
        """Replace the state with a :meth:`snapshot`."""
        self.truncate_fully()
        for d in snapshot:
            txn = d.get("current_txn_first_offset")
            e = ProducerStateEntry(int(d["producer_id"]), int(d["producer_epoch"]),
                                   last_timestamp=int(d["last_timestamp"]),
                                   coordinator_epoch=int(d.get("coordinator_epoch", NO_COORDINATOR_EPOCH)),
                                   current_txn_first_offset=None if txn is None else int(txn))
            for b in d.get("batches", []):
                e.batches.append(BatchMetadata(*map(int, b)))
            self.restore(e)

    @classmethod
    def from_snapshot(cls, snapshot: Iterable[dict]) -> "ProducerStateManager":
        m = cls()
        m.load(snapshot)
        return m


class LastRecord(NamedTuple):
    """An active producer's last data offset (None if it has none, e.g. after a marker that
    bumped its epoch) and its epoch: what the cleaner keeps for it (Kafka ``LastRecord``)."""

    last_data_offset: int | None
    producer_epoch: int


class EndTxnMarker(NamedTuple):
    """The control record of a COMMIT/ABORT marker batch (Kafka ``EndTransactionMarker``)."""

    commit: bool
    coordinator_epoch: int
    timestamp: int


def read_end_txn_marker(buf, pos: int = 0) -> EndTxnMarker | None:
    """The marker of the control batch at ``buf[pos:]``; None when it has no record (the
    cleaner emptied it) or its record is another control type. Only control batches are
    ever decoded (one small record)."""
    try:
        _h, records = decode_batch(buf, pos, verify_crc=False)
        if not records:
            return None
        rec = records[0]
        if control_record_type(rec.key) not in (CONTROL_ABORT, CONTROL_COMMIT):
            return None
        commit, coordinator_epoch = parse_end_txn_marker(rec)
    except CorruptRecordError:
        # (CRC-valid but not a marker we can read: treated like another control type, so a
        # replay or recovery never stops on it)
        return None
    return EndTxnMarker(commit, coordinator_epoch, rec.timestamp)


def replay_batch(state: ProducerStateManager, h, marker: EndTxnMarker | None) -> CompletedTxn | None:
    """Apply one appended batch (its header; for a control batch, its marker) to ``state``
    without validation; returns the transaction a marker completed (still open in
    ``state``: the caller writes its index entry, then calls ``complete_txn``)."""
    pid = h.producer_id
    if pid < 0:
        return None
    if h.attributes & CONTROL_FLAG:
        if marker is None:
            state.touch(pid)
            return None
        return state.update_marker(pid, h.producer_epoch, marker.coordinator_epoch, marker.commit,
                                   h.base_offset, marker.timestamp)
    state.update(pid, h.producer_epoch, h.base_sequence, last_sequence(h.base_sequence, h.last_offset_delta),
                 h.base_offset, h.base_offset + h.last_offset_delta, h.max_timestamp, bool(h.attributes & TRANSACTIONAL_FLAG))
    return None


def check_epoch(entry: ProducerStateEntry, producer_id: int, producer_epoch: int) -> None:
    if producer_epoch < entry.producer_epoch:
        raise InvalidProducerEpochError(
            f"Epoch of producer {producer_id} is {producer_epoch}, which is smaller than "
            f"the last seen epoch {entry.producer_epoch}")


def check_txn_state(entry: ProducerStateEntry, producer_id: int, is_transactional: bool) -> None:
    if entry.current_txn_first_offset is not None and not is_transactional:
        raise InvalidTxnStateError(
            f"Expected transactional write from producer {producer_id}: its transaction is open "
            f"since offset {entry.current_txn_first_offset}")


__all__ = ["ProducerStateManager", "ProducerStateEntry", "BatchMetadata", "CompletedTxn", "EndTxnMarker", "LastRecord",
           "read_end_txn_marker", "replay_batch", "sequence_in_order",
           "last_sequence", "check_epoch", "check_txn_state", "NUM_BATCHES_TO_RETAIN", "NO_COORDINATOR_EPOCH"]
