"""The group coordinator front: the one object the request handlers call, after Kafka's
GroupCoordinatorShard (GroupMetadataManager + OffsetMetadataManager) on one event loop.

This node coordinates every group. ``GroupCoordinator`` owns ``groups`` (group id -> a group
of one type: classic ``GroupMetadata``, ``ConsumerGroup``, ``StreamsGroup``), the offsets they
carry and their replay from ``__consumer_offsets``; each request is dispatched by group type
to that type's side, each in its own module and mixed in here:

- ``classic_coordinator``: JoinGroup/SyncGroup/Heartbeat/LeaveGroup on classic groups;
- ``consumer_coordinator``: ConsumerGroupHeartbeat (KIP-848), and the classic protocol spoken
  by members of a consumer group;
- ``streams_coordinator``: StreamsGroupHeartbeat (KIP-1071).

What is common to every type is decided here: OffsetCommit/TxnOffsetCommit/OffsetFetch/
OffsetDelete (each type validates its own members through its hook), ListGroups,
DescribeGroups, DeleteGroups, offsets expiry, load and unload. The group types reach each other
only through the public hooks the front composes (the shape tests/everyday/test_group_shape.py
holds).

JoinGroup and SyncGroup answers are delivered through callables stored on the member; the
``*_async`` wrappers turn them into awaited futures for the request handlers.

Durable state goes through ``store`` (``OffsetsLog``: the ``__consumer_offsets`` topic);
writes are synchronous, so a response is sent only after its record is in the log.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Callable, Iterable, Optional

from protocol.deferred import dataclass
from broker.groups.classic_coordinator import ClassicGroupCoordinator
from broker.groups.consumer_coordinator import ConsumerGroupCoordinator
from broker.groups.errors import GroupError, append_error_code
from broker.groups.consumer_group import ConsumerGroup
from broker.groups.streams_coordinator import StreamsGroupCoordinator
from broker.groups.streams_group import StreamsGroup
from broker.groups.timers import LoopScheduler
from broker.groups.base import GroupOverview, OffsetAndMetadata
from broker.groups.classic_records import group_from_value
from broker.groups.group import GroupMetadata, GroupState, GroupSummary, JoinResult, SyncResult
from protocol.errors import ErrorCode as E

log = logging.getLogger(__name__)
S = GroupState
TP = tuple[str, int]


@dataclass
class GroupConfig:
    """The broker keys the coordinator follows (Kafka's names in the comments)."""
    min_session_timeout_ms: int = 6000            # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1800000         # group.max.session.timeout.ms
    max_size: int = 2**31 - 1                     # group.max.size
    initial_rebalance_delay_ms: int = 3000        # group.initial.rebalance.delay.ms
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000   # offsets.retention.minutes
    offsets_retention_check_interval_ms: int = 600000  # offsets.retention.check.interval.ms
    offset_metadata_max_bytes: int = 4096         # offset.metadata.max.bytes
    offsets_topic_num_partitions: int = 50        # offsets.topic.num.partitions
    # consumer-protocol groups (KIP-848)
    consumer_session_timeout_ms: int = 45000      # group.consumer.session.timeout.ms
    consumer_heartbeat_interval_ms: int = 5000    # group.consumer.heartbeat.interval.ms
    consumer_max_size: int = 2**31 - 1            # group.consumer.max.size
    consumer_assignors: tuple = ("uniform", "range")  # group.consumer.assignors (names)
    migration_policy: str = "bidirectional"       # group.consumer.migration.policy
    consumer_regex_refresh_interval_ms: int = 600000  # group.consumer.regex.refresh.interval.ms
    # Streams groups (KIP-1071)
    streams_session_timeout_ms: int = 45000       # group.streams.session.timeout.ms
    streams_heartbeat_interval_ms: int = 5000     # group.streams.heartbeat.interval.ms
    streams_num_standby_replicas: int = 0         # group.streams.num.standby.replicas
    streams_initial_rebalance_delay_ms: int = 3000  # group.streams.initial.rebalance.delay.ms

    @classmethod
    def from_broker_config(cls, cfg) -> "GroupConfig":
        from broker.config import consumer_assignor_names
        return cls(
            consumer_session_timeout_ms=cfg["group.consumer.session.timeout.ms"],
            consumer_heartbeat_interval_ms=cfg["group.consumer.heartbeat.interval.ms"],
            consumer_max_size=cfg["group.consumer.max.size"],
            consumer_assignors=tuple(consumer_assignor_names(cfg["group.consumer.assignors"])),
            migration_policy=cfg["group.consumer.migration.policy"].lower(),
            consumer_regex_refresh_interval_ms=cfg["group.consumer.regex.refresh.interval.ms"],
            streams_session_timeout_ms=cfg["group.streams.session.timeout.ms"],
            streams_heartbeat_interval_ms=cfg["group.streams.heartbeat.interval.ms"],
            streams_num_standby_replicas=cfg["group.streams.num.standby.replicas"],
            streams_initial_rebalance_delay_ms=cfg["group.streams.initial.rebalance.delay.ms"],
            min_session_timeout_ms=cfg["group.min.session.timeout.ms"],
            max_session_timeout_ms=cfg["group.max.session.timeout.ms"],
            max_size=cfg["group.max.size"],
            initial_rebalance_delay_ms=cfg["group.initial.rebalance.delay.ms"],
            offsets_retention_ms=cfg["offsets.retention.minutes"] * 60000,
            offsets_retention_check_interval_ms=cfg["offsets.retention.check.interval.ms"],
            offset_metadata_max_bytes=cfg["offset.metadata.max.bytes"],
            offsets_topic_num_partitions=cfg["offsets.topic.num.partitions"],
        )


def _future_setter(fut: asyncio.Future):
    def set_(result):
        if not fut.done():
            fut.set_result(result)
    return set_


class GroupCoordinator(ClassicGroupCoordinator, ConsumerGroupCoordinator, StreamsGroupCoordinator):
    def __init__(self, broker=None, *, config: GroupConfig | None = None, clock=None, scheduler=None, store=None,
                 topics=None):
        self.broker = broker
        self.topics = topics if topics is not None else (broker.topics if broker is not None else None)
        self.config = config or (GroupConfig.from_broker_config(broker.cfg) if broker is not None else GroupConfig())
        self.clock = clock or (broker.clock if broker is not None else None)
        self.scheduler = scheduler
        self.store = store
        self.groups: dict[str, GroupMetadata] = {}
        self.active = False
        self._expiry_timer = None
        self.rebalances = 0  # lifetime count, for the broker's metrics
        self._producer_groups: dict[int, set[str]] = {}  # producer id -> groups with its pending txn offsets
        self.init_classic_groups()
        self.init_consumer_groups()
        self.init_streams_groups()

    def now(self) -> int:
        return self.clock.now_ms()

    # ---- lifecycle ------------------------------------------------------------------------------
    async def start(self) -> None:
        if self.scheduler is None:
            self.scheduler = LoopScheduler(asyncio.get_running_loop())
        if self.store is None:
            from broker.groups.offsets_log import OffsetsLog
            self.store = OffsetsLog(self.broker.topics, self.config.offsets_topic_num_partitions, self.clock)
        if self.topics is not None and hasattr(self.topics, "on_topics_changed"):
            self.topics.on_topics_changed = self.on_topics_changed
        self.load()

    def load(self) -> None:
        """Replay the offsets topic (when it exists) and start serving."""
        state = self.store.load()
        now = self.now()
        streams = {}
        for group_id, records in state.streams_groups.items():
            g = self.load_streams_group(group_id, records, state.streams_written.get(group_id, {}))
            if g is not None:
                streams[group_id] = g
        for group_id in (set(state.groups) | set(state.offsets) | set(state.pending_txn) | set(state.consumer_groups)
                         | set(streams)):
            value = state.groups.get(group_id)
            if group_id in streams:
                group = streams[group_id]
            elif group_id in state.consumer_groups:
                group = state.consumer_groups[group_id]
            elif value is not None:
                group = group_from_value(group_id, value)
            else:
                group = GroupMetadata(group_id, S.EMPTY, now)
            group.offsets.update(state.offsets.get(group_id, {}))
            group.offset_positions.update(state.positions.get(group_id, {}))
            for pid, pending in state.pending_txn.get(group_id, {}).items():
                group.pending_txn_offsets[pid] = dict(pending)
                self._producer_groups.setdefault(pid, set()).add(group_id)
            self.groups[group_id] = group
            if isinstance(group, ConsumerGroup):
                self.schedule_loaded_consumer_group(group)
                continue
            if isinstance(group, StreamsGroup):
                self.schedule_loaded_streams_group(group)
                continue
            # Kafka's onGroupLoaded: loaded members must heartbeat within their session timeout
            for m in group.all_members():
                self.complete_and_schedule_next_heartbeat(group, m)
        self.active = True
        self._schedule_offsets_expiry()
        if self.groups:
            log.info("loaded %d group(s) with %d committed offset(s)", len(self.groups),
                     sum(len(g.offsets) for g in self.groups.values()))

    async def stop(self) -> None:
        self.unload()

    def unload(self) -> None:
        """Stop serving: parked JoinGroup/SyncGroup requests are answered NOT_COORDINATOR (as
        when Kafka resigns a partition) and every timer is cancelled."""
        if not self.active:
            return
        self.active = False
        self.cancel_consumer_group_timers()
        self.cancel_streams_group_timers()
        self.cancel_classic_group_timers()
        if self._expiry_timer is not None:
            self._expiry_timer.cancel()
            self._expiry_timer = None

    def ensure_offsets_topic(self) -> None:
        """Create ``__consumer_offsets`` now if it does not exist (FindCoordinator calls this)."""
        ensure = getattr(self.store, "ensure_topic", None)
        if ensure is not None:
            ensure()

    async def ensure_offsets_topic_off_loop(self) -> None:
        """``ensure_offsets_topic`` with the file work off the event loop (FindCoordinator)."""
        ensure = getattr(self.store, "ensure_topic_off_loop", None)
        if ensure is not None:
            await ensure()
        else:
            self.ensure_offsets_topic()

    def partition_for(self, group_id: str) -> int:
        fn = getattr(self.store, "partition_for", None)
        return fn(group_id) if fn is not None else 0

    # ---- validation -----------------------------------------------------------------------------
    def _validate_group_status(self, group_id: Optional[str], *, allow_empty: bool) -> Optional[int]:
        """Kafka's validateGroupStatus: OffsetCommit/OffsetFetch/DescribeGroups/DeleteGroups
        accept the empty group id; the group membership APIs do not."""
        if group_id is None or (not allow_empty and group_id == ""):
            return E.INVALID_GROUP_ID
        if not self.active:
            return E.COORDINATOR_NOT_AVAILABLE
        return None

    def _add_group(self, group: GroupMetadata) -> GroupMetadata:
        return self.groups.setdefault(group.group_id, group)

    # ---- JoinGroup ------------------------------------------------------------------------------
    def handle_join_group(self, group_id: str, member_id: str, group_instance_id: Optional[str],
                          require_known_member_id: bool, support_skip_assignment: bool, client_id: str,
                          client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int,
                          protocol_type: str, protocols: list[tuple[str, bytes]],
                          callback: Callable[[JoinResult], None], reason: Optional[str] = None) -> None:
        err = self._validate_group_status(group_id, allow_empty=False)
        if err is not None:
            callback(JoinResult(member_id, err))
            return
        if not self.config.min_session_timeout_ms <= session_timeout_ms <= self.config.max_session_timeout_ms:
            callback(JoinResult(member_id, E.INVALID_SESSION_TIMEOUT))
            return
        is_unknown = member_id == ""
        group = self.groups.get(group_id)
        if isinstance(group, StreamsGroup):
            if group.members:
                # Kafka: "Group g is not a classic group." (GroupIdNotFoundException)
                callback(JoinResult(member_id, E.GROUP_ID_NOT_FOUND))
                return
            log.info("[GroupId %s] Converted the empty streams group to a classic group.", group_id)
            self._replace_empty_streams_group(group)
            group = self.groups.get(group_id)
        if isinstance(group, ConsumerGroup):
            if group.members:
                # classic members join a non-empty consumer group as it is (KIP-848 migration)
                self.classic_join_to_consumer_group(
                    group, member_id, group_instance_id, require_known_member_id, client_id, client_host,
                    rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols, callback)
                return
            # an empty consumer group is replaced by a classic one (its offsets stay)
            log.info("[GroupId %s] Converted the empty consumer group to a classic group.", group_id)
            self.delete_consumer_group(group, keep_offsets=True)
            group = self.groups.get(group_id)
        if group is None:
            if not is_unknown:
                callback(JoinResult(member_id, E.UNKNOWN_MEMBER_ID))
                return
            group = self._add_group(GroupMetadata(group_id, S.EMPTY, self.now()))
        self.classic_group_join(group, member_id, group_instance_id, require_known_member_id, support_skip_assignment,
                                client_id, client_host, rebalance_timeout_ms, session_timeout_ms, protocol_type,
                                protocols, callback, reason)

    def handle_sync_group(self, group_id: str, generation_id: int, member_id: str, protocol_type: Optional[str],
                          protocol_name: Optional[str], group_instance_id: Optional[str],
                          assignments: dict[str, bytes], callback: Callable[[SyncResult], None]) -> None:
        err = self._validate_group_status(group_id, allow_empty=False)
        if err is not None:
            callback(SyncResult(err))
            return
        group = self.groups.get(group_id)
        if group is None or isinstance(group, StreamsGroup):
            callback(SyncResult(E.UNKNOWN_MEMBER_ID))
            return
        if isinstance(group, ConsumerGroup):
            callback(self.classic_sync_to_consumer_group(group, member_id, group_instance_id, generation_id,
                                                          protocol_type, protocol_name))
            return
        self.classic_group_sync(group, generation_id, member_id, protocol_type, protocol_name, group_instance_id,
                                assignments, callback)

    def handle_heartbeat(self, group_id: str, member_id: str, group_instance_id: Optional[str],
                         generation_id: int) -> int:
        err = self._validate_group_status(group_id, allow_empty=False)
        if err is not None:
            return err
        group = self.groups.get(group_id)
        if group is None or isinstance(group, StreamsGroup):
            return E.UNKNOWN_MEMBER_ID
        if isinstance(group, ConsumerGroup):
            return self.classic_heartbeat_to_consumer_group(group, member_id, group_instance_id, generation_id)
        return self.classic_group_heartbeat(group, member_id, group_instance_id, generation_id)

    def handle_leave_group(self, group_id: str, members: list[tuple[str, Optional[str], Optional[str]]]
                           ) -> tuple[int, list[tuple[str, Optional[str], int]]]:
        """``members``: (member id, group instance id, reason). Returns the top-level error and
        one (member id, group instance id, error) per leaving member."""
        err = self._validate_group_status(group_id, allow_empty=False)
        if err is not None:
            return err, []
        group = self.groups.get(group_id)
        if group is None or isinstance(group, StreamsGroup):
            return 0, [(mid, gi, E.UNKNOWN_MEMBER_ID) for mid, gi, _ in members]
        if isinstance(group, ConsumerGroup):
            try:
                return 0, self.classic_leave_to_consumer_group(group, members)
            except GroupError as exc:
                return exc.code, []
        return self.classic_group_leave(group, members)

    # ---- offsets --------------------------------------------------------------------------------
    def handle_commit_offsets(self, group_id: str, member_id: str, group_instance_id: Optional[str],
                              generation_id: int, offsets: dict[TP, OffsetAndMetadata],
                              api_version: int = 8) -> dict[TP, int]:
        err = self._validate_group_status(group_id, allow_empty=True)
        if err is not None:
            return {tp: err for tp in offsets}
        group = self.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                # a commit from a member of a group that is gone: OffsetCommit v9 (the first
                # KIP-848 clients use) says so; older versions say ILLEGAL_GENERATION
                return {tp: E.GROUP_ID_NOT_FOUND if api_version >= 9 else E.ILLEGAL_GENERATION for tp in offsets}
            log.info("creating simple consumer group %s via manual offset commit", group_id)
            group = self._add_group(GroupMetadata(group_id, S.EMPTY, self.now()))
        if isinstance(group, StreamsGroup):
            err = self.validate_streams_offset_commit(group, member_id, generation_id, api_version=api_version,
                                                       transactional=False, partitions=offsets)
            if err is not None:
                return {tp: err for tp in offsets}
            return self._store_offsets(group, offsets)
        if isinstance(group, ConsumerGroup):
            err = self.validate_consumer_offset_commit(group, member_id, generation_id, api_version=api_version,
                                                        transactional=False, partitions=offsets,
                                                        instance_id=group_instance_id)
            if err is not None:
                return {tp: err for tp in offsets}
            if log.isEnabledFor(logging.DEBUG):
                # with the OffsetFetch answers, the history of a partition's position as members saw it
                log.debug("[GroupId %s] OffsetCommit by member %s at epoch %d: %s", group_id, member_id,
                          generation_id, ", ".join(f"{t}-{p}={om.offset}" for (t, p), om in sorted(offsets.items())))
            return self._store_offsets(group, offsets)
        err = self.validate_classic_offset_commit(group, generation_id, member_id, group_instance_id)
        if err is not None:
            return {tp: err for tp in offsets}
        state = group.state
        if state is S.EMPTY:
            return self._store_offsets(group, offsets)
        if state in (S.STABLE, S.PREPARING_REBALANCE):
            # commits of the current generation stay valid while a rebalance is prepared;
            # the heartbeat answer tells the member to rejoin
            self.complete_and_schedule_next_heartbeat(group, group.get(member_id))
            return self._store_offsets(group, offsets)
        return {tp: E.REBALANCE_IN_PROGRESS for tp in offsets}  # CompletingRebalance

    def _store_offsets(self, group: GroupMetadata, offsets: dict[TP, OffsetAndMetadata],
                       producer: Optional[tuple[int, int]] = None) -> dict[TP, int]:
        """Write the offsets whose metadata fits (one batch; a transactional batch of
        ``producer`` = (id, epoch), pending until its marker) and apply them once written."""
        out: dict[TP, int] = {}
        good: dict[TP, OffsetAndMetadata] = {}
        limit = self.config.offset_metadata_max_bytes
        for tp, om in offsets.items():
            if om.metadata is not None and len(om.metadata) > limit:
                out[tp] = E.OFFSET_METADATA_TOO_LARGE
            else:
                good[tp] = om
        if good:
            try:
                if producer is None:
                    info = self.store.write_offsets(group.group_id, good)
                else:
                    info = self.store.write_txn_offsets(group.group_id, producer[0], producer[1], good)
            except Exception as exc:
                code = append_error_code(exc)
                log.warning("%soffset commit of group %s failed: %r", "" if producer is None else "transactional ",
                            group.group_id, exc)
                for tp in good:
                    out[tp] = code
                return out
            position = getattr(info, "base_offset", -1)
            if producer is None:
                group.commit_offsets(good, position)
            else:
                group.add_pending_txn_offsets(producer[0], good, position)
                self._producer_groups.setdefault(producer[0], set()).add(group.group_id)
            for tp in good:
                out[tp] = 0
        return out

    # ---- transactional offsets (KIP-98, KIP-447) --------------------------------------------------
    def handle_txn_commit_offsets(self, group_id: str, producer_id: int, producer_epoch: int, member_id: str,
                                  group_instance_id: Optional[str], generation_id: int,
                                  offsets: dict[TP, OffsetAndMetadata],
                                  verify: Optional[Callable[[], int]] = None) -> dict[TP, int]:
        """TxnOffsetCommit: validated like a commit (but accepted during CompletingRebalance and
        from non-members of a non-empty group, as Kafka does), written as one transactional
        batch of the producer, and pending until the transaction's marker. ``verify`` is the
        KIP-890 check that the group's partition is in the producer's transaction."""
        if not self.active:
            return {tp: E.COORDINATOR_NOT_AVAILABLE for tp in offsets}
        if not group_id:
            return {tp: E.INVALID_GROUP_ID for tp in offsets}
        if verify is not None:
            err = verify()
            if err:
                return {tp: err for tp in offsets}
        group = self.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                return {tp: E.ILLEGAL_GENERATION for tp in offsets}
            log.info("creating simple consumer group %s via transactional offset commit", group_id)
            group = self._add_group(GroupMetadata(group_id, S.EMPTY, self.now()))
        if isinstance(group, StreamsGroup):
            err = self.validate_streams_offset_commit(group, member_id, generation_id, api_version=5,
                                                       transactional=True, partitions=offsets)
        elif isinstance(group, ConsumerGroup):
            err = self.validate_consumer_offset_commit(group, member_id, generation_id, api_version=5,
                                                        transactional=True, partitions=offsets,
                                                        instance_id=group_instance_id)
        else:
            err = self.validate_classic_offset_commit(group, generation_id, member_id, group_instance_id,
                                               is_transactional=True)
        if err is not None:
            return {tp: err for tp in offsets}
        return self._store_offsets(group, offsets, (producer_id, producer_epoch))

    def complete_transaction(self, producer_id: int, offsets_partition: int, commit: bool) -> int:
        """A COMMIT/ABORT marker of ``producer_id`` is in ``__consumer_offsets`` partition
        ``offsets_partition``: its pending offsets of the groups there become committed (or are
        dropped). Returns the number of offsets committed."""
        n = 0
        groups = self._producer_groups.get(producer_id, set())
        for group_id in [g for g in groups if self.partition_for(g) == offsets_partition]:
            groups.discard(group_id)
            group = self.groups.get(group_id)
            if group is not None:
                n += group.complete_pending_txn_offsets(producer_id, commit)
        if not groups:
            self._producer_groups.pop(producer_id, None)
        return n

    def handle_fetch_offsets(self, group_id: str, require_stable: bool = False,
                             partitions: Optional[list[TP]] = None, member_id: Optional[str] = None,
                             member_epoch: int = -1) -> tuple[int, dict[TP, tuple[int, int, str, int]]]:
        """(error, {tp: (offset, leader epoch, metadata, error)}); ``partitions`` None = all the
        group's committed offsets. Unknown groups and partitions answer offset -1, metadata "".
        OffsetFetch v9+ carries the member id and epoch of a consumer-protocol member, checked
        as Kafka does (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH)."""
        err = self._validate_group_status(group_id, allow_empty=True)
        if err is not None:
            return err, {}
        group = self.groups.get(group_id)
        if isinstance(group, (StreamsGroup, ConsumerGroup)):
            err = self._validate_member_offset_fetch(group, member_id, member_epoch)
            if err is not None:
                log.debug("[GroupId %s] OffsetFetch by member %s at epoch %d refused: %s", group_id, member_id,
                          member_epoch, E(err).name)
                return err, {}
        elif group is None or group.is_(S.DEAD):
            return 0, {tp: (-1, -1, "", 0) for tp in (partitions or [])}
        tps = list(group.offsets) if partitions is None else partitions
        out = {}
        for tp in tps:
            if require_stable and group.has_pending_txn_offset(tp):
                # KIP-447: an offset a transaction is about to commit is not stable yet
                out[tp] = (-1, -1, "", E.UNSTABLE_OFFSET_COMMIT)
                continue
            om = group.offsets.get(tp)
            out[tp] = (-1, -1, "", 0) if om is None else (om.offset, om.leader_epoch, om.metadata, 0)
        if isinstance(group, ConsumerGroup) and log.isEnabledFor(logging.DEBUG):
            log.debug("[GroupId %s] OffsetFetch by member %s at epoch %d: %s", group_id, member_id, member_epoch,
                      ", ".join(f"{t}-{p}={v[0]}" for (t, p), v in sorted(out.items())))
        return 0, out

    @staticmethod
    def _validate_member_offset_fetch(group, member_id: Optional[str], epoch: int) -> Optional[int]:
        """OffsetFetch v9+ by a member of a consumer or Streams group: the member must be known
        and at its current epoch (a classic-protocol member of a consumer group gets
        ILLEGAL_GENERATION for a wrong one, as Kafka answers it)."""
        if member_id is None and epoch < 0:
            return None
        m = group.members.get(member_id) if member_id is not None else None
        if m is None:
            return E.UNKNOWN_MEMBER_ID
        if epoch != m.member_epoch:
            return E.ILLEGAL_GENERATION if getattr(m, "use_classic_protocol", False) else E.STALE_MEMBER_EPOCH
        return None

    # ---- admin ----------------------------------------------------------------------------------
    def handle_list_groups(self, states: Iterable[str] = (), types: Iterable[str] = ()
                           ) -> tuple[int, list[GroupOverview]]:
        if not self.active:
            return E.COORDINATOR_NOT_AVAILABLE, []
        states = {s.lower() for s in states}
        types = {t.lower() for t in types}
        out = []
        for g in self.groups.values():
            if isinstance(g, ConsumerGroup):
                ov = GroupOverview(g.group_id, g.protocol_type, str(g.state), "consumer")
            elif isinstance(g, StreamsGroup):
                ov = g.overview()
            else:
                ov = g.overview()
            if (not states or ov.state.lower() in states) and (not types or ov.group_type in types):
                out.append(ov)
        return 0, out

    def handle_describe_group(self, group_id: str) -> tuple[int, GroupSummary]:
        err = self._validate_group_status(group_id, allow_empty=True)
        if err is not None:
            return err, GroupSummary("", "", "", [])
        group = self.groups.get(group_id)
        if group is None or isinstance(group, (ConsumerGroup, StreamsGroup)):
            # Kafka 4: DescribeGroups describes classic groups; before v6 any other group is
            # answered as Dead without an error (ConsumerGroupDescribe describes it)
            return 0, GroupSummary("Dead", "", "", [])
        return 0, group.summary()

    def handle_delete_groups(self, group_ids: Iterable[str]) -> dict[str, int]:
        errors: dict[str, int] = {}
        eligible: list[GroupMetadata] = []
        for gid in group_ids:
            err = self._validate_group_status(gid, allow_empty=True)
            if err is not None:
                errors[gid] = err
                continue
            group = self.groups.get(gid)
            if isinstance(group, (ConsumerGroup, StreamsGroup)):
                if group.members:
                    errors[gid] = E.NON_EMPTY_GROUP
                else:
                    eligible.append(group)
            elif group is None or group.is_(S.DEAD):
                errors[gid] = E.GROUP_ID_NOT_FOUND
            elif group.is_(S.EMPTY):
                group.transition_to(S.DEAD, self.now())
                eligible.append(group)
            else:
                errors[gid] = E.NON_EMPTY_GROUP
        if eligible:
            removed = self._cleanup_group_metadata(eligible, lambda g: g.remove_all_offsets())
            for g in eligible:
                errors[g.group_id] = 0
            log.info("deleted groups %s (%d offsets removed)", [g.group_id for g in eligible], removed)
        return errors

    def handle_delete_offsets(self, group_id: str, partitions: list[TP]) -> tuple[int, dict[TP, int]]:
        err = self._validate_group_status(group_id, allow_empty=False)
        if err is not None:
            return err, {}
        group = self.groups.get(group_id)
        if group is None or (isinstance(group, GroupMetadata) and group.is_(S.DEAD)):
            return E.GROUP_ID_NOT_FOUND, {}
        errors: dict[TP, int] = {}
        if isinstance(group, GroupMetadata) and group.is_(S.EMPTY):
            eligible = list(partitions)
        elif isinstance(group, StreamsGroup) and group.is_empty():
            eligible = list(partitions)
        elif isinstance(group, (ConsumerGroup, StreamsGroup)) or group.is_consumer_group:
            eligible = [tp for tp in partitions if not group.is_subscribed_to_topic(tp[0])]
            for tp in partitions:
                if group.is_subscribed_to_topic(tp[0]):
                    errors[tp] = E.GROUP_SUBSCRIBED_TO_TOPIC
        else:
            return E.NON_EMPTY_GROUP, {}
        if eligible:
            wanted = set(eligible)
            self._cleanup_group_metadata([group], lambda g: g.remove_offsets(wanted))
            for tp in eligible:
                errors[tp] = 0
        return 0, errors

    def handle_deleted_partitions(self, partitions: Iterable[TP]) -> int:
        """A topic (or partitions) was deleted: drop every group's offsets for them."""
        tps = set(partitions)
        return self._cleanup_group_metadata(list(self.groups.values()), lambda g: g.remove_offsets(tps))

    def _cleanup_group_metadata(self, groups: list[GroupMetadata], selector) -> int:
        """Kafka's cleanupGroupMetadata: remove the selected offsets (tombstones in the log);
        an Empty group left without offsets dies and its metadata is tombstoned too."""
        total = 0
        now = self.now()
        for group in groups:
            removed = selector(group)
            if isinstance(group, (ConsumerGroup, StreamsGroup)):
                if removed:
                    try:
                        self.store.write_tombstones(group.group_id, list(removed))
                    except Exception as exc:
                        log.warning("failed to write tombstones for group %s: %r", group.group_id, exc)
                if group.is_empty() and not group.has_offsets():
                    self._delete_empty_group(group)  # Kafka's maybeDeleteGroup
                total += len(removed)
                continue
            if group.is_(S.EMPTY) and not group.has_offsets():
                group.transition_to(S.DEAD, now)
            dead = group.is_(S.DEAD)
            if dead:
                self.cancel_group_timers(group)
                if self.groups.get(group.group_id) is group:
                    del self.groups[group.group_id]
            # an offsets-only group (generation 0) never wrote metadata: no tombstone for it
            group_record = dead and group.generation_id > 0
            if removed or group_record:
                try:
                    self.store.write_tombstones(group.group_id, list(removed), group_record=group_record)
                except Exception as exc:
                    log.warning("failed to write tombstones for group %s: %r", group.group_id, exc)
            total += len(removed)
        return total

    def _delete_empty_group(self, group) -> None:
        """An empty consumer or Streams group left without offsets goes, its records tombstoned."""
        if isinstance(group, ConsumerGroup):
            self.delete_consumer_group(group)
        elif self.groups.get(group.group_id) is group:
            del self.groups[group.group_id]
            self.persist_streams_group(group, deleted=True)

    def cleanup_expired_offsets(self, now_ms: Optional[int] = None) -> int:
        now = self.now() if now_ms is None else now_ms
        retention = self.config.offsets_retention_ms
        n = self._cleanup_group_metadata(list(self.groups.values()),
                                         lambda g: g.remove_offsets(g.expired_offsets(now, retention)))
        if n:
            log.info("removed %d expired offset(s)", n)
        return n

    def _schedule_offsets_expiry(self) -> None:
        def run():
            self._expiry_timer = None
            if not self.active:
                return
            try:
                self.cleanup_expired_offsets()
            except Exception:
                log.exception("offsets expiration failed")
            self._schedule_offsets_expiry()
        self._expiry_timer = self.scheduler.call_later(self.config.offsets_retention_check_interval_ms, run)

    # ---- async wrappers for the request handlers --------------------------------------------------
    async def join_group(self, **kw) -> JoinResult:
        fut = asyncio.get_running_loop().create_future()
        self.handle_join_group(callback=_future_setter(fut), **kw)
        return await fut

    async def sync_group(self, **kw) -> SyncResult:
        fut = asyncio.get_running_loop().create_future()
        self.handle_sync_group(callback=_future_setter(fut), **kw)
        return await fut

    def replace_empty_group(self, old, new):
        """``new`` takes the place of ``old``, an empty group of another type (Kafka converts an
        empty group on the first request of another protocol): it keeps ``old``'s offsets, and
        ``old``'s timers are cancelled. Returns ``new``."""
        new.adopt_offsets(old)
        if isinstance(old, GroupMetadata):
            self.cancel_group_timers(old)
        self.groups[new.group_id] = new
        return new

    def _replace_empty_streams_group(self, group: StreamsGroup) -> None:
        """An empty Streams group gives way to a classic one, which keeps its offsets."""
        del self.groups[group.group_id]
        self.persist_streams_group(group, deleted=True)
        self.replace_empty_group(group, GroupMetadata(group.group_id, S.EMPTY, self.now()))


def client_host_of(ctx) -> str:
    """Kafka's ``clientAddress.toString``: ``/`` and the peer's IP address."""
    peer = getattr(getattr(ctx, "conn", None), "peer", "") or ""
    host = peer.rsplit(":", 1)[0] if ":" in peer else peer
    return "/" + host.strip("[]")

