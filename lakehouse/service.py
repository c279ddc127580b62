"""Translation beside the broker: every topic whose ``iceberg.mode`` is on becomes its table.

A background task on the event loop wakes every ``TICK_MS``; a topic is due once
``iceberg.target.lag.ms`` has passed since its last translation round (Redpanda's lag target:
the table trails the log by about that much). For a due topic it reads, per partition, whole
batches from the resume offset up to the last stable offset (a read_committed consumer's
limit) through ``PartitionLog.read`` (short and bounded by ``READ_BYTES``, like a Fetch), with
the aborted transactions of that range, and hands the bytes to one worker thread, which
decodes, writes Parquet and commits the snapshot (``lakehouse.tables``). The request path never
waits on it; one thread keeps the commits of the warehouse in order.

Where translation resumes comes from the table (its current snapshot's summary), read once per
topic in the worker thread; afterwards it is kept in memory, and dropped on any failure so the
next round reads the table again. A resume offset below the log start offset (retention
deleted records before they were translated) restarts at the log start, with a warning.
"""
from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from lakehouse import registry_tables
from lakehouse.registry_modes import is_registry_mode
from lakehouse.registry_tables import metadata_schema
from lakehouse.tables import TopicTables, close_quietly, warehouse_dir
from lakehouse.translate import NAMESPACE, Aborted, Slice, table_name
from protocol.records.batch import iter_batch_positions

log = logging.getLogger(__name__)

TICK_MS = 100
ENABLED_REFRESH_MS = 1000  # how often the topics' iceberg.mode is looked at (O(topics) on the loop)
RETRY_MS = 1000  # after a failed round
READ_BYTES = 4 << 20  # per partition and round: a read on the loop as short as a Fetch's


@dataclass
class TopicState:
    committed: dict[int, int]  # partition -> last offset the table holds
    next: dict[int, int]  # partition -> next offset to read (ahead of committed after a round of no rows)
    topic_id: str = ""
    due_ms: int = 0
    rows: int = 0  # rows committed by this broker since start
    snapshots: int = 0
    last_commit_ms: int | None = None
    behind_since_ms: int | None = None  # since when the table trails the log (None: caught up)
    head: tuple | None = None  # the table's current snapshot: (id, commit time ms, rows)
    dead_letters: int = 0  # rows this broker wrote to <topic>~dlq since start (registry modes)


@dataclass
class Stats:
    rows: int = 0
    commits: int = 0
    failures: int = 0


class IcebergTopics:
    """The broker service (``broker.extensions.BrokerService``) translating topics to tables."""

    def __init__(self, broker, schemas=None):
        self.broker = broker
        # the registry modes' schema lookups (``by_id``, ``latest``), run on the loop for the worker thread
        self.schemas = _OnLoop(schemas) if schemas is not None else None
        self.tables = TopicTables(warehouse_dir(broker.cfg.log_dirs))
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="iceberg")
        self.state: dict[str, TopicState] = {}
        self.stats = Stats()
        self._task: asyncio.Task | None = None
        self._job = None  # the worker thread's current future
        self._enabled: list[str] = []
        self._enabled_at = -ENABLED_REFRESH_MS
        self._more = False  # the last round left records to read: go on without waiting a tick
        self._retry_at: dict[str, int] = {}  # topic -> when a failed round is tried again

    # ---- BrokerService --------------------------------------------------------------------------
    def bind(self) -> None:
        pass

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="iceberg-translation")

    def ready_lines(self) -> list[str]:
        return []

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._job is not None:  # a commit under way finishes (or the process dies: see tables)
            await asyncio.gather(asyncio.wrap_future(self._job), return_exceptions=True)
        self.executor.submit(close_quietly, self.tables)
        self.executor.shutdown(wait=True)

    # ---- the loop ---------------------------------------------------------------------------------
    async def _run(self) -> None:
        while True:
            await asyncio.sleep(0 if self._more else TICK_MS / 1000)
            try:
                await self.translate_due()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("Iceberg translation round failed; retried next round")

    def enabled_topics(self) -> list[str]:
        """Topics whose ``iceberg.mode`` is on (looked up at most every ENABLED_REFRESH_MS)."""
        now = self.broker.clock.now_ms()
        if now - self._enabled_at >= ENABLED_REFRESH_MS:
            logs = self.broker.logs
            self._enabled = sorted(t for t in logs.topics() if logs.config_for(t).iceberg_mode != "disabled")
            self._enabled_at = now
            for gone in set(self.state) - set(self._enabled):
                del self.state[gone]
        return self._enabled

    async def translate_due(self) -> None:
        now = self.broker.clock.now_ms()
        self._more = False
        for topic in self.enabled_topics():
            st = self.state.get(topic)
            if st is not None and st.due_ms > now or self._retry_at.get(topic, 0) > now:
                continue
            self._retry_at.pop(topic, None)
            try:
                await self.translate(topic)
            except asyncio.CancelledError:
                raise
            except Exception:
                self.stats.failures += 1
                self.state.pop(topic, None)  # the table says where to resume next time
                # retried after a second (a registry that cannot answer yet: no log flood)
                self._retry_at[topic] = now + RETRY_MS
                log.exception("translating topic %s to its Iceberg table failed; retried in %d ms", topic, RETRY_MS)

    async def _in_thread(self, fn, *args):
        self._job = self.executor.submit(fn, *args)
        try:
            return await asyncio.wrap_future(self._job)
        finally:
            self._job = None

    async def translate(self, topic: str) -> int:
        """One round for ``topic``: read what is committed past the table and commit it."""
        cfg = self.broker.logs.config_for(topic)
        info = self.broker.topics.get(topic)
        topic_id = info.topic_id.hex() if info is not None else ""
        st = self.state.get(topic)
        if st is not None and st.topic_id != topic_id:  # deleted and made again in between
            st = None
        registry = is_registry_mode(cfg.iceberg_mode)
        if st is None:
            spec = cfg.iceberg_partition_spec
            # pyiceberg (metadata_schema's) is imported in the worker thread, never on the loop
            committed, head = await self._in_thread(
                lambda: self.tables.last_offsets(topic, topic_id, spec, metadata_schema() if registry else None))
            st = self.state[topic] = TopicState(committed, {p: o + 1 for p, o in committed.items()}, topic_id)
            st.head = head
        slices = []
        more = False
        for p in self.broker.logs.partitions_of(topic):
            plog = self.broker.logs.get(topic, p)
            if plog is None:
                continue
            start = st.next.get(p, 0)
            if start < plog.log_start_offset:
                if start > 0 or p in st.committed:
                    log.warning("topic %s partition %d: offsets %d..%d were deleted from the log before "
                                "they were translated; the table resumes at %d", topic, p, start,
                                plog.log_start_offset - 1, plog.log_start_offset)
                start = plog.log_start_offset
            limit = plog.last_stable_offset
            if start >= limit:
                continue
            res = plog.read(start, READ_BYTES, min_one=True, max_offset=limit)
            data = res.data
            if not data:
                continue
            upper = start
            for _, h in iter_batch_positions(data):
                upper = h.next_offset
            more = more or upper < limit
            aborted = tuple(Aborted(a.producer_id, a.first_offset)
                            for a in plog.collect_aborted_transactions(start, upper))
            slices.append(Slice(p, start, limit, data, aborted))
        now = self.broker.clock.now_ms()
        # more to read: go on at once; else after the lag target
        st.due_ms = now if more else now + cfg.iceberg_target_lag_ms
        self._more = self._more or more
        if not slices:
            st.behind_since_ms = None
            return 0
        if st.behind_since_ms is None:
            st.behind_since_ms = now
        if registry:
            if self.schemas is None:
                raise RuntimeError(f"iceberg.mode {cfg.iceberg_mode} needs a Schema Registry lookup")
            self.schemas.loop = asyncio.get_running_loop()
            committed, advanced, rows, head, dead = await self._in_thread(
                registry_tables.commit, self.tables, topic, slices, st.committed, topic_id,
                cfg.iceberg_partition_spec, cfg.iceberg_mode, self.schemas)
            st.dead_letters += dead
        else:
            committed, advanced, rows, head = await self._in_thread(
                self.tables.commit, topic, slices, st.committed, topic_id, cfg.iceberg_partition_spec)
        st.committed = committed
        st.next.update(advanced)
        if head is not None:  # a registry mode's snapshot may hold dead letters only
            st.head = head
        if rows:
            st.rows += rows
            st.snapshots += 1
            st.last_commit_ms = now
            self.stats.rows += rows
            self.stats.commits += 1
        return rows

    def table_view(self, topic: str) -> dict | None:
        """What the console and ``/metrics`` show of a topic's table (None: iceberg.mode off)."""
        if topic not in self.enabled_topics():
            return None
        st = self.state.get(topic)
        n = self.lag(topic)
        since = st.behind_since_ms if st else None
        snap_id, snap_ms, total = (st.head if st and st.head else (None, None, 0))
        return {"table": f"{NAMESPACE}.{table_name(topic)}", "snapshot_id": snap_id, "snapshot_ms": snap_ms,
                "rows": total, "lag_offsets": n,
                "lag_seconds": 0 if n == 0 or since is None else max(self.broker.clock.now_ms() - since, 0) / 1000,
                "rows_since_start": st.rows if st else 0, "commits_since_start": st.snapshots if st else 0,
                "last_commit_ms": st.last_commit_ms if st else None,
                "dead_letters_since_start": st.dead_letters if st else 0}

    def lag(self, topic: str) -> int:
        """Committed records' offsets the table does not cover yet (summed over partitions)."""
        st = self.state.get(topic)
        out = 0
        for p in self.broker.logs.partitions_of(topic):
            plog = self.broker.logs.get(topic, p)
            if plog is not None:
                nxt = max(st.next.get(p, 0) if st else 0, plog.log_start_offset)
                out += max(plog.last_stable_offset - nxt, 0)
        return out


class _OnLoop:
    """Calls of ``target``'s methods from the worker thread, run on the event loop (the
    registry's state is the loop's); the thread waits for the answer."""

    def __init__(self, target, timeout_s: float = 30.0):
        self.target, self.timeout_s = target, timeout_s
        self.loop: asyncio.AbstractEventLoop | None = None

    def __getattr__(self, name):
        fn = getattr(self.target, name)

        def call(*args):
            async def run():
                return fn(*args)
            return asyncio.run_coroutine_threadsafe(run(), self.loop).result(self.timeout_s)
        return call
