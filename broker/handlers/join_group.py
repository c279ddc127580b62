"""JoinGroup (11) v0-9: a member joins (or rejoins) a classic group.

The answer is parked until the join phase completes (every known member rejoined, or the
rebalance timeout / ``group.initial.rebalance.delay.ms`` fired): the coordinator calls back,
and this handler awaits that future. v0 has no rebalance timeout (it is the session timeout);
v4+ answer MEMBER_ID_REQUIRED to a member without an id, with the id it must use; v5+ carry
``group.instance.id`` (static membership); v9 may tell the leader to skip assignment.
"""
import time

from broker.groups.coordinator import client_host_of
from broker.registry import handles
from broker.security.api_acls import active
from protocol.errors import ErrorCode as E
from protocol.messages.join_group import JoinGroupResponse as R


@handles(11)
async def handle(ctx, req):
    az = active(ctx)
    if az is not None and not az.allowed("group", req.group_id):  # READ on the group (Kafka)
        v = ctx.api_version
        return R(throttle_time_ms=0, error_code=E.GROUP_AUTHORIZATION_FAILED, generation_id=-1,
                 protocol_name=None if v >= 7 else "", leader="", member_id=req.member_id or "", members=[])
    v = ctx.api_version
    coordinator = ctx.broker.groups
    rebalance_timeout = req.rebalance_timeout_ms if v >= 1 else req.session_timeout_ms
    t_wait = time.monotonic()  # parked until the rebalance completes: not request-handling time
    res = await coordinator.join_group(
        group_id=req.group_id, member_id=req.member_id,
        group_instance_id=req.group_instance_id if v >= 5 else None,
        require_known_member_id=v >= 4, support_skip_assignment=v >= 9,
        client_id=ctx.client_id or "", client_host=client_host_of(ctx),
        rebalance_timeout_ms=rebalance_timeout, session_timeout_ms=req.session_timeout_ms,
        protocol_type=req.protocol_type,
        protocols=[(p.name, bytes(p.metadata)) for p in req.protocols],
        reason=req.reason if v >= 8 else None)
    ctx.waited_s += time.monotonic() - t_wait
    protocol_name = res.protocol_name
    if protocol_name is None and v < 7:
        protocol_name = ""  # non-nullable before v7
    return R(throttle_time_ms=0, error_code=res.error, generation_id=res.generation_id,
             protocol_type=res.protocol_type, protocol_name=protocol_name, leader=res.leader_id or "",
             skip_assignment=res.skip_assignment, member_id=res.member_id or "",
             members=[R.JoinGroupResponseMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                                metadata=m.metadata) for m in res.members])
