"""Property test of the cleaner against a brute-force model (the invariants of Kafka's
LogCleanerTest.testCleanSegments / testCleaningWithDeletes / testPartialSegmentClean and
LogCleanerParameterizedIntegrationTest, over random inputs).

Random keyed writes (multi-record batches, some compressed, with tombstones), random segment
rolls, and a random offset-map size (so some runs need several passes). After every pass,
with ``end`` the offset the pass reached:

* the records left below ``end`` are exactly the latest record of each key among offsets
  ``< end`` (tombstones included while delete.retention.ms has not passed);
* every record at or past ``end`` is untouched;
* offsets never change (each surviving record is the one written at that offset);
* key -> latest value read from the log equals the model.

Then, once the delete horizon has passed and new data makes the log dirty again, a further
cleaning drops every tombstone of the cleaned section and nothing else.
"""
from __future__ import annotations

import random
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.records.record import build_batch
from storage.cleaner import Cleaner, OffsetMap
from storage.clock import ManualClock
from storage.log import PartitionLog
from test_cleaner_helpers import NOW, clean, compact_cfg, put, records

KEYS = [f"key-{i}".encode() for i in range(6)]
DELETE_RETENTION_MS = 1000

record_st = st.tuples(st.integers(0, len(KEYS) - 1), st.one_of(st.none(), st.binary(min_size=0, max_size=6)))
batch_st = st.tuples(st.lists(record_st, min_size=1, max_size=4), st.sampled_from([0, 1]), st.booleans())


def latest_per_key(written, upto):
    last = {}
    for off, (k, _v) in enumerate(written[:upto]):
        last[k] = off
    return last


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(batch_st, min_size=1, max_size=25), slots=st.integers(2, 40))
def test_cleaning_matches_the_model(batches, slots):
    tmp = Path(tempfile.mkdtemp(prefix="cleaner-prop-"))
    try:
        clock = ManualClock(NOW)
        log = PartitionLog.open(tmp / "t-0", compact_cfg(delete_retention_ms=DELETE_RETENTION_MS,
                                                          segment_index_bytes=4096),
                                clock, recover=False, rng=random.Random(0))
        written = []            # offset -> (key, value)
        for recs, codec, roll_after in batches:
            log.append(build_batch([(KEYS[k], v, NOW) for k, v in recs], compression=codec))
            written.extend((KEYS[k], v) for k, v in recs)
            if roll_after:
                log.roll()
        uncleanable = log.active_segment.base_offset
        cleaner = Cleaner(OffsetMap(24 * slots))
        first_dirty = 0
        while True:
            end, _ = clean(log, first_dirty=first_dirty, cleaner=cleaner)
            got = records(log)
            for off, k, v in got:
                assert written[off] == (k, v)                       # offsets never change
            want_below = sorted(latest_per_key(written, end).values())
            assert [o for o, _k, _v in got if o < end] == want_below
            assert [o for o, _k, _v in got if o >= end] == list(range(end, len(written)))
            model = {k: v for k, v in written}
            assert {k: v for _o, k, v in got} == model
            if end >= uncleanable:
                break
            assert end > first_dirty
            first_dirty = end
        assert end == uncleanable

        # Past the delete horizon, new dirty data triggers a cleaning that drops tombstones.
        clock.advance(DELETE_RETENTION_MS + 1)
        if log.active_segment.size:
            log.roll()
        put(log, "fresh", "x")
        log.roll()
        target = log.active_segment.base_offset
        while end < target:
            nxt, _ = clean(log, first_dirty=end, cleaner=cleaner)
            assert nxt > end
            end = nxt
        written.append((b"fresh", b"x"))
        got = records(log)
        # latest of each key; tombstones stamped by the first cleaning (offsets below its
        # uncleanable offset) are past their horizon, newer ones just got theirs
        want = sorted(o for o in latest_per_key(written, len(written)).values()
                      if written[o][1] is not None or o >= uncleanable)
        assert [o for o, _k, _v in got] == want
        for off, k, v in got:
            assert written[off] == (k, v)
        log.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
