"""The PySpark pipeline end to end: Spark (PySpark 4.2, local[2]) reads a live broker from a
point in time through Spark's own kafka source (and, where marked, the Python data source kept
for hosts without the connector), and the windowed counts are exact.

Records carry known CreateTimes, some out of order. The model for "start at time T" is
KIP-33's: per partition, everything from the first offset whose timestamp is >= T on (later
records with smaller timestamps included), as Spark's kafka source does.
"""
from __future__ import annotations

import json
import time
import uuid
from collections import Counter

import pytest

from pipeline import job
from tests.pipeline.conftest import SPARK_GROUP

# one SparkSession per test process: every test of this module on the same xdist worker
pytestmark = pytest.mark.xdist_group(SPARK_GROUP)

BASE = (int(time.time()) // 60 - 60) * 60_000  # an hour ago, on a minute boundary
# (partition, event time offset in s): partition 0 in order, partition 1 with late events
P0 = [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110]
P1 = [5, 15, 25, 12, 35, 45, 28, 55, 65, 75, 62, 85]
KINDS = ["click", "view", "buy"]


def produce_events(bootstrap: str, topic: str) -> dict[int, list[dict]]:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(20)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    out = {0: [], 1: []}
    n = 0
    for part, secs in ((0, P0), (1, P1)):
        for s in secs:
            ev = {"id": str(n), "ts": BASE + s * 1000, "kind": KINDS[n % 3]}
            p.produce(topic, json.dumps(ev).encode(), partition=part, timestamp=ev["ts"])
            out[part].append(ev)
            n += 1
    assert p.flush(20) == 0
    return out


def model_from(events: dict[int, list[dict]], t: int) -> dict[int, list[int]]:
    """KIP-33 start: per partition, offsets from the first one with timestamp >= t."""
    out = {}
    for part, evs in events.items():
        first = next((i for i, e in enumerate(evs) if e["ts"] >= t), len(evs))
        out[part] = list(range(first, len(evs)))
    return out


def model_counts(events, offsets, window_s=30) -> Counter:
    c = Counter()
    for part, offs in offsets.items():
        for o in offs:
            e = events[part][o]
            start = (e["ts"] // 1000 // window_s) * window_s
            c[(start, e["kind"])] += 1
    return c


def args(bootstrap, topic, *extra):
    return job.build_parser().parse_args(["--bootstrap", bootstrap, "--topic", topic, "--window", "30 seconds",
                                          "--sink", "memory", "--query-name", f"q_{uuid.uuid4().hex[:6]}", *extra])


def counts_of(spark, name) -> Counter:
    return Counter({(int(r.window_start.timestamp()), r.kind): r["count"] for r in spark.table(name).collect()})


# Spark's own kafka source (the default: the connector is on the session's classpath) and the
# Python data source kept for hosts without it
SOURCES = ["kafka", "python"]


@pytest.mark.parametrize("source", SOURCES)
def test_batch_from_a_time_reads_exactly_kip33_offsets_and_counts(broker, spark, source):
    topic = f"ev-{uuid.uuid4().hex[:6]}"
    events = produce_events(broker.bootstrap, topic)
    t = BASE + 30_000  # partition 1 has late records (12 s, 28 s) after its first record >= t
    a = args(broker.bootstrap, topic, "--from", str(t), "--source", source)
    raw = job.read(spark, a)
    got = sorted((r.partition, r.offset) for r in raw.select("partition", "offset").collect())
    want = model_from(events, t)
    assert got == sorted((p, o) for p, offs in want.items() for o in offs)
    job.run(spark, a)
    assert counts_of(spark, a.query_name) == model_counts(events, want)


@pytest.mark.parametrize("source", SOURCES)
def test_schema_and_timestamps_match_sparks_kafka_source(broker, spark, source):
    topic = f"ev-{uuid.uuid4().hex[:6]}"
    events = produce_events(broker.bootstrap, topic)
    df = job.read(spark, args(broker.bootstrap, topic, "--source", source))
    assert [f.name for f in df.schema.fields] == ["key", "value", "topic", "partition", "offset", "timestamp",
                                                  "timestampType", "headers"]
    rows = df.where("partition = 1").orderBy("offset").collect()
    assert [int(r.timestamp.timestamp() * 1000) for r in rows] == [e["ts"] for e in events[1]]
    assert {r.timestampType for r in rows} == {0} and rows[0].topic == topic


@pytest.mark.parametrize("source", SOURCES)
def test_per_partition_timestamps_and_ending_offsets(broker, spark, source):
    topic = f"ev-{uuid.uuid4().hex[:6]}"
    events = produce_events(broker.bootstrap, topic)
    start = json.dumps({topic: {"0": BASE + 55_000, "1": BASE}})
    a = args(broker.bootstrap, topic, "--from", start, "--ending-offsets", json.dumps({topic: {"0": 9, "1": -1}}),
             "--source", source)
    got = sorted((r.partition, r.offset) for r in job.read(spark, a).collect())
    assert got == [(0, o) for o in range(6, 9)] + [(1, o) for o in range(12)]


@pytest.mark.parametrize("source", SOURCES)
def test_no_record_after_the_time_errors_or_starts_at_the_end(broker, spark, source):
    topic = f"ev-{uuid.uuid4().hex[:6]}"
    produce_events(broker.bootstrap, topic)
    late = str(BASE + 3_600_000)
    with pytest.raises(Exception, match=f"No offset matched from request of topic-partition {topic}-[01] "
                                        f"and timestamp {late}"):
        job.read(spark, args(broker.bootstrap, topic, "--from", late, "--source", source)).collect()
    empty = job.read(spark, args(broker.bootstrap, topic, "--from", late, "--strategy", "latest", "--source", source))
    assert empty.count() == 0


def test_streaming_available_now_then_picks_up_new_records(broker, spark, tmp_path):
    from confluent_kafka import Producer
    topic = f"ev-{uuid.uuid4().hex[:6]}"
    events = produce_events(broker.bootstrap, topic)
    t = BASE + 30_000
    name = f"s_{uuid.uuid4().hex[:6]}"
    common = ["--from", str(t), "--stream", "--checkpoint", str(tmp_path / "ckpt"), "--query-name", name,
              "--watermark", "1000 days"]
    job.run(spark, args(broker.bootstrap, topic, *common))
    want = model_from(events, t)
    assert counts_of(spark, name) == model_counts(events, want)
    # new records; a second availableNow run from the same checkpoint reads only those
    p = Producer({"bootstrap.servers": broker.bootstrap})
    extra = [{"id": "n1", "ts": BASE + 200_000, "kind": "click"}, {"id": "n2", "ts": BASE + 201_000, "kind": "click"}]
    for e in extra:
        p.produce(topic, json.dumps(e).encode(), partition=0, timestamp=e["ts"])
    assert p.flush(10) == 0
    job.run(spark, args(broker.bootstrap, topic, *common))
    expected = model_counts(events, want)
    expected[((BASE + 180_000) // 1000, "click")] += 2
    assert counts_of(spark, name) == expected


def test_stream_reader_honours_max_offsets_per_trigger(broker):
    """Spark asks the source for its default read limit and passes it to latestOffset for
    processing-time triggers (availableNow asks for everything): at most N offsets per batch,
    shared by backlog, and the next batch continues where this one ended."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows
    from pipeline.source import HourglassKafkaSource
    topic = f"ev-{uuid.uuid4().hex[:6]}"
    produce_events(broker.bootstrap, topic)
    src = HourglassKafkaSource({"kafka.bootstrap.servers": broker.bootstrap, "subscribe": topic,
                                "startingOffsets": "earliest", "maxOffsetsPerTrigger": "6"})
    reader = src.streamReader(None)
    start = reader.initialOffset()
    assert start == {f"{topic}:0": 0, f"{topic}:1": 0}
    limit = reader.getDefaultReadLimit()
    assert isinstance(limit, ReadMaxRows) and limit.max_rows == 6
    end = reader.latestOffset(start, limit)
    assert end == {f"{topic}:0": 3, f"{topic}:1": 3}
    rows = [r for part in reader.partitions(start, end) for r in reader.read(part)]
    assert sorted((r[3], r[4]) for r in rows) == [(p, o) for p in (0, 1) for o in range(3)]
    assert reader.latestOffset(end, ReadAllAvailable()) == {f"{topic}:0": 12, f"{topic}:1": 12}
