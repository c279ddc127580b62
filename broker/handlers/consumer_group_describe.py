"""ConsumerGroupDescribe (69) v0-1: consumer-protocol groups as ``Admin.describeConsumerGroups``
reads them (state, epochs, assignor, members with their current and target assignments;
v1 adds each member's type: 0 classic, 1 consumer). A classic or unknown group answers
GROUP_ID_NOT_FOUND, after which the admin clients fall back to DescribeGroups.
"""
from broker.handlers.consumer_group_heartbeat import consumer_protocol_enabled
from broker.registry import handles
from broker.security.acl import ResourceType
from broker.security.api_acls import active, hide_groups_naming_denied_topics, operations, split_described_groups
from protocol.errors import ErrorCode
from protocol.messages.consumer_group_describe import ConsumerGroupDescribeResponse as R


def _assignment(cls, parts):
    return cls(topic_partitions=[cls.TopicPartitions(topic_id=tid, topic_name=name, partitions=ps)
                                 for tid, name, ps in parts])


@handles(69)
async def handle(ctx, req):
    b = ctx.broker
    if not consumer_protocol_enabled(b):
        return R(throttle_time_ms=0, groups=[R.DescribedGroup(error_code=ErrorCode.UNSUPPORTED_VERSION, group_id=g)
                                             for g in req.group_ids])
    az = active(ctx)
    ids, groups = split_described_groups(az, req.group_ids, R.DescribedGroup)
    for d in b.groups.handle_consumer_group_describe(ids):
        groups.append(R.DescribedGroup(
            error_code=d.error, error_message=d.message, group_id=d.group_id, group_state=d.state,
            group_epoch=d.group_epoch, assignment_epoch=d.assignment_epoch, assignor_name=d.assignor_name,
            members=[R.Member(member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
                              member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
                              subscribed_topic_names=m.subscribed_topic_names,
                              subscribed_topic_regex=m.subscribed_topic_regex,
                              assignment=_assignment(R.Assignment, m.assignment),
                              target_assignment=_assignment(R.TargetAssignment, m.target_assignment),
                              member_type=m.member_type)
                     for m in (d.members or [])],
            authorized_operations=(operations(ctx, ResourceType.GROUP, d.group_id)
                                   if req.include_authorized_operations and not d.error else -2147483648)))
    groups = hide_groups_naming_denied_topics(
        az, groups, lambda g: [tp.topic_name for m in g.members for a in (m.assignment, m.target_assignment)
                               for tp in a.topic_partitions], R.DescribedGroup)
    return R(throttle_time_ms=0, groups=groups)
