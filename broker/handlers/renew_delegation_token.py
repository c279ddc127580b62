"""RenewDelegationToken (39) v1-2 (Kafka 4.0 removed v0): move a token's expiry forward.

Refused as Kafka 4.4 refuses: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED with expiry -1 (its
broker), then DELEGATION_TOKEN_AUTH_DISABLED, NOT_FOUND, EXPIRED or OWNER_MISMATCH with expiry
0 (its controller; ``broker.security.delegation.renewal``). The new expiry is stored durably
before the answer.
"""
from broker.registry import handles
from broker.security.delegation import refusal, renewal
from protocol.messages.renew_delegation_token import RenewDelegationTokenResponse as R


@handles(39, min_version=1)
async def handle(ctx, req):
    principal, store = ctx.authz.principal, ctx.broker.security.tokens
    refused = refusal(ctx.security_protocol, principal, ctx.token_authenticated, store.settings)
    if refused is not None:
        return R(error_code=refused[0], expiry_timestamp_ms=refused[1], throttle_time_ms=0)
    token = store.by_hmac(req.hmac)
    error, expiry = renewal(store.settings, token, principal, req.renew_period_ms, ctx.broker.clock.now_ms())
    if error == 0:
        store.put(token._replace(expiry_ms=expiry))
    return R(error_code=error, expiry_timestamp_ms=expiry, throttle_time_ms=0)
