"""The pure decisions of a table's own retention (lakehouse.expiry), against brute-force models:
which snapshots expire (Iceberg's history.expire.* rule), the data cut-off, what a delete
snapshot carries so translation resumes exactly once, and which files a sweep deletes (never one
a kept snapshot references; every one only expired snapshots referenced, and crash leftovers)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from lakehouse.expiry import (Retention, SnapshotInfo, carried_properties, data_cutoff_ms, least_timestamp,
                              may_hold_rows_before, snapshots_to_expire, sweepable, unreferenced_files)
from lakehouse.translate import resume_offsets, summary_for, table_of_other_topic


@st.composite
def histories(draw):
    """Snapshots as a tree (branches left by nothing we write, but Iceberg allows them) with
    commit times, and a current snapshot (None for an empty table)."""
    n = draw(st.integers(0, 12))
    snaps = []
    for i in range(n):
        parent = draw(st.one_of(st.none(), st.integers(0, i - 1))) if i else None
        snaps.append(SnapshotInfo(100 + i, None if parent is None else 100 + parent, draw(st.integers(0, 1000))))
    current = draw(st.one_of(st.none(), st.sampled_from([s.snapshot_id for s in snaps]))) if snaps else None
    return snaps, current


def model_expired(snaps, current, now, max_age, min_keep) -> set[int]:
    """Brute force: a snapshot is kept iff it is within ``min_keep`` steps of the current one
    along parents (the current one at step 0), or committed at or after now - max_age."""
    by_id = {s.snapshot_id: s for s in snaps}

    def within(sid, steps):
        at = current
        for _ in range(steps):
            if at is None or at not in by_id:
                return False
            if at == sid:
                return True
            at = by_id[at].parent_id
        return False
    return {s.snapshot_id for s in snaps
            if not within(s.snapshot_id, max(min_keep, 1)) and not s.timestamp_ms >= now - max_age}


@settings(max_examples=400)
@given(histories(), st.integers(0, 1500), st.integers(0, 1200), st.integers(1, 5))
def test_snapshots_to_expire_matches_model(history, now, max_age, min_keep):
    snaps, current = history
    got = snapshots_to_expire(snaps, current, now, max_age, min_keep)
    assert got == model_expired(snaps, current, now, max_age, min_keep)
    # the current snapshot (what resume reads) is never expired
    assert current not in got


def test_iceberg_defaults_keep_five_days_and_at_least_the_current():
    day = 86_400_000
    snaps = [SnapshotInfo(1, None, 0), SnapshotInfo(2, 1, day), SnapshotInfo(3, 2, 2 * day)]
    assert snapshots_to_expire(snaps, 3, 6 * day, 5 * day, 1) == {1}
    assert snapshots_to_expire(snaps, 3, 100 * day, 5 * day, 1) == {1, 2}
    assert snapshots_to_expire(snaps, 3, 100 * day, 5 * day, 2) == {1}
    assert snapshots_to_expire(snaps, 3, 100 * day, 0, 5) == set()


@given(st.integers(0, 2**50), st.integers(-1, 2**40))
def test_data_cutoff(now, retention):
    got = data_cutoff_ms(now, retention)
    assert got == (None if retention == -1 else now - retention)


@given(st.dictionaries(st.integers(0, 50), st.integers(0, 10**12)), st.text(max_size=8),
       st.dictionaries(st.sampled_from(["total-records", "added-data-files", "operation", "hourglass.x"]),
                       st.text(max_size=5)))
def test_a_delete_snapshot_carries_what_resume_reads(offsets, topic_id, others):
    summary = {**others, **summary_for({}, offsets, topic_id)}
    carried = carried_properties(summary)
    assert resume_offsets(carried) == resume_offsets(summary)
    for other in ("", "x", topic_id + "y"):
        assert table_of_other_topic(carried, other) == table_of_other_topic(summary, other)
    assert all(k.startswith("hourglass.") for k in carried)


ROOT = "/w/redpanda/t"
file_names = st.sampled_from([f"{ROOT}/data/{i}.parquet" for i in range(8)]
                             + [f"{ROOT}/metadata/m{i}.avro" for i in range(6)]
                             + [f"{ROOT}/metadata/{i:05d}-x.metadata.json" for i in range(4)])


@settings(max_examples=300)
@given(histories(), st.integers(0, 1500), st.integers(0, 1200), st.integers(1, 3),
       st.data(), st.sets(file_names, max_size=6),
       st.sets(st.sampled_from([f"{ROOT}/notes.txt", f"{ROOT}/data/x.crc", "/w/catalog.db",
                                f"/w/redpanda/other/data/0.parquet"]), max_size=4))
def test_sweep_deletes_exactly_what_no_kept_snapshot_references(history, now, max_age, min_keep, data,
                                                                metadata_files, foreign):
    """Each snapshot references some files; the sweep after expiry deletes every file only expired
    snapshots referenced and every leftover of a crash, and none a kept snapshot or the table's
    metadata references, nor anything not ours."""
    snaps, current = history
    refs = {s.snapshot_id: data.draw(st.sets(file_names, max_size=5)) for s in snaps}
    orphans = data.draw(st.sets(file_names, max_size=4))
    expired = snapshots_to_expire(snaps, current, now, max_age, min_keep)
    kept_refs = set(metadata_files).union(*(f for i, f in refs.items() if i not in expired))
    on_disk = set(orphans) | set(metadata_files) | set(foreign) | set().union(*refs.values())
    got = set(unreferenced_files(on_disk, kept_refs, ROOT))
    only_expired = set().union(*(f for i, f in refs.items() if i in expired)) - kept_refs
    assert only_expired <= got and set(orphans) - kept_refs <= got
    assert not got & kept_refs and not got & set(foreign)
    # brute force, file by file
    for f in on_disk:
        assert (f in got) == (f.startswith(ROOT + "/") and f not in foreign and f not in kept_refs)


def test_sweepable_kinds():
    assert sweepable("data/a/b=1/x.parquet") and sweepable("metadata/snap-1.avro")
    assert sweepable("metadata/00001-a.metadata.json")
    assert not sweepable("data/x.crc") and not sweepable("x.parquet") and not sweepable("metadata/v.txt")
    assert unreferenced_files(["bucket/t/data/1.parquet", "bucket/t/data/2.parquet", "bucket/t2/data/3.parquet"],
                              {"bucket/t/data/1.parquet"}, "bucket/t") == ["bucket/t/data/2.parquet"]


def test_retention_configs_resolve_topic_over_broker_default_over_iceberg_default():
    from storage.log_config import InvalidConfigError, LogConfig, describe
    assert Retention.of(LogConfig.default()) == Retention(5 * 86_400_000, 1, -1)
    broker = {"iceberg.retention.ms": "86400000", "iceberg.history.expire.min-snapshots-to-keep": "3"}
    cfg = LogConfig.from_props(broker, {"iceberg.history.expire.max-snapshot-age-ms": "1000"})
    assert Retention.of(cfg) == Retention(1000, 3, 86_400_000)
    d = {c.name: c for c in describe(broker, {"iceberg.retention.ms": "5"})}
    assert (d["iceberg.retention.ms"].value, d["iceberg.retention.ms"].source) == ("5", "TOPIC_CONFIG")
    assert [(s.name, s.value) for s in d["iceberg.retention.ms"].synonyms][1:] == [
        ("iceberg.retention.ms", "86400000"), ("iceberg.retention.ms", "-1")]
    for key, bad in (("iceberg.retention.ms", "-2"), ("iceberg.history.expire.min-snapshots-to-keep", "0"),
                     ("iceberg.history.expire.max-snapshot-age-ms", "-1"), ("iceberg.retention.ms", "soon")):
        with pytest.raises(InvalidConfigError):
            LogConfig.from_props({}, {key: bad})


row_group = st.integers(1, 50).flatmap(lambda rows: st.tuples(
    st.just(rows), st.one_of(st.none(), st.integers(-5, 100)), st.integers(0, rows)))


@given(st.lists(st.lists(row_group, max_size=4), max_size=5), st.integers(-5, 110))
def test_a_delete_is_skipped_only_when_no_file_can_hold_an_older_row(files, cutoff):
    """Brute force: a row group with timestamps (nulls < rows) and a footer minimum may hold an
    older row iff min < cutoff; one with timestamps and no minimum may (unknown); one of nulls only
    may not. The delete runs iff some row group of some file may."""
    least = [least_timestamp(f) for f in files]
    may = any((lo is None and nulls < rows) or (lo is not None and lo < cutoff)
              for f in files for rows, lo, nulls in f)
    assert may_hold_rows_before(least, cutoff) == may
