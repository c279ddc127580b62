"""Topic management: create, delete, grow, reconfigure, and find a partition's log.

Ties the cluster metadata (``broker.cluster``) to the partition logs (``storage.manager``).
Config overrides are validated by ``storage.log_config`` before anything is written, so a
bad value never reaches disk; a config change is applied to the open logs at once (the next
append sees the new timestamp type or segment.ms, the next retention check the new
retention.ms).
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from broker.cluster import ClusterMeta, TopicInfo, new_uuid, validate_topic_name
from protocol.errors import ErrorCode
from storage.errors import InvalidConfigError
from storage.log_config import DEPRECATED_TOPIC_CONFIGS, LogConfig, deprecation_warning, parse_value

if TYPE_CHECKING:
    from storage.log import PartitionLog
    from storage.manager import LogManager

log = logging.getLogger(__name__)


def warn_deprecated(topic: str, configs: dict[str, str]) -> None:
    """A topic given a config Kafka 4 removed but Hourglass honours: the deprecation warning."""
    for k in DEPRECATED_TOPIC_CONFIGS.keys() & configs.keys():
        log.warning("topic %s: %s", topic, deprecation_warning(k))


class TopicError(Exception):
    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


class TopicManager:
    def __init__(self, meta: ClusterMeta, logs: "LogManager", broker_defaults: dict[str, str],
                 *, num_partitions: int, auto_create: bool):
        self.meta = meta
        self.logs = logs
        self.broker_defaults = broker_defaults
        self.num_partitions = num_partitions
        self.auto_create = auto_create
        self.on_partition_created = None  # callback(topic, partition, log)
        # callback(created=, deleted=, changed=) with topic names: the group coordinator
        # re-evaluates subscriptions and regexes (Kafka's onNewMetadataImage)
        self.on_topics_changed = None
        self._creating: dict[str, "asyncio.Future[TopicInfo]"] = {}  # create_topic_off_loop in flight
        # the names an off-loop creation, growth or deletion works on: one at a time per name
        # (Kafka's controller applies them one by one), so no file work of one races another's
        self._busy: dict[str, asyncio.Future] = {}

    # ---- lookups ------------------------------------------------------------------------------
    @property
    def topics(self) -> dict[str, TopicInfo]:
        return self.meta.topics

    def get(self, name: str) -> TopicInfo | None:
        return self.meta.topics.get(name)

    def by_id(self, topic_id: bytes) -> TopicInfo | None:
        return self.meta.by_id.get(topic_id)

    def log(self, topic: str, partition: int) -> "PartitionLog | None":
        return self.logs.get(topic, partition)

    def log_config(self, overrides: dict[str, str]) -> LogConfig:
        return LogConfig.from_props(self.broker_defaults, overrides)

    # ---- start-up -----------------------------------------------------------------------------
    def open_all(self) -> None:
        """Open a log for every partition of every known topic (after LogManager.load())."""
        for t in list(self.meta.topics.values()):
            for p in range(t.partitions):
                plog = self.logs.get(t.name, p) or self.logs.create(t.name, p, t.configs)
                self.meta.write_partition_metadata(plog.dir_str, t.topic_id)
        for (topic, p) in [(lg.topic, lg.partition) for lg in self.logs.all_logs()]:
            if topic not in self.meta.topics:
                log.warning("partition dir %s-%d has no topic record; it stays closed", topic, p)

    # ---- create / delete --------------------------------------------------------------------------
    def validate_configs(self, configs: dict[str, str | None]) -> dict[str, str]:
        clean: dict[str, str] = {}
        for k, v in configs.items():
            if v is None:
                raise TopicError(ErrorCode.INVALID_CONFIG, f"Null value not supported for topic configs: {k}")
            try:
                parse_value(k, v)
            except InvalidConfigError as exc:
                raise TopicError(ErrorCode.INVALID_CONFIG, str(exc)) from None
            clean[k] = v
        try:
            self.log_config(clean)  # cross-key checks
        except InvalidConfigError as exc:
            raise TopicError(ErrorCode.INVALID_CONFIG, str(exc)) from None
        return clean

    def check_new_topic(self, name: str, partitions: int, replication: int,
                        configs: dict[str, str | None]) -> tuple[int, dict[str, str]]:
        err = validate_topic_name(name)
        if err:
            raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, err)
        if name in self.meta.topics or name in self._creating:
            raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        if partitions == -1:
            partitions = self.num_partitions
        if partitions <= 0:
            raise TopicError(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
        if replication not in (-1, 1):
            raise TopicError(ErrorCode.INVALID_REPLICATION_FACTOR,
                             f"Unable to replicate the partition {replication} time(s): "
                             "The target replication factor of " f"{replication} cannot be reached "
                             "because only 1 broker(s) are registered or some brokers have all "
                             "their log directories cordoned.")
        return partitions, self.validate_configs(configs)

    def create_topic(self, name: str, partitions: int = -1, replication: int = -1,
                     configs: dict[str, str | None] | None = None, *, validate_only: bool = False,
                     topic_id: bytes | None = None) -> TopicInfo:
        partitions, clean = self.check_new_topic(name, partitions, replication, configs or {})
        if not validate_only and name in self._busy:  # its old partition dirs are being renamed
            raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' is marked for deletion.")
        t = TopicInfo(name, topic_id or new_uuid(), partitions, clean)
        if validate_only:
            return t
        try:
            self.meta.save_topic(t)
            for p in range(partitions):
                self._open_partition(t, p)
        except OSError as exc:
            # e.g. EMFILE (each partition keeps its segment and index files open) or ENOSPC:
            # undo the half-created topic so the name stays usable, and say why
            log.error("creating topic %s failed at a partition: %s; removing it again", name, exc)
            try:
                self.meta.remove_topic(name)
                self.logs.delete_topic(name)
            except OSError as undo:
                log.error("could not fully remove the half-created topic %s: %s", name, undo)
            raise TopicError(ErrorCode.KAFKA_STORAGE_ERROR,
                             f"Creating the partitions of {name} failed: {exc.strerror or exc}") from None
        log.info("created topic %s with %d partition(s)%s", name, partitions,
                 f" and configs {clean}" if clean else "")
        warn_deprecated(name, t.configs)
        self._topics_changed(created=(name,))
        return t

    def creating(self, name: str) -> bool:
        """True while ``create_topic_off_loop`` makes ``name``'s files."""
        return name in self._creating

    @contextlib.asynccontextmanager
    async def _exclusive(self, name: str):
        """Hold ``name`` for one off-loop creation, growth or deletion, after any in flight."""
        while (pending := self._busy.get(name)) is not None:
            await asyncio.wait([pending])
        mine = self._busy[name] = asyncio.get_running_loop().create_future()
        try:
            yield
        finally:
            del self._busy[name]
            mine.set_result(None)

    async def create_topic_off_loop(self, name: str, partitions: int = -1, replication: int = -1,
                                    configs: dict[str, str | None] | None = None, *,
                                    join: bool = True) -> TopicInfo:
        """``create_topic`` with its file work (partition dirs, segment and index files,
        ``partition.metadata``, the topic record) in the default executor: creating 50
        partitions is hundreds of syscalls, which on the event loop held up every connection.
        The topic appears (metadata, logs) all at once on the loop once its files exist, so no
        request sees half of it. A second call for the same name meanwhile awaits the first;
        ``create_topic`` refuses the name until then (TOPIC_ALREADY_EXISTS, as Kafka while
        the topic's record is being written); with ``join=False`` the second call is refused
        so too (CreateTopics: only one of two requests creates it). A deletion of the name in
        flight is waited for first (its dirs are still being renamed)."""
        pending = self._creating.get(name)
        if pending is not None:
            if not join:
                raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
            return await asyncio.shield(pending)
        partitions, clean = self.check_new_topic(name, partitions, replication, configs or {})
        t = TopicInfo(name, new_uuid(), partitions, clean)
        loop = asyncio.get_running_loop()
        done = self._creating[name] = loop.create_future()
        try:
            plan = self.logs.plan_new_logs(name, range(partitions), clean)
            async with self._exclusive(name):
                opened = await self._partition_files_off_loop(t, plan)
                # the logs are served in slices (no request finds them: the topic is not in
                # the metadata yet), then the topic appears whole at once
                await self._adopt_in_slices(plan, opened)
                self.meta.add_topic(t)
            log.info("created topic %s with %d partition(s)%s", name, partitions,
                     f" and configs {clean}" if clean else "")
            warn_deprecated(name, t.configs)
            self._topics_changed(created=(name,))
            done.set_result(t)
            return t
        except BaseException as exc:
            if not done.done():
                done.set_exception(exc)
                done.exception()  # retrieved: a lone creator must not log "never retrieved"
            raise
        finally:
            self._creating.pop(name, None)

    async def _partition_files_off_loop(self, record: TopicInfo, plan) -> list:
        """In the default executor: the planned partitions' dirs, segment and index files and
        ``partition.metadata``, then ``record`` as the topic's record; the logs opened (not
        yet served). On an error nothing of it is left: KAFKA_STORAGE_ERROR."""
        def files():
            opened = self.logs.open_planned(record.name, plan)
            try:
                for lg in opened:
                    self.meta.write_partition_metadata(lg.dir, record.topic_id)
                self.meta.write_topic_record(record)
            except BaseException:
                self.logs.discard_planned(opened)
                raise
            return opened
        try:
            return await asyncio.get_running_loop().run_in_executor(None, files)
        except OSError as exc:
            log.error("making the partitions of topic %s failed: %s", record.name, exc)
            raise TopicError(ErrorCode.KAFKA_STORAGE_ERROR,
                             f"Creating the partitions of {record.name} failed: {exc.strerror or exc}") from None

    ADOPT_SLICE = 256  # logs registered per turn of the event loop

    async def _adopt_in_slices(self, plan, opened) -> None:
        for i in range(0, len(opened), self.ADOPT_SLICE):
            if i:
                await asyncio.sleep(0)
            part = opened[i:i + self.ADOPT_SLICE]
            self.logs.adopt(plan[i:i + self.ADOPT_SLICE], part)
            if self.on_partition_created:
                for lg in part:
                    self.on_partition_created(lg.topic, lg.partition, lg)

    def _topics_changed(self, **kw) -> None:
        if self.on_topics_changed is not None:
            try:
                self.on_topics_changed(**kw)
            except Exception:  # the topic change happened either way
                log.exception("topic change listener failed")

    def _open_partition(self, t: TopicInfo, p: int) -> None:
        plog = self.logs.get(t.name, p) or self.logs.create(t.name, p, t.configs)
        self.meta.write_partition_metadata(plog.dir, t.topic_id)
        if self.on_partition_created:
            self.on_partition_created(t.name, p, plog)

    def maybe_auto_create(self, name: str) -> TopicInfo | None:
        t = self.meta.topics.get(name)
        if t is not None or not self.auto_create or validate_topic_name(name):
            return t
        try:
            return self.create_topic(name)
        except TopicError:
            return self.meta.topics.get(name)

    def delete_topic(self, name: str) -> TopicInfo:
        t = self.meta.topics.get(name)
        if t is None:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             "This server does not host this topic-partition.")
        self.meta.remove_topic(name)
        self.logs.delete_topic(name)
        log.info("deleted topic %s", name)
        self._topics_changed(deleted=(name,))
        return t

    def add_partitions(self, name: str, count: int, *, validate_only: bool = False) -> TopicInfo:
        t = self.meta.topics.get(name)
        if t is None:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             "This server does not host this topic-partition.")
        if count < t.partitions:
            raise TopicError(ErrorCode.INVALID_PARTITIONS,
                             f"Topic currently has {t.partitions} partitions, which is higher than "
                             f"the requested {count}.")
        if count == t.partitions:
            raise TopicError(ErrorCode.INVALID_PARTITIONS,
                             f"Topic already has {t.partitions} partitions.")
        if validate_only:
            return t
        old = t.partitions
        t.partitions = count
        self.meta.save_topic(t)
        for p in range(old, count):
            self._open_partition(t, p)
        self._topics_changed(changed=(name,))
        return t

    async def add_partitions_off_loop(self, name: str, count: int) -> TopicInfo:
        """``add_partitions`` with its file work (the new partitions' dirs, segment and index
        files, ``partition.metadata``, the topic record) in the default executor: growing a
        topic by thousands of partitions on the event loop held up every listener for
        seconds. The new partitions appear all at once when their files exist; a deletion or
        another growth of the topic meanwhile waits (one at a time per name)."""
        async with self._exclusive(name):
            t = self.add_partitions(name, count, validate_only=True)  # checked again: one may have run meanwhile
            old = t.partitions
            grown = TopicInfo(t.name, t.topic_id, count, dict(t.configs))
            plan = self.logs.plan_new_logs(name, range(old, count), t.configs)
            opened = await self._partition_files_off_loop(grown, plan)
            await self._adopt_in_slices(plan, opened)
            t.partitions = count  # the new partitions appear at once
        self._topics_changed(changed=(name,))
        return t

    NOTIFY_SLICE = 256  # deleted partitions whose waiters and listeners are told per loop turn

    async def delete_topic_off_loop(self, name: str, on_detached=None) -> TopicInfo:
        """``delete_topic`` with its file work (closing each log, renaming its dir for the
        delayed removal) in the default executor, so deleting a topic of thousands of
        partitions holds up no listener. The topic leaves the metadata and the logs at once,
        on the loop (no request finds it after this returns control); ``on_detached(t)`` is
        then called, on the loop, before any file work. A creation of the same name waits
        until the old dirs are renamed."""
        async with self._exclusive(name):
            t = self.meta.topics.get(name)
            if t is None:
                raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                 "This server does not host this topic-partition.")
            self.meta.remove_topic(name)
            delay_ms, detached = self.logs.detach_topic(name)
            if on_detached is not None:
                on_detached(t)
            self._topics_changed(deleted=(name,))
            loop = asyncio.get_running_loop()
            # sync=False: the data is being deleted, nothing of it needs an fsync
            try:
                renamed = await loop.run_in_executor(None, lambda: self.logs.retire_detached(detached, sync=False))
            except OSError as exc:  # the topic is gone either way; what is left stays on disk
                log.error("deleting the partition dirs of topic %s failed: %s", name, exc)
                renamed = []
            self.logs.register_retired(renamed, delay_ms)
            for i in range(len(renamed)):
                if i and i % self.NOTIFY_SLICE == 0:
                    await asyncio.sleep(0)
                self.logs.notify_deleted(renamed, i)
        log.info("deleted topic %s", name)
        return t

    def set_configs(self, name: str, configs: dict[str, str], *, validate_only: bool = False) -> None:
        """Replace a topic's overrides with ``configs`` (validated) and apply them live."""
        t = self.meta.topics.get(name)
        if t is None:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} does not exist")
        clean = self.validate_configs(configs)
        if validate_only:
            return
        t.configs = clean
        self.meta.save_topic(t)
        self.logs.update_topic_config(name, clean)  # applies to every open partition at once
        warn_deprecated(name, clean)
