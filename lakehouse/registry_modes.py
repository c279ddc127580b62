"""Pure decisions of the registry modes (``iceberg.mode`` = ``value_schema_id_prefix`` /
``value_schema_latest``) and of the dead-letter table ``<topic>~dlq``.

Invariants (property-tested in tests/lakehouse/test_registry_modes_pure.py):

- A record becomes exactly one row: of the topic's table when its value decodes (the ``redpanda``
  metadata struct plus the value's columns), else of the dead-letter table (Redpanda's
  ``key_value`` layout plus ``reason``). Translation never stops on bad data.
- Exactly once across both tables. A round's rows of ``(previous, last]`` go to the dead-letter
  table first, then to the topic's table, each commit's snapshot summary recording that table's
  own last offsets (``translate.summary_for``). Translation resumes from the topic's table (it
  commits last, so everything at or below its offsets is in both tables); a row at or below a
  table's own recorded offset is never added to that table again (``fresh``), so a crash between
  the two commits replays the round without doubling the dead-letter rows.
"""
from __future__ import annotations

from typing import Iterable, Mapping, NamedTuple

from lakehouse.translate import key_value_row, record_metadata, summary_for
from storage.log_config import parse_iceberg_mode

ID_PREFIX, LATEST = "value_schema_id_prefix", "value_schema_latest"
REGISTRY_MODES = (ID_PREFIX, LATEST)
MAGIC = 0
#: the dead-letter table's column beyond Redpanda's layout: why the value was not translated
REASON = "reason"


class SchemaVersion(NamedTuple):
    """A registered schema as the table side needs it (what the composition root's lookup answers)."""

    schema_id: int
    schema_type: str  # the registry's schemaType: AVRO, PROTOBUF, JSON
    schema: str
    references: Mapping[str, str]  # name -> schema text, transitively resolved


class ModeSettings(NamedTuple):
    mode: str
    subject: str | None = None  # value_schema_latest's subject
    protobuf_name: str | None = None


def settings(mode_text: str, topic: str) -> ModeSettings:
    """``iceberg.mode`` of ``topic`` (already validated by the topic config) as settings; the
    subject of ``value_schema_latest`` defaults to ``<topic>-value`` (TopicNameStrategy)."""
    mode, options = parse_iceberg_mode(mode_text)
    if mode != LATEST:
        return ModeSettings(mode)
    return ModeSettings(mode, options.get("subject") or f"{topic}-value", options.get("protobuf_name"))


def is_registry_mode(mode_text: str) -> bool:
    return parse_iceberg_mode(mode_text)[0] in REGISTRY_MODES


def wire_prefix(value: bytes | None) -> tuple[int, bytes]:
    """(schema id, the bytes after Confluent's 5-byte prefix) of a value in the wire format;
    raises ValueError(reason) when it is not."""
    if value is None:
        raise ValueError("null value: no magic byte")
    if len(value) < 5:
        raise ValueError(f"value of {len(value)} bytes is shorter than the wire format's 5-byte prefix")
    if value[0] != MAGIC:
        raise ValueError(f"magic byte is 0x{value[0]:02x}, not 0x00: not the Schema Registry wire format")
    return int.from_bytes(value[1:5], "big"), value[5:]


def value_row(partition: int, header, record, columns: Mapping) -> dict:
    """A row of the topic's table in a registry mode: Redpanda's ``redpanda`` struct plus the
    value's columns at top level."""
    return {"redpanda": record_metadata(partition, header, record), **columns}


def dlq_row(partition: int, header, record, reason: str) -> dict:
    """A row of ``<topic>~dlq``: Redpanda's ``key_value`` layout (the raw value bytes) plus why."""
    row = key_value_row(partition, header, record)
    row[REASON] = reason
    return row


def fresh(rows: Iterable[dict], last: Mapping[int, int]) -> list[dict]:
    """The rows a table does not hold yet: offset above its recorded last offset of the partition."""
    return [r for r in rows if r["redpanda"]["offset"] > last.get(r["redpanda"]["partition"], -1)]


def column_clash(names: Iterable[str]) -> str | None:
    """Why a value's columns cannot sit beside the metadata struct (None: they can)."""
    return "the value has a field named redpanda, the table's metadata column" if "redpanda" in names else None


class Plan(NamedTuple):
    """One round's two commits, in order: the dead-letter table's (None: nothing to add), then
    the topic's table's (always, so where translation resumes moves on)."""

    dlq_rows: list
    dlq_summary: dict | None
    rows: list
    summary: dict


def plan_commits(previous: Mapping[int, int], dlq_last: Mapping[int, int], covered: Mapping[int, int],
                 rows: list, dead: list, topic_id: str = "") -> Plan:
    """The commits of a round covering ``covered`` (partition -> last offset) with ``rows`` for
    the topic's table (whose snapshot records ``previous``) and ``dead`` for the dead-letter
    table (whose snapshot records ``dlq_last``): each gets only the rows above its own offsets,
    and its summary records its own offsets (never going back: after a crash between the two
    commits the dead-letter table is ahead of the read)."""
    new_dead = fresh(dead, dlq_last)
    dlq_summary = None
    if new_dead:
        reach = {p: max(o, dlq_last.get(p, -1)) for p, o in covered.items()}
        dlq_summary = summary_for(dlq_last, reach, topic_id)
    return Plan(new_dead, dlq_summary, fresh(rows, previous), summary_for(previous, covered, topic_id))
