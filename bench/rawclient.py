"""A minimal pipelining Kafka client over our own codec, for benchmarks that need to send
exactly the bytes they mean (1 MiB batches, big fetches) without a client library's overhead."""
from __future__ import annotations

import socket
import struct

from protocol.api_keys import APIS
from protocol.header import RequestHeader, encode_request_header, response_header_version


class RawClient:
    def __init__(self, bootstrap: str, timeout: float = 30.0):
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.cid = 0

    def close(self):
        self.sock.close()

    def send(self, api_key: int, version: int, body) -> None:
        spec = APIS[api_key]
        self.cid += 1
        hdr = RequestHeader(request_api_key=api_key, request_api_version=version, correlation_id=self.cid,
                            client_id="hourglass-bench")
        payload = [encode_request_header(hdr, 2 if spec.flexible(version) else 1), *spec.request.encode_parts(body, version)]
        size = sum(map(len, payload))
        self.sock.sendall(struct.pack(">i", size) + b"".join(payload))

    def recv(self, api_key: int, version: int):
        spec = APIS[api_key]
        (size,) = struct.unpack(">i", self._exact(4))
        frame = memoryview(self._exact(size))
        pos = 4 + (1 if response_header_version(api_key, spec.flexible(version)) == 1 else 0)
        return spec.response.decode(frame, version, pos)[0]

    def request(self, api_key: int, version: int, body):
        self.send(api_key, version, body)
        return self.recv(api_key, version)

    def read_partition(self, topic: str, partition: int = 0, max_bytes: int = 32 << 20):
        """Yield the raw record bytes of one partition from offset 0, ``max_bytes`` per Fetch
        (v12), until a fetch returns nothing."""
        from protocol.messages.fetch import FetchRequest as FR
        from protocol.records import iter_batch_positions
        offset = 0
        while True:
            f = self.request(1, 12, FR(
                replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=max_bytes, isolation_level=0, session_id=0,
                session_epoch=-1, topics=[FR.FetchTopic(topic=topic, partitions=[FR.FetchPartition(
                    partition=partition, current_leader_epoch=-1, fetch_offset=offset, log_start_offset=-1,
                    partition_max_bytes=max_bytes)])], forgotten_topics_data=[], rack_id=""))
            data = bytes(f.responses[0].partitions[0].records)
            if not data:
                return
            yield data
            for _, h in iter_batch_positions(data):
                offset = h.next_offset

    def _exact(self, n: int) -> bytes:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            k = self.sock.recv_into(view[got:])
            if not k:
                raise ConnectionError("closed by peer")
            got += k
        return bytes(buf)
