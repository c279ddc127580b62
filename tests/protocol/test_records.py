"""Record formats: magic-2 batches, varint records, legacy message sets, codecs, conversion.

Property tests check build -> decode against the plain input (the model is the list of
records itself); byte-level tests pin the wire details Java clients depend on.
"""
from __future__ import annotations

import struct
import zlib

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.errors import CorruptRecordError, UnsupportedCompressionError
from protocol.records import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    HEADER,
    HEADER_SIZE,
    LegacyMessage,
    Record,
    build_batch,
    build_message_set,
    check_crc,
    compute_crc,
    control_record_type,
    decode_batch,
    decode_message_set,
    down_convert,
    end_txn_marker,
    iter_batch_positions,
    iter_record_timestamps,
    parse_end_txn_marker,
    peek_magic,
    read_header,
    rewrite_crc,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
    up_convert,
)
from protocol.records import compression as codecs
from protocol.records.record import encode_varint, size_of_varint, _read_varint_slow

CODECS = [codecs.NONE, codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD]
LEGACY_CODECS = [codecs.NONE, codecs.GZIP, codecs.SNAPPY, codecs.LZ4]

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

blobs = st.none() | st.binary(max_size=64)
headers_st = st.lists(st.tuples(st.text(max_size=8), blobs), max_size=3)
record_st = st.tuples(blobs, blobs, st.integers(-(2 ** 20), 2 ** 20), headers_st)
records_st = st.lists(record_st, min_size=1, max_size=20)


def _tuples(recs, base_ts):
    return [(k, v, base_ts + dt, h) for k, v, dt, h in recs]


# ---------------------------------------------------------------------------------------------
# batch header

def test_header_layout_constants():
    assert HEADER.size == HEADER_SIZE == 61
    b = build_batch([(b"k", b"v", 5)], base_offset=3, partition_leader_epoch=9,
                    producer_id=77, producer_epoch=2, base_sequence=11)
    # Fixed offsets Java relies on: magic at 16, CRC at 17, attributes at 21.
    assert b[16] == 2
    assert struct.unpack_from(">I", b, 17)[0] == crc32c.crc32c(b[21:])
    h = read_header(b)
    assert (h.base_offset, h.partition_leader_epoch, h.producer_id, h.producer_epoch, h.base_sequence) == (3, 9, 77, 2, 11)
    assert h.size == len(b) and h.batch_length == len(b) - 12
    assert h.last_offset == 3 and h.next_offset == 4 and h.records_count == 1


@SETTINGS
@given(records=records_st, codec=st.sampled_from(CODECS), base_offset=st.integers(0, 2 ** 62),
       base_ts=st.integers(0, 2 ** 42), pid=st.integers(-1, 2 ** 62), epoch=st.integers(-1, 2 ** 15 - 1),
       seq=st.integers(-1, 2 ** 31 - 1), txn=st.booleans(), leader_epoch=st.integers(-1, 2 ** 31 - 1))
def test_batch_round_trip(records, codec, base_offset, base_ts, pid, epoch, seq, txn, leader_epoch):
    raw = _tuples(records, base_ts)
    b = build_batch(raw, base_offset=base_offset, compression=codec, producer_id=pid, producer_epoch=epoch,
                    base_sequence=seq, is_transactional=txn, partition_leader_epoch=leader_epoch)
    h, decoded = decode_batch(b)
    assert h.compression == codec and h.magic == 2 and h.timestamp_type == 0
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (pid, epoch, seq)
    assert h.is_transactional == txn and not h.is_control
    assert h.partition_leader_epoch == leader_epoch
    assert h.records_count == len(raw) and h.last_offset == base_offset + len(raw) - 1
    assert h.base_timestamp == raw[0][2]
    assert h.max_timestamp == max(-1, max(t for _k, _v, t, _h in raw))
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in decoded] == [
        (base_offset + i, t, k, v, list(hd)) for i, (k, v, t, hd) in enumerate(raw)]
    assert list(iter_record_timestamps(b)) == [(r.offset, r.timestamp) for r in decoded]
    assert check_crc(b, 0, h)


def test_batch_at_nonzero_position_and_memoryview():
    a = build_batch([(b"a", b"1", 1)], base_offset=0)
    b = build_batch([(b"b", b"2", 2), (None, b"3", 3)], base_offset=1, compression=codecs.GZIP)
    buf = memoryview(a + b)
    h, recs = decode_batch(buf, len(a))
    assert h.base_offset == 1 and [r.value for r in recs] == [b"2", b"3"]
    assert list(iter_record_timestamps(buf, len(a))) == [(1, 2), (2, 3)]


def test_records_with_offset_gaps_and_preserved_last_offset():
    """Like the cleaner's retained-records batch: offsets keep their gaps, last offset is kept."""
    recs = [Record(100, 10, b"a", b"1"), Record(103, 12, b"b", None), Record(104, 11, b"c", b"3", [("h", b"x")])]
    b = build_batch(recs, base_offset=100, last_offset_delta=7, compression=codecs.LZ4)
    h, out = decode_batch(b)
    assert [r.offset for r in out] == [100, 103, 104]
    assert h.last_offset == 107 and h.max_timestamp == 12
    assert out == recs
    empty = build_batch([], base_offset=50, last_offset_delta=4, producer_id=5, producer_epoch=1,
                        base_sequence=10, max_timestamp=999)
    h, out = decode_batch(empty)
    assert out == [] and h.records_count == 0 and h.last_offset == 54 and h.max_timestamp == 999
    assert h.last_sequence == 14
    with pytest.raises(ValueError):
        build_batch([Record(5, 0, None, None)], base_offset=6)
    with pytest.raises(ValueError):
        build_batch([Record(7, 0, None, None), Record(7, 0, None, None)], base_offset=6)


def test_build_with_log_append_time():
    b = build_batch([(b"k", b"v", 5), (b"k", b"w", 9)], log_append_time=1_000)
    h, recs = decode_batch(b)
    assert h.timestamp_type == 1 and h.max_timestamp == 1_000
    assert [r.timestamp for r in recs] == [1_000, 1_000]


def test_delete_horizon_batch():
    b = build_batch([(b"k", None, 500), (b"j", None, 700)], delete_horizon_ms=10_000)
    h, recs = decode_batch(b)
    assert h.has_delete_horizon and h.base_timestamp == 10_000 and h.max_timestamp == 700
    assert [r.timestamp for r in recs] == [500, 700]


def test_records_count_and_size_mismatches_are_corrupt():
    b = bytearray(build_batch([(b"k", b"v", 1), (b"k2", b"v2", 2)]))
    for count in (1, 3, -1):
        bad = bytearray(b)
        struct.pack_into(">i", bad, 57, count)
        rewrite_crc(bad, 0)  # CRC valid: only the framing is wrong
        with pytest.raises(CorruptRecordError):
            decode_batch(bad)
    # a declared record length that disagrees with its body
    bad = bytearray(b)
    bad[61] += 2
    rewrite_crc(bad, 0)
    with pytest.raises(CorruptRecordError):
        decode_batch(bad)
    with pytest.raises(CorruptRecordError):
        list(iter_record_timestamps(bytes(bad)))


@SETTINGS
@given(records=records_st, codec=st.sampled_from(CODECS), data=st.data())
def test_flipped_byte_fails_crc(records, codec, data):
    b = build_batch(_tuples(records, 1_700_000_000_000), compression=codec)
    pos = data.draw(st.integers(16, len(b) - 1), label="pos")
    flip = data.draw(st.integers(1, 255), label="xor")
    bad = bytearray(b)
    bad[pos] ^= flip
    with pytest.raises(CorruptRecordError):
        decode_batch(bytes(bad))
    if pos >= 17:   # past the magic the header still parses, and check_crc says no
        assert not check_crc(bad, 0, read_header(bad))


def test_fields_outside_crc_can_change_without_breaking_it():
    b = bytearray(build_batch([(b"k", b"v", 1)] * 3, compression=codecs.SNAPPY))
    crc_before = read_header(b).crc
    set_base_offset(b, 0, 12345)
    set_partition_leader_epoch(b, 0, 42)
    h = read_header(b)
    assert h.base_offset == 12345 and h.partition_leader_epoch == 42 and h.crc == crc_before
    assert check_crc(b, 0, h)
    assert [r.offset for r in decode_batch(b)[1]] == [12345, 12346, 12347]


@pytest.mark.parametrize("codec", CODECS)
def test_set_log_append_time_keeps_crc_valid(codec):
    b = bytearray(build_batch([(b"k", b"v", 5), (b"k", b"w", 7)], compression=codec, base_offset=10))
    other = build_batch([(b"x", b"y", 1)], base_offset=12)
    buf = bytearray(b + other)
    set_log_append_time(buf, len(b), 999)     # patch the second batch in place
    set_log_append_time(buf, 0, 777)
    h, recs = decode_batch(buf, 0)
    assert h.timestamp_type == 1 and h.max_timestamp == 777 and h.base_timestamp == 5
    assert h.compression == codec
    assert [r.timestamp for r in recs] == [777, 777]
    assert list(iter_record_timestamps(buf, 0)) == [(10, 777), (11, 777)]
    h2, recs2 = decode_batch(buf, len(b))
    assert check_crc(buf, len(b), h2) and recs2[0].timestamp == 999


def test_iter_batch_positions_stops_at_torn_tail():
    batches = [build_batch([(b"k", b"v" * i, i)] * (i + 1), base_offset=10 * i, compression=i % 5) for i in range(4)]
    buf = b"".join(batches)
    starts = [sum(len(x) for x in batches[:i]) for i in range(len(batches) + 1)]
    for cut in range(len(buf) + 1):
        got = [(p, h.base_offset) for p, h in iter_batch_positions(buf, 0, cut)]
        complete = [i for i in range(len(batches)) if starts[i + 1] <= cut]
        assert got == [(starts[i], 10 * i) for i in complete]
        # with end=None on a truncated buffer too
        assert [p for p, _h in iter_batch_positions(buf[:cut])] == [starts[i] for i in complete]
    # walking from the middle
    assert [p for p, _ in iter_batch_positions(buf, starts[2])] == starts[2:4]


def test_iter_batch_positions_rejects_impossible_length_and_magic():
    b = bytearray(build_batch([(b"k", b"v", 1)]))
    bad = bytearray(b)
    struct.pack_into(">i", bad, 8, 48)
    with pytest.raises(CorruptRecordError):
        list(iter_batch_positions(bad))
    with pytest.raises(CorruptRecordError):
        read_header(bad)
    zeros = bytes(64)   # e.g. a preallocated, never-written segment tail
    with pytest.raises(CorruptRecordError):
        list(iter_batch_positions(b + zeros))
    bad = bytearray(b)
    bad[16] = 1
    with pytest.raises(CorruptRecordError):
        list(iter_batch_positions(bad))
    with pytest.raises(CorruptRecordError):
        read_header(bad)
    with pytest.raises(CorruptRecordError):
        read_header(b[:60])


def test_peek_magic():
    assert peek_magic(build_batch([(None, b"v", 0)])) == 2
    assert peek_magic(build_message_set([(None, b"v", 0)], magic=0)) == 0
    ms = build_message_set([(None, b"v", 0)], magic=1)
    assert peek_magic(b"xx" + ms, 2) == 1
    with pytest.raises(CorruptRecordError):
        peek_magic(b"\x00" * 16)


def test_compute_crc_matches_crc32c_of_tail():
    b = build_batch([(b"k", b"v", 1)])
    assert compute_crc(b, 0, len(b)) == crc32c.crc32c(b[21:]) == read_header(b).crc
    # a batch cut short never passes
    assert not check_crc(b[:-1], 0, read_header(b))


# ---------------------------------------------------------------------------------------------
# varints and control records

@given(st.integers(-(2 ** 63), 2 ** 63 - 1))
def test_varint_round_trip(v):
    enc = encode_varint(v)
    assert len(enc) == size_of_varint(v) <= 10
    assert _read_varint_slow(enc, 0) == (v, len(enc))


def test_varint_known_encodings():
    # zigzag: 0->0, -1->1, 1->2, -64->127, 64->128 (two bytes)
    assert [encode_varint(v) for v in (0, -1, 1, -64, 64, 300)] == [b"\x00", b"\x01", b"\x02", b"\x7f", b"\x80\x01", b"\xd8\x04"]


@pytest.mark.parametrize("commit", [True, False])
def test_control_batch(commit):
    marker = end_txn_marker(commit, coordinator_epoch=7, timestamp=123, offset=40)
    b = build_batch([marker], base_offset=40, is_control=True, is_transactional=True,
                    producer_id=9, producer_epoch=3)
    h, recs = decode_batch(b)
    assert h.is_control and h.is_transactional and h.producer_id == 9 and h.producer_epoch == 3
    assert recs[0].key == struct.pack(">hh", 0, CONTROL_COMMIT if commit else CONTROL_ABORT)
    assert control_record_type(recs[0].key) == (CONTROL_COMMIT if commit else CONTROL_ABORT)
    assert parse_end_txn_marker(recs[0]) == (commit, 7)


def test_unknown_codec_in_batch():
    b = bytearray(build_batch([(b"k", b"v", 1)]))
    struct.pack_into(">h", b, 21, 5)
    rewrite_crc(b, 0)
    with pytest.raises(UnsupportedCompressionError):
        decode_batch(b)


# ---------------------------------------------------------------------------------------------
# compression

@settings(max_examples=40, deadline=None)
@given(data=st.binary(max_size=200_000) | st.binary(max_size=40).map(lambda b: b * 5000),
       codec=st.sampled_from(CODECS))
def test_codec_round_trip(data, codec):
    assert codecs.decompress(codec, codecs.compress(codec, data)) == data


def test_snappy_writes_xerial_and_reads_raw():
    data = bytes(range(256)) * 500  # > one 32 KiB xerial block
    c = codecs.compress(codecs.SNAPPY, data)
    assert c[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    import cramjam
    # blocks: int32 length + raw snappy, each holding at most 32 KiB
    pos, out = 16, b""
    while pos < len(c):
        (n,) = struct.unpack_from(">i", c, pos)
        block = bytes(cramjam.snappy.decompress_raw(c[pos + 4:pos + 4 + n]))
        assert len(block) <= 32 * 1024
        out += block
        pos += 4 + n
    assert out == data
    assert codecs.decompress(codecs.SNAPPY, bytes(cramjam.snappy.compress_raw(data))) == data


def test_lz4_frame_is_what_java_reads():
    """Java's Lz4BlockInputStream needs independent blocks; we write FLG 0x60, BD 0x40 like Kafka."""
    data = bytes(range(256)) * 1000
    c = codecs.compress(codecs.LZ4, data)
    assert c[:6] == b"\x04\x22\x4d\x18\x60\x40"
    assert c[6] == codecs._lz4_header_checksum(b"\x60\x40")
    import cramjam
    assert bytes(cramjam.lz4.decompress(c)) == data
    # an incompressible block is stored raw with the high bit
    rnd = bytes((i * 2654435761 >> 13) & 0xFF for i in range(100_000))
    assert codecs.decompress(codecs.LZ4, codecs.compress(codecs.LZ4, rnd)) == rnd


def test_xxh32_matches_lz4_library():
    import cramjam
    for data in (b"", b"x", b"hello", b"0123456789abcde"):
        frame = bytes(cramjam.lz4.compress(data))
        flg = frame[4]
        desc_len = 2 + (8 if flg & 0x08 else 0)
        assert frame[4 + desc_len] == codecs._lz4_header_checksum(frame[4:4 + desc_len])
    # published xxh32 test vectors (seed 0)
    assert codecs._xxh32_short(b"") == 0x02CC5D05
    assert codecs._xxh32_short(b"a") == 0x550D7456
    assert codecs._xxh32_short(b"abc") == 0x32D153FF


def test_legacy_lz4_broken_checksum():
    data = b"kafka " * 1000
    broken = codecs.compress_legacy_lz4(data)
    assert broken[6] == codecs._lz4_header_checksum(b"\x04\x22\x4d\x18\x60\x40")
    assert broken[6] != codecs._lz4_header_checksum(b"\x60\x40")
    with pytest.raises(CorruptRecordError):
        codecs.decompress(codecs.LZ4, broken)       # a strict reader rejects it...
    assert codecs.decompress_legacy_lz4(broken) == data   # ...the legacy path accepts both
    assert codecs.decompress_legacy_lz4(codecs.compress(codecs.LZ4, data)) == data


def test_zstd_frame_without_content_size():
    data = b"hello" * 100
    # hand-made frame: no content size, window 1 KiB, one raw last block
    frame = b"\x28\xb5\x2f\xfd" + b"\x00" + b"\x00" + (1 | (len(data) << 3)).to_bytes(3, "little") + data
    assert codecs.decompress(codecs.ZSTD, frame) == data


@pytest.mark.parametrize("codec", CODECS[1:])
def test_garbage_is_corrupt_record(codec):
    with pytest.raises(CorruptRecordError):
        codecs.decompress(codec, b"\x00\x01garbage" * 10)


def test_unknown_codec_ids():
    for codec in (5, 6, 7):
        with pytest.raises(UnsupportedCompressionError):
            codecs.compress(codec, b"x")
        with pytest.raises(UnsupportedCompressionError):
            codecs.decompress(codec, b"x")


# ---------------------------------------------------------------------------------------------
# legacy message sets

legacy_records_st = st.lists(st.tuples(blobs, blobs, st.integers(0, 2 ** 42)), min_size=1, max_size=15)


@SETTINGS
@given(records=legacy_records_st, magic=st.sampled_from([0, 1]), codec=st.sampled_from(LEGACY_CODECS),
       base_offset=st.integers(0, 2 ** 40), ts_type=st.sampled_from([0, 1]))
def test_legacy_round_trip(records, magic, codec, base_offset, ts_type):
    ms = build_message_set(records, magic=magic, compression=codec, base_offset=base_offset, timestamp_type=ts_type)
    msgs = decode_message_set(ms)
    assert [m.offset for m in msgs] == list(range(base_offset, base_offset + len(records)))
    assert [(m.key, m.value) for m in msgs] == [(k, v) for k, v, _t in records]
    assert all(m.magic == magic and m.crc_ok and m.compression == 0 for m in msgs)
    if magic == 0:
        assert all(m.timestamp == -1 and m.timestamp_type == 0 for m in msgs)
    elif codec and ts_type == 1:
        # a LogAppendTime wrapper's timestamp wins for every inner message
        wrapper_ts = max(t for _k, _v, t in records)
        assert all(m.timestamp == wrapper_ts and m.timestamp_type == 1 for m in msgs)
    else:
        assert [m.timestamp for m in msgs] == [t for _k, _v, t in records]
        assert all(m.timestamp_type == ts_type for m in msgs)


def _shallow_messages(ms):
    out, pos = [], 0
    while pos < len(ms):
        offset, size = struct.unpack_from(">qi", ms, pos)
        out.append((offset, ms[pos:pos + 12 + size]))
        pos += 12 + size
    return out


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_wrapper_offsets(magic):
    """Magic 1 inner offsets are relative (last = wrapper offset); magic 0 inner offsets are absolute."""
    ms = build_message_set([(b"a", b"1", 5), (b"b", b"2", 6), (b"c", b"3", 7)], magic=magic,
                           compression=codecs.GZIP, base_offset=100)
    (wrapper_offset, wrapper), = _shallow_messages(ms)
    assert wrapper_offset == 102
    value_pos = 12 + 4 + 2 + (8 if magic else 0) + 4
    (vlen,) = struct.unpack_from(">i", wrapper, value_pos)
    inner = codecs.decompress(codecs.GZIP, wrapper[value_pos + 4:value_pos + 4 + vlen])
    inner_offsets = [o for o, _m in _shallow_messages(inner)]
    assert inner_offsets == ([0, 1, 2] if magic == 1 else [100, 101, 102])
    assert [m.offset for m in decode_message_set(ms)] == [100, 101, 102]


def test_legacy_magic1_relative_offsets_with_nonzero_first_inner():
    """Java computes inner absolute = wrapper - last inner + inner, whatever the first inner offset is."""
    inner = b"".join(build_message_set([(b"k", b"v", 1)], magic=1, base_offset=o) for o in (3, 4, 6))
    from protocol.records.legacy import _encode_message
    ms = _encode_message(50, 1, codecs.SNAPPY, 1, None, codecs.compress(codecs.SNAPPY, inner))
    assert [m.offset for m in decode_message_set(ms)] == [47, 48, 50]


def test_legacy_magic0_lz4_uses_broken_checksum_and_magic1_correct():
    ms0 = build_message_set([(b"k", b"v", 1)] * 3, magic=0, compression=codecs.LZ4)
    ms1 = build_message_set([(b"k", b"v", 1)] * 3, magic=1, compression=codecs.LZ4)
    v0 = ms0[12 + 4 + 2 + 4 + 4:]
    v1 = ms1[12 + 4 + 2 + 8 + 4 + 4:]
    assert v0[6] == codecs._lz4_header_checksum(v0[:6])
    assert v1[6] == codecs._lz4_header_checksum(v1[4:6])
    assert len(decode_message_set(ms0)) == len(decode_message_set(ms1)) == 3


def test_legacy_corruption_and_partial_tail():
    ms = build_message_set([(b"k", b"v", 1), (b"k2", b"v2", 2)], magic=1, base_offset=10)
    first_len = 12 + struct.unpack_from(">i", ms, 8)[0]
    # partial tail: stops after the complete messages
    for cut in range(len(ms)):
        got = decode_message_set(ms[:cut])
        assert [m.offset for m in got] == ([10] if cut >= first_len else [])
    bad = bytearray(ms)
    bad[first_len - 1] ^= 0xFF   # last byte of the first message's value
    with pytest.raises(CorruptRecordError):
        decode_message_set(bytes(bad))
    msgs = decode_message_set(bytes(bad), verify_crc=False)
    assert [m.crc_ok for m in msgs] == [False, True]
    # size below the v0 minimum
    bad = bytearray(ms)
    struct.pack_into(">i", bad, 8, 13)
    with pytest.raises(CorruptRecordError):
        decode_message_set(bytes(bad))


def test_legacy_rejects_zstd_nesting_and_empty_wrappers():
    from protocol.records.legacy import _encode_message
    with pytest.raises(UnsupportedCompressionError):
        build_message_set([(b"k", b"v", 1)], magic=1, compression=codecs.ZSTD)
    zstd_wrapper = _encode_message(0, 1, codecs.ZSTD, 1, None, codecs.compress(codecs.ZSTD, b"x"))
    with pytest.raises(UnsupportedCompressionError):
        decode_message_set(zstd_wrapper)
    inner = build_message_set([(b"k", b"v", 1)], magic=1, compression=codecs.GZIP)
    nested = _encode_message(0, 1, codecs.GZIP, 1, None, codecs.compress(codecs.GZIP, inner))
    with pytest.raises(CorruptRecordError):
        decode_message_set(nested)
    empty = _encode_message(0, 1, codecs.GZIP, 1, None, codecs.compress(codecs.GZIP, b""))
    with pytest.raises(CorruptRecordError):
        decode_message_set(empty)
    mismatch = _encode_message(0, 1, codecs.GZIP, 1, None,
                               codecs.compress(codecs.GZIP, build_message_set([(b"k", b"v", 1)], magic=0)))
    with pytest.raises(CorruptRecordError):
        decode_message_set(mismatch)


def test_legacy_message_crc_is_zlib_crc32_of_magic_onwards():
    ms = build_message_set([(b"key", b"value", 1234)], magic=1)
    (crc,) = struct.unpack_from(">I", ms, 12)
    assert crc == zlib.crc32(ms[16:])
    assert ms[16] == 1 and struct.unpack_from(">q", ms, 18)[0] == 1234


# ---------------------------------------------------------------------------------------------
# conversion

@SETTINGS
@given(records=legacy_records_st, magic=st.sampled_from([0, 1]), codec=st.sampled_from(LEGACY_CODECS))
def test_up_convert(records, magic, codec):
    ms = build_message_set(records, magic=magic, compression=codec, base_offset=1000)
    h, recs = decode_batch(up_convert(ms))
    assert h.compression == codec and h.base_offset == 0 and h.timestamp_type == 0
    assert [r.offset for r in recs] == list(range(len(records)))
    assert [(r.key, r.value, r.headers) for r in recs] == [(k, v, []) for k, v, _t in records]
    assert [r.timestamp for r in recs] == ([t for _k, _v, t in records] if magic == 1 else [-1] * len(records))


def test_up_convert_log_append_time_and_codec_override():
    ms = build_message_set([(b"k", b"v", 5)] * 2, magic=1, compression=codecs.GZIP)
    h, recs = decode_batch(up_convert(ms, timestamp_type=1, now_ms=4242, compression=codecs.ZSTD))
    assert h.timestamp_type == 1 and h.compression == codecs.ZSTD and h.max_timestamp == 4242
    assert [r.timestamp for r in recs] == [4242, 4242]
    with pytest.raises(ValueError):
        up_convert(ms, timestamp_type=1)
    bad = bytearray(ms)
    bad[-1] ^= 1
    with pytest.raises(CorruptRecordError):
        up_convert(bytes(bad))


@SETTINGS
@given(batches=st.lists(st.tuples(records_st, st.sampled_from(LEGACY_CODECS), st.booleans()), min_size=1, max_size=4),
       magic=st.sampled_from([0, 1]))
def test_down_convert(batches, magic):
    buf, expected, offset = b"", [], 0
    for recs, codec, log_append in batches:
        raw = _tuples(recs, 1_600_000_000_000)
        b = build_batch(raw, base_offset=offset, compression=codec,
                        log_append_time=1_700_000_000_000 if log_append else None)
        buf += b
        ts = [1_700_000_000_000 if log_append else t for _k, _v, t, _h in raw]
        expected += [(offset + i, k, v, ts[i]) for i, (k, v, _t, _h) in enumerate(raw)]
        offset += len(raw) + 3  # gaps between batches, as after compaction
    # a control batch in the middle disappears; a torn tail is ignored
    control = build_batch([end_txn_marker(True, 1, 5, offset)], base_offset=offset, is_control=True,
                          is_transactional=True, producer_id=1, producer_epoch=0)
    buf += control + build_batch([(b"x", b"y", 1)], base_offset=offset + 1)[:-3]
    msgs = decode_message_set(down_convert(buf, magic))
    assert [(m.offset, m.key, m.value) for m in msgs] == [(o, k, v) for o, k, v, _t in expected]
    assert all(m.magic == magic for m in msgs)
    if magic == 1:
        assert [m.timestamp for m in msgs] == [t for *_x, t in expected]
    else:
        assert all(m.timestamp == -1 for m in msgs)


def test_down_convert_keeps_codec_and_rejects_zstd():
    b = build_batch([(b"k", b"v", 1)] * 3, base_offset=7, compression=codecs.SNAPPY)
    ms = down_convert(b, 1)
    assert ms[12 + 4 + 1] & 0x07 == codecs.SNAPPY       # one snappy wrapper
    assert struct.unpack_from(">q", ms, 0)[0] == 9        # wrapper offset = last offset
    with pytest.raises(UnsupportedCompressionError):
        down_convert(build_batch([(b"k", b"v", 1)], compression=codecs.ZSTD), 1)


def test_legacy_message_fields():
    m = LegacyMessage(1, 1, 0x08 | codecs.GZIP, 5, None, b"v")
    assert m.compression == codecs.GZIP and m.timestamp_type == 1 and m.crc_ok


# ---------------------------------------------------------------------------------------------
# robustness: malformed input raises protocol errors only (a broker must not crash on it)

@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=records_st, codec=st.sampled_from(CODECS), data=st.data())
def test_mutated_batches_raise_only_protocol_errors(records, codec, data):
    b = bytearray(build_batch(_tuples(records, 1_000), compression=codec))
    for _ in range(data.draw(st.integers(1, 4), label="n_mutations")):
        pos = data.draw(st.integers(12, len(b) - 1), label="pos")
        b[pos] = data.draw(st.integers(0, 255), label="byte")
    cut = data.draw(st.integers(0, len(b)), label="cut")
    buf = bytes(b[:cut]) if data.draw(st.booleans(), label="truncate") else bytes(b)
    for fn in (lambda: decode_batch(buf, verify_crc=False), lambda: list(iter_record_timestamps(buf)),
               lambda: list(iter_batch_positions(buf))):
        try:
            fn()
        except (CorruptRecordError, UnsupportedCompressionError):
            pass


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=legacy_records_st, magic=st.sampled_from([0, 1]), codec=st.sampled_from(LEGACY_CODECS),
       data=st.data())
def test_mutated_message_sets_raise_only_protocol_errors(records, magic, codec, data):
    b = bytearray(build_message_set(records, magic=magic, compression=codec))
    for _ in range(data.draw(st.integers(1, 4), label="n_mutations")):
        pos = data.draw(st.integers(0, len(b) - 1), label="pos")
        b[pos] = data.draw(st.integers(0, 255), label="byte")
    for fn in (lambda: decode_message_set(bytes(b), verify_crc=False), lambda: up_convert(bytes(b))):
        try:
            fn()
        except (CorruptRecordError, UnsupportedCompressionError):
            pass
