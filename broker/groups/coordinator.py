"""The group coordinator: Kafka's classic GroupCoordinator on one event loop, with the
consumer-protocol groups of KIP-848 mixed in (``broker.groups.consumer_coordinator``).

This node coordinates every group. ``GroupCoordinator`` owns ``groups`` (group id ->
``GroupMetadata``) and decides every JoinGroup/SyncGroup/Heartbeat/LeaveGroup/OffsetCommit/
OffsetFetch/... with Kafka's rules and error codes per state (GroupCoordinator.scala, 3.x).

Timers replace Kafka's purgatories, one per purpose, all ``scheduler.call_later`` (asyncio
``loop.call_later`` in the broker, a manual scheduler in tests); nothing sleeps:

- heartbeat expiry per member (session timeout; 5 minutes for a new member parked in its
  first JoinGroup); at expiry a member that neither heartbeated nor waits in a rebalance is
  removed, which starts a rebalance;
- pending-member expiry (a member id handed out with MEMBER_ID_REQUIRED but not used);
- the join phase: ``group.initial.rebalance.delay.ms`` for a group leaving Empty (extended
  while new members keep arriving, up to the rebalance timeout), else the largest member
  rebalance timeout, completed early as soon as every known member has rejoined;
- the sync phase: members that got a JoinGroup answer but send no SyncGroup within the
  rebalance timeout are removed and the group rebalances again.

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
from broker.groups.consumer_coordinator import ConsumerGroupCoordinator
from broker.groups.errors import GroupError, append_error_code
from broker.groups.consumer_group import ConsumerGroup
from broker.groups.streams_coordinator import StreamsGroupCoordinator
from broker.groups.streams_group import StreamsGroup
from broker.groups.timers import LoopScheduler
from broker.groups.base import GroupOverview, OffsetAndMetadata
from broker.groups.classic_records import group_from_value
from broker.groups.group import (
    NEW_MEMBER_JOIN_TIMEOUT_MS, GroupMetadata, GroupState, GroupSummary, JoinResult, MemberMetadata, SyncResult,
    generate_member_id,
)
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


class GroupCoordinator(ConsumerGroupCoordinator, StreamsGroupCoordinator):
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
        self._pending_timers: dict[tuple[str, str], object] = {}
        self._expiry_timer = None
        self.rebalances = 0  # lifetime count, for the broker's metrics
        self._producer_groups: dict[int, set[str]] = {}  # producer id -> groups with its pending txn offsets
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
        for group in list(self.groups.values()):
            if isinstance(group, (ConsumerGroup, StreamsGroup)):
                continue
            for m in group.all_members():
                group.maybe_invoke_join_callback(m, JoinResult(m.member_id, E.NOT_COORDINATOR))
                group.maybe_invoke_sync_callback(m, SyncResult(E.NOT_COORDINATOR))
            self.cancel_group_timers(group)
        for h in self._pending_timers.values():
            h.cancel()
        self._pending_timers.clear()
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

    @staticmethod
    def _validate_current_member(group: GroupMetadata, member_id: str, group_instance_id: Optional[str]) -> Optional[int]:
        if group_instance_id is not None:
            current = group.current_static_member_id(group_instance_id)
            if current is None:
                return E.UNKNOWN_MEMBER_ID
            if current != member_id:
                return E.FENCED_INSTANCE_ID
        if not group.has(member_id):
            return E.UNKNOWN_MEMBER_ID
        return None

    def _accept_joining_member(self, group: GroupMetadata, member_id: str) -> bool:
        if group.state in (S.EMPTY, S.DEAD):
            return True
        if group.is_(S.PREPARING_REBALANCE):
            return ((group.has(member_id) and group.get(member_id).is_awaiting_join)
                    or group.num_awaiting_join < self.config.max_size)
        return group.has(member_id) or group.size < self.config.max_size

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
        reason = reason or "not provided"
        args = (client_id, client_host, rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols,
                callback, reason)
        if not self._accept_joining_member(group, member_id):
            m = group.remove(member_id)
            if m is not None:
                self._cancel_heartbeat(m)
            callback(JoinResult("", E.GROUP_MAX_SIZE_REACHED))
        elif is_unknown:
            self._do_new_member_join(group, group_instance_id, require_known_member_id, support_skip_assignment, *args)
        else:
            self._do_current_member_join(group, member_id, group_instance_id, *args)
        if group.is_(S.PREPARING_REBALANCE):
            self._check_complete_join(group)

    def _do_new_member_join(self, group, group_instance_id, require_known_member_id, support_skip_assignment,
                            client_id, client_host, rebalance_timeout_ms, session_timeout_ms, protocol_type,
                            protocols, callback, reason) -> None:
        if group.is_(S.DEAD):
            callback(JoinResult("", E.COORDINATOR_NOT_AVAILABLE))
        elif not group.supports_protocols(protocol_type, [p for p, _ in protocols]):
            callback(JoinResult("", E.INCONSISTENT_GROUP_PROTOCOL))
        else:
            new_member_id = generate_member_id(client_id, group_instance_id)
            if group_instance_id is not None:
                old_member_id = group.current_static_member_id(group_instance_id)
                if old_member_id is not None:
                    log.info("static member %s of group %s rejoins with an unknown member id in state %s; "
                             "replacing member %s with %s", group_instance_id, group.group_id, group.state,
                             old_member_id, new_member_id)
                    self._update_static_member_and_rebalance(
                        group, old_member_id, new_member_id, group_instance_id, protocols, rebalance_timeout_ms,
                        session_timeout_ms, callback, reason, support_skip_assignment)
                else:
                    self._add_member_and_rebalance(rebalance_timeout_ms, session_timeout_ms, new_member_id,
                                                   group_instance_id, client_id, client_host, protocol_type,
                                                   protocols, group, callback, reason)
            elif require_known_member_id:
                # KIP-394: hand out the id first; the member joins again with it
                group.add_pending_member(new_member_id)
                self._add_pending_member_expiration(group, new_member_id, session_timeout_ms)
                callback(JoinResult(new_member_id, E.MEMBER_ID_REQUIRED))
            else:
                self._add_member_and_rebalance(rebalance_timeout_ms, session_timeout_ms, new_member_id, None,
                                               client_id, client_host, protocol_type, protocols, group, callback,
                                               reason)

    def _do_current_member_join(self, group, member_id, group_instance_id, client_id, client_host,
                                rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols, callback,
                                reason) -> None:
        if group.is_(S.DEAD):
            callback(JoinResult(member_id, E.COORDINATOR_NOT_AVAILABLE))
            return
        if not group.supports_protocols(protocol_type, [p for p, _ in protocols]):
            callback(JoinResult(member_id, E.INCONSISTENT_GROUP_PROTOCOL))
            return
        if group.is_pending_member(member_id):
            if group_instance_id is not None:  # a pending member is never static (Kafka: illegal state)
                callback(JoinResult(member_id, E.UNKNOWN_SERVER_ERROR))
                return
            self._cancel_pending_timer(group.group_id, member_id)
            self._add_member_and_rebalance(rebalance_timeout_ms, session_timeout_ms, member_id, None, client_id,
                                           client_host, protocol_type, protocols, group, callback, reason)
            return
        err = self._validate_current_member(group, member_id, group_instance_id)
        if err is not None:
            callback(JoinResult(member_id, err))
            return
        member = group.get(member_id)
        state = group.state
        if state is S.PREPARING_REBALANCE:
            self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms, session_timeout_ms,
                                              callback, f"member {member_id} joining during {state}; client reason: {reason}")
        elif state is S.COMPLETING_REBALANCE:
            if member.matches(protocols):
                # the member lost our JoinGroup answer: give it the current generation again
                callback(self._join_result_for(group, member))
            else:
                self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms, session_timeout_ms,
                                                  callback, f"updating metadata for member {member_id} during {state}")
        elif state is S.STABLE:
            if group.is_leader(member_id):
                # the leader may rejoin to force a rebalance (e.g. topic metadata changed)
                self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms, session_timeout_ms,
                                                  callback, f"leader {member_id} re-joining group during Stable; "
                                                  f"client reason: {reason}")
            elif not member.matches(protocols):
                self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms, session_timeout_ms,
                                                  callback, f"updating metadata for member {member_id} during Stable")
            else:
                callback(JoinResult(member_id, 0, group.generation_id, group.protocol_type, group.protocol_name,
                                    group.leader_id or ""))
        else:  # Empty (Dead was handled above)
            log.warning("rejoining member %s of group %s in unexpected state %s", member_id, group.group_id, state)
            callback(JoinResult(member_id, E.UNKNOWN_MEMBER_ID))

    def _join_result_for(self, group: GroupMetadata, member: MemberMetadata) -> JoinResult:
        return JoinResult(member.member_id, 0, group.generation_id, group.protocol_type, group.protocol_name,
                          group.leader_id or "",
                          group.current_member_metadata() if group.is_leader(member.member_id) else [])

    def _add_member_and_rebalance(self, rebalance_timeout_ms, session_timeout_ms, member_id, group_instance_id,
                                  client_id, client_host, protocol_type, protocols, group, callback, reason) -> None:
        member = MemberMetadata(member_id, group_instance_id, client_id, client_host, rebalance_timeout_ms,
                                session_timeout_ms, protocol_type, protocols)
        member.is_new = True
        if group.is_(S.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True  # lets the initial delay extend itself
        group.add(member, callback)
        # A new member cannot heartbeat before it has its answer, and a client that gave up on
        # a long rebalance retries with a new id: drop parked new members after 5 minutes.
        self._complete_and_schedule_next_expiration(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group, f"adding new member {member_id} with group instance id "
                                             f"{group_instance_id}; client reason: {reason}")

    def _update_static_member_and_rebalance(self, group, old_member_id, new_member_id, group_instance_id,
                                            protocols, rebalance_timeout_ms, session_timeout_ms, callback, reason,
                                            support_skip_assignment) -> None:
        current_leader = group.leader_id or ""
        member = group.replace_static_member(group_instance_id, old_member_id, new_member_id)
        self.complete_and_schedule_next_heartbeat(group, member)
        old_protocols = list(member.supported_protocols)
        old_rebalance_timeout, old_session_timeout = member.rebalance_timeout_ms, member.session_timeout_ms
        group.update_member(member, protocols, rebalance_timeout_ms, session_timeout_ms, callback)
        state = group.state
        if state is S.STABLE:
            if group.protocol_name == group.select_protocol():
                # same protocol: persist the new member id, no rebalance (KIP-345)
                assignment = {m.member_id: m.assignment for m in group.all_members()}
                err = self._store_group(group, assignment)
                if err:
                    group.update_member(member, old_protocols, old_rebalance_timeout, old_session_timeout, None)
                    old = group.replace_static_member(group_instance_id, new_member_id, old_member_id)
                    self.complete_and_schedule_next_heartbeat(group, old)
                    callback(JoinResult("", err, group.generation_id, group.protocol_type, group.protocol_name,
                                        current_leader))
                elif support_skip_assignment:
                    # JoinGroup v9: the static leader learns it leads but must not reassign
                    is_leader = group.is_leader(new_member_id)
                    group.maybe_invoke_join_callback(member, JoinResult(
                        new_member_id, 0, group.generation_id, group.protocol_type, group.protocol_name,
                        group.leader_id or "", group.current_member_metadata() if is_leader else [],
                        skip_assignment=is_leader))
                else:
                    # the old leader id keeps a rejoined static leader from running a useless assignment
                    group.maybe_invoke_join_callback(member, JoinResult(
                        new_member_id, 0, group.generation_id, group.protocol_type, group.protocol_name,
                        current_leader))
            else:
                self._maybe_prepare_rebalance(group, f"static member {group_instance_id} rejoined with a change "
                                                     f"of protocol; client reason: {reason}")
        elif state is S.COMPLETING_REBALANCE:
            # the leader may already be assigning with the old member id: start over
            self.prepare_rebalance(group, f"updating metadata for static member {group_instance_id}")
        # PreparingRebalance: the member waits for the join phase like everyone else

    def _update_member_and_rebalance(self, group, member, protocols, rebalance_timeout_ms, session_timeout_ms,
                                     callback, reason) -> None:
        group.update_member(member, protocols, rebalance_timeout_ms, session_timeout_ms, callback)
        self._maybe_prepare_rebalance(group, reason)

    def _maybe_prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.can_rebalance():
            self.prepare_rebalance(group, reason)

    def prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.is_(S.COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, E.REBALANCE_IN_PROGRESS)
        self._remove_sync_expiration(group)
        from_empty = group.is_(S.EMPTY)
        group.transition_to(S.PREPARING_REBALANCE, self.now())
        self.rebalances += 1
        log.info("preparing to rebalance group %s with old generation %d (%s-%d) (reason: %s)", group.group_id,
                 group.generation_id, "__consumer_offsets", self.partition_for(group.group_id), reason)
        if from_empty:
            delay = self.config.initial_rebalance_delay_ms
            self._schedule_initial_join(group, delay, delay, max(group.rebalance_timeout_ms() - delay, 0))
        else:
            self._schedule_join(group, group.rebalance_timeout_ms())

    # ---- join phase timers ----------------------------------------------------------------------
    def _schedule_join(self, group: GroupMetadata, timeout_ms: int) -> None:
        """Kafka's DelayedJoin: done at once when everyone has rejoined, else at the timeout."""
        self._cancel_join_timer(group)
        if group.has_all_members_joined():
            self._on_complete_join(group)
            return
        group.join_timer_initial = False
        group.join_timer = self.scheduler.call_later(timeout_ms, lambda: self._on_join_timer(group))

    def _on_join_timer(self, group: GroupMetadata) -> None:
        group.join_timer = None
        self._on_complete_join(group)

    def _schedule_initial_join(self, group: GroupMetadata, configured_ms: int, delay_ms: int, remaining_ms: int) -> None:
        """Kafka's InitialDelayedJoin: never completes early; re-arms while new members keep
        arriving, never past the rebalance timeout."""
        self._cancel_join_timer(group)
        group.join_timer_initial = True
        group.join_timer = self.scheduler.call_later(
            delay_ms, lambda: self._on_initial_join_timer(group, configured_ms, delay_ms, remaining_ms))

    def _on_initial_join_timer(self, group, configured_ms, delay_ms, remaining_ms) -> None:
        group.join_timer = None
        if group.new_member_added and remaining_ms != 0:
            group.new_member_added = False
            self._schedule_initial_join(group, configured_ms, min(configured_ms, remaining_ms),
                                        max(remaining_ms - delay_ms, 0))
        else:
            self._on_complete_join(group)

    def _check_complete_join(self, group: GroupMetadata) -> None:
        if group.join_timer is not None and not group.join_timer_initial and group.has_all_members_joined():
            self._cancel_join_timer(group)
            self._on_complete_join(group)

    def _cancel_join_timer(self, group: GroupMetadata) -> None:
        if group.join_timer is not None:
            group.join_timer.cancel()
            group.join_timer = None

    def _on_complete_join(self, group: GroupMetadata) -> None:
        for m in group.not_yet_rejoined_members():
            if not m.is_static_member:
                log.info("group %s removed dynamic member %s who has not rejoined", group.group_id, m.member_id)
                self._remove_member(group, m)
        if group.is_(S.DEAD):
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            # nobody rejoined (only silent static members left): wait for session expiry
            log.error("group %s could not complete rebalance because no members rejoined", group.group_id)
            self._schedule_join(group, group.rebalance_timeout_ms())
            return
        group.init_next_generation(self.now())
        if group.is_(S.EMPTY):
            log.info("group %s with generation %d is now empty", group.group_id, group.generation_id)
            err = self._store_group(group, {})
            if err:
                log.warning("failed to write empty metadata for group %s: error %d", group.group_id, err)
            return
        log.info("stabilized group %s generation %d with %d member(s)", group.group_id, group.generation_id,
                 group.size)
        for m in group.all_members():
            group.maybe_invoke_join_callback(m, self._join_result_for(group, m))
            self.complete_and_schedule_next_heartbeat(group, m)
            m.is_new = False
            group.add_pending_sync_member(m.member_id)
        self._schedule_pending_sync(group)

    # ---- sync phase -----------------------------------------------------------------------------
    def _schedule_pending_sync(self, group: GroupMetadata) -> None:
        self._cancel_sync_timer(group)
        if group.has_received_sync_from_all_members():
            return
        generation = group.generation_id
        group.sync_timer = self.scheduler.call_later(group.rebalance_timeout_ms(),
                                                     lambda: self._on_expire_pending_sync(group, generation))

    def _cancel_sync_timer(self, group: GroupMetadata) -> None:
        if group.sync_timer is not None:
            group.sync_timer.cancel()
            group.sync_timer = None

    def _remove_sync_expiration(self, group: GroupMetadata) -> None:
        group.clear_pending_sync_members()
        self._cancel_sync_timer(group)

    def _remove_pending_sync_member(self, group: GroupMetadata, member_id: str) -> None:
        group.remove_pending_sync_member(member_id)
        if group.has_received_sync_from_all_members():
            self._cancel_sync_timer(group)

    def _on_expire_pending_sync(self, group: GroupMetadata, generation: int) -> None:
        group.sync_timer = None
        if generation != group.generation_id or group.state not in (S.COMPLETING_REBALANCE, S.STABLE):
            return
        if group.has_received_sync_from_all_members():
            return
        pending = list(group.pending_sync_members)
        for mid in pending:
            m = group.members.get(mid)
            if m is not None:
                self._remove_member(group, m)
        log.info("group %s removed members who sent no SyncGroup: %s", group.group_id, pending)
        self.prepare_rebalance(group, f"removing {pending} on pending sync request expiration")

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
        if group.is_(S.DEAD):
            callback(SyncResult(E.COORDINATOR_NOT_AVAILABLE))
            return
        err = self._validate_current_member(group, member_id, group_instance_id)
        if err is None:
            if generation_id != group.generation_id:
                err = E.ILLEGAL_GENERATION
            elif protocol_type is not None and protocol_type != group.protocol_type:
                err = E.INCONSISTENT_GROUP_PROTOCOL
            elif protocol_name is not None and protocol_name != group.protocol_name:
                err = E.INCONSISTENT_GROUP_PROTOCOL
        if err is not None:
            callback(SyncResult(err))
            return
        state = group.state
        if state is S.EMPTY:
            callback(SyncResult(E.UNKNOWN_MEMBER_ID))
        elif state is S.PREPARING_REBALANCE:
            callback(SyncResult(E.REBALANCE_IN_PROGRESS))
        elif state is S.COMPLETING_REBALANCE:
            member = group.get(member_id)
            member.awaiting_sync = callback
            self._remove_pending_sync_member(group, member_id)
            if group.is_leader(member_id):
                log.info("assignment received from leader %s for group %s for generation %d (%d members)",
                         member_id, group.group_id, group.generation_id, group.size)
                assignment = {mid: bytes(assignments.get(mid, b"")) for mid in group.members}
                missing = [mid for mid in group.members if mid not in assignments]
                if missing:
                    log.warning("setting empty assignments for members %s of %s for generation %d", missing,
                                group.group_id, group.generation_id)
                err = self._store_group(group, assignment)
                if group.is_(S.COMPLETING_REBALANCE) and generation_id == group.generation_id:
                    if err:
                        self._reset_and_propagate_assignment_error(group, err)
                        self._maybe_prepare_rebalance(group, f"error {err} when storing group assignment")
                    else:
                        self._set_and_propagate_assignment(group, assignment)
                        group.transition_to(S.STABLE, self.now())
        elif state is S.STABLE:
            self._remove_pending_sync_member(group, member_id)
            member = group.get(member_id)
            callback(SyncResult(0, group.protocol_type, group.protocol_name, member.assignment))
            self.complete_and_schedule_next_heartbeat(group, member)

    def _set_and_propagate_assignment(self, group: GroupMetadata, assignment: dict[str, bytes]) -> None:
        for m in group.all_members():
            m.assignment = assignment.get(m.member_id, b"")
        self._propagate_assignment(group, 0)

    def _reset_and_propagate_assignment_error(self, group: GroupMetadata, error: int) -> None:
        for m in group.all_members():
            m.assignment = b""
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group: GroupMetadata, error: int) -> None:
        ptype, pname = (group.protocol_type, group.protocol_name) if error == 0 else (None, None)
        for m in group.all_members():
            if group.maybe_invoke_sync_callback(m, SyncResult(error, ptype, pname, m.assignment)):
                # the session restarts once the member has its answer
                self.complete_and_schedule_next_heartbeat(group, m)

    # ---- heartbeats -----------------------------------------------------------------------------
    def complete_and_schedule_next_heartbeat(self, group: GroupMetadata, member: MemberMetadata) -> None:
        self._complete_and_schedule_next_expiration(group, member, member.session_timeout_ms)

    def _complete_and_schedule_next_expiration(self, group, member, timeout_ms: int) -> None:
        if member.heartbeat_timer is not None:
            member.heartbeat_timer.cancel()
        member.heartbeat_satisfied = False
        member.heartbeat_timer = self.scheduler.call_later(timeout_ms, lambda: self._on_expire_heartbeat(group, member))

    def _cancel_heartbeat(self, member: MemberMetadata) -> None:
        if member.heartbeat_timer is not None:
            member.heartbeat_timer.cancel()
            member.heartbeat_timer = None

    def _on_expire_heartbeat(self, group: GroupMetadata, member: MemberMetadata) -> None:
        member.heartbeat_timer = None
        if group.is_(S.DEAD) or group.members.get(member.member_id) is not member:
            return
        if not member.has_satisfied_heartbeat():
            log.info("member %s in group %s has failed (session timeout %d ms), removing it from the group",
                     member.member_id, group.group_id, member.session_timeout_ms)
            self._remove_member_and_update_group(group, member, f"removing member {member.member_id} on "
                                                                f"heartbeat expiration")

    def _add_pending_member_expiration(self, group: GroupMetadata, member_id: str, timeout_ms: int) -> None:
        key = (group.group_id, member_id)
        self._cancel_pending_timer(*key)

        def expire():
            self._pending_timers.pop(key, None)
            if group.is_(S.DEAD) or not group.is_pending_member(member_id):
                return
            log.info("pending member %s in group %s has been removed after session timeout", member_id, group.group_id)
            self._remove_pending_member_and_update_group(group, member_id)
        self._pending_timers[key] = self.scheduler.call_later(timeout_ms, expire)

    def _cancel_pending_timer(self, group_id: str, member_id: str) -> None:
        h = self._pending_timers.pop((group_id, member_id), None)
        if h is not None:
            h.cancel()

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
        if group.is_(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        err = self._validate_current_member(group, member_id, group_instance_id)
        if err is not None:
            return err
        if generation_id != group.generation_id:
            return E.ILLEGAL_GENERATION
        state = group.state
        if state is S.EMPTY:
            return E.UNKNOWN_MEMBER_ID
        self.complete_and_schedule_next_heartbeat(group, group.get(member_id))
        return E.REBALANCE_IN_PROGRESS if state is S.PREPARING_REBALANCE else 0

    # ---- leaving --------------------------------------------------------------------------------
    def _remove_member(self, group: GroupMetadata, member: MemberMetadata) -> None:
        group.remove(member.member_id)
        self._cancel_heartbeat(member)
        # nobody may stay parked forever on a member that is gone
        group.maybe_invoke_sync_callback(member, SyncResult(E.UNKNOWN_MEMBER_ID))

    def _remove_member_and_update_group(self, group: GroupMetadata, member: MemberMetadata, reason: str) -> None:
        # a new member may time out while parked in JoinGroup: answer it so it retries
        group.maybe_invoke_join_callback(member, JoinResult("", E.UNKNOWN_MEMBER_ID))
        self._remove_member(group, member)
        if group.state in (S.STABLE, S.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, reason)
        elif group.is_(S.PREPARING_REBALANCE):
            self._check_complete_join(group)

    def _remove_pending_member_and_update_group(self, group: GroupMetadata, member_id: str) -> None:
        group.remove(member_id)
        self._cancel_pending_timer(group.group_id, member_id)
        if group.is_(S.PREPARING_REBALANCE):
            self._check_complete_join(group)

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
        if group.is_(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE, []
        out = []
        for member_id, gi, reason in members:
            reason = reason or "not provided"
            if member_id == "":
                # administrative removal by group.instance.id (KIP-345)
                current = group.current_static_member_id(gi)
                if current is None:
                    out.append((member_id, gi, E.UNKNOWN_MEMBER_ID))
                else:
                    self._remove_current_member(group, current, reason)
                    out.append((member_id, gi, 0))
            elif group.is_pending_member(member_id):
                self._remove_pending_member_and_update_group(group, member_id)
                out.append((member_id, gi, 0))
            else:
                e = self._validate_current_member(group, member_id, gi)
                if e is None:
                    self._remove_current_member(group, member_id, reason)
                    e = 0
                out.append((member_id, gi, e))
        return 0, out

    def _remove_current_member(self, group: GroupMetadata, member_id: str, reason: str) -> None:
        member = group.get(member_id)
        log.info("member %s has left group %s through explicit LeaveGroup; client reason: %s", member_id,
                 group.group_id, reason)
        self._remove_member_and_update_group(group, member, f"removing member {member_id} on LeaveGroup; "
                                                            f"client reason: {reason}")

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
        err = self._validate_offset_commit(group, generation_id, member_id, group_instance_id)
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

    def _validate_offset_commit(self, group, generation_id, member_id, group_instance_id,
                                is_transactional: bool = False) -> Optional[int]:
        if group.is_(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.is_(S.EMPTY):
            return None  # admin client or a consumer without group management
        if generation_id >= 0 or member_id != "" or group_instance_id is not None:
            err = self._validate_current_member(group, member_id, group_instance_id)
            if err is None and generation_id != group.generation_id:
                err = E.ILLEGAL_GENERATION
            return err
        if not is_transactional and not group.is_(S.EMPTY):
            # only members commit to a non-empty group; TxnOffsetCommit before v3 carries no
            # member, so it is exempt (KIP-447)
            return E.UNKNOWN_MEMBER_ID
        return None

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
            err = self._validate_offset_commit(group, generation_id, member_id, group_instance_id,
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
            err = self.validate_member_offset_fetch(group, member_id, member_epoch)
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
            if isinstance(group, StreamsGroup):
                if removed:
                    try:
                        self.store.write_tombstones(group.group_id, list(removed))
                    except Exception as exc:
                        log.warning("failed to write tombstones for group %s: %r", group.group_id, exc)
                if group.is_empty() and not group.has_offsets() and self.groups.get(group.group_id) is group:
                    del self.groups[group.group_id]
                    self.persist_streams_group(group, deleted=True)  # its records are tombstoned
                total += len(removed)
                continue
            if isinstance(group, ConsumerGroup):
                if removed:
                    try:
                        self.store.write_tombstones(group.group_id, list(removed))
                    except Exception as exc:
                        log.warning("failed to write tombstones for group %s: %r", group.group_id, exc)
                if group.is_empty() and not group.has_offsets():
                    self.delete_consumer_group(group)  # Kafka's maybeDeleteGroup
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

    # ---- storage --------------------------------------------------------------------------------
    def _store_group(self, group: GroupMetadata, assignment: dict[str, bytes]) -> int:
        try:
            self.store.write_group(group, assignment)
        except Exception as exc:
            log.warning("failed to store metadata of group %s: %r", group.group_id, exc)
            code = append_error_code(exc)
            return E.COORDINATOR_NOT_AVAILABLE if code == E.INVALID_COMMIT_OFFSET_SIZE else code
        return 0

    def cancel_group_timers(self, group: GroupMetadata) -> None:
        self._cancel_join_timer(group)
        self._cancel_sync_timer(group)
        for m in group.all_members():
            self._cancel_heartbeat(m)
        for mid in list(group.pending_members):
            self._cancel_pending_timer(group.group_id, mid)

    # ---- async wrappers for the request handlers --------------------------------------------------
    async def join_group(self, **kw) -> JoinResult:
        fut = asyncio.get_running_loop().create_future()
        self.handle_join_group(callback=_future_setter(fut), **kw)
        return await fut

    async def sync_group(self, **kw) -> SyncResult:
        fut = asyncio.get_running_loop().create_future()
        self.handle_sync_group(callback=_future_setter(fut), **kw)
        return await fut

    def _replace_empty_streams_group(self, group: StreamsGroup) -> None:
        """An empty Streams group gives way to a classic one, which keeps its offsets."""
        del self.groups[group.group_id]
        self.persist_streams_group(group, deleted=True)
        keeper = GroupMetadata(group.group_id, S.EMPTY, self.now())
        keeper.adopt_offsets(group)
        self.groups[group.group_id] = keeper


def client_host_of(ctx) -> str:
    """Kafka's ``clientAddress.toString``: ``/`` and the peer's IP address."""
    peer = getattr(getattr(ctx, "conn", None), "peer", "") or ""
    host = peer.rsplit(":", 1)[0] if ":" in peer else peer
    return "/" + host.strip("[]")

