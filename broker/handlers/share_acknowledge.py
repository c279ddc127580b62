"""ShareAcknowledge (79) v1-2: acknowledgements of a share-group member without fetching
(KIP-932). The share session must exist and the epoch be its next one (0 is refused with
INVALID_SHARE_SESSION_EPOCH: a session is opened by ShareFetch); -1 acknowledges, then
closes the session and releases what the member still holds. Per partition:
INVALID_RECORD_STATE for a record the member does not hold (never acquired, released, lock
expired), UNKNOWN_TOPIC_ID, INVALID_REQUEST for a malformed batch."""
from broker.registry import handles
from broker.share.coordinator import FINAL_EPOCH, ShareError
from protocol.errors import ErrorCode
from protocol.messages.share_acknowledge import ShareAcknowledgeResponse as R

PD = R.ShareAcknowledgeTopicResponse.PartitionData


@handles(79)
async def handle(ctx, req):
    b = ctx.broker
    sc = b.share_groups
    gid, mid, epoch = req.group_id, req.member_id, req.share_session_epoch
    lock_ms = sc.group_config(gid, "share.record.lock.duration.ms") if gid else 0

    def top(code, msg=None):
        return R(throttle_time_ms=0, error_code=code, error_message=msg, acquisition_lock_timeout_ms=lock_ms,
                 responses=[], node_endpoints=[])

    if not gid or not mid:
        return top(ErrorCode.INVALID_REQUEST, "Group id and member id must be set.")
    try:
        session = sc.session_for(gid, mid, epoch, fetch=False)
    except ShareError as exc:
        return top(exc.code, exc.message)
    if session is not None:
        session.conn = ctx.conn
    responses = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            err, msg = sc.acknowledge(gid, mid, t.topic_id, p.partition_index, p.acknowledgement_batches)
            parts.append(PD(partition_index=p.partition_index, error_code=err, error_message=msg,
                            current_leader=PD.LeaderIdAndEpoch(leader_id=b.node_id, leader_epoch=0)))
        responses.append(R.ShareAcknowledgeTopicResponse(topic_id=t.topic_id, partitions=parts))
    if epoch == FINAL_EPOCH and session is not None:
        sc.close_session(session)
    return R(throttle_time_ms=0, error_code=0, acquisition_lock_timeout_ms=lock_ms, responses=responses,
             node_endpoints=[])
