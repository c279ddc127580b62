"""DescribeDelegationToken (41) v1-3 (Kafka 4.0 removed v0): the tokens the caller may see.

DELEGATION_TOKEN_REQUEST_NOT_ALLOWED on a connection that may not ask for tokens, then
DELEGATION_TOKEN_AUTH_DISABLED when tokens are off; an empty owner list answers no token.
Which tokens are listed: ``broker.security.delegation.visible`` (ACL rows ``token`` and
``owner``). Tokens are listed oldest first (Kafka lists them in its cache's hash order).
"""
from broker.registry import handles
from broker.security.delegation import allow_token_requests, principal_parts, visible
from protocol.errors import ErrorCode as E
from protocol.messages.describe_delegation_token import DescribeDelegationTokenResponse as R


@handles(41, min_version=1)
async def handle(ctx, req):
    requester = ctx.authz.principal
    if not allow_token_requests(ctx.security_protocol, requester, ctx.token_authenticated):
        return R(error_code=E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, tokens=[], throttle_time_ms=0)
    store = ctx.broker.security.tokens
    if not store.settings.enabled:
        return R(error_code=E.DELEGATION_TOKEN_AUTH_DISABLED, tokens=[], throttle_time_ms=0)
    owners = None if req.owners is None else [f"{o.principal_type}:{o.principal_name}" for o in req.owners]
    out = []
    if owners != []:
        for t in sorted(store.tokens.values(), key=lambda t: (t.issue_ms, t.token_id)):
            if not visible(t, requester, owners, lambda tid: ctx.authz.allowed("token", tid),
                           lambda owner: ctx.authz.allowed("owner", owner)):
                continue
            otype, oname = principal_parts(t.owner)
            d = R.DescribedDelegationToken(
                principal_type=otype, principal_name=oname, issue_timestamp=t.issue_ms, expiry_timestamp=t.expiry_ms,
                max_timestamp=t.max_ms, token_id=t.token_id, hmac=store.hmac(t.token_id),
                renewers=[R.DescribedDelegationTokenRenewer(principal_type=p[0], principal_name=p[1])
                          for p in map(principal_parts, t.renewers)])
            if ctx.api_version >= 3:
                d.token_requester_principal_type, d.token_requester_principal_name = principal_parts(t.requester)
            out.append(d)
    return R(error_code=0, tokens=out, throttle_time_ms=0)
