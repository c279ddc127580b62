"""A classic group as its ``__consumer_offsets`` record and back (Kafka's
GroupCoordinatorRecordHelpers.newGroupMetadataRecord and ClassicGroup.fromRecord): the value of
a GroupMetadata record (key version 2), written by the coordinator at every classic rebalance and
by a consumer group converted back to the classic protocol, replayed at load. Pure."""
from __future__ import annotations

from broker.groups.group import GroupMetadata, GroupState, MemberMetadata
from broker.groups.schemas import GROUP_METADATA_VALUE_VERSION, GroupMetadataValue, encode_versioned


def group_value(group, assignment: dict[str, bytes]) -> bytes:
    """Kafka's groupMetadataValue (v3): members carry their metadata for the selected protocol."""
    M = GroupMetadataValue.MemberMetadata
    members = []
    for m in group.members.values():
        members.append(M(member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                         client_host=m.client_host, rebalance_timeout=m.rebalance_timeout_ms,
                         session_timeout=m.session_timeout_ms,
                         subscription=m.metadata(group.protocol_name) if group.protocol_name is not None else b"",
                         assignment=bytes(assignment.get(m.member_id, b""))))
    ts = group.current_state_timestamp
    v = GroupMetadataValue(protocol_type=group.protocol_type or "", generation=group.generation_id,
                           protocol=group.protocol_name, leader=group.leader_id,
                           current_state_timestamp=ts if ts is not None else -1, members=members)
    return encode_versioned(GroupMetadataValue, v, GROUP_METADATA_VALUE_VERSION)


def group_from_value(group_id: str, value) -> GroupMetadata:
    """Rebuild a group from its GroupMetadataValue: Empty without members, else Stable."""
    state = GroupState.STABLE if value.members else GroupState.EMPTY
    ts = value.current_state_timestamp
    group = GroupMetadata(group_id, state, ts if ts is not None and ts >= 0 else -1)
    group.generation_id = value.generation
    group.protocol_name = value.protocol
    for mv in value.members:
        protocols = [(value.protocol, bytes(mv.subscription))] if value.protocol is not None else []
        rebalance_timeout = mv.rebalance_timeout if mv.rebalance_timeout > 0 else mv.session_timeout
        m = MemberMetadata(mv.member_id, mv.group_instance_id, mv.client_id, mv.client_host, rebalance_timeout,
                           mv.session_timeout, value.protocol_type, protocols)
        m.assignment = bytes(mv.assignment)
        group.add(m)
    group.protocol_type = value.protocol_type or None
    group.leader_id = value.leader if value.leader in group.members else group.leader_id
    group.subscribed_topics = group.compute_subscribed_topics()
    return group
