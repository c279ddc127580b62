"""The consumer-protocol side of the group coordinator (KIP-848): Kafka 4.x's
GroupMetadataManager for consumer groups, mixed into ``GroupCoordinator``.

Every operation follows Kafka's shape: compute the records of the change against the group as
it is (decisions in ``reconciliation`` and here), append them to the group's
``__consumer_offsets`` partition as one batch, then replay them into memory
(``ConsumerGroup.replay``), the same replay a restart runs. A failed append changes nothing
and answers COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR.

ConsumerGroupHeartbeat (``handle_consumer_group_heartbeat``):
1. get or create the group (an empty classic group is replaced; a non-empty classic group
   whose members use the consumer embedded protocol is converted, if
   ``group.consumer.migration.policy`` allows upgrades), get or create the member, check its
   epoch (FENCED_MEMBER_EPOCH), its instance id (UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID);
2. update the member; a new subscription (or metadata of the subscribed topics) bumps the
   group epoch; a new regex is resolved against the topics (synchronously here, as a separate
   operation right after the heartbeat, so its result bumps the epoch as Kafka's asynchronous
   resolution does), at most every 10 s unless a regex is unresolved, topics were created, or
   ``group.consumer.regex.refresh.interval.ms`` passed;
3. a group epoch above the target assignment epoch runs the assignor (``uniform`` or
   ``range``: the server assignor most members ask for, else the first of
   ``group.consumer.assignors``);
4. the member is reconciled towards its target (``reconciliation.reconcile``).

Timers (``scheduler.call_later``, cancelled and re-armed by key): the session timeout of every
member (``group.consumer.session.timeout.ms``; a classic member's own), the rebalance timeout of
a member asked to revoke partitions, and for classic members the join and sync timeouts.
Expiry fences the member: its records are tombstoned and the group epoch is bumped.

Members speaking the classic protocol (JoinGroup/SyncGroup/Heartbeat/LeaveGroup) inside a
consumer group are reconciled at each JoinGroup and told REBALANCE_IN_PROGRESS by Heartbeat
until they hold their target; when the last consumer-protocol member leaves a group whose
other members are all classic, the group converts back to a classic group (downgrade) and
rebalances.
"""
from __future__ import annotations

import logging
from typing import Callable, Optional

from protocol.deferred import dataclass
from protocol.errors import DecodeError, ErrorCode as E
from protocol.messages import consumer_protocol as cp
from broker.cluster import new_uuid, uuid_to_base64
from broker.groups import assignors, schemas
from broker.groups.group_configs import group_config_or
from broker.groups.consumer_group import (
    LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH, ClassicMemberMetadata, ConsumerGroup,
    ConsumerGroupMember, MemberState, ResolvedRegex, current_assignment_record, encode_record, freeze,
    group_creation_records, group_epoch_record, group_tombstone_records, member_subscription_record,
    metadata_hash, regex_record, regex_tombstone, remove_member_records, subscription_metadata_tombstone,
    target_assignment_record,
)
from broker.groups.classic_records import group_value
from broker.groups.group import GroupMetadata, GroupState, JoinResult, MemberMetadata, SyncResult
from broker.groups.reconciliation import (
    FencedMemberEpoch, build_target_assignment, is_subset, reconcile, subscribed_topic_ids, topic_partitions_map,
)
from broker.groups.errors import GroupError, append_error_code
from broker.groups.timers import KeyedTimers
from broker.groups.validation import blank_id_message, compile_regex

log = logging.getLogger(__name__)

REGEX_BATCH_REFRESH_MIN_INTERVAL_MS = 10_000  # Kafka's GroupMetadataManager constant
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION = 1  # KIP-1082


@dataclass
class HeartbeatResult:
    error: int = 0
    message: Optional[str] = None
    member_id: Optional[str] = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Optional[dict] = None  # topic id -> frozenset, None when not sent


@dataclass
class DescribedMember:
    member_id: str
    instance_id: Optional[str]
    rack_id: Optional[str]
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: list
    subscribed_topic_regex: Optional[str]
    assignment: list   # [(topic id, topic name, [partitions])]
    target_assignment: list
    member_type: int


@dataclass
class DescribedConsumerGroup:
    group_id: str
    error: int = 0
    message: Optional[str] = None
    state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: list = None


def new_member_id() -> str:
    """Kafka's ``Uuid.randomUuid().toString()``."""
    return uuid_to_base64(new_uuid())


def _regex_error(regex: str) -> Optional[str]:
    try:
        compile_regex(regex)
    except Exception as exc:  # re2.error / re.error
        detail = exc.args[0] if exc.args else str(exc)
        if isinstance(detail, bytes):  # re2 reports its reason as bytes
            detail = detail.decode("utf-8", "replace")
        return f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {detail}."
    return None


class ConsumerGroupCoordinator:
    """Mixed into ``GroupCoordinator`` (which owns ``groups``, ``store``, ``scheduler``,
    ``config``, ``topics`` and the classic protocol)."""

    # ---- plumbing ---------------------------------------------------------------------------------
    def init_consumer_groups(self) -> None:
        self._cg_timers = KeyedTimers(lambda: self.scheduler, "timer", active=lambda: self.active,
                                      quiet=(GroupError,))
        self._orphans: dict[str, object] = {}
        self.topics_version = 0
        self.topics_version_with_new_topics = 0

    def _append(self, group_id: str, records: list) -> None:
        """Write ``records`` as one batch, then replay them. Raises ``GroupError`` when the
        write fails (nothing is replayed)."""
        if not records:
            return
        try:
            self.store.write_records(group_id, [encode_record(r) for r in records])
        except Exception as exc:
            code = append_error_code(exc)
            log.warning("writing records of group %s failed: %r", group_id, exc)
            raise GroupError(E.UNKNOWN_SERVER_ERROR if code == E.INVALID_COMMIT_OFFSET_SIZE else code) from None
        for r in records:
            self._replay(r)
        for gid, old in list(self._orphans.items()):
            del self._orphans[gid]
            if old.has_offsets() and gid not in self.groups:
                keeper = GroupMetadata(gid, GroupState.EMPTY, self.now())
                keeper.adopt_offsets(old)
                self.groups[gid] = keeper

    def _replay(self, rec) -> None:
        rt, key, value = rec
        if rt == 2:  # a classic group's metadata tombstone: the group turns into a consumer group
            g = self.groups.pop(key.group, None)
            if g is not None:
                if isinstance(g, GroupMetadata):
                    self.cancel_group_timers(g)
                self._orphans[key.group] = g
            return
        gid = key.group_id
        g = self.groups.get(gid)
        if not isinstance(g, ConsumerGroup):
            if value is None:
                return
            new = ConsumerGroup(gid)
            old = g if g is not None else self._orphans.pop(gid, None)
            if old is not None:  # an offsets-only group becomes this consumer group
                if isinstance(old, GroupMetadata):
                    self.cancel_group_timers(old)
                new.adopt_offsets(old)
            self.groups[gid] = g = new
        if rt == schemas.CONSUMER_GROUP_METADATA and value is None:
            del self.groups[gid]
            self._orphans[gid] = g
            return
        g.replay(rt, key, value)

    def _timer(self, key: tuple, delay_ms: int, fn: Callable[[], None], *, if_absent: bool = False) -> None:
        self._cg_timers.set(key, delay_ms, fn, if_absent=if_absent)

    def _cancel_timer(self, key: tuple) -> None:
        self._cg_timers.cancel(key)

    def _cancel_member_timers(self, group_id: str, member_id: str) -> None:
        for kind in ("session", "rebalance", "join", "sync"):
            self._cancel_timer((kind, group_id, member_id))

    def cancel_consumer_group_timers(self) -> None:
        self._cg_timers.cancel_all()

    def _schedule_session_timeout(self, group_id: str, member_id: str, timeout_ms: Optional[int] = None) -> None:
        self._timer(("session", group_id, member_id),
                    self._session_timeout(group_id) if timeout_ms is None else timeout_ms,
                    lambda: self._fence_member_operation(group_id, member_id, "the member session expired"))

    def _schedule_rebalance_timeout(self, group_id: str, member_id: str, epoch: int, timeout_ms: int) -> None:
        def expire():
            g = self.groups.get(group_id)
            m = g.members.get(member_id) if isinstance(g, ConsumerGroup) else None
            if m is None:
                return
            if m.member_epoch == epoch:
                log.info("[GroupId %s] Member %s fenced from the group because it failed to transition from "
                         "epoch %d within %dms.", group_id, member_id, epoch, timeout_ms)
                self._fence_members(g, [m])
        self._timer(("rebalance", group_id, member_id), timeout_ms, expire)

    def _schedule_join_timeout_if_absent(self, group_id: str, member_id: str, timeout_ms: int) -> None:
        self._timer(("join", group_id, member_id), timeout_ms,
                    lambda: self._fence_member_operation(
                        group_id, member_id, "the classic member failed to join within the rebalance timeout"),
                    if_absent=True)

    def _schedule_sync_timeout(self, group_id: str, member_id: str, timeout_ms: int) -> None:
        self._timer(("sync", group_id, member_id), timeout_ms,
                    lambda: self._fence_member_operation(group_id, member_id,
                                                         "the member failed to sync within timeout"))

    def _fence_member_operation(self, group_id: str, member_id: str, reason: str) -> None:
        g = self.groups.get(group_id)
        m = g.members.get(member_id) if isinstance(g, ConsumerGroup) else None
        if m is None:
            return
        log.info("[GroupId %s] Member %s fenced from the group because %s (member epoch %d, state %s, group epoch "
                 "%d).", group_id, member_id, reason, m.member_epoch, m.state.name, g.group_epoch)
        self._fence_members(g, [m])

    def schedule_loaded_consumer_group(self, group: ConsumerGroup) -> None:
        """Kafka's onLoaded: every member must heartbeat within the session timeout; a member
        asked to revoke keeps its rebalance timeout."""
        log.info("Loaded consumer group %s with %d members (group epoch %d, target assignment epoch %d, %s).",
                 group.group_id, len(group.members), group.group_epoch, group.target_assignment_epoch, group.state)
        for mid, m in group.members.items():
            log.debug("Loaded member %s in consumer group %s: epoch %d, state %s, assigned %s, pending revocation %s.",
                      mid, group.group_id, m.member_epoch, m.state.name, self._fmt(m.assigned),
                      self._fmt(m.pending_revocation))
            self._schedule_session_timeout(group.group_id, mid)
            if m.state is MemberState.UNREVOKED_PARTITIONS:
                self._schedule_rebalance_timeout(group.group_id, mid, m.member_epoch, m.rebalance_timeout_ms)

    # ---- topics -------------------------------------------------------------------------------------
    def on_topics_changed(self, created=(), deleted=(), changed=()) -> None:
        """Kafka's onNewMetadataImage: groups subscribed to a created, changed or deleted topic
        refresh their metadata at their next heartbeat (bumping the epoch); regexes are
        re-resolved when topics were created or deleted."""
        self.topics_version += 1
        if created or deleted:
            self.topics_version_with_new_topics = self.topics_version
        touched = set(created) | set(deleted) | set(changed)  # a created topic is a changed one to Kafka
        for g in self.groups.values():
            if isinstance(g, ConsumerGroup) and (touched & g.subscribed_topic_names()):
                g.metadata_refresh_needed = True

    def _consumer_assignors(self) -> list[str]:
        return list(self.config.consumer_assignors)

    def _group_config(self, group_id: str, key: str, default: int) -> int:
        """A dynamic group config (``consumer.session.timeout.ms``, ...), else the broker default."""
        return group_config_or(self.broker, group_id, key, default)

    def _session_timeout(self, group_id: str) -> int:
        return self._group_config(group_id, "consumer.session.timeout.ms", self.config.consumer_session_timeout_ms)

    def _heartbeat_interval(self, group_id: str) -> int:
        return self._group_config(group_id, "consumer.heartbeat.interval.ms",
                                  self.config.consumer_heartbeat_interval_ms)

    # ---- ConsumerGroupHeartbeat ----------------------------------------------------------------------
    def _validate_heartbeat(self, req, api_version: int) -> None:
        epoch = req.member_epoch
        blank = blank_id_message(req, member_id=api_version >= CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION
                                 or epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH)
        if blank:
            raise GroupError(E.INVALID_REQUEST, blank)
        if epoch == 0:
            if req.rebalance_timeout_ms == -1:
                raise GroupError(E.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
            if req.topic_partitions is None or req.topic_partitions:
                raise GroupError(E.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
            regex = req.subscribed_topic_regex if api_version >= 1 else None
            # an empty list of names is a subscription (to nothing: a member of the group that
            # consumes no partition), as in Kafka; only a null one is missing
            if req.subscribed_topic_names is None and not regex:
                raise GroupError(E.INVALID_REQUEST,
                                 "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
        elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if req.instance_id is None:
                raise GroupError(E.INVALID_REQUEST, "InstanceId can't be null.")
        elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise GroupError(E.INVALID_REQUEST, "MemberEpoch is invalid.")
        if req.server_assignor is not None and req.server_assignor not in self._consumer_assignors():
            raise GroupError(E.UNSUPPORTED_ASSIGNOR,
                             f"ServerAssignor {req.server_assignor} is not supported. Supported assignors: "
                             f"{', '.join(self._consumer_assignors())}.")

    def handle_consumer_group_heartbeat(self, req, api_version: int, client_id: str, client_host: str,
                                        describable=None) -> HeartbeatResult:
        """``describable`` (with ACLs on): names -> the ones the caller may describe; a regex
        resolution this heartbeat triggers keeps only those (Kafka resolves with the triggering
        request's context, filterTopicDescribeAuthorizedTopics)."""
        if not self.active:
            return HeartbeatResult(E.COORDINATOR_NOT_AVAILABLE)
        try:
            self._validate_heartbeat(req, api_version)
            if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return self._consumer_group_leave(req.group_id, req.instance_id, req.member_id, req.member_epoch)
            return self._consumer_group_heartbeat(
                req.group_id, req.member_id, req.member_epoch, req.instance_id, req.rack_id,
                req.rebalance_timeout_ms, req.subscribed_topic_names,
                req.subscribed_topic_regex if api_version >= 1 else None, req.server_assignor,
                req.topic_partitions, client_id, client_host, describable)
        except GroupError as exc:
            return HeartbeatResult(exc.code, exc.message)
        except FencedMemberEpoch as exc:
            return HeartbeatResult(E.FENCED_MEMBER_EPOCH, str(exc))

    def _consumer_group_heartbeat(self, group_id, member_id, member_epoch, instance_id, rack_id,
                                  rebalance_timeout_ms, names, regex, assignor, owned_list, client_id,
                                  client_host, describable=None) -> HeartbeatResult:
        now = self.now()
        records: list = []
        create = member_epoch == 0
        group = self._get_or_maybe_create_consumer_group(group_id, create, records)
        self._throw_if_full(group, member_id)
        if not member_id:
            member_id = new_member_id()
        owned = topic_partitions_map(owned_list)
        if instance_id is None:
            member = self._get_or_maybe_subscribe_dynamic(group, member_id, member_epoch, owned, create, False)
        else:
            member = self._get_or_maybe_subscribe_static(group, member_id, member_epoch, instance_id, owned, create,
                                                         False, records)
        updated = member.replace(
            instance_id=instance_id if instance_id is not None else member.instance_id,
            rack_id=rack_id if rack_id is not None else member.rack_id,
            rebalance_timeout_ms=rebalance_timeout_ms if rebalance_timeout_ms != -1 else member.rebalance_timeout_ms,
            server_assignor=assignor if assignor is not None else member.server_assignor,
            subscribed_topic_names=frozenset(names) if names is not None else member.subscribed_topic_names,
            subscribed_topic_regex=regex if regex is not None else member.subscribed_topic_regex,
            client_id=client_id, client_host=client_host, classic=None)
        updated, refresh = self._update_and_reconcile(group, member, updated, owned, records, now, classic=False)
        self._schedule_session_timeout(group_id, member_id)
        self._append(group_id, records)
        if refresh:
            self._resolve_regexes(group_id, member_id, refresh, describable)
        full = rebalance_timeout_ms != -1 and (names is not None or regex is not None) and owned_list is not None
        send = member_epoch == 0 or full or freeze(updated.assigned) != freeze(member.assigned)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("[GroupId %s] Heartbeat of member %s at epoch %d (owns %s): answered epoch %d, state %s, "
                      "%s; session timeout rearmed for %d ms", group_id, member_id, member_epoch,
                      "?" if owned is None else self._fmt(owned), updated.member_epoch, updated.state.name,
                      f"assignment {self._fmt(updated.assigned)} sent" if send else "no assignment sent",
                      self._session_timeout(group_id))
        return HeartbeatResult(0, None, updated.member_id, updated.member_epoch, self._heartbeat_interval(group_id),
                               dict(updated.assigned) if send else None)

    def _update_and_reconcile(self, group: ConsumerGroup, member, updated, owned, records: list, now: int, *,
                              classic: bool):
        """Steps 1-3 of a heartbeat or of a classic member's JoinGroup: persist the member,
        bump the group epoch on a new subscription (or new metadata of the subscribed topics),
        compute a new target assignment when the group epoch is ahead, reconcile the member.
        Returns the reconciled member and the regexes to resolve after the append (or None)."""
        names_changed = self._member_subscription_changed(group.group_id, member, updated, records)
        regex_status, refresh = self._maybe_update_regexes(group, member, updated, records, now)
        subscription_changed = names_changed or regex_status != "unchanged"
        # a new group leaves epoch 0 for epoch 1 before its first member's subscription counts, as in
        # Kafka 4.4 (whose first member with topics to subscribe to gets epoch 2, one without 1); a
        # classic member's JoinGroup bumps on any change
        created = group.group_epoch == 0 and not classic
        bump = subscription_changed if classic else names_changed or regex_status == "updated_and_resolved"
        epoch = group.group_epoch
        if created or bump or group.metadata_refresh_needed:
            epoch = self._update_subscription_metadata(group, bump, updated, records, created=created)
        if epoch > group.target_assignment_epoch:
            target, target_epoch = self._update_target_assignment(group, epoch, updated, records, now), epoch
        else:
            target, target_epoch = self._target_of(group, updated), group.target_assignment_epoch
        updated = self._maybe_reconcile(group, updated, target_epoch, target, subscription_changed, owned, records)
        return updated, refresh

    @staticmethod
    def _target_of(group: ConsumerGroup, member: ConsumerGroupMember) -> dict:
        """Kafka's targetAssignment(memberId, instanceId): a static member replacing another
        starts from the other's target."""
        if member.member_id in group.target_assignment:
            return group.target_assignment[member.member_id]
        prev = group.static_members.get(member.instance_id) if member.instance_id is not None else None
        return group.target_assignment.get(prev, {}) if prev is not None else {}

    def _get_or_maybe_create_consumer_group(self, group_id: str, create: bool, records: list) -> ConsumerGroup:
        """Kafka's getOrMaybeCreateConsumerGroup: the group (not yet in ``groups`` when new or
        converted: replaying ``records`` puts it there)."""
        g = self.groups.get(group_id)
        if g is None:
            if not create:
                raise GroupError(E.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
            return ConsumerGroup(group_id)
        if isinstance(g, ConsumerGroup):
            return g
        if not isinstance(g, GroupMetadata):  # a Streams group
            raise GroupError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        if create and g.is_(GroupState.EMPTY) and not g.members:
            # an empty classic group is replaced (its offsets stay)
            records.append(self._classic_tombstone(group_id))
            log.info("[GroupId %s] Converted the empty classic group to a consumer group.", group_id)
            return ConsumerGroup(group_id)
        if create and not g.is_(GroupState.DEAD):
            self._validate_online_upgrade(g)
            return self._convert_to_consumer_group(g, records)
        raise GroupError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")

    @staticmethod
    def _classic_tombstone(group_id: str):
        return (2, schemas.GroupMetadataKey(group=group_id), None)

    def _throw_if_full(self, group: ConsumerGroup, member_id: str) -> None:
        limit = self.config.consumer_max_size
        if len(group.members) >= limit and (not member_id or member_id not in group.members):
            raise GroupError(E.GROUP_MAX_SIZE_REACHED,
                             f"The consumer group has reached its maximum capacity of {limit} members.")

    @staticmethod
    def _throw_if_epoch_invalid(member: ConsumerGroupMember, received: int, owned) -> None:
        if received == 0:
            return  # (re)joining: valid for a known member too (KIP-848's fenced member recovery)
        if received > member.member_epoch:
            raise FencedMemberEpoch(f"The consumer group member has a greater member epoch ({received}) than the one "
                                    f"known by the group coordinator ({member.member_epoch}). The member must abandon "
                                    "all its partitions and rejoin.")
        if received < member.member_epoch:
            # the answer carrying the bumped epoch may have been lost: the previous epoch is
            # accepted while the member owns no more than its assignment
            if received != member.previous_member_epoch or not is_subset(owned, member.assigned):
                raise FencedMemberEpoch(f"The consumer group member has a smaller member epoch ({received}) than the one "
                                        f"known by the group coordinator ({member.member_epoch}). The member must "
                                        "abandon all its partitions and rejoin.")

    def _get_or_maybe_subscribe_dynamic(self, group, member_id, epoch, owned, create, classic) -> ConsumerGroupMember:
        member = group.members.get(member_id)
        if member is None:
            if not create:
                raise GroupError(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}.")
            member = ConsumerGroupMember(member_id)
            log.info("[GroupId %s] Member %s joins the consumer group using the %s protocol.", group.group_id,
                     member_id, "classic" if classic else "consumer")
        if not classic:
            self._throw_if_epoch_invalid(member, epoch, owned)
        return member

    def _get_or_maybe_subscribe_static(self, group, member_id, epoch, instance_id, owned, create, classic,
                                       records) -> ConsumerGroupMember:
        existing = group.static_member(instance_id)
        if create:
            if existing is None:
                log.info("[GroupId %s] Static member %s with instance id %s joins the consumer group using the %s "
                         "protocol.", group.group_id, member_id, instance_id, "classic" if classic else "consumer")
                return group.members.get(member_id) or ConsumerGroupMember(member_id)
            if not classic and not existing.use_classic_protocol and existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                raise GroupError(E.UNRELEASED_INSTANCE_ID,
                                 f"Static member {member_id} with instance id {instance_id} cannot join the group "
                                 f"because the instance id is owned by {existing.member_id} member.")
            new = existing.replace(member_id=member_id, member_epoch=0, previous_member_epoch=0)
            if existing.member_id != member_id:
                records.extend(remove_member_records(group.group_id, existing.member_id))
                records.append(member_subscription_record(group.group_id, new))
                records.append(target_assignment_record(group.group_id, member_id,
                                                        group.target_assignment.get(existing.member_id, {})))
            records.append(current_assignment_record(group.group_id, new))
            log.info("[GroupId %s] Static member with instance id %s re-joins the consumer group using the %s "
                     "protocol. Created a new member %s to replace the existing member %s.", group.group_id,
                     instance_id, "classic" if classic else "consumer", member_id, existing.member_id)
            return new
        if existing is None:
            raise GroupError(E.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if existing.member_id != member_id:
            raise GroupError(E.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id {instance_id} was "
                                                   f"fenced by member {existing.member_id}.")
        if not classic:
            self._throw_if_epoch_invalid(existing, epoch, owned)
        return existing

    @staticmethod
    def _member_subscription_changed(group_id, member, updated, records) -> bool:
        if updated != member:
            records.append(member_subscription_record(group_id, updated))
            return updated.subscribed_topic_names != member.subscribed_topic_names
        return False

    def _maybe_update_regexes(self, group: ConsumerGroup, member, updated, records, now: int):
        """Kafka's maybeUpdateRegularExpressions: (status, regexes to resolve or None)."""
        old, new = member.regex, updated.regex
        status = "unchanged"
        require = False
        if old != new:
            status = "updated"
            if old and group.num_subscribed_members(old) == 1:
                records.append(regex_tombstone(group.group_id, old))
            if new:
                if group.num_subscribed_members(new) == 0:
                    err = _regex_error(new)
                    if err is not None:
                        raise GroupError(E.INVALID_REGULAR_EXPRESSION, err)
                    require = True
                elif new in group.resolved_regexes:
                    status = "updated_and_resolved"
            elif old:
                status = "updated_and_resolved"
        counts = group.subscribed_regex_counts()
        if old:
            counts[old] -= 1
            if counts[old] <= 0:
                del counts[old]
        if new:
            counts[new] = counts.get(new, 0) + 1
        if not require and not group.subscribed_regex_counts():
            return status, None
        if now <= group.last_regex_refresh_ms + REGEX_BATCH_REFRESH_MIN_INTERVAL_MS:
            return status, None
        require = (require or len(counts) != len(group.resolved_regexes)
                   or group.last_regex_topics_version < self.topics_version_with_new_topics
                   or now > group.last_regex_refresh_ms + self.config.consumer_regex_refresh_interval_ms)
        return status, (set(counts) if require and counts else None)

    def resolve_regex(self, regex: str) -> frozenset:
        """The non-internal topics whose whole name matches ``regex``."""
        pattern = compile_regex(regex)
        return frozenset(n for n in self.topics.topics if n not in INTERNAL_TOPICS and pattern.fullmatch(n))

    def _resolve_regexes(self, group_id: str, member_id: str, regexes: set, describable=None) -> None:
        """Kafka's handleRegularExpressionsResult: persist the resolutions; topics that changed
        (or a new metadata hash) bump the group epoch."""
        group = self.groups.get(group_id)
        if not isinstance(group, ConsumerGroup):
            return
        now = self.now()
        records = []
        new_regexes = dict(group.resolved_regexes)
        bump = False
        resolved_now = {}
        for regex in sorted(regexes):
            if group.num_subscribed_members(regex) == 0:
                continue
            try:
                resolved_now[regex] = self.resolve_regex(regex)
            except Exception as exc:
                log.error("[GroupId %s] Couldn't update regular expression due to: %s", group_id, exc)
        if describable is not None and resolved_now:
            allowed = describable(set().union(*resolved_now.values()))
            resolved_now = {r: frozenset(t for t in ts if t in allowed) for r, ts in resolved_now.items()}
        for regex, topics in resolved_now.items():
            resolved = ResolvedRegex(topics, self.topics_version, now)
            old = group.resolved_regexes.get(regex)
            if old is None or old.topics != topics:
                bump = True
            new_regexes[regex] = resolved
            records.append(regex_record(group_id, regex, resolved))
        mhash = metadata_hash(group.subscribed_topic_names(regexes=new_regexes), self.topics)
        if mhash != group.metadata_hash:
            bump = True
        if bump:
            records.append(group_epoch_record(group_id, group.group_epoch + 1, mhash))
            log.info("[GroupId %s] Bumped group epoch to %d with metadata hash %d.", group_id, group.group_epoch + 1,
                     mhash)
        try:
            self._append(group_id, records)  # the regex records' replay restarts the refresh clock
        except GroupError:
            return
        g = self.groups.get(group_id)
        if isinstance(g, ConsumerGroup) and bump:
            g.metadata_refresh_needed = False  # the bump carried the new metadata hash

    def _members_after(self, group: ConsumerGroup, updated: ConsumerGroupMember) -> list:
        members = {mid: m for mid, m in group.members.items()
                   if not (updated.instance_id is not None and m.instance_id == updated.instance_id)}
        members[updated.member_id] = updated
        return list(members.values())

    def _update_subscription_metadata(self, group: ConsumerGroup, bump: bool, updated, records, *,
                                      created: bool = False) -> int:
        """The group epoch after a member's change: one more on a new subscription or new
        metadata of the subscribed topics, written with the metadata hash; a ``created`` group
        starts from epoch 1 (so its first epoch record says 1, or 2 after such a change)."""
        members = self._members_after(group, updated)
        mhash = metadata_hash(group.subscribed_topic_names(members), self.topics)
        epoch = 1 if created else group.group_epoch
        if mhash != group.metadata_hash:
            bump = True
        if bump:
            epoch += 1
        if bump or created:
            records.append(group_epoch_record(group.group_id, epoch, mhash))
            log.info("[GroupId %s] Bumped group epoch to %d with metadata hash %d.", group.group_id, epoch, mhash)
            self.rebalances += 1
        group.metadata_refresh_needed = False
        if group.has_subscription_metadata_record:
            records.append(subscription_metadata_tombstone(group.group_id))
        return epoch

    def _update_target_assignment(self, group: ConsumerGroup, epoch: int, updated, records, now: int) -> dict:
        members = self._members_after(group, updated)
        name = group.preferred_server_assignor(members) or self._consumer_assignors()[0]
        prev = group.static_members.get(updated.instance_id) if updated.instance_id is not None else None
        removed = [prev] if prev is not None and prev != updated.member_id else []
        try:
            recs, new = build_target_assignment(group, epoch, name, self.topics, updated=updated, removed=removed,
                                                now_ms=now)
        except assignors.PartitionAssignorError as exc:
            msg = f"Failed to compute a new target assignment for epoch {epoch}: {exc}"
            log.error("[GroupId %s] %s.", group.group_id, msg)
            raise GroupError(E.UNKNOWN_SERVER_ERROR, msg) from None
        log.info("[GroupId %s] Computed a new target assignment for epoch %d with '%s' assignor.", group.group_id,
                 epoch, name)
        if log.isEnabledFor(logging.DEBUG):
            for mid in sorted(new):
                if freeze(new[mid]) != freeze(group.target_assignment.get(mid, {})):
                    log.debug("[GroupId %s] Target assignment of member %s at epoch %d: %s (was %s).", group.group_id,
                              mid, epoch, self._fmt(new[mid]), self._fmt(group.target_assignment.get(mid, {})))
        records.extend(recs)
        return new.get(updated.member_id, {})

    def _maybe_reconcile(self, group: ConsumerGroup, member, target_epoch, target, subscription_changed, owned,
                         records) -> ConsumerGroupMember:
        if not subscription_changed and member.is_reconciled_to(target_epoch):
            return member
        updated = reconcile(member, target_epoch, target, current_partition_epoch=group.current_partition_epoch,
                            owned=owned, subscribed_ids=subscribed_topic_ids(member, group.resolved_regexes, self.topics),
                            subscription_changed=subscription_changed)
        if updated != member:
            records.append(current_assignment_record(group.group_id, updated))
            if log.isEnabledFor(logging.DEBUG):
                log.debug("[GroupId %s] Member %s new assignment state: epoch=%d, previousEpoch=%d, state=%s, "
                          "assignedPartitions=%s and revokedPartitions=%s (target epoch %d: %s).",
                          group.group_id, updated.member_id, updated.member_epoch, updated.previous_member_epoch,
                          updated.state.name, self._fmt(updated.assigned), self._fmt(updated.pending_revocation),
                          target_epoch, self._fmt(target))
                if member.state is MemberState.UNREVOKED_PARTITIONS and updated.state is not \
                        MemberState.UNREVOKED_PARTITIONS:
                    log.debug("[GroupId %s] Member %s acknowledged the revocation of %s.", group.group_id,
                              updated.member_id, self._fmt(member.pending_revocation))
            if not updated.use_classic_protocol:
                if updated.state is MemberState.UNREVOKED_PARTITIONS:
                    self._schedule_rebalance_timeout(group.group_id, updated.member_id, updated.member_epoch,
                                                     updated.rebalance_timeout_ms)
                else:
                    self._cancel_timer(("rebalance", group.group_id, updated.member_id))
        return updated

    # ---- leaving --------------------------------------------------------------------------------------
    def _consumer_group(self, group_id: str) -> ConsumerGroup:
        g = self.groups.get(group_id)
        if g is None:
            raise GroupError(E.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        if not isinstance(g, ConsumerGroup):
            raise GroupError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        return g

    def _consumer_group_leave(self, group_id, instance_id, member_id, epoch) -> HeartbeatResult:
        group = self._consumer_group(group_id)
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise GroupError(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
            log.info("[GroupId %s] Member %s left the consumer group.", group_id, member_id)
            self._fence_members(group, [member])
            return HeartbeatResult(0, None, member_id, epoch)
        member = group.static_member(instance_id)
        if member is None:
            raise GroupError(E.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if member.member_id != member_id:
            raise GroupError(E.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id {instance_id} was "
                                                   f"fenced by member {member.member_id}.")
        if epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # the member keeps its partitions until it comes back or its session expires
            log.info("[GroupId %s] Static member %s with instance id %s temporarily left the consumer group.",
                     group_id, member_id, instance_id)
            # Kafka's resetAssignedPartitionsEpochsToZero: the member comes back at epoch 0
            leaving = member.replace(member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, pending_revocation={},
                                     assignment_epochs={(t, p): 0 for t, ps in member.assigned.items() for p in ps})
            self._append(group_id, [current_assignment_record(group_id, leaving)])
            return HeartbeatResult(0, None, member_id, LEAVE_GROUP_STATIC_MEMBER_EPOCH)
        log.info("[GroupId %s] Static member %s with instance id %s left the consumer group.", group_id, member_id,
                 instance_id)
        self._fence_members(group, [member])
        return HeartbeatResult(0, None, member_id, epoch)

    def _fence_members(self, group: ConsumerGroup, members: list) -> None:
        """Kafka's consumerGroupFenceMembers: remove them (or convert the group back to a
        classic group when only classic members would be left)."""
        if not members:
            return
        gid = group.group_id
        leaving = {m.member_id for m in members}
        if self._validate_online_downgrade(group, leaving):
            self._convert_to_classic_group(group, leaving)
            return
        records = []
        for m in members:
            records.extend(remove_member_records(gid, m.member_id))
        remaining = [m for mid, m in group.members.items() if mid not in leaving]
        counts = group.subscribed_regex_counts(remaining)
        regexes = dict(group.resolved_regexes)
        for regex in {m.regex for m in members if m.regex}:
            if regex not in counts:
                records.append(regex_tombstone(gid, regex))
                regexes.pop(regex, None)
        mhash = metadata_hash(group.subscribed_topic_names(remaining, regexes), self.topics)
        records.append(group_epoch_record(gid, group.group_epoch + 1, mhash))
        log.info("[GroupId %s] Bumped group epoch to %d with metadata hash %d.", gid, group.group_epoch + 1, mhash)
        for m in members:
            self._cancel_member_timers(gid, m.member_id)
        self._append(gid, records)

    # ---- migration between the protocols --------------------------------------------------------------
    def _validate_online_upgrade(self, classic: GroupMetadata) -> None:
        gid = classic.group_id
        if self.config.migration_policy not in ("upgrade", "bidirectional"):
            log.info("Cannot upgrade classic group %s to consumer group because the online upgrade is disabled.", gid)
            raise GroupError(E.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {gid} to consumer group because "
                                                   "online upgrade is disabled.")
        if classic.protocol_type != cp.PROTOCOL_TYPE:
            log.info("Cannot upgrade classic group %s to consumer group because the group does not use the "
                     "consumer embedded protocol.", gid)
            raise GroupError(E.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {gid} to consumer group because the "
                                                   "group does not use the consumer embedded protocol.")
        if classic.size > self.config.consumer_max_size:
            raise GroupError(E.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {gid} to consumer group because the "
                                                   "group size exceeds the consumer group maximum size.")

    def _convert_to_consumer_group(self, classic: GroupMetadata, records: list) -> ConsumerGroup:
        """Kafka's convertToConsumerGroup: the classic members become members at the classic
        generation, holding (and targeted with) their last assignment; the joining member bumps
        the epoch right after, so they are asked to rejoin (REBALANCE_IN_PROGRESS)."""
        gid = classic.group_id
        for m in classic.all_members():
            classic.maybe_invoke_join_callback(m, JoinResult(m.member_id, E.REBALANCE_IN_PROGRESS))
            classic.maybe_invoke_sync_callback(m, SyncResult(E.REBALANCE_IN_PROGRESS))
        group = ConsumerGroup(gid)
        group.group_epoch = group.target_assignment_epoch = classic.generation_id
        try:
            for m in classic.all_members():
                _v, sub = cp.decode_subscription(m.metadata(classic.protocol_name))
                assigned = self._topic_ids_of(cp.assignment_partitions(m.assignment))
                member = ConsumerGroupMember(
                    m.member_id, member_epoch=classic.generation_id, previous_member_epoch=classic.generation_id,
                    state=MemberState.STABLE, instance_id=m.group_instance_id, rack_id=sub.rack_id,
                    rebalance_timeout_ms=m.rebalance_timeout_ms, client_id=m.client_id, client_host=m.client_host,
                    subscribed_topic_names=frozenset(sub.topics), assigned=assigned,
                    classic=ClassicMemberMetadata(m.session_timeout_ms, tuple((n, bytes(md)) for n, md in
                                                                           m.supported_protocols)))
                group.target_assignment[m.member_id] = assigned
                group._update_member(member)
        except (DecodeError, KeyError, ValueError) as exc:
            log.warning("Cannot upgrade classic group %s to consumer group because the embedded consumer protocol "
                        "is malformed: %s.", gid, exc)
            raise GroupError(E.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {gid} to consumer group because the "
                                                   "embedded consumer protocol is malformed.") from None
        group.metadata_hash = metadata_hash(group.subscribed_topic_names(), self.topics)
        records.append(self._classic_tombstone(gid))
        records.extend(group_creation_records(group))
        for mid, m in group.members.items():
            self._schedule_session_timeout(gid, mid, m.classic.session_timeout_ms)
        log.info("[GroupId %s] Converted the classic group to a consumer group.", gid)
        return group

    def _topic_ids_of(self, by_name: dict) -> dict:
        out = {}
        for name, ps in by_name.items():
            t = self.topics.get(name)
            if t is not None and ps:
                out[bytes(t.topic_id)] = frozenset(out.get(bytes(t.topic_id), frozenset()) | set(ps))
        return out

    def _topic_names_of(self, by_id) -> dict:
        out = {}
        for tid, ps in by_id.items():
            t = self.topics.by_id(tid)
            if t is not None and ps:
                out[t.name] = sorted(ps)
        return out

    def _validate_online_downgrade(self, group: ConsumerGroup, leaving: set) -> bool:
        if not group.all_use_classic_protocol_except(leaving):
            return False
        if len(group.members) - len(leaving) <= 0:
            return False
        if self.config.migration_policy not in ("downgrade", "bidirectional"):
            log.info("Cannot downgrade consumer group %s to classic group because the online downgrade is "
                     "disabled.", group.group_id)
            return False
        if len(group.members) - len(leaving) > self.config.max_size:
            log.info("Cannot downgrade consumer group %s to classic group because its group size is greater than "
                     "classic group max size.", group.group_id)
            return False
        return True

    def _convert_to_classic_group(self, group: ConsumerGroup, leaving: set) -> None:
        """Kafka's convertToClassicGroup: the remaining (classic) members form a Stable classic
        group at the group epoch holding their target assignments, then it rebalances."""
        gid = group.group_id
        now = self.now()
        classic = GroupMetadata(gid, GroupState.STABLE, now)
        classic.generation_id = group.group_epoch
        classic.protocol_type = cp.PROTOCOL_TYPE
        for mid, m in group.members.items():
            if mid in leaving:
                continue
            classic.add(MemberMetadata(mid, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                                       m.classic.session_timeout_ms, cp.PROTOCOL_TYPE, list(m.classic.protocols)))
        classic.protocol_name = classic.select_protocol()
        classic.subscribed_topics = classic.compute_subscribed_topics()
        assignment = {}
        for m in classic.all_members():
            version = cp.decode_subscription(m.metadata(classic.protocol_name))[0]
            parts = self._topic_names_of(group.target_assignment.get(m.member_id, {}))
            m.assignment = assignment[m.member_id] = cp.encode_assignment(cp.assignment(parts), version)
        raw = [(schemas.group_metadata_key(gid), group_value(classic, assignment))]
        records = group_tombstone_records(group)
        try:
            self.store.write_records(gid, [encode_record(r) for r in records] + raw)
        except Exception as exc:
            log.warning("downgrading group %s failed: %r", gid, exc)
            raise GroupError(E.COORDINATOR_NOT_AVAILABLE) from None
        for mid in list(group.members):
            self._cancel_member_timers(gid, mid)
        classic.adopt_offsets(group)
        self.groups[gid] = classic
        for m in classic.all_members():
            self.complete_and_schedule_next_heartbeat(classic, m)
        self.prepare_rebalance(classic, f"Downgrade group {gid} from consumer to classic for member leaving.")
        log.info("[GroupId %s] Converted the consumer group to a classic group.", gid)

    # ---- classic members inside a consumer group ----------------------------------------------------
    def classic_join_to_consumer_group(self, group: ConsumerGroup, member_id: str, instance_id, require_known: bool,
                                        client_id, client_host, rebalance_timeout_ms, session_timeout_ms,
                                        protocol_type, protocols, callback) -> None:
        gid = group.group_id
        records: list = []
        unknown = member_id == ""
        if unknown:
            member_id = new_member_id()
        try:
            self._throw_if_full(group, member_id)
            if not group.supports_classic_protocols(protocol_type, [n for n, _ in protocols]):
                raise GroupError(E.INCONSISTENT_GROUP_PROTOCOL, f"Member {member_id}'s protocols are not supported.")
            if require_known and unknown and instance_id is None:
                log.info("[GroupId %s] Dynamic member with unknown member id joins the consumer group. Created a new "
                         "member id %s and requesting the member to rejoin with this id.", gid, member_id)
                callback(JoinResult(member_id, E.MEMBER_ID_REQUIRED))
                return
            if instance_id is None:
                member = self._get_or_maybe_subscribe_dynamic(group, member_id, -1, {}, True, True)
            else:
                member = self._get_or_maybe_subscribe_static(group, member_id, -1, instance_id, {}, unknown, True,
                                                             records)
            try:
                _v, sub = cp.decode_subscription(protocols[0][1])
            except DecodeError:
                raise GroupError(E.INCONSISTENT_GROUP_PROTOCOL,
                                 "Malformed embedded consumer protocol in subscription deserialization.") from None
            updated = member.replace(
                instance_id=instance_id if instance_id is not None else member.instance_id,
                rack_id=sub.rack_id if sub.rack_id is not None else member.rack_id,
                rebalance_timeout_ms=rebalance_timeout_ms if rebalance_timeout_ms != -1 else member.rebalance_timeout_ms,
                subscribed_topic_names=frozenset(sub.topics), subscribed_topic_regex="",
                client_id=client_id, client_host=client_host,
                classic=ClassicMemberMetadata(session_timeout_ms, tuple((n, bytes(md)) for n, md in protocols)))
            owned = self._topic_ids_of({tp.topic: tp.partitions for tp in sub.owned_partitions})
            updated, _refresh = self._update_and_reconcile(group, member, updated, owned, records, self.now(),
                                                           classic=True)
            self._append(gid, records)
        except GroupError as exc:
            callback(JoinResult(member_id if not unknown else "", exc.code))
            return
        except FencedMemberEpoch:
            callback(JoinResult(member_id, E.UNKNOWN_MEMBER_ID))
            return
        self._cancel_timer(("join", gid, updated.member_id))
        self._schedule_session_timeout(gid, updated.member_id, session_timeout_ms)
        self._schedule_sync_timeout(gid, updated.member_id, rebalance_timeout_ms)
        log.debug("[GroupId %s] JoinGroup of classic member %s answered at epoch %d (state %s, assigned %s); session "
                  "timeout rearmed for %d ms.", gid, updated.member_id, updated.member_epoch, updated.state.name,
                  self._fmt(updated.assigned), session_timeout_ms)
        callback(JoinResult(updated.member_id, 0, updated.member_epoch, cp.PROTOCOL_TYPE, protocols[0][0], ""))

    def _validate_consumer_group_member(self, group: ConsumerGroup, member_id: str, instance_id) -> ConsumerGroupMember:
        if instance_id is None:
            m = group.members.get(member_id)
            if m is None:
                raise GroupError(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}.")
            return m
        m = group.static_member(instance_id)
        if m is None:
            raise GroupError(E.UNKNOWN_MEMBER_ID, f"Member with instance id {instance_id} is not a member of group "
                                                  f"{group.group_id}.")
        if m.member_id != member_id:
            raise GroupError(E.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id {instance_id} was "
                                                   f"fenced by member {m.member_id}.")
        return m

    def _classic_member_checks(self, group: ConsumerGroup, member_id: str, instance_id, generation_id: int
                               ) -> ConsumerGroupMember:
        m = self._validate_consumer_group_member(group, member_id, instance_id)
        if not m.use_classic_protocol:
            raise GroupError(E.UNKNOWN_MEMBER_ID, f"Member {m.member_id} does not use the classic protocol.")
        if m.member_epoch != generation_id:
            raise GroupError(E.ILLEGAL_GENERATION, f"The request generation id {generation_id} is not equal to the "
                                                   f"member epoch {m.member_epoch} of member {m.member_id}.")
        return m

    def classic_sync_to_consumer_group(self, group: ConsumerGroup, member_id, instance_id, generation_id,
                                        protocol_type, protocol_name) -> SyncResult:
        gid = group.group_id
        try:
            m = self._classic_member_checks(group, member_id, instance_id, generation_id)
            name = m.classic.protocols[0][0]
            if protocol_type is not None and protocol_type != cp.PROTOCOL_TYPE:
                raise GroupError(E.INCONSISTENT_GROUP_PROTOCOL)
            if protocol_name is not None and protocol_name != name:
                raise GroupError(E.INCONSISTENT_GROUP_PROTOCOL)
            if group.group_epoch > m.member_epoch and m.state is not MemberState.UNREVOKED_PARTITIONS:
                self._schedule_join_timeout_if_absent(gid, m.member_id, m.rebalance_timeout_ms)
                raise GroupError(E.REBALANCE_IN_PROGRESS)
        except GroupError as exc:
            return SyncResult(exc.code)
        self._cancel_timer(("sync", gid, m.member_id))
        self._schedule_session_timeout(gid, m.member_id, m.classic.session_timeout_ms)
        version = cp.decode_subscription(m.classic.protocols[0][1])[0]
        data = cp.encode_assignment(cp.assignment(self._topic_names_of(m.assigned)), version)
        return SyncResult(0, protocol_type, protocol_name, data)

    def classic_heartbeat_to_consumer_group(self, group: ConsumerGroup, member_id, instance_id, generation_id) -> int:
        gid = group.group_id
        try:
            m = self._classic_member_checks(group, member_id, instance_id, generation_id)
        except GroupError as exc:
            return exc.code
        self._schedule_session_timeout(gid, m.member_id, m.classic.session_timeout_ms)
        # rejoin when the group moved on, when partitions must be revoked, or when the ones it
        # waits for are free
        if (m.member_epoch < group.group_epoch or m.state is MemberState.UNREVOKED_PARTITIONS
                or (m.state is MemberState.UNRELEASED_PARTITIONS and not group.waiting_on_unreleased_partition(m))):
            self._schedule_join_timeout_if_absent(gid, m.member_id, m.rebalance_timeout_ms)
            log.debug("[GroupId %s] Heartbeat of classic member %s at epoch %d (state %s, group epoch %d): rejoin.",
                      gid, m.member_id, m.member_epoch, m.state.name, group.group_epoch)
            return E.REBALANCE_IN_PROGRESS
        return 0

    def classic_leave_to_consumer_group(self, group: ConsumerGroup, members) -> list:
        out = []
        leaving = []
        for member_id, instance_id, reason in members:
            try:
                if instance_id is None:
                    m = group.members.get(member_id)
                    if m is None:
                        raise GroupError(E.UNKNOWN_MEMBER_ID)
                else:
                    m = group.static_member(instance_id)
                    if m is None:
                        raise GroupError(E.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
                    if member_id != "" and m.member_id != member_id:
                        raise GroupError(E.FENCED_INSTANCE_ID)
                log.info("[GroupId %s] Member %s has left group through explicit `LeaveGroup` request; client "
                         "reason: %s", group.group_id, m.member_id, reason or "not provided")
                leaving.append(m)
                out.append((member_id, instance_id, 0))
            except GroupError as exc:
                out.append((member_id, instance_id, exc.code))
        self._fence_members(group, leaving)
        return out

    # ---- describe --------------------------------------------------------------------------------------
    def handle_consumer_group_describe(self, group_ids) -> list[DescribedConsumerGroup]:
        out = []
        for gid in group_ids:
            if not self.active:
                out.append(DescribedConsumerGroup(gid, E.COORDINATOR_NOT_AVAILABLE))
                continue
            if not gid:
                out.append(DescribedConsumerGroup(gid or "", E.INVALID_GROUP_ID))
                continue
            try:
                g = self._consumer_group(gid)
            except GroupError as exc:
                out.append(DescribedConsumerGroup(gid, exc.code, exc.message))
                continue
            members = []
            for m in g.members.values():
                members.append(DescribedMember(
                    m.member_id, m.instance_id, m.rack_id, m.member_epoch, m.client_id, m.client_host,
                    sorted(m.subscribed_topic_names), m.subscribed_topic_regex,
                    self._described_partitions(m.assigned), self._described_partitions(g.target_assignment.get(m.member_id, {})),
                    0 if m.use_classic_protocol else 1))
            out.append(DescribedConsumerGroup(
                gid, 0, None, str(g.state), g.group_epoch, g.target_assignment_epoch,
                g.preferred_server_assignor() or self._consumer_assignors()[0], members))
        return out

    def _fmt(self, a) -> str:
        """An assignment (topic id -> partitions) as ``name-p,...`` for the log."""
        out = []
        for tid, ps in sorted(a.items()):
            t = self.topics.by_id(tid) if self.topics is not None else None
            name = t.name if t is not None else bytes(tid).hex()[:8]
            out += [f"{name}-{p}" for p in sorted(ps)]
        return "[" + ",".join(out) + "]"

    def _described_partitions(self, a) -> list:
        out = []
        for tid, ps in sorted(a.items()):
            t = self.topics.by_id(tid)
            if t is not None:
                out.append((tid, t.name, sorted(ps)))
        return out

    # ---- offsets --------------------------------------------------------------------------------------
    def validate_consumer_offset_commit(self, group: ConsumerGroup, member_id: str, epoch: int, *, api_version: int,
                                         transactional: bool, partitions=(), instance_id=None) -> Optional[int]:
        """Kafka 4.x's ConsumerGroup.validateOffsetCommit with OffsetMetadataManager's error
        mapping: STALE_MEMBER_EPOCH from OffsetCommit v9+ (UNSUPPORTED_VERSION before),
        ILLEGAL_GENERATION for TxnOffsetCommit and for classic members.

        KIP-1251: a commit at an epoch older than the member's is accepted when every
        partition it commits (``partitions``: (topic name, partition)) is still held by the
        member (assigned or pending revocation) and was assigned at or before that epoch. The
        member's epoch moves on when the coordinator answers a heartbeat; a commit the member
        sent before it read that answer carries the epoch before, and must not fail for it."""
        if epoch < 0 and not group.members:
            return None  # an admin client or a consumer without group management
        if transactional and epoch == -1 and member_id == "" and instance_id is None:
            return None  # TxnOffsetCommit before v3 carries no member (KIP-447)
        m = group.members.get(member_id)
        if m is None:
            return E.UNKNOWN_MEMBER_ID
        if not transactional and not m.use_classic_protocol and api_version < 9:
            return E.UNSUPPORTED_VERSION
        if epoch == m.member_epoch:
            return None
        stale = (E.ILLEGAL_GENERATION if m.use_classic_protocol or transactional else
                 E.STALE_MEMBER_EPOCH if api_version >= 9 else E.UNSUPPORTED_VERSION)
        if epoch > m.member_epoch:
            return stale
        for name, p in partitions:
            t = self.topics.get(name) if self.topics is not None else None
            tid = bytes(t.topic_id) if t is not None else None
            if tid is None or not m.holds(tid, p) or epoch < m.assignment_epoch(tid, p):
                log.debug("[GroupId %s] Commit of %s-%d by member %s at epoch %d refused: member epoch %d, partition "
                          "%s.", group.group_id, name, p, member_id, epoch, m.member_epoch,
                          f"assigned at epoch {m.assignment_epoch(tid, p)}" if tid is not None and m.holds(tid, p)
                          else "not held")
                return stale
        return None

    def delete_consumer_group(self, group: ConsumerGroup, *, keep_offsets: bool = False) -> None:
        """The group's records are tombstoned; it leaves ``groups`` (its offsets with it, unless
        ``keep_offsets``: a classic group takes its place and keeps them)."""
        records = group_tombstone_records(group)
        try:
            self.store.write_records(group.group_id, [encode_record(r) for r in records])
        except Exception as exc:
            log.warning("failed to write tombstones for group %s: %r", group.group_id, exc)
        for mid in list(group.members):
            self._cancel_member_timers(group.group_id, mid)
        if self.groups.get(group.group_id) is group:
            del self.groups[group.group_id]
            if keep_offsets and group.has_offsets():
                keeper = GroupMetadata(group.group_id, GroupState.EMPTY, self.now())
                keeper.adopt_offsets(group)
                self.groups[group.group_id] = keeper
