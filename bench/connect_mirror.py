"""MirrorMaker 2 and Debezium throughput through Hourglass, each beside Kafka on the same machine.

- ``mm2``: MirrorMaker 2 (dedicated mode, the configuration ``hourglass mirror-config``
  writes) copies a topic of ``RECORDS`` records of ``SIZE`` bytes (4 partitions) from a source
  to an Apache Kafka target: Hourglass -> Kafka beside Kafka -> Kafka. The figure is records per
  second from the first record on the target to the last (MirrorMaker's start-up left out),
  with the wall time from MirrorMaker's start beside it.
- ``debezium``: Debezium's PostgreSQL connector in a Connect worker whose broker is Hourglass,
  beside one whose broker is Kafka: ``ROWS`` rows inserted in one transaction once the
  connector streams; the figure is change events per second from the commit to the last event
  on the topic.

Every process is started here (Hourglass, two Kafka nodes, MirrorMaker 2, the Connect worker,
PostgreSQL), from the caches ``make jvm`` fills; the ratio of the two figures is what to read.

    .venv/bin/python bench/connect_mirror.py [--records 200000] [--rows 20000] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from hourglass.cli.mirror import mm2_properties  # noqa: E402
from tests.helpers.broker import BrokerProcess  # noqa: E402
from tests.helpers.connect import ConnectWorker, MirrorMakerProcess  # noqa: E402
from tests.helpers.kafka_oracle import KafkaProcess  # noqa: E402
from tests.helpers.postgres import PostgresCluster  # noqa: E402

SIZE = 200
PARTITIONS = 4


def produce(bootstrap: str, topic: str, n: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 10, "batch.num.messages": 10000})
    payload = b"x" * SIZE
    for i in range(n):
        while True:
            try:
                p.produce(topic, value=payload, key=str(i).encode())
                break
            except BufferError:
                p.poll(0.01)
    assert p.flush(120) == 0


def total_end(bootstrap: str, topic: str, parts: int) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-watermarks"})
    try:
        return sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(parts))
    except KafkaException:
        return 0
    finally:
        c.close()


def mm2_run(work: Path, name: str, source: str, target: str, records: int) -> dict:
    topic = f"bench-mm2-{name}"
    produce(source, topic, records)
    props = mm2_properties(source_bootstrap=source, target_bootstrap=target, topics=topic, groups="none",
                           replication_factor=1, source_alias="src", target_alias="dst")
    props["offset.lag.max"] = "100"  # throughput: MirrorMaker's default offset syncs
    mm = MirrorMakerProcess(work / f"mm2-{name}", props).start()
    t0 = time.monotonic()
    first = None
    try:
        while True:
            n = total_end(target, topic, PARTITIONS)
            now = time.monotonic()
            if n and first is None:
                first = (now, n)
            if n >= records:
                break
            if now - t0 > 600:
                raise TimeoutError(f"{name}: {n} of {records} copied\n{mm.log_tail()}")
            time.sleep(0.05)
    finally:
        mm.stop()
    t_first, n_first = first
    copy_s = max(now - t_first, 1e-3)
    return {"records": records, "size": SIZE, "wall_s": round(now - t0, 2), "copy_s": round(copy_s, 2),
            "records_per_s": round((records - n_first) / copy_s)}


def debezium_run(work: Path, name: str, bootstrap: str, pg: PostgresCluster, rows: int) -> dict:
    table = f"bench_{name}"
    with pg.connect() as c:
        c.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, name text, amount numeric)")
    w = ConnectWorker(work / f"connect-{name}", bootstrap, group_id=f"bench-{name}").start()
    try:
        w.put_connector(f"cdc-{name}", pg.connector_config(**{
            "topic.prefix": f"b{name}", "table.include.list": f"public.{table}", "slot.name": f"b{name}_slot",
            "publication.name": f"b{name}_pub", "publication.autocreate.mode": "filtered",
            "snapshot.mode": "no_data", "topic.creation.default.replication.factor": 1,
            "topic.creation.default.partitions": PARTITIONS}))
        w.wait_running(f"cdc-{name}")
        while not pg.psql_admin(f"SELECT 1 FROM pg_replication_slots WHERE slot_name = 'b{name}_slot' AND active"):
            time.sleep(0.2)
        with pg.connect() as c:
            with c.transaction():
                with c.cursor().copy(f"COPY {table} (id, name, amount) FROM STDIN") as cp:
                    for i in range(rows):
                        cp.write_row((i, f"customer-{i}", i * 1.5))
        t0 = time.monotonic()
        topic = f"b{name}.public.{table}"
        while total_end(bootstrap, topic, PARTITIONS) < rows:
            if time.monotonic() - t0 > 600:
                raise TimeoutError(f"{name}: events missing\n{w.log_tail()}")
            time.sleep(0.05)
        took = time.monotonic() - t0
    finally:
        w.stop()
    return {"rows": rows, "seconds": round(took, 2), "events_per_s": round(rows / took)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-connect-"))
    hg = BrokerProcess(work / "hourglass" / "data").start()
    ka = KafkaProcess(work / "kafka-a" / "data").start()
    kb = KafkaProcess(work / "kafka-b" / "data").start()
    pg = PostgresCluster().start()
    out: dict = {"mm2": {}, "debezium": {}}
    try:
        out["mm2"]["hourglass->kafka"] = mm2_run(work, "hg", hg.bootstrap, kb.bootstrap, args.records)
        out["mm2"]["kafka->kafka"] = mm2_run(work, "kk", ka.bootstrap, kb.bootstrap, args.records)
        out["debezium"]["hourglass"] = debezium_run(work, "hg", hg.bootstrap, pg, args.rows)
        out["debezium"]["kafka"] = debezium_run(work, "kk", ka.bootstrap, pg, args.rows)
    finally:
        pg.stop()
        for p in (kb, ka, hg):
            p.stop()
    m, d = out["mm2"], out["debezium"]
    out["ratios"] = {
        "mm2_hourglass_over_kafka": round(m["hourglass->kafka"]["records_per_s"] / m["kafka->kafka"]["records_per_s"], 2),
        "debezium_hourglass_over_kafka": round(d["hourglass"]["events_per_s"] / d["kafka"]["events_per_s"], 2),
    }
    text = json.dumps(out, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
