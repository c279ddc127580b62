"""Spark SQL over an upsert table (``iceberg.upsert``) of a compacted topic, through the broker's
Iceberg REST catalog with Iceberg's own Spark runtime (tests/helpers/spark_iceberg.py, one Spark
session for the module). The tables are copy-on-write (overwrite snapshots that replace data
files), so this is Iceberg's Java reader agreeing with pyiceberg's on what each snapshot holds:
now, the latest value per key of the compacted log; as of an earlier snapshot, what pyiceberg
reads of that snapshot."""
from __future__ import annotations

import random

from confluent_kafka import Producer

from tests.helpers import spark_iceberg
from tests.helpers.txn import create_topic, txn_producer, unique
from tests.lakehouse.test_spark_sql import COLUMNS, spark_rows
from tests.lakehouse.test_upsert_topics import (COMPACTED, compacted_view, end_with_a_value_in_every_partition,  # noqa: F401
                                                lake, produce_round, wait_cleaned)
from tests.lakehouse.test_iceberg_topics import rows_of, table, wait_caught_up


def test_spark_sql_reads_the_upsert_table_as_the_compacted_log(lake):
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    b, url, topic = lake.bootstrap, lake.catalog_url, "prices"
    create_topic(b, topic, 2, COMPACTED)
    keys = [b"p%d" % i for i in range(10)]
    plain = Producer({"bootstrap.servers": b, "linger.ms": 5})
    txn = txn_producer(b, unique("upsert-spark"))
    plain.produce(topic, partition=0, key=b"first", value=b"old")
    for step in range(6):
        produce_round(plain, txn, rng, topic, 2, keys)
        if step == 2:
            plain.produce(topic, partition=0, key=b"first", value=b"new")
            end_with_a_value_in_every_partition(plain, topic, 2)
            log, _ = compacted_view(b, topic, 2)
            wait_caught_up(url, topic, log)
            earlier = table(url, topic).current_snapshot().snapshot_id
    wait_cleaned(b, plain, topic, 2)
    log, expected = compacted_view(b, topic, 2)
    wait_caught_up(url, topic, log)
    now = table(url, topic)
    assert rows_of(now) == expected, f"seed {seed}"
    got = spark_iceberg.sql(url, {
        "now": f"SELECT {COLUMNS} FROM hourglass.redpanda.prices",
        "earlier": f"SELECT {COLUMNS} FROM hourglass.redpanda.prices VERSION AS OF {earlier}",
        "per_key": "SELECT redpanda.partition, redpanda.key, count(*) FROM hourglass.redpanda.prices "
                   "GROUP BY 1, 2 HAVING count(*) > 1",
        "snapshots": "SELECT snapshot_id, operation, summary['hourglass.partition.0.last-offset'], "
                     "summary['hourglass.partition.1.last-offset'] FROM hourglass.redpanda.prices.snapshots",
    })
    assert spark_rows(got["now"]) == expected, f"seed {seed}"
    assert spark_rows(got["earlier"]) == rows_of(now, earlier), f"seed {seed}"
    assert got["per_key"] == []
    assert {r[0] for r in got["snapshots"]} == {s.snapshot_id for s in now.snapshots()}
    assert "overwrite" in {r[1] for r in got["snapshots"]}
    current = next(r for r in got["snapshots"] if r[0] == now.current_snapshot().snapshot_id)
    assert [int(current[2]), int(current[3])] == [max(r[1] for r in log if r[0] == p) for p in (0, 1)]
