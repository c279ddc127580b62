"""SyncGroup (14) v0-5: the leader hands in the assignment; every member receives its own.

Parked until the leader's SyncGroup arrives (the coordinator calls back). v5 carries the
protocol type and name, which must match the group's (INCONSISTENT_GROUP_PROTOCOL).
"""
import time

from broker.registry import handles
from broker.security.api_acls import active
from protocol.errors import ErrorCode as E
from protocol.messages.sync_group import SyncGroupResponse as R


@handles(14)
async def handle(ctx, req):
    az = active(ctx)
    if az is not None and not az.allowed("group", req.group_id):  # READ on the group (Kafka)
        return R(throttle_time_ms=0, error_code=E.GROUP_AUTHORIZATION_FAILED, assignment=b"")
    v = ctx.api_version
    t_wait = time.monotonic()  # parked until the leader's assignment: not request-handling time
    res = await ctx.broker.groups.sync_group(
        group_id=req.group_id, generation_id=req.generation_id, member_id=req.member_id,
        protocol_type=req.protocol_type if v >= 5 else None,
        protocol_name=req.protocol_name if v >= 5 else None,
        group_instance_id=req.group_instance_id if v >= 3 else None,
        assignments={a.member_id: bytes(a.assignment) for a in req.assignments})
    ctx.waited_s += time.monotonic() - t_wait
    return R(throttle_time_ms=0, error_code=res.error, protocol_type=res.protocol_type,
             protocol_name=res.protocol_name, assignment=res.assignment or b"")
