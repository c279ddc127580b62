"""ListGroups (16) v0-5: every group, optionally filtered by state (v4+) and type (v5+:
"classic" or "consumer", the KIP-848 groups; both filters case-insensitive)."""
from broker.registry import handles
from protocol.messages.list_groups import ListGroupsResponse as R


@handles(16)
async def handle(ctx, req):
    v = ctx.api_version
    err, groups = ctx.broker.groups.handle_list_groups(req.states_filter if v >= 4 else (),
                                                        req.types_filter if v >= 5 else ())
    return R(throttle_time_ms=0, error_code=err, groups=[
        R.ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.state,
                      group_type=g.group_type)
        for g in groups])
