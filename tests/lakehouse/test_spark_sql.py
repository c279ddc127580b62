"""Spark SQL over topics' Iceberg tables, through the broker's Iceberg REST catalog URL with
Iceberg's own Spark runtime (tests/helpers/spark_iceberg.py: PySpark 4.1, the newest Spark that
runtime is served for). Random topics (keys, headers, out-of-order CreateTimes, LogAppendTime,
committed and aborted transactions, several partitions); the truth is the read_committed log,
record for record. One Spark session for the module: every question goes in one job."""
from __future__ import annotations

import datetime as dt
import random

from confluent_kafka import Consumer, Producer, TopicPartition

from tests.helpers import spark_iceberg
from tests.helpers.txn import create_topic, txn_producer, unique
from tests.lakehouse.test_iceberg_topics import _http, lake, log_rows, produce_random, table, wait_caught_up  # noqa: F401

COLUMNS = ("redpanda.partition, redpanda.offset, unix_millis(redpanda.timestamp), redpanda.timestamp_type, "
           "redpanda.key, value, redpanda.headers")


def spark_rows(rows: list[list]) -> list[tuple]:
    """Spark's answer in the shape of ``log_rows``."""
    u = spark_iceberg.unb64
    return sorted((p, o, ts, tt, u(k), u(v), tuple((h["key"], u(h["value"])) for h in hs))
                  for p, o, ts, tt, k, v, hs in rows)


def offsets_for_times(bootstrap: str, topic: str, partitions: int, t_ms: int) -> dict[int, int]:
    """partition -> the first offset whose timestamp is >= ``t_ms`` (ListOffsets, KIP-33), -1 for none."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("oft"), "isolation.level": "read_committed"})
    try:
        res = c.offsets_for_times([TopicPartition(topic, p, t_ms) for p in range(partitions)], timeout=20)
        return {r.partition: r.offset for r in res}
    finally:
        c.close()


def produce_round(b: str, rng: random.Random, plain: Producer, txn, now: int, topics) -> None:
    for _ in range(3):
        for topic, parts in topics:
            produce_random(plain, rng, topic, parts, rng.randint(5, 25), now)
        txn.begin_transaction()
        for topic, parts in topics:
            produce_random(txn, rng, topic, parts, rng.randint(1, 10), now)
        (txn.commit_transaction if rng.random() < 0.5 else txn.abort_transaction)(30)
    plain.flush(30)


def test_spark_sql_reads_the_table_as_the_log_now_as_of_and_from_a_time(lake):
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    b, url = lake.bootstrap, lake.catalog_url
    topics = (("events", 3), ("stamped", 2))
    create_topic(b, "events", 3, {"iceberg.mode": "key_value"})
    create_topic(b, "stamped", 2, {"iceberg.mode": "key_value", "message.timestamp.type": "LogAppendTime"})
    plain = Producer({"bootstrap.servers": b, "linger.ms": 5})
    txn = txn_producer(b, unique("iceberg-spark"))
    now = int(dt.datetime.now(dt.timezone.utc).timestamp() * 1000)

    produce_round(b, rng, plain, txn, now, topics)
    first = log_rows(b, "events", 3)
    wait_caught_up(url, "events", first)
    snap = table(url, "events").current_snapshot()
    produce_round(b, rng, plain, txn, now, topics)
    expected = {topic: log_rows(b, topic, parts) for topic, parts in topics}
    for topic, _ in topics:
        wait_caught_up(url, topic, expected[topic])
    assert len(first) < len(expected["events"]), f"seed {seed}"

    # a time T among the records' (out of order) CreateTimes; the rows at offsets from
    # offsets-for-times(T) on are one filter away
    t_ms = sorted(r[2] for r in expected["events"])[len(expected["events"]) // 2]
    starts = offsets_for_times(b, "events", 3, t_ms)
    from_t = sorted(r for r in expected["events"] if starts[r[0]] >= 0 and r[1] >= starts[r[0]])
    where = " OR ".join(f"(redpanda.partition = {p} AND redpanda.offset >= {o})" for p, o in starts.items() if o >= 0)
    as_of = dt.datetime.fromtimestamp(snap.timestamp_ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")

    got = spark_iceberg.sql(url, {
        "tables": "SHOW TABLES IN hourglass.redpanda",
        "events": f"SELECT {COLUMNS} FROM hourglass.redpanda.events",
        "stamped": f"SELECT {COLUMNS} FROM hourglass.redpanda.stamped",
        "version_as_of": f"SELECT {COLUMNS} FROM hourglass.redpanda.events VERSION AS OF {snap.snapshot_id}",
        "timestamp_as_of": f"SELECT {COLUMNS} FROM hourglass.redpanda.events TIMESTAMP AS OF '{as_of}'",
        "from_t": f"SELECT {COLUMNS} FROM hourglass.redpanda.events WHERE {where}",
        "snapshots": "SELECT snapshot_id, summary['hourglass.partition.0.last-offset'] "
                     "FROM hourglass.redpanda.events.snapshots",
    })
    assert sorted(r[1] for r in got["tables"]) == ["events", "stamped"]
    for topic, _ in topics:
        assert spark_rows(got[topic]) == expected[topic], f"seed {seed}: {topic}"
    assert {r[3] for r in expected["stamped"]} == {1} and {r[3] for r in expected["events"]} == {0}
    assert spark_rows(got["version_as_of"]) == first, f"seed {seed}"
    assert spark_rows(got["timestamp_as_of"]) == first, f"seed {seed}"
    # (not necessarily fewer than all rows: with out-of-order times every partition's first
    # record may be at or after T)
    assert spark_rows(got["from_t"]) == from_t and from_t, f"seed {seed}"
    # the metadata table `events.snapshots`: Iceberg's Spark catalog looks for it after LoadTable
    # of table `snapshots` in namespace `redpanda.events` answered NoSuchTableException (the REST
    # spec's 404 for LoadTable, a missing namespace included)
    assert {r[0] for r in got["snapshots"]} == {s.snapshot_id for s in table(url, "events").snapshots()}
    status, body = _http("GET", url + "/v1/namespaces/redpanda%1Fevents/tables/snapshots")
    assert (status, body["error"]["type"]) == (404, "NoSuchTableException")
