"""Producer state snapshot files in Kafka's format (``<offset>.snapshot``, ``ProducerStateManager``).

A snapshot named after offset N holds the producer state of a partition (idempotence and open
transactions) built from every batch below N. Kafka writes one when a segment rolls and when
a log closes, and loads the newest usable one at start-up so that it replays only the batches
after it (see ``storage.loader``).

Layout (big-endian), version 1::

    version            int16   1
    crc                uint32  CRC-32C of every byte after this field
    entries            int32   count, then per producer:
      producer_id              int64
      epoch                    int16
      last_sequence            int32   -1 if the producer has no data batch retained
      last_offset              int64   -1 likewise
      offset_delta             int32   last_offset - first offset of its last batch
      timestamp                int64   max timestamp of its last batch
      coordinator_epoch        int32   of the last marker written for it (-1: none)
      current_txn_first_offset int64   first offset of its open transaction, -1 if none

Only the last batch of each producer is kept, as in Kafka: after a restart from a snapshot a
producer's duplicates are recognised for its last batch (the replay path keeps five). Reading
a snapshot restores the open transactions (Kafka ``loadProducerEntry``).
"""
from __future__ import annotations

import struct

from protocol.records.batch import crc32c
from storage.errors import StorageError
from storage.producer_state import (
    INT_MAX, NO_SEQUENCE, BatchMetadata, ProducerStateEntry, ProducerStateManager,
)
from storage.segment import filename_prefix

SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1
_HEAD = struct.Struct(">hIi")            # version, crc, entry count
_ENTRY = struct.Struct(">qhiqiqiq")      # see the module docstring
_CRC_FROM = 6                            # the CRC covers the bytes after version and crc


class CorruptSnapshotError(StorageError):
    """A snapshot file that is torn, of an unknown version or fails its CRC."""


def first_sequence(last_seq: int, offset_delta: int) -> int:
    """The first sequence of a batch from its last one, wrapping below 0 to Int.MAX
    (Kafka ``DefaultRecordBatch.decrementSequence``)."""
    if last_seq < offset_delta:
        return INT_MAX - (offset_delta - last_seq) + 1
    return last_seq - offset_delta


def encode_snapshot(state: ProducerStateManager) -> bytes:
    """The snapshot file's bytes for ``state``."""
    body = bytearray(_HEAD.size - _CRC_FROM + _ENTRY.size * len(state))
    struct.pack_into(">i", body, 0, len(state))
    pos = 4
    for e in state.entries():
        if e.batches:
            b = e.batches[-1]
            last_seq, last_offset, delta = b.last_seq, b.last_offset, b.last_offset - b.first_offset
        else:
            last_seq, last_offset, delta = NO_SEQUENCE, -1, 0
        txn = e.current_txn_first_offset
        _ENTRY.pack_into(body, pos, e.producer_id, e.producer_epoch, last_seq, last_offset, delta,
                         e.last_timestamp, e.coordinator_epoch, -1 if txn is None else txn)
        pos += _ENTRY.size
    return struct.pack(">hI", SNAPSHOT_VERSION, crc32c(body)) + body


def decode_snapshot(data: bytes, name: str = "snapshot") -> ProducerStateManager:
    """Parse a snapshot file; CorruptSnapshotError if it is not a whole, valid one."""
    if len(data) < _HEAD.size:
        raise CorruptSnapshotError(f"{name}: {len(data)} bytes is shorter than a snapshot header")
    version, crc, count = _HEAD.unpack_from(data, 0)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"{name}: unknown snapshot version {version}")
    if crc32c(memoryview(data)[_CRC_FROM:]) != crc:
        raise CorruptSnapshotError(f"{name}: CRC does not match (torn or corrupt snapshot)")
    if count < 0 or len(data) != _HEAD.size + count * _ENTRY.size:
        raise CorruptSnapshotError(f"{name}: {len(data)} bytes do not hold {count} entries")
    state = ProducerStateManager()
    for i in range(count):
        pid, epoch, last_seq, last_offset, delta, ts, coord, txn = _ENTRY.unpack_from(
            data, _HEAD.size + i * _ENTRY.size)
        entry = ProducerStateEntry(pid, epoch, last_timestamp=ts, coordinator_epoch=coord,
                                   current_txn_first_offset=txn if txn >= 0 else None)
        if last_offset >= 0 and last_seq != NO_SEQUENCE:
            entry.batches.append(BatchMetadata(last_offset - delta, last_offset, ts,
                                               first_sequence(last_seq, delta), last_seq))
        state.restore(entry)
    return state


def snapshot_file_name(offset: int) -> str:
    return filename_prefix(offset) + SNAPSHOT_SUFFIX


__all__ = ["encode_snapshot", "decode_snapshot", "snapshot_file_name", "first_sequence",
           "CorruptSnapshotError", "SNAPSHOT_SUFFIX", "SNAPSHOT_VERSION"]
