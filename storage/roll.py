"""When to roll the active segment (Kafka ``LogSegment.shouldRoll``), as a pure function.

A new segment is started before appending a set of batches when any of these holds:

* size: ``segment_size > max_segment_bytes - batches_size`` (the append would overflow);
* time: the segment is non-empty and the time it has waited exceeds
  ``max_segment_ms - roll_jitter_ms``. The time waited is measured with *record* time
  when the segment has one: ``max_timestamp_in_batches - rolling_based_timestamp`` where
  the rolling-based timestamp is the max timestamp of the segment's **first batch**
  (KIP-33); only when the segment has no timestamp (empty, or its first batch has
  max timestamp < 0) does Kafka fall back to the wall clock, ``now_ms - segment_created_ms``;
* either index is full;
* the incoming last offset cannot be stored relative to the base offset (> Int.MAX).

An empty segment is never rolled for time (no empty-segment roll); it can still roll for
a full index or offset overflow, as in Kafka. The log must reject an append larger than
``segment.bytes`` (RecordBatchTooLargeError) before asking, as Kafka's ``UnifiedLog.append``
does; otherwise the size rule would roll an empty segment.
"""
from __future__ import annotations

from protocol.deferred import dataclass


INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class RollParams:
    """What the log knows about the pending append (Kafka ``RollParams``).

    ``max_segment_ms`` is ``LogConfig.max_segment_ms`` (segment.ms, capped by
    max.compaction.lag.ms on compacted topics); ``roll_jitter_ms`` is the active segment's
    jitter drawn with :func:`roll_jitter` when the segment was created.
    """

    max_segment_bytes: int
    max_segment_ms: int
    roll_jitter_ms: int
    max_timestamp_in_batches: int
    max_offset_in_batches: int
    batches_size: int
    now_ms: int


def time_waited_for_roll(*, rolling_based_timestamp: int | None, segment_created_ms: int,
                         max_timestamp_in_batches: int, now_ms: int) -> int:
    """Age of the segment for rolling: record time when the first batch has a timestamp
    (>= 0), else wall time since the segment was created."""
    if rolling_based_timestamp is not None and rolling_based_timestamp >= 0:
        return max_timestamp_in_batches - rolling_based_timestamp
    return now_ms - segment_created_ms


def can_convert_to_relative_offset(segment_base_offset: int, offset: int) -> bool:
    """Whether ``offset`` fits the indexes' 4-byte relative offset."""
    rel = offset - segment_base_offset
    return 0 <= rel <= INT_MAX


def should_roll(*, segment_size: int, segment_base_offset: int,
                rolling_based_timestamp: int | None, segment_created_ms: int,
                offset_index_full: bool, time_index_full: bool, params: RollParams) -> bool:
    """Kafka's ``LogSegment.shouldRoll`` (see the module docstring)."""
    waited = time_waited_for_roll(
        rolling_based_timestamp=rolling_based_timestamp, segment_created_ms=segment_created_ms,
        max_timestamp_in_batches=params.max_timestamp_in_batches, now_ms=params.now_ms)
    reached_roll_ms = waited > params.max_segment_ms - params.roll_jitter_ms
    return (segment_size > params.max_segment_bytes - params.batches_size
            or (segment_size > 0 and reached_roll_ms)
            or offset_index_full
            or time_index_full
            or not can_convert_to_relative_offset(segment_base_offset, params.max_offset_in_batches))


def roll_jitter(segment_jitter_ms: int, rng, *, segment_ms: int | None = None) -> int:
    """A segment's random roll jitter (Kafka ``LogConfig.randomSegmentJitter``).

    0 when ``segment.jitter.ms`` is 0; otherwise uniform in ``[0, min(jitter, segment.ms))``.
    ``rng`` is a ``random.Random`` (seeded in tests).
    """
    if segment_jitter_ms <= 0:
        return 0
    bound = segment_jitter_ms if segment_ms is None else min(segment_jitter_ms, segment_ms)
    if bound <= 0:
        return 0
    return rng.randrange(bound)


__all__ = ["RollParams", "should_roll", "roll_jitter", "time_waited_for_roll",
           "can_convert_to_relative_offset"]
