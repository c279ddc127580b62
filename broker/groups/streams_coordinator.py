"""The Streams side of the group coordinator (KIP-1071): Kafka 4.x's GroupMetadataManager for
Streams groups, mixed into ``GroupCoordinator``. Decisions are pure functions
(``streams_topology.configure_topology``, ``streams_assignment.assign`` and ``reconcile``); this
module keeps the groups, their timers and the I/O (creating internal topics).

StreamsGroupHeartbeat (``handle_streams_group_heartbeat``):
1. get or create the group (epoch 0 creates it; an empty classic group, e.g. one left with only
   committed offsets, is replaced and its offsets kept), get or create the member, check its
   epoch (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID);
2. a joining member's topology initializes the group's; an older topology epoch gets the
   STALE_TOPOLOGY status, a different topology INVALID_REQUEST ("Topology updates are not
   supported yet.");
3. a new member, changed member metadata (process id, endpoint, client tags, rack, topology
   epoch) or changed partition counts of the topology's topics bump the group epoch; the
   topology is then configured against the topics as they are, and its missing internal
   topics are created;
4. a group epoch above the target assignment epoch assigns the tasks (none while the topology
   is not ready);
5. the member is reconciled towards its target.

A static member (an instance id) that leaves with epoch -2 stays in the group with its tasks
until its session ends; rejoining under a new member id with the same instance id, it takes its
place, epoch and tasks (UNRELEASED_INSTANCE_ID while the instance id is held by a live member).

Timers: every member's session timeout (``group.streams.session.timeout.ms``) and the
rebalance timeout of a member asked to revoke tasks; expiry fences the member.

Persistence: after every operation that changed a group (a heartbeat, a fencing, a deletion)
the records that describe it as Kafka 4.4 writes them (``streams_records.group_records``) are
compared with what the log already says and only the difference is appended, as one batch
(``streams_records.records_delta``); a deleted group's records are tombstoned. On load the
groups are rebuilt from the latest records (``streams_records.group_from_records``), their
topology configured again against the topics as they are (without a new epoch when the topics'
partition counts hash as before), and every member's session timer restarts: a member
heartbeating at its epoch after a coordinator restart carries on with its tasks.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Optional

from protocol.errors import ErrorCode as E
from broker.groups.streams_assignment import (
    NO_TASKS, AssignmentState, MemberState, Tasks, assign, reconcile,
)
from broker.groups.streams_topology import (
    ASSIGNMENT_DELAYED, SHUTDOWN_APPLICATION, STALE_TOPOLOGY, configure_topology, topology_from_request,
)
from broker.groups.streams_group import StreamsGroup, StreamsMember
from broker.groups.streams_records import apply_delta, group_from_records, group_records, metadata_hash, records_delta
from broker.groups.errors import GroupError, append_error_code
from broker.groups.group_configs import group_config_or
from broker.groups.timers import KeyedTimers
from broker.groups.validation import blank_id_message

log = logging.getLogger(__name__)

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
ACCEPTABLE_RECOVERY_LAG = 10_000      # group.streams... Kafka's default acceptable.recovery.lag
TASK_OFFSET_INTERVAL_MS = 60_000


class StreamsGroupError(GroupError):
    """An error answer of a Streams group operation (kept apart from the consumer side's so that
    each side's timers and handlers catch only their own)."""


@dataclass
class StreamsHeartbeatResult:
    error: int = 0
    message: Optional[str] = None
    member_id: str = ""
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    status: list = field(default_factory=list)      # [(code, detail)]
    tasks: Optional[Tasks] = None                   # None: unchanged, not sent
    endpoint_information_epoch: int = 0
    partitions_by_endpoint: Optional[list] = None   # [((host, port), {topic: [p]}, {topic: [p]})]
    leaving: bool = False                           # the answer to a leave: member id and epoch only


def _tasks_of(lists) -> frozenset:
    return frozenset((t.subtopology_id, p) for t in lists for p in t.partitions)


def validate_heartbeat(req) -> None:
    """Kafka's throwIfStreamsGroupHeartbeatRequestIsInvalid (and its unsupported features), in
    its order."""
    if req.topology is not None:
        for s in req.topology.subtopologies:
            if s.source_topic_regex:
                raise StreamsGroupError(E.INVALID_REQUEST, "Regular expressions for source topics are not supported yet.")
    blank = blank_id_message(req, member_id=True)
    if blank:
        raise StreamsGroupError(E.INVALID_REQUEST, blank)
    epoch = req.member_epoch
    if epoch == 0:
        if req.rebalance_timeout_ms == -1:
            raise StreamsGroupError(E.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
        for name, lst in (("ActiveTasks", req.active_tasks), ("StandbyTasks", req.standby_tasks),
                          ("WarmupTasks", req.warmup_tasks)):
            if lst is None or lst:  # Kafka's throwIfNotEmptyCollection refuses null too
                raise StreamsGroupError(E.INVALID_REQUEST, f"{name} must be empty when (re-)joining.")
        if req.topology is None:
            raise StreamsGroupError(E.INVALID_REQUEST, "Topology must be non-null when (re-)joining.")
        for s in req.topology.subtopologies:
            for ti in s.state_changelog_topics:
                if ti.partitions != 0:
                    raise StreamsGroupError(E.STREAMS_INVALID_TOPOLOGY, f"Changelog topic {ti.name} must have an "
                                            f"undefined partition count, but it is set to {ti.partitions}.")
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if req.instance_id is None:
            raise StreamsGroupError(E.INVALID_REQUEST, "InstanceId can't be null.")
    elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise StreamsGroupError(E.INVALID_REQUEST, f"MemberEpoch is {epoch}, but must be greater than or equal to -2.")
    lists = (req.active_tasks, req.standby_tasks, req.warmup_tasks)
    if any(x is not None for x in lists) and any(x is None for x in lists):
        raise StreamsGroupError(E.INVALID_REQUEST, "If one task-type is non-null, all must be non-null.")
    if epoch != 0 and req.topology is not None:
        raise StreamsGroupError(E.INVALID_REQUEST, "Topology can only be provided when (re-)joining.")


def check_member_epoch(member: StreamsMember, received: int, owned: Optional[Tasks]) -> None:
    """Kafka's throwIfStreamsMemberEpochIsInvalid: a member may be one epoch behind while its
    heartbeat shows it holds nothing it was not given (the answer that moved it got lost)."""
    current = member.member_epoch
    if received > current:
        raise StreamsGroupError(E.FENCED_MEMBER_EPOCH, f"The streams group member has a greater member epoch "
                                f"({received}) than the one known by the group coordinator ({current}). The member "
                                f"must abandon all its partitions and rejoin.")
    if received < current:
        a = member.assignment
        if not (received == a.previous_member_epoch and owned is not None
                and owned.active <= a.assigned.active and owned.standby <= a.assigned.standby
                and owned.warmup <= a.assigned.warmup):
            raise StreamsGroupError(E.FENCED_MEMBER_EPOCH, f"The streams group member has a smaller member epoch "
                                    f"({received}) than the one known by the group coordinator ({current}). The "
                                    f"member must abandon all its partitions and rejoin.")


class StreamsGroupCoordinator:
    """Mixed into ``GroupCoordinator`` (which owns ``groups``, ``scheduler``, ``config``,
    ``topics``)."""

    def init_streams_groups(self) -> None:
        self._sg_timers = KeyedTimers(lambda: self.scheduler, "streams-timer", active=lambda: self.active,
                                      quiet=(StreamsGroupError,))

    def cancel_streams_group_timers(self) -> None:
        self._sg_timers.cancel_all()

    def _sg_config(self, group_id: str, key: str, default: int) -> int:
        """A Streams group's own config (``streams.session.timeout.ms``, ...: IncrementalAlterConfigs
        on the group), else the broker-level ``group.streams.*`` value."""
        return group_config_or(getattr(self, "broker", None), group_id, key, default)

    def _sg_session_timeout(self, group_id: str) -> int:
        return self._sg_config(group_id, "streams.session.timeout.ms", self.config.streams_session_timeout_ms)

    def _sg_standby_replicas(self, group_id: str) -> int:
        return self._sg_config(group_id, "streams.num.standby.replicas", self.config.streams_num_standby_replicas)

    # ---- heartbeat ------------------------------------------------------------------------------
    def handle_streams_group_heartbeat(self, req, client_id: str, client_host: str) -> StreamsHeartbeatResult:
        if not self.active:
            return StreamsHeartbeatResult(E.COORDINATOR_NOT_AVAILABLE)
        try:
            validate_heartbeat(req)
            if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                result = self._streams_leave(req.group_id, req.member_id, req.member_epoch)
            else:
                result = self._streams_heartbeat(req, client_id, client_host)
        except StreamsGroupError as exc:
            result = StreamsHeartbeatResult(exc.code, exc.message)
        g = self.groups.get(req.group_id) if req.group_id else None
        if isinstance(g, StreamsGroup):
            code = self.persist_streams_group(g)
            if code and not result.error:
                return StreamsHeartbeatResult(code, None)
        return result

    # ---- persistence --------------------------------------------------------------------------------
    def persist_streams_group(self, group: StreamsGroup, deleted: bool = False) -> int:
        """Append what the log lacks to describe ``group`` as it is (or, ``deleted``, its
        tombstones). 0, or the error code of the failed write (the log then keeps what it had,
        and the next write of the group catches up)."""
        write = getattr(self.store, "write_records", None)
        if write is None:
            return 0
        wanted = {} if deleted else group_records(group, metadata_hash(group.metadata_snapshot or ()),
                                                  self._sg_standby_replicas(group.group_id), self.now())
        delta = records_delta(group.written, wanted)
        if not delta:
            return 0
        try:
            write(group.group_id, delta)
        except Exception as exc:
            code = append_error_code(exc)
            log.warning("[GroupId %s] Writing the streams group's records failed: %r", group.group_id, exc)
            return E.COORDINATOR_NOT_AVAILABLE if code == E.INVALID_COMMIT_OFFSET_SIZE else code
        group.written = apply_delta(group.written, delta)
        return 0

    def load_streams_group(self, group_id: str, records: dict, written: dict) -> Optional[StreamsGroup]:
        """A group replayed from the log (None: deleted). Its topology is configured against the
        topics as they are; the group epoch moves on only if their partition counts changed."""
        built = group_from_records(group_id, records)
        if built is None:
            return None
        group, mhash = built
        group.written = dict(written)
        if group.topology is not None:
            snapshot = self._topology_snapshot(group)
            if metadata_hash(snapshot) == mhash:
                group.metadata_snapshot = snapshot
                group.configured = configure_topology(group.topology, self._partitions_of)
        cfg = group.configured
        if (group.members and cfg is not None and cfg.ready and any(cfg.tasks.values())
                and all(t.is_empty() for t in group.target.values())):
            # written inside the initial rebalance delay (members in, tasks not yet assigned; the
            # delay is not written): the assignment is due at the next heartbeat
            group.assignment_pending = True
        return group

    def schedule_loaded_streams_group(self, group: StreamsGroup) -> None:
        """Kafka's onLoaded: every member must heartbeat within its session timeout; one asked to
        revoke tasks, within its rebalance timeout."""
        for mid, m in group.members.items():
            self._schedule_streams_session_timeout(group.group_id, mid)
            if m.assignment.state is MemberState.UNREVOKED_TASKS:
                self._schedule_streams_rebalance_timeout(group.group_id, mid, m.member_epoch,
                                                         m.rebalance_timeout_ms)

    def _streams_group(self, group_id: str, create: bool) -> StreamsGroup:
        g = self.groups.get(group_id)
        if isinstance(g, StreamsGroup):
            return g
        if g is None:
            if not create:
                raise StreamsGroupError(E.GROUP_ID_NOT_FOUND, f"Streams group {group_id} not found.")
            g = StreamsGroup(group_id)
            self.groups[group_id] = g
            return g
        if g is not None and g.group_type == "classic" and g.is_empty():
            if not create:
                # only offsets are known: a group this coordinator did not keep across a restart
                raise StreamsGroupError(E.UNKNOWN_MEMBER_ID, f"Streams group {group_id} is not known to the "
                                        f"coordinator; the member must rejoin.")
            new = self.replace_empty_group(g, StreamsGroup(group_id))
            log.info("[GroupId %s] Converted the empty classic group to a streams group.", group_id)
            return new
        raise StreamsGroupError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a streams group.")

    def _partitions_of(self, name: str) -> Optional[int]:
        t = self.topics.get(name) if self.topics is not None else None
        return t.partitions if t is not None else None

    def _topology_snapshot(self, group: StreamsGroup) -> tuple:
        if group.topology is None:
            return ()
        names = set()
        for s in group.topology.subtopologies:
            names |= set(s.source_topics)
            names |= {ti.name for ti in s.repartition_source_topics + s.state_changelog_topics}
        return tuple(sorted((n, self._partitions_of(n)) for n in names))

    def _streams_heartbeat(self, req, client_id: str, client_host: str) -> StreamsHeartbeatResult:
        gid, mid, epoch = req.group_id, req.member_id, req.member_epoch
        joining = epoch == 0
        group = self._streams_group(gid, joining)
        owned = None
        if req.active_tasks is not None:
            owned = Tasks(_tasks_of(req.active_tasks), _tasks_of(req.standby_tasks), _tasks_of(req.warmup_tasks))
        member = group.members.get(mid)
        status: list = []
        bump = False
        if member is None:
            if not joining:
                raise StreamsGroupError(E.UNKNOWN_MEMBER_ID, f"Member {mid} is not a member of group {gid}.")
            previous = self._static_member(group, req.instance_id)
            if previous is not None:
                if not previous.static_left:
                    raise StreamsGroupError(E.UNRELEASED_INSTANCE_ID, f"Static member {mid} with instance id "
                                            f"{req.instance_id} cannot join the group because the instance id is "
                                            f"owned by {previous.member_id} member.")
                # the static member comes back under a new member id and takes its tasks over
                log.info("[GroupId %s][MemberId %s] Static member with instance id %s re-joins the streams group "
                         "using the streams protocol. Created a new member %s to replace the existing member %s.",
                         gid, mid, req.instance_id, mid, previous.member_id)
                member = replace(previous, member_id=mid, static_left=False)
                del group.members[previous.member_id]
                if previous.member_id in group.target:
                    group.target[mid] = group.target.pop(previous.member_id)
                for kind in ("session", "rebalance"):
                    self._sg_timers.cancel((kind, gid, previous.member_id), quiet=True)
                joining = False  # it keeps its epoch and tasks
            else:
                member = StreamsMember(mid)
                bump = True
                log.info("[GroupId %s][MemberId %s] Member joins the streams group.", gid, mid)
        elif joining:
            # a member rejoining at epoch 0 starts over (it lost its tasks)
            member = replace(member, assignment=AssignmentState(0, 0, MemberState.STABLE, NO_TASKS, NO_TASKS))
            bump = True
        else:
            check_member_epoch(member, epoch, owned)
        topology_epoch = member.topology_epoch
        if epoch == 0:
            requested = topology_from_request(req.topology)
            if group.topology is None:
                group.topology = requested
                log.info("[GroupId %s][MemberId %s] Member initialized the topology with epoch %d", gid, mid,
                         requested.epoch)
                bump = True
            elif group.topology.epoch > requested.epoch:
                log.info("[GroupId %s][MemberId %s] Member joined with stale topology epoch %d", gid, mid,
                         requested.epoch)
            elif group.topology != requested:
                raise StreamsGroupError(E.INVALID_REQUEST, "Topology updates are not supported yet.")
            topology_epoch = requested.epoch
        updated = replace(
            member,
            instance_id=req.instance_id if req.instance_id is not None else member.instance_id,
            rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
            client_id=client_id, client_host=client_host,
            rebalance_timeout_ms=req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1 else member.rebalance_timeout_ms,
            topology_epoch=topology_epoch,
            process_id=req.process_id if req.process_id is not None else member.process_id,
            user_endpoint=((req.user_endpoint.host, req.user_endpoint.port) if req.user_endpoint is not None
                           else member.user_endpoint),
            client_tags=(tuple((kv.key, kv.value) for kv in req.client_tags) if req.client_tags is not None
                         else member.client_tags),
            task_offsets=(tuple((o.subtopology_id, o.partition, o.offset) for o in req.task_offsets)
                          if req.task_offsets is not None else member.task_offsets),
            task_end_offsets=(tuple((o.subtopology_id, o.partition, o.offset) for o in req.task_end_offsets)
                              if req.task_end_offsets is not None else member.task_end_offsets),
        )
        if updated.metadata() != member.metadata():
            bump = True
        snapshot = self._topology_snapshot(group)
        if snapshot != group.metadata_snapshot or group.configured is None:
            bump = True
        if bump:
            group.group_epoch += 1
            group.metadata_snapshot = snapshot
            group.configured = configure_topology(group.topology, self._partitions_of)
            log.info("[GroupId %s][MemberId %s] Bumped streams group epoch to %d (topology %s).", gid, mid,
                     group.group_epoch, "ready" if group.configured.ready else group.configured.status)
            self._create_internal_topics(group)
        group.members[mid] = updated
        now = self.now()
        if group.target_assignment_epoch == 0 and group.assignment_delayed_until is None:
            # a new group waits for more members before its first assignment
            group.assignment_delayed_until = now + self._sg_config(
                gid, "streams.initial.rebalance.delay.ms", self.config.streams_initial_rebalance_delay_ms)
        delayed = group.assignment_delayed_until is not None and now < group.assignment_delayed_until
        if delayed:
            # the first members get the group's first epoch with no tasks; the tasks come with
            # the assignment after the delay, at an epoch of its own
            status.append((ASSIGNMENT_DELAYED, "Assignment delayed due to the configured initial rebalance delay."))
            if group.target_assignment_epoch == 0:
                group.target_assignment_epoch = group.group_epoch
            group.assignment_pending = True
        else:
            if group.assignment_pending:
                group.assignment_pending = False
                group.group_epoch += 1
            if group.group_epoch > group.target_assignment_epoch:
                self._compute_target(group)
        before = member.assignment
        after = reconcile(updated.assignment if not joining else before, group.target_assignment_epoch,
                          group.target.get(mid, NO_TASKS), owned, group.owner_of, mid)
        held = after.assigned.active | after.pending_revocation.active
        epochs = {t: e for t, e in updated.task_epochs.items() if t in held and not joining}
        for t in after.assigned.active:
            epochs.setdefault(t, after.member_epoch)
        updated = replace(updated, assignment=after, task_epochs=epochs)
        group.members[mid] = updated
        if after.state is MemberState.UNREVOKED_TASKS and before.state is not MemberState.UNREVOKED_TASKS:
            self._schedule_streams_rebalance_timeout(gid, mid, after.member_epoch, updated.rebalance_timeout_ms)
        elif after.state is not MemberState.UNREVOKED_TASKS:
            self._sg_timers.cancel(("rebalance", gid, mid), quiet=True)
        if after.member_epoch != before.member_epoch or after.assigned != before.assigned:
            log.info("[GroupId %s][MemberId %s] Member's new assignment state: epoch=%d, previousEpoch=%d, state=%s, "
                     "assignedTasks=%s and tasksPendingRevocation=%s.", gid, mid, after.member_epoch,
                     after.previous_member_epoch, after.state.name, _fmt(after.assigned),
                     _fmt(after.pending_revocation))
        self._schedule_streams_session_timeout(gid, mid)
        if req.shutdown_application:
            group.shutdown_requested_by = mid
            log.info("[GroupId %s][MemberId %s] Shutdown requested for the streams application.", gid, mid)
        if group.configured is not None and group.configured.status is not None:
            status.append(group.configured.status)
        if group.topology is not None and updated.topology_epoch < group.topology.epoch:
            status.append((STALE_TOPOLOGY, f"The member's topology epoch {updated.topology_epoch} is behind the "
                                           f"group's topology epoch {group.topology.epoch}."))
        if group.shutdown_requested_by is not None:
            status.append((SHUTDOWN_APPLICATION, f"Streams group member {group.shutdown_requested_by} encountered a "
                                                 f"fatal error and requested a shutdown for the entire application."))
        send = joining or owned is not None or after.assigned != before.assigned
        endpoints = None
        if (req.endpoint_information_epoch != group.endpoint_information_epoch
                and any(m.user_endpoint is not None for m in group.members.values())):
            endpoints = self._partitions_by_endpoint(group)
        interval = self._sg_config(gid, "streams.heartbeat.interval.ms", self.config.streams_heartbeat_interval_ms)
        return StreamsHeartbeatResult(0, None, mid, after.member_epoch, interval,
                                      status, after.assigned if send else None, group.endpoint_information_epoch,
                                      endpoints)

    def _partitions_by_endpoint(self, group: StreamsGroup) -> list:
        """For Interactive Queries: per member endpoint, the source and changelog partitions its
        active and standby tasks materialize."""
        if group.topology is None or not any(m.user_endpoint for m in group.members.values()):
            return []
        subs = {s.subtopology_id: s for s in group.topology.subtopologies}
        out = []
        for m in sorted(group.members.values(), key=lambda x: x.member_id):
            if m.user_endpoint is None:
                continue
            parts = []
            for tasks in (m.assignment.assigned.active, m.assignment.assigned.standby):
                by_topic: dict = {}
                for sid, p in tasks:
                    s = subs.get(sid)
                    if s is None:
                        continue
                    for t in list(s.source_topics) + [ti.name for ti in s.repartition_source_topics]:
                        n = self._partitions_of(t)
                        if n is not None and p < n:
                            by_topic.setdefault(t, set()).add(p)
                parts.append({t: sorted(ps) for t, ps in sorted(by_topic.items())})
            out.append((m.user_endpoint, parts[0], parts[1]))
        return out

    def _compute_target(self, group: StreamsGroup) -> None:
        tasks = group.configured.tasks if group.configured is not None and group.configured.ready else {}
        members = {mid: (m.process_id, group.target.get(mid, NO_TASKS)) for mid, m in group.members.items()}
        stateful = frozenset(s.subtopology_id for s in group.topology.subtopologies if s.state_changelog_topics) \
            if group.topology is not None else frozenset()
        group.target = assign(members, tasks, self._sg_standby_replicas(group.group_id), stateful)
        group.target_assignment_epoch = group.group_epoch
        if any(m.user_endpoint is not None for m in group.members.values()):
            group.endpoint_information_epoch += 1  # Interactive Queries' view of who holds what changed
        log.info("[GroupId %s] Computed a new target assignment for epoch %d with the sticky assignor: %s.",
                 group.group_id, group.group_epoch,
                 {mid: _fmt(t) for mid, t in sorted(group.target.items())})

    def _create_internal_topics(self, group: StreamsGroup) -> None:
        """Kafka's coordinator asks the controller to create the missing internal topics with
        the topology's configs; the next heartbeat sees them."""
        cfg = group.configured
        if cfg is None or not cfg.to_create:
            return
        from broker.topics import TopicError
        for ti in cfg.to_create:
            if self.topics.get(ti.name) is not None:
                continue
            try:
                self.topics.create_topic(ti.name, ti.partitions, ti.replication_factor or -1, dict(ti.configs))
                log.info("[GroupId %s] Created internal topic %s with %d partition(s).", group.group_id, ti.name,
                         ti.partitions)
            except TopicError as exc:
                log.warning("[GroupId %s] Creating internal topic %s failed: %s", group.group_id, ti.name,
                            exc.message)

    # ---- leaving and fencing ----------------------------------------------------------------------
    @staticmethod
    def _static_member(group: StreamsGroup, instance_id: Optional[str]) -> Optional[StreamsMember]:
        if instance_id is None:
            return None
        return next((m for m in group.members.values() if m.instance_id == instance_id), None)

    def _streams_leave(self, group_id: str, member_id: str, epoch: int) -> StreamsHeartbeatResult:
        group = self._streams_group(group_id, False)
        m = group.members.get(member_id)
        if m is None:
            raise StreamsGroupError(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
        if epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # a static member leaves for a while: its tasks wait for it until its session ends
            log.info("[GroupId %s][MemberId %s] Static member %s with instance id %s temporarily left the streams "
                     "group.", group_id, member_id, member_id, m.instance_id)
            group.members[member_id] = replace(m, static_left=True)
            return StreamsHeartbeatResult(0, None, member_id, epoch, 0, leaving=True)
        log.info("[GroupId %s][MemberId %s] Member %s left the streams group.", group_id, member_id, member_id)
        self._remove_streams_member(group, member_id)
        return StreamsHeartbeatResult(0, None, member_id, epoch, 0, leaving=True)

    def _remove_streams_member(self, group: StreamsGroup, member_id: str) -> None:
        group.members.pop(member_id, None)
        group.target.pop(member_id, None)
        for kind in ("session", "rebalance"):
            self._sg_timers.cancel((kind, group.group_id, member_id), quiet=True)
        group.group_epoch += 1
        if not group.members:
            group.shutdown_requested_by = None
            group.target_assignment_epoch = group.group_epoch

    def _fence_streams_member(self, group_id: str, member_id: str, reason: str) -> None:
        g = self.groups.get(group_id)
        if not isinstance(g, StreamsGroup) or member_id not in g.members:
            return
        log.info("[GroupId %s] Streams member %s fenced from the group because %s.", group_id, member_id, reason)
        self._remove_streams_member(g, member_id)
        self.persist_streams_group(g)

    def _schedule_streams_session_timeout(self, group_id: str, member_id: str) -> None:
        self._sg_timers.set(("session", group_id, member_id), self._sg_session_timeout(group_id),
                            lambda: self._fence_streams_member(group_id, member_id, "the member session expired"))

    def _schedule_streams_rebalance_timeout(self, group_id: str, member_id: str, epoch: int, timeout_ms: int) -> None:
        def expire():
            g = self.groups.get(group_id)
            m = g.members.get(member_id) if isinstance(g, StreamsGroup) else None
            if m is not None and m.member_epoch == epoch and m.assignment.state is MemberState.UNREVOKED_TASKS:
                self._fence_streams_member(group_id, member_id, f"it failed to transition from epoch {epoch} "
                                                                f"within {timeout_ms}ms")
        self._sg_timers.set(("rebalance", group_id, member_id), timeout_ms, expire)

    # ---- offsets ----------------------------------------------------------------------------------
    @staticmethod
    def validate_streams_offset_commit(group: StreamsGroup, member_id: str, epoch: int, *, api_version: int,
                                        transactional: bool, partitions=()) -> Optional[int]:
        """Kafka 4.4's StreamsGroup.validateOffsetCommit: an admin commit (no member, epoch < 0)
        to an empty group; else the member's epoch (STALE_MEMBER_EPOCH, ILLEGAL_GENERATION for
        TxnOffsetCommit). A commit at an older epoch is accepted when each partition it commits
        (``partitions``: (topic, partition)) belongs to a task the member still holds (assigned or
        pending revocation) since that epoch or before: the member sent it before it read the
        answer that moved its epoch on."""
        if epoch < 0 and not group.members and member_id == "":
            return None
        if transactional and epoch == -1 and member_id == "":
            return None
        m = group.members.get(member_id)
        if m is None:
            return E.UNKNOWN_MEMBER_ID
        if not transactional and api_version < 9:
            return E.UNSUPPORTED_VERSION
        if epoch == m.member_epoch:
            return None
        stale = E.ILLEGAL_GENERATION if transactional else E.STALE_MEMBER_EPOCH
        if epoch > m.member_epoch or group.topology is None:
            return stale
        held = m.assignment.assigned.active | m.assignment.pending_revocation.active
        for topic, p in partitions:
            subs = [s.subtopology_id for s in group.topology.subtopologies
                    if topic in s.source_topics or topic in {ti.name for ti in s.repartition_source_topics}]
            if not subs or (subs[0], p) not in held or epoch < m.task_epochs.get((subs[0], p), 0):
                log.debug("[GroupId %s] Commit of %s-%d by member %s at epoch %d refused: member epoch %d.",
                          group.group_id, topic, p, member_id, epoch, m.member_epoch)
                return stale
        return None

    # ---- describe ---------------------------------------------------------------------------------
    def handle_streams_group_describe(self, group_ids) -> list:
        """[(group id, error, message, StreamsGroup or None)]"""
        out = []
        for gid in group_ids:
            if not self.active:
                out.append((gid, E.COORDINATOR_NOT_AVAILABLE, None, None))
                continue
            if not gid:
                out.append((gid or "", E.INVALID_GROUP_ID, None, None))
                continue
            g = self.groups.get(gid)
            if g is None:
                out.append((gid, E.GROUP_ID_NOT_FOUND, f"Group {gid} not found.", None))
            elif not isinstance(g, StreamsGroup):
                out.append((gid, E.GROUP_ID_NOT_FOUND, f"Group {gid} is not a streams group.", None))
            else:
                out.append((gid, 0, None, g))
        return out


def _fmt(t: Tasks) -> str:
    def one(s):
        return "[" + ",".join(f"{sid}_{p}" for sid, p in sorted(s)) + "]"
    return f"(active={one(t.active)}, standby={one(t.standby)}, warmup={one(t.warmup)})"
