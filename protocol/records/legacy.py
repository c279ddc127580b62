"""Magic 0 and 1 message sets (``LegacyRecord`` in Kafka), and conversion to/from magic 2.

One message (all big-endian)::

    offset        int64
    message_size  int32     bytes after this field
    crc           uint32    CRC-32 (zlib's) of magic .. end
    magic         int8      0 or 1
    attributes    int8      bits 0-2 codec, bit 3 timestamp type (magic 1 only)
    timestamp     int64     magic 1 only
    key           int32 length (-1 = null) + bytes
    value         int32 length (-1 = null) + bytes

A compressed message is a *wrapper*: null key, value = the compressed bytes of an inner
message set (never itself compressed).  The wrapper's offset is the absolute offset of its
last inner message.  Inner offsets are absolute for magic 0; for magic 1 they are relative,
so inner absolute = wrapper offset - last inner offset + inner offset.  A magic-1 wrapper
with LogAppendTime imposes its timestamp on every inner message.  Magic 0/1 cannot carry
zstd (UnsupportedCompressionError), and Kafka's magic-0 LZ4 has a broken header checksum
(see ``compression``).

Up-conversion (Produce v0-2) turns a legacy set into one magic-2 batch; down-conversion
(Fetch v0-3) turns magic-2 batches into a legacy set, dropping headers and control batches
as Kafka does.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Sequence

from protocol.errors import CorruptRecordError, UnsupportedCompressionError
from protocol.records import compression as _codecs
from protocol.records.batch import NO_TIMESTAMP, iter_batch_positions
from protocol.records.record import Record, build_batch, decode_batch

LOG_OVERHEAD = 12
RECORD_OVERHEAD_V0 = 14     # crc, magic, attributes, key length, value length
RECORD_OVERHEAD_V1 = 22     # + timestamp
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08

_MSG_HEAD = struct.Struct(">qiIbb")   # offset, message_size, crc, magic, attributes
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_OFFSET_SIZE = struct.Struct(">qi")


@dataclass(slots=True)
class LegacyMessage:
    """One (flattened) legacy message; ``offset`` is absolute even for inner messages."""

    offset: int
    magic: int
    attributes: int
    timestamp: int          # NO_TIMESTAMP (-1) for magic 0
    key: bytes | None
    value: bytes | None
    crc_ok: bool = True

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        """0 CreateTime, 1 LogAppendTime (always 0 for magic 0)."""
        return 1 if self.magic > 0 and self.attributes & TIMESTAMP_TYPE_MASK else 0


# ---------------------------------------------------------------------------------------------
# decode

def _read_bytes(buf, pos: int, end: int) -> tuple[bytes | None, int]:
    if pos + 4 > end:
        raise CorruptRecordError("legacy message ends inside a length field")
    (n,) = _I32.unpack_from(buf, pos)
    pos += 4
    if n < 0:
        return None, pos
    if pos + n > end:
        raise CorruptRecordError("legacy message ends inside a key/value")
    return bytes(buf[pos:pos + n]), pos + n


def _shallow(buf, partial_ok: bool, verify_crc: bool):
    """Yield shallow (top-level) messages of ``buf`` as LegacyMessage."""
    pos, end = 0, len(buf)
    while end - pos >= LOG_OVERHEAD:
        offset, size = _OFFSET_SIZE.unpack_from(buf, pos)
        if size < RECORD_OVERHEAD_V0:
            raise CorruptRecordError(f"message size {size} at position {pos} below the minimum {RECORD_OVERHEAD_V0}")
        msg_end = pos + LOG_OVERHEAD + size
        if msg_end > end:
            if partial_ok:
                return
            raise CorruptRecordError("inner message set ends with a partial message")
        _o, _s, crc, magic, attributes = _MSG_HEAD.unpack_from(buf, pos)
        if magic not in (0, 1):
            raise CorruptRecordError(f"magic {magic} at position {pos} in a legacy message set")
        if magic == 1 and size < RECORD_OVERHEAD_V1:
            raise CorruptRecordError(f"magic-1 message size {size} below the minimum {RECORD_OVERHEAD_V1}")
        crc_ok = zlib.crc32(memoryview(buf)[pos + 16:msg_end]) == crc
        if verify_crc and not crc_ok:
            raise CorruptRecordError(f"message at offset {offset} fails its CRC-32 check")
        p = pos + 18
        if magic == 1:
            (timestamp,) = _I64.unpack_from(buf, p)
            p += 8
        else:
            timestamp = NO_TIMESTAMP
        key, p = _read_bytes(buf, p, msg_end)
        value, p = _read_bytes(buf, p, msg_end)
        if p != msg_end:
            raise CorruptRecordError(f"message at offset {offset} has {msg_end - p} trailing bytes")
        yield LegacyMessage(offset, magic, attributes, timestamp, key, value, crc_ok)
        pos = msg_end
    if pos != end and not partial_ok:
        raise CorruptRecordError("inner message set ends with a partial message")


def _legacy_decompress(codec: int, data) -> bytes:
    if codec == _codecs.ZSTD:
        raise UnsupportedCompressionError("zstd is not supported for magic 0/1 messages")
    if codec == _codecs.LZ4:
        return _codecs.decompress_legacy_lz4(data)
    return _codecs.decompress(codec, data)


def decode_message_set(buf, verify_crc: bool = True) -> list[LegacyMessage]:
    """All messages of a magic-0/1 message set, compressed wrappers flattened into their inner messages.

    Stops silently at a partial trailing message.  Raises CorruptRecordError on bad CRC
    (when ``verify_crc``; otherwise ``crc_ok`` reports it), framing errors, nested
    compression, an empty wrapper, or an inner magic differing from its wrapper's.
    """
    out: list[LegacyMessage] = []
    for msg in _shallow(buf, True, verify_crc):
        codec = msg.attributes & COMPRESSION_MASK
        if not codec:
            out.append(msg)
            continue
        if msg.value is None:
            raise CorruptRecordError(f"compressed wrapper at offset {msg.offset} has a null value")
        inner = list(_shallow(_legacy_decompress(codec, msg.value), False, verify_crc))
        if not inner:
            raise CorruptRecordError(f"compressed wrapper at offset {msg.offset} holds no messages")
        log_append = msg.magic > 0 and msg.attributes & TIMESTAMP_TYPE_MASK
        base = msg.offset - inner[-1].offset if msg.magic > 0 else 0
        for m in inner:
            if m.attributes & COMPRESSION_MASK:
                raise CorruptRecordError("compressed messages must not be nested")
            if m.magic != msg.magic:
                raise CorruptRecordError(f"inner magic {m.magic} differs from wrapper magic {msg.magic}")
            m.offset += base
            if log_append:
                m.timestamp = msg.timestamp
                m.attributes |= TIMESTAMP_TYPE_MASK
            m.crc_ok = m.crc_ok and msg.crc_ok
            out.append(m)
    return out


# ---------------------------------------------------------------------------------------------
# build

def _encode_message(offset: int, magic: int, attributes: int, timestamp: int, key, value) -> bytes:
    parts = [struct.pack(">bb", magic, attributes)]
    if magic == 1:
        parts.append(_I64.pack(timestamp))
    for blob in (key, value):
        if blob is None:
            parts.append(b"\xff\xff\xff\xff")
        else:
            parts.append(_I32.pack(len(blob)))
            parts.append(bytes(blob))
    body = b"".join(parts)
    return struct.pack(">qiI", offset, len(body) + 4, zlib.crc32(body)) + body


def build_message_set(records: Sequence, *, magic: int, compression: int = 0, base_offset: int = 0,
                      timestamp_type: int = 0) -> bytes:
    """Build a magic-0/1 message set.

    ``records`` items are ``Record`` (absolute ``offset``; headers are dropped) or tuples
    ``(key, value, timestamp)`` (offset = base_offset + index).  Magic 0 drops timestamps.
    With a codec, all records go into one wrapper whose offset is the last record's and whose
    timestamp (magic 1) is the largest record timestamp.
    """
    if magic not in (0, 1):
        raise ValueError(f"legacy magic must be 0 or 1, not {magic}")
    if compression == _codecs.ZSTD:
        raise UnsupportedCompressionError("zstd is not supported for magic 0/1 messages")
    entries = []
    for i, r in enumerate(records):
        if isinstance(r, Record):
            entries.append((r.offset, r.timestamp, r.key, r.value))
        else:
            entries.append((base_offset + i, r[2], r[0], r[1]))
    ts_bit = TIMESTAMP_TYPE_MASK if magic == 1 and timestamp_type == 1 else 0
    if magic == 0:
        entries = [(o, NO_TIMESTAMP, k, v) for o, _t, k, v in entries]
    if not compression:
        return b"".join(_encode_message(o, magic, ts_bit, t, k, v) for o, t, k, v in entries)
    if not entries:
        return b""
    # Inner offsets: relative to base_offset for magic 1, absolute for magic 0 (Kafka's toInnerOffset).
    rel = base_offset if magic == 1 else 0
    inner = b"".join(_encode_message(o - rel, magic, ts_bit, t, k, v) for o, t, k, v in entries)
    if magic == 0 and compression == _codecs.LZ4:
        payload = _codecs.compress_legacy_lz4(inner)
    else:
        payload = _codecs.compress(compression, inner)
    wrapper_ts = max(t for _o, t, _k, _v in entries)
    return _encode_message(entries[-1][0], magic, compression | ts_bit, wrapper_ts, None, payload)


# ---------------------------------------------------------------------------------------------
# conversion

def up_convert(buf, *, timestamp_type: int = 0, now_ms: int | None = None,
               compression: int | None = None) -> bytes:
    """Turn a legacy message set (Produce v0-2) into one magic-2 batch.

    Offsets become 0..n-1 (the log assigns real ones); timestamps are kept (magic 0 has
    none: -1); keys and values are kept, no headers.  ``timestamp_type=1`` needs ``now_ms``
    and makes a LogAppendTime batch.  ``compression=None`` keeps the first wrapper's codec
    (none if no message was compressed).  Raises CorruptRecordError on any bad message.
    """
    shallow_codec = 0
    for msg in _shallow(buf, True, False):
        if msg.attributes & COMPRESSION_MASK:
            shallow_codec = msg.attributes & COMPRESSION_MASK
            break
    messages = decode_message_set(buf)
    if compression is None:
        compression = shallow_codec
    log_append_time = None
    if timestamp_type == 1:
        if now_ms is None:
            raise ValueError("LogAppendTime up-conversion needs now_ms")
        log_append_time = now_ms
    return build_batch([(m.key, m.value, m.timestamp) for m in messages], base_offset=0,
                       compression=compression, log_append_time=log_append_time)


def down_convert(batches, magic: int) -> bytes:
    """Turn magic-2 batches (Fetch v0-3) into a magic-``magic`` message set, offsets kept.

    Control batches and empty batches are dropped and headers lost (Kafka does the same);
    a compressed batch becomes one wrapper with the same codec; a torn trailing batch is
    ignored.  A zstd batch raises UnsupportedCompressionError (Kafka answers
    UNSUPPORTED_COMPRESSION_TYPE to old fetchers).
    """
    if magic not in (0, 1):
        raise ValueError(f"down-conversion target magic must be 0 or 1, not {magic}")
    out = []
    for pos, header in iter_batch_positions(batches):
        if header.is_control or header.records_count == 0:
            continue
        codec = header.compression
        if codec == _codecs.ZSTD:
            raise UnsupportedCompressionError("zstd batches cannot be down-converted to magic 0/1")
        _h, records = decode_batch(batches, pos, verify_crc=False)
        if not records:
            continue
        out.append(build_message_set(records, magic=magic, compression=codec,
                                     base_offset=records[0].offset, timestamp_type=header.timestamp_type))
    return b"".join(out)
