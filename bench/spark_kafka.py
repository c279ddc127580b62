"""Spark reading from a timestamp through its own kafka connector (spark-sql-kafka-0-10, the jars
``make jvm`` resolves), on Hourglass and on Apache Kafka (the oracle, tests/helpers/kafka_oracle),
rounds interleaved so both see the same machine load.

Each broker gets the same topic: ``--before`` records written first, then a time T is taken,
then ``--records`` records (``--size`` bytes, Kafka's ProducerPerformance: the producer is the
same JVM client for both). Each round is one batch job ``spark.read.format("kafka")`` with
``startingTimestamp=T`` that counts the records and sums their value lengths (every record
fetched and decoded; every answer checked); the figure is records per second from the job's
start to its answer (ListOffsets by time included). One SparkSession (local[2]) serves every
round; a first unmeasured round on each broker warms the JVM (``--no-warmup`` skips it). The
order of the brokers within a round flips every round (ABBA), so an even ``--rounds`` gives each
broker the same share of first places.

    .venv/bin/python bench/spark_kafka.py [--records 10000000] [--rounds 3] [--partitions 4] [--wire]

Prints ``name value unit`` lines: ``spark_kafka_<broker>_round<N>``, the medians, and
``spark_kafka_ratio`` = Hourglass / Kafka (records per second).

``--wire`` also prints, per broker and round: the broker process's CPU seconds; the requests it
answered per API with their mean time (Hourglass: the handler's time, from ``/metrics``; Kafka:
its ``TotalTimeMs``, queueing and sending included, from JMX through Kafka's own JmxTool); the
bytes per Fetch answer; Spark's JVM's CPU seconds; and, for each task, what Spark's reader logs
when it is done (``KafkaDataConsumer`` at INFO, sent to a file): its polls and its time inside
the Kafka consumer (each poll with the earliest/latest lookups Spark makes after it) against the
task's whole read. The counters are read between rounds, outside the timed reads.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the repository, not bench/, first on the path: bench/profile.py would shadow the stdlib's
# profile module that PySpark imports
sys.path[0] = str(ROOT)

from tests.helpers import jvm  # noqa: E402
from tests.helpers.broker import BrokerProcess  # noqa: E402
from tests.helpers.kafka_oracle import KafkaProcess, free_port, run_tool  # noqa: E402

TOPIC = "spark-bench"


def produce(bootstrap: str, n: int, size: int) -> float:
    """n records of size bytes with ProducerPerformance (CreateTime now); seconds taken."""
    t0 = time.monotonic()
    r = run_tool("org.apache.kafka.tools.ProducerPerformance", "--topic", TOPIC, "--num-records", str(n),
                 "--record-size", str(size), "--throughput", "-1", "--producer-props", f"bootstrap.servers={bootstrap}",
                 "acks=1", "linger.ms=20", "batch.size=524288", "buffer.memory=134217728", "compression.type=none",
                 timeout=3600, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"ProducerPerformance failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return time.monotonic() - t0


def create_topic(bootstrap: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})  # held: the future fails if the client is freed
    admin.create_topics([NewTopic(TOPIC, partitions, 1)])[TOPIC].result(60)


def fill(bootstrap: str, args) -> int:
    """The topic, the records before T, T, the measured records; returns T (epoch ms)."""
    create_topic(bootstrap, args.partitions)
    produce(bootstrap, args.before, args.size)
    time.sleep(1.1)  # every earlier record's CreateTime is before T, every later one's at or after
    t = int(time.time() * 1000)
    time.sleep(0.01)
    took = produce(bootstrap, args.records, args.size)
    print(f"# produced {args.records} records to {bootstrap} in {took:.1f} s", flush=True)
    return t


def read_from(spark, bootstrap: str, t: int) -> tuple[int, int, float]:
    t0 = time.monotonic()
    row = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", TOPIC)
           .option("startingTimestamp", str(t)).load()
           .selectExpr("count(*) AS n", "sum(length(value)) AS bytes").collect()[0])
    return row.n, row.bytes, time.monotonic() - t0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def hourglass_counters(metrics_port: int) -> dict:
    """{api: (requests, seconds in the broker)} and {"FetchBytes": bytes fetched} from /metrics."""
    import urllib.request
    from prometheus_client.parser import text_string_to_metric_families
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=30).read().decode()
    out: dict = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == "hourglass_request_latency_seconds_count":
                n, t = out.get(s.labels["api"], (0, 0.0))
                out[s.labels["api"]] = (n + s.value, t)
            elif s.name == "hourglass_request_latency_seconds_sum":
                n, t = out.get(s.labels["api"], (0, 0.0))
                out[s.labels["api"]] = (n, t + s.value)
            elif s.name == "hourglass_topic_bytes_out_total" and s.labels["topic"] == TOPIC:
                out["FetchBytes"] = s.value
    return out


def kafka_counters(jmx_port: int) -> dict:
    """The same from Kafka's JMX: per request type its TotalTimeMs count and mean, BytesOutPerSec."""
    r = run_tool("org.apache.kafka.tools.JmxTool", "--jmx-url",
                 f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{jmx_port}/jmxrmi", "--one-time", "true",
                 "--report-format", "properties",
                 "--object-name", "kafka.network:type=RequestMetrics,name=TotalTimeMs,request=*",
                 "--object-name", f"kafka.server:type=BrokerTopicMetrics,name=BytesOutPerSec,topic={TOPIC}",
                 "--attributes", "Count,Mean", timeout=120)
    vals: dict = {}
    for line in r.stdout.splitlines():
        key, sep, value = line.rpartition("=")  # properties: "<object name>:<attribute>=<value>"
        if sep and "kafka." in key:
            obj, _, attr = key.rpartition(":")
            try:
                vals.setdefault(obj, {})[attr] = float(value)
            except ValueError:
                pass
    out: dict = {}
    for obj, a in vals.items():
        if "name=TotalTimeMs" in obj and "request=" in obj:
            api = obj.split("request=")[1].split(",")[0]
            out[api] = (a.get("Count", 0.0), a.get("Count", 0.0) * a.get("Mean", 0.0) / 1000)
        elif "name=BytesOutPerSec" in obj:
            out["FetchBytes"] = a.get("Count", 0.0)
    return out


READS_LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{HH:mm:ss}} %p %c{{1}}: %m%n
logger.reads.name = org.apache.spark.sql.kafka010.consumer.KafkaDataConsumer
logger.reads.level = info
logger.reads.additivity = false
logger.reads.appenderRef.reads.ref = reads
appender.reads.type = File
appender.reads.name = reads
appender.reads.fileName = {path}
appender.reads.layout.type = PatternLayout
appender.reads.layout.pattern = %m%n
"""
_READ_LINE = re.compile(r"read (\d+) records through (\d+) polls .*?taking ([\d.]+) (ms|nanos), "
                        r"during time span of ([\d.]+) (ms|nanos)")


def task_reads(path: Path, seen: int) -> tuple[int, list[tuple[int, int, float, float]]]:
    """Spark's per-task read lines after the first ``seen`` bytes: (new seen, [(records, polls,
    seconds in the consumer, seconds of the task's read)])."""
    text = path.read_text() if path.exists() else ""
    scale = {"ms": 1e-3, "nanos": 1e-9}
    return len(text), [(int(m[1]), int(m[2]), float(m[3]) * scale[m[4]], float(m[5]) * scale[m[6]])
                       for m in _READ_LINE.finditer(text[seen:])]


def wire_report(name: str, rnd: int, cpu: float, before: dict, after: dict, took: float) -> None:
    print(f"# wire {name} round{rnd}: broker CPU {cpu:.1f} s over {took:.1f} s", flush=True)
    for api in sorted(after):
        if api == "FetchBytes":
            continue
        n0, t0 = before.get(api, (0, 0.0))
        n1, t1 = after[api]
        if n1 - n0 >= 1:
            print(f"#   {api:<24} {n1 - n0:>8.0f} requests, mean {1000 * (t1 - t0) / (n1 - n0):7.3f} ms")
    fetches = after.get("Fetch", (0, 0))[0] - before.get("Fetch", (0, 0))[0]
    fbytes = after.get("FetchBytes", 0) - before.get("FetchBytes", 0)
    if fetches:
        print(f"#   fetched {fbytes / 1e6:.1f} MB, {fbytes / fetches / 1024:.0f} KiB per Fetch answer", flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--records", type=int, default=10_000_000)
    p.add_argument("--before", type=int, default=100_000, help="records before the start time")
    p.add_argument("--size", type=int, default=100)
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--no-warmup", dest="warmup", action="store_false",
                   help="skip the unmeasured first read of each broker (large --records warm the JVM anyway)")
    p.add_argument("--wire", action="store_true",
                   help="per round: broker CPU, requests per API and their time in the broker, bytes per Fetch")
    p.add_argument("--hourglass-alt", metavar="K=V[,K=V]",
                   help="a second Hourglass (hourglass_alt) with these broker overrides, read in the same "
                        "rounds: an A/B of a setting, e.g. socket.send.buffer.bytes=-1")
    args = p.parse_args(argv)

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pipeline import job
    job.local_spark_env()
    libs = jvm.libs(f"spark-kafka-{jvm.version('spark')}")
    with tempfile.TemporaryDirectory(prefix="spark-bench-") as tmp:
        metrics_port, jmx_port = free_port(), free_port()
        hg_conf = {"log.segment.bytes": 1 << 30, **({"metrics.port": metrics_port} if args.wire else {})}
        jmx = (f"-Dcom.sun.management.jmxremote.port={jmx_port}", f"-Dcom.sun.management.jmxremote.rmi.port={jmx_port}",
               "-Dcom.sun.management.jmxremote.authenticate=false", "-Dcom.sun.management.jmxremote.ssl=false",
               "-Djava.rmi.server.hostname=127.0.0.1") if args.wire else ()
        hg = BrokerProcess(Path(tmp) / "hourglass", hg_conf).start()
        brokers = {"hourglass": hg}
        counters = {"hourglass": lambda: hourglass_counters(metrics_port), "kafka": lambda: kafka_counters(jmx_port)}
        if args.hourglass_alt:
            alt_port = free_port()
            alt = dict(kv.split("=", 1) for kv in args.hourglass_alt.split(","))
            alt_conf = {**hg_conf, **({"metrics.port": alt_port} if args.wire else {}), **alt}
            brokers["hourglass_alt"] = BrokerProcess(Path(tmp) / "hourglass_alt", alt_conf).start()
            counters["hourglass_alt"] = lambda: hourglass_counters(alt_port)
            print(f"# hourglass_alt: {alt}", flush=True)
        brokers["kafka"] = KafkaProcess(Path(tmp) / "kafka", {"log.segment.bytes": 1 << 30}, heap="1g",
                                        jvm_opts=jmx).start()
        try:
            starts = {name: fill(b.bootstrap, args) for name, b in brokers.items()}
            from pyspark.sql import SparkSession
            builder = SparkSession.builder
            reads_log, reads_seen = Path(tmp) / "spark-reads.log", 0
            if args.wire:
                conf = Path(tmp) / "log4j2.properties"
                conf.write_text(READS_LOG4J2.format(path=reads_log))
                builder = builder.config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={conf}")
            spark = (builder.master("local[2]").appName("spark-kafka-bench")
                     .config("spark.jars", ",".join(job.kafka_jars(str(libs))))
                     .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                     .config("spark.driver.memory", "2g")
                     .config("spark.sql.shuffle.partitions", "2").getOrCreate())
            if not args.wire:  # (--wire: its own log4j2 configuration, whose reader logger setLogLevel would override)
                spark.sparkContext.setLogLevel("ERROR")
            want = (args.records, args.records * args.size)
            for name, b in (brokers.items() if args.warmup else ()):  # warm-up, unmeasured (answer checked)
                n, nbytes, _ = read_from(spark, b.bootstrap, starts[name])
                assert (n, nbytes) == want, f"{name}: read {n} records, {nbytes} bytes; want {want}"
            rates: dict[str, list[float]] = {name: [] for name in brokers}
            for rnd in range(1, args.rounds + 1):
                # ABBA: the order flips every round, so neither broker always reads right after the
                # other's garbage (the JVM's collections) or always first
                order = list(brokers.items()) if rnd % 2 else list(brokers.items())[::-1]
                for name, b in order:
                    if args.wire:
                        spark_pid = spark.sparkContext._gateway.proc.pid  # the driver JVM (local mode: the tasks too)
                        before, cpu0, spark0 = counters[name](), cpu_seconds(b.proc.pid), cpu_seconds(spark_pid)
                    n, nbytes, took = read_from(spark, b.bootstrap, starts[name])
                    if args.wire:
                        wire_report(name, rnd, cpu_seconds(b.proc.pid) - cpu0, before, counters[name](), took)
                        print(f"#   Spark's JVM CPU {cpu_seconds(spark_pid) - spark0:.1f} s")
                        time.sleep(0.5)  # the tasks' release lines are flushed as they are written
                        reads_seen, tasks = task_reads(reads_log, reads_seen)
                        for recs, polls, in_consumer, span in tasks:
                            print(f"#   task: {recs} records, {polls} polls, {in_consumer:.2f} s in the consumer "
                                  f"of {span:.2f} s ({1e6 * in_consumer / max(polls, 1):.0f} us a poll)")
                    assert (n, nbytes) == want, f"{name}: read {n} records, {nbytes} bytes; want {want}"
                    rates[name].append(n / took)
                    print(f"spark_kafka_{name}_round{rnd} {n / took:.0f} records/s ({took:.1f} s)", flush=True)
            spark.stop()
            med = {name: statistics.median(v) for name, v in rates.items()}
            for name, v in med.items():
                print(f"spark_kafka_{name} {v:.0f} records/s (median of {args.rounds}, {args.records} records)")
            print(f"spark_kafka_ratio {med['hourglass'] / med['kafka']:.2f} hourglass/kafka")
            if "hourglass_alt" in med:
                print(f"spark_kafka_alt_ratio {med['hourglass_alt'] / med['kafka']:.2f} hourglass_alt/kafka")
        finally:
            for b in brokers.values():
                b.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
