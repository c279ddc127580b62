"""StreamsGroupDescribe (89) v0-1: Streams groups as ``Admin.describeStreamsGroups`` (and
kafka-streams-groups.sh) reads them: state, epochs, topology, members with their process,
endpoint, client tags, task offsets, current and target tasks. A group of another type, or an
unknown one, answers GROUP_ID_NOT_FOUND. No topology description plugin is configured, so v1's
``TopologyDescription`` is null with status NOT_REQUESTED (0) or NOT_STORED (1).
"""
from broker.groups.streams_assignment import NO_TASKS, by_subtopology
from broker.handlers.streams_group_heartbeat import streams_protocol_enabled
from broker.registry import handles
from broker.security.acl import ResourceType
from broker.security.api_acls import active, operations, split_described_groups
from protocol.errors import ErrorCode
from protocol.messages.streams_group_describe import StreamsGroupDescribeResponse as R

D = R.DescribedGroup
A = D.Member.Assignment
TI = D.Topology.Subtopology.TopicInfo
STICKY = "sticky"


def _task_ids(tasks):
    return [A.TaskIds(subtopology_id=sid, partitions=ps) for sid, ps in by_subtopology(tasks)]


def _assignment(t):
    return A(active_tasks=_task_ids(t.active), standby_tasks=_task_ids(t.standby), warmup_tasks=_task_ids(t.warmup))


def _topic_info(ti, partitions):
    return TI(name=ti.name, partitions=partitions, replication_factor=ti.replication_factor,
              topic_configs=[TI.KeyValue(key=k, value=v) for k, v in ti.configs])


def _topology(g):
    """The topology with the partition counts the coordinator configured for its internal
    topics (what the member sent where it could not configure them)."""
    if g.topology is None:
        return None
    counts = g.configured.internal_partitions if g.configured is not None else {}
    subs = []
    for s in g.topology.subtopologies:
        subs.append(D.Topology.Subtopology(
            subtopology_id=s.subtopology_id, source_topics=list(s.source_topics),
            repartition_sink_topics=list(s.repartition_sink_topics),
            state_changelog_topics=[_topic_info(ti, counts.get(ti.name, ti.partitions))
                                    for ti in s.state_changelog_topics],
            repartition_source_topics=[_topic_info(ti, counts.get(ti.name, ti.partitions))
                                       for ti in s.repartition_source_topics]))
    return D.Topology(epoch=g.topology.epoch, subtopologies=subs)


@handles(89)
async def handle(ctx, req):
    b = ctx.broker
    if not streams_protocol_enabled(b):
        return R(throttle_time_ms=0, groups=[D(error_code=ErrorCode.UNSUPPORTED_VERSION, group_id=g, group_state="",
                                               group_epoch=0, assignment_epoch=0, members=[])
                                             for g in req.group_ids])
    az = active(ctx)
    ids, groups = split_described_groups(az, req.group_ids, lambda **kw: D(group_state="", group_epoch=0,
                                                                          assignment_epoch=0, members=[], **kw))
    include_description = getattr(req, "include_topology_description", False)
    for gid, err, message, g in b.groups.handle_streams_group_describe(ids):
        if err:
            groups.append(D(error_code=err, error_message=message, group_id=gid, group_state="", group_epoch=0,
                            assignment_epoch=0, members=[]))
            continue
        members = []
        for m in sorted(g.members.values(), key=lambda x: x.member_id):
            members.append(D.Member(
                member_id=m.member_id, member_epoch=m.member_epoch, instance_id=m.instance_id, rack_id=m.rack_id,
                client_id=m.client_id, client_host=m.client_host, topology_epoch=m.topology_epoch,
                process_id=m.process_id,
                user_endpoint=(D.Member.Endpoint(host=m.user_endpoint[0], port=m.user_endpoint[1])
                               if m.user_endpoint is not None else None),
                client_tags=[D.Member.KeyValue(key=k, value=v) for k, v in m.client_tags],
                task_offsets=[D.Member.TaskOffset(subtopology_id=s, partition=p, offset=o) for s, p, o in m.task_offsets],
                task_end_offsets=[D.Member.TaskOffset(subtopology_id=s, partition=p, offset=o)
                                  for s, p, o in m.task_end_offsets],
                assignment=_assignment(m.assignment.assigned),
                target_assignment=_assignment(g.target.get(m.member_id, NO_TASKS)),
                is_classic=False))
        groups.append(D(
            error_code=0, group_id=gid, group_state=g.state, group_epoch=g.group_epoch,
            assignment_epoch=g.target_assignment_epoch, topology=_topology(g), members=members,
            authorized_operations=(operations(ctx, ResourceType.GROUP, gid) if req.include_authorized_operations
                                   else -2147483648),
            **({"topology_description": None, "topology_description_status": 1 if include_description else 0,
                "assignor_name": STICKY} if ctx.api_version >= 1 else {})))
    return R(throttle_time_ms=0, groups=groups)
