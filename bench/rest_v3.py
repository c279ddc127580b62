"""Kafka REST v3 figures (issue 26), against a broker in its own process.

    .venv/bin/python bench/rest_v3.py [--records 20000] [--sizes 100000,1000000[,10000000]]

1. ``produce``: records/s of 100-byte values produced
   - by librdkafka (confluent-kafka, acks=all, batching as it likes): the Kafka protocol;
   - by librdkafka with one record per Produce request, 8 in flight (the same unit of work as
     one record per POST);
   - over REST v3, one record per POST, 8 requests in flight on keep-alive connections (aiohttp);
   - over REST v3 in Confluent's streaming mode (1000 records per POST body, answered one JSON
     line each), 4 bodies in flight;
   and the REST/Kafka ratios.
2. ``page``: time to answer ``GET .../records?from=<T>&max_records=100`` at random times in one
   partition, as the partition grows (``--sizes``): it goes through ListOffsets (the time
   index) and one Fetch, so it should stay flat while the partition grows 10x and 100x.

One ``name value unit`` line per figure, as bench/run.py.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hourglass.embedded import EmbeddedBroker  # noqa: E402

figures: dict[str, tuple[float, str]] = {}


def emit(name: str, value: float, unit: str) -> None:
    figures[name] = (float(value), unit)
    print(f"{name} {value:.4g} {unit}", flush=True)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _get(url: str):
    with urllib.request.urlopen(url, timeout=60) as r:
        return json.loads(r.read())


def _post(url: str, body) -> object:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def kafka_produce(bootstrap: str, topic: str, n: int, value: bytes, one_per_request: bool = False) -> float:
    """librdkafka's rate; ``one_per_request``: one record per Produce request, 8 in flight (the
    same unit of work as one record per POST)."""
    from confluent_kafka import Producer
    conf = {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5}
    if one_per_request:
        conf.update({"linger.ms": 0, "batch.num.messages": 1, "max.in.flight": 8})
    p = Producer(conf)
    t0 = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                p.produce(topic, value=value)
                break
            except BufferError:
                p.poll(0.01)
    assert p.flush(60) == 0
    return n / (time.perf_counter() - t0)


async def rest_produce(url: str, n: int, value: str, concurrency: int) -> float:
    import aiohttp
    body = json.dumps({"value": {"type": "STRING", "data": value}})
    left = n

    async def worker(session):
        nonlocal left
        while left > 0:
            left -= 1
            async with session.post(url, data=body, headers={"Content-Type": "application/json"}) as r:
                assert r.status == 200, await r.text()
                await r.read()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as s:
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(s) for _ in range(concurrency)))
        return n / (time.perf_counter() - t0)


async def rest_stream_produce(url: str, n: int, value: str, per_body: int, concurrency: int) -> float:
    import aiohttp
    line = json.dumps({"value": {"type": "STRING", "data": value}})
    body = "\n".join([line] * per_body)
    bodies = n // per_body

    async def worker(session):
        nonlocal bodies
        while bodies > 0:
            bodies -= 1
            async with session.post(url, data=body, headers={"Content-Type": "application/json"}) as r:
                text = await r.text()
                assert r.status == 200 and text.count('"error_code": 200') == per_body, text[:300]
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as s:
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(s) for _ in range(concurrency)))
        return (n // per_body * per_body) / (time.perf_counter() - t0)


def step_produce(b: EmbeddedBroker, c: str, n: int, rounds: int) -> None:
    value = "v" * 100
    _post(f"{c}/topics", {"topic_name": "rest-bench", "partitions_count": 1})
    url = f"{c}/topics/rest-bench/records"
    kafka_produce(b.bootstrap_servers, "rest-bench", 2000, value.encode())  # warm up both paths
    asyncio.run(rest_produce(url, 500, value, 8))
    runs: dict[str, list[float]] = {"kafka": [], "kafka_one": [], "rest": [], "rest_stream": []}
    for _ in range(rounds):
        runs["kafka"].append(kafka_produce(b.bootstrap_servers, "rest-bench", n * 10, value.encode()))
        runs["kafka_one"].append(kafka_produce(b.bootstrap_servers, "rest-bench", n, value.encode(), True))
        runs["rest"].append(asyncio.run(rest_produce(url, n, value, 8)))
        runs["rest_stream"].append(asyncio.run(rest_stream_produce(url, n * 5, value, 1000, 4)))
    med = {k: statistics.median(v) for k, v in runs.items()}
    emit("rest_v3_produce_kafka_protocol_100B", med["kafka"], "records/s")
    emit("rest_v3_produce_kafka_one_record_per_request_100B", med["kafka_one"], "records/s")
    emit("rest_v3_produce_one_record_per_post_100B", med["rest"], "records/s")
    emit("rest_v3_produce_streaming_1000_per_post_100B", med["rest_stream"], "records/s")
    emit("rest_v3_produce_ratio_one_per_post_vs_kafka", med["rest"] / med["kafka"], "x")
    emit("rest_v3_produce_ratio_streaming_vs_kafka", med["rest_stream"] / med["kafka"], "x")
    emit("rest_v3_produce_ratio_one_per_post_vs_one_per_request", med["rest"] / med["kafka_one"], "x")


def _fill(bootstrap: str, topic: str, start: int, end: int, base_ts: int) -> None:
    """Records start..end-1 with timestamps base_ts + 10*i (a 16-byte key, 64-byte value)."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20,
                  "queue.buffering.max.messages": 1_000_000, "acks": 1})
    value = b"x" * 64
    for i in range(start, end):
        while True:
            try:
                p.produce(topic, key=b"%016d" % i, value=value, partition=0, timestamp=base_ts + 10 * i)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(300) == 0


def step_page(b: EmbeddedBroker, c: str, sizes: list[int], samples: int) -> None:
    base_ts = 1_700_000_000_000
    _post(f"{c}/topics", {"topic_name": "page-bench", "partitions_count": 1,
                          "configs": [{"name": "segment.bytes", "value": str(64 << 20)},
                                      {"name": "retention.ms", "value": "-1"}]})
    have = 0
    for n in sizes:
        t0 = time.perf_counter()
        _fill(b.bootstrap_servers, "page-bench", have, n, base_ts)
        have = n
        segs = len(_get(f"{c}/topics/page-bench/partitions/0/segments")["segments"])
        log(f"page-bench: {n} records in {segs} segments (filled in {time.perf_counter() - t0:.0f} s)")
        rnd = random.Random(n)
        times = []
        for _ in range(samples):
            i = rnd.randrange(n - 100)
            target = base_ts + 10 * i - 3
            t1 = time.perf_counter()
            page = _get(f"{c}/topics/page-bench/partitions/0/records?from={target}&max_records=100")
            times.append((time.perf_counter() - t1) * 1000)
            assert page["data"][0]["offset"] == i and len(page["data"]) == 100, (i, page["start"])
        times.sort()
        emit(f"rest_v3_page_from_time_{n}_records_p50", statistics.median(times), "ms")
        emit(f"rest_v3_page_from_time_{n}_records_p99", times[int(len(times) * 0.99) - 1], "ms")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=20000, help="records per REST produce round (Kafka: 10x)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--only", default="produce,page")
    a = ap.parse_args()
    steps = set(a.only.split(","))
    with EmbeddedBroker(mode="subprocess", console=True, start_timeout=60) as b:
        cid = _get(b.console_url + "/v3/clusters")["data"][0]["cluster_id"]
        c = f"{b.console_url}/v3/clusters/{cid}"
        if "produce" in steps:
            step_produce(b, c, a.records, a.rounds)
        if "page" in steps:
            step_page(b, c, [int(s) for s in a.sizes.split(",")], a.samples)
    return 0


if __name__ == "__main__":
    sys.exit(main())
