"""The console model's pure pieces against brute-force models: the bounded record decode, the
retention outlook, murmur2 partitioning."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from console.model import decode_from, murmur2, partition_for_key, retention_outlook
from protocol.records.batch import read_header
from protocol.records.record import Record, build_batch, decode_batch


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.binary(max_size=300)), st.binary(max_size=300),
                          st.integers(0, 3)), min_size=1, max_size=40),
       st.integers(0, 3), st.integers(-2, 200), st.integers(1, 50), st.integers(0, 1000))
def test_decode_from_equals_decoding_everything(items, codec, start_delta, limit, base):
    # offsets with gaps, as compaction leaves them
    off, recs = base, []
    for i, (k, v, gap) in enumerate(items):
        off += gap
        recs.append(Record(off, 1_700_000_000_000 + i, k, v, [("h", b"x")] if i % 3 == 0 else []))
        off += 1
    data = build_batch(recs, base_offset=base, compression=codec)
    h = read_header(data)
    start = base + start_delta
    _, everything = decode_batch(data)
    want = [r for r in everything if r.offset >= start][:limit]
    assert decode_from(data, 0, h, start, limit) == want


def test_murmur2_known_values():
    # Kafka's UtilsTest.testMurmur2
    cases = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536,
             b"a-little-bit-longer-string": -1486304829,
             b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971, b"abc": 479470107}
    for data, want in cases.items():
        assert murmur2(data) == want, data
    assert all(0 <= partition_for_key(k, 7) < 7 for k in cases)


def _segs(sizes_ts):
    out, off = [], 0
    for i, (size, ts) in enumerate(sizes_ts):
        out.append({"base_offset": off, "next_offset": off + 10, "size": size, "largest_timestamp": ts,
                    "active": i == len(sizes_ts) - 1})
        off += 10
    return out


@given(st.lists(st.tuples(st.integers(1, 1000), st.integers(0, 10_000)), min_size=1, max_size=12),
       st.integers(-1, 5000), st.integers(-1, 10_000), st.integers(0, 20_000))
def test_retention_outlook_against_a_simulation(sizes_ts, retention_bytes, retention_ms, now):
    segs = _segs(sizes_ts)
    hwm = segs[-1]["next_offset"]
    o = retention_outlook(segs, now_ms=now, retention_ms=retention_ms, retention_bytes=retention_bytes,
                          deletes=True, high_watermark=hwm)
    closed = [s for s in segs if not s["active"]]
    if retention_bytes >= 0:
        # brute force: delete oldest closed segments while the total stays >= retention.bytes after it
        total, gone = sum(s["size"] for s in segs), []
        for s in closed:
            if total - s["size"] < retention_bytes:
                break
            total -= s["size"]
            gone.append(s["base_offset"])
        assert o["size"]["segments_to_delete"] == gone
        nxt = closed[len(gone)] if len(gone) < len(closed) else None
        if nxt is not None:  # once the log grows past this total, the next segment goes too
            assert o["size"]["next_when_total_exceeds"] - sum(s["size"] for s in segs if s["base_offset"] in gone) \
                - nxt["size"] == retention_bytes
    else:
        assert o["size"] is None
    if retention_ms >= 0 and closed:
        t = o["time"]
        assert t["segment_base_offset"] == 0 and t["at_ms"] == closed[0]["largest_timestamp"] + retention_ms + 1
        assert t["overdue"] == (now - closed[0]["largest_timestamp"] > retention_ms)
    else:
        assert o["time"] is None
    assert retention_outlook(segs, now_ms=now, retention_ms=retention_ms, retention_bytes=retention_bytes,
                             deletes=False, high_watermark=hwm)["time"] is None
