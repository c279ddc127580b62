"""OffsetForLeaderEpoch (23) v0-4: the end offset of a leader epoch.

This node has led every partition since epoch 0 and never changes epoch, so epoch 0 ends at
the log end offset; a later epoch is unknown (UNDEFINED -1/-1, as Kafka answers an epoch it
has not seen); ``current_leader_epoch`` is checked like Fetch does (UNKNOWN/FENCED).
"""
from broker.registry import handles
from broker.security.api_acls import active
from protocol.errors import ErrorCode
from protocol.messages.offset_for_leader_epoch import OffsetForLeaderEpochResponse as R

LEADER_EPOCH = 0


@handles(23)
async def handle(ctx, req):
    b = ctx.broker
    topics = []
    az = active(ctx)
    denied: dict = {}
    if az is not None:
        if ctx.api_version >= 3 and req.replica_id >= 0 and not az.allowed("follower"):
            denied = {rt.topic: ErrorCode.CLUSTER_AUTHORIZATION_FAILED for rt in req.topics}
        else:
            denied = dict.fromkeys(az.split("topic", [rt.topic for rt in req.topics])[1],
                                   ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    for rt in req.topics:
        if rt.topic in denied:
            topics.append(R.OffsetForLeaderTopicResult(topic=rt.topic, partitions=[
                R.EpochEndOffset(error_code=denied[rt.topic], partition=rp.partition, leader_epoch=-1, end_offset=-1)
                for rp in rt.partitions]))
            continue
        t = b.topics.get(rt.topic)
        parts = []
        for rp in rt.partitions:
            if t is None or not 0 <= rp.partition < t.partitions:
                parts.append(R.EpochEndOffset(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                              partition=rp.partition, leader_epoch=-1, end_offset=-1))
            elif rp.current_leader_epoch > LEADER_EPOCH:
                parts.append(R.EpochEndOffset(error_code=ErrorCode.UNKNOWN_LEADER_EPOCH,
                                              partition=rp.partition, leader_epoch=-1, end_offset=-1))
            elif 0 <= rp.current_leader_epoch < LEADER_EPOCH:
                parts.append(R.EpochEndOffset(error_code=ErrorCode.FENCED_LEADER_EPOCH,
                                              partition=rp.partition, leader_epoch=-1, end_offset=-1))
            elif rp.leader_epoch > LEADER_EPOCH:
                parts.append(R.EpochEndOffset(error_code=0, partition=rp.partition, leader_epoch=-1, end_offset=-1))
            else:
                plog = b.topics.log(t.name, rp.partition)
                parts.append(R.EpochEndOffset(error_code=0, partition=rp.partition, leader_epoch=LEADER_EPOCH,
                                              end_offset=plog.log_end_offset))
        topics.append(R.OffsetForLeaderTopicResult(topic=rt.topic, partitions=parts))
    return R(throttle_time_ms=0, topics=topics)
