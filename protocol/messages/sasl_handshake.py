"""SaslHandshake (key 17), versions 0-1, never flexible.

The client names a SASL mechanism; the broker answers the mechanisms it enables
(UNSUPPORTED_SASL_MECHANISM if not among them).
- v0: after the handshake the SASL tokens follow as raw length-prefixed frames (no Kafka
  request header). v1 (KIP-152): tokens travel in SaslAuthenticate (key 36) requests.
- Sent before authentication: the only requests allowed then are ApiVersions and this.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(17, "SaslHandshake", valid="0-1", flexible="none", request=[
    F("mechanism", "string", "0+"),
], response=[
    F("error_code", "int16", "0+"),
    F("mechanisms", "[]string", "0+"),
])

SaslHandshakeRequest, SaslHandshakeResponse = compile_api(API)
