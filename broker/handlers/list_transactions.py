"""ListTransactions (66) v0-2: the transactional ids this coordinator knows (KIP-664).

Filters: state names (names the coordinator does not know come back in
``unknown_state_filters``), producer ids, and from v1 (KIP-994) ``duration_filter``: only
transactions running for longer than that many ms (-1: all), and from v2 (KIP-1152)
``transactional_id_pattern``: a regular expression a whole transactional id must match.
"""
from broker.registry import handles
from broker.security.api_acls import active
from protocol.errors import ErrorCode as E
from protocol.messages.list_transactions import ListTransactionsResponse as R


@handles(66)
async def handle(ctx, req):
    b = ctx.broker
    if b.txn is None:
        return R(throttle_time_ms=0, error_code=E.COORDINATOR_NOT_AVAILABLE)
    err, unknown, found = b.txn.handle_list(req.producer_id_filters, req.state_filters,
                                            req.duration_filter if ctx.api_version >= 1 else -1,
                                            req.transactional_id_pattern if ctx.api_version >= 2 else None)
    az = active(ctx)
    if az is not None:
        found = [f for f in found if az.allowed("transactional_id", f[0])]
    return R(throttle_time_ms=0, error_code=err, unknown_state_filters=unknown, transaction_states=[
        R.TransactionState(transactional_id=tid, producer_id=pid, transaction_state=state)
        for tid, pid, state in found])
