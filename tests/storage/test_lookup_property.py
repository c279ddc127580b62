"""Property tests against a brute-force model (TEST-BAR "suggested bar" 1 and 3).

Random batch sequences (out-of-order CreateTime, multi-record and compressed batches) into a
log with a tiny segment.bytes (many segments) and tiny index.interval.bytes; then:
* offset_for_timestamp(T) == first record in offset order with ts >= T (model), also -3;
* read(offset) returns the batch holding the offset, and its records equal the model;
* the same after a clean reopen and after an unclean reopen with indexes deleted;
* truncating a segment's .log at any byte, or appending garbage, recovers exactly the valid
  prefix (whole batches) and drops later segments; a second recovery changes nothing.
"""
from __future__ import annotations

import random
import shutil
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from protocol.records.batch import iter_batch_positions
from protocol.records.record import build_batch, decode_batch
from storage.clock import ManualClock
from storage.log import PartitionLog
from storage.log_config import LogConfig

NOW = 1_700_000_000_000

batch_st = st.tuples(
    st.lists(st.integers(0, 60), min_size=1, max_size=4),   # record timestamps (relative)
    st.sampled_from([0, 0, 1, 3]),                           # codec: none, gzip, lz4
)
log_st = st.lists(batch_st, min_size=1, max_size=25)


def make_log(d, seg_bytes, interval, recover=False, recovery_point=0):
    config = LogConfig.from_props({}, {"segment.bytes": str(seg_bytes), "index.interval.bytes": str(interval)})
    return PartitionLog.open(d, config, ManualClock(NOW), recover=recover, recovery_point=recovery_point,
                             rng=random.Random(0))


def populate(log, batches):
    recs = []
    for stamps, codec in batches:
        base = log.log_end_offset
        log.append(build_batch([(None, b"v%d" % (base + i), NOW + t) for i, t in enumerate(stamps)],
                               compression=codec), from_client=False)
        recs.extend((base + i, NOW + t, b"v%d" % (base + i)) for i, t in enumerate(stamps))
    return recs


def expected_lookup(recs, target):
    if target == -3:
        if not recs:
            return None
        mx = max(r[1] for r in recs)
        return next((o, t) for o, t, _ in recs if t == mx)
    return next(((o, t) for o, t, _ in recs if t >= target), None)


def read_all(log):
    out = []
    off = log.log_start_offset
    while off < log.log_end_offset:
        data = log.read(off, 1).data   # min_one: exactly the batch holding `off`
        recs = []
        for pos, _h in iter_batch_positions(data):
            recs.extend((r.offset, r.timestamp, r.value) for r in decode_batch(data, pos)[1])
        assert recs and off <= recs[-1][0]   # the batch holding off, or the next one after a gap
        out.extend(r for r in recs if r[0] >= off)
        off = recs[-1][0] + 1
    return out


def check_against_model(log, recs):
    if recs:
        assert log.log_end_offset >= recs[-1][0] + 1
    assert read_all(log) == recs
    stamps = sorted({t for _, t, _ in recs})
    targets = {-3, 0, NOW - 1, NOW + 1000}
    for t in stamps:
        targets.update((t - 1, t, t + 1))
    for t in sorted(targets):
        assert log.offset_for_timestamp(t) == expected_lookup(recs, t), t


SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(log_st, st.integers(150, 600), st.integers(1, 300))
def test_lookup_and_read_match_model(tmp_path_factory, batches, seg_bytes, interval):
    d = tmp_path_factory.mktemp("p") / "t-0"
    log = make_log(d, seg_bytes, interval)
    recs = populate(log, batches)
    check_against_model(log, recs)
    log.close()
    clean = make_log(d, seg_bytes, interval)
    check_against_model(clean, recs)
    clean.close()
    for p in d.iterdir():
        if p.suffix in (".index", ".timeindex"):
            p.unlink()
    rebuilt = make_log(d, seg_bytes, interval, recover=True)
    check_against_model(rebuilt, recs)


def _snapshot(d: Path):
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


@SETTINGS
@given(log_st, st.integers(150, 600), st.integers(1, 300), st.data())
def test_truncated_or_garbage_log_recovers_valid_prefix(tmp_path_factory, batches, seg_bytes, interval, data):
    d = tmp_path_factory.mktemp("c") / "t-0"
    log = make_log(d, seg_bytes, interval)
    recs = populate(log, batches)
    bases = log.segments.base_offsets()
    for s in log.segments.values():   # crash: no trimming, no roll entries
        s.close_handlers()
    victim = data.draw(st.sampled_from(bases))
    path = d / f"{victim:020d}.log"
    raw = path.read_bytes()
    if data.draw(st.booleans()):
        cut = len(raw)
        path.write_bytes(raw + data.draw(st.binary(min_size=1, max_size=80)))
    else:
        cut = data.draw(st.integers(0, len(raw)))
        path.write_bytes(raw[:cut])
    # The valid prefix: every record before the victim, plus the victim's whole batches that
    # end at or before the cut. (Random garbage forming a CRC-valid batch is not a concern.)
    keep_upto = victim
    boundaries = {0}
    for pos, h in iter_batch_positions(raw):
        end = pos + h.batch_length + 12
        boundaries.add(end)
        if end <= cut:
            keep_upto = h.base_offset + h.last_offset_delta + 1
    torn = path.stat().st_size not in boundaries   # garbage or a cut inside a batch
    recovered = make_log(d, seg_bytes, interval, recover=True)
    if torn:
        # bytes were dropped: everything after the first bad byte goes, later segments too
        expected = [r for r in recs if r[0] < keep_upto]
        assert recovered.segments.base_offsets() == [b for b in bases if b <= victim]
    else:
        # a cut exactly at a batch boundary leaves a shorter but valid segment: nothing is
        # detectably wrong, later segments stay (Kafka behaves the same; gaps are legal)
        nxt = min([b for b in bases if b > victim], default=None)
        expected = [r for r in recs if r[0] < keep_upto or (nxt is not None and r[0] >= nxt)]
    check_against_model(recovered, expected)
    for s in recovered.segments.values():
        s.close_handlers()
    before = _snapshot(d)
    again = make_log(d, seg_bytes, interval, recover=True)
    for s in again.segments.values():
        s.close_handlers()
    assert _snapshot(d) == before, "a second recovery changes nothing"
    shutil.rmtree(d)
