"""The Kafka Streams application's throughput (tests/jvm/streams-app, exactly_once_v2) on
Hourglass and on Apache Kafka (the oracle, ``KafkaProcess``), interleaved rounds, medians.

Each round starts a fresh broker of one kind, creates the topics, writes the same input (the
designed input of tests/helpers/streams_app.py: ``--events`` events over 4 partitions, the
regions table first), then starts one instance of the application and times it from the moment
it reports RUNNING to the moment its group has committed every input offset (every event
processed, its transaction committed). The figure is events per second over that time; the
application's JVM start and first rebalance are outside it, the windows' repartitioned output,
the join and the changelog writes are inside it.

``--protocol`` picks the application's rebalance protocol (its ``group.protocol``): ``classic``
(the classic group protocol with Streams' own assignor), ``streams`` (KIP-1071's Streams
groups: the broker's coordinator assigns the tasks) or ``both`` (each round runs every
protocol on both brokers, interleaved). Figures are named ``streams_eos_<protocol>_<broker>``
(``classic`` keeps the old names, ``streams_eos_<broker>``, too).

    .venv/bin/python bench/streams_throughput.py [--events 200000] [--rounds 3] [--protocol classic|streams|both]

Needs ``make jvm`` (the application's and Kafka's jars in ~/.cache/hourglass).
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers import streams_app as sa  # noqa: E402
from tests.helpers.broker import BrokerProcess  # noqa: E402
from tests.helpers.kafka_oracle import KafkaProcess  # noqa: E402
from tests.helpers.txn import group_committed  # noqa: E402

PARTITIONS = 4
HOURGLASS_OVERRIDES = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 1000,
                       "group.streams.initial.rebalance.delay.ms": 0}
PROTOCOLS = ("classic", "streams")


def _setup(bootstrap: str, data: sa.StreamsInput) -> None:
    from confluent_kafka import Producer
    sa.create_topics(bootstrap, PARTITIONS)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "enable.idempotence": True,
                  "batch.num.messages": 10000})
    sa.produce(p, data.rows(), PARTITIONS)
    assert p.flush(120) == 0


def _committed(bootstrap: str, group: str) -> int:
    """Input offsets the application has committed, over all partitions (none yet counts 0)."""
    return sum(max(o, 0) for o in group_committed(bootstrap, group, sa.EVENTS, range(PARTITIONS)).values())


def one_round(kind: str, data: sa.StreamsInput, tmp: Path, timeout: float = 900.0,
              protocol: str = "classic") -> float:
    """Events per second of one run of the application (its ``group.protocol`` ``protocol``)
    against a fresh broker of ``kind``."""
    d = tmp / f"{kind}-{protocol}-{uuid.uuid4().hex[:6]}"
    broker = (BrokerProcess(d / "data", HOURGLASS_OVERRIDES) if kind == "hourglass"
              else KafkaProcess(d / "data", {"transaction.state.log.num.partitions": 4}))
    broker.start()
    app = None
    try:
        _setup(broker.bootstrap, data)
        app_id = f"bench-streams-{uuid.uuid4().hex[:6]}"
        app = sa.StreamsAppProcess(broker.bootstrap, app_id, d, "app", extra={"group.protocol": protocol})
        app.start()
        app.wait_state("RUNNING", timeout=180)
        t0 = time.monotonic()
        while True:
            done = _committed(broker.bootstrap, app_id)
            if done >= data.events:
                break
            if not app.running:
                raise RuntimeError(f"the application exited:\n{app.tail()}")
            if time.monotonic() - t0 > timeout:
                raise RuntimeError(f"{kind}: {done}/{data.events} events after {timeout:.0f} s")
            time.sleep(0.2)
        return data.events / (time.monotonic() - t0)
    finally:
        if app is not None:
            app.kill9()
        broker.stop()
        shutil.rmtree(d, ignore_errors=True)


def measure(events: int = 200_000, rounds: int = 3, protocol: str = "classic") -> dict[str, float]:
    protocols = PROTOCOLS if protocol == "both" else (protocol,)
    per_round = 200
    data = sa.make_input(partitions=PARTITIONS, rounds=max(3, events // (PARTITIONS * per_round)),
                         per_round=per_round, regions_per_partition=4, users_per_region=25)
    figures: dict[tuple[str, str], list[float]] = {(p, k): [] for p in protocols for k in ("hourglass", "kafka")}
    with tempfile.TemporaryDirectory(prefix="bench-streams-") as t:
        for r in range(rounds):
            kinds = ("hourglass", "kafka") if r % 2 == 0 else ("kafka", "hourglass")
            for proto in (protocols if r % 2 == 0 else protocols[::-1]):
                for kind in kinds:
                    eps = one_round(kind, data, Path(t), protocol=proto)
                    figures[(proto, kind)].append(eps)
                    print(f"round {r + 1} {proto} {kind} {eps:.0f} events/s", file=sys.stderr, flush=True)
    res: dict[str, float] = {"events": data.events}
    for proto in protocols:
        hg, kf = statistics.median(figures[(proto, "hourglass")]), statistics.median(figures[(proto, "kafka")])
        res.update({f"streams_eos_{proto}_hourglass": hg, f"streams_eos_{proto}_kafka": kf,
                    f"streams_eos_{proto}_ratio": hg / kf})
        if proto == "classic":  # the names bench/run.py and earlier results use
            res.update({"streams_eos_hourglass": hg, "streams_eos_kafka": kf, "streams_eos_ratio": hg / kf})
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--protocol", choices=(*PROTOCOLS, "both"), default="classic",
                    help="the application's group.protocol (both: each, interleaved)")
    a = ap.parse_args()
    res = measure(a.events, a.rounds, a.protocol)
    for name, v in res.items():
        if name.endswith("_ratio"):
            print(f"{name} {v:.2f} hourglass/kafka")
        elif name != "events":
            print(f"{name} {v:.0f} events/s")
    print(f"events {res['events']}")


if __name__ == "__main__":
    main()
