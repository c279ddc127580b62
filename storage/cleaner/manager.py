"""The log cleaner of the broker: which log to clean, when, and where it got to
(Kafka's ``LogCleaner`` + ``LogCleanerManager``).

Each round a worker picks the *filthiest* compacted log: for every log whose
``cleanup.policy`` contains ``compact`` (not already being cleaned, not marked uncleanable)
it computes the dirty range and ratio (``decisions.log_to_clean``) and takes the highest
dirty ratio among those above ``min.cleanable.dirty.ratio`` or past
``max.compaction.lag.ms``. The log is marked in progress, cleaned (``Cleaner``), its first
dirty offset for next time written to ``cleaner-offset-checkpoint`` in its log directory
(Kafka's checkpoint format: version 0, count, ``topic partition offset`` lines; entries of
logs that no longer exist are dropped on each write), and a log line reports bytes read and
written, records removed and the time taken. Then, as Kafka's cleaner thread does, retention
runs on compacted logs (``compact,delete`` topics lose whole old segments by time/size; all of
them lose segments below the log start offset). With nothing to clean, a worker sleeps
``log.cleaner.backoff.ms``.

Concurrency: ``run()`` starts ``log.cleaner.threads`` worker coroutines on the event loop;
the file work of a cleaning (offset map, recopy) runs in a thread pool of that size, while
choosing logs, swapping segments and writing checkpoints stay on the event loop, so nothing
races the appends. States per partition (Kafka ``LogCleaningState``): in progress, aborted
(the worker notices at its next check and throws its work away).
A log whose cleaning fails unexpectedly is marked uncleanable until restart (Kafka does the
same, per log dir).
"""
from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from storage.checkpoints import CheckpointError, read_checkpoint, write_checkpoint
from storage.cleaner.cleaner import Cleaner, CleanerStats, CleaningAbortedError, facts_of
from storage.cleaner.decisions import LogFacts, LogToClean, choose_filthiest, log_to_clean
from storage.cleaner.offset_map import DEFAULT_LOAD_FACTOR, OffsetMap

log = logging.getLogger("storage.cleaner")

CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"

IN_PROGRESS = "in_progress"
ABORTED = "aborted"


def log_facts(plog) -> LogFacts:
    """Plain facts of a live ``PartitionLog`` for the pure decisions."""
    cfg = plog.config
    return LogFacts([facts_of(s) for s in plog.segments.values()], plog.log_start_offset,
                    plog.log_end_offset, plog.last_stable_offset, cfg.min_compaction_lag_ms,
                    cfg.max_compaction_lag_ms, cfg.min_cleanable_dirty_ratio, cfg.compact and cfg.delete)


class LogCleaner:
    """Background compaction of the compacted logs of a ``LogManager``."""

    def __init__(self, logs, *, enabled: bool = True, threads: int = 1, backoff_ms: int = 15_000,
                 dedupe_buffer_size: int = 134_217_728, io_buffer_size: int = 524_288,
                 load_factor: float = DEFAULT_LOAD_FACTOR, clock=None):
        self.logs = logs
        self.enabled = enabled
        self.threads = max(0, threads)
        self.backoff_ms = backoff_ms
        self.clock = clock or logs.clock
        per_thread = min(dedupe_buffer_size // max(1, self.threads), 2**31 - 1)
        self._map_memory = per_thread
        self._load_factor = load_factor
        self._io_buffer_size = io_buffer_size
        self._cleaners = [Cleaner(OffsetMap(per_thread, load_factor), io_buffer_size=io_buffer_size, cleaner_id=i)
                          for i in range(max(1, self.threads))]
        self._state: dict[tuple[str, int], str] = {}   # IN_PROGRESS or ABORTED
        self.uncleanable: set[tuple[str, int]] = set()
        self._executor: ThreadPoolExecutor | None = None
        self._stopping = False
        self.last_stats: CleanerStats | None = None
        self.rounds = 0
        self.logs_cleaned = 0     # lifetime counters for the broker's metrics
        self.bytes_reclaimed = 0
        logs.add_log_deleted_listener(self._on_log_deleted)

    @classmethod
    def from_broker_config(cls, logs, cfg) -> "LogCleaner":
        """Build from the broker's ``log.cleaner.*`` keys (``cfg[key]`` gives typed values)."""
        def get(key, default):
            try:
                return cfg[key]
            except KeyError:
                return default
        return cls(logs, enabled=bool(get("log.cleaner.enable", True)), threads=int(get("log.cleaner.threads", 1)),
                   backoff_ms=int(get("log.cleaner.backoff.ms", 15_000)),
                   dedupe_buffer_size=int(get("log.cleaner.dedupe.buffer.size", 134_217_728)),
                   io_buffer_size=int(get("log.cleaner.io.buffer.size", 524_288)),
                   load_factor=float(get("log.cleaner.io.buffer.load.factor", DEFAULT_LOAD_FACTOR)))

    # -- checkpoints ------------------------------------------------------------------------
    @staticmethod
    def _log_dir_of(plog) -> Path:
        return Path(plog.dir).parent

    def _read_checkpoint(self, log_dir: Path) -> dict[tuple[str, int], int]:
        try:
            return read_checkpoint(log_dir / CLEANER_OFFSET_CHECKPOINT, self.logs.file_ops)
        except CheckpointError as e:
            log.warning("ignoring unreadable %s: %s", CLEANER_OFFSET_CHECKPOINT, e)
            return {}

    def all_cleaner_checkpoints(self) -> dict[tuple[str, int], int]:
        out: dict[tuple[str, int], int] = {}
        for d in self.logs.log_dirs:
            out.update(self._read_checkpoint(Path(d)))
        return out

    def update_checkpoint(self, log_dir: Path, tp: tuple[str, int] | None, offset: int | None = None,
                          *, remove: tuple[str, int] | None = None) -> None:
        """Rewrite one log dir's checkpoint: only live logs of that dir, ``tp`` set to
        ``offset``, ``remove`` dropped (Kafka ``updateCheckpoints``)."""
        log_dir = Path(log_dir)
        live = {(lg.topic, lg.partition) for lg in self.logs.all_logs() if self._log_dir_of(lg) == log_dir}
        entries = {k: v for k, v in self._read_checkpoint(log_dir).items() if k in live}
        if remove is not None:
            entries.pop(remove, None)
        if tp is not None:
            entries[tp] = offset
        self.logs.file_ops.mkdir(log_dir)
        write_checkpoint(log_dir / CLEANER_OFFSET_CHECKPOINT, entries, self.logs.file_ops)

    def _on_log_deleted(self, topic: str, partition: int, log_dir: Path) -> None:
        tp = (topic, partition)
        if self._state.get(tp) == IN_PROGRESS:
            self._state[tp] = ABORTED
        self.uncleanable.discard(tp)
        path = Path(log_dir) / CLEANER_OFFSET_CHECKPOINT
        if self.logs.file_ops.exists(path):
            entries = self._read_checkpoint(Path(log_dir))
            if tp in entries:
                del entries[tp]
                write_checkpoint(path, entries, self.logs.file_ops)

    # -- states -----------------------------------------------------------------------------
    def cleaning_state(self, tp: tuple[str, int]):
        return self._state.get(tp)

    def abort_cleaning(self, tp: tuple[str, int]) -> None:
        """Make an in-progress cleaning of ``tp`` throw its work away (non-blocking)."""
        if self._state.get(tp) == IN_PROGRESS:
            self._state[tp] = ABORTED

    def _check_done(self, tp: tuple[str, int]):
        def check():
            if self._stopping or self._state.get(tp) != IN_PROGRESS:
                raise CleaningAbortedError(f"cleaning of {tp[0]}-{tp[1]} aborted")
        return check

    # -- choosing ---------------------------------------------------------------------------
    def grab_filthiest_compacted_log(self, now_ms: int | None = None) -> tuple[object, LogToClean] | None:
        """Kafka ``grabFilthiestCompactedLog``: the dirtiest cleanable compacted log, marked in
        progress, as ``(PartitionLog, LogToClean)``; None when nothing qualifies."""
        now = self.clock.now_ms() if now_ms is None else now_ms
        checkpoints = self.all_cleaner_checkpoints()
        candidates = []
        by_tp = {}
        for plog in self.logs.all_logs():
            tp = (plog.topic, plog.partition)
            if plog.closed or not plog.config.compact or tp in self._state or tp in self.uncleanable:
                continue
            ltc = log_to_clean(tp, log_facts(plog), checkpoints.get(tp), now)
            if ltc.force_update_checkpoint:
                self.update_checkpoint(self._log_dir_of(plog), tp, ltc.first_dirty_offset)
            candidates.append((ltc, plog.config.min_cleanable_dirty_ratio))
            by_tp[tp] = plog
        best = choose_filthiest(candidates)
        if best is None:
            return None
        self._state[best.key] = IN_PROGRESS
        return by_tp[best.key], best

    def _done_cleaning(self, plog, ltc: LogToClean, end_offset: int | None) -> None:
        tp = ltc.key
        st = self._state.get(tp)
        if st == IN_PROGRESS:
            if end_offset is not None and not plog.closed:
                self.update_checkpoint(self._log_dir_of(plog), tp, end_offset)
            del self._state[tp]
        elif st == ABORTED:
            del self._state[tp]

    # -- cleaning ---------------------------------------------------------------------------
    async def clean_filthiest_log(self, cleaner_index: int = 0, *, run=None) -> bool:
        """One round (Kafka ``cleanFilthiestLog``): clean the filthiest log if any, then run
        retention on compacted logs. True if a log was cleaned."""
        grabbed = self.grab_filthiest_compacted_log()
        cleaned = False
        if grabbed is not None:
            plog, ltc = grabbed
            cleaned = await self._clean_log(plog, ltc, self._cleaners[cleaner_index], run)
        self._delete_compacted_segments()
        self.rounds += 1
        return cleaned

    def clean_once(self, now_ms: int | None = None) -> bool:
        """A synchronous round in the calling thread (tests, tools)."""
        from storage.cleaner.cleaner import drive
        return drive(self.clean_filthiest_log(0))

    async def _clean_log(self, plog, ltc: LogToClean, cleaner: Cleaner, run) -> bool:
        tp = ltc.key
        end_offset = None
        plog.cleaning_in_progress = True
        try:
            if run is None:
                end_offset, stats = cleaner.clean(plog, ltc, self.clock.now_ms(), self._check_done(tp))
            else:
                end_offset, stats = await cleaner.clean_async(plog, ltc, self.clock.now_ms(), run=run,
                                                              check_done=self._check_done(tp))
            self.last_stats = stats
            self.logs_cleaned += 1
            self.bytes_reclaimed += max(stats.bytes_read - stats.bytes_written, 0)
            self._log_stats(plog, ltc, end_offset, stats, cleaner.id)
            return True
        except CleaningAbortedError as e:
            log.info("cleaning of %s-%d aborted: %s", plog.topic, plog.partition, e)
            end_offset = None
            return False
        except asyncio.CancelledError:
            end_offset = None
            self._state[tp] = ABORTED   # the worker thread, if busy, stops at its next check
            raise
        except Exception:
            log.exception("unexpected error while cleaning %s-%d; marking it uncleanable", plog.topic, plog.partition)
            self.uncleanable.add(tp)
            end_offset = None
            return False
        finally:
            plog.cleaning_in_progress = False
            self._done_cleaning(plog, ltc, end_offset)

    def _log_stats(self, plog, ltc: LogToClean, end_offset: int, s: CleanerStats, cleaner_id: int = 0) -> None:
        secs = s.elapsed_ms / 1000.0
        mb = s.bytes_read / 1048576.0
        log.info(
            "Log cleaner thread %d cleaned log %s-%d (dirty section = [%d, %d]): %d bytes read, %d bytes "
            "written (%.1f%% size reduction), %d records read, %d retained, %d removed, in %.3f s "
            "(%.1f MB/s; offset map %d bytes / %d records read, %.1f%% full)",
            cleaner_id, plog.topic, plog.partition, ltc.first_dirty_offset, end_offset, s.bytes_read, s.bytes_written,
            100.0 * (1 - s.bytes_written / s.bytes_read) if s.bytes_read else 0.0, s.messages_read,
            s.messages_written, s.messages_removed, secs, mb / secs if secs > 0 else 0.0, s.map_bytes_read,
            s.map_messages_read, 100.0 * s.buffer_utilization)

    def _delete_compacted_segments(self) -> int:
        """Retention for compacted logs not being cleaned (Kafka ``deletableLogs``)."""
        n = 0
        for plog in self.logs.all_logs():
            tp = (plog.topic, plog.partition)
            if plog.closed or not plog.config.compact or tp in self._state or tp in self.uncleanable:
                continue
            try:
                n += plog.delete_old_segments()
            except Exception:
                log.exception("retention of compacted log %s-%d failed", plog.topic, plog.partition)
        return n

    # -- background -------------------------------------------------------------------------
    async def run(self) -> None:
        """Run the cleaner workers until cancelled (a no-op when disabled or 0 threads)."""
        if not self.enabled or self.threads == 0:
            log.info("log cleaner disabled")
            await asyncio.Event().wait()
            return
        loop = asyncio.get_running_loop()
        self._executor = ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="log-cleaner")

        def run_in_thread(fn, *args):
            return loop.run_in_executor(self._executor, fn, *args)

        log.info("starting the log cleaner (%d thread(s), backoff %d ms)", self.threads, self.backoff_ms)
        workers = [asyncio.create_task(self._worker(i, run_in_thread)) for i in range(self.threads)]
        try:
            await asyncio.gather(*workers)
        finally:
            self._stopping = True
            for w in workers:
                w.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            # wait for a cleaning already in its thread: it stops at its next check, and the
            # logs must not be closed under it
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None

    async def _worker(self, i: int, run) -> None:
        while True:
            try:
                cleaned = await self.clean_filthiest_log(i, run=run)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("log cleaner round failed")
                cleaned = False
            if not cleaned:
                await asyncio.sleep(max(self.backoff_ms, 1) / 1000.0)
            else:
                await asyncio.sleep(0)

    def shutdown(self) -> None:
        """Make running cleanings stop at their next check."""
        self._stopping = True


__all__ = ["LogCleaner", "CLEANER_OFFSET_CHECKPOINT", "log_facts"]
