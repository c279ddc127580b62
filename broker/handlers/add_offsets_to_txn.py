"""AddOffsetsToTxn (25) v0-4: the group's ``__consumer_offsets`` partition joins the transaction.

A producer about to send TxnOffsetCommit for ``group_id`` adds the partition that holds the
group (created now if the offsets topic does not exist yet, as the group's FindCoordinator
would). Errors as AddPartitionsToTxn's; PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2.
"""
from broker.groups.offsets_log import GROUP_METADATA_TOPIC_NAME
from broker.registry import handles
from broker.security.api_acls import active
from broker.transactions.metadata import TV_0
from protocol.errors import ErrorCode as E
from protocol.messages.add_offsets_to_txn import AddOffsetsToTxnResponse as R


@handles(25)
async def handle(ctx, req):
    b = ctx.broker
    az = active(ctx)
    if az is not None:
        if not az.allowed("transactional_id", req.transactional_id):
            return R(throttle_time_ms=0, error_code=E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if not az.allowed("group", req.group_id):
            return R(throttle_time_ms=0, error_code=E.GROUP_AUTHORIZATION_FAILED)
    if b.txn is None or b.groups is None:
        return R(throttle_time_ms=0, error_code=E.COORDINATOR_NOT_AVAILABLE)
    try:
        b.groups.ensure_offsets_topic()
    except Exception:
        return R(throttle_time_ms=0, error_code=E.COORDINATOR_NOT_AVAILABLE)
    tp = (GROUP_METADATA_TOPIC_NAME, b.groups.partition_for(req.group_id))
    err = b.txn.handle_add_partitions(req.transactional_id, req.producer_id, req.producer_epoch, [tp], TV_0)
    if err == E.PRODUCER_FENCED and ctx.api_version < 2:
        err = E.INVALID_PRODUCER_EPOCH
    return R(throttle_time_ms=0, error_code=err)
