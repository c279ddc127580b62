"""ExpireDelegationToken (key 40), versions 0-2, flexible from 2 (KIP-48).

Kafka 4.0 removed v0 (KIP-896): the broker serves 1-2. The token is named by its HMAC.
``expiry_time_period_ms`` < 0 removes the token at once (expiry = now); otherwise the expiry
becomes min(max timestamp, now + period). Errors as RenewDelegationToken's.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(40, "ExpireDelegationToken", valid="0-2", flexible="2+", request=[
    F("hmac", "bytes", "0+"),
    F("expiry_time_period_ms", "int64", "0+"),
], response=[
    F("error_code", "int16", "0+"),
    F("expiry_timestamp_ms", "int64", "0+"),
    F("throttle_time_ms", "int32", "0+"),
])

ExpireDelegationTokenRequest, ExpireDelegationTokenResponse = compile_api(API)
