"""DescribeTransactions (65) v0: the coordinator's state of each transactional id (KIP-664).

Unknown (or expiring) ids get TRANSACTIONAL_ID_NOT_FOUND, "" INVALID_REQUEST. The partitions
listed are those of the open transaction (while it completes: those still without a marker).
"""
from broker.registry import handles
from broker.security.api_acls import active
from protocol.errors import ErrorCode as E
from protocol.messages.describe_transactions import DescribeTransactionsResponse as R


@handles(65)
async def handle(ctx, req):
    b = ctx.broker
    states = []
    az = active(ctx)
    for tid in req.transactional_ids:
        if az is not None and not az.allowed("transactional_id", tid):
            states.append(R.TransactionState(error_code=E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, transactional_id=tid))
            continue
        if b.txn is None:
            states.append(R.TransactionState(error_code=E.COORDINATOR_NOT_AVAILABLE, transactional_id=tid))
            continue
        d = b.txn.handle_describe(tid)
        if d.error:
            # Kafka fills nothing but the code and the id: every other field keeps its zero default
            states.append(R.TransactionState(error_code=d.error, transactional_id=tid, transaction_state="",
                                             transaction_timeout_ms=0, transaction_start_time_ms=0,
                                             producer_id=0, producer_epoch=0, topics=[]))
            continue
        by_topic: dict[str, list[int]] = {}
        for topic, p in d.partitions:
            if az is None or az.allowed("topic", topic):  # only partitions the caller may describe
                by_topic.setdefault(topic, []).append(p)
        states.append(R.TransactionState(
            error_code=d.error, transactional_id=tid, transaction_state=d.state,
            transaction_timeout_ms=d.timeout_ms, transaction_start_time_ms=d.start_time_ms,
            producer_id=d.producer_id, producer_epoch=d.producer_epoch,
            topics=[R.TransactionState.TopicData(topic=t, partitions=ps) for t, ps in by_topic.items()]))
    return R(throttle_time_ms=0, transaction_states=states)
