"""ShareAcknowledge (79) v1-2: acknowledgements of a share-group member without fetching
(KIP-932). The share session must exist and the epoch be its next one (0 is refused with
INVALID_SHARE_SESSION_EPOCH: a session is opened by ShareFetch); -1 acknowledges, then
closes the session and releases what the member still holds. Per partition:
INVALID_RECORD_STATE for a record the member does not hold (never acquired, released, lock
expired), UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION (no share-partition there),
INVALID_REQUEST for a malformed batch, an unknown acknowledge type (RENEW only from v2) or
offsets past the in-flight records (``ShareCoordinator.acknowledge``). A member that left the
group still acknowledges through its share session. At ``share.version`` 0, UNSUPPORTED_VERSION."""
from broker.features import SHARE_VERSION, enabled
from broker.registry import handles
from broker.handlers.share_fetch import denied_topic_ids, open_share_request
from broker.share.coordinator import FINAL_EPOCH
from protocol.errors import ErrorCode
from protocol.messages.share_acknowledge import ShareAcknowledgeResponse as R

PD = R.ShareAcknowledgeTopicResponse.PartitionData


@handles(79)
async def handle(ctx, req):
    b = ctx.broker
    if not enabled(b, SHARE_VERSION):  # share.version 0: share groups off (Kafka 4.4's answer)
        return R(throttle_time_ms=0, error_code=ErrorCode.UNSUPPORTED_VERSION, acquisition_lock_timeout_ms=0,
                 responses=[], node_endpoints=[])
    sc = b.share_groups
    gid, mid, epoch = req.group_id, req.member_id, req.share_session_epoch
    session, lock_ms, refused = open_share_request(ctx, req, R, fetch=False)
    if refused is not None:
        return refused
    responses = []
    denied = denied_topic_ids(ctx, [t.topic_id for t in req.topics])
    for t in req.topics:
        parts = []
        for p in t.partitions:
            if t.topic_id in denied:
                err, msg = ErrorCode.TOPIC_AUTHORIZATION_FAILED, None
            else:
                err, msg = sc.acknowledge(gid, mid, t.topic_id, p.partition_index, p.acknowledgement_batches,
                                          renew=ctx.api_version >= 2)
            parts.append(PD(partition_index=p.partition_index, error_code=err, error_message=msg,
                            current_leader=PD.LeaderIdAndEpoch(leader_id=b.node_id, leader_epoch=0)))
        responses.append(R.ShareAcknowledgeTopicResponse(topic_id=t.topic_id, partitions=parts))
    if epoch == FINAL_EPOCH and session is not None:
        sc.close_session(session)
    return R(throttle_time_ms=0, error_code=0, acquisition_lock_timeout_ms=lock_ms, responses=responses,
             node_endpoints=[])
