"""Spark's own kafka connector (spark-sql-kafka-0-10, from tests/jvm/spark-kafka) against a live
Hourglass broker, as a Spark user runs it: the jars make jvm resolves, the source the pipeline
picks, readStream from a time (availableNow and a running query), ending offsets by time,
headers, the kafka sink, and a query that resumes from its checkpoint after broker restarts.
Where Apache Kafka can answer the same question (the oracle from tests/jvm/kafka-oracle), the
rows Spark reads from Hourglass must equal the rows it reads from Kafka.
"""
from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from pipeline import job
from tests.helpers import jvm
from tests.pipeline.conftest import SPARK_GROUP, spark_kafka_libs
from tests.pipeline.test_pipeline import BASE, args, counts_of, model_counts, model_from, produce_events

# one SparkSession per test process: every test of this module on the same xdist worker
pytestmark = pytest.mark.xdist_group(SPARK_GROUP)

ROOT = Path(__file__).resolve().parents[2]
CONNECTOR_JARS = {"spark-sql-kafka-0-10_2.13", "spark-token-provider-kafka-0-10_2.13", "kafka-clients",
                  "commons-pool2"}


def _artifact(jar: str) -> str:
    """``kafka-clients-3.9.2.jar`` -> ``kafka-clients`` (the name before the last dash-free version)."""
    m = re.match(r"^(.*?)-(\d[^-]*)\.jar$", jar)
    return m.group(1) if m else jar


def test_connector_jars_match_the_pinned_pyspark_and_add_nothing_it_ships():
    import pyspark
    assert pyspark.__version__ == jvm.version("spark"), "pyproject.toml's pyspark and tests/jvm's spark.version differ"
    libs = Path(spark_kafka_libs())
    jars = sorted(p.name for p in libs.glob("*.jar"))
    assert {_artifact(j) for j in jars} == CONNECTOR_JARS, jars
    assert f"spark-sql-kafka-0-10_2.13-{pyspark.__version__}.jar" in jars
    shipped = {_artifact(p.name) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    assert not shipped & CONNECTOR_JARS, "a connector jar PySpark already ships: a second copy on the classpath"
    assert {"scala-library", "slf4j-api", "hadoop-client-runtime", "lz4-java"} <= shipped


def test_source_choice():
    assert job.choose_source("auto", True) == ("kafka", "spark-sql-kafka-0-10 is on the classpath")
    src, why = job.choose_source("auto", False, "4.2.0")
    assert src == "python" and "--packages org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0," in why
    assert job.choose_source("python", True)[0] == "python"
    assert job.choose_source("kafka", True)[0] == "kafka"
    with pytest.raises(job.SourceError, match="--source kafka: spark-sql-kafka-0-10 is not on the classpath"):
        job.choose_source("kafka", False)
    assert job.build_parser().parse_args(["--topic", "t"]).source in ("auto", os.environ.get("HOURGLASS_PIPELINE_SOURCE"))


def test_default_source_is_sparks_kafka_source_with_one_log_line(broker, spark, caplog):
    topic = f"ev-{uuid.uuid4().hex[:6]}"
    produce_events(broker.bootstrap, topic)
    caplog.set_level(logging.INFO, logger="hourglass.pipeline")
    df = job.read(spark, args(broker.bootstrap, topic, "--source", "auto"))
    lines = [r.getMessage() for r in caplog.records if r.name == "hourglass.pipeline"]
    assert lines == [f"hourglass-pipeline: reading {topic} with Spark's kafka source "
                     "(spark-sql-kafka-0-10 is on the classpath)"]
    # Spark's own relation, not a Python data source
    plan = df._jdf.queryExecution().analyzed().toString()
    assert "KafkaRelation" in plan or "kafka" in plan.lower(), plan
    assert df.count() == 24


NO_CONNECTOR = """
import json, sys
from pipeline import job
spark = job.session("no-connector")
spark.sparkContext.setLogLevel("ERROR")
a = job.build_parser().parse_args(sys.argv[1:])
counts = job.run(spark, a)
rows = sorted((int(r.window_start.timestamp()), r.kind, r["count"]) for r in spark.table(a.query_name).collect())
a.source = "kafka"
try:
    job.read(spark, a)
    refused = None
except job.SourceError as exc:
    refused = str(exc)
print(json.dumps({"present": job.kafka_connector_present(spark), "rows": rows, "refused": refused}))
spark.stop()
"""


@pytest.mark.timeout(420)  # a second Spark (its own JVM and Python workers) on a busy two-core host
def test_without_the_connector_the_python_source_reads_and_says_so(broker, tmp_path):
    """A host with no connector jars (its own process: one JVM per process): the job falls back
    to the Python data source with the log line, and --source kafka is refused up front."""
    topic = f"ev-{uuid.uuid4().hex[:6]}"
    events = produce_events(broker.bootstrap, topic)
    t = BASE + 30_000
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_KAFKA_JARS", "PYSPARK_SUBMIT_ARGS",
                                                            "HOURGLASS_PIPELINE_SOURCE")}
    env.update(PYTHONPATH=str(ROOT), SPARK_LOCAL_IP="127.0.0.1")
    r = subprocess.run([sys.executable, "-c", "import logging; logging.basicConfig(level=logging.INFO, "
                        "format='%(message)s')\n" + NO_CONNECTOR, "--bootstrap", broker.bootstrap, "--topic", topic,
                        "--from", str(t), "--window", "30 seconds", "--sink", "memory", "--query-name", "nc"],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=400)
    assert r.returncode == 0, r.stderr[-4000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["present"] is False
    want = model_counts(events, model_from(events, t))
    assert Counter({(s, k): n for s, k, n in out["rows"]}) == want
    assert out["refused"].startswith("--source kafka: spark-sql-kafka-0-10 is not on the classpath")
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("hourglass-pipeline: reading")]
    assert lines[0] == (f"hourglass-pipeline: reading {topic} with the Python data source hourglass_kafka "
                        f"(spark-sql-kafka-0-10 is not on the classpath (spark-submit --packages "
                        f"org.apache.spark:spark-sql-kafka-0-10_2.13:{jvm.version('spark')}, spark.jars or "
                        f"SPARK_KAFKA_JARS))")


def _produce(bootstrap: str, topic: str, records, partitions: int = 2) -> None:
    """records: (partition, timestamp, value, headers)."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fs = admin.create_topics([NewTopic(topic, partitions, 1)])
    for f in fs.values():
        try:
            f.result(20)
        except Exception as exc:  # already there: a second batch into the same topic
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for part, ts, value, headers in records:
        p.produce(topic, value, key=value[:4], partition=part, timestamp=ts, headers=headers)
    assert p.flush(20) == 0


def _raw(df) -> list[tuple]:
    return sorted((r.partition, r.offset, int(r.timestamp.timestamp() * 1000), None if r.value is None else bytes(r.value),
                   [(h.key, None if h.value is None else bytes(h.value)) for h in (r.headers or [])])
                  for r in df.collect())


HEADERED = [  # (partition, seconds after BASE, value, headers): duplicate keys, empty and null values
    (0, 0, b"a0", [("trace", b"1"), ("trace", b"2")]),
    (0, 10, b"a1", [("empty", b"")]),
    (0, 20, b"a2", [("null", None)]),
    (0, 30, b"a3", []),
    (0, 25, b"a4", [("late", b"yes")]),
    (0, 40, b"a5", [("k", b"v"), ("other", b"\x00\xff")]),
    (1, 5, b"b0", [("k", b"v")]),
    (1, 35, b"b1", [("k", b"w")]),
    (1, 15, b"b2", []),
    (1, 45, b"b3", [("k", b"x")]),
]


def _time_scenario(spark, bootstrap: str, source: str) -> dict[str, list[tuple]]:
    """Batch reads from and to times, with headers, on one broker; rows per question."""
    topic = f"hd-{uuid.uuid4().hex[:6]}"
    _produce(bootstrap, topic, [(p, BASE + s * 1000, v, h) for p, s, v, h in HEADERED])
    fmt = "kafka" if source == "kafka" else "hourglass_kafka"
    if source == "python":
        from pipeline.source import register
        register(spark)

    def read(**opts):
        return _raw(spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
                    .option("includeHeaders", "true").options(**opts).load())

    by_ts = json.dumps({topic: {"0": BASE + 20_000, "1": BASE + 10_000}})
    return {
        "all": read(),
        "startingOffsetsByTimestamp": read(startingOffsetsByTimestamp=by_ts),
        "startingTimestamp": read(startingTimestamp=str(BASE + 30_000)),
        # endings: the first offset at or after the time is excluded; none there: the latest
        "endingOffsetsByTimestamp": read(startingOffsetsByTimestamp=by_ts, endingOffsetsByTimestamp=json.dumps(
            {topic: {"0": BASE + 35_000, "1": BASE + 99_000}})),
        "endingTimestamp": read(endingTimestamp=str(BASE + 30_000)),
    }


def _expected_time_scenario() -> dict[str, list[tuple]]:
    def rows(pred):
        out, offs = [], Counter()
        for p, s, v, h in HEADERED:
            o = offs[p]
            offs[p] += 1
            if pred(p, o):
                out.append((p, o, BASE + s * 1000, v, h))
        return sorted(out)

    stamps = {p: [s for q, s, _, _ in HEADERED if q == p] for p in (0, 1)}

    def first(p, secs):  # KIP-33: the first offset whose timestamp is >= the time, else the end
        return next((i for i, s in enumerate(stamps[p]) if s >= secs), len(stamps[p]))
    start = {0: first(0, 20), 1: first(1, 10)}
    return {
        "all": rows(lambda p, o: True),
        "startingOffsetsByTimestamp": rows(lambda p, o: o >= start[p]),
        "startingTimestamp": rows(lambda p, o: o >= first(p, 30)),
        "endingOffsetsByTimestamp": rows(lambda p, o: start[p] <= o < {0: first(0, 35), 1: first(1, 99)}[p]),
        "endingTimestamp": rows(lambda p, o: o < first(p, 30)),
    }


@pytest.mark.parametrize("source", ["kafka", "python"])
def test_times_and_headers_match_the_model_and_apache_kafka(broker, kafka_factory, spark, source):
    want = _expected_time_scenario()
    assert want["endingOffsetsByTimestamp"] and want["endingTimestamp"]
    assert _time_scenario(spark, broker.bootstrap, source) == want
    if source == "kafka":  # the same reads against Apache Kafka: Spark must see the same rows
        assert _time_scenario(spark, kafka_factory().bootstrap, source) == want


class Batches:
    """A foreachBatch sink that keeps every micro-batch's rows in this process (unlike the memory
    sink, a query writing to it can restart from its checkpoint, and a batch read twice shows)."""

    def __init__(self):
        self.rows: list[tuple] = []

    def __call__(self, df, batch_id: int) -> None:
        self.rows += [(r.partition, r.offset, bytes(r.value)) for r in df.collect()]

    def sorted(self) -> list[tuple]:
        assert len(set(self.rows)) == len(self.rows), "a record in two micro-batches"
        return sorted(self.rows)


def _start_raw_stream(spark, bootstrap: str, topic: str, checkpoint: str, sink: Batches, **opts):
    df = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
          .options(**opts).load().selectExpr("partition", "offset", "value"))
    return (df.writeStream.foreachBatch(sink).option("checkpointLocation", checkpoint)
            .trigger(processingTime="500 milliseconds").start())


def _stream_rows(spark, name: str) -> list[tuple]:
    return sorted((r.partition, r.offset, bytes(r.value)) for r in spark.table(name).collect())


def test_running_query_from_timestamps_picks_up_new_records(broker, spark, tmp_path):
    topic = f"rs-{uuid.uuid4().hex[:6]}"
    events = produce_events(broker.bootstrap, topic)
    by_ts = json.dumps({topic: {"0": BASE + 55_000, "1": BASE + 30_000}})
    sink = Batches()
    q = _start_raw_stream(spark, broker.bootstrap, topic, str(tmp_path / "ckpt"), sink,
                          startingOffsetsByTimestamp=by_ts)
    try:
        q.processAllAvailable()
        first = {0: 6, 1: 4}  # P0[6] = 60 s >= 55 s; P1[4] = 35 s >= 30 s
        want = [(p, o, json.dumps(events[p][o]).encode()) for p in (0, 1) for o in range(first[p], 12)]
        assert sink.sorted() == sorted(want)
        from confluent_kafka import Producer
        pr = Producer({"bootstrap.servers": broker.bootstrap})
        for i in range(5):
            pr.produce(topic, b"new-%d" % i, partition=i % 2, timestamp=BASE + 300_000 + i)
        assert pr.flush(10) == 0
        q.processAllAvailable()
        want += [(i % 2, 12 + i // 2, b"new-%d" % i) for i in range(5)]
        assert sink.sorted() == sorted(want)
        assert q.exception() is None and q.isActive
    finally:
        q.stop()


def test_stream_available_now_with_offsets_by_timestamp(broker, spark, tmp_path):
    topic = f"an-{uuid.uuid4().hex[:6]}"
    events = produce_events(broker.bootstrap, topic)
    name = f"an_{uuid.uuid4().hex[:6]}"
    by_ts = json.dumps({topic: {"0": BASE + 100_000, "1": BASE + 60_000}})
    df = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
          .option("subscribe", topic).option("startingOffsetsByTimestamp", by_ts).load()
          .selectExpr("partition", "offset", "value"))
    q = (df.writeStream.format("memory").queryName(name).option("checkpointLocation", str(tmp_path / "c"))
         .trigger(availableNow=True).start())
    q.awaitTermination(120)
    assert not q.isActive and q.exception() is None
    first = {0: 10, 1: 8}  # P0[10] = 100 s; P1[8] = 65 s, the first >= 60 s (P1[10] = 62 s comes later)
    want = [(p, o, json.dumps(events[p][o]).encode()) for p in (0, 1) for o in range(first[p], 12)]
    assert _stream_rows(spark, name) == sorted(want)


def test_query_resumes_from_its_checkpoint_across_broker_restarts(broker, spark, tmp_path):
    """A running query survives a broker restart; stopped, the broker restarted again and
    records added, the query started from the same checkpoint reads exactly those records:
    nothing again, nothing missed."""
    from confluent_kafka import Producer
    topic = f"ck-{uuid.uuid4().hex[:6]}"
    _produce(broker.bootstrap, topic, [(i % 2, BASE + i * 1000, b"one-%d" % i, []) for i in range(10)])
    ckpt = str(tmp_path / "ckpt")
    opts = {"startingTimestamp": str(BASE + 4000)}
    sink = Batches()
    q = _start_raw_stream(spark, broker.bootstrap, topic, ckpt, sink, **opts)
    try:
        q.processAllAvailable()
        want = [(i % 2, i // 2, b"one-%d" % i) for i in range(4, 10)]
        assert sink.sorted() == sorted(want)
        broker.restart()  # same port, same data: the query's consumers reconnect
        pr = Producer({"bootstrap.servers": broker.bootstrap})
        for i in range(10, 16):
            pr.produce(topic, b"two-%d" % i, partition=i % 2, timestamp=BASE + i * 1000)
        assert pr.flush(20) == 0
        q.processAllAvailable()
        want += [(i % 2, i // 2, b"two-%d" % i) for i in range(10, 16)]
        assert sink.sorted() == sorted(want)
        assert q.exception() is None
    finally:
        q.stop()
    broker.restart()
    pr = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(16, 21):
        pr.produce(topic, b"three-%d" % i, partition=i % 2, timestamp=BASE + i * 1000)
    assert pr.flush(20) == 0
    again = Batches()
    q = _start_raw_stream(spark, broker.bootstrap, topic, ckpt, again, **opts)
    try:
        q.processAllAvailable()
        assert again.sorted() == sorted((i % 2, i // 2, b"three-%d" % i) for i in range(16, 21))
    finally:
        q.stop()


def _read_topic(bootstrap: str, topic: str, n: int) -> list:
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=20)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{uuid.uuid4().hex[:6]}",
                  "isolation.level": "read_committed"})
    c.assign([TopicPartition(topic, p, 0) for p in md.topics[topic].partitions])
    got, deadline = [], time.monotonic() + 30
    while len(got) < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m)
    c.close()
    return got


def test_kafka_sink_batch_and_stream(broker, spark, tmp_path):
    """The pipeline's counts through Spark's kafka sink (batch, then a streaming update query),
    read back: keys, JSON values, headers."""
    topic = f"ev-{uuid.uuid4().hex[:6]}"
    events = produce_events(broker.bootstrap, topic)
    t = BASE + 30_000
    want = model_counts(events, model_from(events, t))
    out = f"counts-{uuid.uuid4().hex[:6]}"
    job.run(spark, args(broker.bootstrap, topic, "--from", str(t), "--sink", "kafka", "--output", out))
    got = _read_topic(broker.bootstrap, out, len(want))
    assert len(got) == len(want)
    seen = Counter()
    for m in got:
        v = json.loads(m.value())
        assert m.key().decode() == f"{v['window_start']}/{v['kind']}"
        assert v["window_end"] - v["window_start"] == 30_000
        assert m.headers() == [("hourglass.source", topic.encode())]
        seen[(v["window_start"] // 1000, v["kind"])] = v["count"]
    assert seen == want

    streamed = f"counts-{uuid.uuid4().hex[:6]}"
    job.run(spark, args(broker.bootstrap, topic, "--from", str(t), "--stream", "--sink", "kafka", "--output",
                        streamed, "--checkpoint", str(tmp_path / "ckpt"), "--watermark", "1000 days"))
    got = _read_topic(broker.bootstrap, streamed, len(want))
    assert Counter({(json.loads(m.value())["window_start"] // 1000, json.loads(m.value())["kind"]):
                    json.loads(m.value())["count"] for m in got}) == want


def test_kafka_sink_writes_partitions_and_headers(broker, spark):
    """Spark's kafka sink writes the key, value (null too), partition and headers columns (it
    has no timestamp column: records get the producer's time)."""
    topic = f"sk-{uuid.uuid4().hex[:6]}"
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(20)
    from pyspark.sql import Row
    from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructField, StructType
    schema = StructType([StructField("key", BinaryType()), StructField("value", BinaryType()),
                         StructField("partition", IntegerType()),
                         StructField("headers", ArrayType(StructType([StructField("key", StringType()),
                                                                      StructField("value", BinaryType())])))])
    rows = [Row(key=b"k%d" % i, value=None if i == 3 else b"v%d" % i, partition=i % 3,
                headers=[Row(key="n", value=str(i).encode()), Row(key="n", value=None)]) for i in range(9)]
    before = int(time.time() * 1000)
    (spark.createDataFrame(rows, schema).write.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
     .option("topic", topic).save())
    after = int(time.time() * 1000)
    got = sorted(_read_topic(broker.bootstrap, topic, 9), key=lambda m: m.key())
    assert [(m.key(), m.value(), m.partition(), m.headers()) for m in got] == \
        [(b"k%d" % i, None if i == 3 else b"v%d" % i, i % 3, [("n", str(i).encode()), ("n", None)]) for i in range(9)]
    assert all(before <= m.timestamp()[1] <= after for m in got)
    # and Spark's source reads back what its sink wrote
    back = _raw(spark.read.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
                .option("subscribe", topic).option("includeHeaders", "true").load())
    assert sorted(((p, v, h) for p, _, _, v, h in back), key=repr) == \
        sorted(((i % 3, None if i == 3 else b"v%d" % i, [("n", str(i).encode()), ("n", None)]) for i in range(9)),
               key=repr)
