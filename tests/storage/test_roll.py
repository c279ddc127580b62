"""Tests for storage.roll (Kafka LogSegment.shouldRoll), porting the roll invariants of
UnifiedLogTest: testTimeBasedLogRoll / testTimeBasedLogRollDuringAppend,
testTimeBasedLogRollJitter, testSizeBasedLogRoll, testLogRolls; and of
LogSegmentTest.testGetFirstBatchTimestamp (rolling uses the first batch's timestamp).

A tiny in-test log model drives ``should_roll`` the way the log does before each append.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from hypothesis import given, strategies as st

from storage.clock import ManualClock
from storage.roll import RollParams, roll_jitter, should_roll, time_waited_for_roll

HOUR = 3_600_000
INT_MAX = 2**31 - 1


@dataclass
class Seg:
    base_offset: int
    created_ms: int
    jitter: int = 0
    size: int = 0
    first_batch_max_ts: int | None = None   # None until the first batch


@dataclass
class SimLog:
    """Just enough of a log to exercise roll decisions."""

    clock: ManualClock
    segment_bytes: int = 10**9
    segment_ms: int = HOUR
    jitter: int = 0
    segs: list = field(default_factory=list)
    leo: int = 0

    def __post_init__(self):
        self.segs.append(Seg(0, self.clock.now_ms(), self.jitter))

    def append(self, timestamps: list[int], size: int = 100) -> None:
        active = self.segs[-1]
        params = RollParams(max_segment_bytes=self.segment_bytes, max_segment_ms=self.segment_ms,
                            roll_jitter_ms=active.jitter, max_timestamp_in_batches=max(timestamps),
                            max_offset_in_batches=self.leo + len(timestamps) - 1,
                            batches_size=size, now_ms=self.clock.now_ms())
        if should_roll(segment_size=active.size, segment_base_offset=active.base_offset,
                       rolling_based_timestamp=active.first_batch_max_ts,
                       segment_created_ms=active.created_ms, offset_index_full=False,
                       time_index_full=False, params=params):
            active = Seg(self.leo, self.clock.now_ms(), self.jitter)
            self.segs.append(active)
        if active.first_batch_max_ts is None:
            active.first_batch_max_ts = max(timestamps)
        active.size += size
        self.leo += len(timestamps)


def test_time_based_roll_uses_record_timestamps():
    """Mirrors testTimeBasedLogRoll: a segment rolls when the incoming batch's timestamp is
    more than segment.ms past the segment's first batch timestamp - not by wall clock."""
    clock = ManualClock(10 * HOUR)
    log = SimLog(clock)
    log.append([clock.now_ms()])
    assert len(log.segs) == 1
    # record time moves on, wall clock does not
    log.append([clock.now_ms() + HOUR])          # exactly segment.ms: no roll (strictly >)
    assert len(log.segs) == 1
    log.append([clock.now_ms() + HOUR + 1])
    assert len(log.segs) == 2
    # wall clock far ahead but records still recent relative to the segment's first batch
    clock.advance(5 * HOUR)
    log.append([10 * HOUR + HOUR + 2])
    assert len(log.segs) == 2


def test_roll_is_based_on_first_batch_not_largest():
    """The rolling-based timestamp is the first batch's max timestamp, even if later
    batches carry larger ones (out-of-order CreateTime)."""
    clock = ManualClock(0)
    log = SimLog(clock)
    log.append([1000])
    log.append([1000 + HOUR - 10])
    log.append([500])                          # old record: waited negative
    assert len(log.segs) == 1
    log.append([1000 + HOUR + 1])
    assert len(log.segs) == 2


def test_wall_clock_used_when_segment_has_no_timestamp():
    """Mirrors the no-timestamp part of testTimeBasedLogRoll: records without a
    timestamp (-1) make the roll use the segment's creation time."""
    clock = ManualClock(0)
    log = SimLog(clock)
    log.append([-1])
    clock.advance(HOUR)
    log.append([-1])
    assert len(log.segs) == 1
    clock.advance(1)
    log.append([-1])
    assert len(log.segs) == 2
    # the new segment's first batch has no timestamp either: wall clock again, even though
    # the next batch has a (huge) timestamp
    log.append([10**12])
    assert len(log.segs) == 2


def test_empty_segment_never_rolls_for_time():
    clock = ManualClock(0)
    params = RollParams(max_segment_bytes=10**9, max_segment_ms=1, roll_jitter_ms=0,
                        max_timestamp_in_batches=10**12, max_offset_in_batches=0,
                        batches_size=10, now_ms=10**12)
    assert not should_roll(segment_size=0, segment_base_offset=0, rolling_based_timestamp=None,
                           segment_created_ms=clock.now_ms(), offset_index_full=False,
                           time_index_full=False, params=params)


def test_time_based_roll_jitter():
    """Mirrors testTimeBasedLogRollJitter: with jitter j the segment rolls once
    segment.ms - j has passed, not before."""
    clock = ManualClock(0)
    jitter = HOUR // 4
    log = SimLog(clock, jitter=jitter)
    log.append([-1])
    clock.advance(HOUR - jitter)
    log.append([-1])
    assert len(log.segs) == 1
    clock.advance(1)
    log.append([-1])
    assert len(log.segs) == 2


def test_size_based_roll():
    """Mirrors testSizeBasedLogRoll: roll when the append would overflow segment.bytes."""
    clock = ManualClock(0)
    log = SimLog(clock, segment_bytes=1000)
    for _ in range(10):
        log.append([0], size=100)
    assert len(log.segs) == 1 and log.segs[0].size == 1000
    log.append([0], size=1)
    assert len(log.segs) == 2 and log.segs[1].base_offset == 10


def test_batch_exactly_filling_the_segment_does_not_roll():
    clock = ManualClock(0)
    log = SimLog(clock, segment_bytes=1000)
    log.append([0], size=400)
    log.append([0], size=600)              # 400 > 1000 - 600 is false
    assert len(log.segs) == 1
    log.append([0], size=1)
    assert len(log.segs) == 2


def test_index_full_and_offset_overflow_roll():
    base = dict(max_segment_bytes=10**9, max_segment_ms=HOUR, roll_jitter_ms=0,
                max_timestamp_in_batches=0, batches_size=1, now_ms=0)
    kw = dict(segment_size=10, segment_base_offset=100, rolling_based_timestamp=0,
              segment_created_ms=0)
    p = RollParams(max_offset_in_batches=101, **base)
    assert not should_roll(offset_index_full=False, time_index_full=False, params=p, **kw)
    assert should_roll(offset_index_full=True, time_index_full=False, params=p, **kw)
    assert should_roll(offset_index_full=False, time_index_full=True, params=p, **kw)
    edge = RollParams(max_offset_in_batches=100 + INT_MAX, **base)
    assert not should_roll(offset_index_full=False, time_index_full=False, params=edge, **kw)
    over = RollParams(max_offset_in_batches=100 + INT_MAX + 1, **base)
    assert should_roll(offset_index_full=False, time_index_full=False, params=over, **kw)


def test_time_waited_for_roll():
    assert time_waited_for_roll(rolling_based_timestamp=100, segment_created_ms=0,
                                max_timestamp_in_batches=250, now_ms=10**9) == 150
    assert time_waited_for_roll(rolling_based_timestamp=-1, segment_created_ms=40,
                                max_timestamp_in_batches=250, now_ms=100) == 60
    assert time_waited_for_roll(rolling_based_timestamp=None, segment_created_ms=40,
                                max_timestamp_in_batches=250, now_ms=100) == 60


@given(jitter=st.integers(0, 10**6), segment_ms=st.integers(1, 10**6), seed=st.integers(0, 2**32))
def test_roll_jitter_range(jitter, segment_ms, seed):
    rng = random.Random(seed)
    j = roll_jitter(jitter, rng, segment_ms=segment_ms)
    if jitter == 0:
        assert j == 0
    else:
        assert 0 <= j < min(jitter, segment_ms)


@given(first_ts=st.one_of(st.none(), st.integers(-1, 10**6)),
       batch_ts=st.integers(-1, 3 * 10**6), created=st.integers(0, 10**6),
       now=st.integers(0, 3 * 10**6), size=st.integers(0, 2000),
       segment_ms=st.integers(1, 10**6), jitter=st.integers(0, 10**5),
       batches_size=st.integers(1, 500))
def test_property_should_roll_matches_model(first_ts, batch_ts, created, now, size, segment_ms,
                                            jitter, batches_size):
    """Brute-force restatement of Kafka's rule."""
    jitter = min(jitter, segment_ms - 1) if segment_ms > 1 else 0
    p = RollParams(max_segment_bytes=1000, max_segment_ms=segment_ms, roll_jitter_ms=jitter,
                   max_timestamp_in_batches=batch_ts, max_offset_in_batches=5,
                   batches_size=batches_size, now_ms=now)
    got = should_roll(segment_size=size, segment_base_offset=0, rolling_based_timestamp=first_ts,
                      segment_created_ms=created, offset_index_full=False, time_index_full=False,
                      params=p)
    age = batch_ts - first_ts if first_ts is not None and first_ts >= 0 else now - created
    want = size + batches_size > 1000 or (size > 0 and age + jitter > segment_ms)
    assert got == want
