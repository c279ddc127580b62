"""The classic group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) on classic
groups: Kafka's GroupMetadataManager for classic groups (GroupCoordinator.scala, 3.x, for the rules
and error codes per state), mixed into the coordinator front ``GroupCoordinator``, which
dispatches each request by group type: a classic member of a consumer group goes to
``consumer_coordinator`` instead.

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

JoinGroup and SyncGroup answers are delivered through callables stored on the member.
"""
from __future__ import annotations

import logging
from typing import Callable, Optional

from protocol.errors import ErrorCode as E
from broker.groups.errors import append_error_code
from broker.groups.group import (
    NEW_MEMBER_JOIN_TIMEOUT_MS, GroupMetadata, GroupState, JoinResult, MemberMetadata, SyncResult, generate_member_id,
)

log = logging.getLogger(__name__)
S = GroupState


class ClassicGroupCoordinator:
    """The classic side of ``GroupCoordinator``: it uses the front's ``groups``, ``config``,
    ``scheduler``, ``store``, ``now()``, ``partition_for()`` and ``rebalances``."""

    def init_classic_groups(self) -> None:
        self._pending_timers: dict[tuple[str, str], object] = {}

    def cancel_classic_group_timers(self) -> None:
        """Every classic group's timers (unload): parked JoinGroup/SyncGroup requests are
        answered NOT_COORDINATOR, as when Kafka resigns a partition."""
        for group in list(self.groups.values()):
            if group.group_type != "classic":
                continue
            for m in group.all_members():
                group.maybe_invoke_join_callback(m, JoinResult(m.member_id, E.NOT_COORDINATOR))
                group.maybe_invoke_sync_callback(m, SyncResult(E.NOT_COORDINATOR))
            self.cancel_group_timers(group)
        for h in self._pending_timers.values():
            h.cancel()
        self._pending_timers.clear()

    # ---- JoinGroup ------------------------------------------------------------------------------
    def classic_group_join(self, group: GroupMetadata, member_id: str, group_instance_id: Optional[str],
                           require_known_member_id: bool, support_skip_assignment: bool, client_id: str,
                           client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int,
                           protocol_type: str, protocols: list[tuple[str, bytes]],
                           callback: Callable[[JoinResult], None], reason: Optional[str]) -> None:
        """JoinGroup on a classic group (Kafka's classicGroupJoinToClassicGroup)."""
        is_unknown = member_id == ""
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
    def classic_group_sync(self, group: GroupMetadata, generation_id: int, member_id: str,
                           protocol_type: Optional[str], protocol_name: Optional[str], group_instance_id: Optional[str],
                           assignments: dict[str, bytes], callback: Callable[[SyncResult], None]) -> None:
        """SyncGroup on a classic group (Kafka's classicGroupSyncToClassicGroup)."""
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

    def classic_group_heartbeat(self, group: GroupMetadata, member_id: str, group_instance_id: Optional[str],
                                generation_id: int) -> int:
        """Heartbeat on a classic group (Kafka's classicGroupHeartbeatToClassicGroup)."""
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

    def classic_group_leave(self, group: GroupMetadata, members: list[tuple[str, Optional[str], Optional[str]]]
                            ) -> tuple[int, list[tuple[str, Optional[str], int]]]:
        """LeaveGroup on a classic group (Kafka's classicGroupLeaveToClassicGroup)."""
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

    # ---- offsets and storage --------------------------------------------------------------------
    def validate_classic_offset_commit(self, group, generation_id, member_id, group_instance_id,
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
