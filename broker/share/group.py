"""Share groups and their members (KIP-932), pure: Kafka's ShareGroup/ShareGroupMember,
ShareGroupAssignmentBuilder and the ``simple`` share-group assignor.

Epochs, as Kafka 4.4's GroupMetadataManager.shareGroupHeartbeat:
- the group epoch moves on any change of membership (a join, a leave, a session expiry), of a
  member's subscription, or of the subscribed topics' ids or partition counts -- and when
  share-partitions were initialized that the target does not assign yet;
- the target assignment (``target``, at ``assignment_epoch``) is recomputed lazily, inside the
  next heartbeat of any member once the group epoch is ahead of it, at most once per
  ``share.assignment.interval.ms`` (``can_compute_next_target``), and over initialized
  share-partitions only (``initialized``);
- a member's epoch and assignment move only inside its own heartbeat (``reconcile``): to the
  target's epoch and its target partitions. A change another member made never fences it: its
  next heartbeat still carries an epoch the coordinator knows (``epoch_error``), and is answered
  with the new epoch and assignment.
Share groups have no revocation step (several members may fetch one partition; acquisition
locks keep records apart), so one heartbeat reconciles a member fully.

Share-partitions are initialized (Kafka's share coordinator state) after the heartbeat that
first saw their topic subscribed (``initialize``), so a partition enters the assignment one
heartbeat later: a first member joins with an empty assignment and gets its partitions, at a
new epoch, on its next heartbeat, as with Kafka 4.4.

States (Kafka's ShareGroup.ShareGroupState): Empty (no member), Stable, Dead (deleted).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

EMPTY, STABLE, DEAD = "Empty", "Stable", "Dead"


@dataclass
class ShareMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    client_id: str = ""
    client_host: str = ""
    rack_id: Optional[str] = None
    subscribed_topic_names: list = field(default_factory=list)
    assignment: dict = field(default_factory=dict)  # topic id -> frozenset(partitions): what it was told


@dataclass
class ShareGroup:
    group_id: str
    # Kafka 4.4 creates a share group at epoch 1 (its target assignment too): its first member
    # gets epoch 2, and AlterShareGroupOffsets on an unknown group leaves it at 1
    group_epoch: int = 1
    assignment_epoch: int = 1
    members: dict = field(default_factory=dict)  # member id -> ShareMember
    target: dict = field(default_factory=dict)  # member id -> {topic id: frozenset(partitions)}
    subscription_metadata: dict = field(default_factory=dict)  # topic name -> (topic id, partitions)
    initialized: set = field(default_factory=set)  # {(topic id, partition)} with share state
    assignment_ms: int = 0  # when the target was last computed (0: never, or the group emptied)

    @property
    def state(self) -> str:
        return STABLE if self.members else EMPTY

    def subscribed_topic_names(self) -> set:
        return {t for m in self.members.values() for t in m.subscribed_topic_names}

    def heartbeat(self, member_id: str, subscribed_topic_names, topics_of, now_ms: int = 0,
                  interval_ms: int = 0) -> tuple[ShareMember, dict]:
        """One accepted heartbeat of ``member_id`` (joining when unknown), its epoch already
        checked (``epoch_error``): a new member or subscription (``subscribed_topic_names``,
        None: unchanged), or a change of the subscribed topics (``topics_of``: names -> {name:
        (topic id, partition count)} of those that exist) moves the group epoch; a target
        behind the group epoch is recomputed (unless one was computed less than ``interval_ms``
        before ``now_ms``); then this member, and only it, is reconciled. Returns (the member,
        its assignment before)."""
        # initialized share-partitions the target leaves out move the epoch (Kafka checks this
        # only while the target is current)
        bump = self.assignment_epoch >= self.group_epoch and self.initialized_assignment_pending()
        m = self.members.get(member_id)
        if m is None:
            m = self.members[member_id] = ShareMember(member_id)
            bump = True
        before = m.assignment
        if subscribed_topic_names is not None and sorted(set(subscribed_topic_names)) != m.subscribed_topic_names:
            m.subscribed_topic_names = sorted(set(subscribed_topic_names))
            bump = True
        # the topic id is part of it (Kafka's subscription metadata hash): a topic deleted and
        # created again under its name, with as many partitions, is a new assignment
        meta = topics_of(self.subscribed_topic_names())
        if meta != self.subscription_metadata:
            self.subscription_metadata = meta
            bump = True
        if bump:
            self.group_epoch += 1
        if self.group_epoch > self.assignment_epoch and can_compute_next_target(self.assignment_ms, interval_ms,
                                                                                now_ms):
            self.compute_target(meta, now_ms)
        m.member_epoch, m.previous_member_epoch, m.assignment = reconcile(
            m.member_epoch, m.previous_member_epoch, m.assignment, self.assignment_epoch, self.target.get(member_id, {}))
        return m, before

    def compute_target(self, topics: dict, now_ms: int = 0) -> None:
        """The target assignment at the group epoch, over the initialized share-partitions of
        ``topics`` (name -> (topic id, partition count) of existing subscribed topics). Members'
        own epochs and assignments are left alone: each moves to its target in its own
        heartbeat (``reconcile``)."""
        self.target = simple_assign({mid: m.subscribed_topic_names for mid, m in self.members.items()}, topics,
                                    self.initialized)
        self.assignment_epoch = self.group_epoch
        self.assignment_ms = now_ms

    def initialized_assignment_pending(self) -> bool:
        """Kafka's initializedAssignmentPending: some subscribed topic has initialized
        share-partitions other than those the target assigns."""
        if not self.members or not self.initialized:
            return False
        subscribed = {tid for tid, _n in self.subscription_metadata.values()}
        assigned: dict = {}
        for a in self.target.values():
            for tid, ps in a.items():
                assigned.setdefault(tid, set()).update(ps)
        ready: dict = {}
        for tid, p in self.initialized:
            ready.setdefault(tid, set()).add(p)
        return any(tid in subscribed and assigned.get(tid, set()) != ps for tid, ps in ready.items())

    def initialize(self) -> set:
        """After a heartbeat: the share-partitions of the subscribed topics not initialized yet
        become so (Kafka's share coordinator initializing their state). Returns them."""
        new = {(tid, p) for tid, n in self.subscription_metadata.values() for p in range(n)} - self.initialized
        self.initialized |= new
        return new

    def remove(self, member_id: str, topics_of) -> None:
        """A member leaves (or its session expired): the group epoch moves on and the
        subscription metadata is taken without it (so the next heartbeat does not move the epoch
        again); the target is recomputed by the next heartbeat, except for an empty group, whose
        (empty) target is at the new epoch at once (Kafka writes its target assignment metadata
        with the fence)."""
        self.members.pop(member_id, None)
        self.target.pop(member_id, None)
        self.subscription_metadata = topics_of(self.subscribed_topic_names())
        self.group_epoch += 1
        if not self.members:
            self.target = {}
            self.assignment_epoch = self.group_epoch
            self.assignment_ms = 0


def can_compute_next_target(last_ms: int, interval_ms: int, now_ms: int) -> bool:
    """Kafka 4.4's canComputeNextTargetAssignment: a new target may be computed when none was
    yet (or the group emptied), the interval is 0, or ``interval_ms`` passed since the last."""
    return last_ms == 0 or interval_ms == 0 or now_ms >= last_ms + interval_ms


def epoch_error(member_epoch: int, previous_member_epoch: int, received: int) -> Optional[str]:
    """Kafka 4.4's throwIfShareGroupMemberEpochIsInvalid: the FENCED_MEMBER_EPOCH message for a
    heartbeat carrying ``received`` from a member at ``member_epoch`` (after
    ``previous_member_epoch``), or None when it is accepted: epoch 0 (a join or rejoin), the
    current epoch, or the previous one (the answer that moved it may have been lost)."""
    if received == 0 or received == member_epoch:
        return None
    if received > member_epoch:
        return (f"The share group member has a greater member epoch ({received}) than the one known by the group "
                f"coordinator ({member_epoch}). The member must abandon all its partitions and rejoin.")
    if received != previous_member_epoch:
        return (f"The share group member has a smaller member epoch ({received}) than the one known by the group "
                f"coordinator ({member_epoch}), and it does not match the previous member epoch "
                f"({previous_member_epoch}). The member must abandon all its partitions and rejoin.")
    return None


def reconcile(member_epoch: int, previous_member_epoch: int, assignment: dict, target_epoch: int,
              target: dict) -> tuple[int, int, dict]:
    """Kafka's ShareGroupAssignmentBuilder: (member epoch, previous member epoch, assignment)
    of a member after its heartbeat. A member behind the target epoch moves to it and to its
    target partitions at once (no revocation in share groups); one at it stays as it is."""
    if member_epoch == target_epoch:
        return member_epoch, previous_member_epoch, assignment
    return target_epoch, member_epoch, dict(target)


def simple_assign(subscriptions: dict, topics: dict, assignable: Optional[set] = None) -> dict:
    """Kafka's SimpleAssignor idea for share groups: per topic, with P partitions and the M
    members subscribed to it, every partition gets at least one member and every member at
    least one partition: when M <= P partitions are dealt round-robin, when M > P each member
    gets partition ``i % P`` (so a partition is shared by several members). Members and
    partitions are taken in a stable order so the answer is deterministic.

    ``assignable``: {(topic id, partition)} the assignment may use (Kafka's assignable
    partitions: those initialized); None: every partition.

    Returns member id -> {topic id: frozenset(partitions)}."""
    out: dict = {mid: {} for mid in subscriptions}
    for name in sorted(topics):
        tid, count = topics[name]
        parts = [p for p in range(count) if assignable is None or (tid, p) in assignable]
        subs = sorted(mid for mid, names in subscriptions.items() if name in names)
        if not subs or not parts:
            continue
        owned: dict = {mid: set() for mid in subs}
        if len(subs) <= len(parts):
            for i, p in enumerate(parts):
                owned[subs[i % len(subs)]].add(p)
        else:
            for i, mid in enumerate(subs):
                owned[mid].add(parts[i % len(parts)])
        for mid, ps in owned.items():
            if ps:
                out[mid][tid] = frozenset(ps)
    return out
