"""DeleteGroups (42) v0-2: delete empty groups with their committed offsets (NON_EMPTY_GROUP
while members remain, GROUP_ID_NOT_FOUND for unknown groups); a share group is deleted with
its share-partition state (``__share_group_state`` tombstones)."""
from broker.registry import handles
from broker.security.api_acls import active
from protocol.errors import ErrorCode
from protocol.messages.delete_groups import DeleteGroupsResponse as R


@handles(42)
async def handle(ctx, req):
    az = active(ctx)
    denied = az.split("group", req.groups_names)[1] if az is not None else ()
    names = [g for g in req.groups_names if g not in denied]
    sc = ctx.broker.share_groups
    share = [g for g in names if sc is not None and g in sc.groups]
    errors = ctx.broker.groups.handle_delete_groups([g for g in names if g not in share])
    for g in share:
        errors[g] = sc.delete_group(g)
    errors.update({g: ErrorCode.GROUP_AUTHORIZATION_FAILED for g in denied})
    return R(throttle_time_ms=0, results=[R.DeletableGroupResult(group_id=g, error_code=errors[g])
                                          for g in dict.fromkeys(req.groups_names)])
