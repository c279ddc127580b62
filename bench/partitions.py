"""Costs against the number of partitions (issue 27): one ``name value unit`` line per figure.

    .venv/bin/python bench/partitions.py [--counts 1000,5000,10000,20000] [--nofile SOFT[:HARD]]
                                         [--connections 1000,10000]

For each count N, on a fresh data dir, a broker subprocess (``python -m broker serve``):

- ``create``: CreateTopics of N partitions (topics of 1000), seconds and ms a partition;
- ``produce``: one record into every partition (one Produce request per topic, acks=1);
- ``fetch_all``: one Fetch (v12, no session) of every partition from offset 0, then a fetch
  session (v12, session id from the first answer) polled again incrementally (nothing new);
- ``metadata_all``: Metadata v12 for all topics, median of 5 over one connection;
- ``rss`` / ``open_fds``: the broker's resident memory and descriptors (from /proc);
- ``start_clean``: SIGTERM, then launch to first answered ApiVersions on the same dir;
- ``start_after_kill``: SIGKILL, then launch to first answered ApiVersions (recovery);
  every record produced is read back after it (the check, not a figure).

``--connections`` opens that many idle client connections to one broker (each sends one
ApiVersions) and reports the broker's RSS growth per connection. ``--nofile`` runs the broker
under that descriptor limit (``prlimit``), e.g. ``1024:1024`` to see the file cache at work.
"""
from __future__ import annotations

import argparse
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.procs import answered, free_port, rss_mib  # noqa: E402
from bench.rawclient import RawClient  # noqa: E402
from protocol.messages.create_topics import CreateTopicsRequest as CT  # noqa: E402
from protocol.messages.fetch import FetchRequest as FR  # noqa: E402
from protocol.messages.metadata import MetadataRequest  # noqa: E402
from protocol.messages.produce import ProduceRequest as PR  # noqa: E402
from protocol.records import build_batch, iter_batch_positions  # noqa: E402

PER_TOPIC = 1000


def emit(name: str, value: float, unit: str) -> None:
    print(f"{name} {value:.4g} {unit}", flush=True)


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


class Broker:
    def __init__(self, data_dir: Path, nofile: tuple[int, int] | None):
        self.data_dir, self.nofile, self.proc, self.port = data_dir, nofile, None, None

    def start(self) -> float:
        self.port = free_port()
        cmd = [sys.executable, "-m", "broker", "--log-level", "WARNING", "serve", "--port", str(self.port),
               "--data-dir", str(self.data_dir)]
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        lim = self.nofile
        pre = (lambda: resource.setrlimit(resource.RLIMIT_NOFILE, lim)) if lim else None
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     preexec_fn=pre)
        if not answered(self.proc, self.port, t0, 300):
            raise RuntimeError("broker did not start")
        return time.perf_counter() - t0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self, sig=signal.SIGTERM) -> float:
        t0 = time.perf_counter()
        self.proc.send_signal(sig)
        self.proc.wait(300)
        return time.perf_counter() - t0


def topics_for(n: int) -> list[tuple[str, int]]:
    return [(f"p{i // PER_TOPIC}", min(PER_TOPIC, n - i)) for i in range(0, n, PER_TOPIC)]


def create(c: RawClient, topics) -> None:
    for name, parts in topics:
        r = c.request(19, 5, CT(topics=[CT.CreatableTopic(name=name, num_partitions=parts, replication_factor=1,
                                                          assignments=[], configs=[])],
                                timeout_ms=600000, validate_only=False))
        assert r.topics[0].error_code == 0, r.topics[0]


def produce(c: RawClient, topics) -> None:
    for name, parts in topics:
        req = PR(transactional_id=None, acks=1, timeout_ms=30000, topic_data=[PR.TopicProduceData(
            name=name, partition_data=[PR.PartitionProduceData(
                index=p, records=build_batch([(None, b"%s-%d" % (name.encode(), p), int(time.time() * 1000))]))
                for p in range(parts)])])
        r = c.request(0, 9, req)
        bad = [x for t in r.responses for x in t.partition_responses if x.error_code]
        assert not bad, bad[:3]


def fetch_all(c: RawClient, topics, session_epoch: int = -1, session_id: int = 0):
    parts = [FR.FetchTopic(topic=name, partitions=[FR.FetchPartition(
        partition=p, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1, partition_max_bytes=1 << 16)
        for p in range(n)]) for name, n in topics] if session_epoch <= 0 else []
    return c.request(1, 12, FR(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 30, isolation_level=0,
                               session_id=session_id, session_epoch=session_epoch, topics=parts,
                               forgotten_topics_data=[], rack_id=""))


def check_all(c: RawClient, topics) -> None:
    r = fetch_all(c, topics)
    seen = 0
    for t in r.responses:
        for p in t.partitions:
            data = bytes(p.records or b"")
            assert p.error_code == 0 and any(True for _ in iter_batch_positions(data)), (t.topic, p.partition_index)
            seen += 1
    assert seen == sum(n for _, n in topics), seen


def metadata_all(c: RawClient) -> float:
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        c.request(3, 12, MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                         include_topic_authorized_operations=False))
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run_count(n: int, tmp: Path, nofile) -> None:
    topics = topics_for(n)
    b = Broker(tmp / f"n{n}", nofile)
    emit(f"partitions.{n}.start_empty", b.start(), "s")
    c = RawClient(b.bootstrap, timeout=600)
    t0 = time.perf_counter()
    create(c, topics)
    dt = time.perf_counter() - t0
    emit(f"partitions.{n}.create", dt, "s")
    emit(f"partitions.{n}.create_per_partition", dt / n * 1000, "ms")
    emit(f"partitions.{n}.metadata_all", metadata_all(c), "s")
    t0 = time.perf_counter()
    produce(c, topics)
    emit(f"partitions.{n}.produce_one_each", time.perf_counter() - t0, "s")
    t0 = time.perf_counter()
    check_all(c, topics)
    emit(f"partitions.{n}.fetch_all", time.perf_counter() - t0, "s")
    first = fetch_all(c, topics, session_epoch=0)     # a new fetch session over every partition
    t0 = time.perf_counter()
    fetch_all(c, topics, session_epoch=1, session_id=first.session_id)
    emit(f"partitions.{n}.fetch_session_incremental", time.perf_counter() - t0, "s")
    emit(f"partitions.{n}.rss", rss_mib(b.proc.pid), "MiB")
    emit(f"partitions.{n}.open_fds", open_fds(b.proc.pid), "fds")
    c.close()
    emit(f"partitions.{n}.stop_clean", b.stop(), "s")
    emit(f"partitions.{n}.start_clean", b.start(), "s")
    c = RawClient(b.bootstrap, timeout=600)
    emit(f"partitions.{n}.metadata_all_after_restart", metadata_all(c), "s")
    emit(f"partitions.{n}.rss_after_restart", rss_mib(b.proc.pid), "MiB")
    emit(f"partitions.{n}.open_fds_after_restart", open_fds(b.proc.pid), "fds")
    c.close()
    b.stop(signal.SIGKILL)
    emit(f"partitions.{n}.start_after_kill", b.start(), "s")
    c = RawClient(b.bootstrap, timeout=600)
    check_all(c, topics)
    c.close()
    b.stop()


def run_connections(counts: list[int], tmp: Path, nofile) -> None:
    b = Broker(tmp / "conns", nofile)
    b.start()
    from protocol.messages.api_versions import ApiVersionsRequest
    base = rss_mib(b.proc.pid)
    socks: list[RawClient] = []
    try:
        for n in counts:
            t0 = time.perf_counter()
            while len(socks) < n:
                c = RawClient(b.bootstrap)
                c.request(18, 3, ApiVersionsRequest(client_software_name="bench", client_software_version="1"))
                socks.append(c)
            dt = time.perf_counter() - t0
            rss = rss_mib(b.proc.pid)
            emit(f"connections.{n}.open_time", dt, "s")
            emit(f"connections.{n}.rss", rss, "MiB")
            emit(f"connections.{n}.rss_per_connection", (rss - base) * 1024 / n, "KiB")
            t0 = time.perf_counter()
            for c in socks[:: max(1, n // 100)]:
                c.request(18, 3, ApiVersionsRequest(client_software_name="bench", client_software_version="1"))
            emit(f"connections.{n}.requests_on_100_spread", time.perf_counter() - t0, "s")
    finally:
        for c in socks:
            c.close()
        b.stop()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--counts", default="1000,5000,10000,20000")
    ap.add_argument("--connections", default="")
    ap.add_argument("--nofile", default="", help="SOFT[:HARD] descriptor limit for the broker")
    a = ap.parse_args(argv)
    nofile = None
    if a.nofile:
        soft, _, hard = a.nofile.partition(":")
        nofile = (int(soft), int(hard or soft))
    need = max([int(x) for x in a.connections.split(",") if x] or [0]) + 64
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(need, soft)), hard))
    with tempfile.TemporaryDirectory(prefix="hourglass-partitions-") as tmp:
        for n in [int(x) for x in a.counts.split(",") if x]:
            run_count(n, Path(tmp), nofile)
        if a.connections:
            run_connections([int(x) for x in a.connections.split(",")], Path(tmp), nofile)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
