"""Upsert tables of compacted topics (``iceberg.upsert``), end to end: a real broker (a
subprocess, so it can be killed -9) whose log cleaner runs, stock clients producing updates and
tombstones (plain and in committed and aborted transactions, keys in several partitions), and
pyiceberg (and DuckDB over its Arrow) reading the table through the broker's REST catalog. The
truth the table is held to: the latest record of each (partition, key) in what a read_committed
consumer reads of the compacted log, with the keys whose latest record is a tombstone absent
(seed 003; Kafka's LogCleanerIntegrationTest checks the log side)."""
from __future__ import annotations

import random

import pytest
from confluent_kafka import Producer

from tests.helpers.broker import BrokerProcess
from tests.helpers.clients import wait_until
from tests.helpers.kafka_oracle import free_port
from tests.helpers.txn import TXN_BROKER_OVERRIDES, create_topic, end_offsets, read_to_end, txn_producer, unique
from tests.lakehouse.test_iceberg_topics import duckdb_rows, kill_9_rounds, log_record, rows_of, table, wait_caught_up

COMPACTED = {"cleanup.policy": "compact", "segment.bytes": "20000", "segment.ms": "200",
             "min.cleanable.dirty.ratio": "0.01", "iceberg.mode": "key_value", "iceberg.upsert": "true"}


@pytest.fixture
def lake(tmp_path):
    """A broker serving its Iceberg REST catalog, lag target 100 ms, its cleaner waking every 100 ms."""
    url = f"http://127.0.0.1:{free_port()}"
    proc = BrokerProcess(tmp_path / "data", {**TXN_BROKER_OVERRIDES, "iceberg.catalog.listeners": url,
                                             "iceberg.target.lag.ms": 100, "log.cleaner.backoff.ms": 100})
    proc.start()
    proc.catalog_url = url
    yield proc
    proc.stop()


def compacted_view(bootstrap: str, topic: str, partitions: int) -> tuple[list[tuple], list[tuple]]:
    """(the read_committed log, its latest record per (partition, key) with tombstones dropped)."""
    res = read_to_end(bootstrap, topic, range(partitions), "read_committed", timeout=60, record=log_record)
    log = sorted(r for recs in res.records.values() for r in recs)
    latest = {}
    for r in log:  # (partition, offset, ts, ts type, key, value, headers) in offset order
        latest[(r[0], r[4])] = r
    return log, sorted(r for r in latest.values() if r[5] is not None)


def offsets_left(bootstrap: str, topic: str, partition: int) -> list[int]:
    res = read_to_end(bootstrap, topic, [partition], "read_uncommitted", timeout=60,
                      record=lambda m: m.offset())
    return res.records[partition]


def produce_updates(p, rng: random.Random, topic: str, partitions: int, keys: list[bytes], n: int) -> None:
    for _ in range(n):
        p.produce(topic, partition=rng.randrange(partitions), key=rng.choice(keys),
                  value=None if rng.random() < 0.25 else rng.randbytes(rng.randint(0, 40)),
                  headers=[("h", rng.randbytes(2))] if rng.random() < 0.3 else None)


def end_with_a_value_in_every_partition(p, topic: str, partitions: int) -> None:
    """A last non-tombstone record per partition, so every partition's last offset is in a
    commit (a round of tombstones of keys the table does not hold commits nothing)."""
    for part in range(partitions):
        p.produce(topic, partition=part, key=b"end", value=b"end")
    p.flush(30)


def produce_round(plain, txn, rng: random.Random, topic: str, partitions: int, keys: list[bytes]) -> None:
    """Updates and tombstones: some plain, some in a transaction committed or aborted at random
    (an aborted update must neither replace nor delete a key's row)."""
    produce_updates(plain, rng, topic, partitions, keys, rng.randint(5, 30))
    txn.begin_transaction()
    produce_updates(txn, rng, topic, partitions, keys, rng.randint(1, 10))
    (txn.commit_transaction if rng.random() < 0.5 else txn.abort_transaction)(30)
    plain.flush(30)


def wait_cleaned(bootstrap: str, plain, topic: str, partitions: int) -> None:
    """Until the cleaner has removed offset 0 of partition 0 (superseded by the test). The active
    segment is never cleaned: the records appended meanwhile roll it once segment.ms passed."""
    def cleaned():
        end_with_a_value_in_every_partition(plain, topic, partitions)
        return offsets_left(bootstrap, topic, 0)[0] > 0
    wait_until(cleaned, timeout=60, interval=0.2, what="the cleaner removing offset 0")


def test_upsert_table_equals_latest_value_per_key_after_the_cleaner_ran(lake):
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    b, url, topic = lake.bootstrap, lake.catalog_url, "prices"
    create_topic(b, topic, 3, COMPACTED)
    keys = [b"p%d" % i for i in range(12)] + [b""]
    plain = Producer({"bootstrap.servers": b, "linger.ms": 5})
    txn = txn_producer(b, unique("upsert-txn"))
    plain.produce(topic, partition=0, key=b"first", value=b"old")  # offset 0, superseded below
    for step in range(10):
        produce_round(plain, txn, rng, topic, 3, keys)
        if step == 4:
            plain.produce(topic, partition=0, key=b"first", value=b"new")
    # the same key in two partitions is two keys, as the log compacts them
    plain.produce(topic, partition=1, key=b"first", value=b"in partition 1")
    plain.produce(topic, partition=2, key=b"gone", value=b"x")
    plain.produce(topic, partition=2, key=b"gone", value=None)
    wait_cleaned(b, plain, topic, 3)
    log, expected = compacted_view(b, topic, 3)
    wait_caught_up(url, topic, log)
    got = rows_of(table(url, topic))
    assert got == expected, f"seed {seed}"
    assert len({(r[0], r[4]) for r in got}) == len(got)
    assert (0, b"first") in {(r[0], r[4]) for r in got} and (1, b"first") in {(r[0], r[4]) for r in got}
    assert [r[5] for r in got if r[:1] == (0,) and r[4] == b"first"] == [b"new"]
    assert b"gone" not in {r[4] for r in got if r[0] == 2}
    assert duckdb_rows(table(url, topic)) == expected, f"seed {seed}: DuckDB over Arrow"
    # every snapshot, overwrite or append, carries every partition's last offset
    snaps = table(url, topic).snapshots()
    ops = {s.summary.operation.value for s in snaps}
    assert "overwrite" in ops, ops
    for s in snaps[1:]:
        assert {f"hourglass.partition.{p}.last-offset" for p in range(3)} <= set(s.summary.additional_properties)
    assert table(url, topic).format_version == 2
    assert table(url, topic).properties["write.delete.mode"] == "copy-on-write"


def test_kill_9_during_upsert_translation_loses_and_doubles_nothing(lake):
    """Rounds of: produce updates and tombstones continuously, kill -9 the broker, half of the
    times inside a commit, restart (``kill_9_rounds``). Then the table equals the latest value
    per key of the log: no update lost (a stale value), none doubled (two rows of a key)."""
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    b, url, topic = lake.bootstrap, lake.catalog_url, "crashy-upserts"
    create_topic(b, topic, 2, {**COMPACTED, "iceberg.target.lag.ms": "20"})
    keys = [b"k%d" % i for i in range(30)]
    # 4 rounds (2 inside a commit): test_iceberg_topics kills the commit protocol 8 times; here
    # it is the overwrite commit's turn
    mid_commit_kills, orphans = kill_9_rounds(lake, topic, rng, lambda p, r: produce_updates(p, r, topic, 2, keys, 20),
                                              _added_files, rounds=4)
    end_with_a_value_in_every_partition(Producer({"bootstrap.servers": lake.bootstrap}), topic, 2)
    log, expected = compacted_view(lake.bootstrap, topic, 2)
    wait_caught_up(url, topic, log)
    got = rows_of(table(url, topic))
    assert len({(r[0], r[4]) for r in got}) == len(got), f"seed {seed}: a key doubled"
    assert got == expected, f"seed {seed}"
    # many more records went through than keys are left: updates and deletes were translated
    assert sum(end_offsets(lake.bootstrap, topic, [0, 1], "read_committed").values()) > 1000
    assert mid_commit_kills == 2 and orphans > 0


def _added_files(t) -> int:
    """Data files the table's snapshots added, all told (copy-on-write replaces files, and the
    replaced ones stay on disk for the older snapshots)."""
    return sum(int(s.summary.additional_properties.get("added-data-files", 0)) for s in t.snapshots())


def test_turning_upsert_on_deduplicates_the_table_and_off_appends_again(lake):
    """``iceberg.upsert`` is dynamic like every topic config: a key_value table appended to
    (every update and tombstone a row) becomes the compacted view at the next commit after the
    switch is turned on; turned off, records are appended again."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
    b, url, topic = lake.bootstrap, lake.catalog_url, "switched"
    # not compacted, so the log keeps every record the appending table holds
    create_topic(b, topic, 2, {"iceberg.mode": "key_value"})
    plain = Producer({"bootstrap.servers": b, "linger.ms": 5})
    produce_updates(plain, random.Random(5), topic, 2, [b"a", b"b", b"c"], 40)
    end_with_a_value_in_every_partition(plain, topic, 2)
    log, _ = compacted_view(b, topic, 2)
    wait_caught_up(url, topic, log)
    assert rows_of(table(url, topic)) == log  # appended: one row per record

    def switch(value: str) -> None:
        admin = AdminClient({"bootstrap.servers": b})
        res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
            ConfigEntry("iceberg.upsert", value, incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([res])[res].result(20)
    switch("true")
    end_with_a_value_in_every_partition(plain, topic, 2)
    log, expected = compacted_view(b, topic, 2)
    wait_caught_up(url, topic, log)
    assert rows_of(table(url, topic)) == expected
    last = {p: max(r[1] for r in log if r[0] == p) for p in (0, 1)}
    switch("false")
    plain.produce(topic, partition=0, key=b"a", value=b"appended")
    end_with_a_value_in_every_partition(plain, topic, 2)
    log, _ = compacted_view(b, topic, 2)
    wait_caught_up(url, topic, log)
    new = [r for r in log if r[1] > last[r[0]]]
    assert len(new) == 3 and rows_of(table(url, topic)) == sorted(expected + new)


def test_upsert_with_a_registry_mode_is_refused_with_the_reason(lake):
    """``iceberg.upsert`` is built for the key_value layout only: with a registry mode it is
    refused (INVALID_CONFIG naming both keys), at creation and by a later alter, never ignored."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic
    from confluent_kafka import KafkaException
    admin = AdminClient({"bootstrap.servers": lake.bootstrap})
    (fut,) = admin.create_topics([NewTopic("typed-upserts", 1, config={
        "iceberg.mode": "value_schema_id_prefix", "iceberg.upsert": "true"})]).values()
    with pytest.raises(KafkaException) as exc:
        fut.result(10)
    err = exc.value.args[0]
    assert err.name() == "INVALID_CONFIG" and "iceberg.upsert" in err.str() and "value_schema_id_prefix" in err.str()
    create_topic(lake.bootstrap, "kv-upserts", 1, {**COMPACTED})
    res = ConfigResource("topic", "kv-upserts", incremental_configs=[
        ConfigEntry("iceberg.mode", "value_schema_latest", incremental_operation=AlterConfigOpType.SET)])
    (fut,) = admin.incremental_alter_configs([res]).values()
    with pytest.raises(KafkaException) as exc:
        fut.result(10)
    assert exc.value.args[0].name() == "INVALID_CONFIG" and "iceberg.upsert" in exc.value.args[0].str()
