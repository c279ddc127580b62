"""Every call Spark's kafka connector makes (kafka-clients 3.9.1, as measured under PySpark 4.x),
repeated with the stock Java client and checked against the produced timestamps.

Driver: Admin.describeCluster (DescribeCluster v1), Admin.describeTopics (DescribeTopicPartitions
v0), Admin.listOffsets with forTimestamp/earliest/latest (ListOffsets v9). Executors: a consumer
with assign + seek + poll (Fetch v17, topic ids). Deprecated offset fetching: a group consumer
(FindCoordinator v6, JoinGroup v9, SyncGroup v5, OffsetFetch v9, LeaveGroup v5).
"""
from __future__ import annotations

import time
import uuid

from tests.helpers.java import run_java

BASE = (int(time.time()) - 3600) * 1000
# CreateTimes with out-of-order records; one batch holds them all (targets fall inside it)
STAMPS = [BASE + d for d in (0, 1000, 2000, 1500, 3000, 4000, 3500, 5000, 6000, 7000)]


def _first_at_or_after(t: int):
    return next(((i, ts) for i, ts in enumerate(STAMPS) if ts >= t), (-1, -1))


def test_spark_driver_and_executor_calls(broker):
    topic = f"spark-{uuid.uuid4().hex[:6]}"
    b = ["--bootstrap", broker.bootstrap, "--topic", topic]
    run_java(["admin-create", *b, "--partitions", 1])
    produced = run_java(["produce", *b, "--partition", 0, "--count", len(STAMPS), "--acks", "all",
                         "--props", "linger.ms=100", "--timestamps", ",".join(map(str, STAMPS))])
    assert [r["offset"] for r in produced] == list(range(len(STAMPS)))

    (cluster,) = run_java(["admin-describe-cluster", "--bootstrap", broker.bootstrap])
    assert cluster["clusterId"] and cluster["controller"]["id"] == 1 and len(cluster["nodes"]) == 1
    (desc,) = run_java(["admin-describe-topics", *b])
    assert desc["name"] == topic and desc["topicId"] not in ("", "null", "AAAAAAAAAAAAAAAAAAAAAA")
    assert [(p["partition"], p["leader"]) for p in desc["partitions"]] == [(0, 1)]

    (earliest,) = run_java(["list-offsets", *b, "--spec", "earliest"])
    (latest,) = run_java(["list-offsets", *b, "--spec", "latest"])
    assert (earliest["offset"], latest["offset"]) == (0, len(STAMPS))
    for t in (BASE - 1, BASE, BASE + 1200, BASE + 1500, BASE + 3200, BASE + 7000, BASE + 7001):
        (ans,) = run_java(["list-offsets", *b, "--spec", f"ts:{t}"])
        # Spark turns offset -1 into its startingOffsetsByTimestampStrategy (error or latest)
        assert (ans["offset"], ans["timestamp"]) == _first_at_or_after(t), t

    recs = run_java(["consume", *b, "--partition", 0, "--from-offset", 4, "--count", 6])
    assert [(r["offset"], r["timestamp"]) for r in recs] == [(o, STAMPS[o]) for o in range(4, 10)]


def test_spark_deprecated_group_offset_fetching(broker):
    topic = f"spark-g-{uuid.uuid4().hex[:6]}"
    b = ["--bootstrap", broker.bootstrap, "--topic", topic]
    run_java(["admin-create", *b, "--partitions", 1])
    run_java(["produce", *b, "--partition", 0, "--count", 5, "--acks", "all"])
    out = run_java(["group-consume", *b, "--group", f"spark-kafka-source-{uuid.uuid4().hex[:6]}", "--count", 5])
    assert out[-1] == {"committed": {"0": 5}}
