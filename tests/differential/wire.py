"""Request builders the scenarios share (produce, fetch, list offsets, delete records), each
for an exact version."""
from __future__ import annotations

import time
import uuid

from protocol.records.record import build_batch
from tests.differential.framework import req

EARLIEST, LATEST, MAX_TIMESTAMP, EARLIEST_LOCAL = -2, -1, -3, -4


def now_ms() -> int:
    return int(time.time() * 1000)


def batch(timestamps, *, base_offset=0, key=b"k", value=b"v", **kw) -> bytes:
    return build_batch([(key, value + str(i).encode(), ts) for i, ts in enumerate(timestamps)],
                       base_offset=base_offset, **kw)


def produce(topic: str, records_by_partition: dict[int, bytes], version: int, *, acks: int = -1,
            transactional_id=None, timeout_ms: int = 30000):
    """A Produce request; from v13 (topics by id, which differ per broker) a ``side -> request``
    function naming the topic by that side's id (a topic neither created has a made-up id)."""
    def body(topic_id=bytes(16)):
        return req(0, version, transactional_id=transactional_id, acks=acks, timeout_ms=timeout_ms,
                   topic_data=[{"name": topic, "topic_id": topic_id, "partition_data": [
                       {"index": p, "records": r} for p, r in records_by_partition.items()]}])
    if version < 13:
        return body()
    return lambda side: body(side.state.get("topic_ids", {}).get(topic, uuid.uuid5(uuid.NAMESPACE_URL, topic).bytes))


def list_offsets(topic: str, queries: list[tuple[int, int]], version: int, isolation_level: int = 0):
    """``queries``: (partition, timestamp) pairs, each its own partition entry."""
    return req(2, version, replica_id=-1, isolation_level=isolation_level, timeout_ms=30000, topics=[
        {"name": topic, "partitions": [{"partition_index": p, "timestamp": ts, "max_num_offsets": 1}
                                       for p, ts in queries]}])


def fetch(side, topic: str, partitions: list[tuple[int, int]], version: int, *, max_bytes=0x7FFFFFFF,
          partition_max_bytes=1 << 20, isolation_level=0, max_wait_ms=0, min_bytes=1):
    """``partitions``: (partition, fetch_offset). v13+ name the topic by its id, which differs per
    broker (``side.state['topic_ids']``)."""
    topic_id = side.state["topic_ids"][topic]
    return req(1, version, replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes,
               isolation_level=isolation_level, session_id=0, session_epoch=-1,
               topics=[{"topic": topic, "topic_id": topic_id, "partitions": [
                   {"partition": p, "fetch_offset": o, "partition_max_bytes": partition_max_bytes,
                    "log_start_offset": -1, "current_leader_epoch": -1, "last_fetched_epoch": -1}
                   for p, o in partitions]}],
               forgotten_topics_data=[], rack_id="")


def delete_records(topic: str, offsets: dict[int, int], version: int):
    return req(21, version, topics=[{"name": topic, "partitions": [
        {"partition_index": p, "offset": o} for p, o in offsets.items()]}], timeout_ms=30000)


def corrupt_crc(b: bytes) -> bytes:
    out = bytearray(b)
    out[-1] ^= 0xFF  # the last record byte: covered by the CRC, not by any framing
    return bytes(out)


def with_magic(b: bytes, magic: int) -> bytes:
    out = bytearray(b)
    out[16] = magic
    return bytes(out)


def wait_ok(side, api: int, version: int, body, timeout: float = 30.0, ok=lambda r: r.error_code == 0):
    """Setup on one side (not compared): repeat until ``ok`` (a coordinator loading, a topic
    being created), then return the answer."""
    deadline = time.monotonic() + timeout
    while True:
        r = side.request(api, version, body(side) if callable(body) else body)
        if ok(r):
            return r
        assert time.monotonic() < deadline, f"{side.name}: {r}"
        time.sleep(0.1)


def init_producer(ex, transactional_id=None, timeout_ms: int = 60000) -> None:
    """InitProducerId on both (a transactional id's coordinator found first); each side keeps its
    own producer id and epoch in ``state``."""
    if transactional_id is not None:
        for s in ex.sides:
            wait_ok(s, 10, 4, req(10, 4, key_type=1, coordinator_keys=[transactional_id]),
                    ok=lambda r: r.coordinators[0].error_code == 0)
    for s in ex.sides:
        r = wait_ok(s, 22, 4, req(22, 4, transactional_id=transactional_id, transaction_timeout_ms=timeout_ms,
                                  producer_id=-1, producer_epoch=-1))
        s.state["pid"], s.state["epoch"] = r.producer_id, r.producer_epoch


def group_coordinator(ex, group: str) -> None:
    """Setup: the group's coordinator found and loaded on each side (Kafka answers
    COORDINATOR_NOT_AVAILABLE/LOAD_IN_PROGRESS/NOT_COORDINATOR while it creates and reads
    __consumer_offsets after its first use)."""
    for s in ex.sides:
        wait_ok(s, 10, 4, req(10, 4, key_type=0, coordinator_keys=[group]),
                ok=lambda r: r.coordinators[0].error_code == 0)
        wait_ok(s, 15, 5, req(15, 5, groups=[group], include_authorized_operations=False),
                ok=lambda r: r.groups[0].error_code not in (14, 15, 16))
