"""Log cleaner tests: the invariants of Kafka's LogCleanerTest, LogCleanerManagerTest and
LogCleanerIntegrationTest / LogCleanerLagIntegrationTest (core/src/test/scala/unit/kafka/log/),
ported to our own code. Each test names the Kafka test it mirrors."""
from __future__ import annotations

import asyncio
import random

import pytest

from protocol.records.record import Record, build_batch
from storage.cleaner import CLEANER_OFFSET_CHECKPOINT, Cleaner, LogCleaner, OffsetMap, log_facts
from storage.cleaner.decisions import (
    DELETE, DELETE_EMPTY, LONG_MAX, RETAIN_EMPTY, CleanedTransactionMetadata, LastRecord, LogFacts, SegmentFacts,
    batch_retention, cleanable_offsets, is_batch_last_record_of_producer,
    choose_filthiest, group_segments_by_size, log_to_clean, should_retain_record,
)
from storage.cleaner.cleaner import build_offset_map, snapshot_sources, close_sources, CleanerStats
from storage.clock import ManualClock
from storage.dump import dump_index, dump_log, render
from storage.errors import InvalidRecordError
from storage.log_config import LogConfig
from storage.manager import LogManager
from test_cleaner_helpers import NOW, batches, clean, key_values, open_log, put, records


def fill(log, pairs, roll_every=None):
    """Append (key, value) pairs one batch each, rolling after every ``roll_every`` records."""
    for i, (k, v) in enumerate(pairs):
        put(log, k, v)
        if roll_every and (i + 1) % roll_every == 0:
            log.roll()


def latest_offsets(pairs, upto=None):
    """Brute force: offset of the last record of each key among the first ``upto`` records."""
    last = {}
    for off, (k, _v) in enumerate(pairs[:upto]):
        last[k] = off
    return last


# ---- retention decisions (pure) -------------------------------------------------------------

def test_should_retain_record_rules():
    """Cleaner.shouldRetainRecord: latest offset for the key; tombstones until the horizon."""
    base = dict(has_key=True, has_value=True, map_latest_offset=100, delete_horizon_ms=None, now_ms=1000)
    assert should_retain_record(offset=5, map_offset=5, **base)
    assert not should_retain_record(offset=4, map_offset=5, **base)
    assert should_retain_record(offset=4, map_offset=-1, **base)           # key not in the dirty map
    assert should_retain_record(offset=101, map_offset=200, **base)        # past the map: not scanned
    assert not should_retain_record(offset=5, map_offset=5, **{**base, "has_key": False})
    tomb = {**base, "has_value": False}
    assert should_retain_record(offset=5, map_offset=5, **tomb)            # no horizon yet
    assert should_retain_record(offset=5, map_offset=5, **{**tomb, "delete_horizon_ms": 1001})
    assert not should_retain_record(offset=5, map_offset=5, **{**tomb, "delete_horizon_ms": 1000})


def test_batch_retention_rules():
    """The RecordFilter's checkBatchRetention: an active producer's last batch and the
    round's last batch stay even when emptied; an aborted data batch goes at once; a marker
    whose transaction has no data left loses its record only past its delete horizon."""
    def last_of(pid, last, control=False, epoch=0, rec=None):
        return is_batch_last_record_of_producer(producer_id=pid, batch_last_offset=last, is_control=control,
                                                producer_epoch=epoch, last_record=rec)
    assert not last_of(-1, 9)
    assert last_of(7, 9, rec=LastRecord(9, 0)) and not last_of(7, 9, rec=LastRecord(12, 0))
    assert last_of(7, 9, control=True, epoch=3, rec=LastRecord(None, 3))
    assert not last_of(7, 9, control=False, epoch=3, rec=LastRecord(None, 3))
    assert not last_of(7, 9, control=True, epoch=2, rec=LastRecord(None, 3))

    kw = dict(producer_id=-1, is_control=False, can_discard=False, delete_horizon_ms=None, now_ms=100,
              batch_next_offset=10, is_last_record_of_producer=False, upper_bound_offset_of_round=50)
    assert batch_retention(**kw) == (DELETE_EMPTY, False, False)
    assert batch_retention(**{**kw, "producer_id": 7, "is_last_record_of_producer": True}).retention == RETAIN_EMPTY
    assert batch_retention(**{**kw, "upper_bound_offset_of_round": 10}).retention == RETAIN_EMPTY
    aborted = {**kw, "producer_id": 7, "can_discard": True}
    assert batch_retention(**aborted) == (DELETE, True, False)
    assert batch_retention(**{**aborted, "is_last_record_of_producer": True}) == (RETAIN_EMPTY, True, False)
    marker = {**aborted, "is_control": True}
    assert batch_retention(**marker) == (DELETE_EMPTY, False, True), "no horizon yet: kept, horizon to set"
    assert batch_retention(**{**marker, "delete_horizon_ms": 101}) == (DELETE_EMPTY, False, True)
    assert batch_retention(**{**marker, "delete_horizon_ms": 100}) == (DELETE, True, True)
    assert batch_retention(**{**marker, "can_discard": False, "delete_horizon_ms": 1}) == (DELETE_EMPTY, False, False)


def test_cleaned_transaction_metadata():
    """Kafka's CleanedTransactionMetadata: aborted batches are discardable, an ABORT marker
    whose data was seen stays (and is indexed), markers of transactions without data can go."""
    from storage.index.txn_index import AbortedTxn
    m = CleanedTransactionMetadata()
    index = []
    m.cleaned_index = type("I", (), {"append": lambda self, t: index.append(t)})()
    m.add_aborted_transactions([AbortedTxn(1, 10, 15, 16)])
    assert not m.on_batch_read(2, 9, True)            # p2 commits later
    assert not m.on_batch_read(-1, 9, False)
    assert m.on_batch_read(1, 11, True)              # aborted
    assert not m.on_batch_read(2, 12, True)
    assert not m.on_control_batch_read(2, 13, 1), "COMMIT with data seen stays"
    assert m.on_control_batch_read(2, 14, 1), "COMMIT with no data seen since can go"
    assert not m.on_control_batch_read(1, 15, 0), "ABORT with data seen stays"
    assert index == [AbortedTxn(1, 10, 15, 16)]
    assert m.on_control_batch_read(1, 20, 0), "an ABORT nothing is known of can go"
    assert m.on_control_batch_read(1, 21, None), "an emptied control batch can go"
    assert not m.on_control_batch_read(1, 22, 5), "other control types stay"


# ---- segment grouping (testSegmentGrouping*) -------------------------------------------------

def _segs(bases, size=100, idx=8, tidx=12):
    return [SegmentFacts(b, size, offset_index_bytes=idx, time_index_bytes=tidx) for b in bases]


def test_segment_grouping_by_size():
    """testSegmentGrouping: groups never exceed segment.bytes; every segment in exactly one
    group, in order."""
    segs = _segs(range(0, 100, 10), size=100)
    groups = group_segments_by_size(segs, 250, 10_000, 100)
    assert [[s.base_offset for s in g] for g in groups] == [[0, 10], [20, 30], [40, 50], [60, 70], [80, 90]]
    assert all(sum(s.size for s in g) <= 250 for g in groups)
    assert [s for g in groups for s in g] == segs
    # one segment larger than the limit still forms its own group
    big = [SegmentFacts(0, 1000), SegmentFacts(10, 10)]
    assert [[s.base_offset for s in g] for g in group_segments_by_size(big, 250, 10_000, 20)] == [[0], [10]]


def test_segment_grouping_by_index_size():
    """testSegmentGrouping: offset and time index bytes bounded by segment.index.bytes."""
    segs = _segs(range(0, 50, 10), size=1, idx=40, tidx=12)
    groups = group_segments_by_size(segs, 1 << 30, 100, 50)
    assert [[s.base_offset for s in g] for g in groups] == [[0, 10], [20, 30], [40]]
    segs = _segs(range(0, 50, 10), size=1, idx=8, tidx=48)
    assert [[s.base_offset for s in g] for g in group_segments_by_size(segs, 1 << 30, 100, 50)] == \
        [[0, 10], [20, 30], [40]]


def test_segment_grouping_with_sparse_offsets():
    """testSegmentGroupingWithSparseOffsets / testSegmentGroupingOverflow: a group's offsets
    must fit base + int32; the last candidate is bounded by the first uncleanable offset; an
    empty segment skips the check."""
    m = 0x7FFFFFFF
    segs = [SegmentFacts(0, 10), SegmentFacts(m, 10), SegmentFacts(m + 1, 10)]
    groups = group_segments_by_size(segs, 1 << 30, 1 << 30, m + 5)
    # segment `m` may join 0 (its last offset <= m), `m + 1` may not (bounded by m + 4)
    assert [[s.base_offset for s in g] for g in groups] == [[0, m], [m + 1]]
    segs = [SegmentFacts(0, 10), SegmentFacts(m + 10, 0), SegmentFacts(m + 20, 10)]
    groups = group_segments_by_size(segs, 1 << 30, 1 << 30, m + 30)
    assert [[s.base_offset for s in g] for g in groups] == [[0, m + 10], [m + 20]]


def test_grouping_on_a_real_log_respects_segment_bytes(tmp_path):
    """testSegmentGrouping on a log: cleaning merges small segments into groups no larger
    than segment.bytes, and no offset changes."""
    log = open_log(tmp_path, segment_bytes=1024)
    pairs = [(f"k{i}", f"v{i}") for i in range(60)]
    fill(log, pairs, roll_every=3)
    before = len(log.segments)
    clean(log)
    assert len(log.segments) < before
    assert all(s.size <= 1024 for s in log.segments.values())
    assert [o for o, _k, _v in records(log)] == list(range(60))


# ---- offset map --------------------------------------------------------------------------------

def test_offset_map_capacity_follows_kafka():
    """SkimpyOffsetMap sizing: slots = memory / 24, full at slots * 0.9."""
    m = OffsetMap(24 * 100)
    assert m.slots == 100 and m.max_desired_size == 90
    m.put(b"a", 1)
    m.put(b"a", 5)
    assert m.get(b"a") == 5 and m.get(b"b") == -1 and m.latest_offset == 5 and len(m) == 1
    with pytest.raises(ValueError):
        OffsetMap(24)


def test_build_offset_map(tmp_path):
    """testBuildOffsetMap: every key in [start, end) maps to its last offset; keys before start
    are not mapped; the latest offset is end - 1."""
    log = open_log(tmp_path)
    pairs = [(f"k{i % 7}", f"v{i}") for i in range(40)]
    fill(log, pairs, roll_every=5)
    log.roll()
    for start, end in [(0, 40), (10, 40), (15, 35)]:
        srcs = snapshot_sources(log, end)
        try:
            dirty = [s for s in srcs if s.base_offset + 5 > start and s.base_offset < end]
            m = OffsetMap(1 << 16)
            full = build_offset_map(log.file_ops, dirty, start, end, m, CleanerStats())
        finally:
            close_sources(log.file_ops, srcs)
        assert not full
        want = latest_offsets([(k, v) if i >= start else (None, v) for i, (k, v) in enumerate(pairs)], end)
        want.pop(None, None)
        assert {k: m.get(k.encode()) for k in want} == want
        assert m.latest_offset == end - 1


# ---- cleaning --------------------------------------------------------------------------------

def test_clean_segments_keeps_latest_value_and_offsets(tmp_path):
    """testCleanSegments / LogCleanerIntegrationTest: only the latest record of each key
    survives in the cleaned section; offsets never change; the active segment is untouched."""
    log = open_log(tmp_path)
    rng = random.Random(3)
    pairs = [(f"key{rng.randrange(20)}", f"value{i}") for i in range(300)]
    fill(log, pairs, roll_every=17)
    active_base = log.active_segment.base_offset
    end, stats = clean(log)
    assert end == active_base
    survivors = records(log)
    clean_part = [(o, k) for o, k, _v in survivors if o < active_base]
    want = latest_offsets(pairs, active_base)
    assert sorted(o for o, _k in clean_part) == sorted(want.values())
    for o, k, v in survivors:
        assert (k.decode(), v.decode()) == pairs[o]          # offsets unchanged
    assert [o for o, _k, _v in survivors if o >= active_base] == list(range(active_base, 300))
    assert key_values(log) == {k.encode(): v.encode() for k, v in dict(pairs).items()}
    assert stats.messages_read == active_base and stats.messages_written == len(want)


def test_cleaning_with_deletes(tmp_path):
    """testCleaningWithDeletes: after tombstones for some keys, their older values are gone
    from the cleaned section; the tombstones themselves stay (delete.retention.ms not passed)."""
    log = open_log(tmp_path)
    pairs = [(f"k{i % 10}", f"v{i}") for i in range(50)]
    fill(log, pairs, roll_every=7)
    for k in ("k1", "k3", "k5"):
        put(log, k, None)
    log.roll()
    clean(log)
    kv = key_values(log)
    for k in ("k1", "k3", "k5"):
        assert kv[k.encode()] is None
        assert [v for _o, kk, v in records(log) if kk == k.encode()] == [None]
    assert kv[b"k2"] == b"v42"


def test_clean_tombstone_uses_cleaning_time_not_record_time(tmp_path):
    """testCleanTombstone (KIP-534): a tombstone written with an ancient timestamp survives
    the first cleaning, which stamps its batch with delete horizon = cleaning time +
    delete.retention.ms; it goes only at a cleaning at or after that horizon."""
    clock = ManualClock(NOW)
    log = open_log(tmp_path, clock, delete_retention_ms=10_000)
    put(log, "a", "1", ts=1000)
    put(log, "a", None, ts=1000)        # tombstone with an old CreateTime
    put(log, "b", "x", ts=1000)
    log.roll()
    clean(log)
    tomb = [(h, r) for _b, h, rs in batches(log) for r in rs if r.key == b"a"]
    assert [r.value for _h, r in tomb] == [None]
    h, r = tomb[0]
    assert h.has_delete_horizon and h.base_timestamp == NOW + 10_000
    assert r.timestamp == 1000 and h.max_timestamp == 1000     # record time kept
    clock.set(NOW + 9_999)
    clean(log)
    assert (b"a", None) in [(k, v) for _o, k, v in records(log)]
    clock.set(NOW + 10_000)
    clean(log)
    assert b"a" not in key_values(log)
    assert key_values(log) == {b"b": b"x"}


def test_cleaning_with_uncleanable_section(tmp_path):
    """testCleaningWithUncleanableSection / LogCleanerLagIntegrationTest: segments younger than
    min.compaction.lag.ms (and the active segment) keep every duplicate."""
    clock = ManualClock(NOW)
    log = open_log(tmp_path, clock, min_compaction_lag_ms=60_000)
    old = [(f"k{i % 3}", f"old{i}") for i in range(12)]
    for k, v in old:
        put(log, k, v, ts=NOW - 120_000)
    log.roll()
    young = [(f"k{i % 3}", f"young{i}") for i in range(9)]
    for k, v in young:
        put(log, k, v, ts=NOW)
    log.roll()
    put(log, "k0", "active")
    facts = log_facts(log)
    offs = cleanable_offsets(facts, None, NOW)
    assert offs.first_uncleanable_dirty_offset == 12
    end, _ = clean(log)
    assert end == 12
    recs = records(log)
    assert [o for o, _k, _v in recs if o < 12] == [9, 10, 11]
    assert [o for o, _k, _v in recs if o >= 12] == list(range(12, 22))   # untouched


def test_cleaning_removes_unkeyed_messages(tmp_path):
    """testCleaningWithUnkeyedMessages: records without a key in a compacted log (written
    before the topic became compacted) are dropped by the cleaner and counted invalid."""
    log = open_log(tmp_path, cleanup_policy="delete")
    for i in range(6):
        put(log, None if i % 2 else f"k{i}", f"v{i}")
    log.roll()
    log.set_config(LogConfig.from_props({}, {"cleanup.policy": "compact"}))
    _, stats = clean(log)
    assert [(o, k) for o, k, _v in records(log)] == [(0, b"k0"), (2, b"k2"), (4, b"k4")]
    assert stats.invalid_messages == 3


def test_compacted_topic_rejects_keyless_records(tmp_path):
    """testCompactedTopicConstraints: a compacted log refuses client records without a key."""
    log = open_log(tmp_path)
    with pytest.raises(InvalidRecordError):
        put(log, None, "v")
    assert log.log_end_offset == 0


def test_partial_passes_when_the_offset_map_fills(tmp_path):
    """testPartialSegmentClean / LogCleanerParameterizedIntegrationTest with a small dedupe
    buffer: a dirty section with more keys than the map holds is cleaned in several rounds,
    each moving the first dirty offset on; the end result is the same as with a big map."""
    log = open_log(tmp_path)
    rng = random.Random(9)
    pairs = [(f"k{rng.randrange(60)}", f"v{i}") for i in range(400)]
    fill(log, pairs, roll_every=25)
    active = log.active_segment.base_offset
    cleaner = Cleaner(OffsetMap(24 * 30))          # 27 keys per pass
    first_dirty, passes = 0, 0
    while first_dirty < active:
        end, _ = clean(log, first_dirty=first_dirty, cleaner=cleaner)
        assert end > first_dirty
        first_dirty, passes = end, passes + 1
    assert passes > 1
    want = latest_offsets(pairs, active)
    assert sorted(o for o, _k, _v in records(log) if o < active) == sorted(want.values())


def test_cleaned_batches_keep_producer_fields_codec_and_time_index(tmp_path):
    """testCleanSegments(with compression) / BrokerCompressionTest spirit: rebuilt batches keep
    base offset, last offset delta, producer id/epoch/base sequence, codec and leader epoch;
    the max timestamp is that of the survivors, and the cleaned segment's time and offset
    indexes agree with its log (DumpLogSegments --index-sanity-check)."""
    log = open_log(tmp_path, index_interval_bytes=1)
    recs = [Record(i, NOW + 10 * i, f"k{i % 2}".encode(), f"v{i}".encode()) for i in range(4)]
    log.append(build_batch(recs, compression=1, producer_id=42, producer_epoch=3, base_sequence=0),
               partition_leader_epoch=5)
    put(log, "z", "tail", ts=NOW + 5)
    put(log, "k9", "x", ts=NOW + 100)
    log.roll()
    clean(log)
    (b0, h0, rs0), (_b1, h1, _rs1), (_b2, h2, _rs2) = batches(log)
    assert [(r.offset, r.key, r.value) for r in rs0] == [(2, b"k0", b"v2"), (3, b"k1", b"v3")]
    assert (h0.base_offset, h0.last_offset_delta, h0.producer_id, h0.producer_epoch, h0.base_sequence,
            h0.compression, h0.partition_leader_epoch) == (0, 3, 42, 3, 0, 1, 5)
    assert h0.max_timestamp == NOW + 30 and not h0.has_delete_horizon
    seg = log.segments.first_segment
    for p in (seg.offset_index.path, seg.time_index.path):
        d = dump_index(p)
        assert d.checked and d.ok, d.mismatches
    assert [e[0] for e in dump_index(seg.time_index.path).entries][-1] == NOW + 100
    assert log.lookup_timestamp(NOW + 25).offset == 3      # time lookups still exact
    text = render(dump_log(seg.log_path, deep=True))
    assert "baseOffset: 0 lastOffset: 3 count: 2" in text and "compresscodec: gzip" in text
    assert "| offset: 2 CreateTime: %d keySize: 2 valueSize: 2" % (NOW + 20) in text


def test_log_append_time_batches_survive_cleaning(tmp_path):
    """Rebuilt LogAppendTime batches keep their append time as max timestamp and record time."""
    log = open_log(tmp_path, message_timestamp_type="LogAppendTime")
    log.append(build_batch([(b"a", b"1", 5), (b"b", b"1", 6)]))
    log.clock.advance(1000)
    put(log, "a", "2")
    log.roll()
    clean(log)
    (_b, h, rs), _ = batches(log)
    assert h.timestamp_type == 1 and h.max_timestamp == NOW
    assert [(r.offset, r.key, r.timestamp) for r in rs] == [(1, b"b", NOW)]


def test_producer_last_batch_is_retained_empty(tmp_path):
    """testLogCleanerRetainsProducerLastSequence / testDuplicateCheckAfterCleaning: the last
    batch of an active idempotent producer stays (as an empty batch if its records were
    superseded) so its sequence numbers survive; a retry is still a duplicate."""
    log = open_log(tmp_path)
    log.append(build_batch([(b"a", b"1", NOW)], producer_id=7, producer_epoch=0, base_sequence=0))
    log.append(build_batch([(b"a", b"2", NOW)], producer_id=7, producer_epoch=0, base_sequence=1))
    put(log, "a", "3")
    put(log, "b", "x")
    log.roll()
    clean(log)
    bs = [(h.base_offset, h.producer_id, h.base_sequence, h.records_count) for _b, h, _r in batches(log)]
    assert bs == [(1, 7, 1, 0), (2, -1, -1, 1), (3, -1, -1, 1)]
    dup = log.append(build_batch([(b"a", b"2", NOW)], producer_id=7, producer_epoch=0, base_sequence=1))
    assert dup.duplicate and dup.base_offset == 1


def test_last_batch_of_round_is_retained(tmp_path):
    """The batch ending the cleaning round stays even when emptied, so the cleaned section
    still ends at the same offset."""
    log = open_log(tmp_path, delete_retention_ms=0)
    put(log, "a", "1")
    put(log, "a", None)
    log.roll()
    put(log, "c", "1")
    clean(log, now=NOW)
    log.clock.advance(1)
    clean(log, first_dirty=0)
    (_b, h, rs), _ = batches(log)
    assert (h.base_offset, h.records_count, rs) == (1, 0, [])
    assert records(log) == [(2, b"c", b"1")]


def test_empty_last_segment_of_group_leaves_a_batch(tmp_path):
    """Crash-safety addition: when nothing of a group's last segment survives, its last batch
    stays as an empty batch, so an interrupted swap's offset range covers that segment."""
    log = open_log(tmp_path, segment_bytes=200)
    put(log, "a", "1")
    log.roll()
    put(log, "b", "1")          # superseded by offset 2, in the next group
    log.roll()
    put(log, "b", "2")
    put(log, "c", "2")
    log.roll()
    put(log, "d", "x")
    log.roll()
    put(log, "e", "active")
    clean(log)
    layout = [(b, h.base_offset, h.records_count) for b, h, _r in batches(log)]
    assert layout == [(0, 0, 1), (0, 1, 0), (2, 2, 1), (2, 3, 1), (4, 4, 1), (5, 5, 1)]
    assert [(o, k) for o, k, _v in records(log)] == [(0, b"a"), (2, b"b"), (3, b"c"), (4, b"d"), (5, b"e")]


# ---- cleaner manager (LogCleanerManagerTest) -------------------------------------------------------

def _facts(sizes, *, start=0, lag=0, stamps=None, max_lag=LONG_MAX):
    segs, base = [], start
    for i, size in enumerate(sizes):
        ts = stamps[i] if stamps else NOW - 1_000_000
        segs.append(SegmentFacts(base, size, ts, ts))
        base += 10
    return LogFacts(segs, start, base - 10 + (5 if sizes[-1] else 0), base - 10 + (5 if sizes[-1] else 0),
                    lag, max_lag, 0.5)


def test_cleanable_offsets_reset_bad_checkpoints():
    """testCleanableOffsetsForNone / testCleanableOffsetsNeedsCheckpointReset: a checkpoint below
    the log start or past the log end resets to the log start and must be rewritten."""
    facts = _facts([100, 100, 100, 10], start=0)
    o = cleanable_offsets(facts, None, NOW)
    assert (o.first_dirty_offset, o.first_uncleanable_dirty_offset) == (0, 30)
    below = LogFacts(facts.segments, 10, facts.log_end_offset, facts.last_stable_offset)
    o = cleanable_offsets(below, 5, NOW)
    assert (o.first_dirty_offset, o.force_update_checkpoint) == (10, True)
    o = cleanable_offsets(facts, 1000, NOW)
    assert (o.first_dirty_offset, o.force_update_checkpoint) == (0, True)
    o = cleanable_offsets(facts, 20, NOW)
    assert (o.first_dirty_offset, o.first_uncleanable_dirty_offset, o.force_update_checkpoint) == (20, 30, False)


def test_cleanable_offsets_min_compaction_lag():
    """testCleanableOffsetsActiveSegment / testCleanableOffsetsForTime: the first segment whose
    largest timestamp is within min.compaction.lag.ms is the first uncleanable offset."""
    facts = _facts([100, 100, 100, 10], lag=60_000, stamps=[NOW - 100_000, NOW - 30_000, NOW - 90_000, NOW])
    assert cleanable_offsets(facts, None, NOW).first_uncleanable_dirty_offset == 10


def test_dirty_ratio_and_filthiest():
    """LogToClean / grabFilthiestCompactedLog: ratio = dirty bytes / (clean + dirty) bytes;
    the highest ratio above min.cleanable.dirty.ratio wins; below it nothing is chosen."""
    a = log_to_clean("a", _facts([100, 100, 100, 10]), 10, NOW)       # clean 100, dirty 200
    b = log_to_clean("b", _facts([100, 100, 100, 10]), 20, NOW)       # clean 200, dirty 100
    assert (a.clean_bytes, a.cleanable_bytes, round(a.cleanable_ratio, 3)) == (100, 200, 0.667)
    assert choose_filthiest([(b, 0.5), (a, 0.5)]) is a
    assert choose_filthiest([(b, 0.5)]) is None
    assert choose_filthiest([(b, 0.3)]) is b


def test_max_compaction_lag_forces_cleaning():
    """testMaxLogCompactionLag / LogCleanerLagIntegrationTest: a dirty ratio below the minimum
    is still cleaned once its oldest dirty batch is older than max.compaction.lag.ms."""
    facts = _facts([100, 100, 100, 10], stamps=[NOW - 10_000] * 4, max_lag=5_000)
    ltc = log_to_clean("x", facts, 20, NOW)
    assert ltc.cleanable_ratio < 0.5 and ltc.need_compaction_now
    assert choose_filthiest([(ltc, 0.5)]) is ltc
    lazy = log_to_clean("x", _facts([100, 100, 100, 10], stamps=[NOW - 10_000] * 4, max_lag=50_000), 20, NOW)
    assert choose_filthiest([(lazy, 0.5)]) is None


def _manager(tmp_path, clock, **topics):
    lm = LogManager([str(tmp_path / "data")], {}, clock)
    lm.load()
    logs = {}
    for name, overrides in topics.items():
        logs[name] = lm.create(name, 0, overrides)
    return lm, logs


def test_manager_cleans_only_compacted_logs_and_checkpoints(tmp_path):
    """testDoesntCleanLogsWithCompactPolicy (reversed) + cleaner-offset-checkpoint: only
    compacted logs are picked; the first dirty offset is written in Kafka's checkpoint format."""
    clock = ManualClock(NOW)
    lm, logs = _manager(tmp_path, clock, prices={"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"},
                        plain={"cleanup.policy": "delete"})
    for name in ("prices", "plain"):
        for i in range(10):
            put(logs[name], f"k{i % 2}", f"v{i}")
        logs[name].roll()
    cleaner = LogCleaner(lm)
    assert cleaner.clean_once()
    assert not cleaner.clean_once()          # nothing dirty any more
    assert len(records(logs["plain"])) == 10
    assert [o for o, _k, _v in records(logs["prices"])] == [8, 9]
    cp = (tmp_path / "data" / CLEANER_OFFSET_CHECKPOINT).read_text()
    assert cp == "0\n1\nprices 0 10\n"
    assert cleaner.cleaning_state(("prices", 0)) is None


def test_deleted_topic_leaves_the_checkpoint(tmp_path):
    """LogCleanerManager.updateCheckpoints(partitionToRemove): deleting a partition drops its
    checkpoint entry."""
    clock = ManualClock(NOW)
    lm, logs = _manager(tmp_path, clock, a={"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"},
                        b={"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"})
    for lg in logs.values():
        put(lg, "k", "1")
        put(lg, "k", "2")
        lg.roll()
    cleaner = LogCleaner(lm)
    assert cleaner.clean_once() and cleaner.clean_once()
    assert (tmp_path / "data" / CLEANER_OFFSET_CHECKPOINT).read_text() == "0\n2\na 0 2\nb 0 2\n"
    lm.delete_topic("a")
    assert (tmp_path / "data" / CLEANER_OFFSET_CHECKPOINT).read_text() == "0\n1\nb 0 2\n"


def test_compact_and_delete_topic_loses_old_segments(tmp_path):
    """testCleansCombinedCompactAndDeleteTopic / shouldDeleteSegmentsReadyToBeDeletedWhenCleanup
    PolicyIsCompactAndDelete: compact,delete is cleaned and also loses whole old segments by
    retention.ms; compact alone keeps them."""
    clock = ManualClock(NOW)
    both = {"cleanup.policy": "compact,delete", "retention.ms": "60000", "min.cleanable.dirty.ratio": "0.01"}
    lm, logs = _manager(tmp_path, clock, both=both, compact={**both, "cleanup.policy": "compact"})
    for lg in logs.values():
        for i in range(6):
            put(lg, f"k{i}", "old", ts=NOW - 120_000)
        put(lg, "k0", "old2", ts=NOW - 120_000)
        lg.roll()
        for i in range(3):
            put(lg, f"n{i}", "new", ts=NOW)
    cleaner = LogCleaner(lm)
    # each round cleans one log, then applies retention to the compacted logs not in progress
    assert cleaner.clean_once() and cleaner.clean_once()
    assert sorted(key_values(logs["both"])) == [b"n0", b"n1", b"n2"]
    assert logs["both"].log_start_offset == 7
    assert key_values(logs["compact"])[b"k0"] == b"old2"
    assert len(key_values(logs["compact"])) == 9 and logs["compact"].log_start_offset == 0
    assert [o for o, _k, _v in records(logs["compact"])] == [1, 2, 3, 4, 5, 6, 7, 8, 9]


def test_retention_waits_while_a_log_is_being_cleaned(tmp_path):
    """Kafka never runs deletion and cleaning of a compacted log at once."""
    log = open_log(tmp_path, cleanup_policy="compact,delete", retention_ms=1)
    put(log, "a", "1", ts=0)
    log.roll()
    log.cleaning_in_progress = True
    assert log.delete_old_segments() == 0
    log.cleaning_in_progress = False
    assert log.delete_old_segments() == 1


def test_swap_refused_when_the_log_changed(tmp_path):
    """A cleaning whose segments were truncated away meanwhile swaps nothing and leaves no
    .cleaned files (the abort path)."""
    log = open_log(tmp_path)
    fill(log, [("a", "1"), ("a", "2"), ("b", "3")], roll_every=1)
    ltc = log_to_clean(("t", 0), log_facts(log), None, NOW)
    cleaner = Cleaner(OffsetMap(1 << 16))

    def run(fn, *args):
        from storage.cleaner.cleaner import run_inline
        if fn.__name__ == "_clean_group_guarded":
            log.truncate_to(1)
        return run_inline(fn, *args)

    from storage.cleaner.cleaner import CleaningAbortedError, drive
    with pytest.raises(CleaningAbortedError):
        drive(cleaner.clean_async(log, ltc, NOW, run=run))
    assert not [p for p in log.dir.iterdir() if p.name.endswith(".cleaned")]
    assert records(log) == [(0, b"a", b"1")]


def test_background_cleaner_with_threads_while_appending(tmp_path, monkeypatch):
    """LogConcurrencyTest spirit: the cleaner runs its file work in worker threads while the
    event loop keeps appending and rolling; in the end every key reads its latest value and
    the cleaned section holds one record per key."""
    import threading
    import storage.cleaner.cleaner as cleaner_mod
    copy_threads = set()
    real = cleaner_mod.clean_group_into

    def spy(*a, **kw):
        copy_threads.add(threading.current_thread().name)
        return real(*a, **kw)
    monkeypatch.setattr(cleaner_mod, "clean_group_into", spy)
    clock = ManualClock(NOW)
    lm, logs = _manager(tmp_path, clock, t={"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01",
                                            "segment.bytes": "2000"})
    log = logs["t"]
    cleaner = LogCleaner(lm, threads=2, backoff_ms=1)
    rng = random.Random(5)
    model = {}

    async def main():
        task = asyncio.create_task(cleaner.run())
        for i in range(1500):
            k = f"k{rng.randrange(40)}"
            put(log, k, f"v{i}")
            model[k.encode()] = f"v{i}".encode()
            if i % 50 == 0:
                await asyncio.sleep(0.002)
        log.roll()
        for _ in range(400):
            if cleaner.cleaning_state(("t", 0)) is None and records(log)[0][0] > 0 and \
                    len({k for o, k, _v in records(log)}) == len(records(log)):
                break
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(main())
    assert key_values(log) == model
    recs = records(log)
    assert len({k for _o, k, _v in recs}) == len(recs)
    assert [o for o, _k, _v in recs] == sorted(o for o, _k, _v in recs)
    assert cleaner.rounds > 1
    assert copy_threads and all(n.startswith("log-cleaner") for n in copy_threads)   # never the loop
