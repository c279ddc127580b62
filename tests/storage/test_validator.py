"""Tests for storage.validator, porting the invariants of Kafka's LogValidatorTest
(storage/src/test/java/org/apache/kafka/storage/internals/log/LogValidatorTest.java) and of
UnifiedLogTest.testCompactedTopicConstraints / testMessageSizeCheck."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from protocol.records import batch as B
from protocol.records.record import build_batch, decode_batch
from storage.clock import ManualClock
from storage.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    RecordTooLargeError,
)
from storage.log_config import LONG_MAX, LogConfig
from storage.validator import validate_and_assign_offsets

NOW = 1_700_000_000_000
HOUR = 3_600_000


def cfg(**overrides) -> LogConfig:
    return LogConfig.from_props({}, {k.replace("_", "."): str(v) for k, v in overrides.items()})


def recs(*timestamps, key=b"k"):
    return [(key, b"v%d" % i, ts) for i, ts in enumerate(timestamps)]


def validate(data, config=None, next_offset=0, now=NOW, **kw):
    return validate_and_assign_offsets(data, next_offset=next_offset, now_ms=now,
                                       config=config or LogConfig.default(), **kw)


def batches_of(result):
    return [decode_batch(result.buf, pos) for pos, _ in result.batches]


# ----------------------------------------------------------------- offset assignment

@pytest.mark.parametrize("compression", [0, 1])
def test_absolute_offset_assignment(compression):
    """Mirrors testAbsoluteOffsetAssignmentNonCompressed/Compressed: offsets assigned
    contiguously from the log end offset, CRC still valid, records keep their data."""
    data = build_batch(recs(NOW, NOW + 1, NOW + 2), compression=compression)
    r = validate(data, next_offset=1234)
    assert (r.base_offset, r.last_offset, r.record_count) == (1234, 1236, 3)
    [(h, records)] = batches_of(r)
    assert h.base_offset == 1234 and h.last_offset == 1236
    assert B.check_crc(r.buf, 0, h)
    assert [x.offset for x in records] == [1234, 1235, 1236]
    assert [x.value for x in records] == [b"v0", b"v1", b"v2"]
    assert r.shallow_offset_of_max_timestamp == 1236     # Kafka: last offset for magic 2
    assert r.max_timestamp == NOW + 2 and r.log_append_time == -1


def test_offsets_contiguous_across_batches_and_input_untouched():
    b1 = build_batch(recs(NOW, NOW))
    b2 = build_batch(recs(NOW, NOW, NOW))
    data = b1 + b2
    snapshot = bytes(data)
    r = validate(data, next_offset=10)
    heads = [h for _, h in r.batches]
    assert [(h.base_offset, h.last_offset) for h in heads] == [(10, 11), (12, 14)]
    assert r.last_offset == 14 and r.record_count == 5
    assert data == snapshot
    assert [x.offset for _, rs in batches_of(r) for x in rs] == list(range(10, 15))


def test_producer_fields_reported():
    data = build_batch(recs(NOW, NOW, NOW), producer_id=7, producer_epoch=2, base_sequence=40)
    r = validate(data)
    assert (r.producer_id, r.producer_epoch, r.base_sequence, r.last_sequence) == (7, 2, 40, 42)


def test_partition_leader_epoch_stamped_without_breaking_crc():
    r = validate(build_batch(recs(NOW)), partition_leader_epoch=5)
    h = r.batches[0][1]
    assert h.partition_leader_epoch == 5 and B.check_crc(r.buf, 0, h)


# ----------------------------------------------------------------- timestamps

def test_record_with_future_timestamp_is_rejected():
    """Mirrors testRecordWithFutureTimestampIsRejected."""
    config = cfg(message_timestamp_after_max_ms=HOUR)
    data = build_batch(recs(NOW, NOW + HOUR + 1))
    with pytest.raises(InvalidTimestampError) as ei:
        validate(data, config)
    assert [i for i, _ in ei.value.record_errors] == [1]
    assert str(NOW + HOUR) in ei.value.record_errors[0][1]
    # exactly at the bound is fine
    validate(build_batch(recs(NOW + HOUR)), config)


def test_record_with_past_timestamp_is_rejected():
    """Mirrors testRecordWithPastTimestampIsRejected."""
    config = cfg(message_timestamp_before_max_ms=HOUR)
    data = build_batch(recs(NOW - HOUR - 1, NOW, NOW - 2 * HOUR))
    with pytest.raises(InvalidTimestampError) as ei:
        validate(data, config)
    assert [i for i, _ in ei.value.record_errors] == [0, 2]
    validate(build_batch(recs(NOW - HOUR)), config)


@pytest.mark.parametrize("compression", [0, 1, 4])
def test_invalid_create_time_both_sides(compression):
    """Mirrors testInvalidCreateTimeNonCompressedV2 / CompressedV2 with Kafka 4's one-sided
    bounds (message.timestamp.difference.max.ms, which they replace, is gone: KIP-937)."""
    config = cfg(message_timestamp_before_max_ms=1000, message_timestamp_after_max_ms=1000)
    for bad in (NOW - 1001, NOW + 1001):
        with pytest.raises(InvalidTimestampError):
            validate(build_batch(recs(NOW, bad), compression=compression), config)
    validate(build_batch(recs(NOW - 1000, NOW + 1000), compression=compression), config)


def _body(value_len: int) -> int:
    """The body size of record 1 of ``_sized``'s batch (key b"k", no headers, deltas of one
    byte): attributes, timestamp delta, offset delta, key length, key, value length, value,
    header count."""
    return 1 + 1 + 1 + 1 + 1 + (1 if 2 * value_len < 0x80 else 2) + value_len + 1


def _sized(value_len: int, compression: int) -> bytes:
    return build_batch([(b"k", b"v" * 10, NOW), (b"k", b"x" * value_len, NOW), (b"k", b"y" * 30, NOW)],
                       compression=compression)


@pytest.mark.parametrize("compression", [1, 2, 3, 4])
def test_max_decompressed_message_bytes_refuses_a_larger_record_of_a_compressed_batch(compression):
    """max.decompressed.message.bytes (Kafka 4.x): a record body one byte over the limit refuses
    the whole compressed batch with INVALID_RECORD and no record errors (as Kafka 4.4 answers:
    the bound is checked as records are decompressed); a body at the limit passes."""
    config = cfg(max_decompressed_message_bytes=100)
    assert _body(92) == 100 and _body(93) == 101
    r = validate(_sized(92, compression), config)
    assert r.record_count == 3
    with pytest.raises(InvalidRecordError) as ei:
        validate(_sized(93, compression), config)
    assert str(ei.value) == "Invalid record size: 101 exceeds the configured maximum record size of 100."
    assert not getattr(ei.value, "record_errors", None)


def test_max_decompressed_message_bytes_leaves_uncompressed_batches_alone():
    """Kafka checks only what it decompresses: an uncompressed batch passes whatever its record
    sizes, even when the topic codec recompresses it."""
    for extra in ({}, {"compression_type": "gzip"}):
        r = validate(_sized(500, 0), cfg(max_decompressed_message_bytes=100, **extra))
        assert r.record_count == 3


def test_invalid_record_exception_has_batch_index():
    """Mirrors testInvalidRecordExceptionHasBatchIndex: every bad record reported with its
    index in the batch, nothing appended."""
    config = cfg(message_timestamp_before_max_ms=1000, message_timestamp_after_max_ms=1000)
    ts = [NOW, NOW - 5000, NOW, NOW + 5000, NOW - 999]
    with pytest.raises(InvalidTimestampError) as ei:
        validate(build_batch(recs(*ts), compression=3), config)
    assert [i for i, _ in ei.value.record_errors] == [1, 3]
    assert "out of range" in ei.value.record_errors[0][1]


def test_no_timestamp_records_are_not_range_checked():
    config = cfg(message_timestamp_before_max_ms=1)
    r = validate(build_batch(recs(-1, -1)), config)
    assert r.record_count == 2


def test_client_batch_claiming_log_append_time_is_rejected():
    """Kafka's validateTimestamp: a producer must not set the LogAppendTime type."""
    data = build_batch(recs(NOW), log_append_time=NOW)
    with pytest.raises(InvalidTimestampError):
        validate(data, cfg(message_timestamp_type="LogAppendTime"))


@pytest.mark.parametrize("compression", [0, 2, 3])
def test_log_append_time_overwrites(compression):
    """Mirrors checkLogAppendTimeNonCompressed / WithoutRecompression: every batch gets the
    LogAppendTime type and max timestamp = now; CRC recomputed; records read as now."""
    clock = ManualClock(NOW)
    config = cfg(message_timestamp_type="LogAppendTime")
    data = build_batch(recs(0, 5, 10), compression=compression)   # ancient create times
    r = validate(data, config, next_offset=100, now=clock.now_ms())
    [(h, records)] = batches_of(r)      # decode_batch verifies the CRC
    assert h.timestamp_type == 1 and h.max_timestamp == NOW
    assert h.compression == compression
    assert [x.timestamp for x in records] == [NOW] * 3
    assert r.max_timestamp == NOW and r.log_append_time == NOW
    assert r.shallow_offset_of_max_timestamp == 102


def test_header_max_timestamp_corrected_from_records():
    """Kafka sets the batch max timestamp from the records it iterated."""
    data = build_batch(recs(NOW - 5, NOW - 1, NOW - 3), max_timestamp=NOW - 3)
    r = validate(data, cfg(message_timestamp_before_max_ms=HOUR))
    h = r.batches[0][1]
    assert h.max_timestamp == NOW - 1 and B.check_crc(r.buf, 0, h)


def test_unbounded_create_time_checks_only_the_header():
    """With both bounds at Long.MAX the records are not decoded: a batch whose records
    section is garbage (but CRC-consistent) passes; with a finite bound it is caught."""
    buf = bytearray(build_batch(recs(NOW, NOW)))
    buf[B.HEADER_SIZE] = 0x7F        # first record length varint -> nonsense
    B.rewrite_crc(buf, 0)
    r = validate(bytes(buf))
    assert r.record_count == 2
    with pytest.raises(CorruptRecordError):
        validate(bytes(buf), cfg(message_timestamp_before_max_ms=HOUR))


@settings(max_examples=150, deadline=None)
@given(offsets=st.lists(st.integers(-3 * HOUR, 3 * HOUR), min_size=1, max_size=12),
       before=st.one_of(st.just(LONG_MAX), st.integers(0, 2 * HOUR)),
       after=st.one_of(st.just(LONG_MAX), st.integers(0, 2 * HOUR)),
       compression=st.sampled_from([0, 1, 3]))
def test_property_accepts_iff_all_timestamps_in_window(offsets, before, after, compression):
    """Model: accepted iff every timestamp t has now - before <= t <= now + after; when
    rejected, record_errors lists exactly the indexes outside the window."""
    ts = [NOW + d for d in offsets]
    config = cfg(message_timestamp_before_max_ms=before, message_timestamp_after_max_ms=after)
    bad = [i for i, t in enumerate(ts) if not (NOW - before <= t <= NOW + after)]
    data = build_batch(recs(*ts), compression=compression)
    if bad:
        with pytest.raises(InvalidTimestampError) as ei:
            validate(data, config, next_offset=3)
        assert [i for i, _ in ei.value.record_errors] == bad
    else:
        r = validate(data, config, next_offset=3)
        assert r.record_count == len(ts) and r.last_offset == 3 + len(ts) - 1
        assert r.max_timestamp == max(ts)


# ----------------------------------------------------------------- batch rules

def test_control_records_not_allowed_from_clients():
    """Mirrors testControlRecordsNotAllowedFromClients; the coordinator may write them."""
    data = build_batch([(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00", NOW)],
                       is_control=True, is_transactional=True, producer_id=1,
                       producer_epoch=0, base_sequence=0)
    with pytest.raises(InvalidRecordError, match="control"):
        validate(data)
    r = validate(data, from_client=False, next_offset=9)
    assert r.batches[0][1].is_control and r.base_offset == 9


def test_batch_without_records_not_allowed():
    """Mirrors testBatchWithoutRecordsNotAllowed."""
    with pytest.raises(InvalidRecordError):
        validate(build_batch([]))


def test_inconsistent_count_and_offset():
    """Mirrors testInconsistentCountAndOffset: last_offset_delta + 1 != records_count."""
    data = build_batch(recs(NOW, NOW), last_offset_delta=3)
    with pytest.raises(InvalidRecordError, match="Inconsistent"):
        validate(data)


def test_client_batch_must_start_at_offset_zero():
    with pytest.raises(InvalidRecordError, match="baseOffset"):
        validate(build_batch(recs(NOW), base_offset=5))


def test_producer_id_requires_sequence():
    with pytest.raises(InvalidRecordError, match="sequence"):
        validate(build_batch(recs(NOW), producer_id=3, producer_epoch=0, base_sequence=-1))


def test_corrupt_crc_rejected():
    buf = bytearray(build_batch(recs(NOW, NOW)))
    buf[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        validate(bytes(buf))


@pytest.mark.parametrize("cut", [1, 11, 12, 30])
def test_trailing_partial_batch_rejected(cut):
    good = build_batch(recs(NOW))
    with pytest.raises(CorruptRecordError):
        validate(good + good[:cut])


def test_batch_length_too_small_rejected():
    buf = bytearray(build_batch(recs(NOW)))
    buf[8:12] = (10).to_bytes(4, "big")
    with pytest.raises(CorruptRecordError):
        validate(bytes(buf))


def test_empty_input_rejected():
    with pytest.raises(InvalidRecordError):
        validate(b"")


def test_message_size_check():
    """Mirrors UnifiedLogTest.testMessageSizeCheck: a batch above max.message.bytes is
    rejected, one at the limit accepted."""
    data = build_batch([(b"k", b"x" * 500, NOW)])
    with pytest.raises(RecordTooLargeError):
        validate(data, cfg(max_message_bytes=len(data) - 1))
    assert validate(data, cfg(max_message_bytes=len(data))).record_count == 1


def test_compacted_topic_rejects_keyless_records():
    """Mirrors UnifiedLogTest.testCompactedTopicConstraints."""
    config = cfg(cleanup_policy="compact")
    data = build_batch([(b"a", b"1", NOW), (None, b"2", NOW), (b"c", b"3", NOW), (None, None, NOW)])
    with pytest.raises(InvalidRecordError) as ei:
        validate(data, config)
    assert [i for i, _ in ei.value.record_errors] == [1, 3]
    assert "without key" in ei.value.record_errors[0][1]
    assert validate(build_batch(recs(NOW, NOW)), config).record_count == 2


# ----------------------------------------------------------------- compression / conversion

def test_different_codec_causes_recompression():
    """Mirrors testDifferentCodecCausesRecompression: compression.type=gzip re-encodes."""
    data = build_batch(recs(NOW, NOW + 1), compression=0, producer_id=4, producer_epoch=1,
                       base_sequence=9)
    r = validate(data, cfg(compression_type="gzip"), next_offset=50)
    [(h, records)] = batches_of(r)
    assert h.compression == 1 and r.recompressed
    assert (h.base_offset, h.producer_id, h.producer_epoch, h.base_sequence) == (50, 4, 1, 9)
    assert [(x.offset, x.timestamp, x.value) for x in records] == [(50, NOW, b"v0"), (51, NOW + 1, b"v1")]


def test_same_codec_is_not_recompressed():
    data = build_batch(recs(NOW, NOW), compression=1)
    r = validate(data, cfg(compression_type="gzip"))
    assert not r.recompressed
    assert bytes(r.buf) == data     # base offset 0 -> identical bytes


def test_legacy_message_set_is_up_converted():
    """Mirrors testOffsetAssignmentAfterUpConversionV0ToV2 / V1ToV2: offsets assigned from
    the log end offset, timestamps kept (magic 0 has none)."""
    from protocol.records.legacy import build_message_set
    for magic, ts in ((0, -1), (1, NOW)):
        data = build_message_set([(b"k", b"a", NOW), (b"k", b"b", NOW)], magic=magic)
        r = validate(data, next_offset=7)
        [(h, records)] = batches_of(r)
        assert h.magic == 2 and [x.offset for x in records] == [7, 8]
        assert [x.timestamp for x in records] == [ts, ts]


def test_default_after_bound_is_one_hour():
    """Kafka 4 (KIP-1030): message.timestamp.after.max.ms defaults to one hour, so a record
    more than an hour ahead of the broker clock is INVALID_TIMESTAMP with no topic setting;
    one within the hour passes (through the header alone)."""
    config = cfg()
    validate(build_batch(recs(NOW, NOW + HOUR)), config)
    with pytest.raises(InvalidTimestampError) as ei:
        validate(build_batch(recs(NOW, NOW + HOUR + 1)), config)
    assert [i for i, _ in ei.value.record_errors] == [1]
