"""One Streams group (KIP-1071) and its members: Kafka 4.x's StreamsGroup and
StreamsGroupMember as plain state (pure, no I/O, no timers). ``streams_records`` turns a group into
its ``__consumer_offsets`` records and back; ``streams_coordinator`` decides the heartbeats."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from broker.groups.base import GroupOffsets, GroupOverview
from broker.groups.streams_assignment import NO_TASKS, AssignmentState, MemberState, Tasks
from broker.groups.streams_topology import ConfiguredTopology, StreamsTopology


@dataclass(frozen=True)
class StreamsMember:
    member_id: str
    instance_id: Optional[str] = None
    rack_id: Optional[str] = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topology_epoch: int = -1
    process_id: str = ""
    user_endpoint: Optional[tuple] = None   # (host, port)
    client_tags: tuple = ()                 # ((key, value), ...)
    task_offsets: tuple = ()                # ((subtopology, partition, offset), ...)
    task_end_offsets: tuple = ()
    assignment: AssignmentState = AssignmentState(0, 0, MemberState.STABLE, NO_TASKS, NO_TASKS)
    task_epochs: dict = field(default_factory=dict)  # active task -> the member epoch it was assigned at
    static_left: bool = False   # a static member that left with epoch -2: it may come back

    @property
    def member_epoch(self) -> int:
        return self.assignment.member_epoch

    def metadata(self) -> tuple:
        """What bumps the group epoch when it changes."""
        return (self.instance_id, self.rack_id, self.topology_epoch, self.process_id, self.user_endpoint,
                self.client_tags)


class StreamsGroup(GroupOffsets):
    """One Streams group; ``state`` follows Kafka's StreamsGroupState."""

    group_type = "streams"
    protocol_type = "streams"

    def __init__(self, group_id: str):
        super().__init__()
        self.group_id = group_id
        self.group_epoch = 0
        self.target_assignment_epoch = 0
        self.topology: Optional[StreamsTopology] = None
        self.configured: Optional[ConfiguredTopology] = None
        self.metadata_snapshot: Optional[tuple] = None
        self.members: dict[str, StreamsMember] = {}
        self.target: dict[str, Tasks] = {}
        self.shutdown_requested_by: Optional[str] = None
        self.endpoint_information_epoch = 0
        self.assignment_delayed_until: Optional[int] = None  # the initial rebalance delay's end
        self.assignment_pending = False  # a target assignment was put off by the delay
        self.written: dict[bytes, bytes] = {}  # what the offsets log says of the group: key -> value

    @property
    def state(self) -> str:
        if not self.members:
            return "Empty"
        if self.configured is None or not self.configured.ready:
            return "NotReady"
        if self.group_epoch != self.target_assignment_epoch:
            return "Assigning"
        for m in self.members.values():
            if m.member_epoch != self.target_assignment_epoch or m.assignment.state is not MemberState.STABLE:
                return "Reconciling"
        return "Stable"

    def is_empty(self) -> bool:
        return not self.members

    def owner_of(self, task) -> Optional[str]:
        for mid, m in self.members.items():
            a = m.assignment
            if task in a.assigned.active or task in a.pending_revocation.active:
                return mid
        return None

    def source_topics(self) -> set:
        if self.topology is None:
            return set()
        return {t for s in self.topology.subtopologies for t in s.source_topics}

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return topic in self.source_topics()

    def expired_offsets(self, now_ms: int, retention_ms: int) -> list:
        if self.members:
            return []
        return self.pick_expired(self.offsets, now_ms, retention_ms, lambda om: om.commit_timestamp)

    def overview(self) -> GroupOverview:
        return GroupOverview(self.group_id, self.protocol_type, self.state, self.group_type)
