"""Offset index (``<base_offset:020d>.index``): offset -> file position in the segment's log.

Format: a sequence of 8-byte entries ``>ii`` = (offset - base_offset, position), strictly
increasing in offset and therefore in position. Sparse: the segment adds an entry at most
once per ``index.interval.bytes`` of appended log, keyed by a batch's *last* offset and
pointing at that batch's start.

``lookup(x)`` returns the greatest entry with offset <= x, or ``(base_offset, 0)`` when the
index is empty or x is below the first entry; the caller then scans batch headers forward
from that position (Kafka's ``OffsetIndex``).
"""
from __future__ import annotations

import struct
from bisect import bisect_left, bisect_right

from storage.index import (
    AbstractIndex, CorruptIndexError, IndexFullError, InvalidOffsetError, OffsetPosition,
    _be_int32_array,
)

_ENTRY = struct.Struct(">ii")


class OffsetIndex(AbstractIndex):
    """Kafka's ``OffsetIndex``. Columns: ``_rel`` (relative offsets), ``_pos`` (positions)."""

    ENTRY_SIZE = 8

    def _init_columns(self, data: bytes) -> None:
        both = _be_int32_array(data)
        self._rel = both[0::2]
        self._pos = both[1::2]

    def _truncate_columns(self, n: int) -> None:
        del self._rel[n:]
        del self._pos[n:]

    def _parse_entry_bytes(self, data: bytes) -> tuple:
        return _ENTRY.unpack_from(data)

    def _column_entry(self, n: int) -> tuple:
        return self._rel[n], self._pos[n]

    @property
    def last_entry(self) -> OffsetPosition:
        """Last entry, or ``(base_offset, 0)`` when empty (no full load needed)."""
        if self._entries == 0:
            return OffsetPosition(self.base_offset, 0)
        rel, pos = self._raw_entry(self._entries - 1)
        return OffsetPosition(self.base_offset + rel, pos)

    @property
    def last_offset(self) -> int:
        """Offset of the last entry, or the base offset when empty."""
        return self.last_entry.offset

    def entry(self, n: int) -> OffsetPosition:
        self._ensure_loaded()
        if n >= self._entries:
            raise IndexError(f"attempt to fetch entry {n} from index {self.path} with {self._entries} entries")
        return OffsetPosition(self.base_offset + self._rel[n], self._pos[n])

    def all_entries(self) -> list[OffsetPosition]:
        self._ensure_loaded()
        b = self.base_offset
        return [OffsetPosition(b + r, p) for r, p in zip(self._rel, self._pos)]

    def lookup(self, target_offset: int) -> OffsetPosition:
        """Greatest entry with offset <= target, or ``(base_offset, 0)``."""
        self._ensure_loaded()
        slot = bisect_right(self._rel, target_offset - self.base_offset) - 1
        if slot < 0:
            return OffsetPosition(self.base_offset, 0)
        return OffsetPosition(self.base_offset + self._rel[slot], self._pos[slot])

    def fetch_upper_bound_offset(self, start_position: int, fetch_size: int) -> OffsetPosition | None:
        """Smallest entry whose position >= start_position + fetch_size (an offset surely past the fetch)."""
        self._ensure_loaded()
        slot = bisect_left(self._pos, start_position + fetch_size)
        if slot >= self._entries:
            return None
        return OffsetPosition(self.base_offset + self._rel[slot], self._pos[slot])

    def append(self, offset: int, position: int) -> None:
        """Append (offset, position); offset must exceed the last entry's."""
        self._ensure_loaded()
        if self.is_full():
            raise IndexFullError(f"attempt to append to a full index (size = {self._entries}) {self.path}")
        if self._entries and offset <= self.base_offset + self._rel[-1]:
            raise InvalidOffsetError(
                f"attempt to append an offset {offset} to position {self._entries} no larger than the "
                f"last offset appended ({self.base_offset + self._rel[-1]}) to {self.path}")
        rel = self.relative_offset(offset)
        self._w().pwrite(_ENTRY.pack(rel, position), self._entries * 8)
        self._rel.append(rel)
        self._pos.append(position)
        self._entries += 1

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
        """Kafka's checks: last offset not below base; length a multiple of 8. O(1)."""
        if self._entries and self.last_offset < self.base_offset:
            raise CorruptIndexError(
                f"corrupt index {self.path}: non-zero size but the last offset is {self.last_offset}, "
                f"below the base offset {self.base_offset}")
        if self._length % self.ENTRY_SIZE:
            raise CorruptIndexError(
                f"index file {self.path} is corrupt: {self._length} bytes is not a multiple of {self.ENTRY_SIZE}")



__all__ = ["OffsetIndex"]
