"""Share groups and their members (KIP-932), pure: Kafka's ShareGroup/ShareGroupMember and
the ``simple`` share-group assignor.

A member joins with epoch 0 and the member id it generated, is told the group's epoch as its
member epoch and its assignment, and must heartbeat with that epoch (FENCED_MEMBER_EPOCH
otherwise). Any change of membership, subscription or subscribed topics' ids or partition counts bumps
the group epoch and recomputes the assignment at once: share groups have no reconciliation
(several members may fetch one partition; acquisition locks keep records apart), so the
assignment epoch always equals the group epoch after a heartbeat.

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
    client_id: str = ""
    client_host: str = ""
    rack_id: Optional[str] = None
    subscribed_topic_names: list = field(default_factory=list)
    assignment: dict = field(default_factory=dict)  # topic id -> frozenset(partitions)
    sent_assignment: Optional[dict] = None  # what the member was last told


@dataclass
class ShareGroup:
    group_id: str
    # Kafka 4.4 creates a share group at epoch 1 (its target assignment too): its first member
    # gets epoch 2, and AlterShareGroupOffsets on an unknown group leaves it at 1
    group_epoch: int = 1
    assignment_epoch: int = 1
    members: dict = field(default_factory=dict)  # member id -> ShareMember
    subscription_metadata: dict = field(default_factory=dict)  # topic name -> (topic id, partitions)

    @property
    def state(self) -> str:
        return STABLE if self.members else EMPTY

    def subscribed_topic_names(self) -> set:
        return {t for m in self.members.values() for t in m.subscribed_topic_names}

    def compute_assignment(self, topics: dict) -> None:
        """``topics``: name -> (topic id, partition count) of existing subscribed topics."""
        target = simple_assign({mid: m.subscribed_topic_names for mid, m in self.members.items()}, topics)
        for mid, m in self.members.items():
            m.assignment = target.get(mid, {})
            m.member_epoch = self.group_epoch
        self.assignment_epoch = self.group_epoch


def simple_assign(subscriptions: dict, topics: dict) -> dict:
    """Kafka's SimpleAssignor idea for share groups: per topic, with P partitions and the M
    members subscribed to it, every partition gets at least one member and every member at
    least one partition: when M <= P partitions are dealt round-robin, when M > P each member
    gets partition ``i % P`` (so a partition is shared by several members). Members and
    partitions are taken in a stable order so the answer is deterministic.

    Returns member id -> {topic id: frozenset(partitions)}."""
    out: dict = {mid: {} for mid in subscriptions}
    for name in sorted(topics):
        tid, count = topics[name]
        subs = sorted(mid for mid, names in subscriptions.items() if name in names)
        if not subs or count <= 0:
            continue
        owned: dict = {mid: set() for mid in subs}
        if len(subs) <= count:
            for p in range(count):
                owned[subs[p % len(subs)]].add(p)
        else:
            for i, mid in enumerate(subs):
                owned[mid].add(i % count)
        for mid, ps in owned.items():
            if ps:
                out[mid][tid] = frozenset(ps)
    return out
