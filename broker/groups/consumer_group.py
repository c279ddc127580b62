"""A consumer-protocol group (KIP-848): Kafka's ConsumerGroup and ConsumerGroupMember, the
records that persist them, and their replay.

The group is rebuilt only by replaying records (``ConsumerGroup.replay``), at load from
``__consumer_offsets`` and live after each append, so what is in memory is what a restart
reads back. Decisions (``broker.groups.reconciliation`` and the coordinator) compute the
records of a change against the group as it is; appending them, then replaying, applies it.

Epochs (KIP-848):
- the *group epoch* is bumped whenever the group's subscriptions or the metadata of the
  subscribed topics change (a member joins or leaves, a topic grows, a regex resolves to
  other topics);
- the *target assignment epoch* catches up with it when the assignor computes a new target
  assignment (the group is "Assigning" in between);
- each *member epoch* catches up with the target assignment epoch when the member has
  reconciled (revoked what it must give up first): the group is "Reconciling" until all
  have, then "Stable".

Invariants (checked on replay, as Kafka's ConsumerGroup does):
- ``partition_epochs[(topic id, partition)]`` is the epoch of the one member that holds the
  partition, assigned or pending revocation: a partition is never held by two members;
- ``static_members[instance id]`` is the member id of that static member;
- the state is derived: Empty (no members), Assigning (group epoch > target epoch),
  Reconciling (a member is not stable at the target epoch), else Stable.

Topic ids are 16 raw bytes (Kafka's Uuid). Topic metadata comes in through ``topics``: an
object with ``get(name)`` and ``by_id(topic_id)`` answering ``TopicInfo``-like objects
(``name``, ``topic_id``, ``partitions``) or None (``broker.topics.TopicManager``).
"""
from __future__ import annotations

import dataclasses
import hashlib
from enum import Enum, IntEnum
from typing import Iterable, Mapping, Optional

from protocol.deferred import dataclass
from broker.groups import schemas as S
from broker.groups.base import GroupOffsets

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

Assignment = Mapping  # topic id (bytes) -> frozenset[int]


class MemberState(IntEnum):
    """Kafka's MemberState byte values (the ``state`` of a current-assignment record)."""
    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127

    @classmethod
    def from_value(cls, v: int) -> "MemberState":
        try:
            return cls(v)
        except ValueError:
            return cls.UNKNOWN


class ConsumerGroupState(str, Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class ClassicMemberMetadata:
    """A member that joined with JoinGroup (the classic protocol) inside a consumer group."""
    session_timeout_ms: int
    protocols: tuple  # ((name, metadata bytes), ...) in the member's preference order


@dataclass(frozen=True)
class ConsumerGroupMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    instance_id: Optional[str] = None
    rack_id: Optional[str] = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset = frozenset()
    subscribed_topic_regex: Optional[str] = ""
    server_assignor: Optional[str] = None
    assigned: Mapping = dataclasses.field(default_factory=dict)
    pending_revocation: Mapping = dataclasses.field(default_factory=dict)
    classic: Optional[ClassicMemberMetadata] = None
    # KIP-1251: (topic id, partition) -> the member epoch it was assigned at, for the partitions
    # held (assigned or pending revocation); one missing stands at ``member_epoch``
    assignment_epochs: Mapping = dataclasses.field(default_factory=dict)

    def replace(self, **kw) -> "ConsumerGroupMember":
        return dataclasses.replace(self, **kw)

    def with_epoch(self, epoch: int, **kw) -> "ConsumerGroupMember":
        """Kafka's ``updateMemberEpoch``: the current epoch becomes the previous one. A partition
        the member already had keeps the epoch it was assigned at (moved to pending revocation
        too); one newly assigned is stamped with the new epoch (CurrentAssignmentBuilder)."""
        new = dataclasses.replace(self, member_epoch=epoch, previous_member_epoch=self.member_epoch, **kw)
        if "assigned" not in kw and "pending_revocation" not in kw:
            return new
        epochs = {}
        for t, ps in new.assigned.items():
            had = self.assigned.get(t, frozenset())
            for p in ps:
                epochs[(t, p)] = self.assignment_epoch(t, p) if p in had else epoch
        for t, ps in new.pending_revocation.items():
            had = self.assigned.get(t, frozenset()) | self.pending_revocation.get(t, frozenset())
            for p in ps:
                epochs[(t, p)] = self.assignment_epoch(t, p) if p in had else epoch
        return dataclasses.replace(new, assignment_epochs=epochs)

    def assignment_epoch(self, topic_id, partition: int) -> int:
        """The epoch the member was given ``partition`` at (KIP-1251; meaningful for a held one)."""
        return self.assignment_epochs.get((topic_id, partition), self.member_epoch)

    def holds(self, topic_id, partition: int) -> bool:
        return partition in self.assigned.get(topic_id, ()) or partition in self.pending_revocation.get(topic_id, ())

    def is_reconciled_to(self, target_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == target_epoch

    @property
    def use_classic_protocol(self) -> bool:
        return self.classic is not None

    @property
    def regex(self) -> str:
        return self.subscribed_topic_regex or ""


@dataclass(frozen=True)
class ResolvedRegex:
    topics: frozenset
    version: int
    timestamp: int


def freeze(a: Mapping) -> dict:
    """An assignment with frozenset values and no empty topic."""
    return {t: frozenset(ps) for t, ps in a.items() if ps}


def assignment_size(a: Mapping) -> int:
    return sum(len(ps) for ps in a.values())


class ConsumerGroup(GroupOffsets):
    """Membership, epochs and assignments of one consumer-protocol group, plus its offsets."""

    protocol_type = "consumer"
    group_type = "consumer"

    def __init__(self, group_id: str):
        GroupOffsets.__init__(self)
        self.group_id = group_id
        self.group_epoch = 0
        self.metadata_hash = 0
        self.target_assignment_epoch = 0
        self.members: dict[str, ConsumerGroupMember] = {}
        self.static_members: dict[str, str] = {}
        self.target_assignment: dict[str, dict] = {}
        self.partition_epochs: dict[tuple, int] = {}
        self.resolved_regexes: dict[str, ResolvedRegex] = {}
        self.has_subscription_metadata_record = False  # a 4.0 log wrote one: tombstone it
        # soft state (not persisted, as in Kafka)
        self.metadata_refresh_needed = True
        self.last_regex_refresh_ms = 0
        self.last_regex_topics_version = -1

    # ---- queries --------------------------------------------------------------------------------
    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.target_assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        for m in self.members.values():
            if not m.is_reconciled_to(self.target_assignment_epoch):
                return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def is_empty(self) -> bool:
        return not self.members

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def static_member(self, instance_id: Optional[str]) -> Optional[ConsumerGroupMember]:
        mid = self.static_members.get(instance_id) if instance_id is not None else None
        return self.members.get(mid) if mid is not None else None

    def current_partition_epoch(self, topic_id, partition: int) -> int:
        return self.partition_epochs.get((topic_id, partition), -1)

    def subscribed_regex_counts(self, members: Optional[Iterable[ConsumerGroupMember]] = None) -> dict[str, int]:
        out: dict[str, int] = {}
        for m in (self.members.values() if members is None else members):
            if m.regex:
                out[m.regex] = out.get(m.regex, 0) + 1
        return out

    def num_subscribed_members(self, regex: str) -> int:
        return sum(1 for m in self.members.values() if m.regex == regex)

    def subscribed_topic_names(self, members: Optional[Iterable[ConsumerGroupMember]] = None,
                               regexes: Optional[Mapping[str, ResolvedRegex]] = None) -> set[str]:
        """Topics the group subscribes to: by name, and through the resolved regexes that
        some member subscribes to."""
        members = list(self.members.values() if members is None else members)
        regexes = self.resolved_regexes if regexes is None else regexes
        names: set[str] = set()
        for m in members:
            names.update(m.subscribed_topic_names)
        for regex in {m.regex for m in members if m.regex}:
            r = regexes.get(regex)
            if r is not None:
                names.update(r.topics)
        return names

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return topic in self.subscribed_topic_names()

    def member_subscribed_names(self, member: ConsumerGroupMember,
                                regexes: Optional[Mapping[str, ResolvedRegex]] = None) -> set[str]:
        regexes = self.resolved_regexes if regexes is None else regexes
        names = set(member.subscribed_topic_names)
        if member.regex:
            r = regexes.get(member.regex)
            if r is not None:  # an unresolved regex matches nothing yet, to be conservative
                names.update(r.topics)
        return names

    def preferred_server_assignor(self, members: Optional[Iterable[ConsumerGroupMember]] = None) -> Optional[str]:
        """The server assignor most members ask for (Kafka: the max of the counts)."""
        counts: dict[str, int] = {}
        for m in (self.members.values() if members is None else members):
            if m.server_assignor is not None:
                counts[m.server_assignor] = counts.get(m.server_assignor, 0) + 1
        if not counts:
            return None
        best = max(counts.values())
        return min(n for n, c in counts.items() if c == best)

    def all_use_classic_protocol_except(self, excluded: Iterable[str]) -> bool:
        excluded = set(excluded)
        return all(m.use_classic_protocol for mid, m in self.members.items() if mid not in excluded)

    def num_classic_members(self) -> int:
        return sum(1 for m in self.members.values() if m.use_classic_protocol)

    def supports_classic_protocols(self, protocol_type: str, names: Iterable[str]) -> bool:
        """Kafka's supportsClassicProtocols: a classic member may join when the protocol type
        is "consumer" and, if classic members are already in, one of its assignors is
        supported by all of them."""
        names = set(names)
        if protocol_type != self.protocol_type or not names:
            return False
        classic = [m for m in self.members.values() if m.use_classic_protocol]
        if not classic:
            return True
        return any(all(n in {p for p, _ in m.classic.protocols} for m in classic) for n in names)

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        """A member in UNRELEASED_PARTITIONS still waits when some partition of its target is
        held by another member."""
        if member.state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        target = self.target_assignment.get(member.member_id, {})
        for t, ps in target.items():
            mine = member.assigned.get(t, frozenset())
            for p in ps:
                if p not in mine and self.current_partition_epoch(t, p) != -1:
                    return True
        return False

    # ---- offsets (KIP-848 checks; the coordinator maps the codes per API version) ---------------
    def expired_offsets(self, now_ms: int, retention_ms: int) -> list[tuple[str, int]]:
        """Kafka's consumer groups: offsets of topics the group no longer subscribes to expire
        ``retention_ms`` after their commit."""
        return self.pick_expired(self.offsets, now_ms, retention_ms, lambda om: om.commit_timestamp,
                                  frozenset(self.subscribed_topic_names()))

    # ---- replay ---------------------------------------------------------------------------------
    def replay(self, record_type: int, key, value) -> None:
        """Apply one record of this group (tombstone: ``value`` None)."""
        if record_type == S.CONSUMER_GROUP_METADATA:
            if value is not None:
                self.group_epoch = value.epoch
                self.metadata_hash = value.metadata_hash
            # the tombstone is handled by the owner (it removes the group)
        elif record_type == S.CONSUMER_GROUP_PARTITION_METADATA:
            self.has_subscription_metadata_record = value is not None
        elif record_type == S.CONSUMER_GROUP_MEMBER_METADATA:
            self._replay_member_metadata(key.member_id, value)
        elif record_type == S.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA:
            self.target_assignment_epoch = value.assignment_epoch if value is not None else -1
        elif record_type == S.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER:
            if value is None:
                self.target_assignment.pop(key.member_id, None)
            else:
                self.target_assignment[key.member_id] = _assignment_from(value.topic_partitions)
        elif record_type == S.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT:
            self._replay_current_assignment(key.member_id, value)
        elif record_type == S.CONSUMER_GROUP_REGULAR_EXPRESSION:
            if value is None:
                self.resolved_regexes.pop(key.regular_expression, None)
            else:
                self.resolved_regexes[key.regular_expression] = ResolvedRegex(
                    frozenset(value.topics), value.version, value.timestamp)
                # Kafka's updateResolvedRegularExpression: the batch refresh clock restarts
                self.last_regex_refresh_ms = max(self.last_regex_refresh_ms, value.timestamp)
                self.last_regex_topics_version = value.version

    def _replay_member_metadata(self, member_id: str, value) -> None:
        old = self.members.get(member_id)
        if value is None:
            if old is None:
                return
            if old.member_epoch != LEAVE_GROUP_MEMBER_EPOCH:
                raise IllegalGroupState(f"member {member_id} of group {self.group_id} removed before its "
                                        "current assignment was tombstoned")
            self._remove_member(member_id)
            return
        classic = None
        if value.classic_member_metadata is not None:
            cm = value.classic_member_metadata
            classic = ClassicMemberMetadata(cm.session_timeout_ms,
                                            tuple((p.name, bytes(p.metadata)) for p in cm.supported_protocols))
        base = old or ConsumerGroupMember(member_id)
        self._update_member(base.replace(
            instance_id=value.instance_id, rack_id=value.rack_id, client_id=value.client_id,
            client_host=value.client_host, subscribed_topic_names=frozenset(value.subscribed_topic_names),
            subscribed_topic_regex=value.subscribed_topic_regex, rebalance_timeout_ms=value.rebalance_timeout_ms,
            server_assignor=value.server_assignor, classic=classic))

    def _replay_current_assignment(self, member_id: str, value) -> None:
        old = self.members.get(member_id)
        if value is None:
            if old is not None:
                self._update_member(old.replace(member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                                                previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                                                state=MemberState.STABLE, assigned={}, pending_revocation={},
                                                assignment_epochs={}))
            return
        base = old or ConsumerGroupMember(member_id)
        epochs: dict = {}
        for tps in (value.assigned_partitions, value.partitions_pending_revocation):
            for tp in tps:
                given = tp.assignment_epochs
                if given is not None and len(given) == len(tp.partitions):  # else: the member epoch
                    epochs.update(((bytes(tp.topic_id), p), e) for p, e in zip(tp.partitions, given))
        self._update_member(base.replace(
            member_epoch=value.member_epoch, previous_member_epoch=value.previous_member_epoch,
            state=MemberState.from_value(value.state), assigned=_assignment_from(value.assigned_partitions),
            pending_revocation=_assignment_from(value.partitions_pending_revocation), assignment_epochs=epochs))

    def _update_member(self, new: ConsumerGroupMember) -> None:
        old = self.members.get(new.member_id)
        if old is not None:
            self._remove_partition_epochs(old)
        self.members[new.member_id] = new
        self._add_partition_epochs(new)
        if new.instance_id is not None:
            self.static_members[new.instance_id] = new.member_id

    def _remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id)
        self._remove_partition_epochs(old)
        if old.instance_id is not None and self.static_members.get(old.instance_id) == member_id:
            del self.static_members[old.instance_id]

    def _add_partition_epochs(self, m: ConsumerGroupMember) -> None:
        for a in (m.assigned, m.pending_revocation):
            for t, ps in a.items():
                for p in ps:
                    prev = self.partition_epochs.get((t, p))
                    if prev is not None:
                        raise IllegalGroupState(f"cannot set the epoch of {t.hex() if isinstance(t, bytes) else t}-{p} "
                                                f"to {m.member_epoch}: still owned at epoch {prev}")
                    self.partition_epochs[(t, p)] = m.member_epoch

    def _remove_partition_epochs(self, m: ConsumerGroupMember) -> None:
        for a in (m.assigned, m.pending_revocation):
            for t, ps in a.items():
                for p in ps:
                    self.partition_epochs.pop((t, p), None)

    def __repr__(self) -> str:
        return (f"ConsumerGroup(group_id={self.group_id!r}, epoch={self.group_epoch}, "
                f"target_epoch={self.target_assignment_epoch}, state={self.state}, members={list(self.members)})")


class IllegalGroupState(RuntimeError):
    """A record contradicts the group's invariants (Kafka's IllegalStateException on replay)."""


def _assignment_from(topic_partitions) -> dict:
    out: dict = {}
    for tp in topic_partitions:
        if tp.partitions:
            out[bytes(tp.topic_id)] = frozenset(out.get(bytes(tp.topic_id), frozenset()) | set(tp.partitions))
    return out


def _epoched_topic_partitions(cls, m: ConsumerGroupMember, a: Mapping) -> list:
    return [cls(topic_id=t, partitions=sorted(ps), assignment_epochs=[m.assignment_epoch(t, p) for p in sorted(ps)])
            for t, ps in sorted(a.items()) if ps]


def _topic_partitions(cls, a: Mapping) -> list:
    return [cls(topic_id=t, partitions=sorted(ps)) for t, ps in sorted(a.items()) if ps]


def metadata_hash(topic_names: Iterable[str], topics) -> int:
    """A hash of the subscribed topics' metadata (name, id, partition count); a change bumps the
    group epoch (KIP-1101's purpose; Kafka hashes with XXH3 over the same facts plus racks, so
    a Kafka broker reading this log recomputes it once and bumps the epoch)."""
    h = hashlib.blake2b(digest_size=8)
    for name in sorted(topic_names):
        t = topics.get(name)
        if t is not None:
            h.update(name.encode() + b"\0" + bytes(t.topic_id) + t.partitions.to_bytes(4, "big"))
    return int.from_bytes(h.digest(), "big", signed=True) if topic_names else 0


# ---- records (Kafka's GroupCoordinatorRecordHelpers) ---------------------------------------------
Record = tuple  # (record type, key object, value object or None)


def _key(rt: int, group_id: str, **kw):
    return S.CONSUMER_GROUP_RECORDS[rt][0](group_id=group_id, **kw)


def member_subscription_record(group_id: str, m: ConsumerGroupMember) -> Record:
    V = S.ConsumerGroupMemberMetadataValue
    classic = None
    if m.classic is not None:
        C = V.ClassicMemberMetadata
        classic = C(session_timeout_ms=m.classic.session_timeout_ms,
                    supported_protocols=[C.ClassicProtocol(name=n, metadata=md) for n, md in m.classic.protocols])
    value = V(instance_id=m.instance_id, rack_id=m.rack_id, client_id=m.client_id, client_host=m.client_host,
              subscribed_topic_names=sorted(m.subscribed_topic_names), subscribed_topic_regex=m.subscribed_topic_regex,
              rebalance_timeout_ms=m.rebalance_timeout_ms, server_assignor=m.server_assignor,
              classic_member_metadata=classic)
    return (S.CONSUMER_GROUP_MEMBER_METADATA, _key(S.CONSUMER_GROUP_MEMBER_METADATA, group_id, member_id=m.member_id),
            value)


def member_subscription_tombstone(group_id: str, member_id: str) -> Record:
    return (S.CONSUMER_GROUP_MEMBER_METADATA, _key(S.CONSUMER_GROUP_MEMBER_METADATA, group_id, member_id=member_id),
            None)


def group_epoch_record(group_id: str, epoch: int, mhash: int) -> Record:
    return (S.CONSUMER_GROUP_METADATA, _key(S.CONSUMER_GROUP_METADATA, group_id),
            S.ConsumerGroupMetadataValue(epoch=epoch, metadata_hash=mhash))


def group_epoch_tombstone(group_id: str) -> Record:
    return (S.CONSUMER_GROUP_METADATA, _key(S.CONSUMER_GROUP_METADATA, group_id), None)


def subscription_metadata_tombstone(group_id: str) -> Record:
    return (S.CONSUMER_GROUP_PARTITION_METADATA, _key(S.CONSUMER_GROUP_PARTITION_METADATA, group_id), None)


def target_assignment_record(group_id: str, member_id: str, a: Mapping) -> Record:
    V = S.ConsumerGroupTargetAssignmentMemberValue
    return (S.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
            _key(S.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, group_id, member_id=member_id),
            V(topic_partitions=_topic_partitions(V.TopicPartition, a)))


def target_assignment_tombstone(group_id: str, member_id: str) -> Record:
    return (S.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
            _key(S.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, group_id, member_id=member_id), None)


def target_epoch_record(group_id: str, epoch: int, now_ms: int = 0) -> Record:
    return (S.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, _key(S.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, group_id),
            S.ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=epoch))


def target_epoch_tombstone(group_id: str) -> Record:
    return (S.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, _key(S.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, group_id),
            None)


def current_assignment_record(group_id: str, m: ConsumerGroupMember) -> Record:
    V = S.ConsumerGroupCurrentMemberAssignmentValue
    return (S.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
            _key(S.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, group_id, member_id=m.member_id),
            V(member_epoch=m.member_epoch, previous_member_epoch=m.previous_member_epoch, state=int(m.state),
              assigned_partitions=_epoched_topic_partitions(V.TopicPartitions, m, m.assigned),
              partitions_pending_revocation=_epoched_topic_partitions(V.TopicPartitions, m, m.pending_revocation)))


def current_assignment_tombstone(group_id: str, member_id: str) -> Record:
    return (S.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
            _key(S.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, group_id, member_id=member_id), None)


def regex_record(group_id: str, regex: str, r: ResolvedRegex) -> Record:
    return (S.CONSUMER_GROUP_REGULAR_EXPRESSION,
            _key(S.CONSUMER_GROUP_REGULAR_EXPRESSION, group_id, regular_expression=regex),
            S.ConsumerGroupRegularExpressionValue(topics=sorted(r.topics), version=r.version, timestamp=r.timestamp))


def regex_tombstone(group_id: str, regex: str) -> Record:
    return (S.CONSUMER_GROUP_REGULAR_EXPRESSION,
            _key(S.CONSUMER_GROUP_REGULAR_EXPRESSION, group_id, regular_expression=regex), None)


def remove_member_records(group_id: str, member_id: str) -> list[Record]:
    """Kafka's removeMember: the order matters (current assignment first, member last)."""
    return [current_assignment_tombstone(group_id, member_id), target_assignment_tombstone(group_id, member_id),
            member_subscription_tombstone(group_id, member_id)]


def group_tombstone_records(group: ConsumerGroup) -> list[Record]:
    """Kafka's ConsumerGroup.createGroupTombstoneRecords (deleting or converting the group)."""
    gid = group.group_id
    out = [current_assignment_tombstone(gid, mid) for mid in group.members]
    out += [target_assignment_tombstone(gid, mid) for mid in group.members]
    out.append(target_epoch_tombstone(gid))
    out += [member_subscription_tombstone(gid, mid) for mid in group.members]
    out += [regex_tombstone(gid, r) for r in group.resolved_regexes]
    out.append(subscription_metadata_tombstone(gid))
    out.append(group_epoch_tombstone(gid))
    return out


def group_creation_records(group: ConsumerGroup) -> list[Record]:
    """Kafka's createConsumerGroupRecords: the records that rebuild ``group`` from nothing."""
    gid = group.group_id
    out = [member_subscription_record(gid, m) for m in group.members.values()]
    out.append(group_epoch_record(gid, group.group_epoch, group.metadata_hash))
    out += [target_assignment_record(gid, mid, a) for mid, a in group.target_assignment.items()]
    out.append(target_epoch_record(gid, group.target_assignment_epoch))
    out += [current_assignment_record(gid, m) for m in group.members.values()]
    return out


def encode_record(rec: Record) -> tuple[bytes, Optional[bytes]]:
    rt, key, value = rec
    if rt == 2:  # a classic group's metadata tombstone (the group changes protocol)
        return S.group_metadata_key(key.group), None
    return S.encode_record_key(rt, key), S.encode_record_value(rt, value)
