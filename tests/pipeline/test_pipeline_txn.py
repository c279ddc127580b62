"""The PySpark pipeline over a transactional topic (issue 17): with
``kafka.isolation.level=read_committed`` (``--isolation-level read_committed``) a batch read
from a point in time returns exactly the committed records from the KIP-33 start offset up
to the last stable offset: no aborted record, nothing of a transaction still open.

The model comes from a brute-force scan of the partition's .log files: the start is the first
offset whose timestamp is >= T over everything in the log (transaction markers included:
they carry the time they were written, so later than any event here), as Kafka's
ListOffsets answers it; the end is the LSO.
"""
from __future__ import annotations

import json
import uuid

import pytest

from pipeline import job
from tests.pipeline.conftest import SPARK_GROUP
from tests.helpers.txn import READ_COMMITTED, create_topic, scan_partition, txn_producer
from tests.pipeline.test_pipeline import BASE, KINDS, args

# one SparkSession per test process: every test of this module on the same xdist worker
pytestmark = pytest.mark.xdist_group(SPARK_GROUP)

# (partition, outcome, event seconds after BASE)
TXNS = [
    ("commit", [(0, 0), (1, 5), (0, 10), (1, 15)]),
    ("abort", [(0, 20), (1, 25), (0, 30), (1, 35)]),
    ("commit", [(0, 40), (1, 12), (0, 50), (1, 55)]),      # a late event on partition 1
    ("abort", [(0, 60), (1, 65)]),
    ("commit", [(0, 70), (1, 75), (0, 80)]),
    ("open", [(0, 90), (1, 95)]),                            # never committed: past the LSO
]


def produce_transactions(bootstrap: str, topic: str):
    create_topic(bootstrap, topic, 2)
    p = txn_producer(bootstrap, f"spark-{uuid.uuid4().hex[:6]}")
    n = 0
    for outcome, events in TXNS:
        p.begin_transaction()
        for part, secs in events:
            ev = {"id": str(n), "ts": BASE + secs * 1000, "kind": KINDS[n % 3]}
            p.produce(topic, json.dumps(ev).encode(), partition=part, timestamp=ev["ts"])
            n += 1
        assert p.flush(20) == 0
        if outcome == "commit":
            p.commit_transaction(20)
        elif outcome == "abort":
            p.abort_transaction(20)
    return p      # keep the open transaction's producer alive (and open) during the read


def _model(broker, topic: str, t: int, states: tuple[str, ...], upper: str) -> list[tuple[int, int, bytes]]:
    """(partition, offset, value) of records in ``states`` from the KIP-33 start for ``t`` up
    to the LSO (``upper="lso"``) or the log end (``"end"``)."""
    out = []
    for part in (0, 1):
        scan = scan_partition(broker.data_dir / f"{topic}-{part}")
        start = scan.first_offset_reaching(t)
        end = scan.last_stable_offset if upper == "lso" else scan.log_end_offset
        assert start is not None and start < end
        out += [(part, r.offset, r.value) for r in scan.records if r.state in states and start <= r.offset < end]
    return sorted(out)


@pytest.mark.parametrize("source", ["kafka", "python"])
def test_read_committed_from_a_time_reads_only_committed_records(broker, spark, source):
    """Over committed, aborted and still-open transactions: Spark's kafka source (and the Python
    data source) with kafka.isolation.level=read_committed; read_uncommitted (Spark's default)
    reads every data record up to the log end (control records are never rows)."""
    topic = f"txev-{uuid.uuid4().hex[:6]}"
    producer = produce_transactions(broker.bootstrap, topic)
    t = BASE + 30_000
    want = _model(broker, topic, t, ("committed",), "lso")
    assert want, "the model selects nothing"
    a = args(broker.bootstrap, topic, "--from", str(t), "--isolation-level", READ_COMMITTED, "--source", source)
    rows = job.read(spark, a).select("partition", "offset", "value").collect()
    assert sorted((r.partition, r.offset, bytes(r.value)) for r in rows) == want
    everything = _model(broker, topic, t, ("committed", "aborted", "open"), "end")
    rows = job.read(spark, args(broker.bootstrap, topic, "--from", str(t), "--source", source)).collect()
    assert sorted((r.partition, r.offset, bytes(r.value)) for r in rows) == everything
    producer.abort_transaction(20)


def _source_rows(options: dict) -> list[tuple[int, int, bytes]]:
    """The Python data source's batch reader called directly (no Spark job), as Spark would."""
    from pipeline.source import HourglassKafkaSource
    reader = HourglassKafkaSource(options).reader(None)
    return sorted((row[3], row[4], row[1]) for part in reader.partitions() for row in reader.read(part))


def test_python_source_isolation_option_and_default_match_sparks_kafka_source(broker):
    """kafka.isolation.level=read_uncommitted reads aborted and open records too, up to the
    log end; with no option the source must read as Spark's kafka source does by default,
    i.e. as the Java consumer's default isolation.level, read_uncommitted (librdkafka's own
    default is read_committed, so the source has to say so)."""
    topic = f"txev-{uuid.uuid4().hex[:6]}"
    producer = produce_transactions(broker.bootstrap, topic)
    t = BASE + 30_000
    opts = {"kafka.bootstrap.servers": broker.bootstrap, "subscribe": topic, "startingTimestamp": str(t)}
    committed = _model(broker, topic, t, ("committed",), "lso")
    everything = _model(broker, topic, t, ("committed", "aborted", "open"), "end")
    assert _source_rows({**opts, "kafka.isolation.level": READ_COMMITTED}) == committed
    assert _source_rows({**opts, "kafka.isolation.level": "read_uncommitted"}) == everything
    assert _source_rows(opts) == everything, "default isolation differs from Spark's kafka source"
    producer.abort_transaction(20)
