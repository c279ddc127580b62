"""LeaveGroup (13) v0-5: members leave at once (their partitions move without waiting for
the session timeout).

v0-2 name one member; v3+ a batch (KIP-345), where an empty member id with a group instance
id removes a static member administratively. For v0-2 the top-level error is the member's
error, as Kafka's LeaveGroupResponse folds it.
"""
from broker.registry import handles
from broker.security.api_acls import active
from protocol.errors import ErrorCode as E
from protocol.messages.leave_group import LeaveGroupResponse as R


@handles(13)
async def handle(ctx, req):
    az = active(ctx)
    if az is not None and not az.allowed("group", req.group_id):  # READ on the group (Kafka)
        return R(throttle_time_ms=0, error_code=E.GROUP_AUTHORIZATION_FAILED)
    v = ctx.api_version
    if v >= 3:
        members = [(m.member_id, m.group_instance_id, m.reason if v >= 5 else None) for m in req.members]
    else:
        members = [(req.member_id, None, None)]
    err, results = ctx.broker.groups.handle_leave_group(req.group_id, members)
    if v < 3:
        if not err and results:
            err = results[0][2]
        return R(throttle_time_ms=0, error_code=err)
    return R(throttle_time_ms=0, error_code=err,
             members=[R.MemberResponse(member_id=mid, group_instance_id=gi, error_code=e)
                      for mid, gi, e in results])
