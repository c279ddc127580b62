"""A minimal blocking Kafka client over our own codec, for tests that must send exact
requests (hostile frames, chosen versions, duplicate idempotent batches)."""
from __future__ import annotations

import socket
import struct

from protocol.api_keys import APIS
from protocol.header import RequestHeader, encode_request_header, response_header_version


class RawClient:
    def __init__(self, bootstrap: str, client_id: str = "raw-test", timeout: float = 10.0):
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.client_id = client_id
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def send_frame(self, payload: bytes) -> None:
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)

    def recv_frame(self) -> bytes:
        head = self._recv_exact(4)
        (n,) = struct.unpack(">i", head)
        return self._recv_exact(n)

    def _recv_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("connection closed by broker")
            buf += chunk
        return bytes(buf)

    def is_closed_by_peer(self, timeout: float = 5.0) -> bool:
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False

    def encode(self, api_key: int, version: int, body) -> bytes:
        spec = APIS[api_key]
        self.correlation_id += 1
        hdr = RequestHeader(request_api_key=api_key, request_api_version=version,
                            correlation_id=self.correlation_id, client_id=self.client_id)
        return encode_request_header(hdr, 2 if spec.flexible(version) else 1) + spec.request.encode(body, version)

    def recv_response(self, api_key: int, version: int):
        """The response to the last request sent with ``send_frame(encode(...))``."""
        spec = APIS[api_key]
        frame = memoryview(self.recv_frame())
        (cid,) = struct.unpack_from(">i", frame, 0)
        assert cid == self.correlation_id, (cid, self.correlation_id)
        pos = 4 + (1 if response_header_version(api_key, spec.flexible(version)) == 1 else 0)
        return spec.response.decode(frame, version, pos)[0]

    def request(self, api_key: int, version: int, body, *, expect_response: bool = True):
        spec = APIS[api_key]
        self.send_frame(self.encode(api_key, version, body))
        if not expect_response:
            return None
        frame = memoryview(self.recv_frame())
        (cid,) = struct.unpack_from(">i", frame, 0)
        assert cid == self.correlation_id, (cid, self.correlation_id)
        pos = 4 + (1 if response_header_version(api_key, spec.flexible(version)) == 1 else 0)
        resp, end = spec.response.decode(frame, version, pos)
        assert end == len(frame)
        return resp
