"""Time index (``<base_offset:020d>.timeindex``): timestamp -> offset (KIP-33).

Format: a sequence of 12-byte entries ``>qi`` = (timestamp, offset - base_offset). An entry
(T, O) means "the largest timestamp among records up to O is T", so any record with a
timestamp > T comes after O. Within one file entries are non-decreasing in both timestamp
and offset (not across segments: CreateTime may go backwards between segments).

Appends go through ``maybe_append``: an entry is written only when its timestamp is greater
than the last entry's (so v0 data, all -1, leaves the index empty); an offset smaller than
the last entry's is an error, an equal (timestamp, offset) is silently ignored because the
roll/close entry may repeat the last one.

The last slot is reserved for the entry written when the segment rolls or closes
(``maybe_append(..., skip_full_check=True)``), hence ``is_full`` is ``entries >= max - 1``.

``lookup(T)`` returns the greatest entry with timestamp <= T, or ``(-1, base_offset)`` when
the index is empty or T is below the first entry.
"""
from __future__ import annotations

import struct
from array import array
from bisect import bisect_right

from storage.index import (
    AbstractIndex, CorruptIndexError, IndexFullError, InvalidOffsetError, TimestampOffset,
)

_ENTRY = struct.Struct(">qi")
NO_TIMESTAMP = -1


class TimeIndex(AbstractIndex):
    """Kafka's ``TimeIndex``. Columns: ``_ts`` (timestamps), ``_rel`` (relative offsets)."""

    ENTRY_SIZE = 12

    def _init_columns(self, data: bytes) -> None:
        ts = array("q")
        rel = array("i")
        if data:
            for t, r in _ENTRY.iter_unpack(data):
                ts.append(t)
                rel.append(r)
        self._ts = ts
        self._rel = rel
        self._last = None

    def _truncate_columns(self, n: int) -> None:
        del self._ts[n:]
        del self._rel[n:]

    def _after_truncate(self) -> None:
        if self._entries:
            self._last = TimestampOffset(self._ts[-1], self.base_offset + self._rel[-1])
        else:
            self._last = TimestampOffset(NO_TIMESTAMP, self.base_offset)

    def is_full(self) -> bool:
        # The last slot is kept for the roll/close entry.
        return self._entries >= self.max_entries - 1

    def _parse_entry_bytes(self, data: bytes) -> tuple:
        return _ENTRY.unpack_from(data)

    def _column_entry(self, n: int) -> tuple:
        return self._ts[n], self._rel[n]

    @property
    def last_entry(self) -> TimestampOffset:
        """Last entry, or ``(-1, base_offset)`` when empty (no full load needed)."""
        if self._loaded:
            return self._last
        if self._entries == 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        ts, rel = self._raw_entry(self._entries - 1)
        return TimestampOffset(ts, self.base_offset + rel)

    def entry(self, n: int) -> TimestampOffset:
        self._ensure_loaded()
        if n >= self._entries:
            raise IndexError(f"attempt to fetch entry {n} from time index {self.path} with {self._entries} entries")
        return TimestampOffset(self._ts[n], self.base_offset + self._rel[n])

    def all_entries(self) -> list[TimestampOffset]:
        self._ensure_loaded()
        b = self.base_offset
        return [TimestampOffset(t, b + r) for t, r in zip(self._ts, self._rel)]

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """Greatest entry with timestamp <= target, or ``(-1, base_offset)``."""
        self._ensure_loaded()
        slot = bisect_right(self._ts, target_timestamp) - 1
        if slot < 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return TimestampOffset(self._ts[slot], self.base_offset + self._rel[slot])

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Append (timestamp, offset) if timestamp grew past the last entry's.

        Raises IndexFullError when full (unless ``skip_full_check``), InvalidOffsetError when
        ``offset`` is below the last entry's, ValueError when ``timestamp`` is below it.
        """
        self._ensure_loaded()
        if not skip_full_check and self.is_full():
            raise IndexFullError(f"attempt to append to a full time index (size = {self._entries}) {self.path}")
        last = self._last
        if self._entries:
            if offset < last.offset:
                raise InvalidOffsetError(
                    f"attempt to append an offset ({offset}) to slot {self._entries} no larger than the "
                    f"last offset appended ({last.offset}) to {self.path}")
            if timestamp < last.timestamp:
                raise ValueError(
                    f"attempt to append a timestamp ({timestamp}) to slot {self._entries} no larger than "
                    f"the last timestamp appended ({last.timestamp}) to {self.path}")
        if timestamp > last.timestamp:
            rel = self.relative_offset(offset)
            if self._entries >= self._capacity_now():
                # Only reachable with skip_full_check on an index trimmed to its entries:
                # grow by one slot rather than write past the end.
                self.resize((self._entries + 1) * self.ENTRY_SIZE)
            self._w().pwrite(_ENTRY.pack(timestamp, rel), self._entries * 12)
            self._ts.append(timestamp)
            self._rel.append(rel)
            self._entries += 1
            self._last = TimestampOffset(timestamp, offset)

    def truncate_to(self, offset: int) -> None:
        """Drop every entry with offset >= ``offset``."""
        self._ensure_loaded()
        rel = offset - self.base_offset
        slot = bisect_right(self._rel, rel) - 1
        if slot < 0:
            n = 0
        elif self._rel[slot] == rel:
            n = slot
        else:
            n = slot + 1
        self._truncate_to_entries(n)

    def sanity_check(self) -> None:
        """Kafka's checks: last ts >= first ts, last offset >= base, length multiple of 12. O(1)."""
        if self._entries:
            last = self.last_entry
            first_ts = self._raw_entry(0)[0]
            if last.timestamp < first_ts:
                raise CorruptIndexError(
                    f"corrupt time index {self.path}: last timestamp {last.timestamp} is less than the "
                    f"first timestamp {first_ts}")
            if last.offset < self.base_offset:
                raise CorruptIndexError(
                    f"corrupt time index {self.path}: last offset {last.offset} is less than the base "
                    f"offset {self.base_offset}")
        if self._length % self.ENTRY_SIZE:
            raise CorruptIndexError(
                f"time index file {self.path} is corrupt: {self._length} bytes is not a multiple of 12")


__all__ = ["TimeIndex", "NO_TIMESTAMP"]
