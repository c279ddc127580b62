"""Upsert tables (lakehouse.upsert), against the brute-force model of a compacted topic: apply
the records one by one to a map, a record replacing its key's row and a tombstone (null value)
deleting it, keyless records ignored.

- ``latest_per_key`` (pure): for any prior table and any records, "delete every key seen, insert
  the rows" equals the model;
- the table side, with real pyiceberg over a local warehouse (the same ``TopicTables`` the
  broker's worker thread drives) and real record batches: after every commit of a random
  sequence the table's rows are the model's, each snapshot carries every partition's last
  offset, and a table appended to before ``iceberg.upsert`` was turned on is deduplicated whole.
"""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings, strategies as st

from lakehouse.tables import TopicTables
from lakehouse.translate import Slice, last_offsets
from lakehouse.upsert import UPSERT_PROPERTY, latest_per_key
from protocol.records.record import Record, build_batch

KEYS = st.one_of(st.none(), st.tuples(st.integers(0, 2), st.sampled_from([b"", b"a", b"b", b"c", b"d"])))
ITEMS = st.lists(st.tuples(KEYS, st.one_of(st.none(), st.integers(0, 9))), max_size=30)


def model(prior: dict, items) -> dict:
    table = dict(prior)
    for key, value in items:
        if key is None:
            continue
        if value is None:
            table.pop(key, None)
        else:
            table[key] = value
    return table


@given(st.dictionaries(KEYS.filter(lambda k: k is not None), st.integers(0, 9)), ITEMS)
def test_latest_per_key_applied_equals_records_applied_one_by_one(prior, items):
    touched, rows = latest_per_key([(k, None if v is None else (k, v)) for k, v in items])
    assert touched == {k for k, _ in items if k is not None}
    assert len({k for k, _ in rows}) == len(rows)  # one row per key
    table = {k: v for k, v in prior.items() if k not in touched}
    table.update(rows)
    assert table == model(prior, items)


def test_latest_per_key_keeps_the_last_of_a_key_in_a_commit():
    items = [((0, b"k"), "v1"), (None, "keyless"), ((0, b"k"), None), ((1, b"k"), "other"), ((0, b"k"), "v3")]
    assert latest_per_key(items) == ({(0, b"k"), (1, b"k")}, ["other", "v3"])


# ---- the table side ---------------------------------------------------------------------------

def _slice(partition: int, start: int, records) -> Slice:
    data = build_batch([Record(start + i, 1_700_000_000_000 + start + i, k, v, []) for i, (k, v) in enumerate(records)],
                       base_offset=start)
    return Slice(partition, start, start + len(records), data, ())


def _rows(tables: TopicTables, topic: str) -> dict:
    out = {}
    for r in tables.table(topic).scan().to_arrow().to_pylist():
        key = (r["redpanda"]["partition"], r["redpanda"]["key"])
        assert key not in out, f"two rows of {key}"
        out[key] = (r["redpanda"]["offset"], r["value"])
    return out


# keys past the 16 bytes Parquet/Iceberg column bounds are truncated to: files are pruned by
# those bounds, and a wrongly pruned file would keep a stale row
LONG = b"a-key-longer-than-the-sixteen-bytes-of-a-bound-"
RECORD = st.tuples(st.one_of(st.none(), st.sampled_from([b"", b"a", b"b", b"c", LONG + b"1", LONG + b"2", LONG])),
                   st.one_of(st.none(), st.sampled_from([b"x", b"y", b"z"])))
# a commit: per partition (0 or 1) a run of records
COMMIT = st.dictionaries(st.integers(0, 1), st.lists(RECORD, min_size=1, max_size=6), min_size=1)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.booleans(), COMMIT), min_size=1, max_size=5))
def test_table_after_each_commit_is_the_compacted_view(tmp_path_factory, commits):
    """Commits with ``upsert`` on or off at random: an append adds every record; an upsert
    commit leaves the compacted view of everything translated so far (the whole log model)."""
    tables = TopicTables(tmp_path_factory.mktemp("wh"))
    log: list[tuple] = []  # ((partition, key) or None, (offset, value) or None) of everything translated
    nxt = {0: 0, 1: 0}
    previous: dict[int, int] = {}
    for upsert, parts in commits:
        slices = []
        for p, records in sorted(parts.items()):
            slices.append(_slice(p, nxt[p], records))
            for i, (k, v) in enumerate(records):
                log.append((None if k is None else (p, k), None if v is None else (nxt[p] + i, v)))
            nxt[p] += len(records)
        before = previous
        previous, _, _, head = tables.commit("t", slices, previous, upsert=upsert)
        if head is not None:  # the snapshot carries every partition's last offset forward
            summary = dict(tables.table("t").current_snapshot().summary.additional_properties)
            assert last_offsets(summary) == previous == {**before, **{p: nxt[p] - 1 for p in parts}}
        else:
            assert previous == before
        if upsert:
            assert _rows(tables, "t") == model({}, log)


def test_switching_upsert_on_deduplicates_what_was_appended(tmp_path):
    tables = TopicTables(tmp_path)
    prev, _, _, _ = tables.commit("t", [_slice(0, 0, [(b"a", b"1"), (b"a", b"2"), (b"b", b"1"), (None, b"n"),
                                                      (b"b", None)])], {})
    assert len(tables.table("t").scan().to_arrow()) == 5
    prev, _, added, head = tables.commit("t", [_slice(0, 5, [(b"c", b"1")])], prev, upsert=True)
    assert _rows(tables, "t") == {(0, b"a"): (1, b"2"), (0, b"c"): (5, b"1")} and added == 1
    # and off again: appended as before
    prev, _, _, _ = tables.commit("t", [_slice(0, 6, [(b"c", b"2")])], prev)
    assert len(tables.table("t").scan().to_arrow()) == 3
    assert tables.table("t").properties[UPSERT_PROPERTY] == "false"
