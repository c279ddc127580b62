"""ListGroups (16) v0-5: every group, optionally filtered by state (v4+) and type (v5+:
"classic", "consumer" (KIP-848) or "share" (KIP-932); both filters case-insensitive)."""
from broker.registry import handles
from broker.security.api_acls import active
from protocol.messages.list_groups import ListGroupsResponse as R


@handles(16)
async def handle(ctx, req):
    v = ctx.api_version
    err, groups = ctx.broker.groups.handle_list_groups(req.states_filter if v >= 4 else (),
                                                        req.types_filter if v >= 5 else ())
    listed = [R.ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.state,
                            group_type=g.group_type) for g in groups]
    sc = ctx.broker.share_groups
    if not err and sc is not None:
        states = {s.lower() for s in req.states_filter} if v >= 4 else set()
        types = {t.lower() for t in req.types_filter} if v >= 5 else set()
        for g in sc.groups.values():
            if (not states or g.state.lower() in states) and (not types or "share" in types):
                listed.append(R.ListedGroup(group_id=g.group_id, protocol_type="share", group_state=g.state,
                                            group_type="share"))
    az = active(ctx)
    if az is not None and not az.allowed("cluster"):  # else only the groups it may describe
        listed = [g for g in listed if az.allowed("group", g.group_id)]
    return R(throttle_time_ms=0, error_code=err, groups=listed)
