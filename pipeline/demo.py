"""``hourglass-demo produce``: JSON events with event times, some out of order, so the
pipeline has something to replay.

    hourglass-demo produce --bootstrap localhost:9092 --topic events --rate 50 --skew 30

Each event is ``{"id": n, "ts": event time ms, "kind": "click"|"view"|"buy"}`` produced with
that event time as its CreateTime; ``--skew S`` makes about one event in ten up to S seconds
late (an out-of-order CreateTime, as real devices send).
"""
from __future__ import annotations

import argparse
import json
import random
import signal
import time

KINDS = ("click", "view", "buy")


def events(n: int | None, rate: float, skew_s: float, seed: int | None = None, now=time.time):
    rnd = random.Random(seed)
    i = 0
    while n is None or i < n:
        ts = int(now() * 1000)
        if skew_s > 0 and rnd.random() < 0.1:
            ts -= int(rnd.uniform(0, skew_s) * 1000)
        yield {"id": str(i), "ts": ts, "kind": rnd.choice(KINDS)}
        i += 1
        if rate > 0:
            time.sleep(1.0 / rate)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="hourglass-demo")
    sub = p.add_subparsers(dest="cmd", required=True)
    pr = sub.add_parser("produce", help="produce JSON events")
    pr.add_argument("--bootstrap", default="localhost:9092")
    pr.add_argument("--topic", default="events")
    pr.add_argument("--rate", type=float, default=10.0, help="events per second (0: as fast as possible)")
    pr.add_argument("--skew", type=float, default=0.0, help="seconds: ~10%% of events arrive up to this late")
    pr.add_argument("--count", type=int, help="stop after N events (default: run until interrupted)")
    pr.add_argument("--seed", type=int)
    args = p.parse_args(argv)
    # a container's stop is a SIGTERM to PID 1, which Python leaves ignored there: end as on
    # Ctrl-C (flush, report, exit 0) rather than wait for the runtime's kill
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    from confluent_kafka import Producer
    prod = Producer({"bootstrap.servers": args.bootstrap, "linger.ms": 5})
    n = 0
    try:
        for ev in events(args.count, args.rate, args.skew, args.seed):
            prod.produce(args.topic, json.dumps(ev).encode(), key=ev["id"].encode(), timestamp=ev["ts"])
            prod.poll(0)
            n += 1
    except KeyboardInterrupt:
        pass
    finally:
        prod.flush(10)
    print(f"produced {n} event(s) to {args.topic}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
