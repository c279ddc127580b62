"""OffsetDelete (47) v0: delete a group's committed offsets for some partitions; refused with
GROUP_SUBSCRIBED_TO_TOPIC for topics the live members consume."""
from broker.registry import handles
from broker.security.api_acls import active
from protocol.errors import ErrorCode
from protocol.messages.offset_delete import OffsetDeleteResponse as R


@handles(47)
async def handle(ctx, req):
    b = ctx.broker
    known, unknown = [], set()
    az = active(ctx)
    denied = ()
    if az is not None:
        if not az.allowed("group", req.group_id):
            return R(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, throttle_time_ms=0, topics=[])
        denied = az.split("topic", [t.name for t in req.topics])[1]
    for t in req.topics:
        if t.name in denied:
            continue
        info = b.topics.get(t.name)
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if info is None or not 0 <= p.partition_index < info.partitions:
                unknown.add(tp)
            else:
                known.append(tp)
    err, errors = b.groups.handle_delete_offsets(req.group_id, known)
    if err:
        return R(error_code=err, throttle_time_ms=0, topics=[])
    return R(error_code=0, throttle_time_ms=0, topics=[
        R.OffsetDeleteResponseTopic(name=t.name, partitions=[
            R.OffsetDeleteResponsePartition(
                partition_index=p.partition_index,
                error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED if t.name in denied
                else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if (t.name, p.partition_index) in unknown
                else errors.get((t.name, p.partition_index), 0))
            for p in t.partitions])
        for t in req.topics])
