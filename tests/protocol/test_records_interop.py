"""Cross-checks against real clients' own record codecs (kafka-python 3.x and aiokafka).

(a) batches and message sets built by the clients' builders decode with ours to the same
records; (b) what we build is read back by the clients' readers, CRCs validated.
kafka-python's snappy/lz4/zstd need python-snappy, lz4, zstandard (and xxhash for magic-0
lz4) in the venv; aiokafka uses cramjam.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.records import build_batch, build_message_set, decode_batch, decode_message_set, down_convert
from protocol.records import compression as codecs

from aiokafka.record.default_records import DefaultRecordBatchBuilder as AioBatchBuilder
from aiokafka.record.legacy_records import LegacyRecordBatchBuilder as AioLegacyBuilder
from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords
from kafka.record.default_records import DefaultRecordBatchBuilder as KpBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder as KpLegacyBuilder
from kafka.record.memory_records import MemoryRecords as KpMemoryRecords

CODECS = [codecs.NONE, codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD]
LEGACY_CODECS = [codecs.NONE, codecs.GZIP, codecs.SNAPPY, codecs.LZ4]

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

blobs = st.none() | st.binary(max_size=300)
headers_st = st.lists(st.tuples(st.text(max_size=8), st.binary(max_size=16) | st.none()), max_size=3)
records_st = st.lists(st.tuples(blobs, blobs, st.integers(0, 2 ** 41), headers_st), min_size=1, max_size=20)
legacy_records_st = st.lists(st.tuples(blobs, blobs, st.integers(0, 2 ** 41)), min_size=1, max_size=20)

# A value big enough to span several lz4 (64 KiB) and xerial snappy (32 KiB) blocks.
BIG = bytes(range(256)) * 800


def _legacy_client_records(memory_records_cls, buf):
    out = []
    mr = memory_records_cls(bytes(buf))
    while mr.has_next():
        batch = mr.next_batch()
        assert batch.validate_crc()
        for r in batch:
            # kafka-python checks each inner message's CRC; aiokafka's records have no such check
            # (its batch-level validate_crc above covers the shallow message / wrapper)
            if hasattr(r, "validate_crc"):
                assert r.validate_crc()
            out.append((r.offset, r.timestamp, r.key, r.value))
    return out


# ---------------------------------------------------------------------------------------------
# (a) client-built -> ours

@pytest.mark.parametrize("builder_cls", [KpBatchBuilder, AioBatchBuilder], ids=["kafka-python", "aiokafka"])
@pytest.mark.parametrize("codec", CODECS)
@SETTINGS
@given(records=records_st, txn=st.booleans())
def test_client_built_batch_decodes(builder_cls, codec, records, txn):
    pid, epoch, seq = (4711, 3, 17) if txn else (-1, -1, -1)
    builder = builder_cls(magic=2, compression_type=codec, is_transactional=txn, producer_id=pid,
                          producer_epoch=epoch, base_sequence=seq, batch_size=1 << 30)
    for i, (k, v, t, h) in enumerate(records):
        assert builder.append(i, timestamp=t, key=k, value=v, headers=h) is not None
    buf = bytes(builder.build())
    h, recs = decode_batch(buf)
    # the clients fall back to no compression when it does not shrink the records
    assert h.compression in (codec, codecs.NONE) and h.is_transactional == txn
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (pid, epoch, seq)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in recs] == [
        (i, t, k, v, list(hd)) for i, (k, v, t, hd) in enumerate(records)]


@pytest.mark.parametrize("builder_cls", [KpBatchBuilder, AioBatchBuilder], ids=["kafka-python", "aiokafka"])
@pytest.mark.parametrize("codec", CODECS)
def test_client_built_big_batch_decodes(builder_cls, codec):
    builder = builder_cls(magic=2, compression_type=codec, is_transactional=False, producer_id=-1,
                          producer_epoch=-1, base_sequence=-1, batch_size=1 << 30)
    for i in range(3):
        builder.append(i, timestamp=1000 + i, key=b"k%d" % i, value=BIG, headers=[])
    h, recs = decode_batch(bytes(builder.build()))
    assert h.compression == codec
    assert [(r.offset, r.value) for r in recs] == [(i, BIG) for i in range(3)]


# aiokafka refuses to write magic-0 LZ4 ("not supported for broker version 0.8/0.9");
# kafka-python writes it with the broken header checksum, which is the case that matters.
LEGACY_BUILD_CASES = [
    pytest.param(cls, magic, codec, id=f"{name}-v{magic}-{codecs.CODEC_NAMES[codec]}")
    for name, cls in (("kafka-python", KpLegacyBuilder), ("aiokafka", AioLegacyBuilder))
    for magic in (0, 1) for codec in LEGACY_CODECS
    if not (cls is AioLegacyBuilder and magic == 0 and codec == codecs.LZ4)
]


@pytest.mark.parametrize("builder_cls,magic,codec", LEGACY_BUILD_CASES)
@SETTINGS
@given(records=legacy_records_st)
def test_client_built_message_set_decodes(builder_cls, magic, codec, records):
    builder = builder_cls(magic=magic, compression_type=codec, batch_size=1 << 30)
    for i, (k, v, t) in enumerate(records):
        assert builder.append(i, timestamp=t, key=k, value=v) is not None
    msgs = decode_message_set(bytes(builder.build()))
    assert [(m.key, m.value) for m in msgs] == [(k, v) for k, v, _t in records]
    if magic == 1:
        assert [m.timestamp for m in msgs] == [t for _k, _v, t in records]
        # the clients write wrapper offset 0 with relative inner offsets 0..n-1 (the broker
        # assigns real ones), so only the spacing is meaningful here
        assert [m.offset - msgs[0].offset for m in msgs] == list(range(len(records)))
    else:
        assert [m.offset for m in msgs] == list(range(len(records)))
        assert all(m.timestamp == -1 for m in msgs)


# ---------------------------------------------------------------------------------------------
# (b) ours -> client readers

@pytest.mark.parametrize("reader", [KpMemoryRecords, AioMemoryRecords], ids=["kafka-python", "aiokafka"])
@pytest.mark.parametrize("codec", CODECS)
@SETTINGS
@given(records=records_st, base_offset=st.integers(0, 2 ** 40))
def test_our_batch_reads_in_client(reader, codec, records, base_offset):
    buf = build_batch([(k, v, t, h) for k, v, t, h in records], base_offset=base_offset, compression=codec,
                      producer_id=9, producer_epoch=1, base_sequence=5)
    buf += build_batch([(b"x", b"y", 7)], base_offset=base_offset + len(records), compression=codec,
                       log_append_time=12345)
    mr = reader(buf)
    got = []
    while mr.has_next():
        batch = mr.next_batch()
        assert batch.validate_crc()
        assert batch.compression_type == codec
        got += [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]
    assert got == [(base_offset + i, t, k, v, list(hd)) for i, (k, v, t, hd) in enumerate(records)] + [
        (base_offset + len(records), 12345, b"x", b"y", [])]


@pytest.mark.parametrize("reader", [KpMemoryRecords, AioMemoryRecords], ids=["kafka-python", "aiokafka"])
@pytest.mark.parametrize("codec", CODECS)
def test_our_big_batch_reads_in_client(reader, codec):
    buf = build_batch([(b"k", BIG, 1), (None, BIG[::-1], 2)], compression=codec)
    mr = reader(buf)
    batch = mr.next_batch()
    assert batch.validate_crc()
    assert [r.value for r in batch] == [BIG, BIG[::-1]]


# aiokafka cannot read magic-0 LZ4 at all (same refusal as on the build side).
LEGACY_READ_CASES = [
    pytest.param(cls, magic, codec, id=f"{name}-v{magic}-{codecs.CODEC_NAMES[codec]}")
    for name, cls in (("kafka-python", KpMemoryRecords), ("aiokafka", AioMemoryRecords))
    for magic in (0, 1) for codec in LEGACY_CODECS
    if not (cls is AioMemoryRecords and magic == 0 and codec == codecs.LZ4)
]


@pytest.mark.parametrize("reader,magic,codec", LEGACY_READ_CASES)
@SETTINGS
@given(records=legacy_records_st, base_offset=st.integers(0, 2 ** 40))
def test_our_message_set_reads_in_client(reader, magic, codec, records, base_offset):
    ms = build_message_set(records, magic=magic, compression=codec, base_offset=base_offset)
    got = _legacy_client_records(reader, ms)
    assert got == [(base_offset + i, t if magic == 1 else None, k, v) for i, (k, v, t) in enumerate(records)]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
def test_down_converted_reads_in_kafka_python(magic, codec):
    buf = (build_batch([(b"a", b"1", 10, [("h", b"dropped")]), (None, None, 11)], base_offset=5, compression=codec)
           + build_batch([(b"b", BIG, 12)], base_offset=9, compression=codec, log_append_time=99))
    got = _legacy_client_records(KpMemoryRecords, down_convert(buf, magic))
    assert got == [(5, 10 if magic else None, b"a", b"1"), (6, 11 if magic else None, None, None),
                   (9, 99 if magic else None, b"b", BIG)]


def test_legacy_lz4_header_matches_kafka_python_old_kafka_encoder():
    """kafka-python's lz4_encode_old_kafka reproduces Java's magic-0 writer: same descriptor and broken HC."""
    from kafka.codec import lz4_decode_old_kafka, lz4_encode_old_kafka
    data = b"legacy lz4 " * 500
    assert codecs.compress_legacy_lz4(data)[:7] == lz4_encode_old_kafka(data)[:7]
    assert codecs.decompress_legacy_lz4(lz4_encode_old_kafka(data)) == data
    assert lz4_decode_old_kafka(codecs.compress_legacy_lz4(data)) == data
