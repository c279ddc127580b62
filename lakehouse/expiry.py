"""The table's own retention: snapshot expiry and data expiry of a topic's Iceberg table.

The table keeps rows after the log's retention deleted their segments, until these remove them
(topic configs, each with a broker default of the same name):

- ``iceberg.history.expire.max-snapshot-age-ms`` / ``iceberg.history.expire.min-snapshots-to-keep``
  (Iceberg's table properties ``history.expire.*``: 5 days / 1): snapshots older than the age are
  expired, except the current one and its latest ancestors up to the count; time travel to an
  expired snapshot fails as Iceberg says (``Snapshot not found``), and the files no kept snapshot
  references are deleted.
- ``iceberg.retention.ms`` (-1: forever): rows whose record timestamp is older than ``now - ms``
  are deleted by pyiceberg's ``delete(filter)``: files wholly older (whole time partitions, or
  files whose bounds say so) are dropped, others rewritten without those rows (copy-on-write;
  pyiceberg 0.12 writes no positional delete files). Rows without a timestamp are kept.

Invariants:
- Exactly once is kept: a delete snapshot carries the current snapshot's ``hourglass.*``
  summary properties (every partition's last offset, the topic id), so translation resumes
  where it would have (``carried_properties``); the current snapshot is never expired.
- Runs in the translation worker thread (``lakehouse.service``), so it is serialized with the
  warehouse's commits: no commit is in flight while files are judged unreferenced.
- Crash safety by order: the metadata commit (data delete, then snapshot removal: each one swap
  of the catalog pointer) comes first, file deletion after. A kill -9 before a swap changes
  nothing; after it, at worst leaves files no snapshot references, which the next sweep deletes.
  A file any snapshot of the current metadata references is never deleted.

The pure decisions (which snapshots expire, the cut-off, which files are unreferenced, what a
delete carries) are plain functions, property-tested in tests/lakehouse/test_expiry_pure.py.
"""
from __future__ import annotations

import logging
import warnings
from typing import Iterable, Mapping, NamedTuple

log = logging.getLogger(__name__)
# a data expiry that finds nothing to delete (its check plans the files that may hold old rows)
# is normal here, not worth pyiceberg's warning on every check
warnings.filterwarnings("ignore", message="Delete operation did not match any records")

MAX_SNAPSHOT_AGE = "iceberg.history.expire.max-snapshot-age-ms"
MIN_SNAPSHOTS = "iceberg.history.expire.min-snapshots-to-keep"
RETENTION = "iceberg.retention.ms"
#: summary properties a snapshot of ours carries (translate: last offsets, topic id)
CARRIED_PREFIX = "hourglass."
#: files of a table the sweep may delete: what pyiceberg writes (data, manifests, manifest
#: lists, metadata); anything else under the table's location is left alone
_SWEPT = (("data", ".parquet"), ("metadata", ".avro"), ("metadata", ".metadata.json"))


class Retention(NamedTuple):
    """A topic's table retention settings (from its ``LogConfig`` values)."""

    max_snapshot_age_ms: int
    min_snapshots_to_keep: int
    retention_ms: int

    @classmethod
    def of(cls, cfg) -> "Retention":
        v = cfg.values
        return cls(v[MAX_SNAPSHOT_AGE], v[MIN_SNAPSHOTS], v[RETENTION])


    def describe(self) -> str:
        """One line for the console: what the table keeps."""
        rows = "forever" if self.retention_ms < 0 else f"{self.retention_ms} ms by record timestamp"
        return (f"snapshots {self.max_snapshot_age_ms} ms (at least {self.min_snapshots_to_keep}); "
                f"rows {rows}")


class SnapshotInfo(NamedTuple):
    snapshot_id: int
    parent_id: int | None
    timestamp_ms: int


# ---- pure decisions -------------------------------------------------------------------------------

def snapshots_to_expire(snapshots: Iterable[SnapshotInfo], current_id: int | None, now_ms: int,
                        max_age_ms: int, min_to_keep: int) -> set[int]:
    """Ids of the snapshots to expire, as Iceberg's ``ExpireSnapshots`` with the table's
    ``history.expire.*``: the current snapshot and its ``min_to_keep - 1`` latest ancestors are
    kept, and every snapshot committed at or after ``now - max_age``; the rest expire."""
    snaps = {s.snapshot_id: s for s in snapshots}
    kept: set[int] = set()
    sid = current_id
    while sid is not None and sid in snaps and len(kept) < max(min_to_keep, 1):
        kept.add(sid)
        sid = snaps[sid].parent_id
    cutoff = now_ms - max_age_ms
    return {i for i, s in snaps.items() if i not in kept and s.timestamp_ms < cutoff}


def data_cutoff_ms(now_ms: int, retention_ms: int) -> int | None:
    """Rows with a record timestamp below this are deleted; None: ``iceberg.retention.ms`` -1."""
    return None if retention_ms < 0 else now_ms - retention_ms


def least_timestamp(row_groups: Iterable[tuple[int, int | None, int]]) -> int | None | float:
    """The least record timestamp of a Parquet file from its row groups' footer statistics of
    ``redpanda.timestamp`` (``(rows, min or None when the footer has none, nulls)``): +inf when
    no row has a timestamp, None when unknown (a row group with timestamps but no minimum)."""
    least: float = float("inf")
    for rows, lowest, nulls in row_groups:
        if lowest is not None:
            least = min(least, lowest)
        elif nulls < rows:
            return None
    return least


def may_hold_rows_before(least: Iterable[int | None | float], cutoff: int) -> bool:
    """Whether any file (by ``least_timestamp``) may hold a row older than ``cutoff``."""
    return any(m is None or m < cutoff for m in least)


def carried_properties(summary: Mapping[str, str] | None) -> dict[str, str]:
    """What a snapshot expiry commits must carry from the current snapshot's summary: our
    ``hourglass.*`` properties (per-partition last offsets, topic id), so ``resume_offsets``
    of the new current snapshot answers as before."""
    return {k: v for k, v in (summary or {}).items() if k.startswith(CARRIED_PREFIX)}


def sweepable(relative: str) -> bool:
    """Whether a file (path relative to the table's location) is of a kind the sweep deletes."""
    parts = relative.split("/")
    return len(parts) >= 2 and any(parts[0] == d and relative.endswith(ext) for d, ext in _SWEPT)


def unreferenced_files(on_disk: Iterable[str], referenced: Iterable[str], root: str) -> list[str]:
    """The files under ``root`` to delete: on disk, of a kind the sweep deletes, and referenced
    by nothing the table's current metadata names (its metadata files, every kept snapshot's
    manifest list, manifests and live data and delete files). Paths are the file system's
    (pyiceberg's ``parse_location``: ``/dir/file`` locally, ``bucket/key`` on S3)."""
    ref = set(referenced)
    prefix = root.rstrip("/") + "/"
    return sorted(f for f in on_disk
                  if f not in ref and f.startswith(prefix) and sweepable(f[len(prefix):]))


# ---- the table side (worker thread) ----------------------------------------------------------------

class Outcome(NamedTuple):
    rows_deleted: int
    snapshots_expired: int
    files_deleted: int
    head: tuple | None  # lakehouse.tables.head of the table afterwards (None: unchanged)


class TableExpiry:
    """Runs a topic table's retention; used from the translation worker thread only. Keeps
    what each manifest list and manifest names (both immutable), so a sweep reads only the
    ones written since the last."""

    def __init__(self):
        self._manifests: dict[str, frozenset[str]] = {}  # manifest list -> its manifests
        self._manifest_files: dict[str, frozenset[str]] = {}  # manifest -> its live files
        self._least: dict[str, int | None | float] = {}  # data file -> least_timestamp (µs)

    def run(self, tables, topic: str, retention: Retention, now_ms: int) -> Outcome:
        from pyiceberg.exceptions import NoSuchTableError
        from lakehouse.tables import head
        from lakehouse.translate import NAMESPACE, table_name
        ident = (NAMESPACE, table_name(topic))
        try:
            table = tables.catalog.load_table(ident)
        except NoSuchTableError:
            return Outcome(0, 0, 0, None)
        rows = self._expire_data(table, retention, now_ms)
        if rows:
            table = tables.catalog.load_table(ident)
        expired = self._expire_snapshots(table, retention, now_ms)
        files = 0
        if expired or rows:
            table = tables.catalog.load_table(ident)
            files = self.sweep(table)
        changed = bool(rows or expired)
        return Outcome(rows, expired, files, head(table) if changed else None)

    def _expire_data(self, table, retention: Retention, now_ms: int) -> int:
        from pyiceberg.expressions import LessThan
        cutoff = data_cutoff_ms(now_ms, retention.retention_ms)
        snap = table.current_snapshot()
        if cutoff is None or snap is None:
            return 0
        older = LessThan("redpanda.timestamp", cutoff * 1000)  # timestamptz: microseconds
        # files pruned by partition; pyiceberg keeps no bounds for the nested timestamp, so the
        # Parquet footers say whether a delete (which reads every planned file) is needed
        if not may_hold_rows_before(self._least_timestamps(table, older), cutoff * 1000):
            return 0
        before = int(snap.summary.additional_properties.get("total-records", 0))
        log.info("Iceberg table %s: data expiry deleting rows older than %d ms (timestamp before %d)",
                 ".".join(table.name()), retention.retention_ms, cutoff)
        table.delete(older, snapshot_properties=carried_properties(snap.summary.additional_properties))
        after_snap = table.current_snapshot()
        if after_snap is None or after_snap.snapshot_id == snap.snapshot_id:
            return 0
        after = int(after_snap.summary.additional_properties.get("total-records", 0))
        log.info("Iceberg table %s: data expiry deleted %d rows", ".".join(table.name()), before - after)
        return before - after

    def _least_timestamps(self, table, row_filter) -> list:
        """least_timestamp of each file the planner keeps for ``row_filter`` (footers read once:
        data files are immutable)."""
        import pyarrow.parquet as pq
        out = []
        for task in table.scan(row_filter=row_filter).plan_files():
            path = task.file.file_path
            if path not in self._least:
                with table.io.new_input(path).open() as f:  # the footer only
                    md = pq.ParquetFile(f).metadata
                col = next((j for j in range(md.num_columns)
                            if md.schema.column(j).path == "redpanda.timestamp"), None)
                groups = []
                for i in range(md.num_row_groups):
                    rg = md.row_group(i)
                    st = rg.column(col).statistics if col is not None else None
                    groups.append((rg.num_rows, st.min_raw if st is not None and st.has_min_max else None,
                                   st.null_count if st is not None else 0))
                self._least[path] = least_timestamp(groups)
            out.append(self._least[path])
        return out

    def _expire_snapshots(self, table, retention: Retention, now_ms: int) -> int:
        current = table.current_snapshot()
        infos = [SnapshotInfo(s.snapshot_id, s.parent_snapshot_id, s.timestamp_ms) for s in table.snapshots()]
        ids = snapshots_to_expire(infos, current.snapshot_id if current else None, now_ms,
                                  retention.max_snapshot_age_ms, retention.min_snapshots_to_keep)
        if not ids:
            return 0
        log.info("Iceberg table %s: expiring snapshots (%d, older than %d ms)", ".".join(table.name()), len(ids),
                 retention.max_snapshot_age_ms)
        table.maintenance.expire_snapshots().by_ids(sorted(ids)).commit()
        log.info("Iceberg table %s: expired snapshots (%d)", ".".join(table.name()), len(ids))
        return len(ids)

    def referenced(self, table) -> set[str]:
        """Every location the table's current metadata names."""
        meta = table.metadata
        out = {table.metadata_location} | {e.metadata_file for e in meta.metadata_log}
        out |= {s.statistics_path for s in meta.statistics}
        out |= {s.statistics_path for s in meta.partition_statistics}
        lists = {s.manifest_list: s for s in meta.snapshots}
        manifests: set[str] = set()
        for path, snap in lists.items():
            names = self._manifests.get(path)
            if names is None:
                found = snap.manifests(table.io)
                for m in found:
                    if m.manifest_path not in self._manifest_files:
                        self._manifest_files[m.manifest_path] = frozenset(
                            e.data_file.file_path for e in m.fetch_manifest_entry(table.io, discard_deleted=True))
                names = self._manifests[path] = frozenset(m.manifest_path for m in found)
            manifests |= names
        data = set().union(*(self._manifest_files[m] for m in manifests))
        out |= data
        # forget what this table no longer names (the caches hold the live history only)
        root = table.location()
        for cache, live in ((self._manifests, lists), (self._manifest_files, manifests), (self._least, data)):
            for gone in [k for k in cache if k.startswith(root) and k not in live]:
                del cache[gone]
        return out | set(lists) | manifests

    def sweep(self, table) -> int:
        """Delete the files under the table's location that nothing the table's current
        metadata names references (those only expired snapshots referenced, and any a crash
        left: a commit cut short, a sweep cut short), through the table's own FileIO file
        system (the local disk or the S3 store). Serialized with commits by the caller."""
        from pyarrow import fs as pafs
        from pyiceberg.io.pyarrow import PyArrowFileIO
        if not isinstance(table.io, PyArrowFileIO):  # cannot list: judge nothing, delete nothing
            log.warning("Iceberg table %s: no sweep with FileIO %s", ".".join(table.name()), type(table.io).__name__)
            return 0
        scheme, netloc, root = PyArrowFileIO.parse_location(table.location())
        # references before listing: a manifest that cannot be read fails the sweep, deleting nothing
        ref = {PyArrowFileIO.parse_location(p)[2] for p in self.referenced(table)}
        filesystem = table.io.fs_by_scheme(scheme, netloc)
        listed = filesystem.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
        doomed = unreferenced_files((i.path for i in listed if i.type == pafs.FileType.File), ref, root)
        if not doomed:
            return 0
        log.info("Iceberg table %s: sweeping files no kept snapshot references (%d)", ".".join(table.name()),
                 len(doomed))
        for f in doomed:
            try:
                filesystem.delete_file(f)
            except FileNotFoundError:
                pass
        log.info("Iceberg table %s: swept files (%d)", ".".join(table.name()), len(doomed))
        return len(doomed)
