"""Sparse per-segment indexes: the offset index (``.index``) and the time index (``.timeindex``).
(The transaction index, ``.txnindex``, is no sparse index: see ``txn_index``; it shares only
``IndexFile``, the write handle and its fsync bookkeeping.)

Shared shape (Kafka's ``AbstractIndex``):

* A file of fixed-size big-endian entries, preallocated to ``max_index_size`` rounded down
  to a multiple of the entry size (sparse zeros) at its first append (Kafka: at creation; a
  new index here is created empty, see ``AbstractIndex.__init__``), and trimmed to exactly
  its entries when the segment stops being active or is closed cleanly.
* The write handle's descriptor lives in the file cache (``storage.files.FileCache``): held
  while the index is written, closed when idle and the cache needs room, reopened on use.
* An existing file is taken at face value on open: ``entries = file length // entry size``
  (Kafka does the same; an untrimmed file after a crash therefore "holds" zero entries, which
  recovery resets). A cheap ``sanity_check`` catches the obvious breakage.
* Offsets are stored relative to the segment's base offset as int32; an offset that does not
  fit raises ``IndexOffsetOverflowError``.
* Entries live in memory as ``array`` columns (8 bytes per key) and are written through to the
  file with ``pwrite`` on append; lookups are ``bisect`` over the key column, no file I/O.
  The columns are loaded lazily on first use, so opening a log with many segments reads no
  index bytes until a lookup needs them (Kafka's ``LazyIndex``).
* No checksums: indexes are disposable and rebuilt from the log on recovery.
"""
from __future__ import annotations

import os
import sys
from array import array
from pathlib import Path
from typing import NamedTuple

from storage.errors import StorageError
from storage.files import DEFAULT_FILE_OPS, CachedFile, FileOps, PathAttr

_BIG_ENDIAN_HOST = sys.byteorder == "big"
INT32_MAX = 0x7FFFFFFF


class CorruptIndexError(StorageError):
    """An index file failed its sanity check (Kafka's ``CorruptIndexException``)."""


class InvalidOffsetError(StorageError):
    """An append would break the index's ordering (Kafka's ``InvalidOffsetException``)."""


class IndexOffsetOverflowError(StorageError):
    """An offset cannot be stored relative to the base offset as int32."""


class IndexFullError(StorageError):
    """Append to an index with no free slot."""


class OffsetPosition(NamedTuple):
    """Offset index entry: the batch holding ``offset`` starts at or after ``position``."""

    offset: int
    position: int


class TimestampOffset(NamedTuple):
    """Time index entry: every record with a timestamp > ``timestamp`` sits after ``offset``."""

    timestamp: int
    offset: int


def round_down_to_multiple(number: int, factor: int) -> int:
    return factor * (number // factor)


def _be_int32_array(data: bytes) -> array:
    arr = array("i")
    arr.frombytes(data)
    if not _BIG_ENDIAN_HOST:
        arr.byteswap()
    return arr


class IndexFile:
    """The write handle of an index file (``_file``, made at the first write; its
    descriptor lives in the file cache and may be closed while idle), its fsync
    bookkeeping and its directory, shared by every index kind."""

    _file: CachedFile | None
    _unflushed: bool

    def flush(self) -> None:
        """fsync what this object wrote since its last flush (nothing to do otherwise)."""
        if self._file is not None and self._unflushed:
            self._file.fsync()
            self._unflushed = False

    def close_handler(self) -> None:
        if self._file is not None:
            f, self._file = self._file, None
            f.close()

    def _follow_path(self) -> None:
        """The write handle reopens by the index's current path (after a rename)."""
        if self._file is not None:
            self._file.path = self._path

    def update_parent_dir(self, parent) -> None:
        self.path = os.path.join(os.fspath(parent), os.path.basename(self._path))
        self._follow_path()


class AbstractIndex(IndexFile):
    """State and file handling common to both index kinds.

    Invariants: ``0 <= entries <= max_entries == length // ENTRY_SIZE``; the first
    ``entries * ENTRY_SIZE`` bytes of the file hold exactly the in-memory entries. A resize
    deferred by ``resize_when_used`` is applied before anything reads the capacity.
    """

    ENTRY_SIZE = 0
    path = PathAttr()   # self._path: the same path as a str

    def __init__(self, path, base_offset: int, max_index_size: int = -1, *,
                 file_ops: FileOps | None = None):
        self.path = path
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self._ops = file_ops or DEFAULT_FILE_OPS
        self._file: CachedFile | None = None
        self._pending_size: int | None = None   # see resize_when_used
        # True once this object has written the file and not fsynced it since; an index it
        # never wrote is as durable as it was found (see flush).
        self._unflushed = False
        try:
            self._length = self._ops.size(self._path)
        except FileNotFoundError:
            if max_index_size < self.ENTRY_SIZE:
                raise ValueError(f"invalid max index size {max_index_size}") from None
            # Created empty and grown to max_index_size at its first append (resize_when_used):
            # a new, never-written index then needs no fsync and no trim at shutdown, where
            # thousands of idle new partitions were two fsyncs each. An empty file holds no
            # data to make durable; its name becomes durable with the directory's.
            self._file = self._ops.open_cached(self._path, "rw+")
            self._length = 0
            self._entries = 0
            self._loaded = True
            self._init_columns(b"")
            self._after_truncate()
            self._pending_size = max_index_size
        else:
            self._entries = self._length // self.ENTRY_SIZE
            self._loaded = False
        self._max_entries = self._length // self.ENTRY_SIZE


    # -- subclass hooks --
    def _init_columns(self, data: bytes) -> None:
        raise NotImplementedError

    def _parse_entry_bytes(self, data: bytes) -> tuple:
        raise NotImplementedError

    def _column_entry(self, n: int) -> tuple:
        raise NotImplementedError

    def _raw_entry(self, n: int) -> tuple:
        """Entry ``n`` as stored (relative offsets), from memory or, if the columns are not
        loaded yet, with one small pread (so checks of the first/last entry stay O(1))."""
        if self._loaded:
            return self._column_entry(n)
        fd = self._ops.open(self._path, "r")
        try:
            data = self._ops.pread(fd, self.ENTRY_SIZE, n * self.ENTRY_SIZE)
        finally:
            self._ops.close(fd)
        if len(data) < self.ENTRY_SIZE:
            self._ensure_loaded()
            return self._column_entry(n)
        return self._parse_entry_bytes(data)

    def _truncate_columns(self, n: int) -> None:
        raise NotImplementedError

    def _after_truncate(self) -> None:
        pass

    # -- loading and file handle --
    def _ensure_loaded(self) -> None:
        if not self._loaded:
            nbytes = self._entries * self.ENTRY_SIZE
            data = b""
            if nbytes:
                fd = self._ops.open(self._path, "r")
                try:
                    data = self._ops.pread(fd, nbytes, 0)
                finally:
                    self._ops.close(fd)
            if len(data) < nbytes:  # file shrank under us: believe the file
                self._entries = len(data) // self.ENTRY_SIZE
                data = data[: self._entries * self.ENTRY_SIZE]
            self._init_columns(data)
            self._loaded = True
            self._after_truncate()

    def _w(self) -> CachedFile:
        """The handle to write through; every write goes through here, so it marks the index
        as needing an fsync."""
        if self._file is None:
            self._file = self._ops.cached(self._path, "rw")
        self._unflushed = True
        return self._file

    # -- properties --
    @property
    def entries(self) -> int:
        return self._entries

    @property
    def max_entries(self) -> int:
        if self._pending_size is not None:
            self._settle()
        return self._max_entries

    @property
    def length(self) -> int:
        """Current file length in bytes (preallocated or trimmed)."""
        if self._pending_size is not None:
            self._settle()
        return self._length

    @property
    def size_in_bytes(self) -> int:
        """Bytes used by entries."""
        return self._entries * self.ENTRY_SIZE

    def is_full(self) -> bool:
        return self._entries >= self.max_entries

    def to_relative(self, offset: int) -> int | None:
        rel = offset - self.base_offset
        if rel < 0 or rel > INT32_MAX:
            return None
        return rel

    def relative_offset(self, offset: int) -> int:
        rel = self.to_relative(offset)
        if rel is None:
            raise IndexOffsetOverflowError(f"integer overflow for offset {offset} ({self.path})")
        return rel

    def can_append_offset(self, offset: int) -> bool:
        return self.to_relative(offset) is not None

    # -- mutation --
    def _truncate_to_entries(self, n: int) -> None:
        if n == 0 and not self._loaded:  # no need to read what is about to be dropped
            self._init_columns(b"")
            self._loaded = True
        self._ensure_loaded()
        self._entries = n
        self._truncate_columns(n)
        self._after_truncate()

    def truncate(self) -> None:
        """Remove every entry (the file keeps its length)."""
        self._truncate_to_entries(0)

    def resize(self, new_size: int) -> bool:
        """Set the file length to ``new_size`` rounded down to whole entries; True if it changed."""
        self._pending_size = None
        rounded = round_down_to_multiple(new_size, self.ENTRY_SIZE)
        if self._length == rounded:
            return False
        self._w().truncate(rounded)
        self._length = rounded
        self._max_entries = rounded // self.ENTRY_SIZE
        if self._entries > self._max_entries:
            self._truncate_to_entries(self._max_entries)
        return True

    def resize_when_used(self, new_size: int) -> None:
        """``resize(new_size)`` when the index is next appended to or asked for its capacity
        (``is_full``, ``max_entries``, ``length``); a shrink happens at once.

        Kafka grows the active segment's indexes back to ``segment.index.bytes`` when it loads
        a log. Most partitions of a broker with many are idle after a start, and the open and
        ftruncate per index (and the trim again at shutdown) were a sixth of loading each one;
        an index never appended to keeps its trimmed file, which is what a clean close leaves.
        """
        if round_down_to_multiple(new_size, self.ENTRY_SIZE) > self._length:
            self._pending_size = new_size
        else:
            self.resize(new_size)

    def _settle(self) -> None:
        self.resize(self._pending_size)

    def trim_to_valid_size(self) -> None:
        """Cut the preallocated tail so the file holds exactly its entries."""
        self.resize(self._entries * self.ENTRY_SIZE)

    def reset(self) -> None:
        """Remove all entries and grow the file back to ``max_index_size`` (at the first
        append that needs the room: recovering thousands of small segments after a kill -9
        grew and trimmed every index file again for nothing)."""
        self.truncate()
        self.resize_when_used(self.max_index_size)

    def _capacity_now(self) -> int:
        """Entries the file can take, counting a deferred growth without applying it."""
        size = self._pending_size if self._pending_size is not None else self._length
        return round_down_to_multiple(size, self.ENTRY_SIZE) // self.ENTRY_SIZE

    def close(self) -> None:
        """Trim and release the file (Kafka: ``close`` = ``trimToValidSize`` + unmap)."""
        self._pending_size = None
        if self._length != self._entries * self.ENTRY_SIZE and self._ops.exists(self._path):
            self.trim_to_valid_size()
        self.close_handler()

    def delete_if_exists(self) -> bool:
        self.close_handler()
        return self._ops.remove(self._path)

    def rename_to(self, new_path) -> None:
        new_path = Path(new_path)
        try:
            self._ops.rename(self.path, new_path)
        finally:
            self.path = new_path
            self._follow_path()

    def sanity_check(self) -> None:
        raise NotImplementedError

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({os.path.basename(self._path)}, base={self.base_offset}, "
                f"entries={self._entries}/{self._max_entries})")


from storage.index.offset_index import OffsetIndex  # noqa: E402
from storage.index.time_index import TimeIndex  # noqa: E402

__all__ = [
    "IndexFile", "AbstractIndex", "OffsetIndex", "TimeIndex", "OffsetPosition", "TimestampOffset",
    "CorruptIndexError", "InvalidOffsetError", "IndexOffsetOverflowError", "IndexFullError",
    "round_down_to_multiple",
]
