"""Tests for storage.retention, porting the retention rows of UnifiedLogTest
(core/src/test/scala/unit/kafka/log/UnifiedLogTest.scala): shouldDeleteTimeBasedSegmentsReadyToBeDeleted,
shouldNotDeleteTimeBasedSegmentsWhenNoneReadyToBeDeleted, shouldDeleteSizeBasedSegments,
shouldNotDeleteSizeBasedSegmentsWhenUnderRetentionSize, shouldNotDeleteSegmentsWhenPolicyDoesNotIncludeDelete,
shouldDeleteSegmentsReadyToBeDeletedWhenCleanupPolicyIsCompactAndDelete,
shouldDeleteStartOffsetBreachedSegmentsWhenPolicyDoesNotIncludeDelete, testLogDeletionAfterDeleteRecords,
testRetentionIdempotency, testCannotDeleteSegmentsAtOrAboveHighWatermark; and
LogManagerTest.testDoesntCleanLogsWithCompactPolicy."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from storage.log_config import LogConfig
from storage.retention import (
    SegmentSnapshot,
    delete_old_segments,
    plan_retention,
    retention_time_predicate,
)

NOW = 1_000_000_000


def cfg(**overrides) -> LogConfig:
    return LogConfig.from_props({}, {k.replace("_", "."): str(v) for k, v in overrides.items()})


def make_segments(n, per=5, size=100, ts=lambda i: 10, empty_active=False):
    segs = [SegmentSnapshot(i * per, (i + 1) * per, size, ts(i)) for i in range(n)]
    if empty_active:
        segs.append(SegmentSnapshot(n * per, n * per, 0, NOW))
    return segs


def plan(segs, config, *, lso=0, hwm=None, now=NOW):
    return plan_retention(segs, now_ms=now, config=config, log_start_offset=lso,
                          high_watermark=segs[-1].next_offset if hwm is None else hwm)


def apply(segs, p, now=NOW):
    """What the log does with a plan."""
    gone = {s.base_offset for s in p.to_delete}
    rest = [s for s in segs if s.base_offset not in gone]
    if p.roll_first:
        leo = segs[-1].next_offset
        rest.append(SegmentSnapshot(leo, leo, 0, now))
    return rest


def test_delete_time_based_segments_ready_to_be_deleted():
    """shouldDeleteTimeBasedSegmentsReadyToBeDeleted: all 15 old segments go; the log rolls
    a new active segment first so it keeps one."""
    segs = make_segments(15)
    p = plan(segs, cfg(retention_ms=10_000))
    assert p.to_delete == segs and p.roll_first
    assert p.new_log_start_offset == 75 and p.reason == "retention_ms_breach"
    assert [s.base_offset for s in apply(segs, p)] == [75]


def test_not_delete_time_based_segments_when_none_ready():
    segs = make_segments(15, ts=lambda i: NOW)
    p = plan(segs, cfg(retention_ms=10_000_000))
    assert p.to_delete == [] and not p.roll_first and p.new_log_start_offset == 0


def test_time_retention_uses_largest_timestamp_and_boundary():
    segs = [SegmentSnapshot(0, 5, 10, NOW - 1001), SegmentSnapshot(5, 10, 10, NOW - 1000),
            SegmentSnapshot(10, 15, 10, NOW)]
    p = plan(segs, cfg(retention_ms=1000))
    assert p.to_delete == segs[:1]     # strictly older than retention.ms


def test_stops_at_first_kept_segment():
    """Oldest first, stop at the first kept: an expired segment after a fresh one stays."""
    ts = [0, NOW, 0, 0]
    segs = make_segments(4, ts=lambda i: ts[i])
    p = plan(segs, cfg(retention_ms=1000))
    assert p.to_delete == segs[:1]


def test_delete_size_based_segments():
    """shouldDeleteSizeBasedSegments: 3 segments of 5 records, retention = 10 records."""
    segs = make_segments(3, size=500, ts=lambda i: NOW)
    p = plan(segs, cfg(retention_bytes=1000))
    assert p.to_delete == segs[:1] and p.reason == "retention_size_breach"
    assert len(apply(segs, p)) == 2


def test_not_delete_size_based_segments_when_under_retention_size():
    segs = make_segments(3, size=500, ts=lambda i: NOW)
    assert plan(segs, cfg(retention_bytes=1500)).to_delete == []
    assert plan(segs, cfg(retention_bytes=1499)).to_delete == []   # 1500-500 < 1499: keep
    assert plan(segs, cfg(retention_bytes=1000)).to_delete == segs[:1]


def test_policy_without_delete_never_deletes_by_time_or_size():
    """shouldNotDeleteSegmentsWhenPolicyDoesNotIncludeDelete / testDoesntCleanLogsWithCompactPolicy."""
    segs = make_segments(5, ts=lambda i: 0)
    p = plan(segs, cfg(cleanup_policy="compact", retention_ms=1, retention_bytes=1))
    assert p.to_delete == []


def test_compact_and_delete_deletes_by_time():
    """shouldDeleteSegmentsReadyToBeDeletedWhenCleanupPolicyIsCompactAndDelete."""
    segs = make_segments(5, ts=lambda i: 0)
    p = plan(segs, cfg(cleanup_policy="compact,delete", retention_ms=10_000))
    assert p.to_delete == segs and p.roll_first


def test_log_start_offset_breach_deletes_even_when_compacted():
    """shouldDeleteStartOffsetBreachedSegmentsWhenPolicyDoesNotIncludeDelete /
    testLogDeletionAfterDeleteRecords: segments wholly below the log start offset go."""
    segs = make_segments(4, ts=lambda i: NOW)
    config = cfg(cleanup_policy="compact")
    assert plan(segs, config, lso=4).to_delete == []          # inside segment 0
    p = plan(segs, config, lso=5)
    assert p.to_delete == segs[:1] and p.reason == "log_start_offset_breach"
    p = plan(segs, config, lso=17)
    assert p.to_delete == segs[:3] and p.new_log_start_offset == 17
    # the last segment is never deleted for the log start offset
    assert plan(segs, config, lso=20).to_delete == segs[:3]


def test_cannot_delete_segments_at_or_above_high_watermark():
    """testCannotDeleteSegmentsAtOrAboveHighWatermark."""
    segs = make_segments(4, ts=lambda i: 0)
    config = cfg(retention_ms=1000)
    assert plan(segs, config, hwm=0).to_delete == []
    assert plan(segs, config, hwm=4).to_delete == []           # segment 0 ends at 5
    assert plan(segs, config, hwm=5).to_delete == segs[:1]
    assert plan(segs, config, hwm=19).to_delete == segs[:3]    # active needs HWM >= LEO
    p = plan(segs, config, hwm=20)
    assert p.to_delete == segs and p.roll_first


def test_empty_active_segment_is_never_deleted():
    segs = make_segments(3, ts=lambda i: 0, empty_active=True)
    p = plan(segs, cfg(retention_ms=1000))
    assert p.to_delete == segs[:3] and not p.roll_first


def test_retention_idempotency():
    """testRetentionIdempotency: running retention again right away deletes nothing."""
    segs = make_segments(6, ts=lambda i: 0 if i < 3 else NOW)
    config = cfg(retention_ms=1000)
    p = plan(segs, config)
    rest = apply(segs, p)
    assert len(p.to_delete) == 3
    p2 = plan(rest, config, lso=p.new_log_start_offset)
    assert p2.to_delete == [] and p2.new_log_start_offset == p.new_log_start_offset


def test_passes_run_in_kafka_order_on_what_is_left():
    segs = make_segments(6, size=100, ts=lambda i: 0 if i == 4 else NOW)
    p = plan(segs, cfg(retention_bytes=300, retention_ms=1000), lso=6)
    # lso removes seg 0; size: 500 left, diff 200 -> segs 1,2; time: seg 3 fresh -> stop
    assert [s.base_offset for s in p.to_delete] == [0, 5, 10]
    assert p.reasons == ["log_start_offset_breach", "retention_size_breach", "retention_size_breach"]


def test_delete_old_segments_predicate_not_called_past_hwm():
    calls = []

    def pred(seg, nxt):
        calls.append(seg.base_offset)
        return True
    segs = make_segments(4)
    assert delete_old_segments(segs, pred, high_watermark=10) == segs[:2]
    assert calls == [0, 5]
    assert delete_old_segments(segs, retention_time_predicate(NOW, 1), high_watermark=20) == segs


# ----------------------------------------------------------------- model

def model(segs, *, now, retention_ms, retention_bytes, delete, lso, hwm):
    """Declarative model: each pass removes the longest prefix whose every segment meets the
    pass condition (found by trying every prefix length, longest first)."""
    remaining = list(segs)
    deleted = []
    leo = segs[-1].next_offset

    def upper(i, lst):
        return lst[i + 1].base_offset if i + 1 < len(lst) else lst[i].next_offset

    def prefix_ok(lst, k, cond):
        if k == len(lst) and lst[-1].size_bytes == 0:
            return False
        return all(upper(i, lst) <= hwm and cond(i, lst) for i in range(k))

    def run(cond):
        nonlocal remaining
        k = next(k for k in range(len(remaining), -1, -1) if prefix_ok(remaining, k, cond))
        if k == 0:
            return
        if k == len(remaining):
            remaining = remaining + [SegmentSnapshot(leo, leo, 0, now)]
        deleted.extend(remaining[:k])
        remaining = remaining[k:]

    run(lambda i, lst: i + 1 < len(lst) and lst[i + 1].base_offset <= lso)
    if delete:
        total = sum(s.size_bytes for s in remaining)
        if retention_bytes >= 0 and total >= retention_bytes:
            run(lambda i, lst: sum(s.size_bytes for s in lst[:i + 1]) <= total - retention_bytes)
        if retention_ms >= 0:
            run(lambda i, lst: now - lst[i].largest_timestamp > retention_ms)
    return deleted


segment_lists = st.lists(
    st.tuples(st.integers(0, 4), st.integers(0, 300), st.integers(0, 2000)),
    min_size=1, max_size=8)


@settings(max_examples=300, deadline=None)
@given(spec=segment_lists, retention_ms=st.integers(-1, 2000), retention_bytes=st.integers(-1, 1500),
       policy=st.sampled_from(["delete", "compact", "compact,delete"]),
       lso_frac=st.one_of(st.just(0.0), st.floats(0, 1)),
       hwm_frac=st.one_of(st.just(1.0), st.floats(0, 1)))
def test_property_plan_matches_model(spec, retention_ms, retention_bytes, policy, lso_frac, hwm_frac):
    """plan_retention vs the brute-force model; and applying a plan is idempotent."""
    now = 2000
    segs, off = [], 0
    for count, size, ts in spec:
        size = 0 if count == 0 else max(size, 1)
        segs.append(SegmentSnapshot(off, off + count, size, ts))
        off += count
    # keep base offsets strictly increasing: merge zero-length segments except the last
    segs = [s for i, s in enumerate(segs) if s.next_offset > s.base_offset or i == len(segs) - 1]
    if len({s.base_offset for s in segs}) != len(segs):
        return
    leo = segs[-1].next_offset
    lso = int(lso_frac * leo)
    hwm = int(hwm_frac * leo)
    config = cfg(retention_ms=retention_ms, retention_bytes=retention_bytes, cleanup_policy=policy)
    p = plan_retention(segs, now_ms=now, config=config, log_start_offset=lso, high_watermark=hwm)
    want = model(segs, now=now, retention_ms=retention_ms, retention_bytes=retention_bytes,
                 delete=config.delete, lso=lso, hwm=hwm)
    assert p.to_delete == want
    assert p.roll_first == (len(want) > 0 and want[-1] == segs[-1])
    rest = apply(segs, p, now)
    p2 = plan_retention(rest, now_ms=now, config=config, log_start_offset=p.new_log_start_offset,
                        high_watermark=hwm)
    assert p2.to_delete == []
    assert p.new_log_start_offset <= max(hwm, lso)
