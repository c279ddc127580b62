"""PartitionLog tests; mirror rows of Kafka's UnifiedLogTest (core/.../log/UnifiedLogTest.scala),
LogOffsetTest / ListOffsetsIntegrationTest (timestamp lookups) and LocalLogTest."""
from __future__ import annotations

import random

import pytest

from protocol.records.batch import iter_batch_positions
from protocol.records.record import build_batch, decode_batch
from storage.clock import ManualClock
from storage.errors import (
    InvalidRecordError, OffsetOutOfRangeError, OutOfOrderSequenceError, RecordTooLargeError,
)
from storage.log import PartitionLog
from storage.log_config import LogConfig

NOW = 1_700_000_000_000


def cfg(**kw):
    return LogConfig.from_props({}, {k.replace("_", "."): str(v) for k, v in kw.items()})


def open_log(tmp_path, clock=None, name="topic-0", rng=None, **kw):
    return PartitionLog.open(tmp_path / name, cfg(**kw), clock or ManualClock(NOW), recover=False,
                             rng=rng or random.Random(0))


def rec(ts, value=b"v", key=None):
    return (key, value, ts)


def one(ts, value=b"v", key=None, **kw):
    return build_batch([rec(ts, value, key)], **kw)


def records_of(log, start=None):
    out = []
    off = log.log_start_offset if start is None else start
    while off < log.log_end_offset:
        r = log.read(off, 1 << 20)
        data = r.data
        if not data:
            break
        for pos, _h in iter_batch_positions(data):
            for x in decode_batch(data, pos)[1]:
                if x.offset >= off:
                    out.append((x.offset, x.timestamp, x.value))
        off = out[-1][0] + 1
    return out


# -- roll ------------------------------------------------------------------------------------

def test_time_based_log_roll(tmp_path):
    """testTimeBasedLogRoll / testTimeBasedLogRollDuringAppend: roll by the first batch's
    timestamp; no roll into an empty segment; wall clock only without timestamps."""
    clock = ManualClock(NOW)
    # record times run ahead of the manual clock here: lift Kafka 4's one-hour after bound
    log = open_log(tmp_path, clock, segment_ms=3_600_000, message_timestamp_after_max_ms=2**63 - 1)
    assert log.num_segments == 1
    clock.advance(3_600_001)
    log.append(one(clock.now_ms()))
    assert log.num_segments == 1, "never roll into an empty segment"
    for n in (2, 3, 4):
        clock.advance(3_600_001)
        log.append(one(clock.now_ms()))
        assert log.num_segments == n
    # record time drives the roll, not the wall clock
    first_ts = log.active_segment.rolling_based_timestamp
    log.append(one(first_ts + 3_600_000))
    assert log.num_segments == 4
    log.append(one(first_ts + 3_600_001))
    assert log.num_segments == 5
    # the wall clock alone does not roll a segment whose first batch has a timestamp
    clock.advance(10 * 3_600_000)
    log.append(one(first_ts + 3_600_001))
    assert log.num_segments == 5


def test_time_based_roll_without_timestamps_uses_wall_clock(tmp_path):
    clock = ManualClock(NOW)
    log = open_log(tmp_path, clock, segment_ms=1000)
    log.append(one(-1))
    clock.advance(1001)
    log.append(one(-1))
    assert log.num_segments == 2


def test_time_based_log_roll_jitter(tmp_path):
    """testTimeBasedLogRollJitter: roll at segment.ms - jitter."""
    clock = ManualClock(NOW)
    log = open_log(tmp_path, clock, segment_ms=3_600_000, segment_jitter_ms=1_800_000, rng=random.Random(3))
    jitter = log.active_segment.roll_jitter_ms
    assert 0 <= jitter < 1_800_000
    log.append(one(NOW))
    log.append(one(NOW + 3_600_000 - jitter))
    assert log.num_segments == 1
    log.append(one(NOW + 3_600_000 - jitter + 1))
    assert log.num_segments == 2


def test_size_based_log_roll(tmp_path):
    """testSizeBasedLogRoll: a segment never exceeds segment.bytes."""
    size = len(one(NOW, b"x" * 50))
    log = open_log(tmp_path, segment_bytes=size * 3)
    for i in range(10):
        log.append(one(NOW + i, b"x" * 50))
    assert log.num_segments == 4
    assert all(s["size"] <= size * 3 for s in log.segments_info())
    assert [s["base_offset"] for s in log.segments_info()] == [0, 3, 6, 9]


def test_roll_on_full_index(tmp_path):
    log = open_log(tmp_path, segment_index_bytes=3 * 12, index_interval_bytes=1)
    for i in range(12):
        log.append(one(NOW + i))
    assert log.num_segments > 1
    for s in log.segments.values()[:-1]:
        assert s.time_index.entries <= 3 and s.offset_index.entries <= 4


def test_roll_writes_time_index_roll_entry_and_trims(tmp_path):
    """testLogRolls: the inactive segment ends its time index with (max ts, offset of max)."""
    log = open_log(tmp_path, index_interval_bytes=10 ** 6)
    for ts in (NOW + 5, NOW + 9, NOW + 7):
        log.append(one(ts))
    old = log.active_segment
    log.roll()
    assert [tuple(e) for e in old.time_index.all_entries()] == [(NOW + 9, 1)]
    assert old.offset_index.length == 0 and old.time_index.length == 12
    assert log.recovery_point == 3
    assert log.num_segments == 2 and log.active_segment.base_offset == 3
    assert log.roll() is log.active_segment, "rolling an empty active segment is a no-op"


def test_build_time_index_when_not_assigning_offsets(tmp_path):
    """testBuildTimeIndexWhenNotAssigningOffsets: N single-record batches -> N-1 entries."""
    log = open_log(tmp_path, index_interval_bytes=1)
    for i in range(10):
        log.append(one(NOW + i), from_client=False)
    assert log.active_segment.time_index.entries == 9


# -- append ----------------------------------------------------------------------------------

def test_append_assigns_offsets_and_reads_back(tmp_path):
    log = open_log(tmp_path)
    info = log.append(build_batch([rec(NOW, b"a"), rec(NOW + 1, b"b")]))
    assert (info.base_offset, info.last_offset, info.record_count, info.log_append_time) == (0, 1, 2, -1)
    info = log.append(one(NOW + 2, b"c"))
    assert (info.base_offset, info.last_offset) == (2, 2)
    assert log.log_end_offset == log.high_watermark == 3
    assert records_of(log) == [(0, NOW, b"a"), (1, NOW + 1, b"b"), (2, NOW + 2, b"c")]


def test_log_append_time(tmp_path):
    clock = ManualClock(NOW)
    log = open_log(tmp_path, clock, message_timestamp_type="LogAppendTime")
    info = log.append(one(5))
    assert info.log_append_time == NOW
    assert log.offset_for_timestamp(NOW) == (0, NOW)


def test_compacted_topic_constraints(tmp_path):
    """testCompactedTopicConstraints: keyless records rejected on a compacted topic."""
    log = open_log(tmp_path, cleanup_policy="compact")
    with pytest.raises(InvalidRecordError):
        log.append(one(NOW, key=None))
    log.append(one(NOW, key=b"k"))
    assert log.log_end_offset == 1


def test_message_size_check(tmp_path):
    """testMessageSizeCheck."""
    log = open_log(tmp_path, max_message_bytes=100)
    with pytest.raises(RecordTooLargeError):
        log.append(one(NOW, b"x" * 200))
    assert log.log_end_offset == 0


def test_idempotent_duplicate_returns_original_offsets(tmp_path):
    log = open_log(tmp_path)
    b = build_batch([rec(NOW, b"a"), rec(NOW, b"b")], producer_id=7, producer_epoch=0, base_sequence=0)
    first = log.append(b)
    log.append(one(NOW))
    again = log.append(b)
    assert again.duplicate and (again.base_offset, again.last_offset) == (first.base_offset, first.last_offset)
    assert log.log_end_offset == 3
    with pytest.raises(OutOfOrderSequenceError):
        log.append(build_batch([rec(NOW)], producer_id=7, producer_epoch=0, base_sequence=5))
    log.append(build_batch([rec(NOW)], producer_id=7, producer_epoch=0, base_sequence=2))
    assert log.log_end_offset == 4


def test_on_append_callback(tmp_path):
    log = open_log(tmp_path)
    seen = []
    log.on_append = lambda lg: seen.append(lg.log_end_offset)
    log.append(one(NOW))
    log.append(one(NOW))
    assert seen == [1, 2]


# -- read ------------------------------------------------------------------------------------

def test_read_out_of_range(tmp_path):
    log = open_log(tmp_path)
    log.append(one(NOW))
    with pytest.raises(OffsetOutOfRangeError):
        log.read(2, 100)
    assert log.read(1, 100).chunks == []
    log.delete_records(1)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)


def test_read_across_segments_and_limits(tmp_path):
    size = len(one(NOW, b"x" * 20))
    log = open_log(tmp_path, segment_bytes=size * 2)
    for i in range(6):
        log.append(one(NOW + i, b"x" * 20))
    assert log.num_segments == 3
    r = log.read(1, 10 ** 6)
    assert r.size == size  # reads stay within the segment holding the offset
    assert log.read(2, 1).size == size, "min_one returns the first batch"
    assert log.read(2, 1, min_one=False).size == 0
    assert log.read(2, 10 ** 6, max_offset=3).size == size
    assert log.read(2, 10 ** 6, max_offset=2).size == 0
    assert (r.high_watermark, r.log_end_offset, r.log_start_offset) == (6, 6, 0)


# -- timestamps ------------------------------------------------------------------------------

@pytest.mark.parametrize("compression", [0, 1])
@pytest.mark.parametrize("separate", [False, True])
def test_max_timestamp_with_unordered_timestamps(tmp_path, compression, separate):
    """testFetchOffsetByTimestampForMaxTimestampWithUnorderedTimestamps /
    testThree{Compressed,NonCompressed}RecordsIn{One,Separate}Batch(es):
    timestamps 0,1,2,3,4,6,5 -> -3 answers offset 5, ts 6."""
    log = open_log(tmp_path)
    ts = [0, 1, 2, 3, 4, 6, 5]
    if separate:
        for t in ts:
            log.append(build_batch([rec(t)], compression=compression), from_client=False)
    else:
        log.append(build_batch([rec(t) for t in ts], compression=compression), from_client=False)
    assert log.offset_for_timestamp(-3) == (5, 6)
    assert log.offset_for_timestamp(-1) == (7, -1)
    assert log.offset_for_timestamp(-2) == (0, -1)
    assert log.offset_for_timestamp(5) == (5, 6)
    assert log.offset_for_timestamp(6) == (5, 6)
    assert log.offset_for_timestamp(7) is None


def test_list_offsets_empty_log(tmp_path):
    """testListMaxTimestampWithEmptyLog / ...WithEmptyLog."""
    log = open_log(tmp_path)
    assert log.offset_for_timestamp(-3) is None
    assert log.offset_for_timestamp(0) is None
    assert log.offset_for_timestamp(-1) == (0, -1)
    assert log.offset_for_timestamp(-2) == (0, -1)


def test_fetch_offset_by_timestamp_includes_leader_epoch(tmp_path):
    """testFetchOffsetByTimestampIncludesLeaderEpoch."""
    log = open_log(tmp_path)
    log.append(one(NOW), partition_leader_epoch=0)
    log.append(one(NOW + 10), partition_leader_epoch=3)
    assert log.lookup_timestamp(NOW + 5) == (NOW + 10, 1, 3)
    assert log.lookup_timestamp(-3) == (NOW + 10, 1, 3)


def test_timestamp_lookup_across_segments_out_of_order(tmp_path):
    """First record with ts >= T in offset order, not the last <= T; per-segment indexes."""
    log = open_log(tmp_path, segment_bytes=250, index_interval_bytes=1)
    ts = [100, 50, 300, 200, 20, 400, 10, 350]
    for t in ts:
        log.append(one(t), from_client=False)
    assert log.num_segments > 2
    for target in range(0, 420, 5):
        want = next(((i, t) for i, t in enumerate(ts) if t >= target), None)
        assert log.offset_for_timestamp(target) == want, target


def test_timestamp_lookup_respects_log_start_offset(tmp_path):
    log = open_log(tmp_path)
    log.append(build_batch([rec(100), rec(200), rec(300)]), from_client=False)
    log.delete_records(2)
    assert log.offset_for_timestamp(100) == (2, 300)
    assert log.offset_for_timestamp(-2) == (2, -1)


def test_legacy_offsets_before(tmp_path):
    """testFetchOffsetsBeforeWithChangingSegments / ListOffsets v0."""
    clock = ManualClock(NOW)
    log = open_log(tmp_path, clock, segment_bytes=len(one(0)) * 2)
    for i in range(6):
        log.append(one(NOW + i))
    segs = log.segments.values()
    for i, s in enumerate(segs):
        s.set_last_modified(NOW - 10_000 + i * 1000)
    assert [s.base_offset for s in segs] == [0, 2, 4]
    assert log.legacy_offsets_before(-1, 1) == [6]
    assert log.legacy_offsets_before(-1, 10) == [6, 4, 2, 0], "Kafka walks back from the newest"
    assert log.legacy_offsets_before(-2, 10) == [0]
    assert log.legacy_offsets_before(NOW - 8_500, 10) == [2, 0]
    assert log.legacy_offsets_before(NOW, 10) == [6, 4, 2, 0]
    assert log.legacy_offsets_before(NOW, 2) == [6, 4]
    assert log.legacy_offsets_before(NOW - 20_000, 10) == []


# -- retention -------------------------------------------------------------------------------

def _fill_segments(log, n_segments, per_segment, ts):
    for i in range(n_segments * per_segment):
        log.append(one(ts(i), b"x" * 20))


def test_should_delete_time_based_segments_ready_to_be_deleted(tmp_path):
    """shouldDeleteTimeBasedSegmentsReadyToBeDeleted."""
    clock = ManualClock(NOW)
    size = len(one(0, b"x" * 20))
    log = open_log(tmp_path, clock, segment_bytes=size * 5, retention_ms=10_000)
    _fill_segments(log, 3, 5, lambda i: NOW - 20_000)
    assert log.num_segments == 3
    assert log.delete_old_segments() == 3
    assert log.num_segments == 1 and log.active_segment.size == 0
    assert log.log_start_offset == 15 == log.log_end_offset


def test_should_not_delete_time_based_segments_when_none_ready(tmp_path):
    """shouldNotDeleteTimeBasedSegmentsWhenNoneReadyToBeDeleted."""
    clock = ManualClock(NOW)
    size = len(one(0, b"x" * 20))
    log = open_log(tmp_path, clock, segment_bytes=size * 5, retention_ms=10_000)
    _fill_segments(log, 3, 5, lambda i: NOW)
    assert log.delete_old_segments() == 0
    assert log.num_segments == 3


def test_retention_uses_largest_timestamp(tmp_path):
    """Retention by the segment's largest record timestamp, not the first."""
    clock = ManualClock(NOW)
    size = len(one(0, b"x" * 20))
    log = open_log(tmp_path, clock, segment_bytes=size * 2, retention_ms=10_000)
    stamps = [NOW - 50_000, NOW - 1, NOW - 50_000, NOW - 40_000, NOW - 5, NOW]
    for t in stamps:
        log.append(one(t, b"x" * 20))
    assert log.delete_old_segments() == 0, "first segment's largest ts is fresh: stop there"


def test_should_delete_size_based_segments(tmp_path):
    """shouldDeleteSizeBasedSegments."""
    size = len(one(0, b"x" * 20))
    log = open_log(tmp_path, segment_bytes=size * 5, retention_bytes=size * 5 * 2 + 1)
    _fill_segments(log, 3, 5, lambda i: NOW)
    log.append(one(NOW, b"x" * 20))  # 4th segment begins
    assert log.num_segments == 4
    assert log.delete_old_segments() == 1
    assert log.num_segments == 3


def test_should_not_delete_when_policy_is_compact(tmp_path):
    """shouldNotDeleteSegmentsWhenPolicyDoesNotIncludeDelete."""
    size = len(one(0, b"x" * 20, key=b"k"))
    log = open_log(tmp_path, segment_bytes=size * 5, retention_ms=10_000, cleanup_policy="compact")
    for i in range(15):
        log.append(one(NOW - 20_000, b"x" * 20, key=b"k"))
    assert log.delete_old_segments() == 0


def test_compact_and_delete_deletes(tmp_path):
    """shouldDeleteSegmentsReadyToBeDeletedWhenCleanupPolicyIsCompactAndDelete."""
    size = len(one(0, b"x" * 20, key=b"k"))
    log = open_log(tmp_path, segment_bytes=size * 5, retention_ms=10_000, cleanup_policy="compact,delete")
    for i in range(15):
        log.append(one(NOW - 20_000, b"x" * 20, key=b"k"))
    assert log.delete_old_segments() == 3


def test_log_deletion_after_delete_records(tmp_path):
    """testLogDeletionAfterDeleteRecords."""
    size = len(one(0, b"x" * 20))
    log = open_log(tmp_path, segment_bytes=size * 5)
    _fill_segments(log, 3, 5, lambda i: NOW)
    log.append(one(NOW, b"x" * 20))
    assert log.delete_records(7) == 7
    assert log.delete_old_segments() == 1
    assert log.log_start_offset == 7
    log.delete_records(15)
    assert log.delete_old_segments() == 2
    assert log.log_start_offset == 15 and log.num_segments == 1
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records(100)


def test_retention_idempotency_and_pending_deletes(tmp_path):
    """testRetentionIdempotency; deleted segments are renamed *.deleted and removed after
    file.delete.delay.ms."""
    clock = ManualClock(NOW)
    size = len(one(0, b"x" * 20))
    log = open_log(tmp_path, clock, segment_bytes=size * 5, retention_ms=10_000, file_delete_delay_ms=1000)
    _fill_segments(log, 2, 5, lambda i: NOW - 20_000)
    log.append(one(NOW, b"x" * 20))
    assert log.delete_old_segments() == 2
    assert log.delete_old_segments() == 0
    d = tmp_path / "topic-0"
    deleted = sorted(p.name for p in d.iterdir() if p.name.endswith(".deleted"))
    # with the producer snapshot the roll at 5 wrote (Kafka deletes it with its segment)
    assert deleted == sorted([f"{b:020d}{s}.deleted" for b in (0, 5) for s in (".log", ".index", ".timeindex")]
                             + [f"{5:020d}.snapshot.deleted"])
    assert log.run_pending_deletes() == 0
    clock.advance(1000)
    assert log.run_pending_deletes() == 7
    assert not any(p.name.endswith(".deleted") for p in d.iterdir())
    assert records_of(log) == [(10, NOW, b"x" * 20)]


# -- truncation and flush -----------------------------------------------------------------------

def test_truncate_to(tmp_path):
    """testTruncateTo / testIndexResizingAtTruncation."""
    size = len(one(0))
    log = open_log(tmp_path, segment_bytes=size * 3, index_interval_bytes=1)
    for i in range(10):
        log.append(one(NOW + i))
    assert log.truncate_to(5)
    assert log.log_end_offset == 5 and log.num_segments == 2
    assert [r[0] for r in records_of(log)] == [0, 1, 2, 3, 4]
    assert log.active_segment.offset_index.max_entries == log.config.segment_index_bytes // 8
    assert log.offset_for_timestamp(NOW + 6) is None
    log.append(one(NOW + 100))
    assert log.log_end_offset == 6
    assert not log.truncate_to(100)
    log.truncate_to(0)
    assert log.log_end_offset == 0 and records_of(log) == []


def test_flush_policy(tmp_path):
    clock = ManualClock(NOW)
    log = open_log(tmp_path, clock, flush_messages=3, flush_ms=1000)
    log.append(one(NOW))
    log.append(one(NOW))
    assert log.recovery_point == 0 and log.unflushed_messages == 2
    assert not log.needs_flush()
    clock.advance(1000)
    assert log.needs_flush()
    log.append(one(NOW))
    assert log.recovery_point == 3, "flush.messages reached: flushed on append"
    assert not log.needs_flush()


def test_close_and_reopen_clean(tmp_path):
    log = open_log(tmp_path, segment_bytes=200, index_interval_bytes=1)
    for i in range(20):
        log.append(one(NOW + i, b"%d" % i))
    before = records_of(log)
    log.close()
    again = open_log(tmp_path, segment_bytes=200, index_interval_bytes=1)
    assert again.log_end_offset == 20
    assert records_of(again) == before
    for i in range(20):
        assert again.offset_for_timestamp(NOW + i) == (i, NOW + i)
    again.append(one(NOW + 99))
    assert again.log_end_offset == 21
