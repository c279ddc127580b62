"""Which old segments to delete (Kafka ``UnifiedLog.deleteOldSegments``), as pure functions.

A segment is described by a :class:`SegmentSnapshot`. Deletion always walks from the
oldest segment and **stops at the first segment that is kept**, so the log stays a
contiguous suffix. A segment is deletable only when

* its upper bound (the next segment's base offset, or the log end offset for the last
  segment) is ``<= high_watermark`` - the log start offset can never pass the HWM;
* the predicate says so; and
* it is not the last segment while that segment is empty.

If every segment is deletable, the log must roll a new empty active segment first (at the
log end offset) so that it always keeps one segment; :class:`RetentionPlan` then says
``roll_first``.

:func:`plan_retention` runs Kafka's three passes in Kafka's order, each on what the
previous pass left: log start offset breach (always), then - only when ``cleanup.policy``
contains ``delete`` - retention size (``retention.bytes >= 0``) and retention time
(``retention.ms >= 0``). Retention time uses each segment's *largest timestamp* (largest
record timestamp, or the file's last-modified time when it has none):
``now - largest_timestamp > retention_ms``. A compact-only topic is never deleted by time
or size. Applying a plan and planning again yields nothing new (idempotent).
"""
from __future__ import annotations

from dataclasses import field
from typing import Callable, Optional, Sequence

from protocol.deferred import dataclass

REASON_LOG_START_OFFSET = "log_start_offset_breach"
REASON_RETENTION_SIZE = "retention_size_breach"
REASON_RETENTION_TIME = "retention_ms_breach"


@dataclass(frozen=True)
class SegmentSnapshot:
    """Plain facts about one segment; ``next_offset`` is the offset after its last record
    (its base offset when empty); ``largest_timestamp`` is the max record timestamp, or the
    last-modified ms when the segment holds no timestamps."""

    base_offset: int
    next_offset: int
    size_bytes: int
    largest_timestamp: int


Predicate = Callable[[SegmentSnapshot, Optional[SegmentSnapshot]], bool]


def delete_old_segments(segments: Sequence[SegmentSnapshot], predicate: Predicate, *,
                        high_watermark: int) -> list[SegmentSnapshot]:
    """The oldest-first run of deletable segments (Kafka ``LocalLog.deletableSegments``
    with ``UnifiedLog.deleteOldSegments``'s HWM guard).

    ``predicate(segment, next_segment_or_None)`` is only called for segments that pass the
    HWM guard, oldest first, and may keep state (the size predicate does). The returned
    list may include the last segment; the caller must then roll first (len(result) ==
    len(segments)).
    """
    out: list[SegmentSnapshot] = []
    n = len(segments)
    for i, seg in enumerate(segments):
        nxt = segments[i + 1] if i + 1 < n else None
        upper = nxt.base_offset if nxt is not None else seg.next_offset
        if not (high_watermark >= upper and predicate(seg, nxt)):
            break
        if nxt is None and seg.size_bytes == 0:
            break   # never delete the empty active segment
        out.append(seg)
    return out


def retention_time_predicate(now_ms: int, retention_ms: int) -> Predicate:
    """Delete segments whose largest timestamp is more than ``retention_ms`` old."""
    def pred(seg: SegmentSnapshot, _next: SegmentSnapshot | None) -> bool:
        return now_ms - seg.largest_timestamp > retention_ms
    return pred


def retention_size_predicate(total_size: int, retention_bytes: int) -> Predicate:
    """Delete oldest segments while the log would still be at least ``retention_bytes``
    without them (Kafka: ``diff = size - retention``; delete while ``diff - size >= 0``).
    Stateful: use a fresh predicate per pass."""
    remaining = [total_size - retention_bytes]

    def pred(seg: SegmentSnapshot, _next: SegmentSnapshot | None) -> bool:
        if remaining[0] - seg.size_bytes >= 0:
            remaining[0] -= seg.size_bytes
            return True
        return False
    return pred


def log_start_offset_predicate(log_start_offset: int) -> Predicate:
    """Delete segments that lie wholly below the log start offset: the *next* segment's
    base offset is <= log start offset (so the last segment never qualifies)."""
    def pred(_seg: SegmentSnapshot, nxt: SegmentSnapshot | None) -> bool:
        return nxt is not None and nxt.base_offset <= log_start_offset
    return pred


@dataclass(frozen=True)
class RetentionPlan:
    """What the log should do: roll first if ``roll_first``, then delete ``to_delete``
    (oldest first) and raise the log start offset to ``new_log_start_offset``.
    ``reason`` names the passes that deleted something, comma-separated ("" if none);
    ``reasons`` gives the pass for each segment of ``to_delete``."""

    to_delete: list[SegmentSnapshot]
    roll_first: bool
    reason: str
    new_log_start_offset: int
    reasons: list[str] = field(default_factory=list)


def plan_retention(segments: Sequence[SegmentSnapshot], *, now_ms: int, config,
                   log_start_offset: int, high_watermark: int) -> RetentionPlan:
    """Kafka's ``deleteOldSegments()``: log start offset pass, then (``delete`` policy only)
    size then time, each over the segments the previous pass left.

    ``config`` needs ``delete`` (bool), ``retention_ms`` and ``retention_bytes``.
    When a pass would delete every segment, a new empty segment at the log end offset is
    assumed rolled first (``roll_first``) and later passes see only that segment.
    """
    remaining = list(segments)
    deleted: list[SegmentSnapshot] = []
    reasons: list[str] = []
    roll_first = False
    if not remaining:
        return RetentionPlan([], False, "", log_start_offset)
    log_end_offset = remaining[-1].next_offset

    def run(pred: Predicate, reason: str) -> None:
        nonlocal remaining, roll_first
        victims = delete_old_segments(remaining, pred, high_watermark=high_watermark)
        if not victims:
            return
        if len(victims) == len(remaining):
            roll_first = True
            remaining = remaining + [SegmentSnapshot(log_end_offset, log_end_offset, 0, now_ms)]
        deleted.extend(victims)
        reasons.extend([reason] * len(victims))
        remaining = remaining[len(victims):]

    run(log_start_offset_predicate(log_start_offset), REASON_LOG_START_OFFSET)
    if config.delete:
        if config.retention_bytes >= 0:
            total = sum(s.size_bytes for s in remaining)
            if total >= config.retention_bytes:
                run(retention_size_predicate(total, config.retention_bytes), REASON_RETENTION_SIZE)
        if config.retention_ms >= 0:
            run(retention_time_predicate(now_ms, config.retention_ms), REASON_RETENTION_TIME)

    new_lso = max(log_start_offset, remaining[0].base_offset) if deleted else log_start_offset
    reason = ",".join(dict.fromkeys(reasons))
    return RetentionPlan(deleted, roll_first, reason, new_lso, reasons)


__all__ = ["SegmentSnapshot", "RetentionPlan", "delete_old_segments", "plan_retention",
           "retention_time_predicate", "retention_size_predicate",
           "log_start_offset_predicate", "REASON_LOG_START_OFFSET", "REASON_RETENTION_SIZE",
           "REASON_RETENTION_TIME"]
