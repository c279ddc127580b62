"""DescribeDelegationToken (key 41), versions 0-3, flexible from 2 (KIP-48, KIP-373).

Kafka 4.0 removed v0 (KIP-896): the broker serves 1-3. ``owners`` null: every token the caller
may see; empty: none. A token is listed when it is owned or renewable by one of the asked
owners and the caller is its owner or renewer, or holds DESCRIBE on the token or
DESCRIBE_TOKENS on its owner. v3 adds each token's requester.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(41, "DescribeDelegationToken", valid="0-3", flexible="2+", request=[
    F("owners", "[]DescribeDelegationTokenOwner", "0+", nullable="0+", default=None, fields=[
        F("principal_type", "string", "0+"),
        F("principal_name", "string", "0+"),
    ]),
], response=[
    F("error_code", "int16", "0+"),
    F("tokens", "[]DescribedDelegationToken", "0+", fields=[
        F("principal_type", "string", "0+"),
        F("principal_name", "string", "0+"),
        F("token_requester_principal_type", "string", "3+", default=""),
        F("token_requester_principal_name", "string", "3+", default=""),
        F("issue_timestamp", "int64", "0+"),
        F("expiry_timestamp", "int64", "0+"),
        F("max_timestamp", "int64", "0+"),
        F("token_id", "string", "0+"),
        F("hmac", "bytes", "0+"),
        F("renewers", "[]DescribedDelegationTokenRenewer", "0+", fields=[
            F("principal_type", "string", "0+"),
            F("principal_name", "string", "0+"),
        ]),
    ]),
    F("throttle_time_ms", "int32", "0+"),
])

DescribeDelegationTokenRequest, DescribeDelegationTokenResponse = compile_api(API)
