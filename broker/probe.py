"""``hourglass probe``: is a Kafka endpoint answering? One ApiVersions v0 request over a plain
socket (the container healthcheck; no client library needed, works against any Kafka).

Exit 0 when the broker answers with error code 0, 1 otherwise, with one line saying why.
"""
from __future__ import annotations

import socket
import struct
import sys

from protocol.api_keys import APIS
from protocol.header import RequestHeader, encode_request_header

API_VERSIONS = 18


def probe(host: str, port: int, timeout: float = 3.0) -> tuple[bool, str]:
    spec = APIS[API_VERSIONS]
    body = encode_request_header(RequestHeader(request_api_key=API_VERSIONS, request_api_version=0,
                                               correlation_id=1, client_id="hourglass-probe"), 1)
    body += spec.request.encode(spec.request.cls(), 0)
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(struct.pack(">i", len(body)) + body)
            buf = b""
            while len(buf) < 4 or len(buf) < 4 + struct.unpack_from(">i", buf)[0]:
                chunk = s.recv(65536)
                if not chunk:
                    return False, "connection closed before an answer"
                buf += chunk
    except OSError as exc:
        return False, f"cannot reach {host}:{port}: {exc}"
    resp, _ = spec.response.decode(memoryview(buf)[4:], 0, 4)  # response header v0: correlation id
    if resp.error_code != 0:
        return False, f"ApiVersions answered error {resp.error_code}"
    return True, f"{host}:{port} answers {len(resp.api_keys)} APIs"


def main(bootstrap: str, timeout: float) -> int:
    host, _, port = bootstrap.rpartition(":")
    ok, detail = probe(host or "localhost", int(port), timeout)
    print(detail, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1
