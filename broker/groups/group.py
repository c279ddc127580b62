"""One classic consumer group and its members: Kafka's GroupMetadata and MemberMetadata.

The group is a state machine over five states (Kafka's names, as DescribeGroups shows them)::

    Empty --join--> PreparingRebalance --all joined / rebalance timeout--> CompletingRebalance
      ^                 ^      |                                               |
      |                 |      +--no member left--> Empty                      | leader's SyncGroup
      |                 +----- member joins/leaves/fails, leader rejoins ------+--> Stable
      +---- (any) --> Dead (deleted, or expired with no offsets)

Invariants:
- ``members`` keeps insertion order; the leader is a member (or None when there are none);
  when the leader leaves, the first remaining member leads.
- ``num_awaiting_join`` equals the number of members with a parked JoinGroup callback.
- ``static_members`` maps every static member's ``group.instance.id`` to its current member id.
- ``supported_protocols[name]`` counts the members that list assignor ``name``; the
  candidates for the next generation are the names every member lists.
- the generation id only grows (by one per completed join phase, also when it ends Empty).

Parked JoinGroup/SyncGroup requests are plain callables taking a ``JoinResult`` /
``SyncResult`` (the coordinator completes asyncio futures through them), so everything here
runs without an event loop or sockets. Time comes in as ``now_ms`` arguments.
"""
from __future__ import annotations

import struct
from collections import Counter
from dataclasses import field
from enum import Enum
from typing import Callable, Iterable, Optional

from protocol.deferred import dataclass
from protocol.errors import ErrorCode
from broker.groups.base import GroupOffsets, GroupOverview

CONSUMER_PROTOCOL_TYPE = "consumer"
UNKNOWN_MEMBER_ID = ""
NO_GENERATION = -1
# Kafka's GroupCoordinator.NewMemberJoinTimeoutMs: a new member parked in JoinGroup is dropped
# after this long if the rebalance never completes (it retries if it is still alive).
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000


class GroupState(str, Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


S = GroupState
VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    S.PREPARING_REBALANCE: frozenset({S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY}),
    S.COMPLETING_REBALANCE: frozenset({S.PREPARING_REBALANCE}),
    S.STABLE: frozenset({S.COMPLETING_REBALANCE}),
    S.DEAD: frozenset(GroupState),
    S.EMPTY: frozenset({S.PREPARING_REBALANCE}),
}


class IllegalGroupTransition(RuntimeError):
    pass


@dataclass
class JoinMember:
    member_id: str
    group_instance_id: Optional[str]
    metadata: bytes


@dataclass
class JoinResult:
    member_id: str
    error: int = 0
    generation_id: int = NO_GENERATION
    protocol_type: Optional[str] = None
    protocol_name: Optional[str] = None
    leader_id: str = ""
    members: list[JoinMember] = field(default_factory=list)
    skip_assignment: bool = False


@dataclass
class SyncResult:
    error: int = 0
    protocol_type: Optional[str] = None
    protocol_name: Optional[str] = None
    assignment: bytes = b""


@dataclass
class MemberSummary:
    member_id: str
    group_instance_id: Optional[str]
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass
class GroupSummary:
    state: str
    protocol_type: str
    protocol: str
    members: list[MemberSummary]


Protocols = list[tuple[str, bytes]]


class MemberMetadata:
    """One member (Kafka's MemberMetadata). ``awaiting_join``/``awaiting_sync`` hold the parked
    request's completion callable while the member waits for the rebalance."""

    def __init__(self, member_id: str, group_instance_id: Optional[str], client_id: str, client_host: str,
                 rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
                 supported_protocols: Protocols):
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.supported_protocols: Protocols = list(supported_protocols)
        self.assignment: bytes = b""
        self.awaiting_join: Optional[Callable[[JoinResult], None]] = None
        self.awaiting_sync: Optional[Callable[[SyncResult], None]] = None
        self.is_new = False
        self.heartbeat_satisfied = False
        self.heartbeat_timer = None  # owned by the coordinator

    @property
    def is_static_member(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync is not None

    def has_satisfied_heartbeat(self) -> bool:
        """Kafka's rule: a new member must have been answered; a member parked in a
        rebalance counts as alive; otherwise the next heartbeat is required."""
        if self.is_new:
            return self.heartbeat_satisfied
        if self.is_awaiting_join or self.is_awaiting_sync:
            return True
        return self.heartbeat_satisfied

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.supported_protocols]

    def metadata(self, protocol: str) -> bytes:
        for name, meta in self.supported_protocols:
            if name == protocol:
                return meta
        raise KeyError(f"member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols: Protocols) -> bool:
        """Same assignors with the same metadata in the same order."""
        if len(protocols) != len(self.supported_protocols):
            return False
        return all(a[0] == b[0] and bytes(a[1]) == bytes(b[1])
                   for a, b in zip(protocols, self.supported_protocols))

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among ``candidates``."""
        for name, _ in self.supported_protocols:
            if name in candidates:
                return name
        raise ValueError("member does not support any of the candidate protocols")

    def summary(self, protocol: str) -> MemberSummary:
        return MemberSummary(self.member_id, self.group_instance_id, self.client_id, self.client_host,
                             self.metadata(protocol), self.assignment)

    def summary_no_metadata(self) -> MemberSummary:
        return MemberSummary(self.member_id, self.group_instance_id, self.client_id, self.client_host, b"", b"")

    def __repr__(self) -> str:
        return (f"MemberMetadata(member_id={self.member_id!r}, group_instance_id={self.group_instance_id!r}, "
                f"client_id={self.client_id!r}, protocols={self.protocol_names()})")


class GroupMetadata(GroupOffsets):
    """Membership, protocol and generation of one group, plus its committed offsets."""

    group_type = "classic"

    def __init__(self, group_id: str, state: GroupState = S.EMPTY, now_ms: int = -1):
        self.group_id = group_id
        self.state = state
        self.current_state_timestamp: Optional[int] = now_ms if now_ms >= 0 else None
        self.protocol_type: Optional[str] = None
        self.protocol_name: Optional[str] = None
        self.generation_id = 0
        self.leader_id: Optional[str] = None
        self.members: dict[str, MemberMetadata] = {}
        self.static_members: dict[str, str] = {}
        self.pending_members: set[str] = set()
        self.pending_sync_members: set[str] = set()
        self.num_awaiting_join = 0
        self.supported_protocols: Counter = Counter()
        GroupOffsets.__init__(self)
        self.subscribed_topics: Optional[set[str]] = None
        self.new_member_added = False
        # timers owned by the coordinator
        self.join_timer = None
        self.join_timer_initial = False
        self.sync_timer = None

    # ---- queries ------------------------------------------------------------------------------
    def is_(self, state: GroupState) -> bool:
        return self.state is state

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def get(self, member_id: str) -> MemberMetadata:
        return self.members[member_id]

    @property
    def size(self) -> int:
        return len(self.members)

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id is not None and self.leader_id == member_id

    @property
    def is_consumer_group(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    def is_empty(self) -> bool:
        """Empty and without members: a group only its committed offsets keep."""
        return self.is_(S.EMPTY) and not self.all_members()

    def all_members(self) -> list[MemberMetadata]:
        return list(self.members.values())

    def not_yet_rejoined_members(self) -> list[MemberMetadata]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_members

    def has_received_sync_from_all_members(self) -> bool:
        return not self.pending_sync_members

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_members

    def current_static_member_id(self, group_instance_id: Optional[str]) -> Optional[str]:
        if group_instance_id is None:
            return None
        return self.static_members.get(group_instance_id)

    def has_static_member(self, group_instance_id: Optional[str]) -> bool:
        return group_instance_id is not None and group_instance_id in self.static_members

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS_STATES[S.PREPARING_REBALANCE]

    # ---- membership ---------------------------------------------------------------------------
    def add(self, member: MemberMetadata, callback: Optional[Callable[[JoinResult], None]] = None) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise IllegalGroupTransition(
                    f"static member {member.group_instance_id} is already a member of {self.group_id}")
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.supported_protocols.update(member.protocol_names())
        member.awaiting_join = callback
        if member.is_awaiting_join:
            self.num_awaiting_join += 1
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> Optional[MemberMetadata]:
        member = self.members.pop(member_id, None)
        if member is not None:
            self.supported_protocols.subtract(member.protocol_names())
            if member.is_awaiting_join:
                self.num_awaiting_join -= 1
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync_members.discard(member_id)
        return member

    def add_pending_member(self, member_id: str) -> None:
        if self.has(member_id):
            raise IllegalGroupTransition(f"pending member {member_id} is already a member")
        self.pending_members.add(member_id)

    def add_pending_sync_member(self, member_id: str) -> None:
        self.pending_sync_members.add(member_id)

    def remove_pending_sync_member(self, member_id: str) -> None:
        self.pending_sync_members.discard(member_id)

    def clear_pending_sync_members(self) -> None:
        self.pending_sync_members.clear()

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else make any rejoined member leader; False when
        the group has no leader or nobody rejoined."""
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.is_awaiting_join:
            return True
        for mid, m in self.members.items():
            if m.is_awaiting_join:
                self.leader_id = mid
                return True
        return False

    def replace_static_member(self, group_instance_id: str, old_member_id: str, new_member_id: str) -> MemberMetadata:
        """A static member rejoined with an unknown member id: it takes over the old member's
        slot under a new member id; whatever the old instance had parked is fenced."""
        member = self.members.pop(old_member_id, None)
        if member is None:
            raise IllegalGroupTransition(f"cannot replace non-existing member id {old_member_id}")
        self.maybe_invoke_join_callback(member, JoinResult(old_member_id, ErrorCode.FENCED_INSTANCE_ID))
        self.maybe_invoke_sync_callback(member, SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        member.member_id = new_member_id
        self.members[new_member_id] = member
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        self.static_members[group_instance_id] = new_member_id
        return member

    def update_member(self, member: MemberMetadata, protocols: Protocols, rebalance_timeout_ms: int,
                      session_timeout_ms: int, callback: Optional[Callable[[JoinResult], None]]) -> None:
        self.supported_protocols.subtract(member.protocol_names())
        member.supported_protocols = list(protocols)
        self.supported_protocols.update(member.protocol_names())
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if callback is not None and not member.is_awaiting_join:
            self.num_awaiting_join += 1
        elif callback is None and member.is_awaiting_join:
            self.num_awaiting_join -= 1
        member.awaiting_join = callback

    def maybe_invoke_join_callback(self, member: MemberMetadata, result: JoinResult) -> None:
        if member.awaiting_join is not None:
            cb = member.awaiting_join
            member.awaiting_join = None
            self.num_awaiting_join -= 1
            cb(result)

    def maybe_invoke_sync_callback(self, member: MemberMetadata, result: SyncResult) -> bool:
        if member.awaiting_sync is None:
            return False
        cb = member.awaiting_sync
        member.awaiting_sync = None
        cb(result)
        return True

    # ---- protocol selection -------------------------------------------------------------------
    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {p for p, c in self.supported_protocols.items() if c == n and n > 0}

    def select_protocol(self) -> str:
        """The assignor every member supports that most members prefer (ties: the one voted
        for first, in member order)."""
        if not self.members:
            raise IllegalGroupTransition("cannot select protocol for empty group")
        candidates = self.candidate_protocols()
        votes = Counter(m.vote(candidates) for m in self.members.values())
        best = max(votes.values())
        for m in self.members.values():
            choice = m.vote(candidates)
            if votes[choice] == best:
                return choice
        raise AssertionError("unreachable")

    def supports_protocols(self, member_protocol_type: str, member_protocols: Iterable[str]) -> bool:
        """May a member with these assignors join? An empty group takes any non-empty set; a
        non-empty one needs the same protocol type and one assignor all members support."""
        member_protocols = set(member_protocols)
        if self.is_(S.EMPTY):
            return bool(member_protocol_type) and bool(member_protocols)
        n = len(self.members)
        return (self.protocol_type == member_protocol_type
                and any(self.supported_protocols.get(p, 0) == n for p in member_protocols))

    # ---- state --------------------------------------------------------------------------------
    def transition_to(self, state: GroupState, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS_STATES[state]:
            raise IllegalGroupTransition(
                f"group {self.group_id} should be in one of {sorted(map(str, VALID_PREVIOUS_STATES[state]))} "
                f"before moving to {state}; it is in {self.state}")
        self.state = state
        self.current_state_timestamp = now_ms

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(S.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(S.EMPTY, now_ms)
        self.clear_pending_sync_members()

    def current_member_metadata(self) -> list[JoinMember]:
        """What the leader receives: every member's metadata for the selected protocol."""
        if self.state in (S.DEAD, S.PREPARING_REBALANCE):
            raise IllegalGroupTransition(f"cannot obtain member metadata for group in state {self.state}")
        return [JoinMember(mid, m.group_instance_id, m.metadata(self.protocol_name))
                for mid, m in self.members.items()]

    def summary(self) -> GroupSummary:
        if self.is_(S.STABLE):
            protocol = self.protocol_name or ""
            return GroupSummary(str(self.state), self.protocol_type or "", protocol,
                                [m.summary(protocol) for m in self.members.values()])
        return GroupSummary(str(self.state), self.protocol_type or "", "",
                            [m.summary_no_metadata() for m in self.members.values()])

    def overview(self) -> GroupOverview:
        return GroupOverview(self.group_id, self.protocol_type or "", str(self.state))

    # ---- subscriptions (consumer protocol) ------------------------------------------------------
    def compute_subscribed_topics(self) -> Optional[set[str]]:
        """Topics the members subscribe to, when the group speaks the consumer protocol; None
        when unknown (another protocol type, no protocol yet, or unparsable metadata)."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return set()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for m in self.members.values():
                topics.update(parse_subscription_topics(m.metadata(self.protocol_name)))
        except (ValueError, KeyError, struct.error, UnicodeDecodeError):
            return None
        return topics

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return True if self.subscribed_topics is None else topic in self.subscribed_topics

    # ---- offsets ------------------------------------------------------------------------------
    def expired_offsets(self, now_ms: int, retention_ms: int) -> list[tuple[str, int]]:
        """Kafka's GroupMetadata.removeExpiredOffsets choice (without removing):
        - Empty group with a protocol type: retention counts from when it became Empty
          (or from each commit when that time is unknown);
        - Stable consumer group with known subscriptions: offsets of topics no member
          subscribes to, counted from their commit;
        - no protocol type (offsets-only group): counted from each commit;
        - otherwise nothing expires.
        An offset with an explicit expire timestamp (old OffsetCommit) expires at that time."""
        def pick(base, keep_topics=frozenset()):
            return self.pick_expired(self.offsets, now_ms, retention_ms, base, keep_topics)

        if self.protocol_type is not None and self.is_(S.EMPTY):
            ts = self.current_state_timestamp
            return pick(lambda om: ts if ts is not None else om.commit_timestamp)
        if (self.protocol_type == CONSUMER_PROTOCOL_TYPE and self.subscribed_topics is not None
                and self.is_(S.STABLE)):
            return pick(lambda om: om.commit_timestamp, self.subscribed_topics)
        if self.protocol_type is None:
            return pick(lambda om: om.commit_timestamp)
        return []

    def __repr__(self) -> str:
        return (f"GroupMetadata(group_id={self.group_id!r}, generation={self.generation_id}, "
                f"protocol_type={self.protocol_type!r}, state={self.state}, members={list(self.members)})")


def generate_member_id(client_id: str, group_instance_id: Optional[str]) -> str:
    """Kafka's form: ``<client id or group.instance.id>-<random UUID>``."""
    import uuid  # here, not at start-up: it imports platform (~3 ms); a join is not hot
    prefix = group_instance_id if group_instance_id is not None else client_id
    return f"{prefix}-{uuid.uuid4()}"


def parse_subscription_topics(data: bytes) -> list[str]:
    """Topics of a ConsumerProtocolSubscription (any version: v0 is the prefix of all:
    int16 version, then an int32-counted array of int16-length strings)."""
    buf = memoryview(data)
    (version,) = struct.unpack_from(">h", buf, 0)
    if version < 0:
        raise ValueError(f"bad consumer protocol version {version}")
    (n,) = struct.unpack_from(">i", buf, 2)
    if n < 0 or n > len(buf):
        raise ValueError("bad topic count")
    pos = 6
    topics = []
    for _ in range(n):
        (ln,) = struct.unpack_from(">h", buf, pos)
        pos += 2
        if ln < 0 or pos + ln > len(buf):
            raise ValueError("bad topic name")
        topics.append(str(buf[pos:pos + ln], "utf-8"))
        pos += ln
    return topics
