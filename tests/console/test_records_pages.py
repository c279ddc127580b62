"""The records page (console.model.read_records, as GET .../records serves it) against a
brute-force model: every start (time, offset, beginning, end), page size, byte bound and text
filter, over compressed batches of many sizes across segment boundaries, out-of-order
timestamps, transaction markers and an aborted transaction (READ_COMMITTED pages, compared with
what a read_committed confluent-kafka consumer reads)."""
from __future__ import annotations

import asyncio
import random

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from hypothesis import HealthCheck, given, settings, strategies as st

from console import model
from hourglass.embedded import EmbeddedBroker

N = 3000
BASE = 1_700_000_000_000


@pytest.fixture(scope="module")
def world():
    with EmbeddedBroker() as b:
        k = model.Kafka(b.broker)

        def run(coro):
            return asyncio.run_coroutine_threadsafe(coro, b._loop).result(30)
        run(model.create_topic(k, "pages", 1, configs={"segment.bytes": "65536", "index.interval.bytes": "256"}))
        rnd = random.Random(7)
        stamps = []
        errors = []
        # batches of random sizes and codecs; a transactional stretch leaves a marker in the log
        for chunk in range(12):
            p = Producer({"bootstrap.servers": b.bootstrap_servers, "linger.ms": 5,
                          "batch.num.messages": rnd.choice([1, 7, 50, 400]),
                          "compression.type": rnd.choice(["none", "lz4", "zstd", "gzip"]),
                          **({"transactional.id": f"tx-{chunk}"} if chunk % 4 == 3 or chunk == 5 else {})})
            if chunk % 4 == 3 or chunk == 5:
                p.init_transactions(10)
                p.begin_transaction()
            for _ in range(N // 12):
                i = len(stamps)
                ts = BASE + 10 * i + (rnd.randrange(-50, 50) if rnd.random() < 0.1 else 0)
                stamps.append(ts)
                p.produce("pages", key=b"k%d" % i, value=b"value %d %s" % (i, b"x" * rnd.randrange(200)),
                          timestamp=ts, partition=0, on_delivery=lambda e, _m: e and errors.append(e))
            if chunk % 4 == 3:
                p.commit_transaction(10)
            elif chunk == 5:  # an aborted stretch, in the log: READ_COMMITTED pages never show it
                assert p.flush(10) == 0
                p.abort_transaction(10)
            assert p.flush(10) == 0 and not errors, (chunk, errors[:3])
        # the truth, read by a stock consumer
        c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "truth", "enable.auto.commit": False})
        c.assign([TopicPartition("pages", 0, 0)])
        truth = []
        while len(truth) < N - N // 12:
            m = c.poll(5)
            assert m is not None, (len(truth), truth[-1][0], [(p["latest_offset"], p["last_stable_offset"]) for p in run(model.partitions(k, "pages"))])
            if not m.error():
                truth.append((m.offset(), m.timestamp()[1], m.key(), m.value()))
        c.close()
        # offsets-for-times answers from the stock client: transaction markers carry the time
        # they were written, and ListOffsets counts them (as Kafka's time index does)
        oft = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "oft"})

        def offset_for_time(t):
            return oft.offsets_for_times([TopicPartition("pages", 0, t)], timeout=10)[0].offset
        yield b, k, run, truth, offset_for_time
        oft.close()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=st.sampled_from(["time", "offset", "beginning", "end"]), where=st.floats(0, 1.05),
       max_records=st.integers(1, 300), max_bytes=st.sampled_from([1, 500, 5000, 1 << 20]),
       contains=st.sampled_from([None, "value 1", "7 x", "k29", "nothing matches"]))
def test_pages_equal_the_brute_force_answer(world, start, where, max_records, max_bytes, contains):
    b, k, run, truth, offset_for_time = world
    hwm = run(model.partitions(k, "pages"))[0]["latest_offset"]
    assert hwm == N + 4  # every record (the aborted ones too) and 4 transaction markers
    kw = {}
    if start == "time":
        t = BASE + int(where * 10 * N) - 25
        kw["timestamp"] = t
        first = offset_for_time(t)
        first = None if first < 0 else first
    elif start == "offset":
        first = min(int(where * hwm), hwm)
        kw["offset"] = first
    elif start == "beginning":
        first = 0
        kw["position"] = "beginning"
    else:
        kw["position"] = "end"
        first = None
    page = run(model.read_records(k, "pages", 0, max_records=max_records, max_bytes=max_bytes, contains=contains,
                                  isolation=model.READ_COMMITTED, **kw))
    got = [(r["offset"], r["timestamp"], r["key"]["text"].encode(), r["value"]["text"].encode())
           for r in page["records"]]
    if start == "end":
        # the last max_records offsets (markers included in the count, as offsets are)
        lo = max(hwm - max_records, 0)
        want = [r for r in truth if r[0] >= lo and (contains is None or contains.encode() in r[2] + b"\0" + r[3])]
        assert got == want[:len(got)] and got == want[:max_records] if max_bytes >= 1 << 20 else got == want[:len(got)]
        assert got or not want
        return
    if first is None:
        assert got == [] and page["next_offset"] == hwm
        return
    rest = [r for r in truth if r[0] >= first]
    if contains is not None:
        needle = contains.encode()
        matching = [r for r in rest if needle in r[2] or needle in r[3]]
        # a filtered page may stop early (scan budget); it is always a prefix of the answer
        assert got == matching[:len(got)] and (len(got) == min(max_records, len(matching)) or not page["end_reached"])
    else:
        assert got == rest[:len(got)]
        if max_bytes >= 1 << 20:
            assert len(got) == min(max_records, len(rest))
        else:
            assert got or not rest  # at least the first batch's records, as Fetch
    assert page["next_offset"] >= (got[-1][0] + 1 if got else first)
    # the next page starts where this one stopped: nothing skipped, nothing repeated
    if got and not page["end_reached"]:
        nxt = run(model.read_records(k, "pages", 0, offset=page["next_offset"], max_records=5, contains=contains,
                                     isolation=model.READ_COMMITTED))
        expect = [r for r in truth if r[0] >= page["next_offset"]]
        if contains is not None:
            expect = [r for r in expect if contains.encode() in r[2] or contains.encode() in r[3]]
        assert [r["offset"] for r in nxt["records"]] == [r[0] for r in expect][:len(nxt["records"])]
