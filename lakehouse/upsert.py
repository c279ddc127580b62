"""Upsert tables for compacted topics (topic config ``iceberg.upsert``, issue 41).

The table holds, for each key, the row of the latest record of that key, and no row for a key
whose latest record is a tombstone (a null value): the compacted view of the log. Keys are
``(partition, record key)``: Kafka compacts each partition on its own, so one key written to two
partitions has a latest value in each (with the default partitioner a key has one partition).
A record without a key has no row: the log cleaner drops keyless records too.

pyiceberg 0.12 writes no Iceberg v2 delete files (no position deletes, no equality deletes:
``Transaction.delete`` rewrites data files and warns that merge-on-read is "not yet supported,
falling back to copy-on-write"). So a commit is copy-on-write on a format-v2 table: the data
files holding a row of a key the commit touches are rewritten without those rows, the new
latest rows are added, all in ONE overwrite snapshot whose summary carries every partition's
last offset (``translate.summary_for``), so the snapshot history never shows a half-applied
commit and translation resumes from it as for ``key_value``.

Pure part: ``latest_per_key`` (property-tested against applying records one by one).
Table part: ``commit`` (pyiceberg, in the translation worker thread).
"""
from __future__ import annotations

import functools
import itertools
import logging
from typing import Hashable, Iterable, TypeVar

log = logging.getLogger(__name__)

#: table property: "true" once the table holds one row per key (written with the first upsert
#: commit; a table appended to before is deduplicated whole by that commit)
UPSERT_PROPERTY = "hourglass.upsert"
#: what other writers should do; declared because it is what we do (pyiceberg writes no delete files)
COPY_ON_WRITE = {"write.delete.mode": "copy-on-write", "write.update.mode": "copy-on-write",
                 "write.merge.mode": "copy-on-write"}

T = TypeVar("T")
Key = Hashable


def latest_per_key(items: Iterable[tuple[Key | None, T | None]]) -> tuple[set, list[T]]:
    """``items`` are ``(key, row)`` in log order, ``row`` None for a tombstone and ``key`` None
    for a keyless record. Returns (every key seen, the rows of the keys whose last item is not
    a tombstone, in order of that last item). Applying it to a table = delete every row of a
    key seen, then insert the rows: the same table as applying the items one by one."""
    latest: dict = {}
    for key, row in items:
        if key is None:
            continue
        latest.pop(key, None)  # re-inserted: the dict's order is that of each key's last item
        latest[key] = row
    return set(latest), [r for r in latest.values() if r is not None]


def record_item(partition: int, record, row: dict) -> tuple:
    """A translated record as an item of ``latest_per_key``."""
    return (None if record.key is None else (partition, record.key)), (None if record.value is None else row)


# ---- the table side (worker thread) -----------------------------------------------------------

def _touched_filter(keys: set):
    """The rows of ``keys`` ((partition, key)) as an Iceberg filter, for pruning data files by
    their column metrics."""
    from pyiceberg.expressions import And, EqualTo, In, Or
    by_partition: dict[int, set] = {}
    for p, k in keys:
        by_partition.setdefault(p, set()).add(k)
    terms = [And(EqualTo("redpanda.partition", p), In("redpanda.key", ks)) for p, ks in sorted(by_partition.items())]
    return functools.reduce(Or, terms)


def _read_keys(df) -> list[tuple]:
    """(partition, offset, key, is tombstone) of each row of a scanned data file."""
    meta = df.column("redpanda").combine_chunks()
    parts = meta.field("partition").to_pylist()
    offsets = meta.field("offset").to_pylist()
    keys = meta.field("key").to_pylist()
    nulls = df.column("value").is_null().to_pylist() if "value" in df.column_names else [False] * len(parts)
    return list(zip(parts, offsets, keys, nulls))


def commit(table, new_items: list[tuple], summary: dict[str, str]) -> int | None:
    """Apply ``new_items`` (``record_item``s in log order) to the upsert ``table`` as one
    snapshot carrying ``summary``. Returns the rows added, or None when the table is unchanged
    (nothing committed: the items only deleted keys the table does not hold).

    A table not yet marked ``UPSERT_PROPERTY`` (new, or appended to while ``iceberg.upsert`` was
    off) takes part whole: its rows, in offset order, precede the new items in the same
    ``latest_per_key`` plan, so the commit also leaves one row per key."""
    import pyarrow as pa
    from pyiceberg.io.pyarrow import ArrowScan, _dataframe_to_data_files
    from pyiceberg.expressions import AlwaysTrue

    whole = table.properties.get(UPSERT_PROPERTY) != "true"
    touched = {k for k, _ in new_items if k is not None}
    if not touched and not whole:
        return None
    txn = table.transaction()
    if whole:
        txn.set_properties({UPSERT_PROPERTY: "true", **COPY_ON_WRITE})
    meta = txn.table_metadata
    schema = meta.schema()
    if whole:
        tasks = list(table.scan().plan_files())
    elif touched:
        tasks = list(table.scan(row_filter=_touched_filter(touched)).plan_files())
    else:
        tasks = []
    frames, existing = [], []
    for i, task in enumerate(tasks):
        df = ArrowScan(meta, table.io, schema, AlwaysTrue()).to_table(tasks=[task])
        frames.append(df)
        for j, (p, o, k, tomb) in enumerate(_read_keys(df)):
            existing.append(((p, o), None if k is None else (p, k), None if tomb else (i, j)))
    existing.sort(key=lambda e: e[0])  # offset order within a partition: the log's
    new = [(k, None if row is None else ("new", row)) for k, row in new_items]
    _, kept = latest_per_key([(k, tok) for _, k, tok in existing] + new)
    kept_old: dict[int, set[int]] = {}
    new_rows = []
    for tok in kept:
        if tok[0] == "new":
            new_rows.append(tok[1])
        else:
            kept_old.setdefault(tok[0], set()).add(tok[1])
    rewrites = [i for i, df in enumerate(frames) if len(kept_old.get(i, ())) < len(df)]
    if not rewrites and not new_rows:
        return None
    counter = itertools.count()
    with txn.update_snapshot(snapshot_properties=summary).overwrite() as snap:
        for i in rewrites:
            snap.delete_data_file(tasks[i].file)
            keep = kept_old.get(i, set())
            if keep:
                mask = pa.array([j in keep for j in range(len(frames[i]))])
                for f in _dataframe_to_data_files(meta, frames[i].filter(mask), table.io, snap.commit_uuid, counter):
                    snap.append_data_file(f)
        if new_rows:
            df = pa.Table.from_pylist(new_rows, schema=schema.as_arrow())
            for f in _dataframe_to_data_files(meta, df, table.io, snap.commit_uuid, counter):
                snap.append_data_file(f)
    txn.commit_transaction()
    if whole and tasks:
        log.info("Iceberg table %s: now an upsert table (one row per key); %d data files rewritten",
                 table.name(), len(rewrites))
    return len(new_rows)


def leave(table):
    """``iceberg.upsert`` turned off: the table is appended to again (and deduplicated whole if
    it is turned on once more). Returns the table as reloaded."""
    if table.properties.get(UPSERT_PROPERTY) != "true":
        return table
    txn = table.transaction()
    txn.set_properties({UPSERT_PROPERTY: "false"})
    return txn.commit_transaction()
