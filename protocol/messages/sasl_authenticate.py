"""SaslAuthenticate (key 36), versions 0-2, flexible from 2.

After SaslHandshake v1 (KIP-152) the client sends each SASL token in one of these; the broker
answers with its token (``auth_bytes``) or an error. v1 adds ``session_lifetime_ms`` (KIP-368):
how long the authenticated session may live before the client must re-authenticate (0: no
limit), answered only when the exchange completes.
- A failed exchange answers SASL_AUTHENTICATION_FAILED (58) with a message, then the broker
  closes the connection.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(36, "SaslAuthenticate", valid="0-2", flexible="2+", request=[
    F("auth_bytes", "bytes", "0+"),
], response=[
    F("error_code", "int16", "0+"),
    F("error_message", "string", "0+", nullable="0+", default=None),
    F("auth_bytes", "bytes", "0+"),
    F("session_lifetime_ms", "int64", "1+", default=0),
])

SaslAuthenticateRequest, SaslAuthenticateResponse = compile_api(API)
