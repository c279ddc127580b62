"""Log compaction end to end with real clients (seed 003, "Registrar temas compactados en
Apache Kafka", and the spirit of Kafka's LogCleanerIntegrationTest / the ducktape
``log_compaction_test.py`` / librdkafka test 0011 for keyless records).

The seed's walk-through: topic ``latest-product-price`` with ``cleanup.policy=compact``,
``segment.ms=100``, ``min.cleanable.dirty.ratio=0.01``, ``delete.retention.ms=100``; the
console producer sends p3:10$, p5:7$, p3:11$, p6:25$, p6:12$, p5:14$, p5:17$; after the
background cleaner has run, a consumer reading from the beginning sees
p3:11$, p6:12$, p5:14$, p5:17$ (p5:14$ is the latest p5 below the active segment, which
holds p5:17$ and is never cleaned), and ``cleaner-offset-checkpoint`` reads
``0 / 1 / latest-product-price 0 6``.
"""
from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

TOPIC = "latest-product-price"
SEED = [("p3", "10$"), ("p5", "7$"), ("p3", "11$"), ("p6", "25$"), ("p6", "12$"), ("p5", "14$"), ("p5", "17$")]
SEED_CONFIG = {"cleanup.policy": "compact", "delete.retention.ms": "100", "segment.ms": "100",
               "min.cleanable.dirty.ratio": "0.01"}


def _create_topic(bootstrap: str, name: str, configs: dict) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, 1, 1, topic_configs=configs)])
    finally:
        admin.close()


def _consume_all(bootstrap: str, topic: str, end_offset: int) -> list[tuple[int, str, str]]:
    from kafka import KafkaConsumer, TopicPartition
    tp = TopicPartition(topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    got = []
    try:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        deadline = time.monotonic() + 20
        while (not got or got[-1][0] < end_offset - 1) and time.monotonic() < deadline:
            for msgs in consumer.poll(timeout_ms=300).values():
                got += [(m.offset, m.key.decode(), m.value.decode() if m.value is not None else None) for m in msgs]
    finally:
        consumer.close()
    return got


def _segment_bases(part_dir: Path) -> list[int]:
    return sorted(int(p.name.split(".")[0]) for p in part_dir.iterdir() if p.name.endswith(".log"))


def _wait_for(pred, timeout=20.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


def test_seed_latest_product_price(broker_factory):
    broker = broker_factory({"log.cleaner.backoff.ms": 100})
    _create_topic(broker.bootstrap, TOPIC, SEED_CONFIG)
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
    try:
        for i, (k, v) in enumerate(SEED):
            md = producer.send(TOPIC, key=k.encode(), value=v.encode(), partition=0).get(timeout=20)
            assert md.offset == i
            time.sleep(0.15)    # > segment.ms: each record rolls the previous segment (as in the seed)
    finally:
        producer.close()

    checkpoint = broker.data_dir / "cleaner-offset-checkpoint"
    _wait_for(lambda: checkpoint.exists() and f"{TOPIC} 0 6" in checkpoint.read_text(), what="a cleaning")
    assert checkpoint.read_text() == f"0\n1\n{TOPIC} 0 6\n"      # Kafka's checkpoint format, as in the seed

    got = _consume_all(broker.bootstrap, TOPIC, 7)
    assert got == [(2, "p3", "11$"), (4, "p6", "12$"), (5, "p5", "14$"), (6, "p5", "17$")]
    part = broker.data_dir / f"{TOPIC}-0"
    bases = _segment_bases(part)
    assert bases == [0, 6]                      # the small segments were merged into one
    active = bases[-1]
    below = [k for o, k, _v in got if o < active]
    assert len(below) == len(set(below))        # at most one record per key outside the active segment
    assert {k: v for _o, k, v in got} == {"p3": "11$", "p6": "12$", "p5": "17$"}
    assert [o for o, _k, _v in got] == sorted(o for o, _k, _v in got)

    # the broker logged the cleaning with its numbers
    lines = [ln for ln in broker.log_text().splitlines() if f"cleaned log {TOPIC}-0" in ln]
    stats = [re.search(r"dirty section = \[(\d+), (\d+)\]\): (\d+) bytes read, (\d+) bytes written .*?"
                       r"(\d+) records read, (\d+) retained, (\d+) removed, in [\d.]+ s", ln) for ln in lines]
    assert stats and all(stats), lines
    assert stats[-1].group(2) == "6"
    assert sum(int(m.group(7)) for m in stats) == 3      # p3:10$, p6:25$ and p5:7$ went

    # `hourglass dump-log` shows the cleaned segment as it is: three batches at offsets 2, 4, 5
    out = subprocess.run([sys.executable, "-m", "broker", "dump-log", "--print-data",
                          str(part / "00000000000000000000.log"), str(part / "00000000000000000000.index"),
                          str(part / "00000000000000000000.timeindex")],
                         capture_output=True, text=True, timeout=60, cwd=Path(__file__).resolve().parents[2])
    assert out.returncode == 0, out.stdout + out.stderr
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("baseOffset:")]
    assert [ln.split()[1] for ln in lines] == ["2", "4", "5"]
    assert "| offset: 2 " in out.stdout and "| offset: 0 " not in out.stdout
    assert "passed the index sanity check" in out.stdout


def test_tombstones_go_after_delete_retention(broker_factory):
    """testCleanTombstone end to end: a tombstone survives the cleaning that first sees it,
    and is gone after a later cleaning once delete.retention.ms has passed."""
    broker = broker_factory({"log.cleaner.backoff.ms": 100})
    topic = "tombstones"
    _create_topic(broker.bootstrap, topic, {**SEED_CONFIG, "delete.retention.ms": "500"})
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
    checkpoint = broker.data_dir / "cleaner-offset-checkpoint"
    try:
        for k, v in [("a", "1"), ("b", "1"), ("a", None), ("c", "1")]:
            producer.send(topic, key=k.encode(), value=v.encode() if v else None, partition=0).get(timeout=20)
            time.sleep(0.15)
        _wait_for(lambda: checkpoint.exists() and f"{topic} 0 3" in checkpoint.read_text(), what="first cleaning")
        assert [(o, k, v) for o, k, v in _consume_all(broker.bootstrap, topic, 4)] == \
            [(1, "b", "1"), (2, "a", None), (3, "c", "1")]
        time.sleep(0.6)
        for k in ("d", "e"):
            producer.send(topic, key=k.encode(), value=b"1", partition=0).get(timeout=20)
            time.sleep(0.15)
    finally:
        producer.close()
    _wait_for(lambda: f"{topic} 0 5" in checkpoint.read_text(), what="second cleaning")
    assert _consume_all(broker.bootstrap, topic, 6) == [(1, "b", "1"), (3, "c", "1"), (4, "d", "1"), (5, "e", "1")]


def test_keyless_record_rejected_on_compacted_topic(broker_factory):
    """testCompactedTopicConstraints / librdkafka 0011: a record without a key sent to a
    compacted topic fails with INVALID_RECORD, and nothing is appended."""
    from kafka import KafkaProducer
    from kafka.errors import InvalidRecordError
    broker = broker_factory()
    topic = "compacted-keyless"
    _create_topic(broker.bootstrap, topic, {"cleanup.policy": "compact"})
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", retries=0)
    try:
        with pytest.raises(InvalidRecordError):
            producer.send(topic, value=b"no key", partition=0).get(timeout=20)
        md = producer.send(topic, key=b"k", value=b"with key", partition=0).get(timeout=20)
        assert md.offset == 0
    finally:
        producer.close()


def test_clients_read_through_retained_empty_batches(broker_factory):
    """testLogCleanerRetainsProducerLastSequence end to end: an idempotent producer's last
    batch whose record was superseded stays as an empty batch (its sequence numbers must
    survive); kafka-python and librdkafka consumers read past it to the live records."""
    broker = broker_factory({"log.cleaner.backoff.ms": 100})
    topic = "empty-batches"
    _create_topic(broker.bootstrap, topic, SEED_CONFIG)
    from kafka import KafkaProducer
    first = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", enable_idempotence=True)
    second = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", enable_idempotence=True)
    try:
        first.send(topic, key=b"k", value=b"from-first", partition=0).get(timeout=20)
        time.sleep(0.15)
        for v in (b"v1", b"v2"):
            second.send(topic, key=b"k", value=v, partition=0).get(timeout=20)
            time.sleep(0.15)
        second.send(topic, key=b"other", value=b"x", partition=0).get(timeout=20)
    finally:
        first.close()
        second.close()
    checkpoint = broker.data_dir / "cleaner-offset-checkpoint"
    _wait_for(lambda: checkpoint.exists() and f"{topic} 0 3" in checkpoint.read_text(), what="a cleaning")
    from storage.dump import dump_log
    dumped = dump_log(broker.data_dir / f"{topic}-0" / "00000000000000000000.log")
    assert [(b.base_offset, b.header.records_count) for b in dumped.batches] == [(0, 0), (2, 1)]
    assert dumped.batches[0].header.producer_id >= 0 and dumped.batches[0].crc_valid
    assert _consume_all(broker.bootstrap, topic, 4) == [(2, "k", "v2"), (3, "other", "x")]

    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "empty-batches", "enable.auto.commit": False})
    got = []
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 20
        while len(got) < 2 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append((m.offset(), m.key(), m.value()))
    finally:
        c.close()
    assert got == [(2, b"k", b"v2"), (3, b"other", b"x")]
