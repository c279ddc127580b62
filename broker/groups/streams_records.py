"""A Streams group (KIP-1071) as Kafka 4.4's records in ``__consumer_offsets``, and back.

Pure functions, no I/O:

- ``group_records(group, metadata_hash, now_ms)``: every record that describes the group as it is
  (key bytes -> value bytes, in Kafka's write order: group metadata, topology, then per member
  its metadata, target and current assignment, then the target assignment epoch);
- ``records_delta(written, wanted)``: what to append so that the log says ``wanted`` when it
  said ``written``: the changed records, then tombstones for the keys no longer wanted (a
  member's records before the group's, so a deleted group's last record is its metadata
  tombstone, as Kafka writes it);
- ``group_from_records(group_id, records)``: the group rebuilt from the latest record per key
  (what replay left of the log); ``None`` without a group metadata record.

What Kafka too keeps in memory only is not written: the task offsets members report, the
endpoint information epoch, a shutdown request, the initial rebalance delay. A static member
that left with epoch -2 is written with its epoch (Kafka writes -2) and comes back live after
a restart: its session timeout fences it if it does not return.
"""
from __future__ import annotations

import hashlib
from typing import Optional

from broker.groups.schemas import (
    STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT as CURRENT, STREAMS_GROUP_MEMBER_METADATA as MEMBER,
    STREAMS_GROUP_METADATA as METADATA, STREAMS_GROUP_RECORDS, STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER as TARGET,
    STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA as TARGET_EPOCH, STREAMS_GROUP_TOPOLOGY as TOPOLOGY,
    StreamsGroupCurrentMemberAssignmentValue as CurrentValue, StreamsGroupMemberMetadataValue as MemberValue,
    StreamsGroupMetadataValue as MetadataValue, StreamsGroupTargetAssignmentMemberValue as TargetValue,
    StreamsGroupTargetAssignmentMetadataValue as TargetEpochValue, StreamsGroupTopologyValue as TopologyValue,
    encode_streams_record,
)
from broker.groups.streams_assignment import AssignmentState, MemberState, Tasks, by_subtopology
from broker.groups.streams_group import StreamsGroup, StreamsMember
from broker.groups.streams_topology import StreamsTopology, topology_from_request

# the order a member's records are tombstoned in (Kafka's removal order), then the group's
_TOMBSTONE_ORDER = {CURRENT: 0, TARGET: 1, MEMBER: 2, TARGET_EPOCH: 3, TOPOLOGY: 4, METADATA: 5}


def metadata_hash(snapshot: tuple) -> int:
    """A signed 64-bit hash of the topology's topics and their partition counts (Kafka hashes
    its topic metadata its own way; the number is only compared with itself)."""
    return int.from_bytes(hashlib.blake2b(repr(snapshot).encode(), digest_size=8).digest(), "big", signed=True)


def _task_ids(cls, tasks, epochs: Optional[dict] = None) -> list:
    out = []
    for sid, parts in by_subtopology(tasks):
        t = cls(subtopology_id=sid, partitions=list(parts))
        if epochs is not None:
            t.assignment_epochs = [epochs.get((sid, p), 0) for p in parts]
        out.append(t)
    return out


def _topology_value(t: StreamsTopology):
    S = TopologyValue.Subtopology

    def info(ti):
        return S.TopicInfo(name=ti.name, partitions=ti.partitions, replication_factor=ti.replication_factor,
                           topic_configs=[S.TopicInfo.TopicConfig(key=k, value=v) for k, v in ti.configs])
    subs = []
    for s in t.subtopologies:
        rep = [ti.name for ti in s.repartition_source_topics]
        groups = [S.CopartitionGroup(source_topics=sorted(s.source_topics.index(n) for n in g if n in s.source_topics),
                                     source_topic_regex=[],
                                     repartition_source_topics=sorted(rep.index(n) for n in g if n in rep))
                  for g in s.copartition_groups]
        subs.append(S(subtopology_id=s.subtopology_id, source_topics=list(s.source_topics), source_topic_regex=[],
                      state_changelog_topics=[info(ti) for ti in s.state_changelog_topics],
                      repartition_sink_topics=list(s.repartition_sink_topics),
                      repartition_source_topics=[info(ti) for ti in s.repartition_source_topics],
                      copartition_groups=groups))
    return TopologyValue(epoch=t.epoch, subtopologies=subs)


def _member_value(m):
    ep = None if m.user_endpoint is None else MemberValue.Endpoint(host=m.user_endpoint[0], port=m.user_endpoint[1])
    return MemberValue(instance_id=m.instance_id, rack_id=m.rack_id, client_id=m.client_id,
                       client_host=m.client_host, rebalance_timeout_ms=m.rebalance_timeout_ms,
                       topology_epoch=m.topology_epoch, process_id=m.process_id, user_endpoint=ep,
                       client_tags=[MemberValue.KeyValue(key=k, value=v) for k, v in m.client_tags])


def _target_value(t: Tasks):
    T = TargetValue.TaskIds
    return TargetValue(active_tasks=_task_ids(T, t.active), standby_tasks=_task_ids(T, t.standby),
                       warmup_tasks=_task_ids(T, t.warmup))


def _current_value(m):
    T = CurrentValue.TaskIds
    a = m.assignment
    return CurrentValue(
        member_epoch=a.member_epoch, previous_member_epoch=a.previous_member_epoch, state=int(a.state),
        active_tasks=_task_ids(T, a.assigned.active, m.task_epochs),
        standby_tasks=_task_ids(T, a.assigned.standby), warmup_tasks=_task_ids(T, a.assigned.warmup),
        active_tasks_pending_revocation=_task_ids(T, a.pending_revocation.active, m.task_epochs),
        standby_tasks_pending_revocation=_task_ids(T, a.pending_revocation.standby),
        warmup_tasks_pending_revocation=_task_ids(T, a.pending_revocation.warmup))


def _record(rt: int, group_id: str, value, member_id: Optional[str] = None) -> tuple[bytes, bytes]:
    kcls = STREAMS_GROUP_RECORDS[rt][0]
    key = kcls(group_id=group_id) if member_id is None else kcls(group_id=group_id, member_id=member_id)
    return encode_streams_record(rt, key, value)


def group_records(group, mhash: int, num_standby_replicas: int, now_ms: int = 0) -> dict[bytes, bytes]:
    """Every record describing ``group`` (a ``StreamsGroup``), in write order."""
    gid = group.group_id
    validated = group.configured.epoch if group.configured is not None and group.configured.ready else -1
    meta = MetadataValue(epoch=group.group_epoch, metadata_hash=mhash, validated_topology_epoch=validated,
                         last_assignment_configs=[MetadataValue.LastAssignmentConfig(
                             key="num.standby.replicas", value=str(num_standby_replicas))])
    out = [_record(METADATA, gid, meta)]
    if group.topology is not None:
        out.append(_record(TOPOLOGY, gid, _topology_value(group.topology)))
    for mid in sorted(group.members):
        m = group.members[mid]
        out.append(_record(MEMBER, gid, _member_value(m), mid))
        if mid in group.target:
            out.append(_record(TARGET, gid, _target_value(group.target[mid]), mid))
        out.append(_record(CURRENT, gid, _current_value(m), mid))
    for mid in sorted(set(group.target) - set(group.members)):
        out.append(_record(TARGET, gid, _target_value(group.target[mid]), mid))
    out.append(_record(TARGET_EPOCH, gid, TargetEpochValue(assignment_epoch=group.target_assignment_epoch,
                                                           assignment_timestamp=now_ms)))
    return dict(out)


def _record_type(key: bytes) -> int:
    return int.from_bytes(key[:2], "big", signed=True)


def records_delta(written: dict[bytes, bytes], wanted: dict[bytes, bytes], *,
                  ignore_timestamp: bool = True) -> list[tuple[bytes, Optional[bytes]]]:
    """The records that take the log from ``written`` to ``wanted``. The target assignment
    epoch's record is rewritten only when its epoch changed (its timestamp says when the
    assignment was computed, not when the group was last written)."""
    out: list[tuple[bytes, Optional[bytes]]] = []
    for k, v in wanted.items():
        old = written.get(k)
        if old == v:
            continue
        if (ignore_timestamp and old is not None and _record_type(k) == TARGET_EPOCH
                and _target_epoch(old) == _target_epoch(v)):
            continue
        out.append((k, v))
    gone = [k for k in written if k not in wanted]
    gone.sort(key=lambda k: _TOMBSTONE_ORDER.get(_record_type(k), 9))
    out.extend((k, None) for k in gone)
    return out


def _target_epoch(value: bytes) -> int:
    return int.from_bytes(value[2:6], "big", signed=True)


def apply_delta(written: dict[bytes, bytes], delta) -> dict[bytes, bytes]:
    """``written`` after ``delta`` was appended (a new dict)."""
    out = dict(written)
    for k, v in delta:
        if v is None:
            out.pop(k, None)
        else:
            out[k] = v
    return out


def _tasks(task_ids) -> frozenset:
    return frozenset((t.subtopology_id, p) for t in task_ids for p in t.partitions)


def _epochs(task_ids) -> dict:
    out = {}
    for t in task_ids:
        if t.assignment_epochs is not None and len(t.assignment_epochs) == len(t.partitions):
            out.update({(t.subtopology_id, p): e for p, e in zip(t.partitions, t.assignment_epochs)})
    return out


def group_from_records(group_id: str, records: dict[int, dict]):
    """The ``StreamsGroup`` the latest records describe: ``records`` maps a record type to
    {member id (None for the group's own records): decoded value}. Returns ``(group, metadata
    hash)``, or ``None`` when the group metadata record is missing (the group was deleted). A
    member's assignment without its metadata record is dropped."""
    meta = records.get(METADATA, {}).get(None)
    if meta is None:
        return None
    g = StreamsGroup(group_id)
    g.group_epoch = meta.epoch
    topo = records.get(TOPOLOGY, {}).get(None)
    if topo is not None:
        g.topology = topology_from_request(topo)
    te = records.get(TARGET_EPOCH, {}).get(None)
    g.target_assignment_epoch = te.assignment_epoch if te is not None else 0
    for mid, v in records.get(TARGET, {}).items():
        g.target[mid] = Tasks(_tasks(v.active_tasks), _tasks(v.standby_tasks), _tasks(v.warmup_tasks))
    current = records.get(CURRENT, {})
    for mid, v in records.get(MEMBER, {}).items():
        m = StreamsMember(mid, instance_id=v.instance_id, rack_id=v.rack_id, client_id=v.client_id,
                          client_host=v.client_host, rebalance_timeout_ms=v.rebalance_timeout_ms,
                          topology_epoch=v.topology_epoch, process_id=v.process_id,
                          user_endpoint=None if v.user_endpoint is None else (v.user_endpoint.host,
                                                                              v.user_endpoint.port),
                          client_tags=tuple((kv.key, kv.value) for kv in v.client_tags))
        c = current.get(mid)
        if c is not None:
            from dataclasses import replace
            a = AssignmentState(c.member_epoch, c.previous_member_epoch, MemberState(c.state),
                                Tasks(_tasks(c.active_tasks), _tasks(c.standby_tasks), _tasks(c.warmup_tasks)),
                                Tasks(_tasks(c.active_tasks_pending_revocation),
                                      _tasks(c.standby_tasks_pending_revocation),
                                      _tasks(c.warmup_tasks_pending_revocation)))
            epochs = _epochs(c.active_tasks)
            epochs.update(_epochs(c.active_tasks_pending_revocation))
            m = replace(m, assignment=a, task_epochs=epochs)
        g.members[mid] = m
    return g, meta.metadata_hash
