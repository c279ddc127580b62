"""A parked (long-polling) Fetch is answered as soon as an append satisfies it, as Kafka's
DelayedFetch completes on append once min.bytes is reached, never at max_wait_ms.

Not timed: the fetches park with max_wait_ms=30000 and must come back well before it (the
margin holds on a loaded machine). "Not answered yet" is checked after a later request on
another connection was answered: an answer the broker had written before would already sit in
the fetching socket (loopback delivers on write). The check cannot fail spuriously; in the
min_bytes case it is exact, as the fetch's re-read after an append runs before the broker reads
the next Produce from the same producer connection.
"""
from __future__ import annotations

import os
import select
import time

from protocol.messages.create_topics import CreateTopicsRequest as CT
from protocol.messages.fetch import FetchRequest as FR
from protocol.messages.produce import ProduceRequest as PR
from protocol.records import build_batch
from tests.helpers.raw import RawClient

MAX_WAIT_MS = 30_000


def _create(c: RawClient, topic: str, partitions: int) -> None:
    r = c.request(19, 5, CT(topics=[CT.CreatableTopic(name=topic, num_partitions=partitions, replication_factor=1,
                                                      assignments=[], configs=[])],
                            timeout_ms=30000, validate_only=False))
    assert r.topics[0].error_code == 0


def _fetch(topic: str, partitions: int, min_bytes: int) -> FR:
    return FR(replica_id=-1, max_wait_ms=MAX_WAIT_MS, min_bytes=min_bytes, max_bytes=1 << 20, isolation_level=0,
              session_id=0, session_epoch=-1, topics=[FR.FetchTopic(topic=topic, partitions=[
                  FR.FetchPartition(partition=p, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
                                    partition_max_bytes=1 << 20) for p in range(partitions)])],
              forgotten_topics_data=[], rack_id="")


def _produce(c: RawClient, topic: str, partition: int, value: bytes) -> int:
    batch = build_batch([(None, value, int(time.time() * 1000))])
    r = c.request(0, 9, PR(transactional_id=None, acks=1, timeout_ms=30000, topic_data=[
        PR.TopicProduceData(name=topic, partition_data=[PR.PartitionProduceData(index=partition, records=batch)])]))
    p = r.responses[0].partition_responses[0]
    assert p.error_code == 0
    return len(batch)


def _answered(c: RawClient) -> bool:
    return bool(select.select([c.sock], [], [], 0)[0])


def _recv_fetch(c: RawClient):
    return c.recv_response(1, 12)


def test_parked_fetch_is_answered_by_an_append_to_any_of_its_partitions(broker):
    """Rounds over every partition of a 6-partition fetch: the append to partition p answers
    the fetch parked on all six at once, with p's record (a wake covering only some partitions
    would leave it parked until max_wait_ms)."""
    admin, fetcher, producer = (RawClient(broker.bootstrap, timeout=60) for _ in range(3))
    topic = "wake-any"
    _create(admin, topic, 6)
    offsets = [0] * 6
    for rnd in range(12):
        p = rnd % 6
        req = _fetch(topic, 6, 1)
        for fp in req.topics[0].partitions:
            fp.fetch_offset = offsets[fp.partition]
        fetcher.send_frame(fetcher.encode(1, 12, req))
        # no data yet: it must not be answered (checked after a round trip elsewhere)
        _create(admin, f"{topic}-order-{rnd}", 1)
        assert not _answered(fetcher), f"round {rnd}: answered with no data"
        t0 = time.monotonic()
        _produce(producer, topic, p, b"r%d" % rnd)
        resp = _recv_fetch(fetcher)
        assert time.monotonic() - t0 < MAX_WAIT_MS / 1000 / 3, "answered at max_wait_ms, not by the append"
        with_data = [pd.partition_index for pd in resp.responses[0].partitions if pd.records]
        assert with_data == [p]
        offsets[p] += 1


def test_parked_fetch_waits_for_min_bytes_then_is_answered_on_the_append_reaching_it(broker):
    admin, fetcher, producer = (RawClient(broker.bootstrap, timeout=60) for _ in range(3))
    topic = "wake-min-bytes"
    _create(admin, topic, 2)
    size = len(build_batch([(None, os.urandom(200), 0)]))
    # two batches' worth, over two partitions: the first append is not enough
    fetcher.send_frame(fetcher.encode(1, 12, _fetch(topic, 2, size + size // 2)))
    _create(admin, "order-1", 1)
    assert not _answered(fetcher)
    t0 = time.monotonic()
    _produce(producer, topic, 0, os.urandom(200))
    _produce(producer, topic, 0, b"x")  # answered after the fetch re-read: ordered behind it
    assert not _answered(fetcher), "answered below min_bytes"
    _produce(producer, topic, 1, os.urandom(200))
    resp = _recv_fetch(fetcher)
    assert time.monotonic() - t0 < MAX_WAIT_MS / 1000 / 3, "answered at max_wait_ms, not by the append"
    parts = {pd.partition_index: len(pd.records or b"") for pd in resp.responses[0].partitions}
    assert parts[0] > size and parts[1] >= size
