"""Load a partition directory from disk, recovering what a crash left (Kafka's ``LogLoader``).

Passes, in Kafka's order:

1. Temporary files: ``*.deleted`` are removed; ``*.cleaned`` are removed, and any ``*.swap``
   whose base offset is >= the smallest ``.cleaned`` base offset is removed too (it belongs
   to an unfinished split/clean); the other ``*.swap`` files are valid replacements.
2. Swaps: the offset range ``[min swap base offset, max swap next offset)`` of the valid
   ``.log.swap`` files is computed (scanning batch headers, no index files are created);
   regular segment files whose base offset lies in that range are deleted (they were
   compacted/split but not yet deleted); then every ``.swap`` file is renamed to drop
   the suffix.
3. Segment files: index files (``.index``, ``.timeindex``, ``.txnindex``) without a ``.log``
   are orphans and removed. Each ``.log`` is opened; a missing offset or time index, or
   (when the segment will not be recovered anyway) a failed cheap sanity check, makes
   that segment be recovered (indexes rebuilt). Kafka only resizes a missing time index to
   empty; we rebuild it, so time lookups and time retention stay exact.
4. Recovery, unless the directory had a clean shutdown: every segment that may hold offsets
   >= the recovery point is recovered in order (each batch CRC-checked, indexes rebuilt); at
   the first segment that loses bytes, all later segments are deleted (everything after the
   first bad or torn batch is gone). A log end offset below the checkpointed log start offset
   deletes every segment. An empty directory gets one empty segment at the log start offset.
5. The active segment's indexes are grown back to ``segment.index.bytes`` (when first
   appended to). Producer state comes from the ``<log end offset>.snapshot`` file a clean
   shutdown wrote (``producer_snapshot``); without a clean shutdown or such a file (or if it
   fails its CRC) it is rebuilt from the batch headers of the last two segments, keeping each
   idempotent producer's last five batches. Other snapshot files are stale and removed.

The recovery point returned is the log end offset after a clean shutdown, else
``min(checkpointed recovery point, log end offset)``.
"""
from __future__ import annotations

import logging
import os
import random
from typing import Callable

from protocol.deferred import dataclass
from protocol.errors import CorruptRecordError
from protocol.records.batch import HEADER_SIZE, LOG_OVERHEAD, read_header
from storage.clock import Clock
from storage.errors import StorageError
from storage.files import DEFAULT_FILE_OPS, FileOps
from storage.index import CorruptIndexError
from storage.producer_snapshot import SNAPSHOT_SUFFIX, CorruptSnapshotError, decode_snapshot
from storage.producer_state import ProducerStateManager, last_sequence
from storage.segment import (
    CLEANED_SUFFIX, DELETED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, SWAP_SUFFIX, TIME_INDEX_SUFFIX,
    LogSegment, filename_prefix, is_index_file, is_log_file, offset_from_filename,
)
from storage.segments import LogSegments

log = logging.getLogger(__name__)

Progress = Callable[[int, int, int], None]   # (segments done, segments to recover, base offset)


@dataclass
class LoadedLog:
    segments: LogSegments
    log_start_offset: int
    recovery_point: int
    next_offset: int
    producer_state: ProducerStateManager
    recovered_segments: int = 0
    truncated_bytes: int = 0
    snapshot_offset: int | None = None   # producer state came from this snapshot file


def new_segment(dir, base_offset: int, config, clock: Clock, file_ops: FileOps, rng,
                *, suffix: str = "", file_already_exists: bool = False) -> LogSegment:
    """Open (or create) a segment with the config's index settings and a fresh roll jitter."""
    return LogSegment(dir, base_offset, index_interval_bytes=config.index_interval_bytes,
                      max_index_size=config.segment_index_bytes, clock=clock, file_ops=file_ops,
                      roll_jitter_ms=config.random_segment_jitter(rng), suffix=suffix,
                      file_already_exists=file_already_exists)


def _offset_or_none(name: str) -> int | None:
    try:
        return offset_from_filename(name)
    except ValueError:
        return None


def _swap_log_range(ops: FileOps, path: str, base_offset: int) -> int:
    """Next offset of a ``.log.swap`` file, by walking its batch headers (no index files)."""
    fd = ops.open(path, "r")
    try:
        size = ops.fsize(fd)
        nxt = base_offset
        pos = 0
        while size - pos >= HEADER_SIZE:
            try:
                h = read_header(ops.pread(fd, HEADER_SIZE, pos))
            except CorruptRecordError:
                break
            if pos + h.batch_length + LOG_OVERHEAD > size:
                break
            nxt = h.base_offset + h.last_offset_delta + 1
            pos += h.batch_length + LOG_OVERHEAD
        return nxt
    finally:
        ops.close(fd)


_TEMP_SUFFIXES = (DELETED_SUFFIX, CLEANED_SUFFIX, SWAP_SUFFIX)


def _remove_temp_files_and_collect_swaps(dir: str, ops: FileOps, names: list[str]) -> list[str]:
    swaps: list[str] = []
    cleaned: list[str] = []
    min_cleaned = None
    for name in names:
        if name.endswith(DELETED_SUFFIX):
            log.debug("deleting stray temporary file %s", os.path.join(dir, name))
            ops.remove(os.path.join(dir, name))
        elif name.endswith(CLEANED_SUFFIX):
            off = _offset_or_none(name)
            if off is not None:
                min_cleaned = off if min_cleaned is None else min(min_cleaned, off)
            cleaned.append(name)
        elif name.endswith(SWAP_SUFFIX):
            swaps.append(name)
    valid = []
    for name in swaps:
        off = _offset_or_none(name)
        if min_cleaned is not None and off is not None and off >= min_cleaned:
            log.debug("deleting invalid swap file %s (min cleaned offset %s)", name, min_cleaned)
            ops.remove(os.path.join(dir, name))
        else:
            valid.append(name)
    for name in cleaned:
        ops.remove(os.path.join(dir, name))
    return valid


def _complete_swaps(dir: str, ops: FileOps, swaps: list[str]) -> None:
    lo = hi = None
    for name in swaps:
        base_name = name[: -len(SWAP_SUFFIX)]
        if not is_log_file(base_name):
            continue
        base = _offset_or_none(name)
        if base is None:
            continue
        nxt = _swap_log_range(ops, os.path.join(dir, name), base)
        log.info("found log file %s from an interrupted swap; recovering it by renaming", name)
        lo = base if lo is None else min(lo, base)
        hi = nxt if hi is None else max(hi, nxt)
    if lo is not None:
        for name in ops.list_files(dir):
            if name.endswith(SWAP_SUFFIX):
                continue
            off = _offset_or_none(name)
            if off is not None and lo <= off < hi:
                log.info("deleting segment file %s that was compacted but not yet deleted", name)
                ops.remove(os.path.join(dir, name))
    for name in ops.list_files(dir):
        if name.endswith(SWAP_SUFFIX):
            ops.rename(os.path.join(dir, name), os.path.join(dir, name[: -len(SWAP_SUFFIX)]))


def _recover_segment(seg: LogSegment) -> int:
    try:
        return seg.recover()
    except StorageError as e:  # offsets unusable for the indexes: drop the segment's content
        log.warning("invalid offsets while recovering %s (%s); truncating it to its base offset", seg, e)
        return seg.truncate_to(seg.base_offset)


def rebuild_producer_state(segments: LogSegments, start_offset: int) -> ProducerStateManager:
    """Replay batch headers of the segments holding offsets >= ``start_offset``."""
    ps = ProducerStateManager()
    for seg in segments.values(start_offset):
        if seg.size == 0:
            continue
        for _pos, h in seg.iter_headers(0):
            if h.producer_id >= 0 and h.base_offset >= start_offset:
                ps.update(h.producer_id, h.producer_epoch, h.base_sequence,
                          last_sequence(h.base_sequence, h.last_offset_delta),
                          h.base_offset, h.base_offset + h.last_offset_delta, h.max_timestamp)
    return ps


def load_log(dir, *, config, clock: Clock, file_ops: FileOps | None = None,
             had_clean_shutdown: bool, recovery_point: int = 0, log_start_offset: int = 0,
             progress: Progress | None = None, rng: random.Random | None = None) -> LoadedLog:
    """Load (and if needed recover) the partition directory ``dir``; see the module docstring."""
    # Plain strings, one directory listing in the common case: this runs once per partition
    # at start-up, and path objects and per-file stats were most of its cost.
    dir = os.fspath(dir)
    dir_name = os.path.basename(dir)
    ops = file_ops or DEFAULT_FILE_OPS
    rng = rng or random.Random()
    try:
        names = ops.list_files(dir)
    except FileNotFoundError:  # a new partition
        ops.mkdir(dir)
        names = ops.list_files(dir)
    if any(n.endswith(_TEMP_SUFFIXES) for n in names):
        swaps = _remove_temp_files_and_collect_swaps(dir, ops, names)
        _complete_swaps(dir, ops, swaps)
        names = ops.list_files(dir)

    segments = LogSegments()
    recovered = 0
    truncated_total = 0
    names.sort()
    present = set(names)
    for name in names:
        if is_index_file(name):
            off = _offset_or_none(name)
            if off is None or filename_prefix(off) + LOG_SUFFIX not in present:
                log.warning("found an orphaned index file %s with no corresponding log file; deleting it",
                            os.path.join(dir, name))
                ops.remove(os.path.join(dir, name))
    opened: list[tuple[LogSegment, bool]] = []
    for name in names:
        if not name.endswith(LOG_SUFFIX):
            continue
        base = _offset_or_none(name)
        if base is None:
            continue
        prefix = filename_prefix(base)
        missing_index = prefix + INDEX_SUFFIX not in present or prefix + TIME_INDEX_SUFFIX not in present
        seg = new_segment(dir, base, config, clock, ops, rng, file_already_exists=True)
        if had_clean_shutdown:
            seg.assume_flushed()
        segments.add(seg)
        opened.append((seg, missing_index))

    # Segments recovery will rebuild anyway need no check here.
    to_recover = set() if had_clean_shutdown or segments.is_empty else {
        s.base_offset for s in segments.values(recovery_point)}
    for seg, missing_index in opened:
        if seg.base_offset in to_recover:
            continue
        if missing_index:
            log.error("missing index file for %s; recovering segment and rebuilding index files", seg.log_path)
            truncated_total += _recover_segment(seg)
            recovered += 1
            continue
        try:
            seg.sanity_check()
        except (CorruptIndexError, CorruptRecordError) as e:
            log.warning("corrupt index for %s (%s); recovering segment and rebuilding index files",
                        seg.log_path, e)
            truncated_total += _recover_segment(seg)
            recovered += 1

    next_offset: int | None = None
    if not had_clean_shutdown:
        unflushed = segments.values(recovery_point) if not segments.is_empty else []
        total = len(unflushed)
        for i, seg in enumerate(unflushed):
            log.info("recovering unflushed segment %d of %s (%d/%d)", seg.base_offset, dir_name, i, total)
            cut = _recover_segment(seg)
            recovered += 1
            truncated_total += max(cut, 0)
            if progress is not None:
                progress(i + 1, total, seg.base_offset)
            if cut > 0:
                rest = unflushed[i + 1:]
                if rest:
                    log.warning("corruption found in segment %d of %s; deleting %d later segment(s)",
                                seg.base_offset, dir_name, len(rest))
                for later in rest:
                    segments.remove(later.base_offset)
                    later.delete_if_exists()
                break

    if not segments.is_empty:
        leo = segments.last_segment.read_next_offset()
        if leo < log_start_offset:
            log.warning("deleting all segments of %s: log end offset %d is below the log start offset %d",
                        dir_name, leo, log_start_offset)
            for seg in segments.values():
                seg.delete_if_exists()
            segments.clear()
        else:
            next_offset = leo
    if segments.is_empty:
        segments.add(new_segment(dir, log_start_offset, config, clock, ops, rng))
        next_offset = log_start_offset

    if had_clean_shutdown:
        new_recovery_point = next_offset
    else:
        new_recovery_point = min(recovery_point, next_offset)

    segments.active_segment.resize_indexes_when_used(config.segment_index_bytes)
    new_log_start = max(log_start_offset, segments.first_segment.base_offset)
    producer_state, snapshot_offset = _load_producer_snapshot(
        dir, ops, names, next_offset if had_clean_shutdown and not recovered else None)
    if producer_state is None:
        bases = segments.base_offsets()
        ps_start = max(new_log_start, bases[-2] if len(bases) >= 2 else bases[-1])
        producer_state = rebuild_producer_state(segments, ps_start)
    return LoadedLog(segments, new_log_start, new_recovery_point, next_offset, producer_state,
                     recovered, truncated_total, snapshot_offset)


def _load_producer_snapshot(dir: str, ops: FileOps, names: list[str], usable_offset: int | None):
    """``(state, offset)`` from the snapshot at ``usable_offset`` (the log end offset after a
    clean shutdown that changed nothing at load; None: no snapshot is usable), else
    ``(None, None)``. Every other snapshot file is removed: it describes a past state."""
    state = None
    for name in names:
        if not name.endswith(SNAPSHOT_SUFFIX):
            if name.endswith(SNAPSHOT_SUFFIX + ".tmp"):  # a write a crash cut short
                ops.remove(os.path.join(dir, name))
            continue
        path = os.path.join(dir, name)
        offset = _offset_or_none(name)
        if state is None and offset is not None and offset == usable_offset:
            try:
                state = decode_snapshot(ops.read_file(path), path)
                continue
            except (CorruptSnapshotError, OSError) as e:
                log.warning("ignoring producer snapshot %s (%s); rebuilding producer state from the log", path, e)
        ops.remove(path)
    return state, (usable_offset if state is not None else None)


__all__ = ["load_log", "LoadedLog", "new_segment", "rebuild_producer_state", "Progress"]
