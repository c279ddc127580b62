"""Pure decisions of the log cleaner, over plain data (no files, no wall clock).

Kafka references: ``LogCleanerManager.cleanableOffsets`` / ``calculateCleanableBytes`` /
``maxCompactionDelay`` / ``grabFilthiestCompactedLog``, ``LogToClean``, and in ``Cleaner``:
``shouldRetainRecord``, the batch retention of ``cleanInto``'s filter
(``checkBatchRetention``, ``isBatchLastRecordOfProducer``), ``groupSegmentsBySize``, and
``CleanedTransactionMetadata``.

Transactions (Kafka's rules): cleaning never passes the last stable offset, so every
transaction the cleaner sees is decided and the aborted ones are known ahead of time from
the transaction indexes. Records of aborted transactions are dropped without regard to
keys (and never enter the offset map). A COMMIT/ABORT marker may go once no batch of its
transaction was seen in the cleaning pass (its data is gone): the first such cleaning gives
its batch a delete horizon of ``now + delete.retention.ms`` (as for tombstones, KIP-534),
and a cleaning after that horizon removes it. An ABORT marker whose data was still there is
kept, and the aborted transaction goes into the cleaned segment's ``.txnindex``. The last
batch of an active producer is kept (empty if need be): the one holding its last data
offset, or, when it has none, a marker with its current epoch.

Vocabulary: the log is ``[log start offset, log end offset)``; the *clean* section is
``[log start, first dirty offset)`` (deduplicated by the last cleaning, its position kept in
``cleaner-offset-checkpoint``); the *dirty* section runs from the first dirty offset to the
*first uncleanable offset*, which is never past the active segment's base offset, the last
stable offset, or the first segment younger than ``min.compaction.lag.ms``. Everything at or
past it (the uncleanable section) is never touched.
"""
from __future__ import annotations

import heapq
from typing import NamedTuple, Sequence

from protocol.deferred import dataclass
from storage.producer_state import LastRecord

INT32_MAX = 0x7FFFFFFF
LONG_MAX = (1 << 63) - 1

# Batch retention (Kafka ``BatchRetention``)
DELETE_EMPTY = "DELETE_EMPTY"      # keep the batch only if some record survives
RETAIN_EMPTY = "RETAIN_EMPTY"      # keep the batch header even when no record survives
CONTROL_ABORT, CONTROL_COMMIT = 0, 1  # control record types (Kafka ``ControlRecordType``)
DELETE = "DELETE"                  # drop the batch without looking at its records


@dataclass(frozen=True)
class SegmentFacts:
    """What the cleaner's choices need to know of one segment.

    ``largest_timestamp``: largest record timestamp, or the file mtime without one (Kafka
    ``LogSegment.largestTimestamp``). ``first_batch_timestamp``: the first batch's max
    timestamp, ``LONG_MAX`` when empty (Kafka ``getFirstBatchTimestamp``). Index sizes are
    bytes used by entries.
    """

    base_offset: int
    size: int
    largest_timestamp: int = -1
    first_batch_timestamp: int = LONG_MAX
    offset_index_bytes: int = 0
    time_index_bytes: int = 0


@dataclass(frozen=True)
class LogFacts:
    """A log as the cleaner manager sees it: segments ascending (the last is the active one)."""

    segments: Sequence[SegmentFacts]
    log_start_offset: int
    log_end_offset: int
    last_stable_offset: int
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_ratio: float = 0.5
    compact_and_delete: bool = False

    @property
    def active_base_offset(self) -> int:
        return self.segments[-1].base_offset


def segments_in_range(segments: Sequence[SegmentFacts], from_offset: int, to_offset: int) -> list[SegmentFacts]:
    """Kafka ``logSegments(from, to)``: the floor segment of ``from`` (or the first segment
    if none) up to the last segment whose base offset is < ``to``."""
    if to_offset == from_offset:
        return []
    if to_offset < from_offset:
        raise ValueError(f"invalid log segment range: requested from {from_offset} to {to_offset}")
    start = 0
    for i, s in enumerate(segments):
        if s.base_offset <= from_offset:
            start = i
        else:
            break
    return [s for s in segments[start:] if s.base_offset < to_offset]


def non_active_segments_from(segments: Sequence[SegmentFacts], from_offset: int) -> list[SegmentFacts]:
    """Kafka ``nonActiveLogSegmentsFrom``: from the floor segment of ``from`` up to (not
    including) the active segment."""
    if len(segments) < 2 or from_offset >= segments[-1].base_offset:
        return []
    return segments_in_range(segments[:-1], from_offset, segments[-1].base_offset)


@dataclass(frozen=True)
class OffsetsToClean:
    first_dirty_offset: int
    first_uncleanable_dirty_offset: int
    force_update_checkpoint: bool


def cleanable_offsets(log: LogFacts, checkpointed: int | None, now_ms: int) -> OffsetsToClean:
    """Kafka ``cleanableOffsets``: the dirty range ``[first dirty, first uncleanable)``.

    A checkpoint below the log start offset or above the log end offset is reset to the log
    start offset (and must be rewritten: ``force_update_checkpoint``).
    """
    start = log.log_start_offset
    cp = start if checkpointed is None else checkpointed
    force = False
    if cp < start:
        first_dirty, force = start, True
    elif cp > log.log_end_offset:
        first_dirty, force = start, True
    else:
        first_dirty = cp
    candidates = [log.last_stable_offset, log.active_base_offset]
    lag = max(log.min_compaction_lag_ms, 0)
    if lag > 0:
        for s in non_active_segments_from(log.segments, first_dirty):
            if s.largest_timestamp > now_ms - lag:
                candidates.append(s.base_offset)
                break
    return OffsetsToClean(first_dirty, max(first_dirty, min(candidates)), force)


def cleanable_bytes(log: LogFacts, first_dirty: int, uncleanable: int) -> tuple[int, int]:
    """Kafka ``calculateCleanableBytes``: ``(first uncleanable offset rounded down to its
    segment's base offset, bytes of the segments in [first dirty, that offset))``."""
    rest = non_active_segments_from(log.segments, uncleanable)
    first_uncleanable = rest[0].base_offset if rest else log.active_base_offset
    size = sum(s.size for s in segments_in_range(log.segments, min(first_dirty, first_uncleanable),
                                                 first_uncleanable))
    return first_uncleanable, size


def max_compaction_delay(log: LogFacts, first_dirty: int, now_ms: int) -> int:
    """Kafka ``maxCompactionDelay``: how far past ``max.compaction.lag.ms`` the oldest dirty
    record is (by first-batch timestamps > 0 of the dirty non-active segments); 0 if not."""
    stamps = [s.first_batch_timestamp for s in non_active_segments_from(log.segments, first_dirty)
              if s.first_batch_timestamp > 0]
    earliest = min(stamps) if stamps else LONG_MAX
    clean_until = now_ms - max(log.max_compaction_lag_ms, 0)
    return clean_until - earliest if earliest < clean_until else 0


@dataclass(frozen=True)
class LogToClean:
    """Kafka ``LogToClean``: a log's clean/dirty byte counts and its dirty range."""

    key: object
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    need_compaction_now: bool = False
    force_update_checkpoint: bool = False

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0


def log_to_clean(key, log: LogFacts, checkpointed: int | None, now_ms: int) -> LogToClean:
    offs = cleanable_offsets(log, checkpointed, now_ms)
    clean = sum(s.size for s in segments_in_range(log.segments, -1, offs.first_dirty_offset))
    first_uncleanable, dirty = cleanable_bytes(log, offs.first_dirty_offset, offs.first_uncleanable_dirty_offset)
    need_now = max_compaction_delay(log, offs.first_dirty_offset, now_ms) > 0
    return LogToClean(key, offs.first_dirty_offset, first_uncleanable, clean, dirty, need_now,
                      offs.force_update_checkpoint)


def is_cleanable(ltc: LogToClean, min_cleanable_ratio: float) -> bool:
    """Kafka's filter: past ``max.compaction.lag.ms`` with something to clean, or a dirty
    ratio strictly above ``min.cleanable.dirty.ratio``."""
    return ((ltc.need_compaction_now and ltc.cleanable_bytes > 0)
            or ltc.cleanable_ratio > min_cleanable_ratio)


def choose_filthiest(candidates: Sequence[tuple[LogToClean, float]]) -> LogToClean | None:
    """Among ``(log to clean, its min.cleanable.dirty.ratio)`` pairs: drop empty logs, keep
    the cleanable ones, return the one with the highest dirty ratio (first wins a tie)."""
    best = None
    for ltc, ratio in candidates:
        if ltc.total_bytes <= 0 or not is_cleanable(ltc, ratio):
            continue
        if best is None or ltc.cleanable_ratio > best.cleanable_ratio:
            best = ltc
    return best


# ---- cleaning ------------------------------------------------------------------------------

def should_retain_record(*, offset: int, has_key: bool, has_value: bool, map_offset: int,
                         map_latest_offset: int, delete_horizon_ms: int | None, now_ms: int) -> bool:
    """Kafka ``Cleaner.shouldRetainRecord`` for magic-2 batches.

    * past the offset map's latest offset (not scanned this pass): kept;
    * no key: dropped (a compacted log cannot hold keyless records);
    * otherwise kept iff it is the latest offset seen for its key (``map_offset`` is -1 for a
      key not in the map: a record of the clean section) and it has a value, or it is a
      tombstone whose batch has no delete horizon yet or one still in the future.
    """
    if offset > map_latest_offset:
        return True
    if not has_key:
        return False
    latest_for_key = offset >= map_offset
    retain_deletes = delete_horizon_ms is None or now_ms < delete_horizon_ms
    return latest_for_key and (has_value or retain_deletes)


def is_batch_last_record_of_producer(*, producer_id: int, batch_last_offset: int, is_control: bool,
                                     producer_epoch: int, last_record: LastRecord | None) -> bool:
    """Kafka ``isBatchLastRecordOfProducer``: the batch holding the producer's last data
    offset, or, without one, a marker with its current epoch (it carries the epoch that
    fences older producers)."""
    if producer_id < 0 or last_record is None:
        return False
    if last_record.last_data_offset is not None:
        return batch_last_offset == last_record.last_data_offset
    return is_control and producer_epoch == last_record.producer_epoch


class BatchRetentionResult(NamedTuple):
    retention: str                      # DELETE, RETAIN_EMPTY or DELETE_EMPTY
    discard_records: bool               # no record of the batch survives
    contains_marker_for_empty_txn: bool  # a marker whose transaction has no data left


def batch_retention(*, producer_id: int, is_control: bool, can_discard: bool, delete_horizon_ms: int | None,
                    now_ms: int, batch_next_offset: int, is_last_record_of_producer: bool,
                    upper_bound_offset_of_round: int) -> BatchRetentionResult:
    """Kafka's ``checkBatchRetention``. ``can_discard`` is the transactional verdict
    (:class:`CleanedTransactionMetadata`): an aborted data batch, or a marker whose
    transaction has no data left. Such a marker loses its record only once its delete
    horizon has passed. The batch holding an active producer's last record and the batch
    ending the cleaning round are kept even if emptied."""
    if is_control:
        discard = can_discard and delete_horizon_ms is not None and delete_horizon_ms <= now_ms
    else:
        discard = can_discard
    if producer_id >= 0 and is_last_record_of_producer:
        retention = RETAIN_EMPTY
    elif batch_next_offset == upper_bound_offset_of_round:
        retention = RETAIN_EMPTY
    elif discard:
        retention = DELETE
    else:
        retention = DELETE_EMPTY
    return BatchRetentionResult(retention, discard, can_discard and is_control)


class CleanedTransactionMetadata:
    """Kafka ``CleanedTransactionMetadata``: the transactions open while the cleaner walks a
    log in offset order, deciding which batches of aborted transactions and which markers
    can go. ``cleaned_index`` (anything with ``append(AbortedTxn)``) receives the aborted
    transactions whose markers stay in the segment being written."""

    def __init__(self) -> None:
        self._committed: set[int] = set()              # producers with committed data seen
        self._aborted: dict[int, list] = {}            # producer -> [AbortedTxn, data seen]
        self._pending: list = []                       # heap of (first offset, n, AbortedTxn)
        self._n = 0
        self.cleaned_index = None

    def add_aborted_transactions(self, txns) -> None:
        for t in txns:
            self._n += 1
            heapq.heappush(self._pending, (t.first_offset, self._n, t))

    def _consume_up_to(self, offset: int) -> None:
        pending = self._pending
        while pending and pending[0][0] <= offset:
            t = heapq.heappop(pending)[2]
            self._aborted.setdefault(t.producer_id, [t, False])

    def on_control_batch_read(self, producer_id: int, last_offset: int, control_type: int | None) -> bool:
        """A control batch: ``control_type`` of its record (0 ABORT, 1 COMMIT, others are
        kept), None when the cleaner already emptied it; True when it can be discarded."""
        self._consume_up_to(last_offset)
        if control_type is None:
            return True
        if control_type not in (CONTROL_ABORT, CONTROL_COMMIT):
            return False
        if control_type == CONTROL_ABORT:
            meta = self._aborted.pop(producer_id, None)
            if meta is not None and meta[1]:
                # data of the transaction was still there: the marker and its entry stay
                if self.cleaned_index is not None:
                    self.cleaned_index.append(meta[0])
                return False
            return True
        if producer_id in self._committed:
            self._committed.discard(producer_id)
            return False
        return True

    def on_batch_read(self, producer_id: int, last_offset: int, is_transactional: bool) -> bool:
        """A data batch; True when it belongs to an aborted transaction (drop it)."""
        self._consume_up_to(last_offset)
        if not is_transactional:
            return False
        meta = self._aborted.get(producer_id)
        if meta is not None:
            meta[1] = True
            return True
        self._committed.add(producer_id)
        return False


def new_delete_horizon(*, contains_tombstones: bool, existing_horizon: int | None, now_ms: int,
                       delete_retention_ms: int) -> int | None:
    """KIP-534: a rewritten batch holding tombstones (or a marker whose transaction has no
    data left) gets ``now + delete.retention.ms`` as its delete horizon the first time it is
    cleaned; an existing horizon is kept."""
    if existing_horizon is not None:
        return existing_horizon
    if contains_tombstones:
        return now_ms + delete_retention_ms
    return None


def group_segments_by_size(segments: Sequence[SegmentFacts], max_size: int, max_index_size: int,
                           first_uncleanable_offset: int) -> list[list[SegmentFacts]]:
    """Kafka ``groupSegmentsBySize``: consecutive segments merged into one as long as the
    log bytes stay <= ``segment.bytes``, each index's bytes <= ``segment.index.bytes``, and
    the group's offsets fit ``base offset + int32`` (the last offset of a candidate is bounded
    by the next segment's base offset - 1, or the first uncleanable offset - 1 for the last
    one; an empty candidate skips that check)."""
    groups: list[list[SegmentFacts]] = []
    segs = list(segments)
    i = 0
    n = len(segs)
    while i < n:
        group = [segs[i]]
        log_size = segs[i].size
        index_size = segs[i].offset_index_bytes
        time_index_size = segs[i].time_index_bytes
        i += 1
        while i < n:
            cand = segs[i]
            if log_size + cand.size > max_size:
                break
            if index_size + cand.offset_index_bytes > max_index_size:
                break
            if time_index_size + cand.time_index_bytes > max_index_size:
                break
            if cand.size != 0:
                last = segs[i + 1].base_offset - 1 if i + 1 < n else first_uncleanable_offset - 1
                if last - group[0].base_offset > INT32_MAX:
                    break
            group.append(cand)
            log_size += cand.size
            index_size += cand.offset_index_bytes
            time_index_size += cand.time_index_bytes
            i += 1
        groups.append(group)
    return groups


__all__ = [
    "SegmentFacts", "LogFacts", "OffsetsToClean", "LogToClean", "segments_in_range",
    "non_active_segments_from", "cleanable_offsets", "cleanable_bytes", "max_compaction_delay",
    "log_to_clean", "is_cleanable", "choose_filthiest", "should_retain_record", "batch_retention",
    "BatchRetentionResult", "LastRecord", "is_batch_last_record_of_producer", "CleanedTransactionMetadata",
    "new_delete_horizon", "group_segments_by_size", "DELETE", "DELETE_EMPTY", "RETAIN_EMPTY", "INT32_MAX",
    "LONG_MAX",
]
