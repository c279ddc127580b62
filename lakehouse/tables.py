"""The table side of translation: Parquet files and Iceberg metadata written by pyarrow and
pyiceberg, in the broker's worker thread (never on the event loop).

The catalog is pyiceberg's ``SqlCatalog`` over one SQLite file in the warehouse
(``<warehouse>/catalog.db``): the single source of truth of which metadata file is each table's
current one. A commit writes its Parquet file(s) and a new metadata file, then swaps the
table's metadata pointer in one SQLite transaction; a crash before the swap leaves orphan files
and no visible change, so the table moves by whole commits only.
"""
from __future__ import annotations

import logging
import threading
from pathlib import Path

from storage.log_config import parse_iceberg_partition_spec
from lakehouse import upsert as upsert_tables
from lakehouse.warehouse import Warehouse, local_warehouse, warehouse_dir
from lakehouse.translate import (NAMESPACE, Slice, key_value_row, last_offsets, summary_for, table_name,
                                 table_of_other_topic, walk_slices)

log = logging.getLogger(__name__)

CATALOG_NAME = "hourglass"
#: iceberg.partition.spec's default (Redpanda's is hour(redpanda.timestamp); the issue asks a day)
DEFAULT_SPEC = "(day(redpanda.timestamp))"


_OPENING = threading.Lock()


def open_catalog(warehouse: Path | Warehouse):
    """The warehouse's catalog (created, with the ``redpanda`` namespace, on first use). The writer and the REST routes each
    open one; openings are serialized, as each creates the catalog's SQL tables if missing.
    A ``Path`` is a local warehouse; a ``Warehouse`` may be an S3 one (``lakehouse.warehouse``)."""
    from pyiceberg.catalog.sql import SqlCatalog
    if isinstance(warehouse, Path):
        warehouse = local_warehouse(warehouse)
    with _OPENING:
        warehouse.catalog_dir.mkdir(parents=True, exist_ok=True)
        catalog = SqlCatalog(CATALOG_NAME, uri=f"sqlite:///{warehouse.catalog_db}",
                             warehouse=warehouse.location, **warehouse.io)
        catalog.create_namespace_if_not_exists(NAMESPACE)
        return catalog


def key_value_schema():
    """Redpanda's ``key_value`` layout: ``redpanda`` (partition, offset, timestamp, timestamp
    type, headers, key) and ``value``. Field ids are reassigned by the catalog at creation."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import (BinaryType, IntegerType, ListType, LongType, NestedField, StringType,
                                 StructType, TimestamptzType)
    header = StructType(NestedField(10, "key", StringType(), required=False),
                        NestedField(11, "value", BinaryType(), required=False))
    return Schema(
        NestedField(1, "redpanda", StructType(
            NestedField(3, "partition", IntegerType(), required=True),
            NestedField(4, "offset", LongType(), required=True),
            NestedField(5, "timestamp", TimestamptzType(), required=False),
            NestedField(6, "timestamp_type", IntegerType(), required=True),
            NestedField(7, "headers", ListType(9, header, element_required=True), required=False),
            NestedField(8, "key", BinaryType(), required=False)), required=True),
        NestedField(2, "value", BinaryType(), required=False))


def spec_field_name(transform: str, column: str) -> str:
    """A partition field's name: ``redpanda_timestamp_day``, ``redpanda_partition``."""
    base = column.replace(".", "_")
    return base if transform == "identity" else f"{base}_{transform}"


def wanted_fields(spec_text: str) -> list[tuple[str, str, str]]:
    """(field name, transform, column) of ``iceberg.partition.spec``."""
    return [(spec_field_name(t, c), t, c) for t, c in parse_iceberg_partition_spec(spec_text)]


def partition_spec(schema, spec_text: str):
    """``iceberg.partition.spec`` as a pyiceberg ``PartitionSpec`` over ``schema``."""
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import parse_transform
    fields = [PartitionField(source_id=schema.find_field(column).field_id, field_id=1000 + i,
                             transform=parse_transform(transform), name=name)
              for i, (name, transform, column) in enumerate(wanted_fields(spec_text))]
    return PartitionSpec(*fields)


def current_fields(table) -> list[tuple[str, str, str]]:
    schema = table.schema()
    return [(f.name, str(f.transform), schema.find_column_name(f.source_id)) for f in table.spec().fields]


def evolve_spec(table, spec_text: str) -> bool:
    """Make the table's partition spec ``iceberg.partition.spec`` (a spec evolution: files
    written before keep their partitioning); False when it already is."""
    want = wanted_fields(spec_text)
    have = current_fields(table)
    if have == want:
        return False
    log.info("Iceberg table %s: partition spec %s -> %s", table.name(), have, want)
    with table.update_spec() as update:
        for name, _, _ in have:
            update.remove_field(name)
        for name, transform, column in want:
            update.add_field(column, transform, name)
    return True


def head(table) -> tuple[int, int, int] | None:
    """(snapshot id, commit time in ms, rows) of the table's current snapshot; None when empty."""
    snap = table.current_snapshot()
    if snap is None:
        return None
    return snap.snapshot_id, snap.timestamp_ms, int(snap.summary.additional_properties.get("total-records", 0))


def snapshot_summary(table) -> dict[str, str]:
    snap = table.current_snapshot()
    return {} if snap is None else dict(snap.summary.additional_properties)


class TopicTables:
    """The topics' tables in one warehouse; used from one thread at a time."""

    def __init__(self, warehouse: Path | Warehouse):
        self.warehouse = warehouse
        self._catalog = None

    @property
    def catalog(self):
        if self._catalog is None:
            self._catalog = open_catalog(self.warehouse)
        return self._catalog

    def table(self, topic: str, spec_text: str = DEFAULT_SPEC, schema=None):
        """The topic's table, created (``schema``, the key_value layout by default, partitioned
        by ``spec_text``) when missing."""
        from pyiceberg.exceptions import NoSuchTableError
        ident = (NAMESPACE, table_name(topic))
        try:
            return self.catalog.load_table(ident)
        except NoSuchTableError:
            log.info("creating Iceberg table %s.%s for topic %s", NAMESPACE, table_name(topic), topic)
            schema = schema or key_value_schema()
            return self.catalog.create_table_if_not_exists(ident, schema,
                                                           partition_spec=partition_spec(schema, spec_text))

    def last_offsets(self, topic: str, topic_id: str = "", spec_text: str = DEFAULT_SPEC,
                     schema=None) -> tuple[dict[int, int], tuple | None]:
        """partition -> last offset the table holds (its current snapshot's summary). A table
        left by a deleted topic of the same name is dropped first and made anew (Redpanda drops
        a topic's table when the topic is deleted; here it stays readable until then)."""
        table = self.table(topic, spec_text, schema)
        summary = snapshot_summary(table)
        if table_of_other_topic(summary, topic_id):
            log.warning("Iceberg table %s.%s was written from a deleted topic of that name; it is dropped "
                        "and made anew for topic %s (id %s)", NAMESPACE, table_name(topic), topic, topic_id)
            self.catalog.purge_table((NAMESPACE, table_name(topic)))
            table = self.table(topic, spec_text, schema)
            summary = snapshot_summary(table)
        return last_offsets(summary), head(table)

    def commit(self, topic: str, slices: list[Slice], previous: dict[int, int],
               topic_id: str = "", spec_text: str = DEFAULT_SPEC,
               upsert: bool = False) -> tuple[dict[int, int], dict[int, int], int, tuple | None]:
        """Translate ``slices`` and commit their rows as one snapshot recording the new last
        offsets. Returns (last offsets the table now holds, partition -> next offset to read,
        rows committed, ``head`` of the table, None when nothing was committed). With no row to
        write nothing is committed: the reads covered only aborted or control records (or, with
        ``upsert``, tombstones of keys the table does not hold), which a re-read after a restart
        skips again. ``upsert``: the table keeps the latest row per key (``lakehouse.upsert``)."""
        import pyarrow as pa
        records, covered, advanced = walk_slices(slices)
        rows: list[dict] = []
        for p, h, r in records:
            row = key_value_row(p, h, r)
            rows.append(upsert_tables.record_item(p, r, row) if upsert else row)
        if not rows:
            return previous, advanced, 0, None
        table = self.table(topic, spec_text)
        if evolve_spec(table, spec_text):
            table = self.table(topic, spec_text)
        summary = summary_for(previous, covered, topic_id)
        if upsert:
            added = upsert_tables.commit(table, rows, summary)
            if added is None:
                return previous, advanced, 0, None
            table = self.table(topic, spec_text)
            return last_offsets(summary), advanced, added, head(table)
        table = upsert_tables.leave(table)
        table.append(pa.Table.from_pylist(rows, schema=table.schema().as_arrow()), snapshot_properties=summary)
        return last_offsets(summary), advanced, len(rows), head(table)


def close_quietly(tables: TopicTables) -> None:
    cat = tables._catalog
    if cat is not None and hasattr(cat, "engine"):
        try:
            cat.engine.dispose()
        except Exception:  # noqa: BLE001 - closing at shutdown
            log.debug("closing the Iceberg catalog failed", exc_info=True)


__all__ = ["TopicTables", "warehouse_dir", "open_catalog"]
