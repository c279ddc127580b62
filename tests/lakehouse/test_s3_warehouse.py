"""Topics as Iceberg tables in an S3-compatible warehouse (``iceberg.warehouse=s3://...``),
end to end against a real S3 server (moto's server mode, a subprocess on a loopback port): a
broker subprocess writes the tables' Parquet and metadata files to the bucket, readers reach
them with only the broker's REST catalog URL (and what the catalog vends), and the table equals
the read_committed log record for record, across kill -9 and a store that is down."""
from __future__ import annotations

import datetime as dt
import html
import json
import random
import re
import urllib.request

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource

from tests.helpers.broker import BrokerProcess, BrokerStartError
from tests.helpers.clients import wait_until
from tests.helpers.kafka_oracle import free_port
from tests.helpers.s3_server import SECRET_ACCESS_KEY, S3Server, broker_overrides
from tests.helpers.txn import TXN_BROKER_OVERRIDES, create_topic, txn_producer, unique
from tests.lakehouse.test_iceberg_topics import (duckdb_rows, key_value_kill_9_rounds, log_rows, produce_random, rows_of,
                                                 scrape, table, wait_caught_up)

BUCKET, PREFIX = "lake", "warehouse/hourglass"
WAREHOUSE = f"s3://{BUCKET}/{PREFIX}"


@pytest.fixture
def s3(tmp_path):
    server = S3Server(tmp_path / "moto.log", free_port()).start()
    yield server
    server.stop()


def s3_broker(tmp_path, endpoint: str, **extra) -> BrokerProcess:
    url, console = f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}"
    proc = BrokerProcess(tmp_path / "data", {**TXN_BROKER_OVERRIDES, **broker_overrides(endpoint, WAREHOUSE),
                                             "iceberg.catalog.listeners": url, "console.listeners": console,
                                             "iceberg.target.lag.ms": 100, "metrics.port": 0, **extra})
    proc.catalog_url, proc.console_url = url, console
    return proc


@pytest.fixture
def lake(tmp_path, s3):
    s3.client().create_bucket(Bucket=BUCKET)
    proc = s3_broker(tmp_path, s3.endpoint).start()
    yield proc
    proc.stop()


def keyed_table(bootstrap: str, url: str, topic: str, n: int) -> list[tuple]:
    """A one-partition key_value topic of ``n`` records, its table caught up; the log's rows."""
    create_topic(bootstrap, topic, 1, {"iceberg.mode": "key_value"})
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        p.produce(topic, key=b"k%d" % i, value=b"v%d" % i)
    p.flush(30)
    expected = log_rows(bootstrap, topic, 1)
    wait_caught_up(url, topic, expected)
    return expected


def _get(url: str, headers: dict | None = None) -> dict:
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=20) as r:
        return json.loads(r.read())


def test_s3_table_equals_read_committed_log_and_the_bucket_holds_its_files(lake, s3):
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    b, url, topic = lake.bootstrap, lake.catalog_url, "events"
    create_topic(b, topic, 3, {"iceberg.mode": "key_value"})
    plain = Producer({"bootstrap.servers": b, "linger.ms": 5})
    txn = txn_producer(b, unique("s3-txn"))
    now = int(dt.datetime.now(dt.timezone.utc).timestamp() * 1000)
    for step in range(6):
        produce_random(plain, rng, topic, 3, rng.randint(5, 40), now)
        txn.begin_transaction()
        produce_random(txn, rng, topic, 3, rng.randint(1, 10), now)
        (txn.commit_transaction if step % 2 else txn.abort_transaction)(30)
        plain.flush(30)
    expected = log_rows(b, topic, 3)
    wait_caught_up(url, topic, expected)
    # pyiceberg with the catalog URL alone: the endpoint, region, addressing and keys it reads
    # the bucket with are what LoadTable handed it
    tbl = table(url, topic)
    assert tbl.metadata_location.startswith(f"{WAREHOUSE}/")
    assert rows_of(tbl) == expected, f"seed {seed}"
    assert duckdb_rows(tbl) == expected, f"seed {seed}: DuckDB over Arrow"
    # the bucket holds the table: Parquet data files, manifests and metadata files; the data
    # dir holds only the catalog's pointers
    keys = s3.keys(BUCKET, PREFIX + "/")
    data = {f"s3://{BUCKET}/{k}" for k in keys if k.endswith(".parquet")}
    assert data and {f.file.file_path for f in tbl.scan().plan_files()} <= data
    assert f"s3://{BUCKET}/" + tbl.metadata_location.split(f"s3://{BUCKET}/", 1)[1] in {f"s3://{BUCKET}/{k}" for k in keys}
    assert any(k.endswith(".avro") for k in keys)
    local = lake.data_dir / ".hourglass" / "iceberg"
    assert not [p for p in local.rglob("*") if p.suffix in (".parquet", ".json", ".avro")]
    assert [p.name for p in local.glob("catalog-s3-*.db")]
    # LoadTable's config: what a reader needs to reach the store; the key pair only when asked
    ident = f"{url}/v1/namespaces/redpanda/tables/{topic}"
    plain_cfg = _get(ident)["config"]
    assert plain_cfg == {"s3.endpoint": s3.endpoint, "client.region": "us-east-1", "s3.region": "us-east-1",
                         "s3.path-style-access": "true", "s3.force-virtual-addressing": "false"}
    vended = _get(ident, {"X-Iceberg-Access-Delegation": "vended-credentials"})
    assert vended["config"]["s3.secret-access-key"] == SECRET_ACCESS_KEY
    assert vended["storage-credentials"][0]["prefix"] == WAREHOUSE
    assert _get(f"{url}/v1/config")["defaults"] == plain_cfg
    # the secret is a password: never in the broker's log, null in DescribeConfigs
    # (the harness's own "=== start" line holds the command line, which the test wrote)
    broker_lines = [ln for ln in lake.log_text().splitlines() if not ln.startswith("=== start")]
    assert broker_lines and not [ln for ln in broker_lines if SECRET_ACCESS_KEY in ln]
    res = ConfigResource(ConfigResource.Type.BROKER, "1")
    admin = AdminClient({"bootstrap.servers": b})
    entries = admin.describe_configs([res])[res].result(20)
    secret = entries["iceberg.s3.secret.access.key"]
    assert secret.is_sensitive and secret.value is None
    assert entries["iceberg.warehouse"].value == WAREHOUSE


def test_spark_sql_reads_the_s3_table_with_vended_credentials(lake):
    """Spark SQL (Iceberg's Spark runtime and its AWS bundle, S3FileIO) with the catalog URL and
    the REST spec's access-delegation header only: endpoint, region, path-style access and the
    keys all come from the catalog."""
    from tests.helpers import spark_iceberg
    from tests.lakehouse.test_spark_sql import COLUMNS, spark_rows
    b, url, topic = lake.bootstrap, lake.catalog_url, "sparked"
    create_topic(b, topic, 2, {"iceberg.mode": "key_value"})
    p = Producer({"bootstrap.servers": b, "linger.ms": 5})
    produce_random(p, random.Random(41), topic, 2, 60,
                   int(dt.datetime.now(dt.timezone.utc).timestamp() * 1000))
    p.flush(30)
    expected = log_rows(b, topic, 2)
    wait_caught_up(url, topic, expected)
    got = spark_iceberg.sql(url, {"rows": f"SELECT {COLUMNS} FROM hourglass.redpanda.`{topic}`"},
                            catalog_conf={"header.X-Iceberg-Access-Delegation": "vended-credentials"})
    assert spark_rows(got["rows"]) == expected


def test_moving_to_an_s3_warehouse_writes_the_tables_there_anew_and_names_the_old_ones(tmp_path, s3):
    """A broker whose tables were in its data dir, restarted with iceberg.warehouse=s3://...:
    the tables are written to the bucket from the log (each row once), the catalog URL serves
    those, and the start says where the old ones stay."""
    s3.client().create_bucket(Bucket=BUCKET)
    url = f"http://127.0.0.1:{free_port()}"
    local = BrokerProcess(tmp_path / "data", {"iceberg.catalog.listeners": url, "iceberg.target.lag.ms": 100}).start()
    try:
        topic = "moved"
        assert len(keyed_table(local.bootstrap, url, topic, 20)) == 20
        assert table(url, topic).metadata_location.startswith("file:")
    finally:
        local.stop()
    moved = s3_broker(tmp_path, s3.endpoint).start()
    try:
        expected = log_rows(moved.bootstrap, topic, 1)
        wait_caught_up(moved.catalog_url, topic, expected)
        tbl = table(moved.catalog_url, topic)
        assert tbl.metadata_location.startswith(f"{WAREHOUSE}/") and rows_of(tbl) == expected
        old = local.data_dir / ".hourglass" / "iceberg" / "catalog.db"
        assert f"Iceberg: {old} holds the tables of another warehouse location" in moved.log_text()
    finally:
        moved.stop()


def test_without_vending_a_reader_brings_its_own_keys(tmp_path, s3):
    s3.client().create_bucket(Bucket=BUCKET)
    proc = s3_broker(tmp_path, s3.endpoint, **{"iceberg.catalog.vended.credentials": False}).start()
    try:
        url, topic = proc.catalog_url, "own-keys"
        expected = keyed_table(proc.bootstrap, url, topic, 30)
        body = _get(f"{url}/v1/namespaces/redpanda/tables/{topic}", {"X-Iceberg-Access-Delegation": "vended-credentials"})
        assert "storage-credentials" not in body and "s3.secret-access-key" not in body["config"]
        from pyiceberg.catalog.rest import RestCatalog
        from tests.helpers.s3_server import ACCESS_KEY_ID
        own = RestCatalog("reader", uri=url, **{"s3.access-key-id": ACCESS_KEY_ID,
                                                "s3.secret-access-key": SECRET_ACCESS_KEY})
        assert rows_of(own.load_table(("redpanda", topic))) == expected
    finally:
        proc.stop()


def test_kill_9_with_an_s3_warehouse_loses_and_doubles_no_row(lake, s3):
    """The local warehouse's kill -9 rounds (every other kill inside a commit: a Parquet object
    is in the bucket that the table's snapshot does not hold yet), on the bucket."""
    prefix = f"{PREFIX}/redpanda/crashy/data/"
    key_value_kill_9_rounds(lake, "crashy", lambda: sum(k.endswith(".parquet") for k in s3.keys(BUCKET, prefix)), rounds=4)


def test_a_store_that_is_down_then_has_no_bucket_logs_why_and_recovers(tmp_path):
    """The endpoint answers nothing at first, then the server is up without the bucket, then
    the bucket is made: each failure is one clear log line and a counted failure, the broker
    serves Kafka throughout, and the table catches up with the log once the store answers."""
    s3 = S3Server(tmp_path / "moto.log", free_port())  # not started: nothing listens there yet
    proc = s3_broker(tmp_path, s3.endpoint).start()
    try:
        b, url, topic = proc.bootstrap, proc.catalog_url, "patient"
        create_topic(b, topic, 2, {"iceberg.mode": "key_value"})
        p = Producer({"bootstrap.servers": b})
        for i in range(50):
            p.produce(topic, partition=i % 2, key=b"k%d" % i, value=b"v%d" % i)
        p.flush(30)
        down = f"the warehouse {WAREHOUSE} at {s3.endpoint} failed"
        wait_until(lambda: f"Iceberg: {down}" in proc.log_text(), timeout=30, what="the start-up probe's line")
        wait_until(lambda: f"translating topic {topic} to its Iceberg table failed" in proc.log_text(),
                   timeout=30, what="a failed translation's line")
        assert f"resuming from the table): {down}" in proc.log_text()
        assert "(nothing answers at iceberg.s3.endpoint)" in proc.log_text()
        m = scrape(proc)
        assert m[("hourglass_iceberg_translation_failures_total", ())] >= 1
        # the console's topic page says the table is failing, and why
        page = _page(f"{proc.console_url}/topics/{topic}?tab=partitions")
        assert '<td class="failing">' in page and html.escape(down, quote=True) in page
        # the broker serves Kafka meanwhile
        assert len(log_rows(b, topic, 2)) == 50
        status, body = _status(f"{url}/v1/namespaces/redpanda/tables/{topic}")
        assert status in (404, 503), body  # no table yet: its creation is what fails
        s3.start()
        try:
            mark = len(proc.log_text())
            # the store's own words (a write to a missing bucket), after the next retry
            wait_until(lambda: re.search(r"translating topic patient .* failed .*: the warehouse "
                                         r".* failed: .*The specified bucket does not exist.*\(create the bucket", proc.log_text()[mark:]),
                       timeout=60, what="the missing bucket's line")
            s3.client().create_bucket(Bucket=BUCKET)
            for i in range(50, 60):
                p.produce(topic, partition=i % 2, key=b"k%d" % i, value=b"v%d" % i)
            p.flush(30)
            expected = log_rows(b, topic, 2)
            wait_caught_up(url, topic, expected, timeout=90)
            assert rows_of(table(url, topic)) == expected
            assert any(k.endswith(".parquet") for k in s3.keys(BUCKET, PREFIX + "/"))
            assert '<td class="failing">' not in _page(f"{proc.console_url}/topics/{topic}?tab=partitions")
            # the store goes away again: LoadTable answers the REST spec's 503 with the reason
            s3.stop()
            status, body = _status(f"{url}/v1/namespaces/redpanda/tables/{topic}")
            assert (status, body["error"]["type"]) == (503, "ServiceUnavailableException"), body
            assert body["error"]["message"].startswith(down) and "nothing answers" in body["error"]["message"]
        finally:
            s3.stop()
    finally:
        proc.stop()


def test_wrong_credentials_log_why_and_the_right_ones_catch_up(tmp_path):
    """A store that checks signatures (moto with IAM on): a wrong secret is a logged, counted
    failure per round while Kafka is served; restarted with the right key pair, the table
    catches up with the log, each row once."""
    s3 = S3Server(tmp_path / "moto.log", free_port(), iam=True).start()
    try:
        key_id, secret = s3.make_user()
        s3.client(key_id=key_id, secret=secret).create_bucket(Bucket=BUCKET)
        wrong = s3_broker(tmp_path, s3.endpoint, **{"iceberg.s3.access.key.id": key_id,
                                                    "iceberg.s3.secret.access.key": "not-" + secret})
        wrong.start()
        try:
            b, url, topic = wrong.bootstrap, wrong.catalog_url, "signed"
            create_topic(b, topic, 2, {"iceberg.mode": "key_value"})
            p = Producer({"bootstrap.servers": b})
            for i in range(40):
                p.produce(topic, partition=i % 2, value=b"v%d" % i)
            p.flush(30)
            wait_until(lambda: re.search(r"translating topic signed .* failed .*: the warehouse .* failed: .*"
                                         r"ACCESS_DENIED.*\(check iceberg.s3.access.key.id",
                                         wrong.log_text()), timeout=60, what="the wrong secret's line")
            assert "Iceberg: the warehouse" in wrong.log_text()  # the start-up probe said so first
            assert scrape(wrong)[("hourglass_iceberg_translation_failures_total", ())] >= 1
            assert len(log_rows(b, topic, 2)) == 40
        finally:
            wrong.stop()
        right = s3_broker(tmp_path, s3.endpoint, **{"iceberg.s3.access.key.id": key_id,
                                                    "iceberg.s3.secret.access.key": secret})
        right.start()
        try:
            expected = log_rows(right.bootstrap, topic, 2)
            wait_caught_up(right.catalog_url, topic, expected)
            assert rows_of(table(right.catalog_url, topic)) == expected
        finally:
            right.stop()
    finally:
        s3.stop()


def _page(url: str) -> str:
    with urllib.request.urlopen(url, timeout=20) as r:
        return r.read().decode()


def _status(url: str) -> tuple[int, dict]:
    import urllib.error
    try:
        with urllib.request.urlopen(url, timeout=20) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.mark.parametrize("overrides, reason", [
    ({"iceberg.warehouse": "s3://Not_A_Bucket/x"}, "is not a valid S3 bucket name"),
    ({"iceberg.warehouse": "/var/lake"}, "Expected s3://BUCKET[/PREFIX]"),
    ({"iceberg.warehouse": WAREHOUSE, "iceberg.s3.endpoint": "127.0.0.1:9000"}, "Expected http://HOST:PORT"),
    ({"iceberg.s3.endpoint": "http://127.0.0.1:9000"}, "iceberg.warehouse is not an s3:// location"),
    ({"iceberg.warehouse": WAREHOUSE, "iceberg.s3.access.key.id": "k"}, "go together"),
])
def test_a_malformed_store_setting_refuses_to_start(tmp_path, overrides, reason):
    proc = BrokerProcess(tmp_path / "data", overrides)
    with pytest.raises(BrokerStartError, match=reason.replace("[", r"\[").replace(".", r"\.")):
        proc.start()


def test_s3_table_retention_expires_rows_and_snapshots_and_deletes_their_objects(tmp_path, s3):
    """The table's own retention on the S3 warehouse (lakehouse.expiry through the table's
    FileIO): rows older than iceberg.retention.ms go (whole day partitions dropped), snapshot
    expiry leaves the current one, and the bucket then holds exactly the Parquet objects it
    references."""
    s3.client().create_bucket(Bucket=BUCKET)
    lake = s3_broker(tmp_path, s3.endpoint, **{"log.retention.check.interval.ms": 200}).start()
    try:
        _retention_on_s3(lake, s3)
    finally:
        lake.stop()


def _retention_on_s3(lake, s3) -> None:
    from tests.lakehouse.test_table_retention import MAX_AGE, now_ms, set_configs
    b, url, topic = lake.bootstrap, lake.catalog_url, "aging"
    create_topic(b, topic, 1, {"iceberg.mode": "key_value"})
    p = Producer({"bootstrap.servers": b})
    now = now_ms()
    for i in range(40):
        p.produce(topic, key=b"k%d" % i, value=b"v%d" % i, timestamp=now - (10 * 86_400_000 if i % 2 else 60_000))
    p.flush(30)
    before = log_rows(b, topic, 1)
    wait_caught_up(url, topic, before)
    data_prefix = f"{PREFIX}/redpanda/{topic}/data/"
    assert sum(k.endswith(".parquet") for k in s3.keys(BUCKET, data_prefix)) >= 2  # two day partitions
    set_configs(b, topic, {"iceberg.retention.ms": 5 * 86_400_000, MAX_AGE: 0})
    newer = [r for r in before if r[2] >= now - 5 * 86_400_000]
    assert len(newer) == 20
    wait_until(lambda: rows_of(table(url, topic)) == newer and len(table(url, topic).snapshots()) == 1,
               timeout=60, what="data and snapshot expiry")

    def objects_are_live():
        live = {t.file.file_path for t in table(url, topic).scan().plan_files()}
        return {f"s3://{BUCKET}/{k}" for k in s3.keys(BUCKET, data_prefix) if k.endswith(".parquet")} == live
    wait_until(objects_are_live, timeout=30, what="the bucket holding only the live Parquet objects")
