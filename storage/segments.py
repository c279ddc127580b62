"""The ordered set of a partition's segments, keyed by base offset (Kafka's ``LogSegments``).

A sorted list of base offsets plus a dict, searched with ``bisect``: floor/lower/higher
lookups are O(log n); adding the newest segment (a roll) is an append. The last segment is
the active one. Invariant: base offsets are unique and ascending; segment ``i`` holds only
offsets < segment ``i+1``'s base offset.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from typing import Iterator

from storage.segment import LogSegment


class LogSegments:
    def __init__(self) -> None:
        self._bases: list[int] = []
        self._by_base: dict[int, LogSegment] = {}
        # running max of largest_timestamp over all segments but the active one (which still
        # grows); rebuilt lazily after any change of the set. Non-decreasing, so bisectable.
        self._prefix_max_ts: list[int] | None = None

    # -- mutation --
    def add(self, segment: LogSegment) -> LogSegment | None:
        """Add (or replace) the segment at its base offset; returns the replaced one."""
        base = segment.base_offset
        self._prefix_max_ts = None
        old = self._by_base.get(base)
        if old is None:
            if not self._bases or base > self._bases[-1]:
                self._bases.append(base)
            else:
                insort(self._bases, base)
        self._by_base[base] = segment
        return old

    def remove(self, base_offset: int) -> LogSegment | None:
        self._prefix_max_ts = None
        seg = self._by_base.pop(base_offset, None)
        if seg is not None:
            i = bisect_left(self._bases, base_offset)
            del self._bases[i]
        return seg

    def clear(self) -> None:
        self._prefix_max_ts = None
        self._bases.clear()
        self._by_base.clear()

    def close(self) -> None:
        for seg in self.values():
            seg.close()

    # -- queries --
    def __len__(self) -> int:
        return len(self._bases)

    def __iter__(self) -> Iterator[LogSegment]:
        return iter(self.values())

    def __contains__(self, base_offset: int) -> bool:
        return base_offset in self._by_base

    @property
    def is_empty(self) -> bool:
        return not self._bases

    def get(self, base_offset: int) -> LogSegment | None:
        return self._by_base.get(base_offset)

    def base_offsets(self) -> list[int]:
        return list(self._bases)

    def from_first_reaching(self, ts: int) -> Iterator[LogSegment]:
        """Segments in order from the first whose largest timestamp is >= ``ts`` (KIP-33's
        starting point for a time lookup), found by bisecting the running max of largest
        timestamps: O(log n) in the number of segments, not a scan."""
        n = len(self._bases)
        if n == 0:
            return iter(())
        pm = self._prefix_max_ts
        if pm is None:
            pm, run = [], -(1 << 63)
            for b in self._bases[:-1]:
                run = max(run, self._by_base[b].largest_timestamp)
                pm.append(run)
            self._prefix_max_ts = pm
        i = bisect_left(pm, ts)  # == n - 1 when only the active segment can qualify
        return (self._by_base[b] for b in self._bases[i:])

    def values(self, from_offset: int | None = None, to_offset: int | None = None) -> list[LogSegment]:
        """All segments ascending, or those that may hold offsets in ``[from, to)``: the floor
        segment of ``from`` and every later one with base offset < ``to``."""
        if from_offset is None:
            return [self._by_base[b] for b in self._bases]
        if to_offset is not None:
            if to_offset == from_offset:
                return []
            if to_offset < from_offset:
                raise ValueError(f"invalid log segment range: requested from {from_offset} to {to_offset}")
        i = bisect_right(self._bases, from_offset) - 1
        if i < 0:
            i = 0
        j = len(self._bases) if to_offset is None else bisect_left(self._bases, to_offset)
        return [self._by_base[b] for b in self._bases[i:j]]

    def iter_from(self, offset: int) -> Iterator[LogSegment]:
        """The floor segment of ``offset`` (the first one if none) and every later one, lazily:
        a walk that usually stops early builds no list of the rest."""
        i = max(bisect_right(self._bases, offset) - 1, 0)
        bases, by_base = self._bases, self._by_base
        while i < len(bases):
            yield by_base[bases[i]]
            i += 1

    def non_active(self) -> list[LogSegment]:
        return [self._by_base[b] for b in self._bases[:-1]]

    @property
    def first_segment(self) -> LogSegment | None:
        return self._by_base[self._bases[0]] if self._bases else None

    @property
    def last_segment(self) -> LogSegment | None:
        return self._by_base[self._bases[-1]] if self._bases else None

    @property
    def active_segment(self) -> LogSegment:
        if not self._bases:
            raise LookupError("log has no segments")
        return self._by_base[self._bases[-1]]

    def floor_segment(self, offset: int) -> LogSegment | None:
        """Segment with the greatest base offset <= ``offset``."""
        i = bisect_right(self._bases, offset) - 1
        return self._by_base[self._bases[i]] if i >= 0 else None

    def lower_segment(self, offset: int) -> LogSegment | None:
        """Segment with the greatest base offset < ``offset``."""
        i = bisect_left(self._bases, offset) - 1
        return self._by_base[self._bases[i]] if i >= 0 else None

    def higher_segment(self, offset: int) -> LogSegment | None:
        """Segment with the least base offset > ``offset``."""
        i = bisect_right(self._bases, offset)
        return self._by_base[self._bases[i]] if i < len(self._bases) else None

    def ceiling_segment(self, offset: int) -> LogSegment | None:
        i = bisect_left(self._bases, offset)
        return self._by_base[self._bases[i]] if i < len(self._bases) else None

    def higher_segments(self, offset: int) -> list[LogSegment]:
        """Segments with base offset > the floor segment of ``offset`` (Kafka ``higherSegments``)."""
        floor = self.floor_segment(offset)
        start = floor.base_offset if floor is not None else offset
        i = bisect_right(self._bases, start)
        return [self._by_base[b] for b in self._bases[i:]]

    def next_base_offset_after(self, segment: LogSegment) -> int | None:
        nxt = self.higher_segment(segment.base_offset)
        return nxt.base_offset if nxt is not None else None

    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._by_base.values())


__all__ = ["LogSegments"]
