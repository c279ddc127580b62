"""A share-group pipeline (issue 42) on Hourglass and on Apache Kafka 4.4, interleaved in rounds.

Each run: a fresh topic of ``--partitions`` partitions holding ``--records`` records, a fresh
share group reading from the earliest offset, and librdkafka share consumers (confluent-kafka's
``ShareConsumer``, explicit acknowledgement) that ACCEPT every record but one in
``REJECT_EVERY``, which they REJECT (archived, never redelivered). Membership changes while the
backlog drains, as a pipeline's workers come and go: ``--members`` start together, one more
joins once a fifth of the records are in, and one of the first leaves at three fifths. The run
ends when every record was acknowledged once (accepted or rejected), or at ``--budget``
seconds.

Figures per run:
- ``drain_s``: consumers' creation to the last record acknowledged;
- ``fences``: FENCED_MEMBER_EPOCH answers the clients met (librdkafka's ``cgrp`` debug log:
  each is a member dropping its partitions and its share session);
- ``polls``, ``partitions_per_poll`` (mean distinct partitions in a non-empty poll),
  ``records_per_poll`` (mean), ``records_per_partition_per_poll`` (per partition, its records
  over the polls that held any record), ``first_poll_of`` (per partition, the index of the first
  poll, over all members, that returned one of its records: a starved partition comes late);
- ``redelivered``: records delivered more than once (lock expiry, a member's leave).

    /work/heavy .venv/bin/python bench/share_pipeline.py                      # both brokers, 3 rounds
    /work/heavy .venv/bin/python bench/share_pipeline.py --records 2000 --rounds 1   # a smoke run

Take figures on a quiet machine only; every run prints one JSON line.
"""
from __future__ import annotations

import argparse
import json
import logging
import re
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.share_throughput import _group_config as group_config, produce  # noqa: E402

REJECT_EVERY = 50
FENCED = re.compile(r"FENCED_MEMBER_EPOCH|member epoch is fenced", re.I)


class FenceCounter(logging.Handler):
    """Counts librdkafka log lines reporting a fenced member epoch."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.count = 0
        self.lines: list[str] = []
        self._lock = threading.Lock()

    def emit(self, record):
        msg = record.getMessage()
        if FENCED.search(msg):
            with self._lock:
                self.count += 1
                if len(self.lines) < 5:
                    self.lines.append(msg[:200])


class Run:
    """One pipeline run against ``bootstrap``; ``result()`` once every member stopped."""

    def __init__(self, bootstrap: str, records: int, partitions: int, members: int, budget: float):
        self.bootstrap, self.n, self.partitions, self.members, self.budget = bootstrap, records, partitions, members, budget
        self.topic = f"pipe-{uuid.uuid4().hex[:8]}"
        self.group = f"pipe-{uuid.uuid4().hex[:8]}"
        self.lock = threading.Lock()
        self.acked: set = set()  # (partition, offset) acknowledged once
        self.deliveries = 0
        self.polls: list[Counter] = []  # per non-empty poll: partition -> records
        self.done = threading.Event()
        self.stop_member: dict[int, threading.Event] = {}
        self.fences = FenceCounter()
        self.log = logging.getLogger(f"share-pipeline-{self.group}")
        self.log.propagate = False
        self.log.setLevel(logging.DEBUG)
        self.log.addHandler(self.fences)
        self.errors: list[str] = []

    def member(self, i: int) -> None:
        from confluent_kafka import AcknowledgeType, ShareConsumer
        c = ShareConsumer({"bootstrap.servers": self.bootstrap, "group.id": self.group,
                           "share.acknowledgement.mode": "explicit", "debug": "cgrp", "logger": self.log})
        c.subscribe([self.topic])
        stop = self.stop_member[i]
        try:
            while not self.done.is_set() and not stop.is_set():
                msgs = [m for m in c.poll(0.5) if m.error() is None]
                if not msgs:
                    continue
                per = Counter(m.partition() for m in msgs)
                for m in msgs:
                    reject = m.offset() % REJECT_EVERY == 0
                    c.acknowledge(m, AcknowledgeType.REJECT if reject else AcknowledgeType.ACCEPT)
                with self.lock:
                    self.polls.append(per)
                    self.deliveries += len(msgs)
                    self.acked.update((m.partition(), m.offset()) for m in msgs)
                    if len(self.acked) >= self.n:
                        self.t_end = time.perf_counter()
                        self.done.set()
        except Exception as exc:  # a client error ends this member; the run reports it
            self.errors.append(repr(exc))
        finally:
            try:
                c.commit_sync()
            except Exception:
                pass
            c.close()

    def go(self) -> dict:
        produce(self.bootstrap, self.topic, self.n, partitions=self.partitions, filled=tuple(range(self.partitions)))
        group_config(self.bootstrap, self.group)
        threads: dict[int, threading.Thread] = {}

        def start(i):
            self.stop_member[i] = threading.Event()
            threads[i] = threading.Thread(target=self.member, args=(i,), daemon=True)
            threads[i].start()
        self.t0 = time.perf_counter()
        self.t_end = None
        for i in range(self.members):
            start(i)
        joined = left = False
        deadline = self.t0 + self.budget
        while not self.done.is_set() and time.perf_counter() < deadline:
            got = len(self.acked)
            if not joined and got >= self.n // 5:
                start(self.members)  # a worker joins while the backlog drains
                joined = True
            if joined and not left and got >= 3 * self.n // 5:
                self.stop_member[0].set()  # and one leaves
                left = True
            self.done.wait(0.05)
        self.done.set()
        for t in threads.values():
            t.join(60)
        return self.result()

    def result(self) -> dict:
        polls = self.polls
        first: dict[int, int] = {}
        for idx, per in enumerate(polls):
            for p in per:
                first.setdefault(p, idx)
        per_partition = {p: round(sum(x.get(p, 0) for x in polls) / max(len(polls), 1), 1)
                         for p in range(self.partitions)}
        return {
            "drained": len(self.acked) >= self.n,
            "drain_s": round((self.t_end or time.perf_counter()) - self.t0, 2),
            "acknowledged": len(self.acked),
            "redelivered": self.deliveries - len(self.acked),
            "fences": self.fences.count,
            "polls": len(polls),
            "partitions_per_poll": round(statistics.fmean(len(x) for x in polls), 2) if polls else 0,
            "records_per_poll": round(statistics.fmean(sum(x.values()) for x in polls), 1) if polls else 0,
            "records_per_partition_per_poll": per_partition,
            "first_poll_of": {p: first.get(p) for p in range(self.partitions)},
            "fence_lines": self.fences.lines,
            "errors": self.errors[:3],
        }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=500_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--members", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget", type=float, default=300.0, help="seconds a run may take")
    ap.add_argument("--no-kafka", action="store_true", help="Hourglass only")
    args = ap.parse_args(argv)

    from tests.helpers.broker import BrokerProcess
    work = Path(tempfile.mkdtemp(prefix="share-pipeline-"))
    hg = BrokerProcess(work / "hourglass" / "data").start()
    brokers = [("hourglass", hg.bootstrap, hg.stop)]
    if not args.no_kafka:
        from bench.kafka_peer import Kafka
        k = Kafka(work / "kafka" / "data")
        k.start()
        brokers.append(("kafka", k.bootstrap, k.stop))
    try:
        for rnd in range(args.rounds):
            order = brokers if rnd % 2 == 0 else brokers[::-1]  # interleaved, alternating who goes first
            for name, bs, _ in order:
                r = Run(bs, args.records, args.partitions, args.members, args.budget).go()
                print(json.dumps({"broker": name, "round": rnd, **r}), flush=True)
    finally:
        for _, _, stop in brokers:
            stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
