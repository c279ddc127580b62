"""RenewDelegationToken (key 39), versions 0-2, flexible from 2 (KIP-48).

Kafka 4.0 removed v0 (KIP-896): the broker serves 1-2. The token is named by its HMAC. The
new expiry is now + min(``renew_period_ms`` when > 0, ``delegation.token.expiry.time.ms``),
never past the token's max timestamp. Errors: DELEGATION_TOKEN_AUTH_DISABLED,
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, DELEGATION_TOKEN_NOT_FOUND, DELEGATION_TOKEN_EXPIRED,
DELEGATION_TOKEN_OWNER_MISMATCH (neither owner nor renewer); an error answers expiry -1
where Kafka's broker refuses it, 0 where its controller does.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(39, "RenewDelegationToken", valid="0-2", flexible="2+", request=[
    F("hmac", "bytes", "0+"),
    F("renew_period_ms", "int64", "0+"),
], response=[
    F("error_code", "int16", "0+"),
    F("expiry_timestamp_ms", "int64", "0+"),
    F("throttle_time_ms", "int32", "0+"),
])

RenewDelegationTokenRequest, RenewDelegationTokenResponse = compile_api(API)
