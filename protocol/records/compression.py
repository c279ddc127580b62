"""Record compression codecs, byte-compatible with what Kafka's Java client writes and reads.

Codec ids are the low 3 bits of a batch's (or legacy wrapper message's) attributes:
0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd; 5-7 are unassigned.

Wire formats, per codec:

* gzip: a gzip stream (RFC 1952); concatenated members are accepted on decompress.
* snappy: Java writes xerial-snappy framing -- a 16-byte header ``\\x82SNAPPY\\x00`` +
  int32 version (1) + int32 minimum compatible version (1), then blocks of big-endian int32
  length + raw snappy block (32 KiB of input per block).  librdkafka writes the same for
  Kafka; some old clients wrote plain raw snappy, so decompress accepts both.
* lz4: an LZ4 frame as Kafka's ``Lz4BlockOutputStream`` writes it: FLG 0x60 (version 1,
  independent blocks, no block/content checksum, no content size), BD 0x40 (64 KiB blocks).
  Java's reader decompresses each block on its own, so linked blocks must never be written.
  Magic-0 message sets were written with a *broken* header checksum (xxhash32 over the magic
  number and descriptor instead of the descriptor only); ``decompress_legacy_lz4`` ignores
  the header checksum as Java does for magic 0, and ``compress_legacy_lz4`` writes the broken
  variant for magic-0 wrappers.
* zstd: a standard zstd frame; frames without a content size (streaming writers) decode too.

Every codec failure on decompress is a ``CorruptRecordError``; an unknown codec id is an
``UnsupportedCompressionError``.
"""
from __future__ import annotations

import struct



class _LazyCramjam:
    """``cramjam`` imported on first use: most brokers never see a compressed batch at
    start-up, and its import costs ~2 ms of the start-up budget. The first attribute
    access replaces this placeholder with the module itself."""

    def __getattr__(self, name):
        global cramjam
        import cramjam as module
        cramjam = module
        return getattr(module, name)


cramjam = _LazyCramjam()

from protocol.errors import CorruptRecordError, UnsupportedCompressionError

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4

CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

# Levels Kafka uses by default (compression.gzip.level -1 = zlib 6, compression.zstd.level 3).
_GZIP_LEVEL = 6
_ZSTD_LEVEL = 3

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024
_INT32 = struct.Struct(">i")

_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_FLG = 0x60          # version 01, block independence, nothing else
_LZ4_BD = 0x40           # 64 KiB max block size
_LZ4_BLOCK = 64 * 1024
_LZ4_INCOMPRESSIBLE = 0x80000000
_UINT32_LE = struct.Struct("<I")

_U32 = 0xFFFFFFFF
_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393


def _xxh32_short(data: bytes, seed: int = 0) -> int:
    """xxHash32 of fewer than 16 bytes (all an LZ4 frame descriptor ever needs)."""
    n = len(data)
    assert n < 16
    h = (seed + _P5 + n) & _U32
    i = 0
    while i + 4 <= n:
        h = (h + _UINT32_LE.unpack_from(data, i)[0] * _P3) & _U32
        h = (((h << 17) | (h >> 15)) & _U32) * _P4 & _U32
        i += 4
    while i < n:
        h = (h + data[i] * _P5) & _U32
        h = (((h << 11) | (h >> 21)) & _U32) * _P1 & _U32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _U32
    h ^= h >> 13
    h = (h * _P3) & _U32
    h ^= h >> 16
    return h


def _lz4_header_checksum(descriptor: bytes) -> int:
    return (_xxh32_short(descriptor) >> 8) & 0xFF


def _lz4_frame(data, broken_checksum: bool) -> bytes:
    descriptor = bytes((_LZ4_FLG, _LZ4_BD))
    hc_input = _LZ4_MAGIC + descriptor if broken_checksum else descriptor
    out = [_LZ4_MAGIC, descriptor, bytes((_lz4_header_checksum(hc_input),))]
    mv = memoryview(data)
    for start in range(0, len(mv), _LZ4_BLOCK):
        chunk = mv[start:start + _LZ4_BLOCK]
        block = bytes(cramjam.lz4.compress_block(chunk, store_size=False))
        if len(block) >= len(chunk):
            # Incompressible: store raw with the high bit set, as the frame format allows.
            out.append(_UINT32_LE.pack(len(chunk) | _LZ4_INCOMPRESSIBLE))
            out.append(bytes(chunk))
        else:
            out.append(_UINT32_LE.pack(len(block)))
            out.append(block)
    out.append(b"\x00\x00\x00\x00")  # end mark, no content checksum
    return b"".join(out)


def compress_legacy_lz4(data) -> bytes:
    """LZ4 frame with the broken header checksum Kafka's magic-0 writer produced."""
    return _lz4_frame(data, broken_checksum=True)


def decompress_legacy_lz4(data) -> bytes:
    """Decompress a magic-0/1 LZ4 wrapper value, accepting the broken or the correct header checksum.

    The header checksum byte is ignored (as Java does for magic 0) by rewriting it to the correct
    value before handing the frame to the decoder; block data and any checksums are still verified.
    """
    buf = bytearray(data)
    if len(buf) < 7 or buf[:4] != _LZ4_MAGIC:
        raise CorruptRecordError("lz4: bad frame magic")
    hc_pos = 6 + (8 if buf[4] & 0x08 else 0)  # content size present -> 8 more descriptor bytes
    if len(buf) <= hc_pos:
        raise CorruptRecordError("lz4: truncated frame header")
    buf[hc_pos] = _lz4_header_checksum(bytes(buf[4:hc_pos]))
    try:
        return bytes(cramjam.lz4.decompress(bytes(buf)))
    except Exception as e:  # cramjam raises DecompressionError / ValueError
        raise CorruptRecordError(f"lz4: {e}") from None


def _snappy_xerial(data) -> bytes:
    out = [_XERIAL_HEADER]
    mv = memoryview(data)
    for start in range(0, len(mv), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(mv[start:start + _XERIAL_BLOCK]))
        out.append(_INT32.pack(len(block)))
        out.append(block)
    return b"".join(out)


def _snappy_decompress(data) -> bytes:
    mv = memoryview(data)
    if bytes(mv[:8]) != _XERIAL_MAGIC or len(mv) < 16:
        return bytes(cramjam.snappy.decompress_raw(mv))
    out = []
    pos, end = 16, len(mv)
    while pos < end:
        if pos + 4 > end:
            raise CorruptRecordError("snappy: truncated xerial block length")
        (n,) = _INT32.unpack_from(mv, pos)
        pos += 4
        if n < 0 or pos + n > end:
            raise CorruptRecordError("snappy: truncated xerial block")
        out.append(bytes(cramjam.snappy.decompress_raw(mv[pos:pos + n])))
        pos += n
    return b"".join(out)


def compress(codec: int, data) -> bytes:
    """Compress ``data`` the way Kafka's Java producer would for ``codec``."""
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        return bytes(cramjam.gzip.compress(data, level=_GZIP_LEVEL))
    if codec == SNAPPY:
        return _snappy_xerial(data)
    if codec == LZ4:
        return _lz4_frame(data, broken_checksum=False)
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data, level=_ZSTD_LEVEL))
    raise UnsupportedCompressionError(f"unknown compression codec id {codec}")


def decompress(codec: int, data) -> bytes:
    """Decompress ``data``; raises CorruptRecordError if the codec rejects it."""
    if codec == NONE:
        return bytes(data)
    if codec not in CODEC_NAMES:
        raise UnsupportedCompressionError(f"unknown compression codec id {codec}")
    try:
        if codec == GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec == SNAPPY:
            return _snappy_decompress(data)
        if codec == LZ4:
            return bytes(cramjam.lz4.decompress(data))
        # zstd: cramjam streams the frame, so a missing content size is fine.
        return bytes(cramjam.zstd.decompress(data))
    except CorruptRecordError:
        raise
    except Exception as e:  # every codec's own error type -> one protocol error
        raise CorruptRecordError(f"{CODEC_NAMES[codec]}: {e}") from None
