"""CreateDelegationToken (38) v1-3 (Kafka 4.0 removed v0): a token for the requester, or (v3)
for another owner.

Kafka 4.4's order: a connection that may not ask for tokens (PLAINTEXT, one-way SSL, a token
login) answers DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, another owner without CREATE_TOKENS on
that user DELEGATION_TOKEN_AUTHORIZATION_FAILED and a renewer that is not a User
INVALID_PRINCIPAL_TYPE, each with times -1 (Kafka's broker); then tokens off answers
DELEGATION_TOKEN_AUTH_DISABLED with times 0 (its controller). The token is stored durably
before the answer.
"""
from broker.registry import handles
from broker.security.delegation import USER_TYPE, allow_token_requests, new_token, principal_parts
from protocol.errors import ErrorCode as E
from protocol.messages.create_delegation_token import CreateDelegationTokenResponse as R


def _answer(ctx, error: int, owner: str, requester: str, times: int = -1, **token) -> R:
    otype, oname = principal_parts(owner)
    rtype, rname = principal_parts(requester)
    r = R(error_code=error, principal_type=otype, principal_name=oname, issue_timestamp_ms=times,
          expiry_timestamp_ms=times, max_timestamp_ms=times, token_id="", hmac=b"", throttle_time_ms=0)
    if ctx.api_version >= 3:
        r.token_requester_principal_type, r.token_requester_principal_name = rtype, rname
    for k, v in token.items():
        setattr(r, k, v)
    return r


@handles(38, min_version=1)
async def handle(ctx, req):
    requester = ctx.authz.principal
    name = getattr(req, "owner_principal_name", None)
    owner = f"{req.owner_principal_type}:{name}" if name else requester
    if not allow_token_requests(ctx.security_protocol, requester, ctx.token_authenticated):
        return _answer(ctx, E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, owner, requester)
    if owner != requester and not ctx.authz.allowed("owner", owner):
        return _answer(ctx, E.DELEGATION_TOKEN_AUTHORIZATION_FAILED, owner, requester)
    if any(r.principal_type != USER_TYPE for r in req.renewers):
        return _answer(ctx, E.INVALID_PRINCIPAL_TYPE, owner, requester)
    store = ctx.broker.security.tokens
    if not store.settings.enabled:
        return _answer(ctx, E.DELEGATION_TOKEN_AUTH_DISABLED, owner, requester, 0)
    token = new_token(store.settings, ctx.broker.clock.now_ms(), owner, requester,
                      [f"{r.principal_type}:{r.principal_name}" for r in req.renewers], req.max_lifetime_ms)
    store.put(token)
    return _answer(ctx, 0, owner, requester, issue_timestamp_ms=token.issue_ms, expiry_timestamp_ms=token.expiry_ms,
                   max_timestamp_ms=token.max_ms, token_id=token.token_id, hmac=store.hmac(token.token_id))
