"""ShareGroupDescribe (77) v1: share groups with their members and assignments; an unknown
group, or one of another type, answers GROUP_ID_NOT_FOUND (no state, epochs 0), as Kafka 4.4.
At ``share.version`` 0 every group answers UNSUPPORTED_VERSION, as Kafka 4.4."""
from broker.features import SHARE_VERSION, enabled
from broker.registry import handles
from broker.security.acl import ResourceType
from broker.security.api_acls import active, hide_groups_naming_denied_topics, operations, split_described_groups
from protocol.errors import ErrorCode
from protocol.messages.share_group_describe import ShareGroupDescribeResponse as R


@handles(77)
async def handle(ctx, req):
    b = ctx.broker
    if not enabled(b, SHARE_VERSION):
        return R(throttle_time_ms=0, groups=[R.DescribedGroup(
            error_code=ErrorCode.UNSUPPORTED_VERSION, group_id=g, group_state="", group_epoch=0, assignment_epoch=0,
            assignor_name="", members=[]) for g in req.group_ids])
    az = active(ctx)
    ids, out = split_described_groups(az, req.group_ids, R.DescribedGroup)
    for gid in ids:
        g = b.share_groups.describe(gid)
        if g is None:
            msg = (f"Group {gid} is not a share group." if b.share_groups.other_group_type(gid)
                   else f"Group {gid} not found.")
            # Kafka 4.4 answers the error alone: no state, epochs 0
            out.append(R.DescribedGroup(error_code=ErrorCode.GROUP_ID_NOT_FOUND, error_message=msg, group_id=gid,
                                        group_state="", group_epoch=0, assignment_epoch=0,
                                        assignor_name="", members=[]))
            continue
        members = []
        for m in g.members.values():
            tps = []
            for tid, ps in sorted(m.assignment.items()):
                t = b.topics.by_id(tid)
                tps.append(R.DescribedGroup.Member.Assignment.TopicPartitions(
                    topic_id=tid, topic_name=t.name if t else "", partitions=sorted(ps)))
            members.append(R.DescribedGroup.Member(
                member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch, client_id=m.client_id,
                client_host=m.client_host, subscribed_topic_names=list(m.subscribed_topic_names),
                assignment=R.DescribedGroup.Member.Assignment(topic_partitions=tps)))
        out.append(R.DescribedGroup(error_code=0, group_id=gid, group_state=g.state, group_epoch=g.group_epoch,
                                    assignment_epoch=g.assignment_epoch, assignor_name="simple", members=members,
                                    authorized_operations=(operations(ctx, ResourceType.GROUP, gid)
                                                           if req.include_authorized_operations else -2147483648)))
    out = hide_groups_naming_denied_topics(
        az, out, lambda g: [tp.topic_name for m in g.members for tp in m.assignment.topic_partitions],
        R.DescribedGroup)
    return R(throttle_time_ms=0, groups=out)
