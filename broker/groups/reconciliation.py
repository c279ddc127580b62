"""KIP-848's two assignment steps, pure: Kafka's TargetAssignmentBuilder and
CurrentAssignmentBuilder.

``build_target_assignment``: the assignor's new target for every member at a new epoch, and
the records of what changed (one per member whose target changed, then the epoch).

``reconcile``: one member's next state on its way to its target. A partition moves between
members in two steps, so that it is never consumed by two at once:

1. its previous owner is asked to revoke it (the owner stays at its epoch, in
   ``UNREVOKED_PARTITIONS``, with the partition in ``pending_revocation``) and gives it up
   when its heartbeat no longer lists it as owned;
2. its new owner reaches the new epoch without it (``UNRELEASED_PARTITIONS``) and gets it on a
   later heartbeat, once no member holds it (``current_partition_epoch`` is -1).

States: STABLE (holds its target at the target epoch, or an epoch behind with nothing to
revoke yet), UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS; UNKNOWN (a state from a newer
version) fences the member unless it owns nothing.
"""
from __future__ import annotations

from typing import Callable, Iterable, Mapping, Optional

from broker.groups import assignors
from broker.groups.consumer_group import (
    ConsumerGroup, ConsumerGroupMember, MemberState, Record, ResolvedRegex, freeze, target_assignment_record,
    target_epoch_record,
)

TP = tuple


class FencedMemberEpoch(Exception):
    """Kafka's FencedMemberEpochException (FENCED_MEMBER_EPOCH)."""


def subscribed_topic_ids(member: ConsumerGroupMember, regexes: Mapping[str, ResolvedRegex], topics) -> set:
    """Ids of the existing topics the member subscribes to (by name or through its regex; an
    unresolved regex matches nothing, to be conservative, as Kafka)."""
    names = set(member.subscribed_topic_names)
    if member.regex:
        r = regexes.get(member.regex)
        if r is not None:
            names |= r.topics
    out = set()
    for n in names:
        t = topics.get(n)
        if t is not None:
            out.add(bytes(t.topic_id))
    return out


def _owns_any(owned: Optional[Mapping], pending: Mapping) -> bool:
    """Kafka's ownsRevokedPartitions: without an owned list (not sent), assume it still does."""
    if owned is None:
        return True
    for t, ps in owned.items():
        rev = pending.get(t)
        if rev and any(p in rev for p in ps):
            return True
    return False


def reconcile(member: ConsumerGroupMember, target_epoch: int, target: Mapping, *,
              current_partition_epoch: Callable[[bytes, int], int], owned: Optional[Mapping],
              subscribed_ids: set, subscription_changed: bool) -> ConsumerGroupMember:
    """Kafka's CurrentAssignmentBuilder.build (4.1). ``owned`` is what the member's heartbeat
    reports (topic id -> partitions), None when the heartbeat did not say."""
    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return _next_assignment(member, member.member_epoch, target_epoch, target, current_partition_epoch,
                                    owned, subscribed_ids)
        if subscription_changed:
            return _drop_unsubscribed(member, owned, subscribed_ids)
        return member
    if state is MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.pending_revocation):
            return _drop_unsubscribed(member, owned, subscribed_ids) if subscription_changed else member
        return _next_assignment(member, member.member_epoch, target_epoch, target, current_partition_epoch,
                                owned, subscribed_ids)
    if state is MemberState.UNRELEASED_PARTITIONS:
        return _next_assignment(member, member.member_epoch, target_epoch, target, current_partition_epoch,
                                owned, subscribed_ids)
    # UNKNOWN: a newer coordinator wrote a state we do not know; start over from nothing owned
    if owned is None or any(owned.values()):
        raise FencedMemberEpoch("The consumer group member is in a unknown state. The member must abandon "
                                "all its partitions and rejoin.")
    return _next_assignment(member, target_epoch, target_epoch, target, current_partition_epoch, owned,
                            subscribed_ids)


def _drop_unsubscribed(member: ConsumerGroupMember, owned, subscribed_ids: set) -> ConsumerGroupMember:
    """Kafka's updateCurrentAssignment: the subscription changed, so partitions of topics no
    longer subscribed go to pending revocation at once, without waiting for a new target."""
    assigned = dict(member.assigned)
    pending = dict(member.pending_revocation)
    if not subscribed_ids and not member.pending_revocation:
        new_assigned, new_pending = {}, dict(member.assigned)
    else:
        new_assigned, new_pending = assigned, pending
        for t in list(assigned):
            if t not in subscribed_ids:
                new_pending[t] = frozenset(new_pending.get(t, frozenset()) | assigned[t])
                del new_assigned[t]
    if freeze(new_assigned) == freeze(member.assigned):
        return member
    if new_pending and _owns_any(owned, new_pending):
        return member.with_epoch(member.member_epoch, state=MemberState.UNREVOKED_PARTITIONS,
                                 assigned=freeze(new_assigned), pending_revocation=freeze(new_pending))
    return member.with_epoch(member.member_epoch, assigned=freeze(new_assigned))


def _next_assignment(member: ConsumerGroupMember, member_epoch: int, target_epoch: int, target: Mapping,
                     current_partition_epoch, owned, subscribed_ids: set) -> ConsumerGroupMember:
    """Kafka's computeNextAssignment."""
    unreleased = False
    new_assigned: dict = {}
    new_pending: dict = {}
    to_assign: dict = {}
    for t in set(target) | set(member.assigned):
        tgt = target.get(t, frozenset()) if t in subscribed_ids else frozenset()
        cur = member.assigned.get(t, frozenset())
        kept = cur & tgt
        revoke = cur - kept
        wanted = set(tgt - kept)
        mine_pending = member.pending_revocation.get(t, frozenset())
        # a partition still held by another member is not handed out yet; one this member
        # itself is revoking counts as its own (only one member holds a partition)
        held = {p for p in wanted if current_partition_epoch(t, p) != -1 and p not in mine_pending}
        if held:
            unreleased = True
            wanted -= held
        if kept:
            new_assigned[t] = kept
        if revoke:
            new_pending[t] = revoke
        if wanted:
            to_assign[t] = frozenset(wanted)
    if new_pending and _owns_any(owned, new_pending):
        # revoke first: the member stays at its epoch until it no longer owns them
        return member.with_epoch(member_epoch, state=MemberState.UNREVOKED_PARTITIONS,
                                 assigned=freeze(new_assigned), pending_revocation=freeze(new_pending))
    if to_assign:
        for t, ps in to_assign.items():
            new_assigned[t] = frozenset(new_assigned.get(t, frozenset()) | ps)
        state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
        return member.with_epoch(target_epoch, state=state, assigned=freeze(new_assigned), pending_revocation={})
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return member.with_epoch(target_epoch, state=state, assigned=freeze(new_assigned), pending_revocation={})


def build_target_assignment(group: ConsumerGroup, group_epoch: int, assignor: str, topics, *,
                            updated: Optional[ConsumerGroupMember] = None, removed: Iterable[str] = (),
                            regexes: Optional[Mapping[str, ResolvedRegex]] = None, now_ms: int = 0
                            ) -> tuple[list[Record], dict[str, dict]]:
    """Kafka's TargetAssignmentBuilder.build: (records, new target of every member).

    ``updated`` is a member not yet replayed into the group (added or changed); ``removed``
    members are left out. A new static member takes over the target of the member whose
    instance id it reuses. Raises ``assignors.PartitionAssignorError``."""
    regexes = group.resolved_regexes if regexes is None else regexes
    members = dict(group.members)
    removed = set(removed)
    for mid in removed:
        members.pop(mid, None)
    current = {mid: group.target_assignment.get(mid, {}) for mid in members}
    if updated is not None:
        members[updated.member_id] = updated
        a = group.target_assignment.get(updated.member_id, {})
        prev = group.static_members.get(updated.instance_id) if updated.instance_id is not None else None
        if prev is not None and prev != updated.member_id:
            a = group.target_assignment.get(prev, {})
        current[updated.member_id] = a
    specs = {}
    partitions = {}
    for mid, m in members.items():
        ids = subscribed_topic_ids(m, regexes, topics)
        for tid in ids:
            partitions[tid] = topics.by_id(tid).partitions
        specs[mid] = assignors.MemberSpec(frozenset(ids), current[mid])
    new = assignors.assign(assignor, specs, partitions)
    records: list[Record] = []
    for mid in sorted(specs):
        a = new.get(mid, {})
        if mid not in group.target_assignment or freeze(a) != freeze(group.target_assignment[mid]):
            records.append(target_assignment_record(group.group_id, mid, a))
    records.append(target_epoch_record(group.group_id, group_epoch, now_ms))
    return records, new


def topic_partitions_map(owned_list) -> Optional[dict]:
    """A heartbeat's ``topic_partitions`` (or None) as topic id -> frozenset."""
    if owned_list is None:
        return None
    out: dict = {}
    for tp in owned_list:
        out[bytes(tp.topic_id)] = frozenset(out.get(bytes(tp.topic_id), frozenset()) | set(tp.partitions))
    return out


def is_subset(owned: Optional[Mapping], assigned: Mapping) -> bool:
    """Kafka's isSubset: the member owns only partitions of its assignment (None: unknown)."""
    if owned is None:
        return False
    for t, ps in owned.items():
        a = assigned.get(t)
        if a is None or any(p not in a for p in ps):
            return False
    return True
