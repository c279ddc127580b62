"""One workload that makes every kind of segment file a Kafka broker writes, for the on-disk
differential tests (tests/differential/test_on_disk.py); it holds no tests.

``run_workload(bootstrap)`` produces, through confluent-kafka (librdkafka), to one partition of
each topic in ``TOPICS`` and returns what the producers were told (offset, timestamp, key and
value of every acknowledged record, per topic) plus the transactions' outcomes. The same
workload runs against Hourglass and against Apache Kafka, so the configs stay inside what
Kafka 4.x accepts (``segment.bytes`` >= 1 MiB, Kafka's floor for topics since 4.0).

Features covered, one topic each:
  size-roll   idempotent producer, acks=all, 1 KiB records over 1 MiB segments (size roll)
  retention   acks=1, the same volume with ``retention.bytes`` of one segment (segments deleted)
  time-roll   ``segment.ms`` 150 and pauses between rounds (time-based roll)
  compacted   ``cleanup.policy=compact`` with overwritten keys and tombstones, cleaned by the cleaner
  txn         transactional producer: commits and aborts (control batches, .txnindex)
  log-append  ``message.timestamp.type=LogAppendTime`` (the broker's clock in every batch)
  codecs      gzip, snappy, lz4 and zstd batches, in that order; then a group commits an offset
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

SEGMENT_BYTES = 1 << 20
BROKER_OVERRIDES = {  # the same keys on both brokers: quick cleaner and retention passes
    "log.cleaner.backoff.ms": 100,
    "log.retention.check.interval.ms": 300,
    "log.segment.delete.delay.ms": 0,
}
TOPICS: dict[str, dict[str, str]] = {
    "size-roll": {"segment.bytes": str(SEGMENT_BYTES)},
    "retention": {"segment.bytes": str(SEGMENT_BYTES), "retention.bytes": str(SEGMENT_BYTES)},
    "time-roll": {"segment.ms": "150", "index.interval.bytes": "100"},
    "compacted": {"cleanup.policy": "compact", "segment.ms": "150", "min.cleanable.dirty.ratio": "0.01",
                  "delete.retention.ms": "100", "segment.bytes": str(SEGMENT_BYTES), "index.interval.bytes": "100"},
    "txn": {"segment.ms": "150", "index.interval.bytes": "100"},
    "log-append": {"message.timestamp.type": "LogAppendTime", "index.interval.bytes": "100"},
    "codecs": {"compression.type": "producer", "index.interval.bytes": "100"},
}
CODECS = ("gzip", "snappy", "lz4", "zstd")
BIG_RECORDS = 2600        # 1 KiB values: ~2.8 MB, three 1 MiB segments
BIG_VALUE = 1000
GROUP = "on-disk-group"
TRANSACTIONAL_ID = "on-disk-txn"


@dataclass
class Produced:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None


@dataclass
class WorkloadResult:
    records: dict[str, list[Produced]] = field(default_factory=dict)
    aborted_offsets: set[int] = field(default_factory=set)      # txn: records of aborted transactions
    committed_offsets: set[int] = field(default_factory=set)
    txns: list[tuple[bool, list[int]]] = field(default_factory=list)   # (committed, record offsets) in order
    codec_of_offset: dict[int, str] = field(default_factory=dict)
    log_append_window: tuple[int, int] = (0, 0)                  # broker clock bounds around the produce
    base_ts: int = 0


def create_topics(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(t, 1, 1, config=c) for t, c in TOPICS.items()], request_timeout=60)
    for t, f in futures.items():
        f.result(60)


def _producer(bootstrap: str, **conf):
    from confluent_kafka import Producer
    return Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **conf})


def _send(producer, topic: str, items, out: list[Produced], flush_each: bool = False) -> None:
    """Produce ``(key, value, timestamp)`` items; ``out`` gets each acknowledged record."""
    errors = []

    def report(err, msg):
        if err is not None:
            errors.append(err)
        else:
            out.append(Produced(msg.offset(), msg.timestamp()[1], msg.key(), msg.value()))

    for key, value, ts in items:
        while True:
            try:
                producer.produce(topic, value=value, key=key, partition=0, timestamp=ts or 0, on_delivery=report)
                break
            except BufferError:
                producer.poll(0.1)
        if flush_each:
            producer.flush(30)
    left = producer.flush(60)
    assert left == 0 and not errors, (topic, left, errors)


def run_workload(bootstrap: str) -> WorkloadResult:
    create_topics(bootstrap)
    res = WorkloadResult()
    base = int(time.time() * 1000) - 3_600_000   # CreateTime an hour back, 10 ms apart: exact answers
    res.base_ts = base
    big = lambda i: (f"k{i}".encode(), (f"v{i}:".encode() * 200)[:BIG_VALUE], base + 10 * i)

    out = res.records.setdefault("size-roll", [])
    # 16 KiB batches: many per segment, so the offset and time indexes get entries
    p = _producer(bootstrap, **{"enable.idempotence": True, "acks": "all", "batch.size": 16384})
    _send(p, "size-roll", (big(i) for i in range(BIG_RECORDS)), out)

    out = res.records.setdefault("retention", [])
    p = _producer(bootstrap, acks=1, **{"batch.size": 16384})
    _send(p, "retention", (big(i) for i in range(BIG_RECORDS)), out)

    out = res.records.setdefault("time-roll", [])
    p = _producer(bootstrap, acks="all")
    for r in range(5):
        now = int(time.time() * 1000)
        # one batch per record; every fifth timestamp is 5 s back (out of order: not in the time index)
        _send(p, "time-roll", ((f"r{r}-{i}".encode(), f"value {r}/{i}".encode(), now + i - 5000 * (i % 5 == 4))
                               for i in range(20)), out, flush_each=True)
        time.sleep(0.4)   # > segment.ms: the next round's first batch rolls the segment

    out = res.records.setdefault("compacted", [])
    p = _producer(bootstrap, acks="all")
    n = 0
    for r in range(6):
        items = []
        for i in range(30):
            key = f"key-{(n * 7) % 10}".encode()
            value = None if (n % 17 == 16) else f"round {r} value {n}".encode()   # a few tombstones
            items.append((key, value, int(time.time() * 1000)))
            n += 1
        _send(p, "compacted", items, out, flush_each=True)   # one batch per record: the cleaner merges them
        time.sleep(0.4)
    # one more record after a pause, so the last round's segment rolls and becomes cleanable
    _send(p, "compacted", [(b"key-last", b"the end", int(time.time() * 1000))], out)

    out = res.records.setdefault("txn", [])
    from confluent_kafka import Producer
    tp = Producer({"bootstrap.servers": bootstrap, "transactional.id": TRANSACTIONAL_ID, "linger.ms": 5})
    tp.init_transactions(60)
    for t in range(6):
        tp.begin_transaction()
        got: list[Produced] = []
        _send(tp, "txn", ((f"t{t}-{i}".encode(), f"txn {t} record {i}".encode(), int(time.time() * 1000))
                          for i in range(10)), got, flush_each=(t < 2))
        if t % 2:
            tp.abort_transaction(60)
            res.aborted_offsets.update(g.offset for g in got)
        else:
            tp.commit_transaction(60)
            res.committed_offsets.update(g.offset for g in got)
        res.txns.append((not t % 2, [g.offset for g in got]))
        out.extend(got)
        time.sleep(0.3)   # > segment.ms: transactions (and their .txnindex entries) spread over segments

    out = res.records.setdefault("log-append", [])
    p = _producer(bootstrap, acks="all")
    t0 = int(time.time() * 1000)
    _send(p, "log-append", ((f"la{i}".encode(), f"appended {i}".encode(), base + i) for i in range(50)), out,
          flush_each=True)
    res.log_append_window = (t0, int(time.time() * 1000))

    out = res.records.setdefault("codecs", [])
    for codec in CODECS:
        p = _producer(bootstrap, acks="all", **{"compression.type": codec})
        got: list[Produced] = []
        _send(p, "codecs", ((f"{codec}-{i}".encode(), (f"{codec} value {i} " * 8).encode(), base + i)
                            for i in range(200)), got)
        res.codec_of_offset.update((g.offset, codec) for g in got)
        out.extend(got)

    # a group's committed offset: a record in __consumer_offsets
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition("codecs", 0, len(out))], asynchronous=False)
    finally:
        c.close()
    return res


def wait_settled(data_dir, timeout: float = 60.0) -> None:
    """Wait for the background work the workload started: the cleaner has cleaned ``compacted``
    (its checkpoint names it) and retention has deleted ``retention``'s first segment."""
    from pathlib import Path
    data_dir = Path(data_dir)
    deadline = time.monotonic() + timeout
    while True:
        ckpt = data_dir / "cleaner-offset-checkpoint"
        cleaned = ckpt.exists() and any(line.startswith("compacted 0 ") and int(line.split()[2]) > 0
                                        for line in ckpt.read_text().splitlines())
        retained = not (data_dir / "retention-0" / "00000000000000000000.log").exists()
        if cleaned and retained:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"not settled in {timeout:.0f} s: cleaned={cleaned} retention-done={retained}")
        time.sleep(0.2)
