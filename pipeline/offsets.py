"""Offset ranges for Spark's kafka source options, as plain functions (no Spark, no sockets).

The options and their meaning follow Spark's ``kafka`` source:
- ``startingOffsets``: ``earliest``, ``latest`` or JSON ``{"topic": {"0": offset}}`` with -2 =
  earliest and -1 = latest;
- ``startingOffsetsByTimestamp``: JSON ``{"topic": {"0": epoch_ms}}``; ``startingTimestamp``:
  one epoch ms for every partition (``startingTimestamp`` wins over both others,
  ``startingOffsetsByTimestamp`` over ``startingOffsets``);
- a time resolves to the first offset whose timestamp is >= it (KIP-33, through ListOffsets);
  when none exists, ``startingOffsetsByTimestampStrategy`` decides: ``error`` (default) fails,
  ``latest`` starts at the end;
- ``endingOffsets`` (batch only): ``latest`` or JSON as above; ``endingOffsetsByTimestamp``
  (JSON of epoch ms) and ``endingTimestamp`` (one for every partition): the read ends before the
  first offset whose timestamp is >= the time, or at the latest offset when there is none
  (precedence as for the starting options);
- ``maxOffsetsPerTrigger``: at most this many offsets per micro-batch, split over the
  partitions in proportion to what each has pending (as Spark's rate limit).

Offsets are keyed ``"topic:partition"`` so they serialise as Spark streaming offsets.
"""
from __future__ import annotations

import json
import math
from typing import Callable, Mapping

EARLIEST, LATEST = -2, -1
TP = tuple[str, int]


class OffsetResolutionError(RuntimeError):
    pass


def key(tp: TP) -> str:
    return f"{tp[0]}:{tp[1]}"


def unkey(k: str) -> TP:
    t, p = k.rsplit(":", 1)
    return t, int(p)


def _per_partition(spec: str, what: str) -> dict[TP, int]:
    try:
        d = json.loads(spec)
        return {(t, int(p)): int(v) for t, parts in d.items() for p, v in parts.items()}
    except (ValueError, AttributeError, TypeError) as exc:
        raise OffsetResolutionError(f"{what} must be JSON like {{\"topic\": {{\"0\": 123}}}}: {exc}") from None


def normalize(options: Mapping[str, str]) -> dict[str, str]:
    """Spark's options are case-insensitive (a data source may see them lower-cased)."""
    return {k.lower(): v for k, v in options.items()}


def starting_targets(options: Mapping[str, str], partitions: list[TP], default: int) -> dict[TP, tuple[str, int]]:
    """Per partition ("offset", n) or ("timestamp", ms), from the options (Spark's precedence)."""
    options = normalize(options)
    if "startingtimestamp" in options:
        return {tp: ("timestamp", int(options["startingtimestamp"])) for tp in partitions}
    if "startingoffsetsbytimestamp" in options:
        ts = _per_partition(options["startingoffsetsbytimestamp"], "startingOffsetsByTimestamp")
        missing = [tp for tp in partitions if tp not in ts]
        if missing:
            raise OffsetResolutionError(f"startingOffsetsByTimestamp has no timestamp for {missing}")
        return {tp: ("timestamp", ts[tp]) for tp in partitions}
    spec = options.get("startingoffsets")
    if spec is None:
        return {tp: ("offset", default) for tp in partitions}
    if spec in ("earliest", "latest"):
        return {tp: ("offset", EARLIEST if spec == "earliest" else LATEST) for tp in partitions}
    offs = _per_partition(spec, "startingOffsets")
    return {tp: ("offset", offs.get(tp, default)) for tp in partitions}


def resolve(targets: Mapping[TP, tuple[str, int]], *, watermarks: Callable[[TP], tuple[int, int]],
            for_times: Callable[[dict[TP, int]], dict[TP, int]], strategy: str = "error") -> dict[TP, int]:
    """Concrete offsets. ``watermarks(tp)`` -> (log start, log end); ``for_times({tp: ms})`` ->
    {tp: offset or -1} (ListOffsets)."""
    if strategy not in ("error", "latest"):
        raise OffsetResolutionError("startingOffsetsByTimestampStrategy must be 'error' or 'latest'")
    out: dict[TP, int] = {}
    by_time = {tp: v for tp, (kind, v) in targets.items() if kind == "timestamp"}
    found = for_times(by_time) if by_time else {}
    for tp, (kind, v) in targets.items():
        if kind == "timestamp":
            off = found.get(tp, -1)
            if off < 0:
                if strategy == "error":
                    # Spark's kafka source's words, so a job reads the same error from either source
                    raise OffsetResolutionError(
                        f"No offset matched from request of topic-partition {tp[0]}-{tp[1]} and timestamp {v}. "
                        f"(set startingOffsetsByTimestampStrategy=latest to start at the end)")
                off = watermarks(tp)[1]
            out[tp] = off
        elif v == EARLIEST:
            out[tp] = watermarks(tp)[0]
        elif v == LATEST:
            out[tp] = watermarks(tp)[1]
        else:
            out[tp] = v
    return out


def ending_offsets(options: Mapping[str, str], partitions: list[TP],
                   watermarks: Callable[[TP], tuple[int, int]],
                   for_times: Callable[[dict[TP, int]], dict[TP, int]] | None = None) -> dict[TP, int]:
    """Exclusive end offsets of a batch read. By time: ``for_times`` as in ``resolve``; a
    partition with no record at or after the time ends at its latest offset."""
    options = normalize(options)
    by_time: dict[TP, int] | None = None
    if "endingtimestamp" in options:
        by_time = {tp: int(options["endingtimestamp"]) for tp in partitions}
    elif "endingoffsetsbytimestamp" in options:
        ts = _per_partition(options["endingoffsetsbytimestamp"], "endingOffsetsByTimestamp")
        missing = [tp for tp in partitions if tp not in ts]
        if missing:
            raise OffsetResolutionError(f"endingOffsetsByTimestamp has no timestamp for {missing}")
        by_time = {tp: ts[tp] for tp in partitions}
    if by_time is not None:
        if for_times is None:
            raise OffsetResolutionError("ending offsets by timestamp need a ListOffsets lookup")
        found = for_times(by_time)
        return {tp: (found[tp] if found.get(tp, -1) >= 0 else watermarks(tp)[1]) for tp in partitions}
    spec = options.get("endingoffsets", "latest")
    if spec == "latest":
        return {tp: watermarks(tp)[1] for tp in partitions}
    offs = _per_partition(spec, "endingOffsets")
    return {tp: (watermarks(tp)[1] if offs.get(tp, LATEST) == LATEST else offs[tp]) for tp in partitions}


def rate_limit(start: Mapping[TP, int], latest: Mapping[TP, int], max_offsets: int | None) -> dict[TP, int]:
    """End offsets for one micro-batch: all of ``latest``, or at most ``max_offsets`` in total,
    shared in proportion to each partition's backlog (never less than 1 when it has one)."""
    pending = {tp: max(latest[tp] - start.get(tp, latest[tp]), 0) for tp in latest}
    total = sum(pending.values())
    if max_offsets is None or total <= max_offsets:
        return dict(latest)
    out = {}
    for tp, n in pending.items():
        share = min(n, max(1, math.floor(max_offsets * n / total))) if n else 0
        out[tp] = start.get(tp, latest[tp]) + share
    return out


def earliest_at_or_after(listed: int, in_table: int) -> int:
    """Where a read from a time starts on a topic that is also a table: the broker's answer
    (``listed``, offsets-for-times: where Spark's kafka source starts), or the table's lowest
    offset at or after the time when that is lower (the log's retention deleted those records,
    the table keeps them); -1 where neither has one."""
    found = [o for o in (listed, in_table) if o >= 0]
    return min(found) if found else -1
