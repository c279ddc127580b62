"""Magic-2 record batch header: a zero-copy view and in-place patch helpers.

Layout (``DefaultRecordBatch`` in Kafka, all big-endian)::

    off  size  field
      0    8   base_offset
      8    4   batch_length            bytes after this field (so size = batch_length + 12)
     12    4   partition_leader_epoch
     16    1   magic                   = 2
     17    4   crc                     CRC-32C (Castagnoli) of bytes [21, end)
     21    2   attributes              bits 0-2 codec, 3 timestamp type, 4 transactional,
                                       5 control, 6 delete horizon
     23    4   last_offset_delta
     27    8   base_timestamp
     35    8   max_timestamp
     43    8   producer_id
     51    2   producer_epoch
     53    4   base_sequence
     57    4   records_count
     61        records (compressed as a whole if the codec is not none)

Invariants the helpers rely on: base_offset, batch_length and partition_leader_epoch are
*outside* the CRC, so the broker may assign offsets and stamp the leader epoch without
touching the CRC; anything from ``attributes`` on is covered, so rewriting the timestamp
type or max timestamp must recompute it.

Every function here is O(1) in the number of records (only ``compute_crc``/``check_crc``
read the whole batch, in C).
"""
from __future__ import annotations

import struct
from typing import Iterator, NamedTuple

from protocol.errors import CorruptRecordError

HEADER: struct.Struct = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = 61           # RECORD_BATCH_OVERHEAD
LOG_OVERHEAD = 12          # base_offset(8) + batch_length(4)
CRC_START = 21             # first byte covered by the CRC (attributes)
MAGIC_OFFSET = 16
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD   # 49: a batch with zero records

# Field offsets inside the header.
_PARTITION_LEADER_EPOCH_OFFSET = 12
_CRC_OFFSET = 17
_ATTRIBUTES_OFFSET = 21
_MAX_TIMESTAMP_OFFSET = 35

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08   # set = LogAppendTime
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
DELETE_HORIZON_FLAG = 0x40

CREATE_TIME = 0
LOG_APPEND_TIME = 1

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1
NO_PARTITION_LEADER_EPOCH = -1

_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I16 = struct.Struct(">h")


class BatchHeader(NamedTuple):
    """The 61-byte header of one magic-2 batch, fields in wire order."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies, header included."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        """0 = CreateTime, 1 = LogAppendTime."""
        return 1 if self.attributes & TIMESTAMP_TYPE_MASK else 0

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def has_delete_horizon(self) -> bool:
        """KIP-534: when set, base_timestamp holds the delete horizon, not a record timestamp."""
        return bool(self.attributes & DELETE_HORIZON_FLAG)

    @property
    def last_sequence(self) -> int:
        """Sequence of the last record (wrapping at int32 max like Kafka); -1 if no sequence."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) % 0x80000000


_unpack_header = HEADER.unpack_from
_tuple_new = tuple.__new__   # builds the NamedTuple from the unpacked tuple without _make's checks


def peek_magic(buf, pos: int = 0) -> int:
    """The magic byte of the batch or legacy message at ``pos`` (byte 16 in every format)."""
    if len(buf) - pos <= MAGIC_OFFSET:
        raise CorruptRecordError("buffer too short to hold a magic byte")
    m = buf[pos + MAGIC_OFFSET]
    return m - 256 if m > 127 else m


def read_header(buf, pos: int = 0) -> BatchHeader:
    """Parse the header at ``pos`` without copying the batch.

    Raises CorruptRecordError if fewer than 61 bytes remain, the magic is not 2, or
    batch_length is smaller than an empty batch's (49).
    """
    if len(buf) - pos < HEADER_SIZE:
        raise CorruptRecordError(f"need {HEADER_SIZE} bytes for a batch header, have {len(buf) - pos}")
    h = _tuple_new(BatchHeader, _unpack_header(buf, pos))
    if h[3] != 2:
        raise CorruptRecordError(f"expected magic 2, found {h[3]}")
    if h[1] < MIN_BATCH_LENGTH:
        raise CorruptRecordError(f"batch_length {h[1]} smaller than the minimum {MIN_BATCH_LENGTH}")
    return h


def _load_crc32c():
    """The ``crc32c`` package's C function without running the package's ``__init__``, which
    imports importlib.metadata (~12-19 ms, on every start that reads a producer snapshot) only
    to set a version string; the normal import if the layout is not the one expected."""
    import importlib.machinery
    import importlib.util
    import os
    try:
        spec = importlib.util.find_spec("crc32c")  # locates the package, does not import it
        pkg_dir = os.path.dirname(spec.origin)
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(pkg_dir, "_crc32c" + suffix)
            if os.path.exists(path):
                loader = importlib.machinery.ExtensionFileLoader("crc32c._crc32c", path)
                ext = importlib.util.spec_from_file_location("crc32c._crc32c", path, loader=loader)
                mod = importlib.util.module_from_spec(ext)
                loader.exec_module(mod)
                return mod.crc32c
    except (ImportError, AttributeError, OSError, TypeError):
        pass
    from crc32c import crc32c as fn
    return fn


def _crc32c(data) -> int:
    """CRC-32C in C, loaded on first use, not at start-up."""
    global _crc32c
    fn = _crc32c = _load_crc32c()
    return fn(data)


def crc32c(data) -> int:
    """CRC-32C of ``data`` (Kafka's ``Crc32C``), for the other files that carry one."""
    return _crc32c(data)


def compute_crc(buf, pos: int, size: int) -> int:
    """CRC-32C of ``buf[pos+21 : pos+size]``: what the batch's crc field must hold."""
    return _crc32c(memoryview(buf)[pos + CRC_START:pos + size])


def check_crc(buf, pos: int, header: BatchHeader) -> bool:
    """True if the stored CRC matches the bytes (False too if the batch is cut short)."""
    if len(buf) - pos < header.size:
        return False
    return compute_crc(buf, pos, header.size) == header.crc


def iter_batch_positions(buf, pos: int = 0, end: int | None = None) -> Iterator[tuple[int, BatchHeader]]:
    """Yield ``(position, header)`` for each complete batch in ``buf[pos:end]``.

    Walks by batch_length only (no CRC check).  Stops silently at a torn tail: fewer than 12
    bytes left, or a batch that would extend past ``end``.  Raises CorruptRecordError on a
    batch_length below 49 or a magic other than 2.
    """
    if end is None:
        end = len(buf)
    unpack_len = _I32.unpack_from
    while end - pos >= LOG_OVERHEAD:
        (batch_length,) = unpack_len(buf, pos + 8)
        if batch_length < MIN_BATCH_LENGTH:
            raise CorruptRecordError(
                f"batch_length {batch_length} at position {pos} smaller than the minimum {MIN_BATCH_LENGTH}")
        size = batch_length + LOG_OVERHEAD
        if pos + size > end:
            return
        h = _tuple_new(BatchHeader, _unpack_header(buf, pos))
        if h[3] != 2:
            raise CorruptRecordError(f"expected magic 2 at position {pos}, found {h[3]}")
        yield pos, h
        pos += size


def set_base_offset(buf: bytearray, pos: int, base_offset: int) -> None:
    """Overwrite the base offset; it is outside the CRC, so the CRC stays valid."""
    _I64.pack_into(buf, pos, base_offset)


def set_partition_leader_epoch(buf: bytearray, pos: int, epoch: int) -> None:
    """Overwrite the partition leader epoch; outside the CRC."""
    _I32.pack_into(buf, pos + _PARTITION_LEADER_EPOCH_OFFSET, epoch)


def rewrite_crc(buf: bytearray, pos: int) -> None:
    """Recompute and store the CRC of the batch at ``pos`` (size taken from batch_length)."""
    (batch_length,) = _I32.unpack_from(buf, pos + 8)
    _U32.pack_into(buf, pos + _CRC_OFFSET, compute_crc(buf, pos, batch_length + LOG_OVERHEAD))


def set_log_append_time(buf: bytearray, pos: int, now_ms: int) -> None:
    """Mark the batch LogAppendTime with max_timestamp = now_ms, then fix the CRC.

    As Kafka does for v2 (``setMaxTimestamp``): base_timestamp and record deltas are left
    alone; readers report max_timestamp for every record of a LogAppendTime batch.
    """
    (attributes,) = _I16.unpack_from(buf, pos + _ATTRIBUTES_OFFSET)
    _I16.pack_into(buf, pos + _ATTRIBUTES_OFFSET, attributes | TIMESTAMP_TYPE_MASK)
    _I64.pack_into(buf, pos + _MAX_TIMESTAMP_OFFSET, now_ms)
    rewrite_crc(buf, pos)
