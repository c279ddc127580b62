"""ShareGroupHeartbeat (76) v1: share-group membership (KIP-932), answered by
``broker.share.coordinator.ShareCoordinator.heartbeat``. At ``share.version`` 0,
UNSUPPORTED_VERSION (still advertised), as Kafka 4.4."""
from broker.features import SHARE_VERSION, enabled
from broker.groups.coordinator import client_host_of
from broker.registry import handles
from broker.security.api_acls import active
from broker.share.coordinator import ShareError
from protocol.errors import ErrorCode
from protocol.messages.share_group_heartbeat import ShareGroupHeartbeatResponse as R


@handles(76)
async def handle(ctx, req):
    if not enabled(ctx.broker, SHARE_VERSION):
        return R(throttle_time_ms=0, error_code=ErrorCode.UNSUPPORTED_VERSION, member_epoch=0, heartbeat_interval_ms=0)
    az = active(ctx)
    if az is not None:
        denied = None
        if not az.allowed("group", req.group_id):
            denied = ErrorCode.GROUP_AUTHORIZATION_FAILED
        elif req.subscribed_topic_names and az.split("topic", req.subscribed_topic_names)[1]:
            denied = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        if denied is not None:
            return R(throttle_time_ms=0, error_code=denied, member_epoch=0, heartbeat_interval_ms=0)
    try:
        res = ctx.broker.share_groups.heartbeat(req, ctx.client_id or "", client_host_of(ctx))
    except ShareError as exc:
        return R(throttle_time_ms=0, error_code=exc.code, error_message=exc.message, member_epoch=0,
                 heartbeat_interval_ms=0)
    assignment = None
    if res.get("assignment") is not None:
        assignment = R.Assignment(topic_partitions=[
            R.Assignment.TopicPartitions(topic_id=t, partitions=sorted(ps))
            for t, ps in sorted(res["assignment"].items()) if ps])
    return R(throttle_time_ms=0, error_code=0, member_id=res["member_id"], member_epoch=res["member_epoch"],
             heartbeat_interval_ms=res["heartbeat_interval_ms"], assignment=assignment)
