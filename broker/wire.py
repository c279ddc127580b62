"""A minimal blocking Kafka client over our own codec, for the command line tools that need
APIs the client libraries do not expose (``hourglass probe``, ``hourglass transactions``).

One connection, one request at a time: ``request(api_key, version, body)`` sends the request
with header v1/v2 (as the version is flexible or not) and returns the decoded response,
checking the correlation id; ApiVersions responses use header v0 as Kafka's do.
"""
from __future__ import annotations

import socket
import struct

from protocol.api_keys import APIS
from protocol.header import RequestHeader, encode_request_header, response_header_version

_SIZE = struct.Struct(">i")


class WireError(Exception):
    """The broker could not be reached, or closed the connection."""


class WireClient:
    def __init__(self, bootstrap: str, client_id: str = "hourglass-cli", timeout: float = 10.0):
        host, _, port = bootstrap.rpartition(":")
        self.address = f"{host or 'localhost'}:{port}"
        try:
            self.sock = socket.create_connection((host or "localhost", int(port)), timeout=timeout)
        except (OSError, ValueError) as exc:
            raise WireError(f"cannot reach {bootstrap}: {exc}") from None
        self.client_id = client_id
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "WireClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def request(self, api_key: int, version: int, body):
        spec = APIS[api_key]
        self.correlation_id += 1
        flexible = spec.flexible(version)
        hdr = RequestHeader(request_api_key=api_key, request_api_version=version,
                            correlation_id=self.correlation_id, client_id=self.client_id)
        payload = encode_request_header(hdr, 2 if flexible else 1) + spec.request.encode(body, version)
        try:
            self.sock.sendall(_SIZE.pack(len(payload)) + payload)
            (n,) = _SIZE.unpack(self._recv_exact(4))
            frame = memoryview(self._recv_exact(n))
        except OSError as exc:
            raise WireError(f"{self.address}: {exc}") from None
        (cid,) = _SIZE.unpack_from(frame, 0)
        if cid != self.correlation_id:
            raise WireError(f"{self.address}: answer to request {cid}, expected {self.correlation_id}")
        pos = 4 + (1 if response_header_version(api_key, flexible) == 1 else 0)
        return spec.response.decode(frame, version, pos)[0]

    def _recv_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise WireError(f"{self.address}: connection closed by the broker")
            buf += chunk
        return bytes(buf)
