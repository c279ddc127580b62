"""Request and response headers.

Request header v0: api_key, api_version, correlation_id; v1 adds client_id (a nullable
*non-compact* string in every version); v2 (flexible requests) adds a tag buffer.
Response header v0: correlation_id; v1 (flexible responses) adds a tag buffer, except that
ApiVersions responses always use v0 so that a client can parse them before it knows our
ranges.
"""
from __future__ import annotations

from protocol.codec import CompiledMessage
from protocol.errors import DecodeError
from protocol.primitives import INT16, INT32
from protocol.schema import F, MessageSpec

API_VERSIONS_KEY = 18

REQUEST_HEADER = MessageSpec("RequestHeader", -1, "header", "0-2", "2+", [
    F("request_api_key", "int16"),
    F("request_api_version", "int16"),
    F("correlation_id", "int32"),
    F("client_id", "string", "1+", nullable="1+", flexible="none", default=None),
])
RESPONSE_HEADER = MessageSpec("ResponseHeader", -1, "header", "0-1", "1+", [
    F("correlation_id", "int32"),
])

_REQ = CompiledMessage(REQUEST_HEADER)
_RESP = CompiledMessage(RESPONSE_HEADER)
RequestHeader = _REQ.cls
ResponseHeader = _RESP.cls


def request_header_version(api_key: int, flexible: bool) -> int:
    return 2 if flexible else 1


def response_header_version(api_key: int, flexible: bool) -> int:
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if flexible else 0


def peek_api(buf) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) from the first 8 bytes of a request frame."""
    if len(buf) < 8:
        raise DecodeError("request shorter than a request header")
    return INT16.unpack_from(buf, 0)[0], INT16.unpack_from(buf, 2)[0], INT32.unpack_from(buf, 4)[0]


def decode_request_header(buf, header_version: int):
    return _REQ.decode(buf, header_version)


def encode_response_header(correlation_id: int, header_version: int) -> bytes:
    if header_version == 0:
        return INT32.pack(correlation_id)
    return INT32.pack(correlation_id) + b"\x00"


def encode_request_header(hdr, header_version: int) -> bytes:
    return _REQ.encode(hdr, header_version)


def decode_response_header(buf, header_version: int):
    return _RESP.decode(buf, header_version)
