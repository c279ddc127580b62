"""Topic management: create, delete, grow, reconfigure, and find a partition's log.

Ties the cluster metadata (``broker.cluster``) to the partition logs (``storage.manager``).
Config overrides are validated by ``storage.log_config`` before anything is written, so a
bad value never reaches disk; a config change is applied to the open logs at once (the next
append sees the new timestamp type or segment.ms, the next retention check the new
retention.ms).
"""
from __future__ import annotations

import asyncio
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

    async def create_topic_off_loop(self, name: str, partitions: int = -1, replication: int = -1,
                                    configs: dict[str, str | None] | None = None) -> TopicInfo:
        """``create_topic`` with its file work (partition dirs, segment and index files,
        ``partition.metadata``, the topic record) in the default executor: creating 50
        partitions is hundreds of syscalls, which on the event loop held up every connection.
        The topic appears (metadata, logs) all at once on the loop once its files exist, so no
        request sees half of it. A second call for the same name meanwhile awaits the first;
        ``create_topic`` refuses the name until then (TOPIC_ALREADY_EXISTS, as Kafka while
        the topic's record is being written)."""
        pending = self._creating.get(name)
        if pending is not None:
            return await asyncio.shield(pending)
        partitions, clean = self.check_new_topic(name, partitions, replication, configs or {})
        t = TopicInfo(name, new_uuid(), partitions, clean)
        loop = asyncio.get_running_loop()
        done = self._creating[name] = loop.create_future()
        try:
            plan = self.logs.plan_new_logs(name, range(partitions), clean)

            def files():
                opened = self.logs.open_planned(name, plan)
                try:
                    for lg in opened:
                        self.meta.write_partition_metadata(lg.dir, t.topic_id)
                    self.meta.write_topic_record(t)
                except BaseException:
                    self.logs.discard_planned(opened)
                    raise
                return opened

            try:
                opened = await loop.run_in_executor(None, files)
            except OSError as exc:
                log.error("creating topic %s failed at a partition: %s", name, exc)
                raise TopicError(ErrorCode.KAFKA_STORAGE_ERROR,
                                 f"Creating the partitions of {name} failed: {exc.strerror or exc}") from None
            # on the loop, with no await from here on: the topic appears whole
            self.meta.add_topic(t)
            self.logs.adopt(plan, opened)
            if self.on_partition_created:
                for lg in opened:
                    self.on_partition_created(name, lg.partition, lg)
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
