"""CreateDelegationToken (key 38), versions 0-3, flexible from 2 (KIP-48, KIP-373).

Kafka 4.0 removed v0 (KIP-896): the broker serves 1-3. v3 names an owner other than the
requester (``owner_principal_*``, null or empty name: the requester) and answers with the
requester (``token_requester_*``). ``max_lifetime_ms`` <= 0 takes the broker's
``delegation.token.max.lifetime.ms``. Errors: DELEGATION_TOKEN_AUTH_DISABLED (no secret key),
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED (PLAINTEXT, one-way SSL or a token-authenticated
connection), DELEGATION_TOKEN_AUTHORIZATION_FAILED (another owner without CREATE_TOKENS on
that user), INVALID_PRINCIPAL_TYPE (a renewer that is not a User); an error answers the owner
with timestamps -1, an empty token id and an empty HMAC.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(38, "CreateDelegationToken", valid="0-3", flexible="2+", request=[
    F("owner_principal_type", "string", "3+", nullable="3+", default=None),
    F("owner_principal_name", "string", "3+", nullable="3+", default=None),
    F("renewers", "[]CreatableRenewers", "0+", fields=[
        F("principal_type", "string", "0+"),
        F("principal_name", "string", "0+"),
    ]),
    F("max_lifetime_ms", "int64", "0+"),
], response=[
    F("error_code", "int16", "0+"),
    F("principal_type", "string", "0+"),
    F("principal_name", "string", "0+"),
    F("token_requester_principal_type", "string", "3+", default=""),
    F("token_requester_principal_name", "string", "3+", default=""),
    F("issue_timestamp_ms", "int64", "0+"),
    F("expiry_timestamp_ms", "int64", "0+"),
    F("max_timestamp_ms", "int64", "0+"),
    F("token_id", "string", "0+"),
    F("hmac", "bytes", "0+"),
    F("throttle_time_ms", "int32", "0+"),
])

CreateDelegationTokenRequest, CreateDelegationTokenResponse = compile_api(API)
