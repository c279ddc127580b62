"""The ingest floor: a bare uvloop server that only reads length-prefixed frames and appends
them to a file, and a client that sends 1 MiB frames as fast as it can over one connection.
Whatever a Kafka broker does per byte comes on top of this, so Hourglass's 1 MiB-batch ingest
is reported as a ratio to it, measured in the same run.

    .venv/bin/python bench/floor_probe.py [--mib 512] [--frame-kib 1024]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import socket
import struct
import tempfile
import threading
import time


async def _serve(path: str, ready: threading.Event, port_box: list):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        try:
            while True:
                (n,) = struct.unpack(">i", await reader.readexactly(4))
                if n == 0:  # end of stream: acknowledge
                    writer.write(b"\x01")
                    await writer.drain()
                    return
                os.write(fd, await reader.readexactly(n))
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, limit=1 << 20)
    port_box.append(server.sockets[0].getsockname()[1])
    ready.set()
    await server.serve_forever()


def measure(total_mib: int = 512, frame_kib: int = 1024) -> float:
    """MB/s the bare server ingests; the server runs in its own process, like a broker."""
    import subprocess
    import sys
    d = tempfile.mkdtemp(prefix="floor-")
    server = subprocess.Popen([sys.executable, __file__, "--serve", os.path.join(d, "sink")],
                              stdout=subprocess.PIPE, text=True)
    port_box = [int(server.stdout.readline())]
    frame = os.urandom(frame_kib * 1024)
    head = struct.pack(">i", len(frame))
    n = total_mib * 1024 // frame_kib
    s = socket.create_connection(("127.0.0.1", port_box[0]))
    t0 = time.perf_counter()
    for _ in range(n):
        s.sendall(head)
        s.sendall(frame)
    s.sendall(struct.pack(">i", 0))
    assert s.recv(1) == b"\x01"
    dt = time.perf_counter() - t0
    s.close()
    server.terminate()
    server.wait()
    for f in os.listdir(d):
        os.remove(os.path.join(d, f))
    os.rmdir(d)
    return n * len(frame) / dt / 1e6


def serve(path: str) -> None:
    import uvloop
    ready, port_box = threading.Event(), []

    async def main():
        task = asyncio.ensure_future(_serve(path, ready, port_box))
        while not port_box:
            await asyncio.sleep(0.001)
        print(port_box[0], flush=True)
        await task
    uvloop.run(main())


if __name__ == "__main__":
    import sys
    if len(sys.argv) == 3 and sys.argv[1] == "--serve":
        serve(sys.argv[2])
        raise SystemExit(0)
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=512)
    ap.add_argument("--frame-kib", type=int, default=1024)
    a = ap.parse_args()
    print(f"floor_ingest_{a.frame_kib}KiB_frames {measure(a.mib, a.frame_kib):.1f} MB/s")
