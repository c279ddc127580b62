"""Kafka's primitive encodings: fixed-width big-endian ints, (u)varints, strings, bytes.

Readers take ``(buf, pos)`` with ``buf`` a memoryview (or bytes) bounded to the frame and
return ``(value, new_pos)``; they never read past ``len(buf)`` and raise ``DecodeError``
on truncated or invalid input. Writers append ``bytes`` to a list of parts.
"""
from __future__ import annotations

import struct

from protocol.errors import DecodeError

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
UINT16 = struct.Struct(">H")
INT32 = struct.Struct(">i")
UINT32 = struct.Struct(">I")
INT64 = struct.Struct(">q")
FLOAT64 = struct.Struct(">d")


def read_uvarint(buf, pos: int) -> tuple[int, int]:
    """Unsigned LEB128 varint, at most 5 bytes (Kafka's unsigned varint is 32-bit)."""
    result = 0
    shift = 0
    n = len(buf)
    while True:
        if pos >= n:
            raise DecodeError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 28:
            raise DecodeError("varint is too long")


def read_uvarlong(buf, pos: int) -> tuple[int, int]:
    """Unsigned LEB128 varlong, at most 10 bytes."""
    result = 0
    shift = 0
    n = len(buf)
    while True:
        if pos >= n:
            raise DecodeError("truncated varlong")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise DecodeError("varlong is too long")


def read_varint(buf, pos: int) -> tuple[int, int]:
    """Zig-zag signed varint (record fields)."""
    v, pos = read_uvarint(buf, pos)
    return (v >> 1) ^ -(v & 1), pos


def read_varlong(buf, pos: int) -> tuple[int, int]:
    v, pos = read_uvarlong(buf, pos)
    return (v >> 1) ^ -(v & 1), pos


def uvarint(v: int) -> bytes:
    if 0 <= v < 0x80:
        return _SMALL[v]
    if v < 0:
        raise ValueError("uvarint must be non-negative")
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


_SMALL = [bytes([i]) for i in range(0x80)]


def varint(v: int) -> bytes:
    """Zig-zag encode a signed int (32- or 64-bit) as a varint."""
    return uvarint((v << 1) ^ (v >> 63)) if v < 0 else uvarint(v << 1)


def size_of_varint(v: int) -> int:
    z = (v << 1) ^ (v >> 63) if v < 0 else v << 1
    n = 1
    while z >= 0x80:
        z >>= 7
        n += 1
    return n
