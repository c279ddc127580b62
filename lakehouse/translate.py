"""Pure decisions of topic -> Iceberg translation: plain functions over plain data.

Invariants (property-tested in tests/lakehouse/test_translate_pure.py):

- ``committed_records`` keeps exactly what a read_committed Kafka consumer returns from the
  same batches: records of committed transactions and non-transactional records; never an
  aborted transaction's records, never a control record (Kafka's ``Fetcher`` walk: an aborted
  transaction's producer is skipped from its first offset until its abort marker).
- Each table commit records, in its Iceberg snapshot summary, the last log offset it covers for
  every partition translated so far (carried forward from the snapshot before), so the table's
  current snapshot alone says where translation resumes: ``resume_offsets(summary)``. A row is
  in the table iff its offset is at or below its partition's recorded last offset: a commit is
  the rows of ``(previous last offset, new last offset]`` and that summary, atomically.
"""
from __future__ import annotations

import heapq
from typing import Iterable, Iterator, Mapping, NamedTuple

from protocol.records.batch import iter_batch_positions
from protocol.records.record import CONTROL_ABORT, control_record_type, decode_batch

#: Redpanda's default namespace for Iceberg topics (its ``iceberg_default_catalog_namespace``)
NAMESPACE = "redpanda"
#: Redpanda's dead-letter table: ``<topic>~dlq`` beside the topic's table
DLQ_SUFFIX = "~dlq"
#: snapshot summary key recording a partition's last translated offset
_LAST_OFFSET = "hourglass.partition.{}.last-offset"
_LAST_OFFSET_PREFIX, _LAST_OFFSET_SUFFIX = "hourglass.partition.", ".last-offset"


def table_name(topic: str) -> str:
    """The table of a topic, as Redpanda names it: the topic's own name (in ``NAMESPACE``)."""
    return topic


def dlq_table_name(topic: str) -> str:
    return topic + DLQ_SUFFIX


class Aborted(NamedTuple):
    """An aborted transaction overlapping a read (``storage``'s ``AbortedTxn`` fields used)."""

    producer_id: int
    first_offset: int


def committed_records(batches: Iterable[tuple], aborted: Iterable, start: int, limit: int) -> Iterator[tuple]:
    """``(header, record)`` of ``batches`` (``(BatchHeader, [Record])`` in offset order) that a
    read_committed consumer fetching from ``start`` up to the last stable offset ``limit`` sees.

    ``aborted`` are the aborted transactions overlapping the read (``producer_id``,
    ``first_offset``; a transaction that began before ``start`` included), as
    ``PartitionLog.collect_aborted_transactions`` answers them.
    """
    pending = [(a.first_offset, a.producer_id) for a in aborted]
    heapq.heapify(pending)
    skipping: set[int] = set()
    for header, records in batches:
        while pending and pending[0][0] <= header.last_offset:
            skipping.add(heapq.heappop(pending)[1])
        if header.is_control:
            # the abort marker ends its producer's aborted transaction
            if header.is_transactional and records and header.producer_id in skipping \
                    and control_record_type(records[0].key) == CONTROL_ABORT:
                skipping.discard(header.producer_id)
            continue
        if header.is_transactional and header.producer_id in skipping:
            continue
        for r in records:
            if start <= r.offset < limit:
                yield header, r


def record_metadata(partition: int, header, record) -> dict:
    """The ``redpanda`` struct of every mode's row (Redpanda's): the record's metadata and key.
    A negative timestamp (Kafka's NO_TIMESTAMP) is null; times are microseconds since the epoch
    (Iceberg's timestamptz)."""
    ts = record.timestamp
    return {"partition": partition, "offset": record.offset,
            "timestamp": ts * 1000 if ts >= 0 else None,
            "timestamp_type": header.timestamp_type,
            "headers": [{"key": k, "value": v} for k, v in record.headers],
            "key": record.key}


def key_value_row(partition: int, header, record) -> dict:
    """A record as a row of the ``key_value`` table (Redpanda's layout: a ``redpanda`` struct of
    the record's metadata and key, and the value bytes)."""
    return {"redpanda": record_metadata(partition, header, record), "value": record.value}


TOPIC_ID = "hourglass.topic-id"


def summary_for(previous: Mapping[int, int], covered: Mapping[int, int], topic_id: str = "") -> dict[str, str]:
    """The snapshot summary properties of a commit covering ``covered`` (partition -> last
    offset) after ``previous`` (the last offsets the table's current snapshot records), naming
    the topic (by id) the offsets are of."""
    merged = dict(previous)
    for p, last in covered.items():
        if last < merged.get(p, -1):
            raise ValueError(f"partition {p}: a commit cannot go back from {merged[p]} to {last}")
        merged[p] = last
    out = {_LAST_OFFSET.format(p): str(last) for p, last in sorted(merged.items())}
    if topic_id:
        out[TOPIC_ID] = topic_id
    return out


def table_of_other_topic(summary: Mapping[str, str] | None, topic_id: str) -> bool:
    """Whether the table's current snapshot was written from another topic of the same name
    (one deleted since): its offsets say nothing of this topic's."""
    recorded = (summary or {}).get(TOPIC_ID)
    return bool(recorded) and bool(topic_id) and recorded != topic_id


def last_offsets(summary: Mapping[str, str] | None) -> dict[int, int]:
    """partition -> last offset the table holds, from its current snapshot's summary."""
    out = {}
    for k, v in (summary or {}).items():
        if k.startswith(_LAST_OFFSET_PREFIX) and k.endswith(_LAST_OFFSET_SUFFIX):
            p = k[len(_LAST_OFFSET_PREFIX):-len(_LAST_OFFSET_SUFFIX)]
            if p.isdigit():
                out[int(p)] = int(v)
    return out


def resume_offsets(summary: Mapping[str, str] | None) -> dict[int, int]:
    """partition -> the offset translation resumes at (one past the last offset held)."""
    return {p: last + 1 for p, last in last_offsets(summary).items()}


class Slice(NamedTuple):
    """One partition's read for a commit: raw batches from ``start`` below ``limit`` (the LSO)."""

    partition: int
    start: int
    limit: int
    data: bytes
    aborted: tuple


def covered_last_offset(start: int, limit: int, batch_last_offsets: Iterable[int]) -> int | None:
    """The last offset a commit covers of a read from ``start`` below ``limit``: the end of the
    last whole batch read (capped below ``limit``); None when nothing at or after ``start``
    was read. Offsets a batch skips (compaction, aborted or control records) are covered too."""
    last = None
    for lo in batch_last_offsets:
        if lo >= start:
            last = min(lo, limit - 1)
    return last


def walk_slices(slices: Iterable[Slice]) -> tuple[list[tuple], dict[int, int], dict[int, int]]:
    """What one round read: ``(partition, header, record)`` of every record a read_committed
    reader sees in ``slices`` (``committed_records``), and per partition the last offset the
    round covers and the next offset to read (``covered_last_offset``; a partition whose read
    held nothing at or after its start is in neither)."""
    records: list[tuple] = []
    covered: dict[int, int] = {}
    advanced: dict[int, int] = {}
    for s in slices:
        batches = [decode_batch(s.data, pos) for pos, _ in iter_batch_positions(s.data)]
        records.extend((s.partition, h, r) for h, r in committed_records(batches, s.aborted, s.start, s.limit))
        last = covered_last_offset(s.start, s.limit, (h.last_offset for h, _ in batches))
        if last is not None:
            covered[s.partition] = last
            advanced[s.partition] = last + 1
    return records, covered, advanced
