"""EndTxn (26) v0-5: commit or abort the producer's transaction.

The coordinator writes PrepareCommit/PrepareAbort, answers, then writes a marker into every
partition of the transaction and CompleteCommit/CompleteAbort (broker.transactions.coordinator).
Errors: INVALID_TXN_STATE (no transaction open, or the other outcome already decided),
CONCURRENT_TRANSACTIONS (the same outcome still completing: retry), INVALID_PRODUCER_ID_MAPPING,
PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2). A retry of a completed commit (or abort)
succeeds again. v5 is transaction version 2: the epoch is bumped and the new producer id and
epoch are answered.
"""
from broker.registry import handles
from broker.security.api_acls import active
from broker.transactions.metadata import TV_0, TV_2
from protocol.errors import ErrorCode as E
from protocol.messages.end_txn import EndTxnResponse as R


@handles(26)
async def handle(ctx, req):
    b = ctx.broker
    v = ctx.api_version
    az = active(ctx)
    if az is not None and not az.allowed("transactional_id", req.transactional_id):
        return R(throttle_time_ms=0, error_code=E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, producer_id=-1,
                 producer_epoch=-1)
    if b.txn is None:
        return R(throttle_time_ms=0, error_code=E.COORDINATOR_NOT_AVAILABLE)
    res = b.txn.handle_end_txn(req.transactional_id, req.producer_id, req.producer_epoch, req.committed,
                               TV_2 if v >= 5 else TV_0)
    err = res.error
    if err == E.PRODUCER_FENCED and v < 2:
        err = E.INVALID_PRODUCER_EPOCH
    return R(throttle_time_ms=0, error_code=err, producer_id=res.producer_id, producer_epoch=res.producer_epoch)
