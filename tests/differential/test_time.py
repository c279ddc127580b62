"""Time on the wire: CreateTime and LogAppendTime produce, the ``message.timestamp.*`` bounds,
and ListOffsets by timestamp and by sentinel, at every version both brokers serve."""
from __future__ import annotations

import pytest

from tests.differential.wire import (EARLIEST, EARLIEST_LOCAL, LATEST, MAX_TIMESTAMP, batch, delete_records,
                                     fetch, list_offsets, now_ms, produce)

pytestmark = pytest.mark.xdist_group("differential")


def _produce_ok(ex, topic, records, version=9, **kw):
    k, h = ex.send(0, version, produce(topic, records, version, **kw), scenario="setup produce")
    for r in (k, h):
        for p in r.responses[0].partition_responses:
            assert p.error_code == 0, (topic, p)
    return k, h


def test_produce_create_time_every_version(ex):
    topic = ex.topic_name()
    ex.create_topic(topic, partitions=1)
    t0 = now_ms() - 60_000
    for v in ex.versions(0, lo=3):
        ex.send(0, v, produce(topic, {0: batch([t0 + v, t0 + v + 1])}, v), scenario="CreateTime batch")
    for v in ex.versions(1, lo=4):
        ex.send(1, v, lambda s, v=v: fetch(s, topic, [(0, 0)], v), scenario="fetch CreateTime batches")


def test_produce_log_append_time_every_version(ex):
    topic = ex.topic_name()
    ex.create_topic(topic, configs={"message.timestamp.type": "LogAppendTime"})
    t0 = now_ms() - 60_000
    for v in ex.versions(0, lo=3):
        ex.send(0, v, produce(topic, {0: batch([t0, t0 + 1])}, v), scenario="LogAppendTime topic")
    for v in ex.versions(1, lo=4):
        ex.send(1, v, lambda s, v=v: fetch(s, topic, [(0, 0)], v), scenario="fetch LogAppendTime batches",
                normalize=("log_append_time_batch",))
    for v in ex.versions(2):
        for ts in (t0 - 1, LATEST, EARLIEST, MAX_TIMESTAMP):
            ex.send(2, v, list_offsets(topic, [(0, ts)], v), scenario=f"LogAppendTime topic: {ts}",
                    normalize=("list_offsets_broker_time",))


@pytest.mark.parametrize("config, offsets", [
    ("message.timestamp.before.max.ms", (-65_000, -55_000)),
    ("message.timestamp.after.max.ms", (55_000, 65_000)),
])
def test_timestamp_bounds(ex, config, offsets):
    """A 60 s bound: 5 s inside it is accepted, 5 s outside it is INVALID_TIMESTAMP (32) with
    Kafka's record_errors and message. (The broker reads its clock at the append, so the exact
    millisecond of the boundary cannot be pinned from outside; 5 s margins hold on a busy host.)"""
    topic = ex.topic_name()
    ex.create_topic(topic, configs={config: "60000"})
    for v in ex.versions(0, lo=3):
        now = now_ms()
        for dt in offsets:
            ex.send(0, v, produce(topic, {0: batch([now, now + dt, now])}, v), scenario=f"{config} {dt:+d} ms")
    # the topic's bound in a batch with several records: one bad record fails the whole batch
    for v in ex.versions(1, lo=4):
        ex.send(1, v, lambda s, v=v: fetch(s, topic, [(0, 0)], v), scenario=f"fetch after {config} rejections")


def _timeline(ex, topic):
    """Three batches with repeated and out-of-order timestamps; partition 1 stays empty."""
    t0 = now_ms() - 600_000
    _produce_ok(ex, topic, {0: batch([t0, t0, t0 + 5])})             # offsets 0-2
    _produce_ok(ex, topic, {0: batch([t0 + 3, t0 + 10])})            # 3-4: 3 is out of order
    _produce_ok(ex, topic, {0: batch([t0 + 20, t0 + 10, t0 + 20])})  # 5-7: repeated maximum
    return t0


def _queries(t0):
    times = [t0 - 1, t0, t0 + 1, t0 + 3, t0 + 4, t0 + 5, t0 + 6, t0 + 10, t0 + 11, t0 + 20, t0 + 21,
             LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, -5, -6, -7]
    return [(0, t) for t in times] + [(1, t) for t in (t0, LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, -6)]


def test_list_offsets_by_timestamp_every_version(ex):
    topic = ex.topic_name()
    ex.create_topic(topic, partitions=2)
    t0 = _timeline(ex, topic)
    for v in ex.versions(2):
        for p, ts in _queries(t0):
            ex.send(2, v, list_offsets(topic, [(p, ts)], v), scenario=f"p{p} timestamp {ts - t0 if ts > 0 else ts}")


def test_list_offsets_read_committed_and_unknowns(ex):
    topic = ex.topic_name()
    ex.create_topic(topic, partitions=1)
    t0 = _timeline(ex, topic)
    for v in ex.versions(2, lo=2):
        for ts in (LATEST, t0 + 5):
            ex.send(2, v, list_offsets(topic, [(0, ts)], v, isolation_level=1), scenario="READ_COMMITTED")
        ex.send(2, v, list_offsets(topic, [(0, LATEST), (0, EARLIEST)], v), scenario="one partition twice")
    for v in ex.versions(2):
        ex.send(2, v, list_offsets(topic, [(7, LATEST)], v), scenario="unknown partition")
        ex.send(2, v, list_offsets(ex.topic_name("nosuch"), [(0, LATEST)], v), scenario="unknown topic")


def test_list_offsets_after_delete_records(ex):
    topic = ex.topic_name()
    ex.create_topic(topic, partitions=1)
    t0 = _timeline(ex, topic)
    ex.send(21, 2, delete_records(topic, {0: 4}, 2), scenario="DeleteRecords to 4")
    for v in ex.versions(2):
        for ts in (t0 - 1, t0, t0 + 3, t0 + 5, t0 + 10, t0 + 20, EARLIEST, EARLIEST_LOCAL, LATEST, MAX_TIMESTAMP, -6):
            ex.send(2, v, list_offsets(topic, [(0, ts)], v), scenario=f"after DeleteRecords: {ts - t0 if ts > 0 else ts}")
    for v in ex.versions(1, lo=4):
        ex.send(1, v, lambda s, v=v: fetch(s, topic, [(0, 0)], v), scenario="fetch below the log start")
        ex.send(1, v, lambda s, v=v: fetch(s, topic, [(0, 4)], v), scenario="fetch from the log start")
