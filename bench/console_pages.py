"""Console page figures (issue 26), against a broker in its own process.

    .venv/bin/python bench/console_pages.py [--topics 1000] [--requests 50]

``topics_ttfb``: time to first byte of ``GET /topics`` (the topics page: names through
Metadata for every topic the caller may describe, the summary of the 50 it shows) with
``--topics`` topics of one partition each, every tenth holding a few records. Also the
filtered list (``/topics?q=...``), a later page, and a topic's detail page for scale.
Median and p95 over ``--requests`` sequential requests on one keep-alive connection, after
a warm-up request.

``messages_from_time_ttfb``: the message browser opened by a deep link
``/topics/{t}?from=<T>&partition=0`` at random times T in a one-partition topic of
``--sizes`` records (100k and 1M by default; add 10000000 for the issue's 10M): the page
finds its first offset through ListOffsets (the time index) and reads one page with Fetch,
so it should not grow with the partition.

One ``name value unit`` line per figure, as bench/run.py.
"""
from __future__ import annotations

import argparse
import http.client
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hourglass.embedded import EmbeddedBroker  # noqa: E402


def emit(name: str, value: float, unit: str) -> None:
    print(f"{name} {value:.4g} {unit}", flush=True)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def ttfb(conn: http.client.HTTPConnection, path: str) -> tuple[float, int, int]:
    """(seconds to the response's status line, status, body bytes)."""
    t0 = time.perf_counter()
    conn.request("GET", path)
    resp = conn.getresponse()  # returns once the status line and headers are in
    first = time.perf_counter() - t0
    body = resp.read()
    return first, resp.status, len(body)


def measure(conn, path: str, n: int) -> list[float]:
    first, status, size = ttfb(conn, path)  # warm-up (templates compiled, caches filled)
    if status != 200:
        raise SystemExit(f"GET {path} answered {status}")
    out = []
    for _ in range(n):
        out.append(ttfb(conn, path)[0])
    log(f"{path}: {size} bytes")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--requests", type=int, default=50)
    ap.add_argument("--sizes", default="100000,1000000")
    args = ap.parse_args()
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    with EmbeddedBroker(mode="subprocess", console=True) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
        t0 = time.perf_counter()
        names = [f"bench-topic-{i:04d}" for i in range(args.topics)]
        for i in range(0, len(names), 200):
            for f in admin.create_topics([NewTopic(n, 1, 1) for n in names[i:i + 200]],
                                         operation_timeout=60).values():
                f.result(timeout=120)
        p = Producer({"bootstrap.servers": b.bootstrap_servers, "linger.ms": 20})
        for n in names[::10]:
            for j in range(10):
                p.produce(n, key=str(j), value=b"x" * 100)
        p.flush(60)
        log(f"{args.topics} topics created and filled in {time.perf_counter() - t0:.1f} s")
        url = urlsplit(b.console_url)
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
        for name, path in (("topics", "/topics"), ("topics_filtered", "/topics?q=topic-05"),
                           ("topics_page_10", "/topics?page=10"), ("topic_detail", f"/topics/{names[0]}"),
                           ("overview", "/")):
            xs = sorted(measure(conn, path, args.requests))
            emit(f"console_{name}_ttfb_median", statistics.median(xs) * 1000, "ms")
            emit(f"console_{name}_ttfb_p95", xs[int(len(xs) * 0.95) - 1] * 1000, "ms")
        t_start = 1_700_000_000_000
        for size in [int(x) for x in args.sizes.split(",") if x]:
            topic = f"bench-records-{size}"
            for f in admin.create_topics([NewTopic(topic, 1, 1)]).values():
                f.result(timeout=60)
            t0 = time.perf_counter()
            p = Producer({"bootstrap.servers": b.bootstrap_servers, "linger.ms": 50, "batch.size": 1 << 20,
                          "queue.buffering.max.messages": 2_000_000, "compression.type": "lz4"})
            for i in range(size):  # a record every 10 ms
                p.produce(topic, value=b"v" * 50, timestamp=t_start + i * 10)
                if i % 100_000 == 99_999:
                    p.poll(0)
            if p.flush(600):
                raise SystemExit("records left unsent")
            from confluent_kafka import Consumer, TopicPartition
            c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "bench"})
            lo, hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
            c.close()
            if hi - lo != size:
                raise SystemExit(f"{topic} holds {hi - lo} records, not {size}")
            log(f"{size} records in {time.perf_counter() - t0:.1f} s")
            import random
            rng = random.Random(size)
            xs = []
            ttfb(conn, f"/topics/{topic}?from={t_start}&partition=0")  # warm-up
            for _ in range(args.requests):
                ts = t_start + rng.randrange(size) * 10
                first, status, n = ttfb(conn, f"/topics/{topic}?from={ts}&partition=0")
                if status != 200 or n < 20000:  # a page of 50 records is ~30 KB of HTML
                    raise SystemExit(f"records page answered {status} with {n} bytes")
                xs.append(first)
            xs.sort()
            emit(f"console_messages_from_time_{size}_ttfb_median", statistics.median(xs) * 1000, "ms")
            emit(f"console_messages_from_time_{size}_ttfb_p95", xs[int(len(xs) * 0.95) - 1] * 1000, "ms")
        conn.close()


if __name__ == "__main__":
    main()
