"""Topics as Iceberg tables, end to end: a real broker (a subprocess, so it can be killed -9),
stock clients producing, and pyiceberg reading the table through the broker's Iceberg REST
catalog URL. The truth the table is held to is what a read_committed consumer reads from the
log, record for record (partition, offset, timestamp, timestamp type, key, value, headers)."""
from __future__ import annotations

import contextlib
import datetime as dt
import json
import random
import threading
import urllib.error
import urllib.request

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from tests.helpers.broker import BrokerProcess
from tests.helpers.clients import wait_until
from tests.helpers.kafka_oracle import free_port
from tests.helpers.txn import TXN_BROKER_OVERRIDES, create_topic, read_to_end, txn_producer, unique

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
DAY_MS = 86_400_000


@pytest.fixture
def lake(tmp_path):
    """A broker serving its Iceberg REST catalog; the broker-wide lag target is 100 ms."""
    url = f"http://127.0.0.1:{free_port()}"
    console = f"http://127.0.0.1:{free_port()}"
    proc = BrokerProcess(tmp_path / "data", {**TXN_BROKER_OVERRIDES, "iceberg.catalog.listeners": url,
                                             "console.listeners": console,
                                             "iceberg.target.lag.ms": 100, "log.retention.check.interval.ms": 200,
                                             "metrics.port": 0})
    proc.start()
    proc.catalog_url, proc.console_url = url, console
    yield proc
    proc.stop()


def catalog(url: str):
    from pyiceberg.catalog.rest import RestCatalog
    return RestCatalog("hourglass", uri=url)


def table(url: str, topic: str):
    return catalog(url).load_table(("redpanda", topic))


def rows_of(tbl, snapshot_id: int | None = None) -> list[tuple]:
    out = []
    for r in tbl.scan(snapshot_id=snapshot_id).to_arrow().to_pylist():
        m = r["redpanda"]
        ts = None if m["timestamp"] is None else (m["timestamp"] - EPOCH) // dt.timedelta(milliseconds=1)
        out.append((m["partition"], m["offset"], ts, m["timestamp_type"], m["key"], r["value"],
                    tuple((h["key"], h["value"]) for h in m["headers"])))
    return sorted(out)


def duckdb_rows(tbl) -> list[tuple]:
    """The table as DuckDB reads it over the Arrow of a pyiceberg scan, in SQL."""
    import duckdb
    con = duckdb.connect()
    con.register("events", tbl.scan().to_arrow())
    got = con.sql("""SELECT redpanda.partition, redpanda.offset, epoch_ms(redpanda.timestamp),
                            redpanda.timestamp_type, redpanda.key, value,
                            [(h.key, h.value) FOR h IN redpanda.headers]
                     FROM events ORDER BY 1, 2""").fetchall()
    return sorted((p, o, ts, tt, k, v, tuple(tuple(h) for h in hs))
                  for p, o, ts, tt, k, v, hs in got)


def log_record(m) -> tuple:
    ts_type, ts = m.timestamp()
    return (m.partition(), m.offset(), ts, 0 if ts_type == 1 else 1, m.key(), m.value(), tuple(m.headers() or ()))


def log_rows(bootstrap: str, topic: str, partitions: int) -> list[tuple]:
    res = read_to_end(bootstrap, topic, range(partitions), "read_committed", timeout=60, record=log_record)
    return sorted(r for recs in res.records.values() for r in recs)


def held(url: str, topic: str) -> dict[int, int]:
    """partition -> last offset the table holds, by its current snapshot's summary."""
    from lakehouse.translate import last_offsets
    snap = table(url, topic).current_snapshot()
    return {} if snap is None else last_offsets(snap.summary.additional_properties)


def wait_caught_up(url: str, topic: str, expected: list[tuple], timeout: float = 60.0) -> None:
    """Until the table holds every partition up to its last record in ``expected``."""
    last: dict[int, int] = {}
    for r in expected:
        last[r[0]] = max(last.get(r[0], -1), r[1])

    def done():
        try:
            h = held(url, topic)
        except Exception:  # noqa: BLE001 - the table is created by the first translation
            return False
        return all(h.get(p, -1) >= o for p, o in last.items())
    wait_until(done, timeout=timeout, interval=0.1, what=lambda: f"table of {topic} reaching {last}")


def random_headers(rng: random.Random) -> list:
    return [(rng.choice(["a", "b", "trace-id", ""]), rng.choice([None, b"", rng.randbytes(rng.randint(1, 6))]))
            for _ in range(rng.randint(0, 3))]


def produce_random(p: Producer, rng: random.Random, topic: str, partitions: int, n: int, now_ms: int) -> None:
    for _ in range(n):
        p.produce(topic, partition=rng.randrange(partitions),
                  key=rng.choice([None, b"", rng.randbytes(rng.randint(1, 8))]),
                  value=rng.choice([None, rng.randbytes(rng.randint(0, 64))]),
                  headers=random_headers(rng),
                  # out of order, over several days (and so several table partitions)
                  timestamp=now_ms - rng.randint(0, 5 * DAY_MS))


@contextlib.contextmanager
def producing(bootstrap: str, seed: float, produce_some):
    """A thread producing ``produce_some(producer, rng)`` again and again while the block runs
    (a broker killed meanwhile included). The block's end is the producer's: what is not yet
    acknowledged then is dropped (the callers kill the broker inside the block, and a flush
    would wait out message.timeout.ms for a broker that is not there)."""
    stop = threading.Event()

    def run():
        p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2, "message.timeout.ms": 5000})
        r = random.Random(seed)
        while not stop.is_set():
            produce_some(p, r)
            p.poll(0.01)
        p.purge()
        p.flush(1)
    t = threading.Thread(target=run)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join(30)


def test_random_topics_table_equals_read_committed_log(lake):
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    b, url = lake.bootstrap, lake.catalog_url
    create_topic(b, "events", 3, {"iceberg.mode": "key_value"})
    create_topic(b, "stamped", 2, {"iceberg.mode": "key_value", "message.timestamp.type": "LogAppendTime"})
    plain = Producer({"bootstrap.servers": b, "linger.ms": 5})
    txns = [txn_producer(b, unique(f"iceberg-txn{i}")) for i in range(2)]
    now = int(dt.datetime.now(dt.timezone.utc).timestamp() * 1000)
    for step in range(12):
        for topic, parts in (("events", 3), ("stamped", 2)):
            produce_random(plain, rng, topic, parts, rng.randint(1, 30), now)
        t = rng.choice(txns)
        t.begin_transaction()
        for topic, parts in (("events", 3), ("stamped", 2)):
            produce_random(t, rng, topic, parts, rng.randint(1, 10), now)
        (t.commit_transaction if rng.random() < 0.5 else t.abort_transaction)(30)
        plain.flush(30)
    # an open transaction holds back every partition it wrote from its first offset (the LSO)
    open_txn = txns[0]
    open_txn.begin_transaction()
    open_txn.produce("events", partition=0, key=b"open", value=b"waits")
    open_txn.flush(30)
    plain.produce("events", partition=0, key=b"after", value=b"waits too")
    plain.flush(30)
    before = log_rows(b, "events", 3)  # read_committed stops at the LSO
    assert all(r[4] not in (b"open", b"after") for r in before), f"seed {seed}"
    wait_caught_up(url, "events", before)
    assert rows_of(table(url, "events")) == before, f"seed {seed}"
    open_txn.commit_transaction(30)
    for topic, parts in (("events", 3), ("stamped", 2)):
        expected = log_rows(b, topic, parts)
        wait_caught_up(url, topic, expected)
        got = rows_of(table(url, topic))
        assert got == expected, f"seed {seed}: {topic}"
        if topic == "events":
            assert duckdb_rows(table(url, topic)) == expected, f"seed {seed}: DuckDB over Arrow"
    assert {r[3] for r in rows_of(table(url, "stamped"))} == {1}  # LogAppendTime
    assert {r[3] for r in rows_of(table(url, "events"))} == {0}
    assert len({(r[0], r[1]) for r in got}) == len(got)


def test_kill_9_during_translation_loses_and_doubles_no_row(lake):
    """Rounds of: produce continuously, kill -9 the broker at a chosen moment, restart (see
    ``kill_9_rounds``). Then the table equals the read_committed log, each row once."""
    key_value_kill_9_rounds(lake, "crashy")


def key_value_kill_9_rounds(lake, topic: str, parquet_files=None, rounds: int = 8) -> None:
    """``kill_9_rounds`` of random records into a key_value topic whose Parquet files (written,
    committed or not) ``parquet_files()`` counts; then the table equals the read_committed log."""
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    b, url = lake.bootstrap, lake.catalog_url
    create_topic(b, topic, 2, {"iceberg.mode": "key_value", "iceberg.target.lag.ms": "20"})
    now = int(dt.datetime.now(dt.timezone.utc).timestamp() * 1000)
    mid_commit_kills, orphans = kill_9_rounds(lake, topic, rng, lambda p, r: produce_random(p, r, topic, 2, 20, now),
                                              _data_files, parquet_files, rounds)
    expected = log_rows(lake.bootstrap, topic, 2)
    wait_caught_up(url, topic, expected)
    got = rows_of(table(url, topic))
    assert len({(r[0], r[1]) for r in got}) == len(got), f"seed {seed}: a row doubled"
    assert got == expected, f"seed {seed}"
    assert len(expected) > 100 and mid_commit_kills == (rounds + 1) // 2 and orphans > 0


def kill_9_rounds(lake, topic: str, rng: random.Random, produce_some, data_files, parquet_files=None,
                  rounds: int = 8) -> tuple[int, int]:
    """Rounds of: a producer thread calling ``produce_some(producer, rng)`` continuously, kill -9
    of the broker at a chosen moment, restart. Every other round the kill lands inside a commit:
    once a Parquet file of the table exists that no snapshot holds (written, not yet committed;
    ``data_files(table)``: the files the table's snapshots hold, all told; see
    ``_frozen_inside_a_commit``); the other rounds right after a commit. ``parquet_files()``
    counts the topic's Parquet files in the warehouse (default: the local one). Returns (kills
    inside a commit, orphan files those kills left)."""
    url = lake.catalog_url
    files = lake.data_dir / ".hourglass" / "iceberg" / "redpanda" / topic / "data"
    if parquet_files is None:
        def parquet_files():
            return len(list(files.rglob("*.parquet"))) if files.exists() else 0
    orphans = 0  # files of commits a kill interrupted
    mid_commit_kills = 0
    for rnd in range(rounds):
        with producing(lake.bootstrap, rng.random(), produce_some):
            if rnd % 2 == 0:
                wait_until(lambda: _frozen_inside_a_commit(lake, topic, parquet_files, data_files, orphans),
                           timeout=60, interval=0.005, what=f"round {rnd}: a commit under way")
                mid_commit_kills += 1
            else:
                snapshots = _snapshots(url, topic)
                wait_until(lambda: _snapshots(url, topic) > snapshots, timeout=60, interval=0.02,
                           what=f"round {rnd}: a new snapshot")
            lake.kill()
        lake.start()
        orphans = parquet_files() - _held_files(url, topic, data_files)
    return mid_commit_kills, orphans


def _frozen_inside_a_commit(lake, topic: str, parquet_files, data_files, orphans: int) -> bool:
    """True, with the broker stopped (SIGSTOP), when a kill now lands inside a commit: more Parquet
    files exist than the table holds (plus ``orphans`` of earlier kills), and the table's metadata
    pointer in the catalog's SQLite file is still the one the count was read against. The count
    alone is not enough: the commit can land between the catalog's answer and the kill (with many
    snapshots, loading the table takes long enough for that)."""
    on_disk = parquet_files()
    try:
        t = table(lake.catalog_url, topic)
    except Exception:  # noqa: BLE001 - no table yet
        return False
    if on_disk <= data_files(t) + orphans:
        return False
    lake.freeze()
    if _metadata_pointer(lake.data_dir, topic) == t.metadata_location:
        return True  # stays frozen for the kill
    lake.thaw()  # the commit landed meanwhile: wait for the next one
    return False


def _metadata_pointer(data_dir, topic: str) -> str | None:
    """The table's current metadata file as the catalog's SQLite file says (read-only; None when
    it cannot be read, a frozen writer holding its lock for one)."""
    import sqlite3
    for db in (data_dir / ".hourglass").rglob("catalog*.db"):
        try:
            with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0)) as con:
                row = con.execute("SELECT metadata_location FROM iceberg_tables WHERE table_namespace = ? "
                                  "AND table_name = ?", ("redpanda", topic)).fetchone()
        except sqlite3.Error:
            return None
        if row is not None:
            return row[0]
    return None


def _held_files(url: str, topic: str, data_files) -> int:
    try:
        return data_files(table(url, topic))
    except Exception:  # noqa: BLE001 - no table yet
        return 0


def _data_files(t) -> int:
    """The data files the table's current snapshot holds."""
    snap = t.current_snapshot()
    return 0 if snap is None else int(snap.summary.additional_properties.get("total-data-files", 0))


def _snapshots(url: str, topic: str) -> int:
    try:
        return len(table(url, topic).snapshots())
    except Exception:  # noqa: BLE001 - no table yet
        return 0


def test_snapshot_as_of_earlier_time_and_rows_kept_after_retention(lake):
    b, url, topic = lake.bootstrap, lake.catalog_url, "history"
    admin = AdminClient({"bootstrap.servers": b})
    # off at first, then switched on: iceberg.mode is dynamic like every topic config
    create_topic(b, topic, 1, {"segment.bytes": "2000"})
    p = Producer({"bootstrap.servers": b, "linger.ms": 0})
    for i in range(60):
        p.produce(topic, key=b"k%d" % i, value=b"first-%d" % i)
    p.flush(30)
    res = ConfigResource(ConfigResource.Type.TOPIC, topic,
                         incremental_configs=[ConfigEntry("iceberg.mode", "key_value",
                                                          incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result(20)
    first = log_rows(b, topic, 1)
    wait_caught_up(url, topic, first)
    t1 = table(url, topic)
    as_of = t1.current_snapshot().timestamp_ms
    for i in range(60):
        p.produce(topic, key=b"k%d" % i, value=b"second-%d" % i)
    p.flush(30)
    both = log_rows(b, topic, 1)
    wait_caught_up(url, topic, both)
    now_table = table(url, topic)
    assert rows_of(now_table) == both
    # /metrics: what this broker committed, and no lag once caught up
    m = scrape(lake)
    assert m[("hourglass_iceberg_rows_total", (("topic", topic),))] == 120
    assert m[("hourglass_iceberg_commits_total", (("topic", topic),))] == len(now_table.snapshots())
    assert m[("hourglass_iceberg_lag_offsets", (("topic", topic),))] == 0
    assert m[("hourglass_iceberg_lag_seconds", (("topic", topic),))] == 0
    # the console's topic page shows the table
    page = urllib.request.urlopen(f"{lake.console_url}/topics/{topic}?tab=partitions", timeout=20).read().decode()
    assert f'<td class="table-name">redpanda.{topic}</td>' in page
    assert f'<td class="snapshot">{now_table.current_snapshot().snapshot_id} at ' in page
    assert '<td class="rows">120</td>' in page and '<td class="lag">0 offsets, 0 s</td>' in page
    # as the table was at that time
    earlier = now_table.snapshot_as_of_timestamp(as_of)
    assert rows_of(now_table, earlier.snapshot_id) == first
    # retention deletes the log's old segments; the table keeps their rows
    res = ConfigResource(ConfigResource.Type.TOPIC, topic,
                         incremental_configs=[ConfigEntry("retention.ms", "1",
                                                          incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result(20)
    wait_until(lambda: log_start(b, topic) > 60, timeout=30, what="retention deleting the first segments")
    assert rows_of(table(url, topic)) == both


def scrape(proc) -> dict:
    import re
    from prometheus_client.parser import text_string_to_metric_families
    wait_until(lambda: "metrics on http://" in proc.log_text(), timeout=10, what="metrics endpoint log line")
    url = re.search(r"metrics on (http://\S+)/metrics", proc.log_text()).group(1)
    text = urllib.request.urlopen(url + "/metrics", timeout=5).read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def log_start(bootstrap: str, topic: str) -> int:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futs = admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.earliest()}, request_timeout=20)
    return next(iter(futs.values())).result().offset


def _http(method: str, url: str, body: dict | None = None) -> tuple[int, dict | None]:
    req = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            raw = r.read()
            return r.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        raw = e.read()
        return e.code, json.loads(raw) if raw else None


def test_rest_catalog_serves_reads_and_refuses_writes(lake):
    b, url = lake.bootstrap, lake.catalog_url
    create_topic(b, "orders.v1", 1, {"iceberg.mode": "key_value"})
    p = Producer({"bootstrap.servers": b})
    p.produce("orders.v1", value=b"x")
    p.flush(30)
    wait_caught_up(url, "orders.v1", log_rows(b, "orders.v1", 1))
    assert _http("GET", url + "/v1/config")[0] == 200
    assert _http("GET", url + "/v1/namespaces") == (200, {"namespaces": [["redpanda"]]})
    assert _http("GET", url + "/v1/namespaces/redpanda") == (200, {"namespace": ["redpanda"], "properties": {}})
    assert _http("GET", url + "/v1/namespaces/redpanda/tables") == \
        (200, {"identifiers": [{"namespace": ["redpanda"], "name": "orders.v1"}]})
    status, body = _http("GET", url + "/v1/namespaces/redpanda/tables/orders.v1")
    assert status == 200 and body["metadata-location"].endswith(".metadata.json")
    assert body["metadata"]["current-snapshot-id"] == table(url, "orders.v1").current_snapshot().snapshot_id
    status, body = _http("GET", url + "/v1/namespaces/redpanda/tables/nope")
    assert (status, body["error"]["type"], body["error"]["code"]) == (404, "NoSuchTableException", 404)
    status, body = _http("GET", url + "/v1/namespaces/other/tables")
    assert (status, body["error"]["type"]) == (404, "NoSuchNamespaceException")
    for method, path, req in (("POST", "/v1/namespaces", {"namespace": ["x"]}),
                              ("POST", "/v1/namespaces/redpanda/tables", {"name": "t", "schema": {}}),
                              ("POST", "/v1/namespaces/redpanda/tables/orders.v1", {"requirements": [], "updates": []}),
                              ("DELETE", "/v1/namespaces/redpanda/tables/orders.v1", None),
                              ("DELETE", "/v1/namespaces/redpanda", None),
                              ("POST", "/v1/tables/rename", {})):
        status, body = _http(method, url + path, req)
        assert (status, body["error"]["type"], body["error"]["code"]) == (403, "ForbiddenException", 403), path
    # and through a client: /v1/config lists only the read endpoints, so pyiceberg does not
    # even send a write
    from pyiceberg.schema import Schema
    with pytest.raises(NotImplementedError, match="POST /v1/{prefix}/namespaces/{namespace}/tables"):
        catalog(url).create_table(("redpanda", "mine"), Schema())
    assert _http("GET", url + "/v1/namespaces/redpanda/tables")[1]["identifiers"] == \
        [{"namespace": ["redpanda"], "name": "orders.v1"}]


def test_bad_iceberg_configs_are_refused(lake):
    from confluent_kafka import KafkaException
    admin = AdminClient({"bootstrap.servers": lake.bootstrap})
    for key, value in (("iceberg.mode", "value_schema_latest:subject"), ("iceberg.mode", "key_value:subject=x"),
                       ("iceberg.mode", "value_schema_latest:bogus=1"),
                       ("iceberg.mode", "value_schema_latest:subject=a,subject=b"),
                       ("iceberg.mode", "bogus"), ("iceberg.partition.spec", "day(redpanda.timestamp)"),
                       ("iceberg.partition.spec", "(hour(redpanda.partition))"),
                       ("iceberg.partition.spec", "(bucket[4](redpanda.partition))")):
        fut = admin.create_topics([NewTopic(unique("refused"), 1, 1, config={key: value})])
        with pytest.raises(KafkaException, match=key.replace(".", r"\.")):
            next(iter(fut.values())).result(20)


def test_partition_spec_is_honoured_and_evolves(lake):
    """``iceberg.partition.spec`` (Redpanda's syntax) partitions the table; a change evolves the
    table's spec, and the rows stay those of the log."""
    b, url, topic = lake.bootstrap, lake.catalog_url, "specced"
    create_topic(b, topic, 2, {"iceberg.mode": "key_value", "iceberg.partition.spec": "(hour(redpanda.timestamp))"})
    p = Producer({"bootstrap.servers": b})
    rng = random.Random(7)
    now = int(dt.datetime.now(dt.timezone.utc).timestamp() * 1000)
    produce_random(p, rng, topic, 2, 40, now)
    p.flush(30)
    wait_caught_up(url, topic, log_rows(b, topic, 2))
    assert [(f.name, str(f.transform)) for f in table(url, topic).spec().fields] == [("redpanda_timestamp_hour", "hour")]
    admin = AdminClient({"bootstrap.servers": b})
    res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[ConfigEntry(
        "iceberg.partition.spec", "(day(redpanda.timestamp), redpanda.partition)",
        incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result(20)
    produce_random(p, rng, topic, 2, 40, now)
    p.flush(30)
    expected = log_rows(b, topic, 2)
    wait_caught_up(url, topic, expected)
    t = table(url, topic)
    assert [(f.name, str(f.transform)) for f in t.spec().fields] == \
        [("redpanda_timestamp_day", "day"), ("redpanda_partition", "identity")]
    assert len(t.specs()) == 2
    assert rows_of(t) == expected


def test_a_topic_made_again_under_its_name_gets_a_new_table(lake):
    """The table of a deleted topic stays readable; a new topic of that name (new topic id, its
    offsets from 0 again) replaces it instead of being skipped up to the old offsets."""
    b, url, topic = lake.bootstrap, lake.catalog_url, "reborn"
    create_topic(b, topic, 1, {"iceberg.mode": "key_value"})
    p = Producer({"bootstrap.servers": b})
    for i in range(20):
        p.produce(topic, value=b"old-%d" % i)
    p.flush(30)
    wait_caught_up(url, topic, log_rows(b, topic, 1))
    admin = AdminClient({"bootstrap.servers": b})
    admin.delete_topics([topic])[topic].result(20)
    assert len(rows_of(table(url, topic))) == 20  # kept after the topic went
    wait_until(lambda: topic not in admin.list_topics(timeout=10).topics, timeout=20, what="topic deleted")
    create_topic(b, topic, 1, {"iceberg.mode": "key_value"})
    for i in range(5):
        p.produce(topic, value=b"new-%d" % i)
    p.flush(30)
    expected = log_rows(b, topic, 1)
    assert [r[5] for r in expected] == [b"new-%d" % i for i in range(5)]
    def replaced():
        try:
            return rows_of(table(url, topic)) == expected
        except Exception:  # noqa: BLE001 - between the old table's drop and the new one's creation
            return False
    wait_until(replaced, timeout=60, interval=0.2, what="the new topic's table")
