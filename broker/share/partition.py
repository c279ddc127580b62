"""One share-partition's delivery state (KIP-932; Kafka's ``SharePartition``), pure: no I/O,
no clock of its own (every call takes ``now`` in ms).

Offsets below the share-partition start offset (SPSO, ``start_offset``) are done with;
offsets from ``end_offset`` (SPEO: the next offset never yet acquired) on are unread. Each
offset in between is in flight, in one of Kafka's record states:

- AVAILABLE (0): may be acquired (released, or its lock expired);
- ACQUIRED (1): held by one member until ``deadline`` (its acquisition lock);
- ACKNOWLEDGED (2): accepted, never delivered again;
- ARCHIVED (4): rejected, a gap, or past the delivery count limit; never delivered again.

Invariants: a record ACQUIRED by one member is never acquired by another until it is released,
its lock expires or its holder leaves; acquiring a record adds one to its delivery count; a
record released (explicitly, by lock expiry or by its holder leaving) whose delivery count
reached ``delivery_count_limit`` is archived instead; ``start_offset`` moves past a prefix of
acknowledged/archived records; no more than ``max_record_locks`` offsets are in flight
(``end_offset - start_offset``; Kafka's ``group.share.partition.max.record.locks``).

Kafka keeps in-flight state per batch and splits batches on partial acknowledgement; per-offset
state is the same observable behaviour, simpler to get right, and bounded by the lock limit.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED = 0, 1, 2, 4
# Acknowledge types on the wire (ShareFetch/ShareAcknowledge)
GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4


class InvalidRecordState(Exception):
    """Kafka's InvalidRecordStateException: acknowledging records this member does not hold."""


class InvalidRequest(Exception):
    """Malformed acknowledgement batch (Kafka's InvalidRequestException)."""


@dataclass
class InFlight:
    state: int = AVAILABLE
    delivery_count: int = 0
    member_id: Optional[str] = None
    deadline: int = 0


@dataclass
class SharePartition:
    start_offset: int
    lock_duration_ms: int = 30_000
    delivery_count_limit: int = 5
    max_record_locks: int = 2000
    end_offset: int = -1
    records: dict = field(default_factory=dict)  # offset -> InFlight, start <= offset < end
    state_epoch: int = 0

    def __post_init__(self):
        if self.end_offset < self.start_offset:
            self.end_offset = self.start_offset

    # ---- queries ---------------------------------------------------------------------------
    def next_fetch_offset(self, now: Optional[int] = None) -> int:
        """Where a fetch must read from: the first AVAILABLE in-flight offset, else the end
        (locks past ``now`` released first)."""
        if now is not None:
            self.expire(now)
        for off in range(self.start_offset, self.end_offset):
            r = self.records.get(off)
            if r is None or r.state == AVAILABLE:
                return off
        return self.end_offset

    def has_available(self, log_end: int) -> bool:
        """Whether a fetch could acquire anything (an AVAILABLE record, or unread records
        within the lock limit)."""
        if any(r.state == AVAILABLE for r in self.records.values()):
            return True
        return self.end_offset < log_end and self.end_offset - self.start_offset < self.max_record_locks

    def can_acquire_records(self) -> bool:
        """Kafka's SharePartition.canAcquireRecords: an in-flight record is AVAILABLE, or the
        in-flight window is below the record-lock limit (locks past their deadline count as
        held until ``expire`` runs)."""
        return self.next_fetch_offset() != self.end_offset or self.end_offset - self.start_offset < self.max_record_locks

    def in_flight(self) -> int:
        return sum(1 for r in self.records.values() if r.state in (AVAILABLE, ACQUIRED))

    def state_of(self, offset: int) -> InFlight:
        if offset < self.start_offset:
            return InFlight(ACKNOWLEDGED)
        return self.records.get(offset) or InFlight(AVAILABLE)

    # ---- transitions -----------------------------------------------------------------------
    def expire(self, now: int) -> list[int]:
        """Release every record whose acquisition lock passed; returns their offsets."""
        out = []
        for off, r in self.records.items():
            if r.state == ACQUIRED and r.deadline <= now:
                self._release(r)
                out.append(off)
        if out:
            self._advance()
        return out

    def acquire(self, member_id: str, batches: Iterable[tuple[int, int, bool]], now: int,
                max_records: int, *, batch_optimized: bool = False) -> list[tuple[int, int, int]]:
        """Acquire for ``member_id`` the records of ``batches`` [(first offset, last offset,
        is control)] read from the log. Returns the acquired ranges [(first, last, delivery
        count)] in offset order.

        ``max_records`` bounds them as Kafka 4.2's share acquire modes (KIP-1206) do:
        record-limit (``batch_optimized`` False) never acquires more than ``max_records``;
        batch-optimized (Kafka's default, and all a v1 ShareFetch knows) treats it as a soft
        limit: the log batch holding the ``max_records``-th record is acquired whole, so a
        batch is never split between members."""
        self.expire(now)
        got: list[int] = []
        deadline = now + self.lock_duration_ms
        for first, last, control in batches:
            if batch_optimized and len(got) >= max_records:
                break
            for off in range(max(first, self.start_offset), last + 1):
                if not batch_optimized and len(got) >= max_records:
                    break
                if off >= self.end_offset:
                    if self.end_offset - self.start_offset >= self.max_record_locks:
                        break
                    if off > self.end_offset:  # offsets the log no longer holds (compacted)
                        for gap in range(self.end_offset, off):
                            self.records[gap] = InFlight(ARCHIVED)
                    self.end_offset = off + 1
                    if control:  # transaction markers are never delivered
                        self.records[off] = InFlight(ARCHIVED)
                        continue
                    self.records[off] = InFlight(AVAILABLE)
                r = self.records.get(off)
                if r is None or r.state != AVAILABLE:
                    continue
                r.state, r.member_id, r.deadline = ACQUIRED, member_id, deadline
                r.delivery_count += 1
                got.append(off)
        self._advance()
        return _ranges(got, self.records)

    def give_back(self, member_id: str, ranges: Iterable[tuple[int, int, int]]) -> list[int]:
        """Undo an acquisition that was never delivered (a ShareFetch answer throttled by a
        quota carries no records): each offset of ``ranges`` still ACQUIRED by ``member_id``
        is AVAILABLE again with the delivery count it had before, so a throttled consumer's
        records neither wait for their locks nor move towards the delivery count limit.
        Returns the offsets given back."""
        out = []
        for first, last, _count in ranges:
            for off in range(first, last + 1):
                r = self.records.get(off)
                if r is not None and r.state == ACQUIRED and r.member_id == member_id:
                    r.state, r.member_id, r.deadline = AVAILABLE, None, 0
                    r.delivery_count = max(r.delivery_count - 1, 0)
                    out.append(off)
        return out

    def acknowledge(self, member_id: str, first: int, last: int, types: list[int], now: int) -> None:
        """Apply one acknowledgement batch (``acknowledge_all`` with one batch)."""
        self.acknowledge_all(member_id, [(first, last, types)], now)

    def acknowledge_all(self, member_id: str, batches: list[tuple[int, int, list[int]]], now: int, *,
                        renew_enabled: bool = True) -> None:
        """Apply one partition's acknowledgement batches [(first, last, types)]: ``types`` holds
        one type for the whole range or one per offset. All or nothing, as Kafka's
        SharePartition.acknowledge rolls back every update of the request when one batch fails:

        - ``InvalidRequest`` (INVALID_REQUEST) when a batch is malformed (``validate_batches``)
          or reaches past the in-flight records (Kafka: "the last offset in request is past
          acquired records");
        - ``InvalidRecordState`` (INVALID_RECORD_STATE) when no in-flight record is there at
          all (never acquired, or already done with and below the start offset), or an offset
          is not ACQUIRED by ``member_id`` (another member's, released, its lock expired).

        Offsets below the start offset inside a batch that reaches the in-flight records are
        skipped, as Kafka does when the start offset moved inside a batch."""
        err = validate_batches([(f, l, ts) for f, l, ts in batches], renew=True)
        if err:
            raise InvalidRequest(err)
        self.expire(now)
        undo: list[tuple[int, InFlight]] = []
        try:
            for first, last, types in batches:
                self._check_ack(member_id, first, last)
                for off in range(max(first, self.start_offset), last + 1):
                    t = types[0] if len(types) == 1 else types[off - first]
                    r = self.records[off]
                    undo.append((off, InFlight(r.state, r.delivery_count, r.member_id, r.deadline)))
                    if t == ACCEPT:
                        r.state, r.member_id = ACKNOWLEDGED, None
                    elif t in (REJECT, GAP):
                        r.state, r.member_id = ARCHIVED, None
                    elif t == RELEASE:
                        self._release(r)
                    elif not renew_enabled:  # the group's share.renew.acknowledge.enable=false
                        raise InvalidRecordState("Renewing acquisition locks is not enabled for the group.")
                    else:  # RENEW (KIP-1222): a fresh lock
                        r.deadline = now + self.lock_duration_ms
        except (InvalidRecordState, InvalidRequest):
            for off, saved in reversed(undo):
                self.records[off] = saved
            raise
        self._advance()

    def _check_ack(self, member_id: str, first: int, last: int) -> None:
        """Kafka's SharePartition checks of one acknowledgement batch against the in-flight
        records [start_offset, end_offset)."""
        if last < self.start_offset or (first >= self.end_offset and self.start_offset == self.end_offset):
            raise InvalidRecordState("Batch record not found. The request batch offsets are not found in the cache.")
        if first >= self.end_offset:
            raise InvalidRequest("Batch record not found. The first offset in request is past acquired records.")
        if last >= self.end_offset:
            raise InvalidRequest("Batch record not found. The last offset in request is past acquired records.")
        for off in range(max(first, self.start_offset), last + 1):
            r = self.records.get(off)
            if r is None or r.state != ACQUIRED:
                raise InvalidRecordState("The batch cannot be acknowledged. The offset is not acquired.")
            if r.member_id != member_id:
                raise InvalidRecordState("Member is not the owner of offset")

    def release_member(self, member_id: str) -> list[int]:
        """Release every record ``member_id`` holds (it left, or its share session closed)."""
        out = []
        for off, r in self.records.items():
            if r.state == ACQUIRED and r.member_id == member_id:
                self._release(r)
                out.append(off)
        if out:
            self._advance()
        return out

    def reset_start(self, offset: int) -> None:
        """AlterShareGroupOffsets / a new start: forget every in-flight record."""
        self.records.clear()
        self.start_offset = self.end_offset = offset

    def _release(self, r: InFlight) -> None:
        r.member_id = None
        r.state = ARCHIVED if r.delivery_count >= self.delivery_count_limit else AVAILABLE

    def _advance(self) -> None:
        while self.start_offset < self.end_offset:
            r = self.records.get(self.start_offset)
            if r is None or r.state not in (ACKNOWLEDGED, ARCHIVED):
                break
            del self.records[self.start_offset]
            self.start_offset += 1

    # ---- persistence (Kafka's PersisterStateBatch) -------------------------------------------
    def state_batches(self) -> list[tuple[int, int, int, int]]:
        """[(first, last, delivery state, delivery count)] of the in-flight records, runs
        merged. An ACQUIRED record is written as AVAILABLE: after a restart its lock is gone
        and it is delivered again (its count kept)."""
        out: list[list[int]] = []
        for off in range(self.start_offset, self.end_offset):
            r = self.records.get(off)
            if r is None:
                continue
            st = AVAILABLE if r.state == ACQUIRED else r.state
            if out and out[-1][1] == off - 1 and out[-1][2] == st and out[-1][3] == r.delivery_count:
                out[-1][1] = off
            else:
                out.append([off, off, st, r.delivery_count])
        return [tuple(b) for b in out]

    def load(self, start_offset: int, batches: Iterable[tuple[int, int, int, int]]) -> None:
        """Restore from a snapshot (and updates already folded in)."""
        self.records.clear()
        self.start_offset = self.end_offset = start_offset
        for first, last, st, count in batches:
            for off in range(max(first, start_offset), last + 1):
                self.records[off] = InFlight(AVAILABLE if st == ACQUIRED else st, count)
                self.end_offset = max(self.end_offset, off + 1)
        # an unread hole inside the loaded range stays AVAILABLE (never delivered)
        for off in range(self.start_offset, self.end_offset):
            self.records.setdefault(off, InFlight(AVAILABLE))
        self._advance()


def validate_batches(batches: list[tuple[int, int, list[int]]], *, renew: bool) -> Optional[str]:
    """Kafka's KafkaApis.validateAcknowledgementBatches for one partition: the reason its
    batches [(first, last, types)] are an INVALID_REQUEST, or None. Batches must be in offset
    order, each first <= last, with one type or one per offset, each type a known one (RENEW,
    4, only where the request version has it: ShareFetch/ShareAcknowledge v2, KIP-1222)."""
    prev_end = -1
    top = RENEW if renew else REJECT
    for first, last, types in batches:
        if first > last:
            return f"Invalid acknowledgement batch: first offset {first} is after last offset {last}."
        if first < prev_end:
            return f"Invalid acknowledgement batch: offset {first} overlaps the previous batch."
        if not types:
            return "Invalid acknowledgement batch: no acknowledge type."
        if len(types) > 1 and last - first != len(types) - 1:
            return f"Invalid acknowledgement batch: {len(types)} types for {last - first + 1} offsets."
        if any(t < 0 or t > top for t in types):
            return f"Invalid acknowledge type in {list(types)}."
        prev_end = last
    return None


def _ranges(offsets: list[int], records: dict) -> list[tuple[int, int, int]]:
    out: list[list[int]] = []
    for off in offsets:
        c = records[off].delivery_count
        if out and out[-1][1] == off - 1 and out[-1][2] == c:
            out[-1][1] = off
        else:
            out.append([off, off, c])
    return [tuple(r) for r in out]
