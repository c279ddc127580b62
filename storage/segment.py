"""One log segment: ``<base_offset:020d>.log`` plus its ``.index``, ``.timeindex`` and, once a
transaction aborted in it, ``.txnindex`` (see ``storage.index.txn_index``).

The ``.log`` file is a plain concatenation of magic-2 record batches exactly as they travel
on the wire (Kafka's ``FileRecords``): no segment header, no padding. Every batch in a
segment has offsets >= the segment's base offset and < the next segment's base offset, and
its last offset fits in ``base_offset + int32`` (the indexes store relative offsets).

Index upkeep on append (Kafka's ``LogSegment.append``, per batch): a counter of log bytes
appended since the last index entry; when it exceeds ``index.interval.bytes`` before a batch
is written, that batch gets an offset index entry (its last offset -> its start position)
and the time index gets (max timestamp so far, offset of that max) if the timestamp grew.
When the segment stops being active (roll) or closes, a final time index entry (largest
timestamp, offset of the largest timestamp) is added in the slot reserved for it, and both
indexes are trimmed to their entries.

Reads never decode records: the offset index gives a start position, then only 61-byte
batch headers are parsed (read in windows) until the batch holding the target offset;
data leaves as raw bytes read with ``pread``. Only ``find_offset_by_timestamp`` looks inside
one batch (record timestamps), as Kafka does.

The transaction index gets an entry when an ABORT marker that completes a transaction is
appended here (``update_txn_index``, called by the log with the LSO it computed); it is
truncated, renamed, flushed and deleted with the segment.

Crash stance: the ``.log`` is the truth; indexes are rebuilt by ``recover()``, which checks
every batch's CRC and truncates at the first bad or torn batch (the transaction index is
rebuilt by the caller's ``on_batch``, which holds the producer state it needs).
"""
from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Callable, Iterator, NamedTuple

from protocol.deferred import dataclass
from protocol.errors import CorruptRecordError
from protocol.records.batch import (
    HEADER_SIZE, LOG_OVERHEAD, MIN_BATCH_LENGTH, BatchHeader, compute_crc, iter_batch_positions,
    read_header,
)
from protocol.records.record import first_record_reaching, iter_record_timestamps
from storage.clock import Clock, SystemClock
from storage.errors import KafkaStorageError, StorageError
from storage.files import DEFAULT_FILE_OPS, FileOps, PathAttr
from storage.index import (
    INT32_MAX, InvalidOffsetError, OffsetIndex, OffsetPosition, TimeIndex, TimestampOffset,
)
from storage.index.txn_index import AbortedTxn, TransactionIndex, TxnIndexSearchResult

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
DELETED_SUFFIX = ".deleted"
INDEX_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)

NO_TIMESTAMP = -1
_HEADER_WINDOW = 16 * 1024          # bytes read at once while walking batch headers
_RECOVERY_WINDOW = 1024 * 1024      # bytes read at once while CRC-checking batches
_I32 = struct.Struct(">i")


class LogSegmentOffsetOverflowError(StorageError):
    """An offset that does not fit ``base_offset + int32`` was appended to this segment."""

    def __init__(self, segment: "LogSegment", offset: int):
        super().__init__(f"detected offset overflow at offset {offset} in segment {segment}")
        self.segment = segment
        self.offset = offset


# ---------------------------------------------------------------------------------------------
# file names (Kafka's LogFileUtils)

def filename_prefix(offset: int) -> str:
    return f"{offset:020d}"


def log_file(dir, offset: int, suffix: str = "") -> Path:
    return Path(dir) / (filename_prefix(offset) + LOG_SUFFIX + suffix)


def offset_index_file(dir, offset: int, suffix: str = "") -> Path:
    return Path(dir) / (filename_prefix(offset) + INDEX_SUFFIX + suffix)


def time_index_file(dir, offset: int, suffix: str = "") -> Path:
    return Path(dir) / (filename_prefix(offset) + TIME_INDEX_SUFFIX + suffix)


def txn_index_file(dir, offset: int, suffix: str = "") -> Path:
    return Path(dir) / (filename_prefix(offset) + TXN_INDEX_SUFFIX + suffix)


def offset_from_filename(name: str) -> int:
    """Base offset encoded in a segment file name (``ValueError`` if there is none)."""
    return int(name[: name.index(".")])


def is_log_file(name: str) -> bool:
    return name.endswith(LOG_SUFFIX)


def is_index_file(name: str) -> bool:
    return name.endswith(INDEX_SUFFIXES)


# ---------------------------------------------------------------------------------------------
# results

class LogOffsetPosition(NamedTuple):
    """Where the batch holding an offset sits: its last offset, start position and size."""

    offset: int
    position: int
    size: int


class TimestampAndOffset(NamedTuple):
    """Answer of a timestamp lookup (Kafka's ``FileRecords.TimestampAndOffset``)."""

    timestamp: int
    offset: int
    leader_epoch: int  # -1 when unknown


@dataclass
class SegmentRead:
    """Raw bytes of whole batches read from one segment.

    ``position`` is where the batch holding the requested offset starts; ``data`` (bytes, or a
    read-only memoryview of them when the read was cut back to a batch boundary) holds
    whole batches only (empty when ``max_size`` cannot fit the first batch and
    ``min_one`` is false); ``first_batch_size`` is that first batch's size.
    """

    start_offset: int
    position: int
    data: bytes | memoryview
    first_batch_size: int

    @property
    def first_entry_incomplete(self) -> bool:
        return not self.data and self.first_batch_size > 0


# ---------------------------------------------------------------------------------------------

class LogSegment:
    """A segment of a partition log (Kafka's ``LogSegment``). Not thread-safe.

    Invariants: ``size`` is the byte length of the ``.log`` file; batches are whole and
    contiguous from position 0 (after ``recover``); ``max_timestamp_so_far`` is the largest
    batch max timestamp appended (or -1); its offset is the last offset of the first batch
    that reached it.
    """

    dir = PathAttr()        # self._dir: the same path as a str
    log_path = PathAttr()   # self._log_path

    def __init__(self, dir, base_offset: int, *, index_interval_bytes: int, max_index_size: int,
                 clock: Clock | None = None, file_ops: FileOps | None = None,
                 roll_jitter_ms: int = 0, suffix: str = "", file_already_exists: bool = False,
                 txn_index_exists: bool | None = None):
        self.dir = dir
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.max_index_size = max_index_size
        self.roll_jitter_ms = roll_jitter_ms
        self._clock = clock or SystemClock()
        self._ops = file_ops or DEFAULT_FILE_OPS
        prefix = os.path.join(self._dir, filename_prefix(base_offset))
        self.log_path = prefix + LOG_SUFFIX + suffix
        # The descriptor lives in the file cache: an existing segment opens it at its first
        # read or write (a stat gives the size), so loading thousands of partitions opens
        # nothing; a new one enters the cache with the descriptor that created it.
        if file_already_exists:
            self._file = self._ops.cached(self._log_path, "rw")
            self._size = self._ops.size(self._log_path)
        else:
            self._file = self._ops.open_cached(self._log_path, "rw+")
            try:
                self._size = self._file.fsize()
            except BaseException:
                self._file.close()
                raise
        self.offset_index = OffsetIndex(prefix + INDEX_SUFFIX + suffix, base_offset,
                                        max_index_size, file_ops=self._ops)
        self.time_index = TimeIndex(prefix + TIME_INDEX_SUFFIX + suffix, base_offset,
                                    max_index_size, file_ops=self._ops)
        # The transaction index object is made when first needed (most segments never have
        # the file: thousands of them are opened at start-up). A new segment has no file (a
        # roll removes stale ones first); whether an existing one has is known from the
        # loader's listing, or else found out at first use.
        self._txn: TransactionIndex | None = None
        self._txn_exists = txn_index_exists if file_already_exists else False
        self.created_ms = self._clock.now_ms()
        self._bytes_since_last_index_entry = 0
        self._max_ts: TimestampOffset | None = None          # None = not read yet
        self._rolling_ts: int | None = None                   # first batch's max timestamp
        self._rolling_ts_known = False
        self._next_offset: int | None = None                  # None = not computed yet
        self._dirty_tail = False                              # a failed append left bytes past size
        # True while the log file may hold bytes not yet fsynced: a file found on disk is
        # unknown until a flush (the loader vouches for files a clean shutdown closed), a
        # new one is empty; every write sets it (see flush).
        self._unflushed = file_already_exists
        self._closed = False

    @classmethod
    def open(cls, dir, base_offset: int, *, index_interval_bytes: int, max_index_size: int,
             clock: Clock | None = None, file_ops: FileOps | None = None, roll_jitter_ms: int = 0,
             suffix: str = "", file_already_exists: bool = False,
             txn_index_exists: bool | None = None) -> "LogSegment":
        return cls(dir, base_offset, index_interval_bytes=index_interval_bytes,
                   max_index_size=max_index_size, clock=clock, file_ops=file_ops,
                   roll_jitter_ms=roll_jitter_ms, suffix=suffix,
                   file_already_exists=file_already_exists, txn_index_exists=txn_index_exists)

    # -- basic facts ------------------------------------------------------------------------
    @property
    def size(self) -> int:
        return self._size

    @property
    def file_ops(self) -> FileOps:
        return self._ops

    def __repr__(self) -> str:
        ts = self._max_ts.timestamp if self._max_ts is not None else "?"
        return f"LogSegment(baseOffset={self.base_offset}, size={self._size}, largestRecordTimestamp={ts})"

    def can_convert_to_relative_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT32_MAX

    def _read_max(self) -> TimestampOffset:
        if self._max_ts is None:
            self._max_ts = self.time_index.last_entry
        return self._max_ts

    @property
    def max_timestamp_so_far(self) -> int:
        return self._read_max().timestamp

    @property
    def offset_of_max_timestamp_so_far(self) -> int:
        return self._read_max().offset

    def read_max_timestamp_and_offset_so_far(self) -> TimestampOffset:
        return self._read_max()

    @property
    def largest_record_timestamp(self) -> int | None:
        ts = self.max_timestamp_so_far
        return ts if ts >= 0 else None

    @property
    def largest_timestamp(self) -> int:
        """Largest record timestamp, or the ``.log`` last-modified time when there is none."""
        ts = self.max_timestamp_so_far
        return ts if ts >= 0 else self.last_modified_ms

    @property
    def last_modified_ms(self) -> int:
        return self._ops.mtime_ms(self._log_path)

    def set_last_modified(self, ms: int) -> None:
        for p in (self.log_path, self.offset_index.path, self.time_index.path):
            if self._ops.exists(p):
                self._ops.set_mtime_ms(p, ms)

    # -- header walking ---------------------------------------------------------------------
    def iter_headers(self, start: int = 0, end: int | None = None) -> Iterator[tuple[int, BatchHeader]]:
        """``(position, header)`` of each whole batch in ``[start, end)``, reading headers only.

        Stops at a torn tail; raises CorruptRecordError on an impossible batch length or a
        magic other than 2 (as Kafka's ``FileLogInputStream`` does).
        """
        if end is None:
            end = self._size
        pos = start
        buf = b""
        buf_start = pos
        pread = self._file.pread
        while end - pos >= LOG_OVERHEAD:
            off = pos - buf_start
            if off < 0 or off + HEADER_SIZE > len(buf):
                buf = pread(min(_HEADER_WINDOW, end - pos), pos)
                buf_start = pos
                off = 0
                if len(buf) < LOG_OVERHEAD:
                    return
            (batch_length,) = _I32.unpack_from(buf, off + 8)
            if batch_length < MIN_BATCH_LENGTH:
                raise CorruptRecordError(
                    f"batch_length {batch_length} at position {pos} of {self.log_path} is below {MIN_BATCH_LENGTH}")
            size = batch_length + LOG_OVERHEAD
            if pos + size > end:
                return
            if off + HEADER_SIZE > len(buf):  # only near the end of a short window
                buf = pread(min(_HEADER_WINDOW, end - pos), pos)
                buf_start = pos
                off = 0
            yield pos, read_header(buf, off)
            pos += size

    def read_bytes(self, position: int, size: int) -> bytes:
        return self._file.pread(size, position)

    # -- append -----------------------------------------------------------------------------
    def append(self, largest_offset: int, largest_timestamp: int, shallow_offset_of_max_timestamp: int,
               records, batches: list[tuple[int, BatchHeader]] | None = None) -> None:
        """Append whole batches (already offset-assigned) at the end of the segment.

        With ``batches`` (position in ``records``, header) the indexes are kept per batch,
        as Kafka 3.8+ does; without it the whole buffer counts as one unit keyed by
        ``largest_offset`` with ``(largest_timestamp, shallow_offset_of_max_timestamp)``.
        Raises LogSegmentOffsetOverflowError if ``largest_offset`` does not fit the indexes.

        All or nothing: on an I/O error (full disk, EIO, read-only) the log is cut back to its
        old size, the index entries added are dropped, and KafkaStorageError is raised; should
        the cut itself fail, the next append (or close) retries it before anything else.
        """
        if self._dirty_tail:
            self._cut_dirty_tail()
        saved = (self._size, self._next_offset, self._max_ts, self._rolling_ts, self._rolling_ts_known,
                 self._bytes_since_last_index_entry, self.offset_index.entries, self.time_index.entries)
        try:
            self._append(largest_offset, largest_timestamp, shallow_offset_of_max_timestamp, records, batches)
        except OSError as exc:
            (self._size, self._next_offset, self._max_ts, self._rolling_ts, self._rolling_ts_known,
             self._bytes_since_last_index_entry, n_offsets, n_times) = saved
            self.offset_index._truncate_to_entries(min(n_offsets, self.offset_index.entries))
            self.time_index._truncate_to_entries(min(n_times, self.time_index.entries))
            self._dirty_tail = True
            try:
                self._cut_dirty_tail()
            except KafkaStorageError:
                pass
            raise KafkaStorageError(f"I/O error appending to {self.log_path}: {exc}") from exc

    def _cut_dirty_tail(self) -> None:
        """Remove bytes a failed append left past ``size`` (KafkaStorageError if it cannot)."""
        try:
            if self._file.fsize() > self._size:
                self._unflushed = True
                self._file.truncate(self._size)
        except OSError as exc:
            raise KafkaStorageError(f"cannot remove a failed append from {self.log_path}: {exc}") from exc
        self._dirty_tail = False

    def _append(self, largest_offset: int, largest_timestamp: int, shallow_offset_of_max_timestamp: int,
                records, batches: list[tuple[int, BatchHeader]] | None) -> None:
        n = len(records)
        if n == 0:
            return
        physical = self._size
        if physical == 0:
            self._rolling_ts = largest_timestamp
            self._rolling_ts_known = True
        if not self.can_convert_to_relative_offset(largest_offset):
            raise LogSegmentOffsetOverflowError(self, largest_offset)
        self._unflushed = True
        self._file.pwrite(records, physical)
        self._size = physical + n
        self._next_offset = largest_offset + 1
        interval = self.index_interval_bytes
        if batches is None:
            if largest_timestamp > self.max_timestamp_so_far:
                self._max_ts = TimestampOffset(largest_timestamp, shallow_offset_of_max_timestamp)
            if self._bytes_since_last_index_entry > interval:
                self.offset_index.append(largest_offset, physical)
                m = self._max_ts or self._read_max()
                self.time_index.maybe_append(m.timestamp, m.offset)
                self._bytes_since_last_index_entry = 0
            self._bytes_since_last_index_entry += n
            return
        m = self._read_max()
        for pos, h in batches:
            if h.max_timestamp > m.timestamp:
                m = self._max_ts = TimestampOffset(h.max_timestamp, h.base_offset + h.last_offset_delta)
            if self._bytes_since_last_index_entry > interval:
                self.offset_index.append(h.base_offset + h.last_offset_delta, physical + pos)
                self.time_index.maybe_append(m.timestamp, m.offset)
                self._bytes_since_last_index_entry = 0
            self._bytes_since_last_index_entry += h.batch_length + LOG_OVERHEAD

    # -- transactions -----------------------------------------------------------------------
    @property
    def txn_index(self) -> TransactionIndex:
        if self._txn is None:
            d, name = os.path.split(self._log_path)
            i = name.index(LOG_SUFFIX)
            path = os.path.join(d, name[:i] + TXN_INDEX_SUFFIX + name[i + len(LOG_SUFFIX):])
            self._txn = TransactionIndex(path, self.base_offset, file_ops=self._ops, exists=self._txn_exists)
        return self._txn

    @property
    def has_txn_index_file(self) -> bool:
        """False only when the segment is known to have no ``.txnindex`` file."""
        return not (self._txn is None and self._txn_exists is False)

    def _existing_txn_index(self) -> TransactionIndex | None:
        """The transaction index unless it is known to have no file (and so nothing to do)."""
        if self._txn is None and self._txn_exists is False:
            return None
        return self.txn_index

    def update_txn_index(self, completed, last_stable_offset: int) -> None:
        """Kafka ``updateTxnIndex``: an aborted transaction completed by a marker in this
        segment becomes an entry of its ``.txnindex`` (committed ones leave no trace)."""
        if completed.is_aborted:
            self.txn_index.append(AbortedTxn(completed.producer_id, completed.first_offset,
                                             completed.last_offset, last_stable_offset))

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> TxnIndexSearchResult:
        txn = self._existing_txn_index()
        if txn is None:
            return TxnIndexSearchResult([], False)
        return txn.collect_aborted_txns(fetch_offset, upper_bound_offset)

    # -- offset translation and reads -------------------------------------------------------
    def translate_offset(self, offset: int, starting_position: int = 0) -> LogOffsetPosition | None:
        """The batch holding the first offset >= ``offset``: (its last offset, position, size)."""
        mapping = self.offset_index.lookup(offset)
        for pos, h in self.iter_headers(max(mapping.position, starting_position)):
            last = h.base_offset + h.last_offset_delta
            if last >= offset:
                return LogOffsetPosition(last, pos, h.batch_length + LOG_OVERHEAD)
        return None

    def read(self, start_offset: int, max_size: int, max_position: int | None = None,
             min_one: bool = False) -> SegmentRead | None:
        """Whole batches from the one holding ``start_offset``, at most ``max_size`` bytes
        (the first batch even if larger when ``min_one``), never past ``max_position``.

        None when no batch in this segment holds an offset >= ``start_offset``.
        """
        if max_size < 0:
            raise ValueError(f"invalid max size {max_size} for read from segment {self.log_path}")
        if max_position is None:
            max_position = self._size
        tp = self.translate_offset(start_offset)
        if tp is None:
            return None
        start = tp.position
        adjusted = max(max_size, tp.size) if min_one else max_size
        fetch = min(max_position - start, adjusted)
        if fetch <= 0:
            return SegmentRead(start_offset, start, b"", tp.size)
        data = self._file.pread(fetch, start)
        end = 0
        for pos, h in iter_batch_positions(data):
            end = pos + h.batch_length + LOG_OVERHEAD
        if end != len(data):
            # Whole batches only. A read usually ends inside a batch; a memoryview drops that
            # tail without copying the rest (bytes slicing copied up to max_size per fetch:
            # a quarter of the broker's CPU when serving).
            data = memoryview(data)[:end]
        return SegmentRead(start_offset, start, data, tp.size)

    def position_of(self, offset: int) -> int:
        """Start position of the batch holding the first offset >= ``offset`` (size if none)."""
        tp = self.translate_offset(offset)
        return self._size if tp is None else tp.position

    def read_next_offset(self) -> int:
        """Offset after the last batch (base offset when empty)."""
        if self._next_offset is None:
            nxt = self.base_offset
            start = self.offset_index.last_entry.position
            if start > self._size:
                start = 0
            for _pos, h in self.iter_headers(start):
                nxt = h.base_offset + h.last_offset_delta + 1
            self._next_offset = nxt
        return self._next_offset

    next_offset = property(read_next_offset)

    # -- timestamps -------------------------------------------------------------------------
    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int = 0) -> TimestampAndOffset | None:
        """First record (offset order) with timestamp >= ``timestamp`` and offset >= ``starting_offset``.

        Time index lookup (greatest entry <= T) -> offset index position -> scan headers to
        the first batch whose max timestamp >= T and that holds an offset >= starting_offset
        -> first qualifying record inside it. None when no record here qualifies.
        """
        entry = self.time_index.lookup(timestamp)
        position = self.offset_index.lookup(max(entry.offset, starting_offset)).position
        for pos, h in self.iter_headers(position):
            if h.max_timestamp >= timestamp and h.base_offset + h.last_offset_delta >= starting_offset:
                data = self._file.pread(h.batch_length + LOG_OVERHEAD, pos)
                hit = first_record_reaching(data, 0, timestamp, starting_offset)
                if hit is not None:
                    epoch = h.partition_leader_epoch
                    return TimestampAndOffset(hit[1], hit[0], epoch if epoch >= 0 else -1)
        return None

    def offset_of_max_timestamp(self) -> TimestampAndOffset | None:
        """The first record holding this segment's max timestamp (for ListOffsets -3)."""
        m = self._read_max()
        if m.timestamp < 0:
            return None
        position = self.offset_index.lookup(m.offset).position
        for pos, h in self.iter_headers(position):
            if h.max_timestamp == m.timestamp:
                data = self._file.pread(h.batch_length + LOG_OVERHEAD, pos)
                for off, ts in iter_record_timestamps(data):
                    if ts == m.timestamp:
                        epoch = h.partition_leader_epoch
                        return TimestampAndOffset(ts, off, epoch if epoch >= 0 else -1)
                return None
        return None

    def _load_first_batch_timestamp(self) -> None:
        if not self._rolling_ts_known:
            for _pos, h in self.iter_headers(0):
                self._rolling_ts = h.max_timestamp
                self._rolling_ts_known = True
                break

    @property
    def rolling_based_timestamp(self) -> int | None:
        """First batch's max timestamp if it is >= 0 (Kafka's rollingBasedTimestamp), else None."""
        self._load_first_batch_timestamp()
        ts = self._rolling_ts if self._rolling_ts_known else None
        return ts if ts is not None and ts >= 0 else None

    def time_waited_for_roll(self, now_ms: int, message_timestamp: int) -> int:
        ts = self.rolling_based_timestamp
        if ts is not None:
            return message_timestamp - ts
        return now_ms - self.created_ms

    def first_batch_timestamp(self) -> int:
        """First batch's timestamp, or 2**63-1 when there is none (Kafka's getFirstBatchTimestamp)."""
        ts = self.rolling_based_timestamp
        return ts if ts is not None else (1 << 63) - 1

    # -- recovery and truncation ------------------------------------------------------------
    def recover(self, on_batch: Callable[[BatchHeader, bytes, int], None] | None = None) -> int:
        """Rebuild the indexes from the log, CRC-checking every batch; truncate the log at
        the first batch that is torn, fails its CRC, or breaks offset order. Returns the number
        of bytes truncated. ``on_batch(header, buf, pos)`` sees each valid batch (``buf[pos:]``
        holds it whole): producer state replay, which refills the emptied transaction index
        through ``update_txn_index``.
        """
        self.offset_index.reset()
        self.time_index.reset()
        txn = self._existing_txn_index()
        if txn is not None:
            txn.reset()
        valid = 0
        last_index_entry = 0
        max_ts = NO_TIMESTAMP
        max_off = self.base_offset
        first_ts: int | None = None
        next_offset = self.base_offset
        interval = self.index_interval_bytes
        file_size = self._file.fsize()
        pread = self._file.pread
        buf = b""
        buf_start = 0
        reason = None
        while valid < file_size:
            remaining = file_size - valid
            if remaining < HEADER_SIZE:
                reason = "torn batch header"
                break
            off = valid - buf_start
            if off + HEADER_SIZE > len(buf):
                buf = pread(min(_RECOVERY_WINDOW, remaining), valid)
                buf_start, off = valid, 0
            try:
                h = read_header(buf, off)
            except CorruptRecordError as e:
                reason = str(e)
                break
            size = h.batch_length + LOG_OVERHEAD
            if size > remaining:
                reason = "torn batch"
                break
            if off + size > len(buf):
                buf = pread(max(_RECOVERY_WINDOW, size), valid)
                buf_start, off = valid, 0
            if compute_crc(buf, off, size) != h.crc:
                reason = "CRC mismatch"
                break
            last = h.base_offset + h.last_offset_delta
            if h.base_offset < next_offset or last < h.base_offset or not self.can_convert_to_relative_offset(last):
                reason = f"offset {h.base_offset} out of order or out of range"
                break
            if first_ts is None:
                first_ts = h.max_timestamp
            if h.max_timestamp > max_ts:
                max_ts, max_off = h.max_timestamp, last
            if valid - last_index_entry > interval:
                self.offset_index.append(last, valid)
                self.time_index.maybe_append(max_ts, max_off)
                last_index_entry = valid
            valid += size
            next_offset = last + 1
            if on_batch is not None:
                on_batch(h, buf, off)
        truncated = self._size_on_disk() - valid
        if truncated > 0:
            self._unflushed = True
            self._file.truncate(valid)
        self._size = valid
        self._max_ts = TimestampOffset(max_ts, max_off)
        self.offset_index.trim_to_valid_size()
        # A cleanly closed segment always ends its time index with the largest timestamp.
        self.time_index.maybe_append(max_ts, max_off, skip_full_check=True)
        self.time_index.trim_to_valid_size()
        self._next_offset = next_offset
        self._rolling_ts = first_ts
        self._rolling_ts_known = first_ts is not None
        self._bytes_since_last_index_entry = valid - last_index_entry if valid else 0
        self.last_recovery_reason = reason if truncated > 0 else None
        return truncated

    def _size_on_disk(self) -> int:
        return self._file.fsize()

    def truncate_to(self, offset: int) -> int:
        """Remove every batch holding an offset >= ``offset`` (the whole batch, as Kafka) and
        the index entries at or past it. Returns the number of log bytes removed."""
        mapping = self.translate_offset(offset)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        txn = self._existing_txn_index()
        if txn is not None:
            txn.truncate_to(offset)
        # The segment may take appends again: give the indexes their full size back.
        self.offset_index.resize(self.max_index_size)
        self.time_index.resize(self.max_index_size)
        removed = 0
        if mapping is not None:
            removed = self._size - mapping.position
            self._unflushed = True
            self._file.truncate(mapping.position)
            self._size = mapping.position
        if self._size == 0:
            self.created_ms = self._clock.now_ms()
            self._rolling_ts = None
            self._rolling_ts_known = False
        self._bytes_since_last_index_entry = 0
        self._next_offset = None
        if self.max_timestamp_so_far >= 0:
            self._max_ts = self._read_largest_timestamp()
        return removed

    def _read_largest_timestamp(self) -> TimestampOffset:
        last = self.time_index.last_entry
        position = self.offset_index.lookup(last.offset).position
        best = last
        for _pos, h in self.iter_headers(position):
            if h.max_timestamp > best.timestamp:
                best = TimestampOffset(h.max_timestamp, h.base_offset + h.last_offset_delta)
        return best

    def has_overflow(self) -> bool:
        nxt = self.read_next_offset()
        return nxt > self.base_offset and not self.can_convert_to_relative_offset(nxt - 1)

    # -- sanity (cheap, for a clean-shutdown load) -------------------------------------------
    def sanity_check(self) -> None:
        """Kafka's O(1) index checks plus: the last offset index entry points at a batch
        header inside the log whose last offset is >= the entry's offset; and Kafka's check
        of the transaction index (reads it, if there is one).

        Raises CorruptIndexError (or CorruptRecordError) on failure.
        """
        from storage.index import CorruptIndexError
        self.offset_index.sanity_check()
        self.time_index.sanity_check()
        txn = self._existing_txn_index()
        if txn is not None:
            txn.sanity_check()
        if self.offset_index.entries:
            last = self.offset_index.last_entry
            if last.position < 0 or last.position + HEADER_SIZE > self._size:
                raise CorruptIndexError(f"offset index {self.offset_index.path} points past the log")
            h = read_header(self.read_bytes(last.position, HEADER_SIZE))
            if h.base_offset + h.last_offset_delta < last.offset or h.base_offset > last.offset:
                raise CorruptIndexError(f"offset index {self.offset_index.path} disagrees with the log")
        if self.time_index.entries:
            te = self.time_index.last_entry
            if self._size == 0:
                raise CorruptIndexError(f"time index {self.time_index.path} is not empty but the log is")
            if te.offset >= self.read_next_offset():
                raise CorruptIndexError(f"time index {self.time_index.path} points past the log end")

    # -- lifecycle --------------------------------------------------------------------------
    def on_become_inactive(self) -> None:
        """Roll: add the largest-timestamp entry, trim both indexes, release index handles."""
        m = self._read_max()
        self.time_index.maybe_append(m.timestamp, m.offset, skip_full_check=True)
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()
        # Inactive segments no longer write their indexes: make them durable (a later flush of
        # this segment cannot, the handles are gone) and give the descriptors back (they
        # reopen lazily should a truncation need them).
        self.offset_index.flush()
        self.time_index.flush()
        self.offset_index.close_handler()
        self.time_index.close_handler()
        if self._txn is not None:
            self._txn.flush()
            self._txn.close_handler()
        # and the log's: a segment that is no longer active holds a descriptor only while
        # the file cache keeps it for reads
        self._file.evict()

    def resize_indexes(self, size: int) -> None:
        self.offset_index.resize(size)
        self.time_index.resize(size)

    def resize_indexes_when_used(self, size: int) -> None:
        """``resize_indexes(size)`` deferred to each index's next append (see ``resize_when_used``)."""
        self.offset_index.resize_when_used(size)
        self.time_index.resize_when_used(size)

    def flush(self) -> None:
        """fsync the log and index files, each only if written since its last fsync: a clean
        shutdown of a broker with thousands of idle partitions was thousands of fsyncs."""
        if self._unflushed:
            self._file.fsync()
            self._unflushed = False
        self.offset_index.flush()
        self.time_index.flush()
        if self._txn is not None:
            self._txn.flush()

    def assume_flushed(self) -> None:
        """The files on disk are known durable (the clean shutdown that closed them fsynced
        them), so a flush before the next write has nothing to do."""
        self._unflushed = False

    def close(self, sync: bool = True) -> None:
        """Clean close: final time index entry, fsync, trim indexes, release handles.
        ``sync=False``: no fsync; the caller makes everything durable at once (``syncfs``)."""
        if self._closed:
            return
        try:
            if self._dirty_tail:
                self._cut_dirty_tail()  # raises: no clean close, so recovery runs at the next start
            if self._max_ts is not None:
                try:
                    self.time_index.maybe_append(self._max_ts.timestamp, self._max_ts.offset,
                                                 skip_full_check=True)
                except (InvalidOffsetError, ValueError):
                    pass
            # Trim before the fsync: a clean shutdown is trusted at the next start, so the
            # trimmed index lengths must be on disk, not only in the page cache.
            self.offset_index.trim_to_valid_size()
            self.time_index.trim_to_valid_size()
            if sync:
                self.flush()
            self.offset_index.close()
            self.time_index.close()
            if self._txn is not None:
                self._txn.close()
        finally:
            self.close_handlers()

    def close_handlers(self) -> None:
        """Release file handles without writing anything."""
        if not self._closed:
            self._closed = True
            self.offset_index.close_handler()
            self.time_index.close_handler()
            if self._txn is not None:
                self._txn.close_handler()
            try:
                self._file.close()
            except OSError:
                pass

    def delete_if_exists(self) -> None:
        self.close_handlers()
        self._ops.remove(self._log_path)
        self.offset_index.delete_if_exists()
        self.time_index.delete_if_exists()
        txn = self._existing_txn_index()
        if txn is not None:
            txn.delete_if_exists()

    def change_file_suffixes(self, old_suffix: str, new_suffix: str) -> None:
        """Rename the log and index files (e.g. ``""`` -> ``".deleted"``)."""
        def repl(p: Path) -> Path:
            name = p.name
            if old_suffix:
                if not name.endswith(old_suffix):
                    raise ValueError(f"{name} does not end with {old_suffix!r}")
                name = name[: -len(old_suffix)]
            return p.with_name(name + new_suffix)
        new_log = repl(self.log_path)
        self._ops.rename(self.log_path, new_log)
        self.log_path = new_log
        self._file.path = self._log_path
        self.offset_index.rename_to(repl(self.offset_index.path))
        self.time_index.rename_to(repl(self.time_index.path))
        txn = self._existing_txn_index()
        if txn is not None:
            txn.rename_to(repl(txn.path))     # (without a file the name follows the log's)

    def has_suffix(self, suffix: str) -> bool:
        return (self.log_path.name.endswith(suffix) and self.offset_index.path.name.endswith(suffix)
                and self.time_index.path.name.endswith(suffix) and self.txn_index.path.name.endswith(suffix))

    def update_parent_dir(self, new_dir) -> None:
        self.dir = Path(new_dir)
        self.log_path = self.dir / self.log_path.name
        self._file.path = self._log_path
        self.offset_index.update_parent_dir(new_dir)
        self.time_index.update_parent_dir(new_dir)
        if self._txn is not None:
            self._txn.update_parent_dir(new_dir)

    @property
    def deleted(self) -> bool:
        return not (self._ops.exists(self.log_path) or self._ops.exists(self.offset_index.path)
                    or self._ops.exists(self.time_index.path))


__all__ = [
    "LogSegment", "LogSegmentOffsetOverflowError", "LogOffsetPosition", "TimestampAndOffset",
    "SegmentRead", "OffsetPosition", "TimestampOffset", "log_file", "offset_index_file",
    "time_index_file", "txn_index_file", "offset_from_filename", "is_log_file", "is_index_file",
    "filename_prefix", "LOG_SUFFIX", "INDEX_SUFFIX", "TIME_INDEX_SUFFIX", "TXN_INDEX_SUFFIX",
    "CLEANED_SUFFIX", "SWAP_SUFFIX", "DELETED_SUFFIX", "NO_TIMESTAMP",
]
