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
   appended to). Producer state (idempotence and open transactions) comes from the
   ``<log end offset>.snapshot`` file a clean shutdown wrote (``producer_snapshot``) when no
   segment needs recovery. Otherwise it is loaded from the newest readable snapshot at or
   below the first segment to recover (or the log end offset), and one pass in offset order
   replays every later batch (headers only, plus the one record of each control batch),
   recovering the segments that need it on the way: recovery refills each recovered
   segment's ``.txnindex`` from the replay, which knows the transactions open at its base
   offset (Kafka's ``recoverSegment``). A data dir without any snapshot (from before roll
   snapshots) replays the last two segments (or from the first one to recover). Snapshots:
   Kafka's ``removeStraySnapshots`` (those at segment base offsets stay, plus the newest
   other one if it is past them all), then those past the base offset recovery starts from,
   past the log end offset or below the log start offset are removed.

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
from storage.producer_state import ProducerStateManager, read_end_txn_marker, replay_batch
from storage.segment import (
    CLEANED_SUFFIX, DELETED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, SWAP_SUFFIX, TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX, LogSegment, filename_prefix, is_index_file, is_log_file, offset_from_filename,
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
                *, suffix: str = "", file_already_exists: bool = False,
                txn_index_exists: bool | None = None) -> LogSegment:
    """Open (or create) a segment with the config's index settings and a fresh roll jitter."""
    return LogSegment(dir, base_offset, index_interval_bytes=config.index_interval_bytes,
                      max_index_size=config.segment_index_bytes, clock=clock, file_ops=file_ops,
                      roll_jitter_ms=config.random_segment_jitter(rng), suffix=suffix,
                      file_already_exists=file_already_exists, txn_index_exists=txn_index_exists)


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
_SNAPSHOT_TMP = SNAPSHOT_SUFFIX + ".tmp"


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


def _recover_segment(seg: LogSegment, on_batch=None) -> int:
    try:
        return seg.recover(on_batch)
    except StorageError as e:  # offsets unusable for the indexes: drop the segment's content
        log.warning("invalid offsets while recovering %s (%s); truncating it to its base offset", seg, e)
        return seg.truncate_to(seg.base_offset)


# ---- producer state: snapshots and replay -------------------------------------------------

def apply_batch(state: ProducerStateManager, h, marker, segment: LogSegment | None = None) -> None:
    """Apply one appended batch to ``state``; a transaction its marker aborts becomes an entry
    of ``segment``'s transaction index (when given) with the LSO computed before the
    transaction is completed (Kafka ``LogSegment.updateProducerState``)."""
    completed = replay_batch(state, h, marker)
    if completed is not None:
        if segment is not None:
            segment.update_txn_index(completed, state.last_stable_offset(completed))
        state.complete_txn(completed)


def replay_segment(state: ProducerStateManager, seg: LogSegment, from_offset: int,
                   to_offset: int | None = None) -> None:
    """Replay the batches of ``seg`` whose base offset is in ``[from_offset, to_offset)``:
    headers only, plus the one record of each control batch (its marker)."""
    if seg.size == 0:
        return
    start = seg.offset_index.lookup(from_offset).position if from_offset > seg.base_offset else 0
    for pos, h in seg.iter_headers(start):
        if to_offset is not None and h.base_offset >= to_offset:
            break
        if h.producer_id < 0 or h.base_offset < from_offset:
            continue
        marker = read_end_txn_marker(seg.read_bytes(pos, h.batch_length + LOG_OVERHEAD)) if h.is_control else None
        apply_batch(state, h, marker)


def rebuilding_hook(state: ProducerStateManager, seg: LogSegment):
    """``on_batch`` for ``seg.recover``: replay each batch and refill its transaction index."""
    def on_batch(h, buf, pos):
        if h.producer_id >= 0:
            apply_batch(state, h, read_end_txn_marker(buf, pos) if h.is_control else None, seg)
    return on_batch


def snapshot_files(dir: str, names, ops: FileOps | None = None) -> dict[int, str]:
    """Offset -> path of the producer snapshot files among ``names``; with ``ops``, the
    ``.snapshot.tmp`` files a crash left (a write cut short) are removed on the way."""
    out = {}
    for name in names:
        if name.endswith(SNAPSHOT_SUFFIX):
            off = _offset_or_none(name)
            if off is not None:
                out[off] = os.path.join(dir, name)
        elif ops is not None and name.endswith(_SNAPSHOT_TMP):
            ops.remove(os.path.join(dir, name))
    return out


def remove_stray_snapshots(ops: FileOps, snapshots: dict[int, str], base_offsets) -> None:
    """Kafka ``removeStraySnapshots``: keep the snapshots at segment base offsets and the
    newest other one if it is past every base offset (what a clean shutdown wrote)."""
    if not snapshots:
        return
    bases = set(base_offsets)
    strays = sorted(o for o in snapshots if o not in bases)
    keep_last = bool(strays) and (not bases or strays[-1] > max(bases))
    for o in strays[:-1] if keep_last else strays:
        ops.remove(snapshots.pop(o))


def newest_snapshot_state(ops: FileOps, snapshots: dict[int, str], low: int, high: int):
    """``(state, offset)`` from the newest snapshot with ``low <= offset <= high`` that reads
    back; unreadable ones are removed on the way. ``(None, None)`` when there is none."""
    if not snapshots:
        return None, None
    for off in sorted((o for o in snapshots if low <= o <= high), reverse=True):
        path = snapshots[off]
        try:
            return decode_snapshot(ops.read_file(path), path), off
        except (CorruptSnapshotError, OSError) as e:
            log.warning("ignoring producer snapshot %s (%s); rebuilding producer state from the log", path, e)
            ops.remove(path)
            del snapshots[off]
    return None, None


def rebuild_producer_state(segments: LogSegments, log_start_offset: int, end_offset: int, *,
                           snapshots: dict[int, str] | None = None, ops: FileOps | None = None,
                           ) -> ProducerStateManager:
    """Producer state at ``end_offset``: the newest usable snapshot at or below it (none
    below the log start offset), then the batches from there (Kafka ``rebuildProducerState``);
    without a snapshot, replay from the log start offset."""
    state, offset = (None, None)
    if snapshots:
        state, offset = newest_snapshot_state(ops or DEFAULT_FILE_OPS, snapshots, log_start_offset, end_offset)
    if state is None:
        state, offset = ProducerStateManager(), log_start_offset
    if offset < end_offset:
        for seg in segments.values(offset, end_offset):
            replay_segment(state, seg, max(offset, seg.base_offset), end_offset)
    return state


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
    except FileNotFoundError:  # a new partition: nothing to list
        ops.mkdir(dir)
        names = []
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
                present.discard(name)
    opened: list[tuple[LogSegment, bool]] = []
    for name in names:
        if not name.endswith(LOG_SUFFIX):
            continue
        base = _offset_or_none(name)
        if base is None:
            continue
        prefix = filename_prefix(base)
        missing_index = prefix + INDEX_SUFFIX not in present or prefix + TIME_INDEX_SUFFIX not in present
        seg = new_segment(dir, base, config, clock, ops, rng, file_already_exists=True,
                          txn_index_exists=prefix + TXN_INDEX_SUFFIX in present)
        if had_clean_shutdown:
            seg.assume_flushed()
        segments.add(seg)
        opened.append((seg, missing_index))

    # Segments to recover: after a crash every one that may hold offsets >= the recovery
    # point (in order; the first that loses bytes ends the log), and any other one whose
    # indexes are missing or fail the cheap sanity check.
    unflushed = [] if had_clean_shutdown or segments.is_empty else segments.values(recovery_point)
    to_recover = {s.base_offset for s in unflushed}
    for seg, missing_index in opened:
        if seg.base_offset in to_recover:
            continue
        if missing_index:
            log.error("missing index file for %s; recovering segment and rebuilding index files", seg.log_path)
            to_recover.add(seg.base_offset)
            continue
        if had_clean_shutdown and not seg.has_txn_index_file:
            # As Kafka (KAFKA-7283, LogSegment.sanityCheck): after a clean shutdown the
            # indexes are trusted and not read at load; a start with thousands of partitions
            # spent a third of its time opening and reading every index's last entry.
            continue
        try:
            seg.sanity_check()
        except (CorruptIndexError, CorruptRecordError) as e:
            log.warning("corrupt index for %s (%s); recovering segment and rebuilding index files",
                        seg.log_path, e)
            to_recover.add(seg.base_offset)

    snapshots = snapshot_files(dir, names, ops)
    remove_stray_snapshots(ops, snapshots, segments.base_offsets())

    # Producer state. A clean shutdown left a snapshot at the log end offset: read it, replay
    # nothing. Otherwise start from the newest snapshot at or below the first segment to
    # recover (recovery rebuilds each recovered segment's transaction index, which needs the
    # open transactions at its base offset) or, with none to recover, at or below the log end
    # offset; then one pass in offset order recovers or replays every later segment.
    state = loaded_at = None
    past_recovery_point: dict[int, str] = {}
    # (a log of one empty segment and no snapshot, as most of a broker's partitions are at
    # start-up: no state to load)
    has_data = not segments.is_empty and (len(segments) > 1 or segments.last_segment.size > 0 or bool(snapshots))
    if has_data:
        # (without segments to recover the indexes passed their checks: the LEO is cheap to read)
        replay_to = min(to_recover) if to_recover else segments.last_segment.read_next_offset()
        state, loaded_at = newest_snapshot_state(ops, snapshots, log_start_offset, replay_to)
    if has_data and (to_recover or loaded_at != replay_to):
        if to_recover:
            # Kafka's recoverSegment reloads the state at the segment's base offset
            # (truncateAndReload): snapshots past it are not used. Their files go only if
            # recovery cut the log below them (with the others past the log end, below): one
            # at or below the recovered end still describes intact data, and removing a file
            # per partition (the last clean shutdown's snapshot) was most of a restart after
            # kill -9 with thousands of partitions.
            for off in [o for o in snapshots if o > replay_to]:
                past_recovery_point[off] = snapshots.pop(off)
        replay_from = loaded_at
        if state is None:
            # No snapshot (a data dir from before roll snapshots): the last two segments, as
            # before, or from the first segment to recover if that is earlier.
            bases = segments.base_offsets()
            state = ProducerStateManager()
            replay_from = min(max(log_start_offset, bases[-2] if len(bases) >= 2 else bases[-1]), replay_to)
        version_loaded = state.version
        unflushed_bases = {s.base_offset for s in unflushed}
        total = len(unflushed)
        done = 0
        for seg in segments.values(replay_from):
            if segments.get(seg.base_offset) is not seg:
                continue
            if seg.base_offset not in to_recover:
                replay_segment(state, seg, max(replay_from, seg.base_offset))
                continue
            crash = seg.base_offset in unflushed_bases
            if crash:
                log.info("recovering unflushed segment %d of %s (%d/%d)", seg.base_offset, dir_name, done, total)
            cut = _recover_segment(seg, rebuilding_hook(state, seg))
            recovered += 1
            truncated_total += max(cut, 0)
            if crash:
                done += 1
                if progress is not None:
                    progress(done, total, seg.base_offset)
                if cut > 0:
                    rest = [s for s in unflushed if s.base_offset > seg.base_offset]
                    if rest:
                        log.warning("corruption found in segment %d of %s; deleting %d later segment(s)",
                                    seg.base_offset, dir_name, len(rest))
                    for later in rest:
                        segments.remove(later.base_offset)
                        later.delete_if_exists()
                    break
        if state.version != version_loaded:
            loaded_at = None    # the state moved past the snapshot it came from

    next_offset: int | None = None
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
        state, loaded_at = ProducerStateManager(), None

    if had_clean_shutdown:
        new_recovery_point = next_offset
    else:
        new_recovery_point = min(recovery_point, next_offset)

    segments.active_segment.resize_indexes_when_used(config.segment_index_bytes)
    new_log_start = max(log_start_offset, segments.first_segment.base_offset)
    # Kafka truncateAndReload: snapshots past the log end offset or below the log start
    # offset describe no state of this log.
    for off in [o for o in snapshots if o > next_offset or o < new_log_start] if snapshots else ():
        ops.remove(snapshots.pop(off))
    for off, path in past_recovery_point.items():
        if off > next_offset or off < new_log_start:
            ops.remove(path)
    if state is None:
        state = ProducerStateManager()
    if loaded_at is not None and loaded_at != next_offset:
        loaded_at = None
    return LoadedLog(segments, new_log_start, new_recovery_point, next_offset, state,
                     recovered, truncated_total, loaded_at)


__all__ = ["load_log", "LoadedLog", "new_segment", "rebuild_producer_state", "replay_segment", "apply_batch",
           "rebuilding_hook", "snapshot_files", "remove_stray_snapshots", "newest_snapshot_state", "Progress"]
