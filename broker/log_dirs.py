"""Log-dir moves on the broker's loop (AlterReplicaLogDirs): one task per moving partition
steps ``LogManager.move_step`` (a chunk copied into the ``-future`` log, the swap once it has
caught up) and yields between chunks, so produce and fetch requests keep being served from the
current log while the copy runs; ``replica.alter.log.dirs.io.max.bytes.per.second`` paces the
copies. Moves found unfinished at start-up are resumed.
"""
from __future__ import annotations

import asyncio
import logging
from pathlib import Path

log = logging.getLogger(__name__)

CHUNK_BYTES = 1 << 20   # copied per step between two turns of the event loop


class LogDirMoves:
    def __init__(self, broker):
        self.broker = broker
        self._running: dict[tuple[str, int], asyncio.Task] = {}

    def resume(self) -> None:
        for topic, partition in list(self.broker.logs.future_logs):
            self._spawn((topic, partition))

    def move(self, topic: str, partition: int, dest: Path) -> None:
        """Start moving the partition's log into ``dest`` (nothing to do if it is there).
        Raises KeyError for a partition with no log here."""
        if self.broker.logs.start_move(topic, partition, dest):
            self._spawn((topic, partition))

    def in_progress(self) -> set[tuple[str, int]]:
        return set(self._running)

    def _spawn(self, tp: tuple[str, int]) -> None:
        if tp in self._running:
            return   # the running task steps whatever future the partition has now
        task = asyncio.get_running_loop().create_task(self._run(tp))
        self._running[tp] = task
        self.broker.tasks.append(task)   # cancelled at shutdown with the other background tasks
        task.add_done_callback(lambda _t: self._done(tp, task))

    def _done(self, tp, task) -> None:
        if self._running.get(tp) is task:
            del self._running[tp]
        if task in self.broker.tasks:
            self.broker.tasks.remove(task)

    async def _run(self, tp: tuple[str, int]) -> None:
        b = self.broker
        try:
            while True:
                fut = b.logs.future_logs.get(tp)
                before = fut.size_in_bytes if fut is not None else 0
                rate = b.cfg["replica.alter.log.dirs.io.max.bytes.per.second"]
                if b.logs.move_step(tp[0], tp[1], min(CHUNK_BYTES, rate)):
                    break
                copied = (fut.size_in_bytes - before) if fut is not None and not fut.closed else 0
                # replica.alter.log.dirs.io.max.bytes.per.second (dynamic), shared by all moves as
                # Kafka's one quota is: each pause pays for the bytes just copied
                await asyncio.sleep(copied * len(self._running) / rate if copied and rate < 2**63 - 1 else 0)
        except asyncio.CancelledError:
            raise
        except Exception:
            # the current log is untouched: the partition stays where it is
            log.exception("moving %s-%d to another log dir failed; it stays in %s", tp[0], tp[1],
                          b.logs.dir_of(*tp))
            if tp in b.logs.future_logs:
                b.logs.future_logs.pop(tp).delete()
            return
        plog = b.logs.get(*tp)
        info = b.topics.get(tp[0])
        if plog is not None and info is not None:
            b.meta.write_partition_metadata(plog.dir_str, info.topic_id)
