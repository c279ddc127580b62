"""Time index tests; mirror Kafka's TimeIndexTest (storage/.../log/TimeIndexTest.java)."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings, strategies as st

from storage.index import (
    CorruptIndexError, IndexFullError, IndexOffsetOverflowError, InvalidOffsetError, TimeIndex,
    TimestampOffset,
)

BASE = 45
MAX_ENTRIES = 30


def make(tmp_path, base=BASE, entries=MAX_ENTRIES, name="t"):
    return TimeIndex(tmp_path / f"{name}.timeindex", base, entries * 12)


def append_entries(idx, n):
    for i in range(1, n):
        idx.maybe_append(BASE + i, i * 10 + BASE)


def test_lookup(tmp_path):
    """testLookUp: empty/below -> (-1, base); otherwise greatest entry with ts <= target."""
    idx = make(tmp_path)
    assert idx.lookup(100) == TimestampOffset(-1, BASE)
    append_entries(idx, MAX_ENTRIES - 1)
    assert idx.lookup(0) == TimestampOffset(-1, BASE)
    assert idx.lookup(BASE) == TimestampOffset(-1, BASE)
    assert idx.lookup(BASE + 1) == TimestampOffset(BASE + 1, BASE + 10)
    assert idx.lookup(BASE + 5) == TimestampOffset(BASE + 5, BASE + 50)
    assert idx.lookup(10 ** 12) == TimestampOffset(BASE + MAX_ENTRIES - 2, BASE + (MAX_ENTRIES - 2) * 10)


def test_entry_overflow(tmp_path):
    """testEntryOverflow."""
    idx = make(tmp_path)
    with pytest.raises(IndexOffsetOverflowError):
        idx.maybe_append(10000, BASE + 2 ** 31)


def test_append_rules(tmp_path):
    """testAppend: only a larger timestamp adds an entry; a smaller offset is rejected."""
    idx = make(tmp_path)
    append_entries(idx, MAX_ENTRIES)
    assert idx.is_full(), "the last slot is reserved"
    with pytest.raises(IndexFullError):
        idx.maybe_append(10000, 1000)
    # skip_full_check uses the reserved slot
    with pytest.raises(InvalidOffsetError):
        idx.maybe_append(10000, BASE + 1, skip_full_check=True)
    idx.maybe_append(10000, 1000, skip_full_check=True)
    assert idx.entries == MAX_ENTRIES
    assert idx.last_entry == TimestampOffset(10000, 1000)
    # same entry again (close after roll) is ignored silently
    idx.maybe_append(10000, 1000, skip_full_check=True)
    assert idx.entries == MAX_ENTRIES


def test_equal_timestamp_not_appended_and_smaller_rejected(tmp_path):
    idx = make(tmp_path)
    idx.maybe_append(100, 50)
    idx.maybe_append(100, 60)       # not greater: ignored
    assert idx.entries == 1
    with pytest.raises(ValueError):
        idx.maybe_append(99, 70)


def test_v0_timestamps_leave_index_empty(tmp_path):
    idx = make(tmp_path)
    idx.maybe_append(-1, BASE + 3)
    assert idx.entries == 0 and idx.last_entry == TimestampOffset(-1, BASE)


def test_truncate(tmp_path):
    """testTruncate: truncateTo(o) drops entries with offset >= o."""
    idx = make(tmp_path)
    append_entries(idx, MAX_ENTRIES)
    idx.truncate_to(BASE + 10)
    assert idx.entries == 0 and idx.last_entry == TimestampOffset(-1, BASE)
    append_entries(idx, MAX_ENTRIES)
    idx.truncate_to(BASE + 55)
    assert idx.last_entry == TimestampOffset(BASE + 5, BASE + 50)
    assert idx.entries == 5
    idx.truncate_to(BASE + 50)
    assert idx.last_entry == TimestampOffset(BASE + 4, BASE + 40)


def test_sanity_check(tmp_path):
    """testSanityCheck: offset below base, last ts < first ts, length not a multiple of 12."""
    p = tmp_path / "a.timeindex"
    p.write_bytes(struct.pack(">qi", 100, 1) + struct.pack(">qi", 50, 2))
    with pytest.raises(CorruptIndexError):
        TimeIndex(p, 0, 120).sanity_check()
    p2 = tmp_path / "b.timeindex"
    p2.write_bytes(struct.pack(">qi", 100, -3))
    with pytest.raises(CorruptIndexError):
        TimeIndex(p2, 10, 120).sanity_check()
    p3 = tmp_path / "c.timeindex"
    p3.write_bytes(b"\x00" * 13)
    with pytest.raises(CorruptIndexError):
        TimeIndex(p3, 10, 120).sanity_check()
    good = make(tmp_path, name="good")
    append_entries(good, 5)
    good.sanity_check()


def test_is_full_reserves_last_slot(tmp_path):
    """testIsFull: full at max_entries - 1 entries."""
    idx = make(tmp_path, entries=3)
    idx.maybe_append(1, BASE)
    assert not idx.is_full()
    idx.maybe_append(2, BASE + 1)
    assert idx.is_full()


def test_last_entry_and_reopen(tmp_path):
    """testLastEntry / testResize: last entry survives close (trim) and reopen; resize keeps entries."""
    idx = make(tmp_path)
    assert idx.last_entry == TimestampOffset(-1, BASE)
    idx.maybe_append(BASE + 1, BASE + 1)
    assert idx.last_entry == TimestampOffset(BASE + 1, BASE + 1)
    idx.maybe_append(BASE + 7, BASE + 9)
    idx.close()
    assert (tmp_path / "t.timeindex").stat().st_size == 24
    again = make(tmp_path)
    assert again.last_entry == TimestampOffset(BASE + 7, BASE + 9)
    assert again.entries == 2
    again.resize(MAX_ENTRIES * 12)
    assert again.max_entries == MAX_ENTRIES and again.entries == 2
    assert again.lookup(BASE + 5) == TimestampOffset(BASE + 1, BASE + 1)


def test_parse_entry(tmp_path):
    """testParseEntry: on-disk entries are >qi (timestamp, relative offset)."""
    idx = make(tmp_path)
    idx.maybe_append(1000, BASE + 3)
    idx.maybe_append(2000, BASE + 9)
    idx.trim_to_valid_size()
    raw = (tmp_path / "t.timeindex").read_bytes()
    assert raw == struct.pack(">qi", 1000, 3) + struct.pack(">qi", 2000, 9)
    assert idx.entry(1) == TimestampOffset(2000, BASE + 9)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 50)), max_size=40),
       st.lists(st.integers(-5, 10 ** 6 + 10), min_size=1, max_size=20))
def test_lookup_matches_model(tmp_path_factory, steps, targets):
    """Random (ts, offset) appends: entries stay non-decreasing; lookup = greatest ts <= T."""
    d = tmp_path_factory.mktemp("ti")
    idx = TimeIndex(d / "x.timeindex", 0, 64 * 12)
    model = []
    off = 0
    ts = -1
    for dt, doff in steps:
        off += doff
        ts_new = max(ts, dt)
        idx.maybe_append(ts_new, off)
        if not model or ts_new > model[-1][0]:
            if ts_new > -1:
                model.append((ts_new, off))
        ts = ts_new
    assert [tuple(e) for e in idx.all_entries()] == model
    for t in targets:
        lower = [e for e in model if e[0] <= t]
        assert tuple(idx.lookup(t)) == (lower[-1] if lower else (-1, 0))
