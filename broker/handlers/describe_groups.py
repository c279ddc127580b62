"""DescribeGroups (15) v0-6: state, protocol and members of each group.

Member metadata and assignments are shown only for a Stable group (as Kafka); an unknown group
is described as Dead, without an error before v6 and from v6 (KIP-1043) with GROUP_ID_NOT_FOUND
and Kafka's message.
"""
from broker.groups.group import GroupMetadata
from broker.registry import handles
from broker.security.acl import ResourceType
from broker.security.api_acls import active, operations
from protocol.errors import ErrorCode
from protocol.messages.describe_groups import DescribeGroupsResponse as R


@handles(15)
async def handle(ctx, req):
    out = []
    az = active(ctx)
    with_ops = ctx.api_version >= 3 and req.include_authorized_operations
    for gid in req.groups:
        if az is not None and not az.allowed("group", gid):
            out.append(R.DescribedGroup(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, group_id=gid,
                                        group_state="", protocol_type="", protocol_data="", members=[]))
            continue
        err, s = ctx.broker.groups.handle_describe_group(gid)
        message = None
        if ctx.api_version >= 6 and not err and s.state == "Dead":
            # a consumer or Streams group is there, but not for this API
            g = ctx.broker.groups.groups.get(gid)
            other = g is not None and not isinstance(g, GroupMetadata)
            err, message = ErrorCode.GROUP_ID_NOT_FOUND, (f"Group {gid} is not a classic group." if other
                                                          else f"Group {gid} not found.")
        out.append(R.DescribedGroup(
            error_code=err, error_message=message, group_id=gid, group_state=s.state, protocol_type=s.protocol_type,
            protocol_data=s.protocol,
            authorized_operations=operations(ctx, ResourceType.GROUP, gid) if with_ops else -2147483648,
            members=[R.DescribedGroupMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                            client_id=m.client_id, client_host=m.client_host,
                                            member_metadata=m.metadata, member_assignment=m.assignment)
                     for m in s.members]))
    return R(throttle_time_ms=0, groups=out)
