"""Transactions (issue 17) with aiokafka, async tests under pytest-asyncio: commit/abort as
read_committed and read_uncommitted consumers see them (end offsets and positions past the
markers), fencing by a second producer with the same transactional_id (aiokafka raises
``ProducerFenced``; it speaks the v0 transactional APIs, so the broker must answer the fenced
epoch with INVALID_PRODUCER_EPOCH as Kafka does below the versions that know PRODUCER_FENCED),
and a consume-transform-produce loop (send_offsets_to_transaction) across a rebalance.
"""
from __future__ import annotations

import asyncio
import time

import pytest

from tests.helpers.txn import (READ_COMMITTED, READ_UNCOMMITTED, create_topic, ctp_topics,  # noqa: F401
                               group_committed, read_to_end, tbroker, unique)


async def _producer(bootstrap: str, txn_id: str):
    from aiokafka import AIOKafkaProducer
    p = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id, request_timeout_ms=15000)
    await p.start()
    return p


async def _read_all(bootstrap: str, topic: str, partitions, isolation: str, timeout: float = 20.0):
    """aiokafka consumer by assignment from the beginning until its position reaches
    end_offsets (the LSO under read_committed) on every partition."""
    from aiokafka import AIOKafkaConsumer, TopicPartition
    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False,
                         auto_offset_reset="earliest")
    await c.start()
    try:
        tps = [TopicPartition(topic, p) for p in partitions]
        c.assign(tps)
        await c.seek_to_beginning(*tps)
        ends = await c.end_offsets(tps)
        out = {tp.partition: [] for tp in tps}
        deadline = time.monotonic() + timeout
        while True:
            positions = {tp: await c.position(tp) for tp in tps}
            if all(positions[tp] >= ends[tp] for tp in tps):
                break
            assert time.monotonic() < deadline, f"stuck at {positions}, ends {ends}"
            for tp, msgs in (await c.getmany(timeout_ms=200)).items():
                out[tp.partition].extend(m.value for m in msgs)
        return out, {tp.partition: positions[tp] for tp in tps}, {tp.partition: ends[tp] for tp in tps}
    finally:
        await c.stop()


@pytest.mark.asyncio
async def test_aiokafka_commit_visible_abort_hidden(tbroker):
    topic = unique("atx")
    create_topic(tbroker.bootstrap, topic, 2)
    p = await _producer(tbroker.bootstrap, unique("tid"))
    try:
        for label, commit in (("a", True), ("b", False), ("c", True)):
            await p.begin_transaction()
            for i in range(2):
                for part in range(2):
                    await p.send_and_wait(topic, f"{label}{part}-{i}".encode(), partition=part)
            if commit:
                await p.commit_transaction()
            else:
                await p.abort_transaction()
        rc, rc_pos, rc_end = await _read_all(tbroker.bootstrap, topic, range(2), READ_COMMITTED)
        ru, ru_pos, ru_end = await _read_all(tbroker.bootstrap, topic, range(2), READ_UNCOMMITTED)
        for part in range(2):
            assert rc[part] == [f"{x}{part}-{i}".encode() for x in "ac" for i in range(2)]
            assert ru[part] == [f"{x}{part}-{i}".encode() for x in "abc" for i in range(2)]
        assert rc_end == ru_end == rc_pos == ru_pos == {0: 9, 1: 9}      # 6 records + 3 markers

        # an open transaction: read_committed end offsets stop at its first offset
        await p.begin_transaction()
        await p.send_and_wait(topic, b"open", partition=0)
        rc, rc_pos, rc_end = await _read_all(tbroker.bootstrap, topic, range(2), READ_COMMITTED)
        assert rc_end == rc_pos == {0: 9, 1: 9} and b"open" not in rc[0]
        await p.commit_transaction()
        rc, rc_pos, rc_end = await _read_all(tbroker.bootstrap, topic, [0], READ_COMMITTED)
        assert rc[0][-1] == b"open" and rc_end == rc_pos == {0: 11}
    finally:
        await p.stop()


@pytest.mark.asyncio
async def test_aiokafka_second_producer_fences_the_first(tbroker):
    from aiokafka.errors import ProducerFenced
    topic, tid = unique("atx-fence"), unique("tid")
    create_topic(tbroker.bootstrap, topic, 1)
    p1 = await _producer(tbroker.bootstrap, tid)
    await p1.begin_transaction()
    for i in range(3):
        await p1.send_and_wait(topic, f"x{i}".encode(), partition=0)
    p2 = await _producer(tbroker.bootstrap, tid)      # InitProducerId: bumps the epoch, aborts p1's
    try:
        with pytest.raises(ProducerFenced):
            await asyncio.wait_for(p1.commit_transaction(), 20)
        await p2.begin_transaction()
        await p2.send_and_wait(topic, b"y0", partition=0)
        await p2.commit_transaction()
    finally:
        await p2.stop()
        try:
            await p1.stop()
        except Exception:    # a fenced producer may re-raise its fatal error at stop
            pass
    rc, rc_pos, rc_end = await _read_all(tbroker.bootstrap, topic, [0], READ_COMMITTED)
    assert rc[0] == [b"y0"] and rc_pos == rc_end == {0: 6}
    ru, _, _ = await _read_all(tbroker.bootstrap, topic, [0], READ_UNCOMMITTED)
    assert ru[0] == [b"x0", b"x1", b"x2", b"y0"]


async def _copy_member(bootstrap, group, src, dst, stop: asyncio.Event, stats: dict):
    """Consume-transform-produce with aiokafka. A rebalance listener holds the revocation
    until the transaction in flight is finished (aiokafka rebalances in the background),
    and records of partitions no longer assigned are dropped before a transaction starts."""
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.abc import ConsumerRebalanceListener
    lock = asyncio.Lock()

    class Hold(ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked):
            async with lock:
                pass

        async def on_partitions_assigned(self, assigned):
            stats["assigned"] = sorted(tp.partition for tp in assigned)

    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, isolation_level=READ_COMMITTED,
                         enable_auto_commit=False, auto_offset_reset="earliest", session_timeout_ms=6000,
                         heartbeat_interval_ms=500)
    c.subscribe([src], listener=Hold())
    await c.start()
    p = await _producer(bootstrap, unique("acopy"))
    try:
        while not stop.is_set():
            batch = await c.getmany(timeout_ms=200, max_records=5)
            async with lock:
                assigned = c.assignment()
                batch = {tp: msgs for tp, msgs in batch.items() if tp in assigned and msgs}
                if not batch:
                    continue
                await p.begin_transaction()
                offsets = {}
                for tp, msgs in batch.items():
                    for m in msgs:
                        await p.send(dst, b"out-" + m.value, key=f"{tp.partition}:{m.offset}".encode(),
                                     partition=tp.partition)
                    offsets[TopicPartition(src, tp.partition)] = msgs[-1].offset + 1
                await p.send_offsets_to_transaction(offsets, group)
                await p.commit_transaction()
                stats["records"] = stats.get("records", 0) + sum(len(m) for m in batch.values())
            await asyncio.sleep(0.05)
    finally:
        await p.stop()
        await c.stop()


@pytest.mark.asyncio
async def test_aiokafka_consume_transform_produce_across_a_rebalance(tbroker):
    bs = tbroker.bootstrap
    src, dst, group = await asyncio.to_thread(ctp_topics, bs, "actp", 30)

    stop = asyncio.Event()
    sa, sb = {}, {}
    ta = asyncio.create_task(_copy_member(bs, group, src, dst, stop, sa))
    tasks = [ta]
    try:
        deadline = time.monotonic() + 20
        while sa.get("records", 0) < 20:
            assert time.monotonic() < deadline and not ta.done(), (sa, ta.done() and ta.exception())
            await asyncio.sleep(0.05)
        tasks.append(asyncio.create_task(_copy_member(bs, group, src, dst, stop, sb)))
        deadline = time.monotonic() + 40
        while await asyncio.to_thread(group_committed, bs, group, src, range(4)) != {p: 30 for p in range(4)}:
            for t in tasks:
                if t.done():
                    t.result()
            assert time.monotonic() < deadline, (sa, sb)
            await asyncio.sleep(0.3)
    finally:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
    for t in tasks:
        t.result()
    assert sb.get("records", 0) > 0, "the second member never copied anything"
    rc = await asyncio.to_thread(read_to_end, bs, dst, range(4), READ_COMMITTED)
    for part in range(4):
        assert sorted(rc.values(part)) == sorted(f"out-in-{part}-{i}".encode() for i in range(30)), part
