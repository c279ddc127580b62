"""A topic table's own retention (lakehouse.expiry), end to end: a real broker subprocess, stock
clients, pyiceberg through the broker's REST catalog URL. The table keeps rows after the log's
retention deleted their segments, until its data expiry (iceberg.retention.ms) removes the
rows older than the cut-off; snapshot expiry (iceberg.history.expire.*) ends time travel to old
snapshots and deletes the files only they referenced; a kill -9 during expiry leaves a readable
table, loses no row expiry did not mean to remove, and translation resumes exactly once."""
from __future__ import annotations

import datetime as dt
import random
import urllib.request
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from lakehouse.translate import last_offsets
from tests.helpers.clients import wait_until
from tests.helpers.txn import create_topic
from tests.lakehouse.test_iceberg_topics import (DAY_MS, held, lake, log_rows, log_start, producing,  # noqa: F401
                                                 rows_of, scrape, table, wait_caught_up)


def set_configs(bootstrap: str, topic: str, configs: dict) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry(k, str(v), incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()])
    admin.incremental_alter_configs([res])[res].result(20)


def now_ms() -> int:
    return int(dt.datetime.now(dt.timezone.utc).timestamp() * 1000)


def local(location: str) -> Path:
    return Path(unquote(urlparse(location).path))


def live_files(tbl, snapshot_id: int | None = None) -> set[Path]:
    return {local(t.file.file_path) for t in tbl.scan(snapshot_id=snapshot_id).plan_files()}


def parquet_on_disk(tbl) -> set[Path]:
    return set(local(tbl.location()).rglob("*.parquet"))


MAX_AGE = "iceberg.history.expire.max-snapshot-age-ms"


def left_by_crash(lake, topic: str):
    """The topic's table as the warehouse holds it, through its own catalog (broker down)."""
    from lakehouse.tables import open_catalog, warehouse_dir
    cat = open_catalog(warehouse_dir([lake.data_dir]))
    try:
        return cat.load_table(("redpanda", topic))
    finally:
        cat.engine.dispose()


def test_rows_kept_after_log_retention_until_data_expiry_then_snapshots_expire(lake):
    b, url, topic = lake.bootstrap, lake.catalog_url, "aging"
    with pytest.raises(KafkaException) as bad:
        create_topic(b, "badly-kept", 1, {"iceberg.mode": "key_value", "iceberg.retention.ms": "-2"})
    assert bad.value.args[0].code() == KafkaError.INVALID_CONFIG
    create_topic(b, topic, 2, {"iceberg.mode": "key_value", "segment.bytes": "2000", "retention.ms": "-1"})
    p = Producer({"bootstrap.servers": b, "linger.ms": 0})
    now = now_ms()
    # days old and recent records, interleaved in every segment; day-partitioned table
    for i in range(120):
        age = [10 * DAY_MS, 9 * DAY_MS, 3_600_000, 60_000][i % 4] + i
        p.produce(topic, partition=i % 2, key=b"k%d" % i, value=b"v%d" % i, timestamp=now - age)
    p.flush(30)
    before = log_rows(b, topic, 2)
    wait_caught_up(url, topic, before)
    first_snapshot = table(url, topic).current_snapshot().snapshot_id
    old_files = live_files(table(url, topic))
    # the log's retention deletes the segments; the table keeps their rows
    set_configs(b, topic, {"retention.ms": 1})
    wait_until(lambda: log_start(b, topic) > 40, timeout=30, what="retention deleting the first segments")
    set_configs(b, topic, {"retention.ms": -1})  # the records produced next stay in the log
    assert rows_of(table(url, topic)) == before
    # the table's data expiry: rows older than 5 days go, the others all stay
    set_configs(b, topic, {"iceberg.retention.ms": 5 * DAY_MS})
    cutoff = now_ms() - 5 * DAY_MS
    newer = [r for r in before if r[2] >= cutoff]
    assert 0 < len(newer) < len(before)
    wait_until(lambda: rows_of(table(url, topic)) == newer, timeout=30, what="data expiry removing the old rows")
    tbl = table(url, topic)
    deleting = tbl.current_snapshot()
    props = deleting.summary.additional_properties
    # whole day partitions dropped: files deleted, none rewritten
    assert int(props["deleted-data-files"]) > 0 and "added-data-files" not in props, props
    # exactly once: the delete snapshot carries every partition's last offset
    assert held(url, topic) == {0: max(r[1] for r in before if r[0] == 0), 1: max(r[1] for r in before if r[0] == 1)}
    dropped = old_files - live_files(tbl)
    assert dropped and all(f.exists() for f in dropped)  # the earlier snapshots still reference them
    assert rows_of(tbl, first_snapshot) == before  # time travel before the delete
    # translation resumes after the delete, each record once
    for i in range(10):
        p.produce(topic, partition=i % 2, key=b"n%d" % i, value=b"n%d" % i)
    p.flush(30)
    after = [r for r in log_rows(b, topic, 2) if r[1] >= 60]
    wait_caught_up(url, topic, after)
    assert rows_of(table(url, topic)) == sorted(set(newer) | set(after))
    # time travel to an expired snapshot ends as Iceberg says, and the files only expired
    # snapshots referenced are deleted from disk
    # snapshot expiry: every snapshot but the latest two (the broker default, set dynamically)
    history = len(table(url, topic).snapshots())
    assert history >= 3
    admin = AdminClient({"bootstrap.servers": b})
    cluster = ConfigResource(ConfigResource.Type.BROKER, "1", incremental_configs=[ConfigEntry(
        "iceberg.history.expire.min-snapshots-to-keep", "2", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([cluster])[cluster].result(20)
    set_configs(b, topic, {MAX_AGE: 0})
    wait_until(lambda: len(table(url, topic).snapshots()) == 2, timeout=30, what="snapshots expiring")
    tbl = table(url, topic)
    assert tbl.snapshot_by_id(first_snapshot) is None
    with pytest.raises(ValueError, match=f"Snapshot not found: {first_snapshot}"):
        tbl.scan(snapshot_id=first_snapshot).to_arrow()
    wait_until(lambda: not any(f.exists() for f in dropped), timeout=30, what="the dropped files deleted")
    kept = tbl.snapshots()[0].snapshot_id
    assert parquet_on_disk(tbl) == live_files(tbl) | live_files(tbl, kept)
    assert rows_of(tbl) == sorted(set(newer) | set(after))
    m = scrape(lake)
    assert m[("hourglass_iceberg_expired_rows_total", ())] == len(before) - len(newer)
    assert m[("hourglass_iceberg_expired_snapshots_total", ())] == history - 2
    assert m[("hourglass_iceberg_expiry_failures_total", ())] == 0
    page = urllib.request.urlopen(f"{lake.console_url}/topics/{topic}?tab=partitions", timeout=20).read().decode()
    assert '<td class="retention">snapshots 0 ms (at least 2); rows 432000000 ms by record timestamp</td>' in page


#: what the broker logs as each expiry step begins and ends (lakehouse.expiry)
EXPIRY_START = ("data expiry deleting rows", "expiring snapshots", "sweeping files")
EXPIRY_END = ("data expiry deleted", "expired snapshots", "swept files")


def test_kill_9_during_expiry_keeps_the_table_readable_and_exactly_once(lake):
    """Rounds of: produce old and new records continuously to an unpartitioned table (so data
    expiry rewrites files), with data expiry (1 day) and snapshot expiry (10 s) on; kill -9 the
    broker as soon as the log says an expiry step began (data delete, snapshot removal, file
    sweep in turn); restart. The table each kill left reads whole (every file it references
    exists), each row once, and every record of the log up to the offsets it records except
    those expiry meant to remove; at the end it holds exactly the log's records newer than the
    cut-off, and no Parquet file beyond those its current snapshot references."""
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    b, url, topic = lake.bootstrap, lake.catalog_url, "expiring"
    create_topic(b, topic, 2, {"iceberg.mode": "key_value", "iceberg.target.lag.ms": "20",
                               "iceberg.partition.spec": "()", "iceberg.retention.ms": str(DAY_MS),
                               MAX_AGE: "10000"})
    now = now_ms()
    started = 0
    left = []  # (rows, last offsets) of the table each kill left
    for rnd in range(len(EXPIRY_START)):  # each step once (the kill machinery is test_iceberg_topics')
        def old_and_new(p, r):
            for _ in range(20):
                p.produce(topic, partition=r.randrange(2), value=r.randbytes(8),
                          timestamp=now - r.choice([10 * DAY_MS, 2 * DAY_MS, 0]) - r.randrange(1000))
        with producing(lake.bootstrap, rng.random(), old_and_new):
            step = EXPIRY_START[rnd % 3]
            seen = lake.log_text().count(step)
            wait_until(lambda: lake.log_text().count(step) > seen, timeout=60, interval=0.002,
                       what=f"round {rnd}: {step}")
            lake.kill()
        text = lake.log_text()
        # the kill came before the step's end was logged
        started += text.rfind(step) > text.rfind(EXPIRY_END[EXPIRY_START.index(step)])
        # the table the kill left, read with the broker down (nothing expires under the read)
        tbl = left_by_crash(lake, topic)
        got = rows_of(tbl)  # reads every file the current snapshot references
        assert len({(r[0], r[1]) for r in got}) == len(got), f"seed {seed}: a row doubled"
        left.append((set(got), last_offsets(tbl.current_snapshot().summary.additional_properties)))
        lake.start()
    expected = log_rows(lake.bootstrap, topic, 2)
    wait_caught_up(url, topic, expected)
    cutoff = now_ms() - DAY_MS
    newer = [r for r in expected if r[2] >= cutoff]
    assert len(newer) > 50 and len(newer) < len(expected)
    for rnd, (got, last) in enumerate(left):
        assert got <= set(expected), f"seed {seed} round {rnd}: a row the log does not hold"
        lost = {r for r in newer if r[1] <= last.get(r[0], -1)} - got
        assert not lost, f"seed {seed} round {rnd}: rows lost {sorted(lost)[:5]}"
    wait_until(lambda: rows_of(table(url, topic)) == newer, timeout=60,
               what="data expiry having removed exactly the old rows")
    wait_until(lambda: len(table(url, topic).snapshots()) == 1
               and parquet_on_disk(table(url, topic)) == live_files(table(url, topic)),
               timeout=60, what="snapshot expiry and the sweep deleting every unreferenced file")
    assert started >= 1, f"seed {seed}: no kill landed inside an expiry step"
