"""Group rebalance figures, consumer protocol (KIP-848) vs classic, with librdkafka consumers
(confluent-kafka) against a running broker; ``bench/run.py``'s ``groups`` step.

One run per protocol, on a fresh 6-partition topic fed at 600 records/s (100 per partition):

- ``settle_3``: seconds from the third of 3 members starting (they start 170 ms apart, so
  their heartbeats are out of phase as in real deployments) to a balanced assignment (2
  disjoint partitions each, all 6 covered);
- ``join_settle``: seconds from a 4th member starting to the 4 members balanced (2, 2, 1, 1);
- ``join_pause_max`` / ``join_pause_min``: the longest time one of the 3 first members went
  without receiving a record, from the join to one second after it settled, for the member
  that paused most / least: what the members already consuming feel of a rebalance. Every
  member spends ``REVOKE_MS`` (200 ms) in its revocation callback, as applications flushing
  or committing state do: with classic eager members everyone revokes everything, so even
  the least paused member stops; with the consumer protocol only the members giving up a
  partition run the callback, and the member that gives up nothing does not stop at all;
- ``gap_baseline``: the same gap measure in the steady second before the join (the floor).

Both protocols get 500 ms heartbeats (``heartbeat.interval.ms`` for classic members; the
broker's ``group.consumer.heartbeat.interval.ms`` for consumer members) so the comparison is
the protocol's, not a default's. Classic members use librdkafka's default eager ``range``
assignor, as most classic deployments do (revoke everything, rejoin, reassign).

    .venv/bin/python bench/group_rebalance.py BOOTSTRAP [consumer|classic]
"""
from __future__ import annotations

import sys
import threading
import time
import uuid

PARTITIONS = 6
RATE = 600
HEARTBEAT_MS = 500
REVOKE_MS = 200


class _Producer(threading.Thread):
    def __init__(self, bootstrap: str, topic: str):
        super().__init__(daemon=True)
        from confluent_kafka import Producer
        self.p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2})
        self.topic = topic
        self.stop_evt = threading.Event()

    def run(self):
        i = 0
        t0 = time.perf_counter()
        while not self.stop_evt.is_set():
            self.p.produce(self.topic, value=b"x", partition=i % PARTITIONS)
            i += 1
            self.p.poll(0)
            delay = t0 + i / RATE - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
        self.p.flush(10)


class _Member(threading.Thread):
    """Polls; records (time, partition) per record and (time, assignment) on changes."""

    def __init__(self, bootstrap: str, group: str, topic: str, protocol: str):
        super().__init__(daemon=True)
        from confluent_kafka import Consumer
        cfg = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
               "auto.offset.reset": "latest", "enable.auto.commit": True, "log_level": 0}
        if protocol == "classic":
            cfg.update({"heartbeat.interval.ms": HEARTBEAT_MS, "session.timeout.ms": 6000,
                        "partition.assignment.strategy": "range"})
        self.c = Consumer(cfg)
        self.topic = topic
        self.recs: list[tuple[float, int]] = []
        self.assignments: list[tuple[float, frozenset]] = [(time.perf_counter(), frozenset())]
        self.stop_evt = threading.Event()

    def _on_revoke(self, consumer, partitions):
        if partitions:
            time.sleep(REVOKE_MS / 1000)  # the application's own work on revocation

    def run(self):
        self.c.subscribe([self.topic], on_revoke=self._on_revoke)
        while not self.stop_evt.is_set():
            msgs = self.c.consume(100, 0.05)
            now = time.perf_counter()
            self.recs += [(now, m.partition()) for m in msgs if m.error() is None]
            a = frozenset(tp.partition for tp in self.c.assignment())
            if a != self.assignments[-1][1]:
                self.assignments.append((now, a))
        self.c.close()

    def assigned(self) -> frozenset:
        return self.assignments[-1][1]


def _balanced(members, sizes) -> bool:
    sets = [m.assigned() for m in members]
    return sorted(len(s) for s in sets) == sizes and len(frozenset().union(*sets)) == PARTITIONS


def _wait(pred, timeout: float = 60.0) -> float:
    deadline = time.perf_counter() + timeout
    while not pred():
        if time.perf_counter() > deadline:
            raise TimeoutError("group did not settle")
        time.sleep(0.005)
    return time.perf_counter()


def _gaps(members, start: float, end: float) -> list[float]:
    """Per member, the longest time it went without a record within [start, end] (seconds)."""
    out = []
    for m in members:
        ts = [t for t, _part in m.recs if start <= t <= end]
        edges = [start] + ts + [end]
        out.append(max(b - a for a, b in zip(edges, edges[1:])))
    return out


def measure(bootstrap: str, protocol: str) -> dict[str, float]:
    from confluent_kafka.admin import AdminClient, NewTopic
    topic, group = f"reb-{uuid.uuid4().hex[:8]}", f"reb-{protocol}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(20)
    prod = _Producer(bootstrap, topic)
    prod.start()
    members = [_Member(bootstrap, group, topic, protocol) for _ in range(3)]
    try:
        for i, m in enumerate(members):
            if i:
                time.sleep(0.17)
            m.start()
        t0 = time.perf_counter()
        t_settle = _wait(lambda: _balanced(members, [2, 2, 2]))
        time.sleep(2.0)
        t_join = time.perf_counter()
        fourth = _Member(bootstrap, group, topic, protocol)
        fourth.start()
        t_settle2 = _wait(lambda: _balanced(members + [fourth], [1, 1, 2, 2]))
        time.sleep(1.0)
        end = t_settle2 + 1.0
        pauses = _gaps(members, t_join, end)
        return {"settle_3": t_settle - t0, "join_settle": t_settle2 - t_join, "join_pause_max": max(pauses),
                "join_pause_min": min(pauses), "gap_baseline": max(_gaps(members, t_join - 1.0, t_join))}
    finally:
        prod.stop_evt.set()
        for m in members + [locals().get("fourth")]:
            if m is not None:
                m.stop_evt.set()
        for m in members + [locals().get("fourth")]:
            if m is not None and m.is_alive():
                m.join(15)
        prod.join(15)


if __name__ == "__main__":
    for k, v in measure(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "consumer").items():
        print(f"{k} {v:.3f} s")
