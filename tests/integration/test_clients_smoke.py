"""Each stock client, unmodified, against a fresh broker: the first thing a user tries.

Per client (kafka-python, confluent-kafka/librdkafka, aiokafka, kcat, Java kafka-clients 3.9.1):
produce 10 keyed records to partition 0 with explicit CreateTime timestamps, check the offsets
and timestamps the producer is told, read them back from offset 0 by manual assignment and
check offset, key, value, timestamp and timestamp type; then offsets-for-times (KIP-33): the
answer is the first offset whose timestamp is >= the target, and nothing past the last
timestamp (None for the Python and Java clients, -1 for librdkafka and kcat).
"""
from __future__ import annotations

import asyncio
import time
import uuid

from tests.helpers.clients import kcat_consume_json, kcat_offsets_for_times, kcat_produce
from tests.helpers.java import run_java

N = 10


def _records() -> list[tuple[bytes, bytes, int]]:
    """(key, value, timestamp): CreateTimes a few minutes in the past (inside any retention or
    timestamp-difference window) with uneven gaps, clearly not the time the client sends them."""
    base = (int(time.time() * 1000) // 1000) * 1000 - 300_000
    out, ts = [], base
    for i in range(N):
        ts += 1000 + 7 * (i % 3)
        out.append((b"k%d" % i, b"value-%d" % i, ts))
    return out


def _topic(client: str) -> str:
    return f"smoke-{client}-{uuid.uuid4().hex[:8]}"


def _expected_offset(timestamps: list[int], target: int) -> int | None:
    """Brute-force KIP-33 model: first offset whose timestamp is >= target, else None."""
    for off, ts in enumerate(timestamps):
        if ts >= target:
            return off
    return None


def _targets(timestamps: list[int]) -> list[int]:
    """Before the first, each edge, strictly between two records, and past the last."""
    return [timestamps[0] - 10_000, timestamps[0], timestamps[2] + 1, (timestamps[5] + timestamps[6]) // 2,
            timestamps[6], timestamps[-1], timestamps[-1] + 1, timestamps[-1] + 3_600_000]


def test_kafka_python_produce_consume_offsets_for_times(broker):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    topic, recs = _topic("kafka-python"), _records()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
    try:
        futures = [producer.send(topic, key=k, value=v, partition=0, timestamp_ms=ts) for k, v, ts in recs]
        mds = [f.get(timeout=20) for f in futures]
    finally:
        producer.close()
    assert [(m.partition, m.offset, m.timestamp) for m in mds] == [(0, i, ts) for i, (_, _, ts) in enumerate(recs)]

    tp = TopicPartition(topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
    try:
        consumer.assign([tp])
        consumer.seek(tp, 0)
        got, deadline = [], time.monotonic() + 20
        while len(got) < N and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                got.extend(batch)
        assert [(r.offset, r.key, r.value, r.timestamp, r.timestamp_type) for r in got] == \
            [(i, k, v, ts, 0) for i, (k, v, ts) in enumerate(recs)]  # 0 = CreateTime

        timestamps = [ts for _, _, ts in recs]
        for target in _targets(timestamps):
            ans = consumer.offsets_for_times({tp: target})[tp]
            want = _expected_offset(timestamps, target)
            if want is None:
                assert ans is None, target
            else:
                assert (ans.offset, ans.timestamp) == (want, timestamps[want]), target
    finally:
        consumer.close()


def test_confluent_kafka_produce_consume_offsets_for_times(broker):
    from confluent_kafka import TIMESTAMP_CREATE_TIME, Consumer, Producer, TopicPartition

    topic, recs = _topic("confluent"), _records()
    delivered = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 5})
    for k, v, ts in recs:
        producer.produce(topic, key=k, value=v, partition=0, timestamp=ts,
                         on_delivery=lambda err, msg: delivered.append((err, msg)))
    assert producer.flush(20) == 0
    assert [e for e, _ in delivered if e is not None] == []
    assert [(m.partition(), m.offset(), m.timestamp()) for _, m in delivered] == \
        [(0, i, (TIMESTAMP_CREATE_TIME, ts)) for i, (_, _, ts) in enumerate(recs)]

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "smoke-unused",
                         "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        got, deadline = [], time.monotonic() + 20
        while len(got) < N and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None:
                assert m.error() is None, m.error()
                got.append(m)
        assert [(m.offset(), m.key(), m.value(), m.timestamp()) for m in got] == \
            [(i, k, v, (TIMESTAMP_CREATE_TIME, ts)) for i, (k, v, ts) in enumerate(recs)]

        timestamps = [ts for _, _, ts in recs]
        for target in _targets(timestamps):
            [ans] = consumer.offsets_for_times([TopicPartition(topic, 0, target)], timeout=20)
            assert ans.error is None, ans.error
            want = _expected_offset(timestamps, target)
            assert ans.offset == (-1 if want is None else want), target  # -1 = OFFSET_END
    finally:
        consumer.close()


def test_aiokafka_produce_consume_offsets_for_times(broker):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.structs import TopicPartition

    topic, recs = _topic("aiokafka"), _records()
    timestamps = [ts for _, _, ts in recs]

    async def scenario():
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
        await producer.start()
        try:
            mds = [await producer.send_and_wait(topic, value=v, key=k, partition=0, timestamp_ms=ts)
                   for k, v, ts in recs]
        finally:
            await producer.stop()
        assert [(m.partition, m.offset, m.timestamp) for m in mds] == \
            [(0, i, ts) for i, (_, _, ts) in enumerate(recs)]

        tp = TopicPartition(topic, 0)
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
        await consumer.start()
        try:
            consumer.assign([tp])
            consumer.seek(tp, 0)
            got = []
            async with asyncio.timeout(20):
                while len(got) < N:
                    got.append(await consumer.getone())
            assert [(r.offset, r.key, r.value, r.timestamp, r.timestamp_type) for r in got] == \
                [(i, k, v, ts, 0) for i, (k, v, ts) in enumerate(recs)]
            for target in _targets(timestamps):
                ans = (await consumer.offsets_for_times({tp: target}))[tp]
                want = _expected_offset(timestamps, target)
                if want is None:
                    assert ans is None, target
                else:
                    assert (ans.offset, ans.timestamp) == (want, timestamps[want]), target
        finally:
            await consumer.stop()

    asyncio.run(scenario())


def test_kcat_produce_consume_offsets_for_times(broker):
    from kafka import KafkaProducer

    # kcat's own producer cannot set timestamps: the records carry the producer's clock.
    topic = _topic("kcat")
    before = int(time.time() * 1000)
    kcat_produce(broker.bootstrap, topic, [f"k{i}:value-{i}" for i in range(N)])
    after = int(time.time() * 1000)
    got = kcat_consume_json(broker.bootstrap, topic, offset=0, count=N)
    assert [(m["partition"], m["offset"], m["key"], m["payload"], m["tstype"]) for m in got] == \
        [(0, i, f"k{i}", f"value-{i}", "create") for i in range(N)]
    stamps = [m["ts"] for m in got]
    assert all(before - 1000 <= ts <= after + 1000 for ts in stamps), (before, stamps, after)

    # Explicit CreateTimes written by another client; kcat reads them and queries by time.
    topic, recs = _topic("kcat-ts"), _records()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
    try:
        for f in [producer.send(topic, key=k, value=v, partition=0, timestamp_ms=ts) for k, v, ts in recs]:
            f.get(timeout=20)
    finally:
        producer.close()
    got = kcat_consume_json(broker.bootstrap, topic, offset=0, count=N)
    assert [(m["offset"], m["key"], m["payload"], m["tstype"], m["ts"]) for m in got] == \
        [(i, k.decode(), v.decode(), "create", ts) for i, (k, v, ts) in enumerate(recs)]
    timestamps = [ts for _, _, ts in recs]
    for target in _targets(timestamps):
        want = _expected_offset(timestamps, target)
        assert kcat_offsets_for_times(broker.bootstrap, topic, 0, target) == \
            (-1 if want is None else want), target


def test_java_client_produce_consume_offsets_for_times(broker):
    topic, recs = _topic("java"), _records()
    timestamps = [ts for _, _, ts in recs]
    b = ["--bootstrap", broker.bootstrap, "--topic", topic]
    produced = run_java(["produce", *b, "--partition", 0, "--count", N, "--acks", "all",
                         "--timestamps", ",".join(map(str, timestamps)), "--key-prefix", "k"])
    assert [(r["partition"], r["offset"], r["timestamp"]) for r in produced] == \
        [(0, i, ts) for i, ts in enumerate(timestamps)]

    consumed = run_java(["consume", *b, "--partition", 0, "--from-offset", 0, "--count", N])
    assert [(r["offset"], r["key"], r["value"], r["timestamp"], r["timestampType"]) for r in consumed] == \
        [(i, k.decode(), v.decode(), ts, "CreateTime") for i, (k, v, ts) in enumerate(recs)]

    targets = _targets(timestamps)
    answers = run_java(["offsets-for-times", *b, "--partition", 0, "--ts", ",".join(map(str, targets))])
    assert [a["target"] for a in answers] == targets
    for a in answers:
        want = _expected_offset(timestamps, a["target"])
        if want is None:
            assert (a["offset"], a["timestamp"]) == (None, None), a
        else:
            assert (a["offset"], a["timestamp"]) == (want, timestamps[want]), a
