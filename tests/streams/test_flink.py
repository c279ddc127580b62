"""Flink on Hourglass (issue 35): PyFlink ``flink.version`` with Flink's Kafka connector
(``flink-sql-connector-kafka`` ``flink.kafka.version``), both named in tests/jvm/pom.xml.

- A Flink SQL table with ``scan.startup.mode = 'timestamp'`` returns exactly the records from
  offsets-for-times onward (what a Kafka client's ``offsets_for_times`` answers, partition by
  partition), with their record timestamps as the ``timestamp`` metadata column, event-time
  watermarks derived from them, and a tumbling event-time window over them.
- A Flink job writing with the exactly-once sink (one Kafka transaction per checkpoint) is read
  back by a read_committed consumer: every row once, none missing.

The jobs run in PyFlink's own virtualenv (tests/helpers/pyflink.py, tests/streams/flink_jobs.py),
all of them in one PyFlink process against one broker for the module: on a busy 2-core machine
the start of PyFlink's JVM takes longer than the jobs.
"""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.helpers import pyflink
from tests.helpers.broker import BrokerProcess
from tests.helpers.txn import READ_COMMITTED, READ_UNCOMMITTED, end_offsets, read_to_end

pytestmark = [pytest.mark.timeout(600), pytest.mark.xdist_group("flink")]

PARTITIONS = 3
PER_PARTITION = 200
STEP_MS = 1000
WATERMARK_DELAY_MS = 1000


def _create(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(20)


EOS_ROWS = 2000


@pytest.fixture(scope="module")
def flink_run(tmp_path_factory):
    """One broker, the source topic written, then every Flink job in one PyFlink process."""
    broker = BrokerProcess(tmp_path_factory.mktemp("flink-broker") / "data")
    broker.start()
    try:
        src = f"flink-src-{uuid.uuid4().hex[:6]}"
        sink = f"flink-sink-{uuid.uuid4().hex[:6]}"
        _create(broker.bootstrap, src, PARTITIONS)
        _create(broker.bootstrap, sink, PARTITIONS)
        # recent (a multiple of 10 s): the topic's retention.ms must not delete the records
        t0 = (int(time.time()) // 10 - 60) * 10_000
        # each partition's timestamps rise one second per record, partition p starting p*300 ms later
        produced: dict[int, list[tuple[str, str, int]]] = {p: [] for p in range(PARTITIONS)}
        prod = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
        for i in range(PER_PARTITION):
            for p in range(PARTITIONS):
                ts = t0 + i * STEP_MS + p * 300
                key, value = f"k{p}-{i}", f"v{p}-{i}"
                prod.produce(src, key=key, value=value, partition=p, timestamp=ts)
                produced[p].append((key, value, ts))
        assert prod.flush(30) == 0
        start_ms = t0 + 77 * STEP_MS + 150  # between records: p0's 78th, p1's and p2's 77th onwards
        answers = pyflink.run_job("many", timeout=600, jobs=[
            ("read_from_timestamp", {"bootstrap": broker.bootstrap, "topic": src, "timestamp_ms": start_ms,
                                     "watermark_delay_ms": WATERMARK_DELAY_MS}),
            ("exactly_once_sink", {"bootstrap": broker.bootstrap, "topic": sink, "rows": EOS_ROWS,
                                   "rows_per_second": 500, "checkpoint_ms": 1000,
                                   "transactional_id_prefix": f"hg-flink-{uuid.uuid4().hex[:6]}"}),
        ])
        yield {"broker": broker, "src": src, "sink": sink, "produced": produced, "start_ms": start_ms,
               "answers": answers}
    finally:
        rc = broker.stop()
        assert rc == 0, f"broker exited {rc} on SIGTERM\n{broker.log_tail()}"


def test_flink_sql_table_from_a_timestamp(flink_run):
    bootstrap, topic, produced = flink_run["broker"].bootstrap, flink_run["src"], flink_run["produced"]
    start_ms = flink_run["start_ms"]
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "oft"})
    try:
        oft = c.offsets_for_times([TopicPartition(topic, p, start_ms) for p in range(PARTITIONS)], timeout=20)
    finally:
        c.close()
    start = {tp.partition: tp.offset for tp in oft}
    assert start == {0: 78, 1: 77, 2: 77}
    expected = sorted((p, off, *produced[p][off]) for p in range(PARTITIONS) for off in range(start[p], PER_PARTITION))

    out = flink_run["answers"]["read_from_timestamp"]
    rows = out["rows"]
    got = sorted((r[0], r[1], r[2], r[3], r[4]) for r in rows)
    assert got == expected  # exactly the records from offsets-for-times onward, timestamps intact

    # event-time watermarks from the record timestamps ('scan.watermark.emit.strategy' =
    # 'on-event'): the watermark a row sees is the one emitted after the rows before it, the
    # smallest over the partitions of the latest timestamp read there, less the delay (none
    # until every partition has given a record)
    latest: dict[int, int] = {}
    seen_wm = 0
    for part, off, key, value, ts, wm in rows:
        want_wm = min(latest.values()) - WATERMARK_DELAY_MS if len(latest) == PARTITIONS else None
        assert wm == want_wm, (part, off, ts, wm, want_wm)
        seen_wm += wm is not None
        latest[part] = max(latest.get(part, ts), ts)
    assert seen_wm > 0, "no watermark came from the record timestamps"

    # a 10 s tumbling window on that event time counts the records by their own timestamps
    want: dict[int, int] = {}
    for p, off, key, value, ts in expected:
        want[ts - ts % 10_000] = want.get(ts - ts % 10_000, 0) + 1
    assert {w[0]: w[2] for w in out["windows"]} == want
    assert all(w[1] - w[0] == 10_000 for w in out["windows"])


def test_flink_exactly_once_sink_read_committed(flink_run):
    bootstrap, topic = flink_run["broker"].bootstrap, flink_run["sink"]
    assert flink_run["answers"]["exactly_once_sink"] == {"status": "finished"}
    committed = read_to_end(bootstrap, topic, range(PARTITIONS), READ_COMMITTED, timeout=60)
    values = sorted(int(v) for v in committed.all_values())
    assert values == list(range(1, EOS_ROWS + 1))  # every row once: nothing lost, nothing twice
    # it went through transactions, one per completed checkpoint: each commit marker takes an
    # offset in every partition the transaction wrote to (at least the final checkpoint's, over
    # the three partitions; how many checkpoints complete while the rows flow depends on the
    # machine's load), and the last stable offset has reached the high watermark (none open)
    ends = end_offsets(bootstrap, topic, range(PARTITIONS), READ_UNCOMMITTED)
    assert sum(ends.values()) - EOS_ROWS >= PARTITIONS, ends
    assert end_offsets(bootstrap, topic, range(PARTITIONS), READ_COMMITTED) == ends
