"""Partitions beyond the file-descriptor limit (issue 27), on a broker subprocess under a limit
set with setrlimit before exec (as ``prlimit``/``ulimit -n`` would):

* a soft limit of 1024 with a higher hard limit: the broker raises it and logs the limit;
  3,000 partitions each take and serve a record;
* a hard limit of 1024: the file cache keeps the same 3,000 working, across a clean restart
  and a kill -9, never holding 1024 descriptors;
* descriptors exhausted by client connections: new connections are turned away and logged
  once per interval with the limit and the count, existing ones keep being served, a topic
  creation gets KAFKA_STORAGE_ERROR and leaves nothing half-made, and once connections go
  away the same creation succeeds.

The 20,000-partition run is in test_many_partitions.py.
"""
from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.api_versions import ApiVersionsRequest
from protocol.messages.create_topics import CreateTopicsRequest as CT
from protocol.messages.fetch import FetchRequest as FR
from protocol.messages.metadata import MetadataRequest
from protocol.messages.produce import ProduceRequest as PR
from protocol.records import build_batch, iter_batch_positions
from protocol.records.record import decode_batch
from tests.helpers.raw import RawClient

ROOT = Path(__file__).resolve().parents[2]
PER_TOPIC = 1000


class LimitedBroker:
    """``python -m broker serve`` under RLIMIT_NOFILE ``(soft, hard)``; its log in ``log``."""

    def __init__(self, tmp: Path, soft: int, hard: int, *overrides: str):
        self.data = tmp / "data"
        self.ready = tmp / "ready"
        self.log = tmp / "broker.log"
        self.limits = (soft, hard)
        self.overrides = overrides
        self.proc = None

    def start(self) -> "LimitedBroker":
        self.ready.unlink(missing_ok=True)
        cmd = [sys.executable, "-m", "broker", "serve", "--port", "0", "--data-dir", str(self.data),
               "--ready-file", str(self.ready)]
        for o in self.overrides:
            cmd += ["--override", o]
        lim = self.limits
        with open(self.log, "ab") as logf:
            self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=logf,
                                         preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, lim))
        deadline = time.monotonic() + 120
        while not (self.ready.exists() and self.ready.read_text().strip()):
            assert self.proc.poll() is None, self.log.read_text()[-3000:]
            assert time.monotonic() < deadline, "broker did not start"
            time.sleep(0.02)
        self.bootstrap = self.ready.read_text().split()[0]
        return self

    def client(self) -> RawClient:
        return RawClient(self.bootstrap, timeout=120)

    def stop(self, sig=signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(120)

    def soft_limit(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/limits").read_text().splitlines():
            if line.startswith("Max open files"):
                return int(line.split()[3])
        raise AssertionError("no Max open files line")

    def open_fds(self) -> int:
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))


def topics_for(n: int) -> list[tuple[str, int]]:
    return [(f"many{i // PER_TOPIC}", min(PER_TOPIC, n - i)) for i in range(0, n, PER_TOPIC)]


def create(c: RawClient, name: str, n: int):
    r = c.request(19, 5, CT(topics=[CT.CreatableTopic(name=name, num_partitions=n, replication_factor=1,
                                                     assignments=[], configs=[])], timeout_ms=120000,
                            validate_only=False))
    return r.topics[0]


def produce_one_each(c: RawClient, topics, tag: bytes = b"") -> None:
    """One record into every partition (acks=all); each must be acknowledged."""
    for name, parts in topics:
        r = c.request(0, 9, PR(transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[PR.TopicProduceData(
            name=name, partition_data=[PR.PartitionProduceData(
                index=p, records=build_batch([(None, b"%s-%d%s" % (name.encode(), p, tag), 1_700_000_000_000)]))
                for p in range(parts)])]))
        bad = [(t.name, x.index, x.error_code) for t in r.responses for x in t.partition_responses if x.error_code]
        assert not bad, bad[:5]


def values_by_partition(c: RawClient, topics) -> dict[tuple[str, int], list[bytes]]:
    """Every record of every partition, by one Fetch per topic from offset 0."""
    out: dict[tuple[str, int], list[bytes]] = {}
    for name, parts in topics:
        r = c.request(1, 12, FR(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 30, isolation_level=0,
                                session_id=0, session_epoch=-1, topics=[FR.FetchTopic(topic=name, partitions=[
                                    FR.FetchPartition(partition=p, current_leader_epoch=-1, fetch_offset=0,
                                                      log_start_offset=-1, partition_max_bytes=1 << 16)
                                    for p in range(parts)])], forgotten_topics_data=[], rack_id=""))
        for t in r.responses:
            for p in t.partitions:
                assert p.error_code == 0, (t.topic, p.partition_index, p.error_code)
                data = bytes(p.records or b"")
                vals = []
                for pos, _h in iter_batch_positions(data):
                    vals.extend(rec.value for rec in decode_batch(data, pos)[1])
                out[(t.topic, p.partition_index)] = vals
    return out


def expected(topics, *tags: bytes) -> dict[tuple[str, int], list[bytes]]:
    return {(name, p): [b"%s-%d%s" % (name.encode(), p, tag) for tag in tags]
            for name, parts in topics for p in range(parts)}


def metadata_names(c: RawClient) -> set[str]:
    md = c.request(3, 12, MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                          include_topic_authorized_operations=False))
    return {t.name for t in md.topics}


def run_3000(b: LimitedBroker) -> None:
    topics = topics_for(3000)
    c = b.client()
    for name, n in topics:
        assert create(c, name, n).error_code == 0
    produce_one_each(c, topics)
    assert values_by_partition(c, topics) == expected(topics, b"")
    c.close()


@pytest.mark.timeout(600)
def test_soft_limit_1024_is_raised_to_the_hard_limit(tmp_path):
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    b = LimitedBroker(tmp_path, 1024, hard).start()
    try:
        want = hard if hard != resource.RLIM_INFINITY else 1 << 20
        assert b.soft_limit() == want
        text = b.log.read_text()
        assert f"file descriptor limit {want}" in text
        if want != 1024:
            assert "(soft limit raised from 1024)" in text
        run_3000(b)
    finally:
        b.stop()


@pytest.mark.timeout(600)
def test_hard_limit_1024_the_file_cache_keeps_3000_partitions_working(tmp_path):
    b = LimitedBroker(tmp_path, 1024, 1024).start()
    topics = topics_for(3000)
    try:
        assert "file descriptor limit 1024;" in b.log.read_text()
        run_3000(b)
        assert b.open_fds() < 1024 - 64
        b.stop()                                   # clean restart under the same limit
        b.start()
        c = b.client()
        produce_one_each(c, topics, b"+")
        assert b.open_fds() < 1024 - 64
        c.close()
        b.stop(signal.SIGKILL)                     # kill -9: recovery of 3,000 partitions
        b.start()
        c = b.client()
        assert values_by_partition(c, topics) == expected(topics, b"", b"+")
        c.close()
    finally:
        b.stop()


def test_out_of_descriptors_connections_served_new_work_refused_cleanly(tmp_path):
    b = LimitedBroker(tmp_path, 160, 160).start()
    conns: list[RawClient] = []
    try:
        first = b.client()
        assert create(first, "small", 2).error_code == 0
        # open connections until the broker turns one away: every descriptor is then in use
        refused = False
        for _ in range(400):
            c = b.client()
            try:
                c.request(18, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1"))
            except (ConnectionError, OSError):
                c.close()
                refused = True
                break
            conns.append(c)
        assert refused, "the broker never ran out of descriptors"
        # existing connections are served
        assert "small" in metadata_names(first)
        assert conns[0].request(18, 3, ApiVersionsRequest(client_software_name="t",
                                                          client_software_version="1")).error_code == 0
        # new work: a clear error, nothing half-made
        t = create(first, "big", 20)
        assert t.error_code == ErrorCode.KAFKA_STORAGE_ERROR, t
        assert "Too many open files" in (t.error_message or "")
        assert "big" not in metadata_names(first)
        assert not [p for p in (b.data).iterdir() if p.name.startswith("big-")]
        assert (b.data / ".hourglass" / "topics" / "small.json").exists()
        assert not (b.data / ".hourglass" / "topics" / "big.json").exists()
        # logged once per interval, with the limit and the count
        text = b.log.read_text()
        lines = [ln for ln in text.splitlines() if "out of file descriptors" in ln]
        assert lines and "limit 160" in lines[0], text[-2000:]
        assert len(lines) <= 2
        # descriptors come back: the same creation succeeds and serves
        for c in conns[:60]:
            c.close()
        del conns[:60]
        time.sleep(0.3)
        assert create(first, "big", 20).error_code == 0
        produce_one_each(first, [("big", 20)])
        assert values_by_partition(first, [("big", 20)]) == expected([("big", 20)], b"")
        first.close()
    finally:
        for c in conns:
            c.close()
        b.stop()
