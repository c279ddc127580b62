"""Log segment tests; mirror Kafka's LogSegmentTest (storage/.../log/LogSegmentTest.java)."""
from __future__ import annotations

import os
import random

import pytest

from protocol.records.batch import iter_batch_positions, read_header
from protocol.records.record import build_batch, decode_batch
from storage.clock import ManualClock
from storage.index import TimestampOffset
from storage.segment import LogSegment, LogSegmentOffsetOverflowError, log_file


def batch(offset, *values, ts=None, compression=0):
    recs = [(None, v.encode() if isinstance(v, str) else v, (ts if ts is not None else offset * 10))
            for v in values]
    return build_batch(recs, base_offset=offset, compression=compression)


def seg_of(tmp_path, base=40, interval=10, max_index=1000 * 12, clock=None):
    return LogSegment(tmp_path, base, index_interval_bytes=interval, max_index_size=max_index,
                      clock=clock or ManualClock(0))


def append(seg, b):
    h = read_header(b)
    seg.append(h.base_offset + h.last_offset_delta, h.max_timestamp, h.base_offset + h.last_offset_delta, b)


def append_batches(seg, b):
    hs = list(iter_batch_positions(b))
    last = hs[-1][1]
    seg.append(last.last_offset, max(h.max_timestamp for _, h in hs), last.last_offset, b, batches=hs)


def values_of(data):
    out = []
    for pos, _h in iter_batch_positions(data):
        out.extend((r.offset, r.value) for r in decode_batch(data, pos)[1])
    return out


def test_read_on_empty_segment(tmp_path):
    """testReadOnEmptySegment."""
    seg = seg_of(tmp_path)
    assert seg.read(40, 300) is None


def test_read_before_first_offset(tmp_path):
    """testReadBeforeFirstOffset: reading below the first offset returns from the first batch."""
    seg = seg_of(tmp_path)
    b = batch(50, "hello", "there", "little", "bee")
    append(seg, b)
    r = seg.read(41, 300)
    assert r.data == b and r.position == 0


def test_read_after_last(tmp_path):
    """testReadAfterLast."""
    seg = seg_of(tmp_path)
    append(seg, batch(50, "hello", "there"))
    assert seg.read(52, 200) is None


def test_read_from_gap(tmp_path):
    """testReadFromGap: an offset in a gap reads from the next batch."""
    seg = seg_of(tmp_path)
    append(seg, batch(50, "hello", "there"))
    b2 = batch(60, "alpha", "beta")
    append(seg, b2)
    assert seg.read(55, 200).data == b2


def test_read_whole_batches_and_min_one(tmp_path):
    seg = seg_of(tmp_path)
    b1 = batch(40, "a" * 50)
    b2 = batch(41, "b" * 50)
    append(seg, b1)
    append(seg, b2)
    r = seg.read(40, len(b1) + 10)          # room for one and a bit: whole batches only
    assert r.data == b1
    r = seg.read(40, 10)                     # first batch does not fit
    assert r.data == b"" and r.first_entry_incomplete
    r = seg.read(40, 10, min_one=True)       # ... unless min_one
    assert r.data == b1
    r = seg.read(41, 10 ** 6, max_position=len(b1))   # max_position caps
    assert r.data == b""
    r = seg.read(40, 10 ** 6, max_position=len(b1))
    assert r.data == b1


def test_next_offset_calculation(tmp_path):
    """testNextOffsetCalculation."""
    seg = seg_of(tmp_path)
    assert seg.read_next_offset() == 40
    append(seg, batch(50, "hello", "there", "you"))
    assert seg.read_next_offset() == 53
    seg.close()
    again = LogSegment(tmp_path, 40, index_interval_bytes=10, max_index_size=12000,
                       clock=ManualClock(0), file_already_exists=True)
    assert again.read_next_offset() == 53


def test_truncate(tmp_path):
    """testTruncate: truncating to an offset removes it and everything after."""
    seg = seg_of(tmp_path)
    offset = 40
    for _ in range(30):
        b1 = batch(offset, "hello")
        append(seg, b1)
        b2 = batch(offset + 1, "there")
        append(seg, b2)
        assert seg.read(offset, 10000).data == b1 + b2
        seg.truncate_to(offset + 1)
        assert seg.read(offset, 10000).data == b1
        assert seg.read_next_offset() == offset + 1
        offset += 1


def test_truncate_empty_segment(tmp_path):
    """testTruncateEmptySegment: truncating an empty segment resets nothing harmful."""
    clock = ManualClock(1000)
    seg = seg_of(tmp_path, clock=clock)
    seg.truncate_to(0)
    assert seg.size == 0 and seg.read_next_offset() == 40
    clock.advance(500)
    assert seg.time_waited_for_roll(clock.now_ms(), -1) == 500


def test_reload_largest_timestamp_and_next_offset_after_truncation(tmp_path):
    """testReloadLargestTimestampAndNextOffsetAfterTruncation."""
    seg = seg_of(tmp_path, base=40, interval=1)
    offset = 40
    for i in range(10):
        append(seg, batch(offset, "hello", ts=100 + i * 10))
        offset += 1
    assert seg.max_timestamp_so_far == 190
    seg.truncate_to(45)
    assert seg.max_timestamp_so_far == 140
    assert seg.read_next_offset() == 45
    assert seg.time_index.last_entry.offset < 45
    seg.truncate_to(40)
    assert seg.max_timestamp_so_far == -1 or seg.size == 0
    assert seg.read_next_offset() == 40


def test_truncate_full(tmp_path):
    """testTruncateFull: truncate below the base empties the segment; appends work again."""
    clock = ManualClock(0)
    seg = seg_of(tmp_path, clock=clock)
    append(seg, batch(40, "hello", "there", ts=-1))
    clock.advance(500)
    assert seg.time_waited_for_roll(clock.now_ms(), -1) == 500
    seg.truncate_to(0)
    assert seg.time_waited_for_roll(clock.now_ms(), -1) == 0
    assert not seg.time_index.is_full() and not seg.offset_index.is_full()
    assert seg.read(0, 1024) is None
    append(seg, batch(40, "hello", "there"))
    assert seg.read_next_offset() == 42


def test_should_truncate_even_if_offset_points_to_a_gap(tmp_path):
    """shouldTruncateEvenIfOffsetPointsToAGapInTheLog."""
    seg = seg_of(tmp_path)
    append(seg, batch(40, "a", "b"))
    append(seg, batch(45, "c"))
    seg.truncate_to(43)
    assert seg.read_next_offset() == 42
    assert values_of(seg.read(40, 10000).data) == [(40, b"a"), (41, b"b")]


def test_find_offset_by_timestamp(tmp_path):
    """testFindOffsetByTimestamp: first offset with ts >= T, indexed or not."""
    size = len(batch(0, "msg00"))
    seg = seg_of(tmp_path, base=40, interval=size * 2 - 1)
    for i in range(40, 50):
        append(seg, batch(i, f"msg{i}", ts=i * 10))
    assert seg.largest_timestamp == 490
    assert seg.find_offset_by_timestamp(420, 0).offset == 42
    assert seg.find_offset_by_timestamp(421, 0).offset == 43
    assert seg.find_offset_by_timestamp(430, 0).offset == 43
    assert seg.find_offset_by_timestamp(431, 0).offset == 44
    assert seg.find_offset_by_timestamp(491, 0) is None
    assert seg.find_offset_by_timestamp(401, 0).offset == 41
    assert seg.find_offset_by_timestamp(399, 0).offset == 40
    hit = seg.find_offset_by_timestamp(420, 0)
    assert hit.timestamp == 420


def test_find_offset_by_timestamp_inside_compressed_batch(tmp_path):
    seg = seg_of(tmp_path, base=0, interval=1)
    b = build_batch([(None, b"x", 50), (None, b"y", 10), (None, b"z", 70), (None, b"w", 60)],
                    base_offset=0, compression=1)
    append(seg, b)
    assert seg.find_offset_by_timestamp(55, 0)[:2] == (70, 2)
    assert seg.find_offset_by_timestamp(10, 0)[:2] == (50, 0)
    assert seg.find_offset_by_timestamp(10, 1)[:2] == (10, 1)
    assert seg.find_offset_by_timestamp(60, 3)[:2] == (60, 3)
    assert seg.find_offset_by_timestamp(71, 0) is None


def test_index_entries_every_interval(tmp_path):
    """Index density: one entry per index.interval.bytes (Kafka: numMessages / 2 - 1 entries)."""
    size = len(batch(0, "hello"))
    seg = seg_of(tmp_path, base=40, interval=2 * size - 1)
    for i in range(30):
        append(seg, batch(40 + i, "hello", ts=40 + i))
    assert seg.read_next_offset() == 70
    assert seg.time_index.entries == 30 // 2 - 1
    assert seg.offset_index.entries == 30 // 2 - 1


def test_per_batch_index_upkeep_for_multi_batch_append(tmp_path):
    seg = seg_of(tmp_path, base=0, interval=1)
    data = b"".join(batch(i, "v", ts=100 + i) for i in range(5))
    append_batches(seg, data)
    assert [e.offset for e in seg.offset_index.all_entries()] == [1, 2, 3, 4]
    sizes = len(batch(0, "v"))
    assert [e.position for e in seg.offset_index.all_entries()] == [sizes * i for i in range(1, 5)]
    assert seg.max_timestamp_so_far == 104
    for i in range(5):
        assert seg.find_offset_by_timestamp(100 + i).offset == i


def test_change_file_suffixes(tmp_path):
    """testChangeFileSuffixes."""
    seg = seg_of(tmp_path)
    append(seg, batch(40, "x"))
    seg.change_file_suffixes("", ".deleted")
    assert seg.has_suffix(".deleted")
    assert (tmp_path / "00000000000000000040.log.deleted").exists()
    assert (tmp_path / "00000000000000000040.index.deleted").exists()
    assert (tmp_path / "00000000000000000040.timeindex.deleted").exists()
    assert not (tmp_path / "00000000000000000040.log").exists()
    assert seg.read(40, 1000).data  # still readable through the open handle
    seg.change_file_suffixes(".deleted", "")
    assert (tmp_path / "00000000000000000040.log").exists()


def _fill(seg, n=100, start=None):
    start = seg.base_offset if start is None else start
    for i in range(n):
        append(seg, batch(start + i, f"msg{i}", ts=i * 10))


def _assert_all_readable(seg, start, n):
    for i in range(n):
        r = seg.read(start + i, 10 ** 6)
        assert values_of(r.data)[0] == (start + i, f"msg{i}".encode())


def test_recovery_fixes_corrupt_index(tmp_path):
    """testRecoveryFixesCorruptIndex."""
    seg = seg_of(tmp_path, base=0, interval=1)
    _fill(seg)
    idx = seg.offset_index.path
    rng = random.Random(1)
    seg.offset_index.close_handler()
    with open(idx, "r+b") as f:
        f.seek(5)
        f.write(bytes(rng.randrange(256) for _ in range(os.path.getsize(idx) - 5)))
    fresh = LogSegment(tmp_path, 0, index_interval_bytes=1, max_index_size=12000,
                       clock=ManualClock(0), file_already_exists=True)
    assert fresh.recover() == 0
    _assert_all_readable(fresh, 0, 100)


def test_recovery_fixes_corrupt_time_index(tmp_path):
    """testRecoveryFixesCorruptTimeIndex: after recover every ts_i resolves to i."""
    seg = seg_of(tmp_path, base=0, interval=1)
    _fill(seg)
    seg.close()
    ti = tmp_path / "00000000000000000000.timeindex"
    rng = random.Random(2)
    ti.write_bytes(bytes(rng.randrange(256) for _ in range(ti.stat().st_size)))
    fresh = LogSegment(tmp_path, 0, index_interval_bytes=1, max_index_size=12000,
                       clock=ManualClock(0), file_already_exists=True)
    fresh.recover()
    for i in range(100):
        assert fresh.find_offset_by_timestamp(i * 10, 0).offset == i
        if i < 99:
            assert fresh.find_offset_by_timestamp(i * 10 + 1, 0).offset == i + 1


@pytest.mark.parametrize("seed", range(5))
def test_recovery_with_corrupt_message(tmp_path, seed):
    """testRecoveryWithCorruptMessage: garbage inside a batch truncates to the last valid batch."""
    seg = seg_of(tmp_path, base=0, interval=1)
    _fill(seg)
    rng = random.Random(seed)
    victim = rng.randrange(100)
    pos = seg.translate_offset(victim).position
    seg.close()
    path = log_file(tmp_path, 0)
    with open(path, "r+b") as f:
        f.seek(pos + rng.randrange(30, 40))   # inside the batch: breaks the CRC
        f.write(bytes(rng.randrange(256) for _ in range(8)))
    fresh = LogSegment(tmp_path, 0, index_interval_bytes=1, max_index_size=12000,
                       clock=ManualClock(0), file_already_exists=True)
    assert fresh.recover() > 0
    assert fresh.read_next_offset() == victim
    _assert_all_readable(fresh, 0, victim)
    assert fresh.size == pos


def test_recover_then_again_changes_nothing(tmp_path):
    seg = seg_of(tmp_path, base=0, interval=50)
    _fill(seg, 20)
    seg.close()
    with open(log_file(tmp_path, 0), "ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00\x01")
    fresh = LogSegment(tmp_path, 0, index_interval_bytes=50, max_index_size=12000,
                       clock=ManualClock(0), file_already_exists=True)
    assert fresh.recover() == 11
    before = (log_file(tmp_path, 0).read_bytes(), fresh.offset_index.all_entries(), fresh.time_index.all_entries())
    assert fresh.recover() == 0
    after = (log_file(tmp_path, 0).read_bytes(), fresh.offset_index.all_entries(), fresh.time_index.all_entries())
    assert before == after


def test_close_trims_preallocated_indexes_and_adds_roll_entry(tmp_path):
    """Preallocated index files are trimmed on clean close; the time index ends at the max."""
    seg = seg_of(tmp_path, base=0, interval=10 ** 6)
    assert (tmp_path / "00000000000000000000.index").stat().st_size == 0    # grown at first use:
    assert not seg.offset_index.is_full()                                  # the log's roll check
    assert (tmp_path / "00000000000000000000.index").stat().st_size == 12000 // 8 * 8
    for i, ts in enumerate([5, 30, 20]):
        append(seg, batch(i, "v", ts=ts))
    assert seg.time_index.entries == 0  # interval not reached
    seg.close()
    assert (tmp_path / "00000000000000000000.index").stat().st_size == 0
    again = LogSegment(tmp_path, 0, index_interval_bytes=10 ** 6, max_index_size=12000,
                       clock=ManualClock(0), file_already_exists=True)
    assert again.time_index.all_entries() == [TimestampOffset(30, 1)]
    assert again.max_timestamp_so_far == 30
    assert again.largest_timestamp == 30


def test_on_become_inactive(tmp_path):
    seg = seg_of(tmp_path, base=0, interval=10 ** 6)
    append(seg, batch(0, "v", ts=7))
    seg.on_become_inactive()
    assert seg.time_index.all_entries() == [TimestampOffset(7, 0)]
    assert seg.offset_index.length == 0 and seg.time_index.length == 12


def test_get_first_batch_timestamp(tmp_path):
    """testGetFirstBatchTimestamp."""
    seg = seg_of(tmp_path)
    assert seg.first_batch_timestamp() == 2 ** 63 - 1
    append(seg, batch(40, "a", ts=1))
    assert seg.first_batch_timestamp() == 1
    seg.close()
    again = LogSegment(tmp_path, 40, index_interval_bytes=10, max_index_size=12000,
                       clock=ManualClock(0), file_already_exists=True)
    assert again.rolling_based_timestamp == 1


def test_offset_overflow_rejected(tmp_path):
    seg = seg_of(tmp_path, base=0)
    with pytest.raises(LogSegmentOffsetOverflowError):
        seg.append(2 ** 31, 0, 2 ** 31, batch(2 ** 31, "x"))


def test_largest_timestamp_falls_back_to_mtime(tmp_path):
    seg = seg_of(tmp_path)
    append(seg, batch(40, "x", ts=-1))
    seg.set_last_modified(123456000)
    assert seg.largest_record_timestamp is None
    assert seg.largest_timestamp == 123456000


def test_offset_of_max_timestamp(tmp_path):
    seg = seg_of(tmp_path, base=0, interval=1)
    append(seg, build_batch([(None, b"a", 0), (None, b"b", 1), (None, b"c", 2)], base_offset=0))
    append(seg, build_batch([(None, b"a", 3), (None, b"b", 6), (None, b"c", 5)], base_offset=3))
    assert seg.offset_of_max_timestamp()[:2] == (6, 4)
