"""Flink on Hourglass (issue 35): PyFlink ``flink.version`` with Flink's Kafka connector
(``flink-sql-connector-kafka`` ``flink.kafka.version``), both named in tests/jvm/pom.xml.

- A Flink SQL table with ``scan.startup.mode = 'timestamp'`` returns exactly the records from
  offsets-for-times onward (what a Kafka client's ``offsets_for_times`` answers, partition by
  partition), with their record timestamps as the ``timestamp`` metadata column, event-time
  watermarks derived from them, and a tumbling event-time window over them.
- A Flink job writing with the exactly-once sink (one Kafka transaction per checkpoint) is read
  back by a read_committed consumer: every row once, none missing.

The jobs run in PyFlink's own virtualenv (tests/helpers/pyflink.py, tests/streams/flink_jobs.py).
"""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.helpers import pyflink
from tests.helpers.txn import READ_COMMITTED, READ_UNCOMMITTED, end_offsets, read_to_end

pytestmark = [pytest.mark.timeout(600), pytest.mark.xdist_group("flink")]

PARTITIONS = 3
PER_PARTITION = 200
STEP_MS = 1000
WATERMARK_DELAY_MS = 1000


def _create(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(20)


def test_flink_sql_table_from_a_timestamp(broker):
    topic = f"flink-src-{uuid.uuid4().hex[:6]}"
    _create(broker.bootstrap, topic, PARTITIONS)
    # recent (a multiple of 10 s): the topic's retention.ms must not delete the records
    t0 = (int(time.time()) // 10 - 60) * 10_000
    # each partition's timestamps rise one second per record, partition p starting p*300 ms later
    produced: dict[int, list[tuple[str, str, int]]] = {p: [] for p in range(PARTITIONS)}
    prod = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(PER_PARTITION):
        for p in range(PARTITIONS):
            ts = t0 + i * STEP_MS + p * 300
            key, value = f"k{p}-{i}", f"v{p}-{i}"
            prod.produce(topic, key=key, value=value, partition=p, timestamp=ts)
            produced[p].append((key, value, ts))
    assert prod.flush(30) == 0

    start_ms = t0 + 77 * STEP_MS + 150  # between records: p0's 78th, p1's and p2's 77th onwards
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "oft"})
    try:
        oft = c.offsets_for_times([TopicPartition(topic, p, start_ms) for p in range(PARTITIONS)], timeout=20)
    finally:
        c.close()
    start = {tp.partition: tp.offset for tp in oft}
    assert start == {0: 78, 1: 77, 2: 77}
    expected = sorted((p, off, *produced[p][off]) for p in range(PARTITIONS) for off in range(start[p], PER_PARTITION))

    out = pyflink.run_job("read_from_timestamp", bootstrap=broker.bootstrap, topic=topic, timestamp_ms=start_ms,
                          watermark_delay_ms=WATERMARK_DELAY_MS)
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


def test_flink_exactly_once_sink_read_committed(broker):
    topic = f"flink-sink-{uuid.uuid4().hex[:6]}"
    _create(broker.bootstrap, topic, PARTITIONS)
    rows = 2000
    pyflink.run_job("exactly_once_sink", bootstrap=broker.bootstrap, topic=topic, rows=rows, rows_per_second=500,
                    checkpoint_ms=1000, transactional_id_prefix=f"hg-flink-{uuid.uuid4().hex[:6]}")
    committed = read_to_end(broker.bootstrap, topic, range(PARTITIONS), READ_COMMITTED, timeout=60)
    values = sorted(int(v) for v in committed.all_values())
    assert values == list(range(1, rows + 1))  # every row once: nothing lost, nothing twice
    # it went through transactions: the commit markers take offsets beside the records, and
    # the last stable offset has reached the high watermark (nothing left open)
    ends = end_offsets(broker.bootstrap, topic, range(PARTITIONS), READ_UNCOMMITTED)
    assert sum(ends.values()) > rows
    assert end_offsets(broker.bootstrap, topic, range(PARTITIONS), READ_COMMITTED) == ends
