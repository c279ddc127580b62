"""Transaction index (``<base_offset:020d>.txnindex``): the aborted transactions whose ABORT
marker sits in this segment (Kafka's ``TransactionIndex`` / ``AbortedTxn``).

Format: a plain sequence of 34-byte big-endian entries, no header, no preallocation::

    version             int16   0 (an entry of a higher version is refused)
    producer_id         int64
    first_offset        int64   first offset of the transaction (may lie in an earlier segment)
    last_offset         int64   offset of the ABORT marker
    last_stable_offset  int64   the partition's LSO once the abort was written

Entries are appended in marker order, so ``last_offset`` strictly increases. The file is
created at the first append (most segments never get one); ``reset`` truncates it to zero
bytes and ``truncate_to(o)`` drops the entries whose marker is at or past ``o``. A torn tail
shorter than an entry is ignored on read and overwritten by the next append.

Reads are served from memory: the entries are loaded on first use (a segment whose file
does not exist reads nothing) and kept in a column of last offsets, so
``collect_aborted_txns`` starts with a bisect instead of Kafka's walk from the first entry.
That is equivalent: an entry whose last offset is below the fetch offset has
``last_stable_offset <= last_offset + 1 <= fetch offset`` (the LSO at an abort is the first
offset of another open transaction, which began before the marker, or the marker's next
offset), so it can neither be collected nor end the search.

Crash stance: disposable like the other indexes; ``LogSegment.recover`` rebuilds it from the
log with the producer state at the segment's base offset.
"""
from __future__ import annotations

import os
import struct
from bisect import bisect_left
from pathlib import Path
from typing import NamedTuple

from storage.files import DEFAULT_FILE_OPS, FileOps, PathAttr
from storage.index import CorruptIndexError, IndexFile

ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = ENTRY.size          # 34
CURRENT_VERSION = 0


class AbortedTxn(NamedTuple):
    """One ``.txnindex`` entry (Kafka's ``AbortedTxn``, version 0)."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def to_bytes(self) -> bytes:
        return ENTRY.pack(CURRENT_VERSION, *self)


class TxnIndexSearchResult(NamedTuple):
    """Aborted transactions overlapping a fetch range, and whether the search may stop here
    (Kafka's ``TxnIndexSearchResult``)."""

    aborted_transactions: list
    is_complete: bool


def parse_entries(data: bytes, name: str = "transaction index") -> list[AbortedTxn]:
    """Whole entries of a ``.txnindex`` file's bytes (a torn tail is ignored)."""
    out = []
    for i in range(len(data) // ENTRY_SIZE):
        version, pid, first, last, lso = ENTRY.unpack_from(data, i * ENTRY_SIZE)
        if version > CURRENT_VERSION:
            raise CorruptIndexError(f"unexpected aborted transaction version {version} in {name}, "
                                    f"current version is {CURRENT_VERSION}")
        out.append(AbortedTxn(pid, first, last, lso))
    return out


class TransactionIndex(IndexFile):
    """A segment's ``.txnindex``. Not thread-safe (the cleaner writes only its own new one).

    ``exists`` tells whether the file is known to exist (the loader knows from its directory
    listing); None means unknown, found out with one stat at first use.
    """

    path = PathAttr()

    def __init__(self, path, base_offset: int, *, file_ops: FileOps | None = None,
                 exists: bool | None = None):
        self.path = path
        self.base_offset = base_offset
        self._ops = file_ops or DEFAULT_FILE_OPS
        self._exists = exists
        self._file = None       # CachedFile, made at the first write
        self._entries: list[AbortedTxn] | None = None   # None = not read yet
        self._lasts: list[int] = []
        self._unflushed = False

    # -- loading --------------------------------------------------------------------------
    def _file_exists(self) -> bool:
        if self._exists is None:
            self._exists = self._ops.exists(self._path)
        return self._exists

    def _load(self) -> list[AbortedTxn]:
        if self._entries is None:
            entries = []
            if self._file_exists():
                entries = parse_entries(self._ops.read_file(self._path), self._path)
            self._entries = entries
            self._lasts = [e.last_offset for e in entries]
        return self._entries

    def _w(self):
        if self._file is None:
            self._file = self._ops.open_cached(self._path, "rw+")
            self._exists = True
        self._unflushed = True
        return self._file

    # -- queries --------------------------------------------------------------------------
    @property
    def entries(self) -> int:
        return len(self._load())

    @property
    def is_empty(self) -> bool:
        """No entry (free when the file does not exist)."""
        if self._entries is None and not self._file_exists():
            return True
        return not self._load()

    @property
    def exists(self) -> bool:
        return self._file_exists()

    @property
    def last_offset(self) -> int | None:
        """Last offset of the last entry (None when empty)."""
        entries = self._load()
        return entries[-1].last_offset if entries else None

    def all_aborted_txns(self) -> list[AbortedTxn]:
        return list(self._load())

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> TxnIndexSearchResult:
        """Aborted transactions overlapping ``[fetch_offset, upper_bound_offset)``: last offset
        >= fetch offset and first offset < upper bound. Complete once an entry's LSO reaches
        the upper bound (no later segment can hold one that overlaps)."""
        if self._entries is None and not self._file_exists():
            return TxnIndexSearchResult([], False)
        entries = self._load()
        out = []
        # (an empty range is walked from the start, as Kafka does: see the module docstring)
        start = bisect_left(self._lasts, fetch_offset) if upper_bound_offset > fetch_offset else 0
        for i in range(start, len(entries)):
            e = entries[i]
            if e.last_offset >= fetch_offset and e.first_offset < upper_bound_offset:
                out.append(e)
            if e.last_stable_offset >= upper_bound_offset:
                return TxnIndexSearchResult(out, True)
        return TxnIndexSearchResult(out, False)

    # -- mutation -------------------------------------------------------------------------
    def append(self, txn: AbortedTxn) -> None:
        """Append an entry; its last offset must exceed the last entry's (ValueError)."""
        entries = self._load()
        if entries and entries[-1].last_offset >= txn.last_offset:
            raise ValueError(
                f"The last offset of appended transactions must increase sequentially, but "
                f"{txn.last_offset} is not greater than current last offset {entries[-1].last_offset} "
                f"of index {self._path}")
        self._w().pwrite(txn.to_bytes(), len(entries) * ENTRY_SIZE)
        entries.append(txn)
        self._lasts.append(txn.last_offset)

    def truncate_to(self, offset: int) -> None:
        """Drop every entry whose marker is at or past ``offset``."""
        entries = self._load()
        n = bisect_left(self._lasts, offset)
        if n < len(entries):
            self._w().truncate(n * ENTRY_SIZE)
            del entries[n:]
            del self._lasts[n:]

    def reset(self) -> None:
        """Remove every entry (the file, if any, is cut to zero bytes, as Kafka does)."""
        if self._file_exists():
            self._w().truncate(0)
        self._entries = []
        self._lasts = []

    def sanity_check(self) -> None:
        """Kafka's check: no entry's last offset below the base offset (CorruptIndexError);
        an entry of an unknown version is refused too."""
        for e in self._load():
            if e.last_offset < self.base_offset:
                raise CorruptIndexError(f"Last offset of aborted transaction {e} in index {self._path} "
                                        f"is less than start offset {self.base_offset}")

    # -- file lifecycle (flush, close_handler, update_parent_dir: IndexFile) --------------------------------
    def close(self) -> None:
        self.close_handler()

    def delete_if_exists(self) -> bool:
        self.close_handler()
        gone = self._ops.remove(self._path)
        self._exists = False
        self._entries, self._lasts = [], []
        return gone

    def rename_to(self, new_path) -> None:
        """Rename the file, if there is one, and follow it."""
        new_path = Path(new_path)
        try:
            if self._file_exists():
                self._ops.rename(self._path, new_path)
        finally:
            self.path = new_path
            self._follow_path()

    def __repr__(self) -> str:
        n = "?" if self._entries is None else len(self._entries)
        return f"TransactionIndex({os.path.basename(self._path)}, base={self.base_offset}, entries={n})"


__all__ = ["AbortedTxn", "TransactionIndex", "TxnIndexSearchResult", "parse_entries", "ENTRY_SIZE",
           "CURRENT_VERSION"]
