"""Topics as Iceberg tables: what translation costs and how fast it goes.

Starts a broker subprocess (its Iceberg REST catalog on), then for each mode ``off`` and
``key_value`` (rounds alternate, ABAB) creates a fresh topic, produces ``--records`` records of
``--size`` bytes with librdkafka (batching freely) and times it; with ``key_value`` it also
times until the table, read through the REST catalog, holds the last offset of every partition.
Prints ``name value unit``:

    iceberg.produce_off / produce_on   median records/s produced, translation off / on
    iceberg.produce_cost_pct           (off / on - 1) x 100: the broker's cost of translating
    iceberg.translated                 median records/s from the first produce to the table holding all

    .venv/bin/python bench/iceberg_translation.py [--records 200000] [--size 100] [--partitions 4] [--rounds 3]
        [--mode key_value|avro]

``--mode avro`` translates with ``iceberg.mode=value_schema_id_prefix``: every value is an Avro
record (a long, a double, a string of ``--size`` bytes) framed by confluent-kafka's
AvroSerializer against the broker's own Schema Registry, decoded into typed columns.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))


AVRO = {"type": "record", "name": "Reading", "fields": [
    {"name": "n", "type": "long"}, {"name": "x", "type": "double"}, {"name": "s", "type": "string"}]}


def avro_value(registry: str, topic: str, size: int) -> bytes:
    import json
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    ser = AvroSerializer(SchemaRegistryClient({"url": registry}), json.dumps(AVRO))
    return ser({"n": 41, "x": 0.5, "s": "x" * size}, SerializationContext(topic, MessageField.VALUE))


def produce(bootstrap: str, topic: str, n: int, size: int, value: bytes | None = None) -> float:
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1 << 20,
                  "queue.buffering.max.messages": 1_000_000})
    value = value or b"x" * size
    t0 = time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce(topic, value=value, key=b"%d" % i)
                break
            except BufferError:
                p.poll(0.01)
    p.flush(120)
    return time.perf_counter() - t0


def caught_up(url: str, topic: str, partitions: int, n: int) -> bool:
    from pyiceberg.catalog.rest import RestCatalog
    from lakehouse.translate import last_offsets
    try:
        snap = RestCatalog("bench", uri=url).load_table(("redpanda", topic)).current_snapshot()
    except Exception:  # noqa: BLE001 - not created yet
        return False
    held = last_offsets(None if snap is None else snap.summary.additional_properties)
    return sum(o + 1 for o in held.values()) >= n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--lag-ms", type=int, default=1000, help="iceberg.target.lag.ms of the topics")
    ap.add_argument("--mode", choices=("key_value", "avro"), default="key_value")
    args = ap.parse_args()
    from tests.helpers.broker import BrokerProcess
    from tests.helpers.kafka_oracle import free_port
    from tests.helpers.txn import create_topic
    url, registry = f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}"
    on_mode = "key_value" if args.mode == "key_value" else "value_schema_id_prefix"
    results: dict[str, list[float]] = {"off": [], "on": [], "translated": []}
    with tempfile.TemporaryDirectory(prefix="iceberg-bench-") as tmp:
        proc = BrokerProcess(Path(tmp) / "data", {"iceberg.catalog.listeners": url, "schema.registry.listeners": registry})
        proc.start()
        try:
            for rnd in range(args.rounds):
                for mode in ("off", "on"):
                    topic = f"bench-{mode}-{rnd}"
                    create_topic(proc.bootstrap, topic, args.partitions,
                                 {"iceberg.mode": on_mode if mode == "on" else "disabled",
                                  "iceberg.target.lag.ms": str(args.lag_ms)})
                    value = avro_value(registry, topic, args.size) if args.mode == "avro" else None
                    t0 = time.perf_counter()
                    secs = produce(proc.bootstrap, topic, args.records, args.size, value)
                    results[mode].append(args.records / secs)
                    if mode == "on":
                        while not caught_up(url, topic, args.partitions, args.records):
                            if time.perf_counter() - t0 > 600:
                                raise TimeoutError(f"{topic}: the table did not catch up in 600 s")
                            time.sleep(0.05)
                        results["translated"].append(args.records / (time.perf_counter() - t0))
        finally:
            proc.stop()
    off, on = statistics.median(results["off"]), statistics.median(results["on"])
    tag = "" if args.mode == "key_value" else f".{args.mode}"
    print(f"iceberg{tag}.produce_off {off:.0f} records/s")
    print(f"iceberg{tag}.produce_on {on:.0f} records/s")
    print(f"iceberg{tag}.produce_cost_pct {(off / on - 1) * 100:.1f} %")
    print(f"iceberg{tag}.translated {statistics.median(results['translated']):.0f} records/s")


if __name__ == "__main__":
    main()
