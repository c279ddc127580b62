"""Validate produced record batches and assign offsets (Kafka ``LogValidator`` plus the
checks of ``UnifiedLog.analyzeAndValidateRecords``), as a pure function.

Input: the raw records of one partition from a Produce request. Legacy magic 0/1 message
sets are first up-converted to one magic-2 batch. Then, per batch, in Kafka's order:

1. framing: every byte belongs to a complete batch (a torn tail -> CorruptRecordError),
   magic 2, batch_length >= 49;
2. from a client, the base offset must be 0 (InvalidRecordError);
3. size <= ``max.message.bytes`` (RecordTooLargeError);
4. CRC-32C (CorruptRecordError);
   then, for a compressed batch, no record body over ``max.decompressed.message.bytes``
   (InvalidRecordError, the whole batch; checked only when the limit is set below Kafka's
   default, which allows any record);
5. from a client: ``last_offset_delta + 1`` must be > 0 and equal ``records_count`` > 0
   (InvalidRecordError - Kafka's testInconsistentCountAndOffset,
   testBatchWithoutRecordsNotAllowed); no control batch (testControlRecordsNotAllowedFromClients);
   a producer id needs a base sequence >= 0;
6. records: on a compacted topic every record needs a key (InvalidRecordError); with
   ``CreateTime`` every record timestamp other than -1 must lie in
   ``[now - before, now + after]`` (the effective KIP-937 bounds of :class:`LogConfig`),
   else InvalidTimestampError; a client batch flagged LogAppendTime is rejected unless the
   topic is CreateTime and its timestamp is in range (Kafka's validateTimestamp quirk).
   Errors carry ``(batch_index, message)`` for **every** bad record of the batch;
   nothing is appended when any record is bad.

Records are decoded only when a check needs them: a finite timestamp bound under
CreateTime, a compacted topic, or recompression. Otherwise validation is O(1) per batch
(header + CRC). When records are decoded, the header's max_timestamp is corrected to the
records' largest timestamp as Kafka does.

Then offsets are assigned in place (base offset of batch *i* = ``next_offset`` + records
before it; the base offset is outside the CRC); ``LogAppendTime`` topics get
``max_timestamp = now`` and the timestamp-type bit on every batch (CRC recomputed);
a topic ``compression.type`` other than ``producer`` that differs from a batch's codec
re-encodes that batch with the topic codec (Kafka recompresses only on codec change).

Unlike Kafka, more than one magic-2 batch per request is accepted (each validated alone).
An empty input raises InvalidRecordError ("no batches"); Kafka's log treats an empty
append as a no-op before validating, which the caller may do.
"""
from __future__ import annotations

import struct
from dataclasses import field

from protocol.deferred import dataclass
from protocol.records import batch as _b
from protocol.records.batch import BatchHeader
from storage.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    RecordTooLargeError,
)
from storage.log_config import MAX_DECOMPRESSED_DEFAULT

LONG_MAX = 2**63 - 1
NO_TIMESTAMP = -1

#: compression.type name -> codec id (``producer`` keeps the batch's codec).
COMPRESSION_CODECS = {"uncompressed": 0, "none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_MAX_TIMESTAMP_OFFSET = 35
_ATTRIBUTES_LOW = 22  # low byte of the int16 attributes (timestamp type bit 3)
TIMESTAMP_TYPE_MASK = _b.TIMESTAMP_TYPE_MASK


@dataclass
class ValidationResult:
    """Validated batches with offsets assigned, ready to append.

    ``buf`` holds the batches (patched in place, or re-encoded); ``batches`` lists
    ``(position in buf, header after patching)`` in order. ``max_timestamp`` is the largest
    batch max timestamp (``now`` under LogAppendTime); ``shallow_offset_of_max_timestamp``
    is the last offset (Kafka's value for magic 2). Producer fields are the first batch's,
    ``last_sequence`` the last batch's; the log should update producer state per entry of
    ``batches``.
    """

    buf: bytearray
    base_offset: int
    last_offset: int
    max_timestamp: int
    shallow_offset_of_max_timestamp: int
    log_append_time: int
    record_count: int
    batches: list[tuple[int, BatchHeader]] = field(default_factory=list)
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    last_sequence: int = -1
    is_transactional: bool = False
    recompressed: bool = False

    @property
    def size(self) -> int:
        return len(self.buf)


def _last_sequence(h: BatchHeader) -> int:
    if h.base_sequence < 0:
        return -1
    return (h.base_sequence + h.last_offset_delta) % 0x80000000


def _frame(buf) -> list[tuple[int, int]]:
    """(position, size) of each batch; CorruptRecordError unless the framing is exact."""
    out = []
    pos, end = 0, len(buf)
    while pos < end:
        if end - pos < _b.LOG_OVERHEAD:
            raise CorruptRecordError(
                f"{end - pos} trailing bytes at position {pos} do not hold a batch")
        (batch_length,) = _I32.unpack_from(buf, pos + 8)
        if batch_length < _b.MIN_BATCH_LENGTH:
            raise CorruptRecordError(
                f"Record batch at position {pos} has illegal length {batch_length}")
        size = batch_length + _b.LOG_OVERHEAD
        if pos + size > end:
            raise CorruptRecordError(
                f"Record batch at position {pos} is truncated: needs {size} bytes, "
                f"{end - pos} left")
        out.append((pos, size))
        pos += size
    return out


def _check_timestamp(ts: int, now_ms: int, before: int, after: int) -> bool:
    diff = now_ms - ts
    return not (diff > before or -diff > after)


def _set_create_time(buf: bytearray, pos: int, max_timestamp: int) -> None:
    """Mark the batch at ``pos`` CreateTime with ``max_timestamp`` (CRC recomputed)."""
    _I64.pack_into(buf, pos + _MAX_TIMESTAMP_OFFSET, max_timestamp)
    buf[pos + _ATTRIBUTES_LOW] &= ~TIMESTAMP_TYPE_MASK & 0xFF
    _b.rewrite_crc(buf, pos)


def validate_and_assign_offsets(data, *, next_offset: int, now_ms: int, config,
                                from_client: bool = True,
                                partition_leader_epoch: int | None = None,
                                topic_partition: str = "") -> ValidationResult:
    """Validate ``data`` and assign offsets from ``next_offset`` (see module docstring).

    ``config`` is a :class:`storage.log_config.LogConfig`. ``from_client=False`` is Kafka's
    coordinator origin: control batches allowed and the client-only batch checks skipped.
    ``partition_leader_epoch``, when given, is stamped on every batch (outside the CRC).
    ``topic_partition`` (``name-index``) is named in record errors, as Kafka's messages do.
    Raises CorruptRecordError, InvalidRecordError, InvalidTimestampError or
    RecordTooLargeError; ``data`` itself is never modified.
    """
    if len(data) == 0:
        raise InvalidRecordError("Record batch has no batches at all")
    magic = _b.peek_magic(data, 0)
    if magic in (0, 1):
        from protocol.records.legacy import up_convert
        buf = bytearray(up_convert(bytes(data)))
    elif magic == 2:
        buf = bytearray(data)
    else:
        raise CorruptRecordError(f"Unknown record magic {magic}")

    log_append_time = config.message_timestamp_type == "LogAppendTime"
    before = config.timestamp_before_max_ms
    after = config.timestamp_after_max_ms
    bounded = not log_append_time and (before < LONG_MAX or after < LONG_MAX)
    compact = config.compact
    target_codec = COMPRESSION_CODECS.get(config.compression_type)  # None = producer
    max_bytes = config.max_message_bytes
    max_body = config.max_decompressed_message_bytes

    frames = _frame(buf)
    # Pass 1: validate everything before touching the buffer (all-or-nothing).
    headers: list[BatchHeader] = []
    plans: list[tuple[list | None, int | None]] = []   # (records to re-encode, corrected max ts)
    for pos, size in frames:
        m = _b.peek_magic(buf, pos)
        if m != 2:
            raise InvalidRecordError(
                f"Batch magic {m} is not the same as the first batch's magic byte 2")
        h = _b.read_header(buf, pos)
        if from_client and h.base_offset != 0:
            raise InvalidRecordError(
                f"The baseOffset of the record batch in the append should be 0, "
                f"but it is {h.base_offset}")
        if size > max_bytes:
            raise RecordTooLargeError(
                f"The record batch size in the append is {size} bytes which exceeds the "
                f"maximum configured value of {max_bytes}.")
        if not _b.check_crc(buf, pos, h):
            raise CorruptRecordError(
                f"Record is corrupt (stored crc = {h.crc}, computed crc = "
                f"{_b.compute_crc(buf, pos, size)})")
        if from_client:
            count_from_offsets = h.last_offset_delta + 1
            if count_from_offsets <= 0:
                raise InvalidRecordError(
                    f"Batch has an invalid offset range: [{h.base_offset}, {h.last_offset}]")
            if h.records_count <= 0:
                raise InvalidRecordError(f"Invalid reported count for record batch: {h.records_count}")
            if count_from_offsets != h.records_count:
                raise InvalidRecordError(
                    f"Inconsistent batch offset range [{h.base_offset}, {h.last_offset}] and "
                    f"count of records {h.records_count}")
            if h.is_control:
                raise InvalidRecordError("Clients are not allowed to write control records")
            if h.producer_id >= 0 and h.base_sequence < 0:
                raise InvalidRecordError(
                    f"Invalid sequence number {h.base_sequence} in record batch with "
                    f"producerId {h.producer_id}")
        elif h.records_count < 0:
            raise CorruptRecordError(f"Invalid reported count for record batch: {h.records_count}")

        if h.compression and max_body < MAX_DECOMPRESSED_DEFAULT:
            # max.decompressed.message.bytes: Kafka checks each record it decompresses from a
            # compressed batch (an uncompressed one, even recompressed to the topic codec, is not
            # checked) and refuses the whole batch at the first larger one, with no record errors
            from protocol.records.record import iter_record_body_sizes
            for body in iter_record_body_sizes(buf, pos):
                if body > max_body:
                    raise InvalidRecordError(f"Invalid record size: {body} exceeds the configured "
                                             f"maximum record size of {max_body}.")
        recompress = (target_codec is not None and target_codec != h.compression
                      and not (h.is_control and h.compression == 0))
        batch_is_lat = h.timestamp_type == 1
        records = None
        errors: list[tuple[int, str]] = []
        timestamp_error = False
        if compact or recompress:
            from protocol.records.record import decode_batch
            _, records = decode_batch(buf, pos, verify_crc=False)
            timestamps = [(r.offset, r.timestamp) for r in records]
        elif bounded and not batch_is_lat and not (before == LONG_MAX and h.max_timestamp <= now_ms + after):
            from protocol.records.record import iter_record_timestamps
            timestamps = list(iter_record_timestamps(buf, pos))
        else:
            # unbounded, or only the after side bounded (Kafka 4's default, one hour) and the
            # header's max timestamp within it: the header answers for the records, which are
            # not decoded (Kafka decodes each; a batch whose header understates its records'
            # timestamps passes here, as it does with no bound at all)
            timestamps = None   # header-only path
        if timestamps is not None and len(timestamps) != h.records_count:
            raise CorruptRecordError(
                f"Record count {h.records_count} in the batch header does not match the "
                f"{len(timestamps)} records present")

        n = h.records_count
        for i in range(n):
            if compact and records is not None and records[i].key is None:
                errors.append((i, "Compacted topic cannot accept message without key in topic partition "
                                  f"{topic_partition}"))
                continue
            if batch_is_lat:
                ts = h.max_timestamp
                offset = h.base_offset + i if timestamps is None else timestamps[i][0]
            elif timestamps is not None:
                offset, ts = timestamps[i]
            else:
                continue
            if not log_append_time and ts != NO_TIMESTAMP:
                if not _check_timestamp(ts, now_ms, before, after):
                    timestamp_error = True
                    errors.append((i, (
                        f"Timestamp {ts} of message with offset {offset} is out of range. The "
                        f"timestamp should be within [{now_ms - before}, {now_ms + after}]")))
            elif batch_is_lat and from_client:
                timestamp_error = True
                errors.append((i, "Invalid timestamp type in message. Producer should not set "
                                  "timestamp type to LogAppendTime."))
        if errors:
            if timestamp_error:
                raise InvalidTimestampError(
                    "One or more records have been rejected due to invalid timestamp", errors)
            shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
            raise InvalidRecordError(
                f"One or more records have been rejected due to {len(errors)} record errors in "
                f"total, and only showing the first three errors at most: [{shown}]", errors)
        headers.append(h)
        fixed_max = None
        # Kafka rewrites the header max timestamp from the records it iterated.
        if timestamps is not None and not batch_is_lat and not recompress:
            rec_max = max((t for _, t in timestamps), default=NO_TIMESTAMP)
            if rec_max != h.max_timestamp:
                fixed_max = rec_max
        elif batch_is_lat and not log_append_time and not recompress:
            # a client's LogAppendTime batch on a CreateTime topic: Kafka writes the topic's
            # type (CreateTime) with the batch's time as its max timestamp
            fixed_max = h.max_timestamp
        plans.append((records if recompress else None, fixed_max))

    # Pass 2: assign offsets, timestamps, re-encode where asked. Without re-encoding every
    # batch keeps its size and position, so ``buf`` (already our own copy) is patched in
    # place: no per-batch slice and re-join, two fewer copies of every produced byte.
    in_place = all(to_recompress is None for to_recompress, _ in plans)
    out = buf if in_place else bytearray()
    batches: list[tuple[int, BatchHeader]] = []
    offset = next_offset
    max_ts = NO_TIMESTAMP
    recompressed = False
    record_count = 0
    for (pos, size), h, (to_recompress, fixed_max) in zip(frames, headers, plans):
        base = offset
        if in_place:
            _b.set_base_offset(buf, pos, base)
            if partition_leader_epoch is not None:
                _b.set_partition_leader_epoch(buf, pos, partition_leader_epoch)
            if log_append_time:
                _b.set_log_append_time(buf, pos, now_ms)
            elif fixed_max is not None:
                _set_create_time(buf, pos, fixed_max)
            nh = _b.read_header(buf, pos)
            batches.append((pos, nh))
            offset = base + nh.last_offset_delta + 1
            record_count += nh.records_count
            if nh.max_timestamp > max_ts:
                max_ts = nh.max_timestamp
            continue
        if to_recompress is not None:     # re-encode with the topic codec
            from protocol.records.record import Record, build_batch
            recs = [Record(base + i, r.timestamp, r.key, r.value, r.headers, r.attributes)
                    for i, r in enumerate(to_recompress)]
            chunk = bytearray(build_batch(
                recs, base_offset=base, compression=target_codec,
                producer_id=h.producer_id, producer_epoch=h.producer_epoch,
                base_sequence=h.base_sequence, is_transactional=h.is_transactional,
                is_control=h.is_control,
                partition_leader_epoch=(h.partition_leader_epoch if partition_leader_epoch is None
                                        else partition_leader_epoch),
                log_append_time=now_ms if log_append_time else None))
            recompressed = True
        else:
            chunk = buf[pos:pos + size]
            _b.set_base_offset(chunk, 0, base)
            if partition_leader_epoch is not None:
                _b.set_partition_leader_epoch(chunk, 0, partition_leader_epoch)
            if log_append_time:
                _b.set_log_append_time(chunk, 0, now_ms)
            elif fixed_max is not None:
                _set_create_time(chunk, 0, fixed_max)
        new_pos = len(out)
        out += chunk
        nh = _b.read_header(out, new_pos)
        batches.append((new_pos, nh))
        offset = base + nh.last_offset_delta + 1
        record_count += nh.records_count
        if nh.max_timestamp > max_ts:
            max_ts = nh.max_timestamp

    first, last = batches[0][1], batches[-1][1]
    last_offset = offset - 1
    return ValidationResult(
        buf=out, base_offset=next_offset, last_offset=last_offset,
        max_timestamp=now_ms if log_append_time else max_ts,
        shallow_offset_of_max_timestamp=last_offset,
        log_append_time=now_ms if log_append_time else -1,
        record_count=record_count, batches=batches,
        producer_id=first.producer_id, producer_epoch=first.producer_epoch,
        base_sequence=first.base_sequence, last_sequence=_last_sequence(last),
        is_transactional=first.is_transactional, recompressed=recompressed)


__all__ = ["ValidationResult", "validate_and_assign_offsets", "COMPRESSION_CODECS"]
