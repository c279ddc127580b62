"""All partition logs of the broker across its log directories (Kafka's ``LogManager``).

Layout of each log directory::

    <log.dir>/
      .kafka_cleanshutdown                 present only between a clean shutdown and the next load
      recovery-point-offset-checkpoint     Kafka checkpoint format (storage.checkpoints)
      log-start-offset-checkpoint
      <topic>-<partition>/                 one PartitionLog
      <topic>-<partition>.<uuidhex>-delete/  a deleted partition waiting for file.delete.delay.ms

Log-dir moves (AlterReplicaLogDirs, KIP-113): ``start_move`` opens a future log
``<topic>-<partition>.<uuid hex>-future`` in the target dir; ``move_step`` copies the current
log's batches into it (``append_as_follower``), and once it has caught up swaps it in within
the same call (no append can come between): the future is closed (fsynced), the current dir
renamed ``...-delete``, the future renamed to ``<topic>-<partition>``, and the served
``PartitionLog`` object takes over the new files. Crash stance: the current dir is renamed away
only after the future holds every offset and is on disk, so a ``-future`` dir with no current
dir beside it is a complete copy caught mid-swap, and ``load`` finishes the swap; a ``-future``
dir beside a current one is an unfinished copy, loaded and resumed by the broker.
``delete_topic`` removes futures before current logs, which keeps that true.

Load: a log dir with the clean-shutdown marker loads without recovery (cheap index sanity
checks only); otherwise each partition recovers from its checkpointed recovery point. The
marker is removed once everything is loaded, so a crash afterwards means recovery next time.
Shutdown: flush and close every log, write both checkpoints, then write the marker.

The manager runs no threads: the broker calls ``cleanup_expired`` (retention, every
``log.retention.check.interval.ms``), ``flush_dirty`` (flush.ms / flush.messages) and
``checkpoint`` on its own schedule, passing time through the Clock. Per-topic config
overrides are the broker's to persist; it hands them in via ``topic_overrides``.
"""
from __future__ import annotations

import logging
import os
import random
import threading
from pathlib import Path
from typing import Callable, Mapping

from protocol.records.batch import iter_batch_positions
from storage.checkpoints import (
    CLEAN_SHUTDOWN_FILE, LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT, CheckpointError,
    read_checkpoint, write_checkpoint,
)
from storage.clock import Clock, SystemClock
from storage.errors import LogDirNotFoundError, LogDirOfflineError, StorageError
from storage.files import DEFAULT_FILE_OPS, FileOps
from storage.log import PartitionLog, parse_topic_partition
from storage.log_config import LogConfig

log = logging.getLogger(__name__)

DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"
STRAY_DIR_SUFFIX = "-stray"


def _first_batch_from(data: bytes, offset: int) -> int | None:
    """Position of the first batch in ``data`` at or past ``offset`` (``len(data)`` if none);
    None when a batch holds ``offset`` without starting there."""
    for pos, h in iter_batch_positions(data):
        if h.base_offset >= offset:
            return pos
        if h.base_offset + h.last_offset_delta >= offset:
            return None
    return len(data)


class LogManager:
    """Owns every ``PartitionLog``. Not thread-safe (used from the broker's event loop)."""

    def __init__(self, log_dirs: list[str], broker_defaults: Mapping[str, str], clock: Clock | None = None, *,
                 file_ops: FileOps | None = None, rng: random.Random | None = None,
                 topic_overrides: Mapping[str, Mapping[str, str]] | None = None,
                 progress: Callable[[str, int, int, int], None] | None = None):
        if not log_dirs:
            raise ValueError("at least one log directory is required")
        self.log_dirs = [Path(d) for d in log_dirs]
        self.broker_defaults = dict(broker_defaults)
        self._defaults_version = 0   # bumped when the broker defaults change (config cache key)
        self.clock = clock or SystemClock()
        self.file_ops = file_ops or DEFAULT_FILE_OPS
        self.rng = rng or random.Random()
        self.topic_overrides: dict[str, dict[str, str]] = {t: dict(o) for t, o in (topic_overrides or {}).items()}
        self._config_cache: dict[tuple, LogConfig] = {}
        self.progress = progress
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        self._dir_of: dict[tuple[str, int], Path] = {}
        self._dir_counts: dict[Path, int] = {}         # partitions per log dir (placement)
        self._made_dirs: set[Path] = set()             # log dirs known to exist
        self._checkpoint_lock = threading.Lock()        # checkpoint files: written by one thread at a time
        self._checkpoint_taken = 0                      # sequence of the latest snapshot taken
        self._checkpoint_written = 0                    # ... and of the latest one written
        self._pending_dir_deletes: list[tuple[int, Path]] = []
        self._loaded = False
        self._log_deleted_listeners: list[Callable[[str, int, Path], None]] = []
        self.future_logs: dict[tuple[str, int], PartitionLog] = {}   # log-dir moves in progress

    # -- configs ----------------------------------------------------------------------------
    def config_for(self, topic: str) -> LogConfig:
        overrides = self.topic_overrides.get(topic, {})
        # LogConfig is frozen: partitions of a topic share one, resolved once per distinct
        # (broker defaults, overrides) pair (start-up opens thousands of partitions; the
        # defaults enter the key as a version number, as hashing them per call showed up)
        key = (self._defaults_version, tuple(sorted(overrides.items())) if overrides else ())
        cfg = self._config_cache.get(key)
        if cfg is None:
            if len(self._config_cache) > 1024:
                self._config_cache.clear()
            cfg = self._config_cache[key] = LogConfig.from_props(self.broker_defaults, overrides)
        return cfg

    def update_topic_config(self, topic: str, overrides: Mapping[str, str]) -> LogConfig:
        """New overrides for a topic: every open partition log gets the new config live."""
        self.topic_overrides[topic] = dict(overrides)
        cfg = self.config_for(topic)
        for (t, _p), lg in self._logs.items():
            if t == topic:
                lg.set_config(cfg)
        return cfg

    def update_broker_defaults(self, broker_defaults: Mapping[str, str]) -> None:
        self.broker_defaults = dict(broker_defaults)
        self._defaults_version += 1
        for (t, _p), lg in self._logs.items():
            lg.set_config(self.config_for(t))

    def add_log_deleted_listener(self, fn: Callable[[str, int, Path], None]) -> None:
        """``fn(topic, partition, log_dir)`` runs after a partition log is deleted (the log
        cleaner drops its checkpoint entry and aborts a cleaning in progress)."""
        self._log_deleted_listeners.append(fn)

    def _file_delete_delay_ms(self) -> int:
        return LogConfig.from_props(self.broker_defaults, {}).file_delete_delay_ms

    # -- load -------------------------------------------------------------------------------
    def load(self) -> None:
        """Open every partition directory of every log dir (recovering after a crash)."""
        ops = self.file_ops
        now = self.clock.now_ms()
        futures: list[tuple[Path, str]] = []
        for d in self.log_dirs:
            ops.mkdir(d)
            ops.fsync_dir(d.parent)  # a log dir created just now must survive a power loss
            marker = d / CLEAN_SHUTDOWN_FILE
            clean = ops.exists(marker)
            try:
                recovery_points = read_checkpoint(d / RECOVERY_POINT_CHECKPOINT, ops)
            except CheckpointError as e:
                log.warning("ignoring unreadable %s: %s", RECOVERY_POINT_CHECKPOINT, e)
                recovery_points, clean = {}, False
            try:
                start_offsets = read_checkpoint(d / LOG_START_OFFSET_CHECKPOINT, ops)
            except CheckpointError as e:
                log.warning("ignoring unreadable %s: %s", LOG_START_OFFSET_CHECKPOINT, e)
                start_offsets = {}
            # dot-dirs belong to the broker (e.g. its metadata), not to any partition
            names = sorted(n for n in ops.list_dirs(d) if not n.startswith("."))
            log.info("loading %d partition dir(s) from %s (%s shutdown)", len(names), d,
                     "clean" if clean else "unclean")
            d_str = str(d)
            for name in names:
                path = os.path.join(d_str, name)   # a str: a Path per partition showed in start-up profiles
                if name.endswith(DELETE_DIR_SUFFIX):
                    self._pending_dir_deletes.append((now + self._file_delete_delay_ms(), path))
                    continue
                if name.endswith(FUTURE_DIR_SUFFIX):
                    futures.append((d, path))
                    continue
                if name.endswith(STRAY_DIR_SUFFIX):
                    continue
                try:
                    tp = parse_topic_partition(name)
                except ValueError:
                    log.warning("skipping %s: not a partition directory", path)
                    continue
                if tp in self._logs:
                    raise StorageError(f"duplicate log directories for {tp[0]}-{tp[1]}: "
                                       f"{self._dir_of[tp]} and {d}")

                def progress(done, total, base, _name=name):
                    # about ten lines per partition, however many segments it has
                    if done == total or done % max(1, total // 10) == 0:
                        log.info("recovering %s: segment %d (%d/%d)", _name, base, done, total)
                    if self.progress is not None:
                        self.progress(_name, done, total, base)

                lg = PartitionLog.open(path, self.config_for(tp[0]), self.clock, file_ops=ops,
                                       recover=not clean, recovery_point=recovery_points.get(tp, 0),
                                       log_start_offset=start_offsets.get(tp, 0), progress=progress,
                                       rng=self.rng)
                self._logs[tp] = lg
                self._dir_of[tp] = d
                self._dir_counts[d] = self._dir_counts.get(d, 0) + 1
            self._made_dirs.add(d)
            if clean:
                ops.remove(marker)
        for d, path in futures:
            self._load_future(d, path)
        self._loaded = True

    def _load_future(self, d: Path, path: str) -> None:
        """A ``-future`` dir found at load: resumed beside its current log, or (no current log:
        a crash between the two renames of a swap, after the copy was complete and on disk)
        renamed into place and served."""
        tp = parse_topic_partition(os.path.basename(path))
        cfg = self.config_for(tp[0])
        if tp in self._logs:
            if tp in self.future_logs:
                raise StorageError(f"two future logs of {tp[0]}-{tp[1]}: {self.future_logs[tp].dir} and {path}")
            log.info("resuming the move of %s-%d into %s", tp[0], tp[1], d)
            self.future_logs[tp] = PartitionLog.open(path, cfg, self.clock, file_ops=self.file_ops, recover=True,
                                                     rng=self.rng)
            return
        final = d / f"{tp[0]}-{tp[1]}"
        log.warning("finishing the interrupted swap of %s-%d: %s becomes %s", tp[0], tp[1], path, final)
        self.file_ops.rename(path, final)
        self.file_ops.fsync_dir(d)
        lg = PartitionLog.open(final, cfg, self.clock, file_ops=self.file_ops, recover=True, rng=self.rng)
        self._logs[tp] = lg
        self._dir_of[tp] = d
        self._dir_counts[d] = self._dir_counts.get(d, 0) + 1

    # -- access -----------------------------------------------------------------------------
    def get(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    def all_logs(self) -> list[PartitionLog]:
        return list(self._logs.values())

    def topics(self) -> set[str]:
        return {t for t, _ in self._logs}

    def partitions_of(self, topic: str) -> list[int]:
        return sorted(p for t, p in self._logs if t == topic)

    def _next_log_dir(self) -> Path:
        """The log dir holding the fewest partitions (Kafka's nextLogDirs); O(log dirs), the
        counts are kept as partitions come and go (a count per call made creating N
        partitions quadratic)."""
        counts = self._dir_counts
        return min(self.log_dirs, key=lambda d: (counts.get(d, 0), self.log_dirs.index(d)))

    def create(self, topic: str, partition: int, overrides: Mapping[str, str] | None = None) -> PartitionLog:
        """Create (or return the existing) log of ``topic``-``partition``."""
        tp = (topic, partition)
        if overrides is not None:
            self.topic_overrides[topic] = dict(overrides)
        existing = self._logs.get(tp)
        if existing is not None:
            return existing
        d = self._next_log_dir()
        if d not in self._made_dirs:
            self.file_ops.mkdir(d)
            self._made_dirs.add(d)
        lg = PartitionLog.open(d / f"{topic}-{partition}", self.config_for(topic), self.clock,
                               file_ops=self.file_ops, recover=False, rng=self.rng)
        # The new directory's name becomes durable at the log's first flush (as in Kafka, whose
        # LocalLog.flush syncs the directory): thousands of partitions created at once were
        # an fsync each. Until then a power loss may take the empty directory; the broker
        # creates it again from the topic record.
        lg.parent_dir_unsynced = True
        self._logs[tp] = lg
        self._dir_of[tp] = d
        self._dir_counts[d] = self._dir_counts.get(d, 0) + 1
        return lg

    # -- creation in two halves: the file work (any thread), then registration (the loop) ------
    def plan_new_logs(self, topic: str, partitions: range, overrides: Mapping[str, str]) -> list[tuple[int, Path]]:
        """The log dir each new partition of ``topic`` goes to, chosen as ``create`` would one
        by one (Kafka's nextLogDirs); records the topic's overrides. No file is touched."""
        self.topic_overrides[topic] = dict(overrides)
        counts = dict(self._dir_counts)
        plan = []
        for p in partitions:
            d = min(self.log_dirs, key=lambda x: (counts.get(x, 0), self.log_dirs.index(x)))
            counts[d] = counts.get(d, 0) + 1
            plan.append((p, d))
        return plan

    def open_planned(self, topic: str, plan: list[tuple[int, Path]]) -> list[PartitionLog]:
        """The file work of ``plan`` (partition dirs, segment and index files), safe off the
        event loop: it touches no manager state (the file cache is locked). The logs are not
        served until ``adopt``; on an error the ones opened are closed and their dirs removed."""
        cfg = self.config_for(topic)
        opened: list[PartitionLog] = []
        try:
            for p, d in plan:
                self.file_ops.mkdir(d)
                lg = PartitionLog.open(d / f"{topic}-{p}", cfg, self.clock, file_ops=self.file_ops,
                                       recover=False, rng=self.rng)
                lg.parent_dir_unsynced = True  # as ``create``: durable at the first flush
                opened.append(lg)
        except BaseException:
            self.discard_planned(opened)
            raise
        return opened

    def discard_planned(self, opened: list[PartitionLog]) -> None:
        """Close and remove logs opened by ``open_planned`` that will not be adopted."""
        for lg in opened:
            try:
                lg.close()
                if self.file_ops.exists(lg.dir):
                    self.file_ops.rmtree(lg.dir)
            except OSError as exc:
                log.error("could not remove the unused partition dir %s: %s", lg.dir, exc)

    def adopt(self, plan: list[tuple[int, Path]], opened: list[PartitionLog]) -> None:
        """Serve the logs ``open_planned`` made (on the loop: the manager's maps change)."""
        for (p, d), lg in zip(plan, opened):
            tp = (lg.topic, p)
            self._made_dirs.add(d)
            self._logs[tp] = lg
            self._dir_of[tp] = d
            self._dir_counts[d] = self._dir_counts.get(d, 0) + 1

    # -- log dirs and moves between them (AlterReplicaLogDirs, DescribeLogDirs) ----------------
    def dir_of(self, topic: str, partition: int) -> Path | None:
        return self._dir_of.get((topic, partition))

    def log_dir_named(self, path: str) -> Path:
        """The log dir ``path`` names (an absolute path, as Kafka compares them); raises
        LogDirNotFoundError if it is none of ours, LogDirOfflineError if it is offline."""
        if os.path.isabs(path):
            wanted = os.path.normpath(path)
            for d in self.log_dirs:
                if os.path.normpath(os.path.abspath(d)) == wanted:
                    if not self.dir_online(d):
                        raise LogDirOfflineError(f"log dir {d} is offline")
                    return d
        raise LogDirNotFoundError(f"Log dir {path} is not found in the config.")

    @staticmethod
    def dir_online(d: Path) -> bool:
        """A log dir is offline when it is no longer a writable directory."""
        return os.path.isdir(d) and os.access(d, os.W_OK | os.X_OK)

    def start_move(self, topic: str, partition: int, dest: Path) -> bool:
        """Move the partition's log into log dir ``dest`` (one of ``log_dirs``). False when
        there is nothing to copy: the log is there already (a move elsewhere in progress is
        abandoned) or a move there is in progress. True: a future log was opened in ``dest``
        for ``move_step`` to fill. Raises KeyError for a partition this manager has no log of."""
        tp = (topic, partition)
        if tp not in self._logs:
            raise KeyError(tp)
        fut = self.future_logs.get(tp)
        if fut is not None:
            if Path(os.path.dirname(fut.dir_str)) == dest:
                return False
            self._drop_future(tp)
        if self._dir_of[tp] == dest:
            return False
        name = f"{topic}-{partition}.{os.urandom(16).hex()}{FUTURE_DIR_SUFFIX}"
        fut = PartitionLog.open(dest / name, self.config_for(topic), self.clock, file_ops=self.file_ops,
                                recover=False, rng=self.rng)
        fut.parent_dir_unsynced = True
        start = self._logs[tp].log_start_offset
        if start > 0:
            fut.truncate_fully_and_start_at(start)
        self.future_logs[tp] = fut
        return True

    def _drop_future(self, tp: tuple[str, int]) -> None:
        fut = self.future_logs.pop(tp)
        fut.delete()

    def move_step(self, topic: str, partition: int, max_bytes: int = 1 << 20) -> bool:
        """Copy up to ``max_bytes`` of the current log into its future log; once the future
        holds every offset, swap it in (in this same call: nothing is appended in between).
        True when the move is over (swapped, or the log or its future went away). A log the
        cleaner is working on is not swapped until it is done."""
        tp = (topic, partition)
        fut = self.future_logs.get(tp)
        cur = self._logs.get(tp)
        if fut is None or cur is None:
            if fut is not None:
                self._drop_future(tp)
            return True
        if fut.log_end_offset < cur.log_start_offset:
            fut.truncate_fully_and_start_at(cur.log_start_offset)   # retention passed the copy
        copied = 0
        while fut.log_end_offset < cur.log_end_offset and copied < max_bytes:
            r = cur.read(fut.log_end_offset, max_bytes - copied)
            if not r.chunks:
                break
            data = r.data
            start = _first_batch_from(data, fut.log_end_offset)
            if start is None:   # compaction rewrote a batch the copy holds part of: copy again
                fut.truncate_fully_and_start_at(cur.log_start_offset)
                continue
            fut.append_as_follower(memoryview(data)[start:])
            copied += len(data)
        if fut.log_end_offset < cur.log_end_offset or cur.cleaning_in_progress:
            return False
        self._swap(tp, cur, fut)
        return True

    def _swap(self, tp: tuple[str, int], cur: PartitionLog, fut: PartitionLog) -> None:
        """Replace the current log's files with its caught-up future's (see the module docstring)."""
        ops = self.file_ops
        if fut.log_start_offset < cur.log_start_offset:
            fut.delete_records(cur.log_start_offset)
        src, dest = self._dir_of[tp], Path(os.path.dirname(fut.dir_str))
        fut.close()                                          # every offset on disk first
        doomed = src / f"{tp[0]}-{tp[1]}.{os.urandom(16).hex()}{DELETE_DIR_SUFFIX}"
        ops.rename(cur.dir_str, doomed)
        ops.fsync_dir(src)
        final = dest / f"{tp[0]}-{tp[1]}"
        ops.rename(fut.dir_str, final)
        ops.fsync_dir(dest)
        moved = PartitionLog.open(final, cur.config, self.clock, file_ops=ops, recover=False,
                                  recovery_point=fut.log_end_offset, log_start_offset=cur.log_start_offset,
                                  rng=self.rng)
        for seg in cur.take_over(moved):
            seg.close_handlers()
        del self.future_logs[tp]
        self._dir_of[tp] = dest
        self._dir_counts[src] -= 1
        self._dir_counts[dest] = self._dir_counts.get(dest, 0) + 1
        self._pending_dir_deletes.append((self.clock.now_ms() + cur.config.file_delete_delay_ms, doomed))
        log.info("moved %s-%d from %s to %s", tp[0], tp[1], src, dest)

    def log_dir_usage(self) -> list[tuple[Path, bool, int, int]]:
        """Per log dir: (path, online, total bytes, usable bytes) of its volume."""
        out = []
        for d in self.log_dirs:
            online = self.dir_online(d)
            total = usable = -1
            if online:
                st = os.statvfs(d)
                total, usable = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
            out.append((d, online, total, usable))
        return out

    def delete_topic(self, topic: str) -> int:
        """Close the topic's logs, rename their dirs ``<topic>-<p>.<uuidhex>-delete`` and remove
        them after ``file.delete.delay.ms``. Returns the number of partitions removed."""
        delay_ms, detached = self.detach_topic(topic)
        renamed = self.retire_detached(detached)
        self.register_retired(renamed, delay_ms)
        for i in range(len(renamed)):
            self.notify_deleted(renamed, i)
        return len(renamed)

    # -- deletion in three halves: detach (the loop), file work (any thread), register (the loop)
    def detach_topic(self, topic: str) -> tuple[int, list[tuple[tuple[str, int], PartitionLog, Path]]]:
        """Stop serving ``topic``'s logs (on the loop: the manager's maps change); returns the
        topic's ``file.delete.delay.ms`` and (partition, log, log dir) of each log, for
        ``retire_detached``. No file is touched."""
        delay_ms = self.config_for(topic).file_delete_delay_ms
        for tp in [tp for tp in self.future_logs if tp[0] == topic]:
            self._drop_future(tp)   # first: a future without its current log means a swap
        out = []
        for tp in [tp for tp in self._logs if tp[0] == topic]:
            lg = self._logs.pop(tp)
            d = self._dir_of.pop(tp)
            self._dir_counts[d] -= 1
            out.append((tp, lg, d))
        self.topic_overrides.pop(topic, None)
        return delay_ms, out

    def retire_detached(self, detached, *, sync: bool = True) -> list[tuple[tuple[str, int], Path, Path]]:
        """The file work of a deletion, safe off the event loop (it touches no manager state):
        close each detached log and rename its dir ``<topic>-<p>.<uuidhex>-delete``, one
        directory fsync per log dir at the end. ``sync=False`` closes without fsyncs (the data
        is being deleted: nothing of it needs to be durable). Returns (partition, renamed dir,
        log dir) of each, for ``register_retired``."""
        out = []
        dirs: dict[Path, None] = {}
        for tp, lg, d in detached:
            lg.close(sync)
            suffix = f"-{tp[1]}.{os.urandom(16).hex()}{DELETE_DIR_SUFFIX}"  # Kafka: a random UUID, dashes removed
            # as Kafka's logDeleteDirName: cut the topic so the name fits a 255-byte file name
            target = d / (tp[0][:255 - len(suffix)] + suffix)
            self.file_ops.rename(lg.dir, target)
            dirs[d] = None
            out.append((tp, target, d))
        for d in dirs:
            self.file_ops.fsync_dir(d)
        return out

    def register_retired(self, renamed, delay_ms: int) -> None:
        """Schedule the renamed dirs' removal ``delay_ms`` (``file.delete.delay.ms``) from now
        (on the loop)."""
        now = self.clock.now_ms()
        self._pending_dir_deletes.extend((now + delay_ms, target) for _tp, target, _d in renamed)

    def notify_deleted(self, renamed, i: int) -> None:
        """Tell the log-deleted listeners (the cleaner) of the ``i``-th retired partition."""
        tp, _target, d = renamed[i]
        for fn in self._log_deleted_listeners:
            try:
                fn(tp[0], tp[1], d)
            except Exception:
                log.exception("log-deleted listener failed for %s-%d", tp[0], tp[1])

    # -- periodic work ----------------------------------------------------------------------
    def cleanup_expired(self, now_ms: int | None = None) -> int:
        """Retention over every log (compact-only topics delete only below the log start
        offset), then due file removals. Returns the number of segments deleted."""
        total = 0
        for lg in self._logs.values():
            total += lg.delete_old_segments()
        self.run_pending_deletes(now_ms)
        return total

    def remove_expired_producers(self, now_ms: int, producer_id_expiration_ms: int) -> int:
        """Producer state expiry over every log; returns the number of producers forgotten."""
        return sum(lg.remove_expired_producers(now_ms, producer_id_expiration_ms) for lg in self._logs.values())

    def run_pending_deletes(self, now_ms: int | None = None, *, force: bool = False) -> int:
        now = self.clock.now_ms() if now_ms is None else now_ms
        removed = 0
        for lg in self._logs.values():
            removed += lg.run_pending_deletes(now, force=force)
        keep = []
        for due, path in self._pending_dir_deletes:
            if force or due <= now:
                if self.file_ops.exists(path):
                    self.file_ops.rmtree(path)
                    removed += 1
            else:
                keep.append((due, path))
        self._pending_dir_deletes = keep
        return removed

    def flush_dirty(self, now_ms: int | None = None) -> int:
        """Flush logs past flush.ms / flush.messages; returns how many were flushed."""
        n = 0
        for lg in self._logs.values():
            if lg.needs_flush(now_ms):
                lg.flush()
                n += 1
        return n

    def checkpoint(self) -> None:
        """Write recovery points and log start offsets of every log dir (atomically)."""
        self.write_checkpoints(self.checkpoint_snapshot())

    def checkpoint_snapshot(self) -> tuple[int, dict, dict]:
        """What ``write_checkpoints`` writes, taken now (on the event loop: it reads every log)."""
        by_dir_rp: dict[Path, dict] = {d: {} for d in self.log_dirs}
        by_dir_lso: dict[Path, dict] = {d: {} for d in self.log_dirs}
        for tp, lg in self._logs.items():
            d = self._dir_of[tp]
            by_dir_rp[d][tp] = lg.recovery_point
            first = lg.segments.first_segment
            if first is not None and lg.log_start_offset > first.base_offset:
                by_dir_lso[d][tp] = lg.log_start_offset
        self._checkpoint_taken += 1
        return self._checkpoint_taken, by_dir_rp, by_dir_lso

    def write_checkpoints(self, snapshot: tuple[int, dict, dict]) -> None:
        """Write a snapshot's checkpoint files: safe off the event loop (four fsyncs, which on
        a busy disk held up every connection). Invariant: the files never go back to an older
        snapshot than one already written (a periodic write finishing late in its thread after
        shutdown's would bring back a lower log start offset)."""
        seq, by_dir_rp, by_dir_lso = snapshot
        with self._checkpoint_lock:
            if seq <= self._checkpoint_written:
                return
            for d in self.log_dirs:
                self.file_ops.mkdir(d)
                write_checkpoint(d / RECOVERY_POINT_CHECKPOINT, by_dir_rp[d], self.file_ops)
                write_checkpoint(d / LOG_START_OFFSET_CHECKPOINT, by_dir_lso[d], self.file_ops)
            self._checkpoint_written = seq

    def shutdown(self) -> None:
        """Flush and close every log, checkpoint, then mark each log dir cleanly shut down.

        Where the file system can sync everything at once (Linux ``syncfs``), the logs close
        without fsyncs and one sync per log dir makes it all durable: closing thousands of
        written partitions was nine fsyncs each. Should that sync fail, no log dir is marked
        clean (the next start recovers)."""
        ops = self.file_ops
        try:
            batched = bool(self._logs) and ops.syncfs(self.log_dirs[0])   # also probes for syncfs
        except OSError as exc:
            log.warning("syncfs of %s failed (%s); fsyncing file by file", self.log_dirs[0], exc)
            batched = False
        for lg in [*self._logs.values(), *self.future_logs.values()]:
            lg.close(sync=not batched)
        if batched:
            for d in self.log_dirs:
                ops.syncfs(d)
        self.checkpoint()
        for d in self.log_dirs:
            self.file_ops.write_atomic(d / CLEAN_SHUTDOWN_FILE, b"")


__all__ = ["LogManager", "DELETE_DIR_SUFFIX"]
