"""ExpireDelegationToken (40) v1-2 (Kafka 4.0 removed v0): bring a token's expiry forward, or
(a negative period) remove it at once.

Refusals as RenewDelegationToken's (``broker.security.delegation.expiration``); the change is
stored durably before the answer.
"""
from broker.registry import handles
from broker.security.delegation import expiration, refusal
from protocol.messages.expire_delegation_token import ExpireDelegationTokenResponse as R


@handles(40, min_version=1)
async def handle(ctx, req):
    principal, store = ctx.authz.principal, ctx.broker.security.tokens
    refused = refusal(ctx.security_protocol, principal, ctx.token_authenticated, store.settings)
    if refused is not None:
        return R(error_code=refused[0], expiry_timestamp_ms=refused[1], throttle_time_ms=0)
    token = store.by_hmac(req.hmac)
    error, expiry, remove = expiration(token, principal, req.expiry_time_period_ms, ctx.broker.clock.now_ms())
    if remove:
        store.remove([token.token_id])
    elif error == 0:
        store.put(token._replace(expiry_ms=expiry))
    return R(error_code=error, expiry_timestamp_ms=expiry, throttle_time_ms=0)
