"""Idempotent-producer state per partition (Kafka ``ProducerStateManager`` /
``ProducerAppendInfo``; idempotence only, transactions later).

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

State is rebuilt on recovery by replaying batch headers through :meth:`update` (which never
validates, like Kafka's replication/recovery origin). Producers expire when
``now - last_timestamp >= producer.id.expiration.ms`` (record time, as Kafka).
"""
from __future__ import annotations

from collections import deque
from dataclasses import field
from typing import Iterable

from protocol.deferred import dataclass
from storage.errors import InvalidProducerEpochError, OutOfOrderSequenceError

INT_MAX = 2**31 - 1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NUM_BATCHES_TO_RETAIN = 5


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

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

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

    # ---- client append path ----
    def check_and_prepare(self, producer_id: int, producer_epoch: int, first_seq: int,
                          last_seq: int) -> BatchMetadata | None:
        """Validate a client batch; return the original metadata of a duplicate, or None
        when the batch is new and may be appended (then call :meth:`update`).

        Raises :class:`InvalidProducerEpochError` (older epoch) or
        :class:`OutOfOrderSequenceError` (sequence gap / new epoch not at 0).
        """
        entry = self._producers.get(producer_id)
        if entry is None:
            return None     # unknown producer: any sequence accepted (Kafka 2.5+)
        dup = entry.find_duplicate(producer_epoch, first_seq, last_seq)
        if dup is not None:
            return dup
        if producer_epoch < entry.producer_epoch:
            raise InvalidProducerEpochError(
                f"Epoch of producer {producer_id} is {producer_epoch}, which is smaller than "
                f"the last seen epoch {entry.producer_epoch}")
        if producer_epoch != entry.producer_epoch:
            if first_seq != 0 and entry.producer_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(
                    f"Invalid sequence number for new epoch of producer {producer_id}: "
                    f"{producer_epoch} (request epoch), {first_seq} (seq. number), "
                    f"{entry.producer_epoch} (current producer epoch)")
            return None
        current_last = entry.last_seq
        if entry.producer_epoch != NO_PRODUCER_EPOCH and not sequence_in_order(current_last, first_seq):
            raise OutOfOrderSequenceError(
                f"Out of order sequence number for producer {producer_id}: {first_seq} "
                f"(incoming seq. number), {current_last} (current end sequence number)")
        return None

    def update(self, producer_id: int, producer_epoch: int, first_seq: int, last_seq: int,
               first_offset: int, last_offset: int, timestamp: int) -> None:
        """Record an appended batch (client path after :meth:`check_and_prepare`, or
        recovery replay). A new epoch drops the retained batches of the old one."""
        self.version += 1
        entry = self._producers.get(producer_id)
        if entry is None:
            entry = self._producers[producer_id] = ProducerStateEntry(producer_id)
        if producer_epoch != entry.producer_epoch:
            entry.batches.clear()
            entry.producer_epoch = producer_epoch
        if first_seq != NO_SEQUENCE:
            entry.batches.append(BatchMetadata(first_offset, last_offset, timestamp, first_seq, last_seq))
        entry.last_timestamp = timestamp

    # ---- housekeeping ----
    def remove_expired(self, now_ms: int, producer_id_expiration_ms: int) -> list[int]:
        """Forget producers idle for at least ``producer_id_expiration_ms`` (by their last
        batch's timestamp); returns the removed ids."""
        gone = [pid for pid, e in self._producers.items()
                if now_ms - e.last_timestamp >= producer_id_expiration_ms]
        for pid in gone:
            del self._producers[pid]
        if gone:
            self.version += 1
        return gone

    def truncate_fully(self) -> None:
        self._producers.clear()
        self.version += 1

    def restore(self, entry: ProducerStateEntry) -> None:
        """Put back a producer's entry as read from a snapshot file."""
        self._producers[entry.producer_id] = entry
        self.version += 1

    def snapshot(self) -> list[dict]:
        """Plain-data snapshot (JSON-able) of every producer's state."""
        return [{
            "producer_id": e.producer_id, "producer_epoch": e.producer_epoch,
            "last_timestamp": e.last_timestamp,
            "batches": [[b.first_offset, b.last_offset, b.timestamp, b.first_seq, b.last_seq]
                        for b in e.batches],
        } for e in self._producers.values()]

    def load(self, snapshot: Iterable[dict]) -> None:
        """Replace the state with a :meth:`snapshot`."""
        self._producers.clear()
        self.version += 1
        for d in snapshot:
            e = ProducerStateEntry(int(d["producer_id"]), int(d["producer_epoch"]),
                                   last_timestamp=int(d["last_timestamp"]))
            for b in d.get("batches", []):
                e.batches.append(BatchMetadata(*map(int, b)))
            self._producers[e.producer_id] = e

    @classmethod
    def from_snapshot(cls, snapshot: Iterable[dict]) -> "ProducerStateManager":
        m = cls()
        m.load(snapshot)
        return m


__all__ = ["ProducerStateManager", "ProducerStateEntry", "BatchMetadata", "sequence_in_order",
           "last_sequence", "NUM_BATCHES_TO_RETAIN"]
