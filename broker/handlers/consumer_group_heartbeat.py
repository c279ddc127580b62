"""ConsumerGroupHeartbeat (68) v0-1: the KIP-848 consumer group protocol.

One request joins (epoch 0), keeps alive and reconciles (the member's epoch), or leaves
(-1; a static member -2); the group coordinator (``broker.groups.consumer_coordinator``)
answers the member id and epoch, the heartbeat interval and, when it changed (or on a full
request), the partitions the member may consume now. Served only while
``group.coordinator.rebalance.protocols`` lists ``consumer`` (else UNSUPPORTED_VERSION and not
advertised, as Kafka) and ``group.version`` is finalized at 1 or more (at 0, UNSUPPORTED_VERSION
while still advertised, as Kafka 4.4).
"""
from broker.features import GROUP_VERSION, enabled
from broker.groups.coordinator import client_host_of
from broker.registry import handles
from broker.security.api_acls import active
from protocol.errors import ErrorCode
from protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatResponse as R


def consumer_protocol_enabled(broker) -> bool:
    """Kafka's isConsumerGroupProtocolEnabled: the protocol listed and group.version 1+."""
    return "consumer" in broker.cfg["group.coordinator.rebalance.protocols"] and enabled(broker, GROUP_VERSION)


@handles(68)
async def handle(ctx, req):
    b = ctx.broker
    if not consumer_protocol_enabled(b):
        return R(throttle_time_ms=0, error_code=ErrorCode.UNSUPPORTED_VERSION, member_epoch=0,
                 heartbeat_interval_ms=0)
    az = active(ctx)
    describable = None
    if az is not None:
        if not az.allowed("group", req.group_id):
            return R(throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, member_epoch=0,
                     heartbeat_interval_ms=0)
        if req.subscribed_topic_names and az.split("topic", req.subscribed_topic_names)[1]:
            return R(throttle_time_ms=0, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, member_epoch=0,
                     heartbeat_interval_ms=0)
        if ctx.api_version >= 1:
            describable = lambda names: az.split("regex_topic", names)[0]  # noqa: E731
    if b.share_groups is not None and req.group_id in b.share_groups.groups:  # one group id namespace
        return R(throttle_time_ms=0, error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                 error_message=f"Group {req.group_id} is not a consumer group.", member_epoch=0,
                 heartbeat_interval_ms=0)
    res = b.groups.handle_consumer_group_heartbeat(req, ctx.api_version, ctx.client_id or "", client_host_of(ctx),
                                                   describable)
    assignment = None
    if res.assignment is not None:
        assignment = R.Assignment(topic_partitions=[
            R.Assignment.TopicPartitions(topic_id=t, partitions=sorted(ps))
            for t, ps in sorted(res.assignment.items()) if ps])
    return R(throttle_time_ms=0, error_code=res.error, error_message=res.message, member_id=res.member_id,
             member_epoch=res.member_epoch, heartbeat_interval_ms=res.heartbeat_interval_ms, assignment=assignment)
