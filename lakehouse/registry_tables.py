"""The table side of the registry modes, in the translation worker thread: decode each value
with its registered schema (``lakehouse.value_formats``), evolve the topic's table by the new
schema's columns, and commit the dead-letter table ``<topic>~dlq`` then the topic's table,
each snapshot recording its own last offsets (the rules: ``lakehouse.registry_modes``).

Schemas come from ``schemas`` (``by_id(id)`` / ``latest(subject)`` -> ``SchemaVersion`` or
None), which the composition root builds over the broker's own Schema Registry; the service
runs each lookup on the event loop (the registry's state is the loop's) while this thread waits.
"""
from __future__ import annotations

import logging

from lakehouse import value_formats
from lakehouse.registry_modes import (ID_PREFIX, REASON, SchemaVersion, column_clash, dlq_row, plan_commits,
                                      settings, value_row, wire_prefix)
from lakehouse.translate import NAMESPACE, Slice, dlq_table_name, last_offsets, table_of_other_topic, walk_slices

log = logging.getLogger(__name__)

# (schema type, text, references, message path) -> Translator or the ValueError's reason; by
# content, not id: brokers in one process (tests, embedded) each have their own registry's ids
_TRANSLATORS: dict = {}
_MAX_TRANSLATORS = 4096


def metadata_schema():
    """The ``redpanda`` struct alone: a registry-mode table before its first decoded value."""
    from pyiceberg.schema import Schema
    from lakehouse.tables import key_value_schema
    return Schema(key_value_schema().find_field("redpanda"))


def dlq_schema():
    """``<topic>~dlq``: Redpanda's key_value layout plus ``reason`` (an Hourglass column)."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import NestedField, StringType
    from lakehouse.tables import key_value_schema
    kv = key_value_schema()
    return Schema(*kv.fields, NestedField(100, REASON, StringType(), required=False))


def _translator(version: SchemaVersion, path: tuple[int, ...]):
    key = (version.schema_type, version.schema, tuple(sorted(version.references.items())), path)
    got = _TRANSLATORS.get(key)
    if got is None:
        try:
            got = value_formats.translator(version.schema_type, version.schema, dict(version.references), path)
        except (ValueError, ImportError) as exc:
            got = f"schema id {version.schema_id} ({version.schema_type}) has no Iceberg translation: {exc}"
        if len(_TRANSLATORS) >= _MAX_TRANSLATORS:
            _TRANSLATORS.clear()
        _TRANSLATORS[key] = got
    if isinstance(got, str):
        raise ValueError(got)
    return got


class _Resolver:
    """value bytes -> (translator key, Translator, payload) for one commit; ValueError(reason) else."""

    def __init__(self, topic: str, mode_text: str, schemas):
        self.cfg = settings(mode_text, topic)
        self.schemas = schemas
        self._latest: SchemaVersion | None | bool = False  # looked up once a commit
        self._by_id: dict[int, SchemaVersion | None] = {}  # each id looked up once a commit
        self._translators: dict[tuple, object] = {}

    def _translator(self, version: SchemaVersion, path: tuple[int, ...]):
        key = (version.schema_id, path)
        tr = self._translators.get(key)
        if tr is None:  # raises ValueError for a schema without translation (each record: its DLQ row)
            tr = self._translators[key] = _translator(version, path)
        return tr

    def __call__(self, value: bytes):
        if self.cfg.mode == ID_PREFIX:
            schema_id, payload = wire_prefix(value)
            if schema_id not in self._by_id:  # a lookup is a round trip to the event loop
                self._by_id[schema_id] = self.schemas.by_id(schema_id)
            version = self._by_id[schema_id]
            if version is None:
                raise ValueError(f"schema id {schema_id} is not in the Schema Registry")
            path: tuple[int, ...] = ()
            if version.schema_type.upper() == "PROTOBUF":
                path, used = _protobuf().message_indexes(payload)
                payload = payload[used:]
            return (version.schema_id, path), self._translator(version, path), payload
        if self._latest is False:
            self._latest = self.schemas.latest(self.cfg.subject)
        version = self._latest
        if version is None:
            raise ValueError(f"subject {self.cfg.subject} has no schema in the Schema Registry")
        path = ()
        if version.schema_type.upper() == "PROTOBUF":
            path = (0,)  # Redpanda: the schema's first message unless protobuf_name names one
            if self.cfg.protobuf_name:
                find = getattr(_protobuf(), "message_path", None)
                if find is None:
                    raise RuntimeError("iceberg.mode protobuf_name is not served yet")  # pauses the topic
                path = find(version.schema, dict(version.references), self.cfg.protobuf_name)
        return (version.schema_id, path), self._translator(version, path), value


def _protobuf():
    try:
        return value_formats.module_for("PROTOBUF")
    except ImportError as exc:  # a dead letter saying so, as any schema without translation
        raise ValueError(f"PROTOBUF values have no Iceberg translation here: {exc}") from None


def _evolve(table, struct) -> tuple[object, str | None]:
    """The table with ``struct``'s columns added by name (pyiceberg's ``union_by_name``: new
    optional columns, int->long and float->double promoted); the reason when the schema cannot
    be expressed in the table (an incompatible type change)."""
    from pyiceberg.exceptions import ValidationError
    from pyiceberg.schema import Schema
    clash = column_clash(f.name for f in struct.fields)
    if clash:
        return table, clash
    update = table.update_schema()
    try:
        update.union_by_name(Schema(*struct.fields))
        new = update._apply()
    except (ValidationError, ValueError) as exc:
        return table, f"the value's schema cannot be expressed in the table {table.name()}: {exc}"
    if new.as_struct() != table.schema().as_struct():
        log.info("Iceberg table %s: schema evolves to %s", table.name(), new)
        update.commit()
        table = table.refresh()
    return table, None


def _dlq_table(tables, topic: str, topic_id: str, spec_text: str, create: bool):
    """``<topic>~dlq`` (None when it does not exist and ``create`` is false)."""
    from pyiceberg.exceptions import NoSuchTableError
    ident = (NAMESPACE, dlq_table_name(topic))
    try:
        t = tables.catalog.load_table(ident)
    except NoSuchTableError:
        return tables.table(dlq_table_name(topic), spec_text, dlq_schema()) if create else None
    snap = t.current_snapshot()
    if snap is not None and table_of_other_topic(snap.summary.additional_properties, topic_id):
        log.warning("Iceberg table %s.%s was written from a deleted topic of that name; it is dropped",
                    *ident)
        tables.catalog.purge_table(ident)
        return tables.table(dlq_table_name(topic), spec_text, dlq_schema()) if create else None
    return t


def commit(tables, topic: str, slices: list[Slice], previous: dict[int, int], topic_id: str,
           spec_text: str, mode_text: str, schemas) -> tuple[dict[int, int], dict[int, int], int, tuple | None, int]:
    """``TopicTables.commit`` for a registry mode (its answer: last offsets the topic's table
    now holds, partition -> next offset to read, rows committed to it, its ``head``; then the
    rows added to ``<topic>~dlq``)."""
    import pyarrow as pa
    from lakehouse.tables import evolve_spec, head
    resolve = _Resolver(topic, mode_text, schemas)
    decoded: list[tuple[tuple | None, dict, tuple]] = []  # (translator key, row, (p, header, record))
    translators: dict[tuple, object] = {}
    dead: list[dict] = []
    records, covered, advanced = walk_slices(slices)
    for p, h, r in records:
        if r.value is None:  # a null value (a tombstone): the record's metadata, no value columns
            decoded.append((None, value_row(p, h, r, {}), (p, h, r)))
            continue
        try:
            key, tr, payload = resolve(r.value)
            decoded.append((key, value_row(p, h, r, tr.decode(payload)), (p, h, r)))
            translators.setdefault(key, tr)
        except ValueError as exc:
            dead.append(dlq_row(p, h, r, str(exc)))
    if not decoded and not dead:
        return previous, advanced, 0, None, 0
    table = tables.table(topic, spec_text, metadata_schema())
    if evolve_spec(table, spec_text):
        table = tables.table(topic, spec_text)
    refused: dict[tuple, str] = {}
    for key, tr in translators.items():
        table, reason = _evolve(table, tr.struct)
        if reason:
            refused[key] = f"schema id {key[0]}: {reason}"
    rows = []
    for key, row, (p, h, r) in decoded:
        if key in refused:
            dead.append(dlq_row(p, h, r, refused[key]))
        else:
            rows.append(row)
    dlq_last: dict[int, int] = {}
    dlq = _dlq_table(tables, topic, topic_id, spec_text, create=bool(dead))
    if dlq is not None and dlq.current_snapshot() is not None:
        dlq_last = last_offsets(dlq.current_snapshot().summary.additional_properties)
    plan = plan_commits(previous, dlq_last, covered, rows, dead, topic_id)
    if plan.dlq_summary is not None:
        dlq.append(pa.Table.from_pylist(sorted(plan.dlq_rows, key=_order), schema=dlq.schema().as_arrow()),
                   snapshot_properties=plan.dlq_summary)
    # committed even without a row of its own: the topic's table says where translation resumes
    table.append(pa.Table.from_pylist(plan.rows, schema=table.schema().as_arrow()),
                 snapshot_properties=plan.summary)
    return last_offsets(plan.summary), advanced, len(plan.rows), head(table), len(plan.dlq_rows)


def _order(row: dict) -> tuple[int, int]:
    return row["redpanda"]["partition"], row["redpanda"]["offset"]

