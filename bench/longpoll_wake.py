"""How soon a parked (long-polling) Fetch is answered after a Produce appends to its partition,
at the wire, without a client library: one connection parks a Fetch (``--max-wait-ms``, 500 by
default, min_bytes 1) at the end of a partition, another then produces one 100-byte record
(acks=1); the figure is the time from sending the Produce to receiving the Fetch's answer
(a broker that does not wake parked fetches shows about max-wait here). ``--partitions N``
parks the Fetch on N partitions and appends to the last one (a wake that covers only some
partitions shows here). Works against any Kafka-compatible broker; p50/p99/max over
``--rounds`` rounds.

    .venv/bin/python bench/longpoll_wake.py --bootstrap 127.0.0.1:9092 [--rounds 200] [--partitions 1]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.rawclient import RawClient  # noqa: E402
from protocol.messages.create_topics import CreateTopicsRequest as CT  # noqa: E402
from protocol.messages.fetch import FetchRequest as FR  # noqa: E402
from protocol.messages.produce import ProduceRequest as PR  # noqa: E402
from protocol.records import build_batch  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--max-wait-ms", type=int, default=500)
    ap.add_argument("--name", default="longpoll_wake")
    a = ap.parse_args(argv)
    topic = f"wake-{os.getpid()}-{time.time_ns()}"
    admin, fetcher, producer = (RawClient(a.bootstrap) for _ in range(3))
    r = admin.request(19, 5, CT(topics=[CT.CreatableTopic(name=topic, num_partitions=a.partitions,
                                                          replication_factor=1, assignments=[], configs=[])],
                                timeout_ms=30000, validate_only=False))
    assert r.topics[0].error_code == 0, r.topics[0]
    time.sleep(1.0)  # the oracle elects leaders asynchronously
    last = a.partitions - 1
    offsets = [0] * a.partitions
    lat = []
    for i in range(a.rounds + 10):
        fetch = FR(replica_id=-1, max_wait_ms=a.max_wait_ms, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                   session_id=0, session_epoch=-1, topics=[FR.FetchTopic(topic=topic, partitions=[
                       FR.FetchPartition(partition=p, current_leader_epoch=-1, fetch_offset=offsets[p],
                                         log_start_offset=-1, partition_max_bytes=1 << 20)
                       for p in range(a.partitions)])], forgotten_topics_data=[], rack_id="")
        fetcher.send(1, 12, fetch)
        time.sleep(0.02)  # let it park
        batch = build_batch([(None, os.urandom(100), int(time.time() * 1000))])
        t0 = time.perf_counter()
        producer.send(0, 9, PR(transactional_id=None, acks=1, timeout_ms=30000, topic_data=[
            PR.TopicProduceData(name=topic, partition_data=[PR.PartitionProduceData(index=last, records=batch)])]))
        f = fetcher.recv(1, 12)
        dt = time.perf_counter() - t0
        p = producer.recv(0, 9).responses[0].partition_responses[0]
        assert p.error_code == 0, p
        got = [pd for pd in f.responses[0].partitions if pd.records]
        assert got and got[0].partition_index == last, f"round {i}: the fetch came back without the record"
        offsets[last] = p.base_offset + 1
        if i >= 10:
            lat.append(dt * 1000)
    lat.sort()
    for name, v in (("p50", statistics.median(lat)), ("p99", lat[int(len(lat) * 0.99) - 1]), ("max", lat[-1])):
        print(f"{a.name}_{name} {v:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
