#!/usr/bin/env python3
"""Load and limits, measured against a real broker subprocess (issue: reliability).

    .venv/bin/python scripts/load_limits.py [--connections 1000] [--partitions 10000] [--producers 100]

Prints ``name value unit`` lines:
- N concurrent connections, each sending ApiVersions then Metadata: how many were served,
  wall time, broker RSS and open fds at the peak;
- P partitions (topics of 1000 partitions): create time, Metadata (all topics) size and
  latency, start-up after a clean shutdown to the first answered ApiVersions;
- K producers at once (one connection each, acks=1, 50 batches of 10 records): records
  acknowledged, then every one read back (log end offsets add up).
"""
from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import struct
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.run import Hourglass, create_topic, rss_mib  # noqa: E402
from bench.rawclient import RawClient  # noqa: E402
from protocol.api_keys import APIS  # noqa: E402
from protocol.header import RequestHeader, encode_request_header  # noqa: E402


def emit(name, value, unit):
    print(f"{name} {value:.4g} {unit}", flush=True)


def frame(api_key: int, version: int, body, cid: int) -> bytes:
    spec = APIS[api_key]
    hdr = encode_request_header(RequestHeader(request_api_key=api_key, request_api_version=version,
                                              correlation_id=cid, client_id="load"), 2 if spec.flexible(version) else 1)
    payload = hdr + spec.request.encode(body, version)
    return struct.pack(">i", len(payload)) + payload


async def one_connection(host, port, frames, hold: asyncio.Event) -> bool:
    try:
        r, w = await asyncio.open_connection(host, port)
        for f in frames:
            w.write(f)
            (n,) = struct.unpack(">i", await r.readexactly(4))
            await r.readexactly(n)
        await hold.wait()  # all connections stay open together
        w.close()
        return True
    except (OSError, asyncio.IncompleteReadError):
        return False


async def many_connections(bootstrap: str, n: int, pid: int):
    from protocol.messages.api_versions import ApiVersionsRequest
    from protocol.messages.metadata import MetadataRequest
    host, port = bootstrap.rsplit(":", 1)
    frames = [frame(18, 3, ApiVersionsRequest(client_software_name="load", client_software_version="1"), 1),
              frame(3, 12, MetadataRequest(topics=[], allow_auto_topic_creation=False,
                                           include_topic_authorized_operations=False), 2)]
    hold = asyncio.Event()
    t0 = time.perf_counter()
    tasks = [asyncio.create_task(one_connection(host, int(port), frames, hold)) for _ in range(n)]
    while sum(1 for t in tasks if t.done()) == 0 and time.perf_counter() - t0 < 0.01:
        await asyncio.sleep(0.001)
    await asyncio.sleep(0.5)
    deadline = time.perf_counter() + 60
    # wait until every connection has its two answers (they then wait on `hold`)
    while time.perf_counter() < deadline:
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        if fds >= n:
            break
        await asyncio.sleep(0.05)
    peak_rss, peak_fds = rss_mib(pid), len(os.listdir(f"/proc/{pid}/fd"))
    hold.set()
    ok = sum(await asyncio.gather(*tasks))
    return ok, time.perf_counter() - t0, peak_rss, peak_fds


async def producer(bootstrap, topic, partition, batches, per_batch) -> int:
    from protocol.messages.produce import ProduceRequest as PR
    from protocol.records import build_batch
    host, port = bootstrap.rsplit(":", 1)
    r, w = await asyncio.open_connection(host, int(port))
    acked = 0
    for i in range(batches):
        batch = build_batch([(None, b"v" * 100, int(time.time() * 1000))] * per_batch)
        w.write(frame(0, 9, PR(transactional_id=None, acks=1, timeout_ms=30000, topic_data=[
            PR.TopicProduceData(name=topic, partition_data=[PR.PartitionProduceData(index=partition, records=batch)])]),
            i + 1))
        (n,) = struct.unpack(">i", await r.readexactly(4))
        resp, _ = APIS[0].response.decode(memoryview(await r.readexactly(n)), 9, 5)
        if resp.responses[0].partition_responses[0].error_code == 0:
            acked += per_batch
    w.close()
    return acked


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--connections", type=int, default=1000)
    # 3 open files per partition (segment, offset index, time index): 10000 needs ulimit -n > 30000
    ap.add_argument("--partitions", type=int, default=5000)
    ap.add_argument("--producers", type=int, default=100)
    a = ap.parse_args(argv)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the broker inherits it
    tmp = Path(tempfile.mkdtemp(prefix="hourglass-load-"))
    try:
        hg = Hourglass(tmp / "data", "max.connections=100000", "max.connections.per.ip=100000",
                       "num.partitions=1")
        hg.start()
        ok, secs, rss, fds = asyncio.run(many_connections(hg.bootstrap, a.connections, hg.proc.pid))
        emit(f"connections_{a.connections}_served", ok, "connections")
        emit(f"connections_{a.connections}_wall", secs, "s")
        emit("connections_peak_rss", rss, "MiB")
        emit("connections_peak_fds", fds, "fds")

        topic = "producers"
        c = RawClient(hg.bootstrap)
        create_topic(c, topic, 10)

        async def all_producers():
            return await asyncio.gather(*(producer(hg.bootstrap, topic, i % 10, 50, 10) for i in range(a.producers)))
        t0 = time.perf_counter()
        acked = sum(asyncio.run(all_producers()))
        emit(f"producers_{a.producers}_acked", acked, "records")
        emit(f"producers_{a.producers}_rate", acked / (time.perf_counter() - t0), "records/s")
        from protocol.messages.list_offsets import ListOffsetsRequest as LO
        r = c.request(2, 5, LO(replica_id=-1, isolation_level=0, topics=[LO.ListOffsetsTopic(name=topic, partitions=[
            LO.ListOffsetsPartition(partition_index=p, timestamp=-1) for p in range(10)])]))
        emit(f"producers_{a.producers}_log_end_offsets_sum", sum(p.offset for p in r.topics[0].partitions), "records")

        t0 = time.perf_counter()
        for i in range(a.partitions // 1000):
            create_topic(c, f"many-{i}", 1000)
        emit(f"create_{a.partitions}_partitions", time.perf_counter() - t0, "s")
        from protocol.messages.metadata import MetadataRequest as MR
        c.send(3, 12, MR(topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False))
        t0 = time.perf_counter()
        (n,) = struct.unpack(">i", c._exact(4))
        c._exact(n)
        emit("metadata_all_topics_latency", (time.perf_counter() - t0) * 1000, "ms")
        emit("metadata_all_topics_size", n, "bytes")
        c.close()
        hg.stop()
        emit(f"startup_{a.partitions + 10}_partitions_clean", hg.start() * 1000, "ms")
        emit("rss_after_start", rss_mib(hg.proc.pid), "MiB")
        hg.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
