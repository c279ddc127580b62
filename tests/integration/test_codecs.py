"""Every client with every codec: what a producer compresses is stored as it sent it (Kafka's
``compression.type=producer``) and reads back identically through another client.

Each case produces 20 keyed records with explicit CreateTimes to partition 0, checks the first
batch in the segment file carries the producer's codec in its attributes (the broker never
re-compresses), then consumes them with confluent-kafka and compares key, value and timestamp.
"""
from __future__ import annotations

import asyncio
import struct
import time
import uuid

import pytest

from tests.helpers.clients import kcat
from tests.helpers.java import run_java

N = 20
CODEC_ID = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
CODECS = ["gzip", "snappy", "lz4", "zstd"]


def _records():
    base = int(time.time() * 1000) - 60_000
    return [(b"k%d" % i, (b"value-%d-" % i) * 8, base + 10 * i) for i in range(N)]


def _produce_kafka_python(bootstrap, topic, codec, recs):
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=bootstrap, compression_type=None if codec == "none" else codec,
                      linger_ms=50)
    try:
        for f in [p.send(topic, key=k, value=v, partition=0, timestamp_ms=ts) for k, v, ts in recs]:
            f.get(timeout=20)
    finally:
        p.close()


def _produce_confluent(bootstrap, topic, codec, recs):
    from confluent_kafka import Producer
    errors = []
    p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 50})
    for k, v, ts in recs:
        p.produce(topic, key=k, value=v, partition=0, timestamp=ts,
                  on_delivery=lambda err, msg: err and errors.append(err))
    assert p.flush(20) == 0 and not errors, errors


def _produce_aiokafka(bootstrap, topic, codec, recs):
    from aiokafka import AIOKafkaProducer

    async def run():
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, compression_type=None if codec == "none" else codec,
                             linger_ms=50)
        await p.start()
        try:
            futs = [await p.send(topic, key=k, value=v, partition=0, timestamp_ms=ts) for k, v, ts in recs]
            await asyncio.gather(*futs)
        finally:
            await p.stop()
    asyncio.run(run())


def _produce_kcat(bootstrap, topic, codec, recs):
    # kcat sets no per-message timestamp from stdin; the check below uses what was stored
    lines = b"".join(k + b":" + v + b"\n" for k, v, _ in recs)
    kcat(["-b", bootstrap, "-t", topic, "-P", "-p", "0", "-K:", "-z", codec, "-X", "linger.ms=50"], input=lines)


def _produce_java(bootstrap, topic, codec, recs):
    run_java(["produce", "--bootstrap", bootstrap, "--topic", topic, "--partition", 0, "--count", N,
              "--acks", "all", "--compression", codec, "--key-prefix", "k",
              "--timestamps", ",".join(str(ts) for _, _, ts in recs)])


PRODUCERS = {"kafka_python": _produce_kafka_python, "confluent": _produce_confluent,
             "aiokafka": _produce_aiokafka, "kcat": _produce_kcat, "java": _produce_java}
CASES = [("confluent", "none")] + [(c, z) for c in PRODUCERS for z in CODECS]


def _consume(bootstrap, topic, n):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "codecs-unused", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        got, deadline = [], time.monotonic() + 20
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None:
                assert m.error() is None, m.error()
                got.append((m.offset(), m.key(), m.value(), m.timestamp()[1]))
        return got
    finally:
        c.close()


def _first_batch_codec(data_dir, topic) -> int:
    seg = data_dir / f"{topic}-0" / "00000000000000000000.log"
    head = seg.read_bytes()[:23]
    assert head[16] == 2, "magic 2 batch expected"
    (attributes,) = struct.unpack_from(">h", head, 21)
    return attributes & 0x7


@pytest.mark.parametrize("client,codec", CASES, ids=[f"{c}-{z}" for c, z in CASES])
def test_client_codec_is_stored_as_sent_and_reads_back(broker, client, codec):
    topic = f"codec-{client}-{codec}-{uuid.uuid4().hex[:6]}"
    recs = _records()
    if client == "java":
        recs = [(b"k%d" % i, None, ts) for i, (_, _, ts) in enumerate(recs)]  # the harness makes values
    PRODUCERS[client](broker.bootstrap, topic, codec, recs)
    got = _consume(broker.bootstrap, topic, N)
    assert [o for o, *_ in got] == list(range(N))
    assert [k for _, k, _, _ in got] == [k for k, _, _ in recs]
    if client != "java":
        assert [v for _, _, v, _ in got] == [v for _, v, _ in recs]
    if client != "kcat":
        assert [ts for *_, ts in got] == [ts for *_, ts in recs]
    assert _first_batch_codec(broker.data_dir, topic) == CODEC_ID[codec]
