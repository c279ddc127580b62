"""Debezium's PostgreSQL connector in a Connect worker, Hourglass as the broker.

A throwaway PostgreSQL cluster (Debian's, ``wal_level=logical``) serves the module; each test
has its own database table, replication slot and publication, its own Hourglass and worker.
The connector decodes with ``pgoutput`` (PostgreSQL's own logical decoding plugin) and Connect
creates its topics compacted (``topic.creation.default.cleanup.policy=compact``): a delete is a
change event followed by a tombstone, as Debezium users rely on for compaction.
"""
from __future__ import annotations

import json
import time

import pytest

from tests.helpers.clients import topic_configs
from tests.helpers.connect import read_topic, wait_for_records
from tests.helpers.postgres import PostgresCluster

pytestmark = [pytest.mark.timeout(600), pytest.mark.xdist_group("debezium")]


@pytest.fixture(scope="module")
def postgres():
    pg = PostgresCluster().start()
    yield pg
    pg.stop()


def debezium(pg: PostgresCluster, name: str, table: str, **extra) -> dict:
    return pg.connector_config(**{
        "topic.prefix": name, "table.include.list": f"public.{table}",
        "slot.name": f"{name}_slot", "publication.name": f"{name}_pub", "publication.autocreate.mode": "filtered",
        "snapshot.mode": "initial",
        # Connect creates the change topics: compacted, three partitions, one replica
        "topic.creation.default.replication.factor": 1, "topic.creation.default.partitions": 3,
        "topic.creation.default.cleanup.policy": "compact",
        **extra})


def events(bootstrap: str, topic: str) -> list[tuple[int, dict | None, int]]:
    """(key id, value or None for a tombstone, partition) in partition and offset order."""
    out = []
    for m in read_topic(bootstrap, topic):
        key = json.loads(m.key())["id"]
        out.append((key, json.loads(m.value()) if m.value() is not None else None, m.partition()))
    return out


def per_key(evs) -> dict[int, list[tuple]]:
    """Each key's history as (op, name after or before) in the order the topic holds it."""
    hist: dict[int, list[tuple]] = {}
    for key, v, _ in evs:
        if v is None:
            hist.setdefault(key, []).append(("tombstone",))
        else:
            row = v["after"] if v["op"] != "d" else v["before"]
            hist.setdefault(key, []).append((v["op"], row["name"]))
    return hist


def create_table(pg: PostgresCluster, table: str) -> None:
    with pg.connect() as c:
        c.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, name text NOT NULL, email text)")
        c.execute(f"ALTER TABLE {table} REPLICA IDENTITY FULL")  # deletes and updates carry the old row


def test_snapshot_then_streaming_in_order_with_tombstones(postgres, broker_factory, connect_factory):
    """Rows present before the connector arrive as snapshot reads (op r), then inserts, updates
    and deletes as change events (c, u, d) in commit order per key, each delete followed by a
    tombstone, on a topic Connect created compacted on Hourglass."""
    pg = postgres
    table = "customers_a"
    create_table(pg, table)
    with pg.connect() as c:
        for i in range(40):
            c.execute(f"INSERT INTO {table} VALUES (%s, %s, %s)", (i, f"n{i}-v0", f"{i}@shop"))

    hg = broker_factory()
    w = connect_factory(hg.bootstrap)
    w.put_connector("cdc-a", debezium(pg, "cdca", table))
    w.wait_running("cdc-a")
    topic = f"cdca.public.{table}"
    wait_for_records(hg.bootstrap, topic, 40)

    want: dict[int, list[tuple]] = {i: [("r", f"n{i}-v0")] for i in range(40)}
    with pg.connect() as c:
        for i in range(40, 60):  # inserts
            c.execute(f"INSERT INTO {table} VALUES (%s, %s, %s)", (i, f"n{i}-v0", None))
            want[i] = [("c", f"n{i}-v0")]
        for rnd in range(1, 4):  # updates, three per key, some in one transaction
            with c.transaction():
                for i in range(0, 60, 3):
                    c.execute(f"UPDATE {table} SET name = %s WHERE id = %s", (f"n{i}-v{rnd}", i))
                    want[i].append(("u", f"n{i}-v{rnd}"))
        for i in range(0, 60, 5):  # deletes
            last = want[i][-1][1]
            c.execute(f"DELETE FROM {table} WHERE id = %s", (i,))
            want[i] += [("d", last), ("tombstone",)]
    total = sum(len(v) for v in want.values())
    wait_for_records(hg.bootstrap, topic, total)
    time.sleep(2)
    evs = events(hg.bootstrap, topic)
    assert per_key(evs) == want
    # a key's events all on one partition (its order is the partition's order)
    parts = {}
    for key, _, p in evs:
        assert parts.setdefault(key, p) == p, key
    # snapshot events say so in their source block; streamed ones carry their LSN
    snap = [v for _, v, _ in evs if v and v["op"] == "r"]
    assert snap and all(v["source"]["snapshot"] in ("true", "first", "last", "first_in_data_collection",
                                                    "last_in_data_collection") for v in snap)
    assert all(v["source"]["lsn"] for _, v, _ in evs if v and v["op"] != "r")
    assert topic_configs(hg.bootstrap, topic)["cleanup.policy"] == "compact"


def test_worker_restart_resumes_without_missing_or_repeating(postgres, broker_factory, connect_factory):
    """Changes made while the worker is down are read from the replication slot after restart,
    starting after the last LSN Connect stored on Hourglass: none missing, none twice."""
    pg = postgres
    table = "customers_b"
    create_table(pg, table)
    hg = broker_factory()
    w = connect_factory(hg.bootstrap)
    w.put_connector("cdc-b", debezium(pg, "cdcb", table, **{"snapshot.mode": "no_data"}))
    w.wait_running("cdc-b")
    topic = f"cdcb.public.{table}"

    def insert(a: int, b: int) -> None:
        with pg.connect() as c:
            for i in range(a, b):
                c.execute(f"INSERT INTO {table} VALUES (%s, %s, %s)", (i, f"n{i}", None))

    # the slot exists once the connector streams: rows from here on are captured
    deadline = time.monotonic() + 60
    while not pg.psql_admin(f"SELECT 1 FROM pg_replication_slots WHERE slot_name = 'cdcb_slot' AND active"):
        assert time.monotonic() < deadline, "replication slot not active"
        time.sleep(0.5)
    insert(0, 100)
    wait_for_records(hg.bootstrap, topic, 100)
    time.sleep(3)  # an offset flush (1 s) stores the last LSN
    w.stop()
    insert(100, 250)  # while the worker is down
    w.start()
    w.wait_running("cdc-b")
    insert(250, 300)
    wait_for_records(hg.bootstrap, topic, 300)
    time.sleep(3)
    evs = events(hg.bootstrap, topic)
    ids = [k for k, v, _ in evs]
    assert sorted(ids) == list(range(300)), f"{len(ids)} events, {len(set(ids))} distinct"
    assert all(v["op"] == "c" for _, v, _ in evs)
