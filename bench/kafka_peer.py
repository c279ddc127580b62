"""Apache Kafka as a benchmark peer (``bench/run.py --kafka``), and the figures only a
side-by-side with Kafka needs.

``Kafka`` runs the same single-node KRaft broker+controller the differential tests use
(``tests.helpers.kafka_oracle.KafkaProcess``: the jars ``make jvm`` resolved, Kafka's own
storage tool formats the data dir, stopped by SIGTERM), with a 1 GiB heap as
``kafka-server-start.sh`` gives it. ``start()`` returns launch -> first answered ApiVersions
(the storage format before it is not counted: it is done once per cluster). ``warm_up()``
runs Kafka's ProducerPerformance and ConsumerPerformance against a broker before anything is
measured, as anyone benchmarking a JVM would; every broker of the run gets the same warm-up.

``step_vs_kafka`` adds, per broker and interleaved in rounds:
- librdkafka (confluent-kafka) at 1 KiB, acks=1 and all, and its consumer (the shared suite
  has librdkafka at 100 B only);
- Kafka's own ``kafka-producer-perf-test`` (ProducerPerformance: 100 B and 1 KiB, acks=1 and
  all; records/s, MB/s, p50/p99 send latency) and ``kafka-consumer-perf-test``
  (ConsumerPerformance, a group consumer: records/s and MB/s of its fetch phase);
- broker CPU-seconds per GB: /proc utime+stime of the broker process over the 1 KiB acks=1
  producer-perf run and the consumer-perf run that reads it back, per GB moved;
- broker RSS under load: the largest RSS sampled every 100 ms while the broker serves this
  step's clients.
``ratios_to_kafka`` turns every figure measured for Kafka and another broker into
``vs_kafka.<broker>.<figure>`` = broker / Kafka, with the direction that is better.
"""
from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench.procs import answered, cpu_seconds, figures_in, rss_mib
from tests.helpers.kafka_oracle import KafkaProcess, kafka_classpath
from tests.helpers import jvm

PERF_PRODUCER = "org.apache.kafka.tools.ProducerPerformance"
PERF_CONSUMER = "org.apache.kafka.tools.ConsumerPerformance"


def _rss_mib(pid: int) -> float:
    """The sampler's reading: 0 once the process is gone (its thread may outlive it)."""
    try:
        return rss_mib(pid)
    except FileNotFoundError:
        return 0.0


class RssSampler:
    """The largest RSS of ``pid`` while the ``with`` block runs (sampled every 100 ms)."""

    def __init__(self, pid: int, every: float = 0.1):
        self.pid, self.every, self.max_mib = pid, every, 0.0
        self._stop = threading.Event()

    def _run(self):
        while not self._stop.is_set():
            self.max_mib = max(self.max_mib, _rss_mib(self.pid))
            self._stop.wait(self.every)

    def __enter__(self):
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
        self.max_mib = max(self.max_mib, _rss_mib(self.pid))


class Kafka:
    def __init__(self, data_dir: Path, heap: str = "1g"):
        self.kp = KafkaProcess(data_dir, {"log.retention.check.interval.ms": 300000}, heap=heap)
        self.proc = None
        self.bootstrap = None

    def start(self) -> float:
        """Start; returns seconds from launch to the first answered ApiVersions."""
        kp = self.kp
        if not kp._formatted:
            kp.format_storage()
        config = kp._write_config()
        t0 = time.perf_counter()
        with open(kp.home / "stdout.log", "ab") as out:
            kp.proc = subprocess.Popen(kp.argv(config), stdout=out, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, cwd=kp.home, start_new_session=True)
        if not answered(kp.proc, kp.port, t0, 120):
            raise RuntimeError(f"kafka did not start\n{kp.log_tail()}")
        dt = time.perf_counter() - t0
        self.proc, self.bootstrap = kp.proc, kp.bootstrap
        return dt

    def stop(self) -> None:
        self.kp.stop()


def _java_tool(main_class: str, *args: str, timeout: float = 900) -> str:
    cmd = [jvm.java(), "-Xmx512m", "-Dlog4j2.level=WARN", "-cp", kafka_classpath(), main_class, *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"{main_class} exited {r.returncode}: {r.stdout[-1500:]} {r.stderr[-1500:]}")
    return r.stdout


_PP = re.compile(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
                 r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th")


def create_topic(bootstrap: str, topic: str) -> None:
    """One partition, through the Admin API (not every broker auto-creates topics)."""
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})   # held until the answer is in
    admin.create_topics([NewTopic(topic, 1, 1)], request_timeout=30)[topic].result(60)


def producer_perf(bootstrap: str, topic: str, records: int, size: int, acks: str) -> dict[str, float]:
    create_topic(bootstrap, topic)
    props = [f"bootstrap.servers={bootstrap}", f"acks={acks}", "linger.ms=5", "batch.size=65536"]
    out = _java_tool(PERF_PRODUCER, "--topic", topic, "--num-records", str(records), "--record-size", str(size),
                     "--throughput", "-1", "--command-property", *props)
    m = None
    for line in out.splitlines():
        m = _PP.search(line) or m
    if m is None or int(m.group(1)) < records:
        raise RuntimeError(f"ProducerPerformance did not send {records} records: {out[-1500:]}")
    return {"rps": float(m.group(2)), "mbps": float(m.group(3)), "lat_p50": float(m.group(6)),
            "lat_p99": float(m.group(8))}


def consumer_perf(bootstrap: str, topic: str, records: int) -> dict[str, float]:
    out = _java_tool(PERF_CONSUMER, "--bootstrap-server", bootstrap, "--topic", topic, "--num-records", str(records),
                     "--timeout", "60000")
    lines = [ln for ln in out.splitlines() if ln.strip()]
    header = [h.strip() for h in lines[0].split(",")]
    values = dict(zip(header, (v.strip() for v in lines[-1].split(","))))
    return {"rps": float(values["fetch.nMsg.sec"]), "mbps": float(values["fetch.MB.sec"]),
            "records": float(values["data.consumed.in.nMsg"])}


def warm_up(bootstrap: str, quick: bool, log=print) -> None:
    topic = f"warmup-{os.getpid()}-{time.time_ns()}"
    n = 200_000 if quick else 1_000_000
    try:
        producer_perf(bootstrap, topic, n, 100, "1")
        consumer_perf(bootstrap, topic, n)
    except Exception as exc:  # a broker the perf tools cannot drive still gets the rest of the run
        log(f"warm-up against {bootstrap}: {str(exc)[:500]}")


def _rdkafka(args: list[str], bench_python: str, shared: Path) -> dict[str, float]:
    return figures_in(subprocess.run([bench_python, str(shared / "rdkafka_bench.py"), *args], capture_output=True,
                                     text=True, timeout=900).stdout)


_PERF_TOOLS_FAILED: set[str] = set()


def one_round(name: str, b, quick: bool, bench_python: str, shared: Path, tag: str, log=print) -> dict[str, float]:
    """Every figure of this step for one broker, once (a client that fails is logged and its
    figures left out; the others still run)."""
    n100, n1k = (100_000, 20_000) if quick else (500_000, 100_000)
    nrd = 100_000 if quick else 500_000
    out: dict[str, float] = {}
    with RssSampler(b.proc.pid) as rss:
        for acks in ("1", "all"):
            t = f"{tag}-rd1k-{acks}"
            r = _rdkafka(["produce", "--bootstrap", b.bootstrap, "--topic", t, "--records", str(nrd // 5),
                          "--record-size", "1024", "--acks", acks, "--name", f"rdkafka_produce_1KiB_acks{acks}"],
                         bench_python, shared)
            out.update({k: v for k, v in r.items() if k.endswith(("_rps", "_mbps"))})
        r = _rdkafka(["consume", "--bootstrap", b.bootstrap, "--topic", f"{tag}-rd1k-1", "--records", str(nrd // 5),
                      "--name", "rdkafka_consume_1KiB"], bench_python, shared)
        out.update({k: v for k, v in r.items() if k.endswith(("_rps", "_mbps"))})
        for size, n, label in ((100, n100, "100B"), (1024, n1k, "1KiB")):
            for acks in ("1", "all"):
                t = f"{tag}-pp{label}-{acks}"
                if name in _PERF_TOOLS_FAILED:
                    continue
                try:
                    cpu0 = cpu_seconds(b.proc.pid)
                    r = producer_perf(b.bootstrap, t, n, size, acks)
                    cpu_p = cpu_seconds(b.proc.pid) - cpu0
                    for k, v in r.items():
                        out[f"perf_producer_{label}_acks{acks}_{k}"] = v
                    if label == "1KiB" and acks == "1":
                        cpu0 = cpu_seconds(b.proc.pid)
                        c = consumer_perf(b.bootstrap, t, n)
                        cpu_c = cpu_seconds(b.proc.pid) - cpu0
                        out["perf_consumer_1KiB_rps"], out["perf_consumer_1KiB_mbps"] = c["rps"], c["mbps"]
                        gb = n * size / 1e9
                        out["broker_cpu_s_per_GB_produced"] = cpu_p / gb
                        out["broker_cpu_s_per_GB_consumed"] = cpu_c / gb
                except (RuntimeError, subprocess.TimeoutExpired, Exception) as exc:
                    log(f"{name}: Kafka's perf tools, {label} acks={acks}: {str(exc)[:500]}; "
                        f"not run again against {name}")
                    out[f"perf_{label}_acks{acks}_failed"] = 1.0
                    _PERF_TOOLS_FAILED.add(name)   # each failure waits out the client's timeouts
    out["rss_under_load_max"] = rss.max_mib
    return out


def step_vs_kafka(brokers: dict, rounds: int, quick: bool, emit, log, shared: Path) -> None:
    bench_python = os.environ.get("BENCH_PYTHON") or sys.executable
    runs: dict[str, dict[str, list[float]]] = {name: {} for name in brokers}
    for i in range(rounds):
        for name, b in brokers.items():
            log(f"clients vs kafka, round {i + 1}/{rounds} against {name}")
            for k, v in one_round(name, b, quick, bench_python, shared, f"vsk-{os.getpid()}-{i}", log).items():
                runs[name].setdefault(k, []).append(v)
    for name, per in runs.items():
        for k, vs in sorted(per.items()):
            unit = ("MiB" if k.startswith("rss") else "cpu-s/GB" if "cpu" in k else "ms" if "lat" in k
                    else "MB/s" if k.endswith("mbps") else "records/s")
            emit(f"{name}.{k}", statistics.median(vs), unit)


# Figures where a smaller number is the better one (the rest: throughput, larger is better).
def _lower_is_better(name: str) -> bool:
    return any(s in name for s in ("lat", "startup", "rss", "cpu", "p50", "p99", "avg", "max", "wall"))


_SKIP = ("spread", "_errors", "_records", "_wrong", "_correct", "_lookups", "step_failed", "_failed", "loadavg",
         "failed_steps", "suite_wall", "segments")


def ratios_to_kafka(figures: dict[str, tuple[float, str]], emit) -> None:
    """``vs_kafka.<broker>.<figure>``: the broker's figure over Kafka's, for every figure both
    have (Hourglass's startup and RSS figures are named without a prefix)."""
    for key, (kv, _unit) in sorted(figures.items()):
        if not key.startswith("kafka.") or any(s in key for s in _SKIP) or not kv:
            continue
        fig = key[len("kafka."):]
        for broker in ("hourglass", "tansu"):
            other = figures.get(f"{broker}.{fig}") or (figures.get(fig) if broker == "hourglass" else None)
            if other is None:
                continue
            better = "lower is better" if _lower_is_better(fig) else "higher is better"
            emit(f"vs_kafka.{broker}.{fig}", other[0] / kv, f"x ({better})")
