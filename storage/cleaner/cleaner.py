"""Cleaning one log (Kafka's ``Cleaner``): offset map, recopy, swap.

One cleaning of a log, given its dirty range ``[first dirty, first uncleanable)``:

1. **Offset map** over the dirty section: ``key -> latest offset`` for every keyed record
   (control batches and batches of aborted transactions skipped), bounded by
   :class:`OffsetMap`'s capacity. When it fills, the
   pass stops there: ``end offset = map.latest_offset + 1`` (the rest is cleaned by a later
   round); otherwise the end offset is the first uncleanable offset.
2. **Groups**: the segments holding offsets in ``[0, end offset)`` are grouped
   (``decisions.group_segments_by_size``: ``segment.bytes``, ``segment.index.bytes``, int32
   relative offsets).
3. **Recopy** each group into one new segment ``<first base>.log.cleaned`` (+ indexes): a
   record survives iff ``decisions.should_retain_record`` says so (the latest offset of its
   key, tombstones until their batch's delete horizon); the transactional verdicts come from
   one ``decisions.CleanedTransactionMetadata`` walked across all groups (records of aborted
   transactions dropped; markers kept until their transaction has no data left and their
   delete horizon has passed; see ``decisions``), fed per segment with the aborted
   transactions the log's indexes list for it, collected on the caller's side beforehand.
   A batch whose records all survive and that needs no new delete horizon is copied byte
   for byte; otherwise it is rebuilt with the same base offset, last offset delta, producer
   id/epoch/base sequence, transactional and control flags, leader epoch, timestamp type and
   codec (max timestamp recomputed from the survivors, or kept for LogAppendTime), and a
   KIP-534 delete horizon ``now + delete.retention.ms`` when it holds tombstones, or is a
   marker whose transaction has no data left, and had none. Emptied batches are dropped
   unless they hold an active producer's last record or end the cleaning round
   (``RETAIN_EMPTY``: a header with no records). Offsets never change. The new segment's
   indexes are built from what survives (appends keep ``index.interval.bytes``; the
   ``.txnindex`` gets the aborted transactions whose markers stay), its time index gets the
   final largest-timestamp entry, it is fsynced and given the last old segment's mtime.
4. **Swap** (``PartitionLog.replace_segments``, on the event loop): ``.cleaned`` ->
   ``.swap``, the new segment replaces the old ones in the segment map, old files ->
   ``.deleted`` (removed after ``file.delete.delay.ms``), ``.swap`` -> final name.

Threading: steps 1-3 read the old segments through their own file descriptors (opened on the
event loop when the run starts, reading only up to the sizes seen then) and write only the
new ``.cleaned`` files, so they may run in a worker thread while the event loop appends to
the active segment (which is never cleaned). Step 4 and every look at the live log run on the
caller's (event loop's) side; a log whose segments changed meanwhile (truncation, retention,
close) makes the run abort and delete its ``.cleaned`` files.

One deliberate addition to Kafka: when nothing of a group's last non-empty segment survives,
its last batch is kept as an empty batch (as Kafka keeps the round's last batch). Recovery
completes an interrupted swap by deleting the old segments inside the ``.swap`` file's offset
range; without that batch the range could end before the group's last segment and a crash
between the renames would leave that old segment next to the new one.
"""
from __future__ import annotations

import logging
import struct
import threading
import time
from dataclasses import field
from pathlib import Path
from typing import Callable

from protocol.deferred import dataclass
from protocol.errors import CorruptRecordError
from protocol.records.batch import LOG_OVERHEAD, MIN_BATCH_LENGTH, BatchHeader, read_header
from protocol.records.record import build_batch, control_record_type, decode_batch
from storage.cleaner.decisions import (
    DELETE, RETAIN_EMPTY, CleanedTransactionMetadata, LastRecord, LogToClean, SegmentFacts,
    batch_retention, group_segments_by_size, is_batch_last_record_of_producer, new_delete_horizon,
    segments_in_range, should_retain_record,
)
from storage.cleaner.offset_map import OffsetMap, digest
from storage.errors import StorageError
from storage.files import FileOps
from storage.segment import (
    CLEANED_SUFFIX, LogSegment, log_file, offset_index_file, time_index_file, txn_index_file,
)

log = logging.getLogger("storage.cleaner")

DEFAULT_IO_BUFFER = 512 * 1024
_I32 = struct.Struct(">i")
_LONG_MAX = (1 << 63) - 1


class CleaningAbortedError(StorageError):
    """The cleaning of a log was aborted (log changed, closed, deleted, or shutdown)."""


@dataclass
class CleanerStats:
    """Kafka ``CleanerStats``: what a cleaning read, kept and how long it took."""

    map_bytes_read: int = 0
    map_messages_read: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    messages_read: int = 0
    messages_written: int = 0
    invalid_messages: int = 0
    batches_rebuilt: int = 0
    buffer_utilization: float = 0.0
    start_s: float = field(default_factory=time.monotonic)
    map_done_s: float = 0.0
    end_s: float = 0.0

    @property
    def messages_removed(self) -> int:
        return self.messages_read - self.messages_written

    @property
    def elapsed_ms(self) -> float:
        return ((self.end_s or time.monotonic()) - self.start_s) * 1000.0


@dataclass
class SegmentSource:
    """A segment as the cleaner reads it: its facts, its own read descriptor, the size seen
    when the run started, the live ``LogSegment`` (compared by identity at swap time) and the
    aborted transactions the log lists for its offset range (Kafka collects them per segment
    in ``cleanSegments``; here on the caller's side, before the file work starts)."""

    facts: SegmentFacts
    segment: LogSegment
    fd: int
    size: int
    last_modified_ms: int
    aborted: list = field(default_factory=list)

    @property
    def base_offset(self) -> int:
        return self.facts.base_offset


def iter_batches(ops: FileOps, fd: int, size: int, start: int = 0, window: int = DEFAULT_IO_BUFFER):
    """``(position, header, bytes)`` of each whole batch in ``[start, size)`` of ``fd``,
    read ``window`` bytes at a time (a larger batch is read on its own). Stops at a torn tail."""
    pos = start
    while size - pos >= LOG_OVERHEAD:
        buf = ops.pread(fd, min(window, size - pos), pos)
        off = 0
        n = len(buf)
        if n < LOG_OVERHEAD:  # the file shrank under us (truncation): the run will be aborted
            return
        while n - off >= LOG_OVERHEAD:
            (length,) = _I32.unpack_from(buf, off + 8)
            if length < MIN_BATCH_LENGTH:
                raise CorruptRecordError(f"batch length {length} at position {pos + off} is below {MIN_BATCH_LENGTH}")
            bsize = length + LOG_OVERHEAD
            if off + bsize > n:
                break
            chunk = buf[off:off + bsize]
            yield pos + off, read_header(chunk), chunk
            off += bsize
        if off == 0:  # one batch larger than the window (or a torn tail)
            (length,) = _I32.unpack_from(buf, 8)
            bsize = length + LOG_OVERHEAD
            if pos + bsize > size:
                return
            chunk = ops.pread(fd, bsize, pos)
            if len(chunk) < bsize:
                return
            yield pos, read_header(chunk), chunk
            off = bsize
        pos += off


def control_type_of(data) -> int | None:
    """The control type of a control batch's record (None for an emptied batch)."""
    _h, records = decode_batch(data, 0, verify_crc=False)
    return control_record_type(records[0].key) if records else None


def build_offset_map(ops: FileOps, dirty: list[SegmentSource], start: int, end: int, offset_map: OffsetMap,
                     stats: CleanerStats, check_done: Callable[[], None] = lambda: None,
                     window: int = DEFAULT_IO_BUFFER, aborted: list | None = None) -> bool:
    """Kafka ``buildOffsetMap`` over the dirty segments (ascending, covering ``[start, end)``).

    Returns True when the map filled up (the pass ends early). Records below ``start`` are
    not mapped; control batches and batches of the ``aborted`` transactions (the log's list
    for ``[start, end)``) are skipped; after each batch reaching ``start`` and after each
    whole segment (the next segment's base offset - 1, ``end`` - 1 for the last) the map's
    latest offset moves forward, so gaps left by earlier cleanings are covered.
    """
    offset_map.clear()
    limit = offset_map.max_desired_size
    txns = CleanedTransactionMetadata()
    txns.add_aborted_transactions(aborted or ())
    for i, src in enumerate(dirty):
        next_start = dirty[i + 1].base_offset if i + 1 < len(dirty) else end
        check_done()
        for _pos, h, data in iter_batches(ops, src.fd, src.size, 0, window):
            last = h.base_offset + h.last_offset_delta
            if h.is_control:
                txns.on_control_batch_read(h.producer_id, last, control_type_of(data))
            elif txns.on_batch_read(h.producer_id, last, h.is_transactional):
                if last >= start:   # aborted: not mapped
                    stats.map_messages_read += h.records_count
                    offset_map.update_latest_offset(last)
                stats.map_bytes_read += len(data)
                continue
            if last < start:
                stats.map_bytes_read += len(data)
                continue
            if h.is_control:
                stats.map_messages_read += 1
            else:
                _h, records = decode_batch(data)
                for r in records:
                    if r.key is not None and r.offset >= start:
                        if len(offset_map) < limit:
                            offset_map.put_digest(digest(r.key), r.offset)
                        else:
                            return True
                    stats.map_messages_read += 1
            offset_map.update_latest_offset(last)
            stats.map_bytes_read += len(data)
        offset_map.update_latest_offset(next_start - 1)
    return False


def _remove_stale_cleaned(ops: FileOps, dir: Path, base: int) -> None:
    for p in (log_file(dir, base, CLEANED_SUFFIX), offset_index_file(dir, base, CLEANED_SUFFIX),
              time_index_file(dir, base, CLEANED_SUFFIX), txn_index_file(dir, base, CLEANED_SUFFIX)):
        ops.remove(p)


def clean_group_into(dir, group: list[SegmentSource], offset_map: OffsetMap, *, now_ms: int, config,
                     clock, ops: FileOps, producer_last_records: dict[int, LastRecord],
                     upper_bound_offset_of_round: int, stats: CleanerStats,
                     check_done: Callable[[], None] = lambda: None,
                     window: int = DEFAULT_IO_BUFFER,
                     transactions: CleanedTransactionMetadata | None = None) -> LogSegment:
    """Kafka ``cleanSegments`` minus the swap: recopy ``group`` into a new ``.cleaned``
    segment (see the module docstring) and return it flushed, indexes trimmed, mtime set.
    ``transactions`` carries the transactional state from one group to the next."""
    dir = Path(dir)
    base = group[0].base_offset
    _remove_stale_cleaned(ops, dir, base)
    cleaned = LogSegment(dir, base, index_interval_bytes=config.index_interval_bytes,
                         max_index_size=config.segment_index_bytes, clock=clock, file_ops=ops,
                         suffix=CLEANED_SUFFIX)
    txns = transactions if transactions is not None else CleanedTransactionMetadata()
    txns.cleaned_index = cleaned.txn_index
    try:
        latest = offset_map.latest_offset
        delete_retention_ms = config.delete_retention_ms
        last_non_empty = max((i for i, s in enumerate(group) if s.size > 0), default=-1)
        for gi, src in enumerate(group):
            txns.add_aborted_transactions(src.aborted)
            out = bytearray()
            out_batches: list[tuple[int, BatchHeader]] = []
            written_from_segment = 0

            def flush_out():
                if out_batches:
                    lh = out_batches[-1][1]
                    cleaned.append(lh.base_offset + lh.last_offset_delta, lh.max_timestamp, -1,
                                   bytes(out), out_batches)
                    stats.bytes_written += len(out)
                    out.clear()
                    out_batches.clear()

            for pos, h, data in iter_batches(ops, src.fd, src.size, 0, window):
                check_done()
                stats.bytes_read += len(data)
                last = h.base_offset + h.last_offset_delta
                new: bytes | None = None
                horizon = h.base_timestamp if h.has_delete_horizon else None
                if h.is_control:
                    can_discard = txns.on_control_batch_read(h.producer_id, last, control_type_of(data))
                else:
                    can_discard = txns.on_batch_read(h.producer_id, last, h.is_transactional)
                last_of_producer = is_batch_last_record_of_producer(
                    producer_id=h.producer_id, batch_last_offset=last, is_control=h.is_control,
                    producer_epoch=h.producer_epoch, last_record=producer_last_records.get(h.producer_id))
                verdict = batch_retention(
                    producer_id=h.producer_id, is_control=h.is_control, can_discard=can_discard,
                    delete_horizon_ms=horizon, now_ms=now_ms, batch_next_offset=last + 1,
                    is_last_record_of_producer=last_of_producer, upper_bound_offset_of_round=upper_bound_offset_of_round)
                ends_group = gi == last_non_empty and pos + len(data) == src.size
                if verdict.retention == DELETE and not (ends_group and written_from_segment == 0):
                    stats.messages_read += h.records_count
                    continue
                _h, records = decode_batch(data)
                stats.messages_read += len(records)
                kept = []
                tombstones = False
                if verdict.discard_records:
                    pass
                elif h.is_control:
                    kept = records
                else:
                    for r in records:
                        has_key = r.key is not None
                        map_offset = offset_map.get_digest(digest(r.key)) if has_key and r.offset <= latest else -1
                        if should_retain_record(offset=r.offset, has_key=has_key, has_value=r.value is not None,
                                                map_offset=map_offset, map_latest_offset=latest,
                                                delete_horizon_ms=horizon, now_ms=now_ms):
                            kept.append(r)
                            if r.value is None:
                                tombstones = True
                        elif not has_key:
                            stats.invalid_messages += 1
                if kept:
                    stats.messages_written += len(kept)
                    new_horizon = new_delete_horizon(
                        contains_tombstones=tombstones or verdict.contains_marker_for_empty_txn,
                        existing_horizon=horizon, now_ms=now_ms, delete_retention_ms=delete_retention_ms)
                    if len(kept) == len(records) and new_horizon == horizon:
                        new = bytes(data)
                    else:
                        stats.batches_rebuilt += 1
                        lat = h.timestamp_type == 1
                        new = build_batch(
                            kept, base_offset=h.base_offset, compression=h.compression,
                            timestamp_type=h.timestamp_type, producer_id=h.producer_id,
                            producer_epoch=h.producer_epoch, base_sequence=h.base_sequence,
                            is_transactional=h.is_transactional, is_control=h.is_control,
                            partition_leader_epoch=h.partition_leader_epoch,
                            log_append_time=h.max_timestamp if lat else None,
                            last_offset_delta=h.last_offset_delta, delete_horizon_ms=new_horizon)
                else:
                    if verdict.retention == RETAIN_EMPTY or (ends_group and written_from_segment == 0):
                        new = build_batch(
                            [], base_offset=h.base_offset, timestamp_type=h.timestamp_type,
                            producer_id=h.producer_id, producer_epoch=h.producer_epoch,
                            base_sequence=h.base_sequence, is_transactional=h.is_transactional,
                            is_control=h.is_control, partition_leader_epoch=h.partition_leader_epoch,
                            last_offset_delta=h.last_offset_delta, max_timestamp=h.max_timestamp)
                if new is not None:
                    out_batches.append((len(out), read_header(new)))
                    out += new
                    written_from_segment += 1
                    if len(out) >= window:
                        flush_out()
            flush_out()
        # Kafka onBecomeInactiveSegment + flush: final time index entry, trimmed indexes.
        m = cleaned.read_max_timestamp_and_offset_so_far()
        cleaned.time_index.maybe_append(m.timestamp, m.offset, skip_full_check=True)
        cleaned.offset_index.trim_to_valid_size()
        cleaned.time_index.trim_to_valid_size()
        cleaned.flush()
        cleaned.offset_index.close_handler()
        cleaned.time_index.close_handler()
        cleaned.txn_index.close_handler()
        cleaned.set_last_modified(group[-1].last_modified_ms)
        return cleaned
    except BaseException:
        cleaned.delete_if_exists()
        raise
    finally:
        txns.cleaned_index = None


class SourceFds:
    """The read descriptors of one cleaning run, shared by the event loop and a worker thread.

    The thread brackets its work with ``acquire``/``release``; ``close`` (event loop, when the
    run ends or is cancelled) closes them at once if the thread is idle, else the thread's
    last ``release`` does, so a descriptor is never closed under a running read.
    """

    def __init__(self, ops: FileOps, sources: list[SegmentSource]):
        self.ops = ops
        self.sources = sources
        self._lock = threading.Lock()
        self._in_use = 0
        self._closing = False
        self._closed = False

    def acquire(self) -> None:
        with self._lock:
            if self._closing:
                raise CleaningAbortedError("cleaning run already finished")
            self._in_use += 1

    def release(self) -> None:
        with self._lock:
            self._in_use -= 1
            if self._closing and self._in_use == 0:
                self._close_now()

    def close(self) -> None:
        with self._lock:
            self._closing = True
            if self._in_use == 0:
                self._close_now()

    def _close_now(self) -> None:
        if not self._closed:
            self._closed = True
            close_sources(self.ops, self.sources)


def snapshot_sources(plog, to_offset: int) -> list[SegmentSource]:
    """Facts and fresh read descriptors of the segments holding offsets in ``[0, to_offset)``
    (event loop side). The caller closes the descriptors (``close_sources``)."""
    ops = plog.file_ops
    out = []
    try:
        for seg in plog.segments.values(0, to_offset) if to_offset > 0 else []:
            fd = ops.open(seg.log_path, "r")
            out.append(SegmentSource(facts_of(seg), seg, fd, seg.size, seg.last_modified_ms))
    except BaseException:
        close_sources(ops, out)
        raise
    return out


def close_sources(ops: FileOps, sources: list[SegmentSource]) -> None:
    for s in sources:
        try:
            ops.close(s.fd)
        except OSError:
            pass


def facts_of(seg: LogSegment) -> SegmentFacts:
    return SegmentFacts(seg.base_offset, seg.size, seg.largest_timestamp, seg.first_batch_timestamp(),
                        seg.offset_index.size_in_bytes, seg.time_index.size_in_bytes)


class _Done:
    """An awaitable already holding its value (drives the cleaning coroutine synchronously)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __await__(self):
        return self.value
        yield  # pragma: no cover - makes this a generator


def run_inline(fn, *args):
    return _Done(fn(*args))


def drive(coro):
    """Run a coroutine that never really suspends (``run_inline``) to completion."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError("cleaning coroutine suspended while run synchronously")


class Cleaner:
    """Cleans one log at a time (Kafka ``Cleaner``). ``offset_map`` is reused across runs."""

    def __init__(self, offset_map: OffsetMap, *, io_buffer_size: int = DEFAULT_IO_BUFFER, cleaner_id: int = 0):
        self.offset_map = offset_map
        self.io_buffer_size = max(io_buffer_size, 4096)
        self.id = cleaner_id

    def clean(self, plog, ltc: LogToClean, now_ms: int | None = None,
              check_done: Callable[[], None] = lambda: None) -> tuple[int, CleanerStats]:
        """Clean synchronously in the calling thread; returns ``(end offset, stats)``."""
        return drive(self.clean_async(plog, ltc, now_ms, run=run_inline, check_done=check_done))

    async def clean_async(self, plog, ltc: LogToClean, now_ms: int | None = None, *, run=run_inline,
                          check_done: Callable[[], None] = lambda: None) -> tuple[int, CleanerStats]:
        """Clean ``plog``'s range ``[ltc.first_dirty_offset, ltc.first_uncleanable_offset)``.

        ``run(fn, *args)`` returns an awaitable for the file work (a worker thread in the
        broker); everything else, including the swaps, runs where this coroutine runs.
        Returns ``(end offset, stats)``: the next first dirty offset.
        """
        now = plog.clock.now_ms() if now_ms is None else now_ms
        ops = plog.file_ops
        config = plog.config
        stats = CleanerStats()
        first_dirty = ltc.first_dirty_offset
        upper = ltc.first_uncleanable_offset
        version = plog.structure_version
        sources = snapshot_sources(plog, upper)
        fds = SourceFds(ops, sources)
        producer_last = plog.last_records_of_active_producers()
        # Decided transactions only (nothing past the LSO is cleaned), so the aborted ones
        # are known now; collected here, where the log's indexes are read safely.
        for i, src in enumerate(sources):
            nxt = sources[i + 1].base_offset if i + 1 < len(sources) else src.segment.read_next_offset()
            src.aborted = plog.collect_aborted_transactions(src.base_offset, nxt, from_log_start=True)
        map_aborted = plog.collect_aborted_transactions(first_dirty, upper, from_log_start=True)
        transactions = CleanedTransactionMetadata()
        window = self.io_buffer_size
        log.info("Beginning cleaning of log %s-%d", plog.topic, plog.partition)
        try:
            facts = [s.facts for s in sources]
            dirty_facts = segments_in_range(facts, first_dirty, upper) if upper > first_dirty else []
            dirty_bases = {f.base_offset for f in dirty_facts}
            dirty = [s for s in sources if s.base_offset in dirty_bases]
            if dirty:
                await run(_build_map_guarded, fds, dirty, first_dirty, upper, self.offset_map, stats, check_done,
                          window, map_aborted)
                end_offset = self.offset_map.latest_offset + 1
            else:
                self.offset_map.clear()
                end_offset = first_dirty
            stats.map_done_s = time.monotonic()
            if end_offset > first_dirty:
                in_range = segments_in_range(facts, 0, end_offset)
                by_base = {s.base_offset: s for s in sources}
                groups = group_segments_by_size(in_range, config.segment_bytes, config.segment_index_bytes, upper)
                for group_facts in groups:
                    group = [by_base[f.base_offset] for f in group_facts]
                    cleaned = await run(_clean_group_guarded, fds, plog.dir, group, self.offset_map, now, config, plog.clock,
                                        ops, producer_last, upper, stats, check_done, window, transactions)
                    # Back on the caller's side: the log must still hold exactly these segments.
                    try:
                        check_done()
                        if plog.closed or plog.structure_version != version or any(
                                plog.segments.get(s.base_offset) is not s.segment for s in group):
                            raise CleaningAbortedError(
                                f"segments of {plog.topic}-{plog.partition} changed while cleaning")
                        log.info("Swapping in cleaned segment %s for segment(s) %s in log %s-%d", cleaned,
                                 [s.base_offset for s in group], plog.topic, plog.partition)
                        plog.replace_segments([cleaned], [s.segment for s in group])
                    except BaseException:
                        if not plog.segments.get(cleaned.base_offset) is cleaned:
                            cleaned.delete_if_exists()
                        raise
                    version = plog.structure_version
            stats.buffer_utilization = self.offset_map.utilization
            stats.end_s = time.monotonic()
            return end_offset, stats
        finally:
            fds.close()


def _build_map_guarded(fds: SourceFds, dirty, start, end, offset_map, stats, check_done, window, aborted):
    fds.acquire()
    try:
        return build_offset_map(fds.ops, dirty, start, end, offset_map, stats, check_done, window, aborted)
    finally:
        fds.release()


def _clean_group_guarded(fds: SourceFds, dir, group, offset_map, now, config, clock, ops, producer_last, upper,
                         stats, check_done, window, transactions):
    """Positional adapter for executors (``run_in_executor`` takes no keywords)."""
    fds.acquire()
    try:
        return clean_group_into(dir, group, offset_map, now_ms=now, config=config, clock=clock, ops=ops,
                                producer_last_records=producer_last, upper_bound_offset_of_round=upper,
                                stats=stats, check_done=check_done, window=window, transactions=transactions)
    finally:
        fds.release()


__all__ = [
    "Cleaner", "CleanerStats", "CleaningAbortedError", "SegmentSource", "iter_batches",
    "build_offset_map", "clean_group_into", "snapshot_sources", "SourceFds", "close_sources", "facts_of",
    "run_inline", "drive", "DEFAULT_IO_BUFFER",
]
