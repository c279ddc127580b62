"""Reading the coordinators' internal compacted topics (``__consumer_offsets``,
``__transaction_state``, ``__share_group_state``): which partition a key lives in, and the
batch-by-batch replay loop every coordinator's load runs. Shared by the group, share-group and
transaction coordinators."""
from __future__ import annotations

import logging

from protocol.errors import CorruptRecordError
from protocol.records.batch import iter_batch_positions
from protocol.records.record import decode_batch
from broker.java_hash import java_string_hash

log = logging.getLogger(__name__)

_READ_CHUNK = 1 << 20


def partition_for(group_id: str, num_partitions: int) -> int:
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions


def read_batches(plog, start: int | None = None, end: int | None = None):
    """Every batch of a partition log holding offsets ``start..end-1`` (default: log start to
    log end), in offset order, as ``(header, records)`` (control batches included; the first
    batch may hold records below ``start``); a corrupt batch is logged and skipped. The replay
    loop of the internal topics (``__consumer_offsets``, ``__transaction_state``, ``_schemas``)."""
    offset = plog.log_start_offset if start is None else start
    end = plog.log_end_offset if end is None else end
    while offset < end:
        data = plog.read(offset, _READ_CHUNK, min_one=True, max_offset=end).data
        if not data:
            break
        progressed = False
        for pos, h in iter_batch_positions(data):
            if h.next_offset <= offset:
                continue
            progressed = True
            offset = h.next_offset
            try:
                _, records = decode_batch(data, pos)
            except CorruptRecordError as exc:
                log.error("skipping corrupt batch at offset %d of %s-%d: %s", h.base_offset,
                          plog.topic, plog.partition, exc)
                continue
            yield h, records
        if not progressed:
            break
