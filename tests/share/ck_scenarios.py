"""Share-consumer scenarios run by confluent-kafka's ShareConsumer in a child process, so the
same scenario runs on each librdkafka the tests cover (tests/helpers/librdkafka.py puts the
chosen confluent-kafka first on the child's path).

    python ck_scenarios.py <scenario> '<json arguments>'

prints one JSON object: what was delivered, and the errors seen. The test asserts on it. Only
the standard library and confluent_kafka are imported here.
"""
from __future__ import annotations

import json
import sys
import threading
import time

import confluent_kafka
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

ACK = {"accept": AcknowledgeType.ACCEPT, "release": AcknowledgeType.RELEASE, "reject": AcknowledgeType.REJECT}


def share_consumer(bs: str, group: str, topics: list, explicit: bool = False, **extra) -> ShareConsumer:
    c = ShareConsumer({"bootstrap.servers": bs, "group.id": group, "topic.metadata.refresh.interval.ms": 500,
                       "share.acknowledgement.mode": "explicit" if explicit else "implicit", **extra})
    c.subscribe(topics)
    return c


def produce(bs: str, topic: str, values, partition: int | None = None) -> None:
    p = Producer({"bootstrap.servers": bs, "linger.ms": 5})
    for v in values:
        if partition is None:
            p.produce(topic, value=v.encode())
        else:
            p.produce(topic, value=v.encode(), partition=partition)
    assert p.flush(10) == 0


def drain(c: ShareConsumer, want, got: list, timeout: float, errors: list) -> None:
    """Poll (implicit mode) until ``want(got)`` or the timeout."""
    deadline = time.time() + timeout
    while not want(got) and time.time() < deadline:
        for m in c.poll(0.2):
            if m.error() is not None:
                errors.append(str(m.error()))
            else:
                got.append([m.topic(), m.partition(), m.offset(), m.delivery_count(), m.value().decode()])


def sc_consume(a: dict) -> dict:
    """Consume ``a["n"]`` records (implicit acknowledgement; ``a["config"]``: more consumer
    settings), then close. ``first_poll``: what the first poll with records returned."""
    errors, got = [], []
    c = share_consumer(a["bs"], a["group"], [a["topic"]], **a.get("config", {}))
    drain(c, lambda g: len(g) > 0, got, a.get("timeout", 20), errors)
    first_poll = [o for _t, _p, o, *_ in got]
    drain(c, lambda g: len(g) >= a["n"], got, a.get("timeout", 20), errors)
    drain(c, lambda g: False, got, a.get("linger", 0.5), errors)  # nothing more may come
    c.close()
    return {"got": got, "errors": errors, "first_poll": first_poll}


def sc_added(a: dict) -> dict:
    """Consume the records of a one-partition topic, add two partitions while consuming,
    produce to them, and consume those too."""
    bs, topic, errors, got = a["bs"], a["topic"], [], []
    c = share_consumer(bs, a["group"], [topic])
    drain(c, lambda g: len(g) >= 10, got, 20, errors)
    admin = AdminClient({"bootstrap.servers": bs})  # held: a collected client fails its futures
    admin.create_partitions([NewPartitions(topic, 3)])[topic].result()
    for p in (1, 2):
        produce(bs, topic, [f"p{p}-{i}" for i in range(10)], partition=p)
    drain(c, lambda g: len(g) >= 30, got, 25, errors)
    drain(c, lambda g: False, got, 0.5, errors)
    c.close()
    return {"got": got, "errors": errors}


def sc_recreated(a: dict) -> dict:
    """Consume a topic, delete it and create it again under the same name (with
    ``a["partitions"]`` partitions, 2 unless told) while the consumer stays subscribed,
    produce, and consume the new topic's records."""
    bs, topic, errors, got = a["bs"], a["topic"], [], []
    parts = a.get("partitions", 2)
    admin = AdminClient({"bootstrap.servers": bs})
    c = share_consumer(bs, a["group"], [topic])
    drain(c, lambda g: len(g) >= 10, got, 20, errors)
    admin.delete_topics([topic])[topic].result()
    time.sleep(1.0)  # the consumer sees the topic gone
    deadline = time.time() + 10
    while True:
        try:
            admin.create_topics([NewTopic(topic, parts)])[topic].result()
            break
        except Exception:
            if time.time() > deadline:
                raise
            time.sleep(0.2)
    for p in range(parts):
        produce(bs, topic, [f"new{p}-{i}" for i in range(10)], partition=p)
    before = len(got)
    drain(c, lambda g: len(g) >= before + 10 * parts, got, 30, errors)
    drain(c, lambda g: False, got, 0.5, errors)
    c.close()
    return {"got": got, "errors": [e for e in errors if "UNKNOWN_TOPIC" not in e]}


def sc_rate(a: dict) -> dict:
    """Consume for ``a["seconds"]`` as fast as the client may (client id ``a["client_id"]``,
    implicit acknowledgement), or until ``a["until"]`` value bytes came: the value bytes
    received, every delivery [partition, offset, delivery count] and the throttle times the
    broker reported (librdkafka's throttle_cb)."""
    errors, got, throttles = [], [], []
    c = share_consumer(a["bs"], a["group"], [a["topic"]], **{
        "client.id": a["client_id"], "throttle_cb": lambda ev: throttles.append(ev.throttle_time)})
    size = 0
    deadline = time.time() + a["seconds"]
    until = a.get("until", float("inf"))
    while time.time() < deadline and size < until:
        for m in c.poll(0.2):
            if m.error() is not None:
                errors.append(str(m.error()))
            else:
                size += len(m.value())
                got.append([m.partition(), m.offset(), m.delivery_count()])
    c.close()
    return {"bytes": size, "got": got, "errors": errors, "throttles": throttles}


def sc_many(a: dict) -> dict:
    """``a["consumers"]`` consumers, one thread each, explicit ACCEPT and commit_sync after every
    poll; once each has polled, ``a["n"]`` records are produced over ``a["partitions"]``
    partitions, and they consume until every record was delivered."""
    bs, n = a["bs"], a["n"]
    lock = threading.Lock()
    got, errors, seen = [], [], set()
    done = threading.Event()
    joined = threading.Barrier(a["consumers"] + 1)

    def run(i: int) -> None:
        c = share_consumer(bs, a["group"], [a["topic"]], explicit=True)
        deadline = time.time() + a.get("timeout", 90)
        first = True
        try:
            while not done.is_set() and time.time() < deadline:
                ms = c.poll(0.3)
                if first:
                    first = False
                    joined.wait(30)
                for m in ms:
                    if m.error() is not None:
                        with lock:
                            errors.append(str(m.error()))
                        continue
                    c.acknowledge(m, AcknowledgeType.ACCEPT)
                    with lock:
                        got.append([i, m.partition(), m.offset(), m.delivery_count()])
                        seen.add((m.partition(), m.offset()))
                if ms:
                    res = c.commit_sync()
                    bad = [str(e) for e in res.values() if e is not None]
                    if bad:
                        with lock:
                            errors.extend(bad)
                with lock:
                    if len(seen) >= n:
                        done.set()
        finally:
            c.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(a["consumers"])]
    for t in threads:
        t.start()
    joined.wait(30)
    parts = a["partitions"]
    p = Producer({"bootstrap.servers": bs, "linger.ms": 5})
    for k in range(n):
        p.produce(a["topic"], value=b"%d" % k, partition=k % parts)
        if k % 1000 == 999:
            p.flush(10)
    p.flush(10)
    for t in threads:
        t.join()
    return {"got": got, "errors": errors}


def sc_close_race(a: dict) -> dict:
    """``a["rounds"]`` rounds: produce a few records, a new consumer (explicit mode) polls them
    and whatever earlier rounds left to redeliver, acknowledges them and closes at once. The
    acknowledgements travel with the close, racing the leave heartbeat.

    ``variant`` "types": each round's records are ACCEPTed, RELEASEd and REJECTed (older ones
    coming back are ACCEPTed); "partial": of the last poll's records every other one is
    ACCEPTed and the rest left unacknowledged (earlier polls' all ACCEPTed).

    Returns every delivery [round, value, delivery count, action], the acknowledgement
    callback's errors and rounds that timed out."""
    bs, topic, variant = a["bs"], a["topic"], a["variant"]
    deliveries, cb_errors, stuck, errors = [], [], [], []
    pending: set = set()  # values released or left unacknowledged: must come again

    cb_calls = [0]

    def on_commit(offsets, exc):
        cb_calls[0] += 1
        if exc is not None:
            cb_errors.append(str(exc))

    per_round = 3 if variant == "types" else 4
    for r in range(a["rounds"]):
        mine = [f"{r}:{i}" for i in range(per_round)]
        produce(bs, topic, mine)
        want = set(mine) | pending
        c = share_consumer(bs, a["group"], [topic], explicit=True, **{"fetch.wait.max.ms": 100})
        c.set_acknowledgement_commit_callback(on_commit)
        seen: set = set()
        deadline = time.time() + a.get("round_timeout", 15)
        while time.time() < deadline:
            ms = [m for m in c.poll(0.2)]
            good = []
            for m in ms:
                if m.error() is not None:
                    errors.append(str(m.error()))
                else:
                    good.append(m)
            last = want <= (seen | {m.value().decode() for m in good})
            for k, m in enumerate(good):
                v = m.value().decode()
                seen.add(v)
                if variant == "types":
                    i = int(v.split(":")[1]) if v in mine else 0
                    action = ("accept", "release", "reject")[i]
                else:
                    action = "none" if last and k % 2 else "accept"
                if action != "none":
                    c.acknowledge(m, ACK[action])
                deliveries.append([r, v, m.delivery_count(), action])
                pending.discard(v)
                if action in ("release", "none"):
                    pending.add(v)
            if last:
                break
        else:
            stuck.append([r, sorted(want - seen)])
        c.close()  # at once: the acknowledgements go with the close
    # whatever is still pending comes back once more, to a last consumer
    c = share_consumer(bs, a["group"], [topic], explicit=True)
    c.set_acknowledgement_commit_callback(on_commit)
    seen = set()
    deadline = time.time() + 15
    while not pending <= seen and time.time() < deadline:
        for m in c.poll(0.2):
            if m.error() is None:
                v = m.value().decode()
                seen.add(v)
                c.acknowledge(m, AcknowledgeType.ACCEPT)
                deliveries.append([a["rounds"], v, m.delivery_count(), "accept"])
        c.commit_sync()
    c.close()
    return {"deliveries": deliveries, "callback_errors": cb_errors, "callback_calls": cb_calls[0],
            "stuck": stuck, "errors": errors,
            "missing_at_end": sorted(pending - seen)}


if __name__ == "__main__":
    name, args = sys.argv[1], json.loads(sys.argv[2])
    out = globals()["sc_" + name](args)
    out["librdkafka"] = confluent_kafka.libversion()[0]
    print(json.dumps(out))
