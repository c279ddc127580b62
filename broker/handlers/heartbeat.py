"""Heartbeat (12) v0-4: a member is alive; REBALANCE_IN_PROGRESS tells it to rejoin."""
from broker.registry import handles
from broker.security.api_acls import active
from protocol.errors import ErrorCode as E
from protocol.messages.heartbeat import HeartbeatResponse as R


@handles(12)
async def handle(ctx, req):
    az = active(ctx)
    if az is not None and not az.allowed("group", req.group_id):  # READ on the group (Kafka)
        return R(throttle_time_ms=0, error_code=E.GROUP_AUTHORIZATION_FAILED)
    err = ctx.broker.groups.handle_heartbeat(
        req.group_id, req.member_id, req.group_instance_id if ctx.api_version >= 3 else None,
        req.generation_id)
    return R(throttle_time_ms=0, error_code=err)
