"""Share-group consumption throughput, librdkafka ``ShareConsumer`` members (confluent-kafka)
against a running broker, beside a classic ``Consumer`` on the same topic; ``bench/run.py``'s
``share`` step.

One 1-partition topic holds ``RECORDS`` records of ``SIZE`` bytes (produced once). Each run is
a fresh group reading it from the start (``share.auto.offset.reset=earliest`` as a group config;
the classic consumer is assigned the partition from its beginning, so no group join is in its
figure): the figure is records per second from the consumers' creation to the last record
received (the share members' join included: one heartbeat),
every share record acknowledged (implicit acknowledgement: ACCEPT at the next poll). Members of a share group run in threads of this process (one instance per
thread), so the figure includes the client's own cost as a real application would.

The sparse variant (``share_sparse_M``) is the same ``RECORDS`` spread over partitions 0, 2
and 4 of a 5-partition topic, partitions 1 and 3 empty: every fetch then answers empty
partitions beside full ones. After each share run (its members closed) the share-partitions'
start offsets are read back (DescribeShareGroupOffsets): ``locked_at_end`` is how many records
lie between them and the log end, summed over every run -- records still locked or waiting to
be redelivered when every record was delivered and acknowledged (each member commits before it
closes). It must be 0.

    .venv/bin/python bench/share_throughput.py BOOTSTRAP [members ...]
"""
from __future__ import annotations

import sys
import threading
import time
import uuid

RECORDS = 100_000
SIZE = 100


SPARSE_PARTITIONS, SPARSE_FILLED = 5, (0, 2, 4)


def produce(bootstrap: str, topic: str, n: int = RECORDS, partitions: int = 1, filled=(0,)) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions)])[topic].result(30)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.num.messages": 10000})
    payload = b"x" * SIZE
    for i in range(n):
        while True:
            try:
                p.produce(topic, value=payload, partition=filled[i % len(filled)])
                break
            except BufferError:
                p.poll(0.01)
    p.flush(60)


def _group_config(bootstrap: str, group: str) -> None:
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
    admin = AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result(30)


def share_rate(bootstrap: str, topic: str, members: int, n: int = RECORDS) -> float:
    from confluent_kafka import ShareConsumer
    group = f"share-{uuid.uuid4().hex[:8]}"
    _group_config(bootstrap, group)
    seen = [0] * members
    done = threading.Event()
    lock = threading.Lock()
    total = [0]
    first = [None]

    def member(i: int) -> None:
        c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
        c.subscribe([topic])
        try:
            while not done.is_set():
                got = sum(1 for m in c.poll(0.2) if m.error() is None)
                if got:
                    seen[i] += got
                    with lock:
                        total[0] += got
                        if total[0] >= n:
                            done.set()
        finally:
            # librdkafka's close() does not accept the last poll's records in implicit mode (it
            # releases them, to be delivered again): commit them first, as an application that
            # finished its work would
            c.commit_sync()
            c.close()
    first[0] = time.perf_counter()
    threads = [threading.Thread(target=member, args=(i,), daemon=True) for i in range(members)]
    for t in threads:
        t.start()
    done.wait(300)
    elapsed = time.perf_counter() - first[0]
    for t in threads:
        t.join(30)
    share_rate.last_group = group
    return total[0] / elapsed


def left_locked(bootstrap: str, group: str, topic: str) -> int:
    """Records between the group's share-partition start offsets and the log end offsets of
    ``topic``, once its members closed: 0 when everything delivered was acknowledged."""
    from bench.rawclient import RawClient
    from protocol.messages.describe_share_group_offsets import DescribeShareGroupOffsetsRequest as D
    from protocol.messages.list_offsets import ListOffsetsRequest as L
    raw = RawClient(bootstrap)
    try:
        d = raw.request(90, 0, D(groups=[D.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None)]))
        starts = {(t.topic_name, p.partition_index): p.start_offset for g in d.groups for t in g.topics
                  for p in t.partitions}
        parts = sorted(p for (tn, p) in starts if tn == topic)
        lo = raw.request(2, 7, L(replica_id=-1, isolation_level=0, topics=[L.ListOffsetsTopic(name=topic, partitions=[
            L.ListOffsetsTopic.ListOffsetsPartition(partition_index=p, current_leader_epoch=-1, timestamp=-1)
            for p in parts])]))
        ends = {p.partition_index: p.offset for t in lo.topics for p in t.partitions}
    finally:
        raw.close()
    return sum(ends[p] - max(starts[(topic, p)], 0) for p in parts)


def classic_rate(bootstrap: str, topic: str, n: int = RECORDS) -> float:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"classic-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    got = 0
    t0 = time.perf_counter()
    try:
        while got < n and time.perf_counter() - t0 < 300:
            got += sum(1 for m in c.consume(1000, 0.2) if m.error() is None)
    finally:
        c.close()
    return got / (time.perf_counter() - t0)


def measure(bootstrap: str, members=(1, 2, 4)) -> dict[str, float]:
    topic = f"share-bench-{uuid.uuid4().hex[:6]}"
    sparse = f"share-sparse-{uuid.uuid4().hex[:6]}"
    produce(bootstrap, topic)
    produce(bootstrap, sparse, partitions=SPARSE_PARTITIONS, filled=SPARSE_FILLED)
    out = {"classic_1": classic_rate(bootstrap, topic)}
    locked = 0
    for m in members:
        out[f"share_{m}"] = share_rate(bootstrap, topic, m)
        locked += left_locked(bootstrap, share_rate.last_group, topic)
        out[f"share_sparse_{m}"] = share_rate(bootstrap, sparse, m)
        locked += left_locked(bootstrap, share_rate.last_group, sparse)
    out["locked_at_end"] = locked
    return out


if __name__ == "__main__":
    bs = sys.argv[1]
    ms = [int(a) for a in sys.argv[2:]] or [1, 2, 4]
    for k, v in measure(bs, ms).items():
        print(f"{k}: {v:,.0f}" + ("" if k == "locked_at_end" else " records/s"))
