"""Spark reading from a timestamp through its own kafka connector (spark-sql-kafka-0-10, the jars
``make jvm`` resolves), on Hourglass and on Apache Kafka (the oracle, tests/helpers/kafka_oracle),
rounds interleaved so both see the same machine load.

Each broker gets the same topic: ``--before`` records written first, then a time T is taken,
then ``--records`` records (``--size`` bytes, Kafka's ProducerPerformance: the producer is the
same JVM client for both). Each round is one batch job ``spark.read.format("kafka")`` with
``startingTimestamp=T`` that counts the records and sums their value lengths (every record
fetched and decoded; every answer checked); the figure is records per second from the job's
start to its answer (ListOffsets by time included). One SparkSession (local[2]) serves every
round; a first unmeasured round on each broker warms the JVM (``--no-warmup`` skips it).

    .venv/bin/python bench/spark_kafka.py [--records 10000000] [--rounds 3] [--partitions 4]

Prints ``name value unit`` lines: ``spark_kafka_<broker>_round<N>``, the medians, and
``spark_kafka_ratio`` = Hourglass / Kafka (records per second).
"""
from __future__ import annotations

import argparse
import os
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
from tests.helpers.kafka_oracle import KafkaProcess, run_tool  # noqa: E402

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


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--records", type=int, default=10_000_000)
    p.add_argument("--before", type=int, default=100_000, help="records before the start time")
    p.add_argument("--size", type=int, default=100)
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--no-warmup", dest="warmup", action="store_false",
                   help="skip the unmeasured first read of each broker (large --records warm the JVM anyway)")
    args = p.parse_args(argv)

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pipeline import job
    job.local_spark_env()
    libs = jvm.libs(f"spark-kafka-{jvm.version('spark')}")
    with tempfile.TemporaryDirectory(prefix="spark-bench-") as tmp:
        hg = BrokerProcess(Path(tmp) / "hourglass", {"log.segment.bytes": 1 << 30}).start()
        kafka = KafkaProcess(Path(tmp) / "kafka", {"log.segment.bytes": 1 << 30}, heap="1g").start()
        brokers = {"hourglass": hg, "kafka": kafka}
        try:
            starts = {name: fill(b.bootstrap, args) for name, b in brokers.items()}
            from pyspark.sql import SparkSession
            spark = (SparkSession.builder.master("local[2]").appName("spark-kafka-bench")
                     .config("spark.jars", ",".join(job.kafka_jars(str(libs))))
                     .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                     .config("spark.driver.memory", "2g")
                     .config("spark.sql.shuffle.partitions", "2").getOrCreate())
            spark.sparkContext.setLogLevel("ERROR")
            want = (args.records, args.records * args.size)
            for name, b in (brokers.items() if args.warmup else ()):  # warm-up, unmeasured (answer checked)
                n, nbytes, _ = read_from(spark, b.bootstrap, starts[name])
                assert (n, nbytes) == want, f"{name}: read {n} records, {nbytes} bytes; want {want}"
            rates: dict[str, list[float]] = {name: [] for name in brokers}
            for rnd in range(1, args.rounds + 1):
                for name, b in brokers.items():
                    n, nbytes, took = read_from(spark, b.bootstrap, starts[name])
                    assert (n, nbytes) == want, f"{name}: read {n} records, {nbytes} bytes; want {want}"
                    rates[name].append(n / took)
                    print(f"spark_kafka_{name}_round{rnd} {n / took:.0f} records/s ({took:.1f} s)", flush=True)
            spark.stop()
            med = {name: statistics.median(v) for name, v in rates.items()}
            for name, v in med.items():
                print(f"spark_kafka_{name} {v:.0f} records/s (median of {args.rounds}, {args.records} records)")
            print(f"spark_kafka_ratio {med['hourglass'] / med['kafka']:.2f} hourglass/kafka")
        finally:
            hg.stop()
            kafka.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
