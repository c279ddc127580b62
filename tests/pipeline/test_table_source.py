"""The pipeline reads a topic's Iceberg table from a time (``--source iceberg``: the Python data
source ``hourglass_iceberg`` over the broker's Iceberg REST catalog) instead of the log: the same
rows as Spark's own kafka source with ``startingTimestamp`` T (and ``startingOffsetsByTimestamp``)
and read_committed, record for record, on a random topic (keys, headers, out-of-order
CreateTimes, committed and aborted transactions, several partitions); and after the log's
retention deleted the oldest segments, the table still replays them."""
from __future__ import annotations

import datetime as dt
import json
import random

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from pipeline import job, offsets
from tests.helpers.clients import wait_until
from tests.helpers.txn import READ_COMMITTED, create_topic, txn_producer, unique
from tests.lakehouse.test_iceberg_topics import lake, log_rows, log_start, produce_random, wait_caught_up  # noqa: F401
from tests.pipeline.conftest import SPARK_GROUP
from tests.pipeline.test_pipeline import args

# one SparkSession per test process: every test of this module on the same xdist worker
pytestmark = pytest.mark.xdist_group(SPARK_GROUP)


def test_earliest_at_or_after_prefers_the_lower_offset_either_holds():
    assert offsets.earliest_at_or_after(7, 9) == 7      # the log holds it: where Spark's kafka source starts
    assert offsets.earliest_at_or_after(7, 3) == 3      # retention deleted 3..6, the table keeps them
    assert offsets.earliest_at_or_after(-1, 3) == 3     # nothing left in the log at or after T
    assert offsets.earliest_at_or_after(7, -1) == 7     # not translated yet (or aborted only)
    assert offsets.earliest_at_or_after(-1, -1) == -1


def rows(df) -> list[tuple]:
    return sorted((r.partition, r.offset, int(r.timestamp.timestamp() * 1000), r.timestampType,
                   None if r.key is None else bytes(r.key), None if r.value is None else bytes(r.value),
                   None if r.headers is None else
                   tuple((h.key, None if h.value is None else bytes(h.value)) for h in r.headers))
                  for r in df.collect())


def from_times(bootstrap: str, topic: str, times: dict[int, int], everything: list[tuple]) -> list[tuple]:
    """The model: the committed rows at or after each partition's offsets-for-times(T), as the
    broker's ListOffsets answers it (its lookup counts aborted records too, so the start is the
    broker's, not a filter on the committed rows' timestamps); a partition with no record at or
    after T contributes none."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("oft")})
    try:
        got = c.offsets_for_times([TopicPartition(topic, p, t) for p, t in times.items()], timeout=30)
    finally:
        c.close()
    start = {tp.partition: tp.offset if tp.offset >= 0 else float("inf") for tp in got}
    return [r for r in everything if r[1] >= start[r[0]]]


def test_table_source_reads_the_rows_of_spark_kafka_source_from_a_time(lake, spark):
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    b, url, topic = lake.bootstrap, lake.catalog_url, unique("replay")
    create_topic(b, topic, 3, {"iceberg.mode": "key_value", "segment.bytes": "3000"})
    plain = Producer({"bootstrap.servers": b, "linger.ms": 5})
    txn = txn_producer(b, unique("replay-txn"))
    now = int(dt.datetime.now(dt.timezone.utc).timestamp() * 1000)
    for _ in range(6):
        produce_random(plain, rng, topic, 3, rng.randint(5, 25), now)
        txn.begin_transaction()
        produce_random(txn, rng, topic, 3, rng.randint(1, 10), now)
        (txn.commit_transaction if rng.random() < 0.5 else txn.abort_transaction)(30)
    plain.flush(30)
    everything = log_rows(b, topic, 3)
    wait_caught_up(url, topic, everything)

    t = sorted(r[2] for r in everything)[len(everything) // 2]
    kafka = rows(job.read(spark, args(b, topic, "--from", str(t), "--isolation-level", READ_COMMITTED,
                                      "--source", "kafka")))
    table = rows(job.read(spark, args(b, topic, "--from", str(t), "--source", "iceberg", "--catalog", url)))
    assert table == kafka, f"seed {seed}"
    assert [r[:2] for r in kafka] == [r[:2] for r in from_times(b, topic, {p: t for p in range(3)}, everything)] \
        and kafka, f"seed {seed}"
    # a time per partition (startingOffsetsByTimestamp), each among that partition's own times
    per = {p: sorted(r[2] for r in everything if r[0] == p) for p in range(3)}
    by_ts = json.dumps({topic: {str(p): ts[len(ts) // 3] for p, ts in per.items()}})
    kafka = rows(job.read(spark, args(b, topic, "--from", by_ts, "--isolation-level", READ_COMMITTED,
                                      "--source", "kafka")))
    table = rows(job.read(spark, args(b, topic, "--from", by_ts, "--source", "iceberg", "--catalog", url)))
    assert table == kafka, f"seed {seed}"
    model = from_times(b, topic, {p: ts[len(ts) // 3] for p, ts in per.items()}, everything)
    assert [r[:2] for r in kafka] == [r[:2] for r in model] and kafka, f"seed {seed}"
    # the whole job over either source: the same windowed counts
    counts = {}
    for source in ("kafka", "iceberg"):
        a = args(b, topic, "--from", str(t), "--isolation-level", READ_COMMITTED, "--source", source, "--catalog", url)
        job.run(spark, a)
        counts[source] = sorted(tuple(r) for r in spark.table(a.query_name).collect())
    assert counts["iceberg"] == counts["kafka"] and counts["kafka"], f"seed {seed}"

    # retention deletes the log's oldest segments: Spark's kafka source can only start at the
    # log start; the table still replays everything from the earliest time
    admin = AdminClient({"bootstrap.servers": b})
    res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "1", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result(20)
    wait_until(lambda: log_start(b, topic) > 0, timeout=30, what="retention deleting partition 0's first segments")
    t0 = min(r[2] for r in everything)
    replayed = rows(job.read(spark, args(b, topic, "--from", str(t0), "--source", "iceberg", "--catalog", url)))
    assert [r[:6] + (r[6] or (),) for r in replayed] == everything, f"seed {seed}"
    with pytest.raises(job.SourceError, match="--stream"):
        job.read(spark, args(b, topic, "--stream", "--source", "iceberg", "--catalog", url))
