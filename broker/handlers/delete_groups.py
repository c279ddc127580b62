"""DeleteGroups (42) v0-2: delete empty groups with their committed offsets (NON_EMPTY_GROUP
while members remain, GROUP_ID_NOT_FOUND for unknown groups)."""
from broker.registry import handles
from protocol.messages.delete_groups import DeleteGroupsResponse as R


@handles(42)
async def handle(ctx, req):
    errors = ctx.broker.groups.handle_delete_groups(req.groups_names)
    return R(throttle_time_ms=0, results=[R.DeletableGroupResult(group_id=g, error_code=errors[g])
                                          for g in dict.fromkeys(req.groups_names)])
