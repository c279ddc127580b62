"""The registry modes of Iceberg topics end to end (iceberg.mode = value_schema_id_prefix /
value_schema_latest): a real broker serving its own Schema Registry and Iceberg REST catalog,
confluent-kafka's AvroSerializer registering and framing values, pyiceberg and DuckDB reading
the tables through the catalog URL. The truth is the read_committed log: every record is one row,
of the topic's table (its value decoded by the registered schema, typed columns) or of the
dead-letter table ``<topic>~dlq`` (its raw bytes and the reason), never both, never twice."""
from __future__ import annotations

import datetime as dt
import io
import json
import random
import re
import struct
import threading
import urllib.request

import fastavro
import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.helpers.broker import BrokerProcess
from tests.helpers.clients import wait_until
from tests.helpers.kafka_oracle import free_port
from tests.helpers.txn import TXN_BROKER_OVERRIDES, create_topic, read_to_end, txn_producer
from tests.lakehouse.test_iceberg_topics import _data_files, _snapshots, table

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
ORDER = {"type": "record", "name": "Order", "namespace": "com.acme", "fields": [
    {"name": "id", "type": "string"},
    {"name": "qty", "type": "int"},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "attrs", "type": {"type": "map", "values": "long"}},
    {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]}},
    {"name": "ship", "type": ["null", {"type": "record", "name": "Ship", "fields": [
        {"name": "city", "type": "string"}, {"name": "express", "type": "boolean"}]}], "default": None},
]}
#: a compatible next version (BACKWARD): one optional field more
ORDER_V2 = {**ORDER, "fields": ORDER["fields"] + [{"name": "channel", "type": ["null", "string"], "default": None}]}
#: a schema whose qty is a string: registered in another subject, it cannot be expressed in the table
CLASHING = {"type": "record", "name": "Order", "namespace": "com.acme",
            "fields": [{"name": "id", "type": "string"}, {"name": "qty", "type": "string"}]}


@pytest.fixture
def reglake(tmp_path):
    """A broker serving its Schema Registry and Iceberg REST catalog; lag target 100 ms."""
    url, registry = f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}"
    proc = BrokerProcess(tmp_path / "data", {**TXN_BROKER_OVERRIDES, "iceberg.catalog.listeners": url,
                                             "schema.registry.listeners": registry,
                                             "iceberg.target.lag.ms": 100, "metrics.port": 0})
    proc.start()
    proc.catalog_url, proc.registry_url = url, registry
    yield proc
    proc.stop()


def held(url: str, name: str) -> dict[int, int]:
    from lakehouse.translate import last_offsets
    try:
        snap = table(url, name).current_snapshot()
    except Exception:  # noqa: BLE001 - not created yet
        return {}
    return {} if snap is None else last_offsets(snap.summary.additional_properties)


def wait_translated(url: str, topic: str, log: list[tuple], timeout: float = 60.0) -> None:
    """Until the topic's table (committed last each round) covers every record of ``log``."""
    last: dict[int, int] = {}
    for p, o, *_ in log:
        last[p] = max(last.get(p, -1), o)
    wait_until(lambda: all(held(url, topic).get(p, -1) >= o for p, o in last.items()), timeout=timeout,
               interval=0.1, what=lambda: f"table of {topic} reaching {last}")


def log_of(bootstrap: str, topic: str, partitions: int) -> list[tuple]:
    """(partition, offset, timestamp ms, key, value bytes) of the read_committed log."""
    res = read_to_end(bootstrap, topic, range(partitions), "read_committed", timeout=60,
                      record=lambda m: (m.partition(), m.offset(), m.timestamp()[1], m.key(), m.value()))
    return sorted(r for recs in res.records.values() for r in recs)


def rows(url: str, name: str) -> dict[tuple[int, int], dict]:
    out = {}
    for r in table(url, name).scan().to_arrow().to_pylist():
        key = (r["redpanda"]["partition"], r["redpanda"]["offset"])
        assert key not in out, f"{name}: row {key} twice"
        out[key] = r
    return out


def expected_columns(value: dict) -> dict:
    """An Order as the table holds it (Redpanda's mapping: enum -> string, map -> key/value
    pairs, ["null", T] -> an optional T, timestamp-millis -> timestamptz)."""
    return {**value, "attrs": sorted(value["attrs"].items()),
            "at": value["at"], "channel": value.get("channel")}


def table_columns(row: dict) -> dict:
    out = {k: v for k, v in row.items() if k != "redpanda"}
    out["attrs"] = sorted(out["attrs"])
    return out


def random_order(rng: random.Random, i: int, v2: bool = False) -> dict:
    from decimal import Decimal
    o = {"id": f"o{i}", "qty": rng.randint(-2**31, 2**31 - 1),
         "price": Decimal(rng.randint(0, 10**9 - 1)) / 100,
         "at": dt.datetime.fromtimestamp(rng.randint(0, 2**40) / 1000, dt.timezone.utc),
         "note": rng.choice([None, "", "gift", "ü"]),
         "tags": [rng.choice("abc") for _ in range(rng.randint(0, 3))],
         "attrs": {rng.choice(["x", "y", "z"]): rng.randint(-2**63, 2**63 - 1) for _ in range(rng.randint(0, 2))},
         "status": rng.choice(["NEW", "PAID", "SHIPPED"]),
         "ship": rng.choice([None, {"city": "Oslo", "express": rng.random() < 0.5}])}
    if v2:
        o["channel"] = rng.choice([None, "web", "shop"])
    return o


def framed(schema_id: int, body: bytes) -> bytes:
    return b"\x00" + struct.pack(">I", schema_id) + body


def test_avro_values_become_typed_columns_bad_ones_the_dlq_and_a_new_version_a_column(reglake):
    b, url = reglake.bootstrap, reglake.catalog_url
    topic = "orders"
    create_topic(b, topic, 2, {"iceberg.mode": "value_schema_id_prefix"})
    sr = SchemaRegistryClient({"url": reglake.registry_url})
    ctx = SerializationContext(topic, MessageField.VALUE)
    v1 = AvroSerializer(sr, json.dumps(ORDER))
    rng = random.Random(41)
    p = Producer({"bootstrap.servers": b, "linger.ms": 5})
    sent: dict[bytes, dict] = {}  # the serializer's bytes -> the order they carry

    def send(value: dict, ser, partition: int) -> None:
        data = ser(value, ctx)
        sent[data] = value
        p.produce(topic, value=data, key=value["id"].encode(), partition=partition,
                  headers=[("h", value["id"].encode())])
    for i in range(60):
        send(random_order(rng, i), v1, i % 2)
    own_id = sr.get_latest_version(f"{topic}-value").schema_id
    clash_id = sr.register_schema("elsewhere-value", Schema(json.dumps(CLASHING), "AVRO"))
    bad = {b"plain bytes": "magic byte", framed(own_id + 1000, b"\x02a"): f"schema id {own_id + 1000} is not",
           framed(own_id, b"\x02"): "does not decode", b"\x00\x00": "shorter",
           framed(clash_id, b"\x02a\x02b"): "cannot be expressed"}
    for i, v in enumerate(bad):
        p.produce(topic, value=v, partition=i % 2)
    # an aborted transaction's values never appear, in neither table
    tp = txn_producer(b, "orders-txn")
    tp.begin_transaction()
    tp.produce(topic, value=b"aborted", partition=0)
    tp.produce(topic, value=v1(random_order(rng, 999), ctx), partition=1)
    tp.abort_transaction()
    p.flush(30)
    log = log_of(b, topic, 2)
    wait_translated(url, topic, log)

    # a compatible new version: its new optional column is added to the table
    v2 = AvroSerializer(sr, json.dumps(ORDER_V2))
    for i in range(60, 90):
        send(random_order(rng, i, v2=True), v2, i % 2)
    p.flush(30)
    log = log_of(b, topic, 2)
    wait_translated(url, topic, log)

    t = table(url, topic)
    types = {f.name: str(f.field_type) for f in t.schema().fields}
    assert types["qty"] == "int" and types["price"] == "decimal(9, 2)" and types["at"] == "timestamptz"
    assert types["status"] == "string" and types["note"] == "string" and types["channel"] == "string"
    assert types["attrs"] == "map<string, long>" and types["tags"] == "list<string>"
    assert types["ship"].startswith("struct<") and types["redpanda"].startswith("struct<")
    good, dead = rows(url, topic), rows(url, topic + "~dlq")
    assert not set(good) & set(dead)
    assert sorted(set(good) | set(dead)) == [(r[0], r[1]) for r in log]  # each record once
    for part, off, ts, key, value in log:
        if value in sent:
            row = good[(part, off)]
            meta = row["redpanda"]
            assert (meta["key"], (meta["timestamp"] - EPOCH) // dt.timedelta(milliseconds=1)) == (key, ts)
            assert meta["headers"] == [{"key": "h", "value": key}]
            assert table_columns(row) == expected_columns(sent[value]), (part, off)
        else:
            row = dead[(part, off)]
            assert row["value"] == value and bad[value] in row["reason"], row["reason"]
    assert len(dead) == len(bad)
    # /metrics counts the dead letters (Redpanda's redpanda_iceberg_translation_invalid_records)
    metrics = re.search(r"metrics on (http://\S+)/metrics", reglake.log_text()).group(1)
    text = urllib.request.urlopen(metrics + "/metrics", timeout=5).read().decode()
    assert f'hourglass_iceberg_dead_letters_total{{topic="orders"}} {float(len(bad))}' in text
    # DuckDB over the Arrow of a scan reads the same typed rows
    import duckdb
    con = duckdb.connect()
    con.register("orders", t.scan().to_arrow())
    got = con.sql("SELECT redpanda.partition, redpanda.offset, id, qty, price, status, channel "
                  "FROM orders ORDER BY 1, 2").fetchall()
    assert got == [(k[0], k[1], r["id"], r["qty"], r["price"], r["status"], r.get("channel"))
                   for k, r in sorted(good.items())]


def test_value_schema_latest_decodes_unprefixed_values_by_the_subjects_latest_schema(reglake):
    b, url = reglake.bootstrap, reglake.catalog_url
    topic, subject = "sensor", "sensor-readings"
    sr = SchemaRegistryClient({"url": reglake.registry_url})
    reading = {"type": "record", "name": "Reading", "fields": [
        {"name": "device", "type": "string"}, {"name": "celsius", "type": "double"}]}
    sr.register_schema(subject, Schema(json.dumps(reading), "AVRO"))
    create_topic(b, topic, 1, {"iceberg.mode": f"value_schema_latest:subject={subject}"})
    parsed = fastavro.parse_schema(reading)
    p = Producer({"bootstrap.servers": b})
    values = [{"device": f"d{i}", "celsius": i / 4} for i in range(20)]
    for v in values:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, v)  # no wire-format prefix in this mode (Redpanda's)
        p.produce(topic, value=buf.getvalue())
    p.produce(topic, value=b"\xff")  # does not decode
    p.flush(30)
    log = log_of(b, topic, 1)
    wait_translated(url, topic, log)
    got = rows(url, topic)
    assert [{"device": r["device"], "celsius": r["celsius"]} for _, r in sorted(got.items())] == values
    dead = rows(url, topic + "~dlq")
    assert [(k, r["value"]) for k, r in dead.items()] == [((0, 20), b"\xff")]


@pytest.mark.timeout(300)  # four broker restarts with a registry to load, on a busy machine
def test_kill_9_during_translation_of_both_tables_loses_and_doubles_no_row(reglake):
    """Rounds of: produce good and bad values continuously, kill -9 the broker, restart. Every
    other round the kill lands inside a commit of the topic's table (a Parquet file of it exists
    that its snapshot does not hold), i.e. after that round's dead-letter commit; the others right
    after a snapshot. Then each record is a row of exactly one table, once."""
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    b, url, topic = reglake.bootstrap, reglake.catalog_url, "crashy"
    files = reglake.data_dir / ".hourglass" / "iceberg" / "redpanda" / topic / "data"
    create_topic(b, topic, 2, {"iceberg.mode": "value_schema_id_prefix", "iceberg.target.lag.ms": "20"})
    sr = SchemaRegistryClient({"url": reglake.registry_url})
    ser = AvroSerializer(sr, json.dumps(ORDER))
    ctx = SerializationContext(topic, MessageField.VALUE)
    mid_commit_kills = 0
    orphans = 0  # Parquet files of the topic's table that commits a kill interrupted left
    for rnd in range(4):
        stop = threading.Event()

        def produce(bootstrap=reglake.bootstrap, r=random.Random(rng.random())):
            p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2, "message.timeout.ms": 5000})
            i = 0
            while not stop.is_set():
                for _ in range(20):
                    i += 1
                    value = ser(random_order(r, i), ctx) if r.random() < 0.8 else r.randbytes(r.randint(0, 9))
                    p.produce(topic, value=value, partition=r.randrange(2))
                p.poll(0.01)
            p.flush(6)
        t = threading.Thread(target=produce)
        t.start()
        if rnd % 2 == 0:
            def in_flight():  # a Parquet file of the topic's table its snapshot does not hold yet
                on_disk = len(list(files.rglob("*.parquet"))) if files.exists() else 0
                return on_disk > _data_files(url, topic) + orphans
            wait_until(in_flight, timeout=60, interval=0.005, what=f"round {rnd}: a commit under way")
            mid_commit_kills += 1
        else:
            snaps = _snapshots(url, topic)
            wait_until(lambda: _snapshots(url, topic) > snaps, timeout=60, interval=0.02,
                       what=f"round {rnd}: a new snapshot")
        reglake.kill()
        stop.set()
        t.join(30)
        reglake.start()
        orphans = len(list(files.rglob("*.parquet"))) - _data_files(url, topic)
    log = log_of(reglake.bootstrap, topic, 2)
    wait_translated(url, topic, log)
    good, dead = rows(url, topic), rows(url, topic + "~dlq")  # rows() fails on a doubled row
    assert not set(good) & set(dead), f"seed {seed}"
    assert sorted(set(good) | set(dead)) == [(r[0], r[1]) for r in log], f"seed {seed}"
    for part, off, _, _, value in log:
        if (part, off) in dead:
            assert dead[(part, off)]["value"] == value
    assert len(log) > 100 and len(dead) > 10 and mid_commit_kills == 2 and orphans > 0




def test_without_a_registry_the_topic_waits_and_the_broker_serves(tmp_path):
    """A registry mode on a broker serving no Schema Registry: translation of that topic waits
    (rounds fail, retried, saying why; no row and no dead letter is written), other topics'
    tables and the log go on."""
    url = f"http://127.0.0.1:{free_port()}"
    proc = BrokerProcess(tmp_path / "data", {"iceberg.catalog.listeners": url, "iceberg.target.lag.ms": 100})
    proc.start()
    try:
        create_topic(proc.bootstrap, "typed", 1, {"iceberg.mode": "value_schema_id_prefix"})
        create_topic(proc.bootstrap, "plain", 1, {"iceberg.mode": "key_value"})
        p = Producer({"bootstrap.servers": proc.bootstrap})
        for topic in ("typed", "plain"):
            p.produce(topic, value=framed(1, b"\x02a"))
        p.flush(30)
        wait_until(lambda: "needs this broker's Schema Registry" in proc.log_text(), timeout=30,
                   what="the reason in the log")
        wait_translated(url, "plain", log_of(proc.bootstrap, "plain", 1))
        assert table(url, "typed").current_snapshot() is None
        assert held(url, "typed~dlq") == {}
        assert len(log_of(proc.bootstrap, "typed", 1)) == 1
    finally:
        proc.stop()
