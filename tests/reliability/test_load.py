"""Load and limits that fit a test run: many connections, a consumer that never reads (write
back-pressure), slowloris clients, connection limits, and ``socket.request.max.bytes`` checked
before anything is allocated."""
from __future__ import annotations

import socket
import struct
import time

from protocol.api_keys import APIS
from protocol.messages.api_versions import ApiVersionsRequest
from protocol.messages.fetch import FetchRequest
from tests.reliability.wire import Wire


def _rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _api_versions_frame(cid: int) -> bytes:
    body = APIS[18].request.encode(ApiVersionsRequest(), 0)
    payload = struct.pack(">hhi", 18, 0, cid) + b"\x00\x01x" + body
    return struct.pack(">i", len(payload)) + payload


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(seconds)
    try:
        while True:
            if sock.recv(4096) == b"":
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def test_300_concurrent_connections_are_all_served(rbroker):
    b = rbroker()
    host, port = b.bootstrap.rsplit(":", 1)
    socks = [socket.create_connection((host, int(port)), timeout=20) for _ in range(300)]
    try:
        for i, s in enumerate(socks):
            s.sendall(_api_versions_frame(i))
        for i, s in enumerate(socks):
            head = b""
            while len(head) < 8:
                chunk = s.recv(8 - len(head))
                assert chunk, f"connection {i} closed"
                head += chunk
            assert struct.unpack(">ii", head)[1] == i
    finally:
        for s in socks:
            s.close()
    c = Wire(b.bootstrap)
    assert c.create_topic("after-load") == [0]
    c.close()


def test_consumer_that_never_reads_does_not_grow_broker_memory(rbroker):
    """Write back-pressure: 400 pipelined 1 MiB fetches (~400 MiB of answers) from a client
    that never reads leave the broker's memory flat and other clients served."""
    b = rbroker()
    c = Wire(b.bootstrap)
    c.create_topic("big")
    chunk = [b"x" * 60_000] * 16
    for _ in range(2):
        assert c.produce("big", 0, chunk).error_code == 0
    rss0 = _rss_kb(b.proc.pid)
    host, port = b.bootstrap.rsplit(":", 1)
    slow = socket.socket()
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow.connect((host, int(port)))
    slow.setblocking(False)
    req = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0, topics=[
        FetchRequest.FetchTopic(topic="big", partitions=[FetchRequest.FetchPartition(
            partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])])
    frames = b"".join(struct.pack(">i", len(p)) + p for p in (c.encode(1, 11, req) for _ in range(400)))
    sent = 0
    deadline = time.monotonic() + 5
    while sent < len(frames) and time.monotonic() < deadline:
        try:
            sent += slow.send(frames[sent:])
        except BlockingIOError:
            time.sleep(0.01)   # the broker stopped reading our requests: back-pressure works
    time.sleep(1.0)
    grown_mb = (_rss_kb(b.proc.pid) - rss0) / 1024
    assert grown_mb < 64, f"broker memory grew {grown_mb:.0f} MiB for a client that never reads"
    other = Wire(b.bootstrap)
    recs, _lso, hwm = other.read_all("big", 0)
    assert hwm == 32 and len(recs) == 32
    other.close()
    slow.close()
    c.close()


def test_slowloris_frames_and_idle_connections_are_closed(rbroker):
    # regression: a client stalling inside the 4-byte size prefix was only subject to the
    # (long) idle timeout, not to request.read.timeout.ms
    b = rbroker({"request.read.timeout.ms": 500, "connections.max.idle.ms": 60000})
    host, port = b.bootstrap.rsplit(":", 1)
    in_prefix = socket.create_connection((host, int(port)))
    in_prefix.sendall(b"\x00\x00")                    # half a size prefix, then nothing
    in_body = socket.create_connection((host, int(port)))
    in_body.sendall(struct.pack(">i", 100) + b"\x00\x12")  # a body that never completes
    t0 = time.monotonic()
    assert _closed_within(in_prefix, 5) and _closed_within(in_body, 5)
    assert time.monotonic() - t0 < 3, "stalled frames must go after request.read.timeout.ms"
    b = rbroker({"request.read.timeout.ms": 500, "connections.max.idle.ms": 1500})
    host, port = b.bootstrap.rsplit(":", 1)
    idle = socket.create_connection((host, int(port)))
    busy = Wire(b.bootstrap)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 2.5:           # a client that keeps talking is never idle
        assert busy.create_topic("slow") == [0]
        time.sleep(0.2)
    assert _closed_within(idle, 6)
    busy.close()


def test_max_connections_per_ip_and_total(rbroker):
    b = rbroker({"max.connections.per.ip": 4})
    host, port = b.bootstrap.rsplit(":", 1)
    kept = [Wire(b.bootstrap) for _ in range(4)]
    for w in kept:
        w.create_topic("limits")
    extra = socket.create_connection((host, int(port)))
    assert _closed_within(extra, 5)
    kept[0].close()
    time.sleep(0.2)
    again = Wire(b.bootstrap)
    assert again.create_topic("limits") == [0]
    for w in kept[1:] + [again]:
        w.close()
    b2 = rbroker({"max.connections": 3})
    kept = [Wire(b2.bootstrap) for _ in range(3)]
    for w in kept:
        w.create_topic("limits")
    host, port = b2.bootstrap.rsplit(":", 1)
    assert _closed_within(socket.create_connection((host, int(port))), 5)
    for w in kept:
        w.close()


def test_request_max_bytes_is_enforced_before_allocation(rbroker):
    b = rbroker({"socket.request.max.bytes": 1000})
    host, port = b.bootstrap.rsplit(":", 1)
    rss0 = _rss_kb(b.proc.pid)
    over = socket.create_connection((host, int(port)))
    over.sendall(struct.pack(">i", 1001) + b"\x00" * 500)
    assert _closed_within(over, 5)
    socks = []
    for _ in range(50):       # claims of 2 GiB each: nothing may be reserved for them
        s = socket.create_connection((host, int(port)))
        s.sendall(struct.pack(">i", 2**31 - 1))
        socks.append(s)
    assert all(_closed_within(s, 5) for s in socks)
    assert (_rss_kb(b.proc.pid) - rss0) < 32 * 1024
    ok = Wire(b.bootstrap)
    assert ok.create_topic("fine") == [0]
    ok.close()
