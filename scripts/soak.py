#!/usr/bin/env python3
"""Soak: mixed produce/consume/group load with retention and compaction running, while the
broker's RSS, open file descriptors and threads are sampled. Flat curves mean no leak.

    .venv/bin/python scripts/soak.py --seconds 1800 --csv soak.csv      # make soak

Load (confluent-kafka, all at once): a producer on ``soak-retained`` (small segments, 30 s
retention.ms and 2 MiB retention.bytes, so segments roll and are deleted all the time), a
producer on ``soak-compacted`` (cleanup.policy=compact, 200 keys, so the cleaner keeps
working), a group consumer on each (commits every second, rejoins every 60 s), and a
short-lived connection churn (a new consumer every few seconds). Every ``--every`` seconds a
row: elapsed s, RSS MiB, open fds, threads, log bytes on disk. The summary gives first, last,
max and the least-squares slope per minute of RSS and fds over the second half.
"""
from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.run import Hourglass, rss_mib  # noqa: E402


def sample(pid: int, data: Path) -> tuple[float, int, int, int]:
    threads = int(next(ln.split()[1] for ln in Path(f"/proc/{pid}/status").read_text().splitlines()
                       if ln.startswith("Threads:")))
    size = sum(f.stat().st_size for f in data.rglob("*.log") if f.is_file()) if data.exists() else 0
    return rss_mib(pid), len(os.listdir(f"/proc/{pid}/fd")), threads, size


def slope(xs, ys) -> float:
    n = len(xs)
    if n < 2:
        return 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    den = sum((x - mx) ** 2 for x in xs) or 1
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=float(os.environ.get("SOAK_SECONDS", 1800)))
    ap.add_argument("--every", type=float, default=5.0)
    ap.add_argument("--csv", default="soak.csv")
    a = ap.parse_args(argv)
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    tmp = Path(tempfile.mkdtemp(prefix="hourglass-soak-"))
    hg = Hourglass(tmp / "data", "log.retention.check.interval.ms=2000", "log.cleaner.backoff.ms=2000")
    hg.start()
    b = hg.bootstrap
    admin = AdminClient({"bootstrap.servers": b})
    fs = admin.create_topics([
        NewTopic("soak-retained", 2, 1, config={"segment.bytes": "262144", "retention.ms": "30000",
                                                "retention.bytes": "2097152"}),
        NewTopic("soak-compacted", 2, 1, config={"cleanup.policy": "compact", "segment.bytes": "262144",
                                                 "min.cleanable.dirty.ratio": "0.1", "delete.retention.ms": "1000"})])
    for f in fs.values():
        f.result(20)
    stop = threading.Event()
    counts = {"produced": 0, "consumed": 0, "errors": 0}

    def produce(topic, keyed):
        p = Producer({"bootstrap.servers": b, "linger.ms": 5})
        i = 0
        while not stop.is_set():
            p.produce(topic, b"x" * 200, key=(b"k%d" % (i % 200)) if keyed else None)
            i += 1
            if i % 100 == 0:
                p.poll(0)
                time.sleep(0.02)  # ~5k records/s each: steady, not flat out
        p.flush(10)
        counts["produced"] += i

    def consume(topic):
        while not stop.is_set():
            c = Consumer({"bootstrap.servers": b, "group.id": f"soak-{topic}", "auto.offset.reset": "earliest",
                          "auto.commit.interval.ms": 1000})
            c.subscribe([topic])
            t_end = time.monotonic() + 60
            while not stop.is_set() and time.monotonic() < t_end:
                m = c.poll(0.5)
                if m is not None:
                    if m.error() is None:
                        counts["consumed"] += 1
                    else:
                        counts["errors"] += 1
            c.close()  # leave and rejoin: a rebalance a minute

    def churn():
        while not stop.is_set():
            c = Consumer({"bootstrap.servers": b, "group.id": "soak-churn"})
            c.list_topics(timeout=10)
            c.close()
            time.sleep(3)

    threads = [threading.Thread(target=produce, args=("soak-retained", False)),
               threading.Thread(target=produce, args=("soak-compacted", True)),
               threading.Thread(target=consume, args=("soak-retained",)),
               threading.Thread(target=consume, args=("soak-compacted",)),
               threading.Thread(target=churn)]
    for t in threads:
        t.daemon = True
        t.start()
    rows = []
    t0 = time.monotonic()
    with open(a.csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["elapsed_s", "rss_mib", "open_fds", "threads", "log_bytes"])
        while time.monotonic() - t0 < a.seconds:
            time.sleep(a.every)
            row = (round(time.monotonic() - t0, 1), *sample(hg.proc.pid, tmp / "data"))
            rows.append(row)
            w.writerow(row)
            f.flush()
    stop.set()
    for t in threads:
        t.join(30)
    hg.stop()
    half = rows[len(rows) // 2:]
    for i, name, unit in ((1, "rss", "MiB"), (2, "fds", "fds"), (3, "threads", "threads")):
        ys = [r[i] for r in rows]
        s = slope([r[0] / 60 for r in half], [r[i] for r in half])
        print(f"soak_{name}_first {ys[0]:.4g} {unit}\nsoak_{name}_last {ys[-1]:.4g} {unit}\n"
              f"soak_{name}_max {max(ys):.4g} {unit}\nsoak_{name}_slope_second_half {s:.4g} {unit}/min")
    print(f"soak_seconds {a.seconds:.0f} s\nsoak_produced {counts['produced']} records\n"
          f"soak_consumed {counts['consumed']} records\nsoak_consumer_errors {counts['errors']} errors")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
