"""Schema Registry figures (issue 25): register and lookup-by-id latency over 10,000 schemas,
and an AvroSerializer producer against a broker with the registry on vs off.

    .venv/bin/python bench/registry.py [--schemas 10000 (0: skip)] [--messages 50000] [--rounds 5]

- ``register``: 10,000 distinct Avro record schemas, one subject each, registered one after
  the other over one keep-alive HTTP connection (each one is parsed, checked, appended to
  ``_schemas`` and answered): p50/p99 per request, as the client sees it;
- ``lookup``: ``GET /schemas/ids/{id}`` for 10,000 random ids: p50/p99;
- ``produce``: a confluent-kafka producer serializing with AvroSerializer (its registry lookup
  cached after the first message, as in any real producer) producing ``--messages`` records to
  a broker serving the registry (which the serializer uses) vs to a broker without it;
  interleaved rounds, medians of records/s and their ratio (the bar: the registry costs the
  produce path less than 5 %, i.e. ratio >= 0.95). Produce validation is off in both.

Brokers run as subprocesses (``EmbeddedBroker(mode="subprocess")``), so the client's time is
not the broker's. One ``name value unit`` line per figure.
"""
from __future__ import annotations

import argparse
import http.client
import json
import random
import statistics
import sys
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hourglass.embedded import EmbeddedBroker  # noqa: E402

CT = "application/vnd.schemaregistry.v1+json"
VALUE_SCHEMA = json.dumps({"type": "record", "name": "Order", "namespace": "bench", "fields": [
    {"name": "id", "type": "long"}, {"name": "customer", "type": "string"},
    {"name": "amount", "type": "double"}, {"name": "note", "type": ["null", "string"], "default": None}]})


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def out(name: str, value: float, unit: str) -> None:
    print(f"{name} {value:.3f} {unit}", flush=True)


def registry_latency(n: int) -> None:
    with EmbeddedBroker(mode="subprocess", schema_registry=True) as b:
        u = urllib.parse.urlparse(b.schema_registry_url)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)

        def request(method, path, body=None):
            t0 = time.perf_counter()
            conn.request(method, path, body=body, headers={"Content-Type": CT} if body else {})
            r = conn.getresponse()
            data = r.read()
            dt = time.perf_counter() - t0
            if r.status != 200:
                raise RuntimeError(f"{method} {path}: {r.status} {data[:200]!r}")
            return dt, json.loads(data)

        request("GET", "/subjects")  # waits for the registry to be up
        reg, ids = [], []
        for i in range(n):
            schema = json.dumps({"type": "record", "name": f"R{i}", "namespace": "bench",
                                 "fields": [{"name": "id", "type": "long"}, {"name": f"f{i}", "type": "string"}]})
            dt, body = request("POST", f"/subjects/bench-{i}-value/versions", json.dumps({"schema": schema}).encode())
            reg.append(dt)
            ids.append(body["id"])
        look = []
        for _ in range(n):
            dt, _ = request("GET", f"/schemas/ids/{random.choice(ids)}")
            look.append(dt)
        conn.close()
    out("registry_register_p50", pct(reg, 50) * 1000, "ms")
    out("registry_register_p99", pct(reg, 99) * 1000, "ms")
    out("registry_lookup_by_id_p50", pct(look, 50) * 1000, "ms")
    out("registry_lookup_by_id_p99", pct(look, 99) * 1000, "ms")
    out("registry_schemas", len(set(ids)), "schemas")


def _values(n: int) -> list[dict]:
    return [{"id": i, "customer": f"c{i % 1000}", "amount": i * 1.5, "note": None if i % 3 else "x"} for i in range(n)]


def _produce(bootstrap: str, topic: str, payloads) -> float:
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": 1})
    t0 = time.perf_counter()
    n = 0
    for v in payloads():
        while True:
            try:
                p.produce(topic, value=v)
                break
            except BufferError:
                p.poll(0.01)
        n += 1
    assert p.flush(60) == 0
    return n / (time.perf_counter() - t0)


def produce_on_off(messages: int, rounds: int) -> None:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    values = _values(messages)
    on_rates, off_rates = [], []
    with EmbeddedBroker(mode="subprocess", schema_registry=True) as on, EmbeddedBroker(mode="subprocess") as off:
        # the same producer both ways: AvroSerializer against the registry of ``on`` (cached
        # after its first message); only the broker it produces to differs
        sr = SchemaRegistryClient({"url": on.schema_registry_url})
        for rnd in range(rounds):
            for which in (("on", "off") if rnd % 2 == 0 else ("off", "on")):
                broker = on if which == "on" else off
                topic = f"orders-{rnd}"
                ser = AvroSerializer(sr, VALUE_SCHEMA)
                ctx = SerializationContext(topic, MessageField.VALUE)

                def payloads():
                    for v in values:
                        yield ser(v, ctx)
                (on_rates if which == "on" else off_rates).append(_produce(broker.bootstrap_servers, topic, payloads))
    on_m, off_m = statistics.median(on_rates), statistics.median(off_rates)
    out("avro_producer_registry_on", on_m, "records/s")
    out("avro_producer_registry_off", off_m, "records/s")
    out("avro_producer_on_off_ratio", on_m / off_m, "ratio")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--schemas", type=int, default=10_000)
    ap.add_argument("--messages", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    if args.schemas:
        registry_latency(args.schemas)
    produce_on_off(args.messages, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
