"""Offset index tests; mirror Kafka's OffsetIndexTest (storage/.../log/OffsetIndexTest.java)."""
from __future__ import annotations

import random
import struct

import pytest
from hypothesis import given, settings, strategies as st

from storage.index import (
    CorruptIndexError, IndexFullError, IndexOffsetOverflowError, InvalidOffsetError, OffsetIndex,
    OffsetPosition,
)

BASE = 45


def make(tmp_path, base=BASE, max_size=30 * 8, name="idx"):
    return OffsetIndex(tmp_path / f"{name}.index", base, max_size)


def test_preallocated_to_max_size_rounded_down(tmp_path):
    """Kafka preallocates at creation; here at first use (a new index is created empty, so
    thousands of idle new partitions need no trim and fsync at shutdown)."""
    idx = make(tmp_path, max_size=8 * 10 + 5)
    assert (tmp_path / "idx.index").stat().st_size == 0
    assert idx.max_entries == 10 and idx.entries == 0
    assert (tmp_path / "idx.index").stat().st_size == 80


def test_random_lookup(tmp_path):
    """randomLookupTest: lookup(x) is the greatest entry <= x, or (base, 0)."""
    rng = random.Random(7)
    idx = make(tmp_path)
    offsets = sorted(rng.sample(range(BASE, BASE + 1000), 30))
    positions = sorted(rng.sample(range(0, 100000), 30))
    for o, p in zip(offsets, positions):
        idx.append(o, p)
    for _ in range(500):
        x = rng.randrange(0, BASE + 1100)
        lower = [(o, p) for o, p in zip(offsets, positions) if o <= x]
        expected = OffsetPosition(*lower[-1]) if lower else OffsetPosition(BASE, 0)
        assert idx.lookup(x) == expected


def test_lookup_extreme_cases(tmp_path):
    """lookupExtremeCases."""
    idx = make(tmp_path)
    assert idx.lookup(BASE) == OffsetPosition(BASE, 0), "empty index: (base, 0)"
    for i in range(idx.max_entries):
        idx.append(BASE + i + 1, i)
    assert idx.lookup(BASE) == OffsetPosition(BASE, 0), "below the first entry: (base, 0)"
    assert idx.lookup(BASE + idx.max_entries) == OffsetPosition(BASE + idx.max_entries, idx.max_entries - 1)
    assert idx.lookup(10 ** 12) == OffsetPosition(BASE + idx.max_entries, idx.max_entries - 1)


def test_append_out_of_order(tmp_path):
    """appendOutOfOrder: offsets must strictly increase."""
    idx = make(tmp_path)
    idx.append(51, 0)
    with pytest.raises(InvalidOffsetError):
        idx.append(50, 1)
    with pytest.raises(InvalidOffsetError):
        idx.append(51, 1)


def test_entry_overflow(tmp_path):
    """testEntryOverflow: relative offset must fit int32."""
    idx = make(tmp_path)
    with pytest.raises(IndexOffsetOverflowError):
        idx.append(BASE + 2 ** 31, 1)
    assert not idx.can_append_offset(BASE + 2 ** 31)
    assert idx.can_append_offset(BASE + 2 ** 31 - 1)


def test_append_too_many(tmp_path):
    """appendTooMany: a full index rejects appends."""
    idx = make(tmp_path)
    for i in range(idx.max_entries):
        idx.append(BASE + i + 1, i)
    assert idx.is_full()
    with pytest.raises(IndexFullError):
        idx.append(BASE + idx.max_entries + 1, 1000)


def test_fetch_upper_bound_offset(tmp_path):
    """testFetchUpperBoundOffset."""
    idx2 = make(tmp_path, base=0, name="b")
    for o, p in [(1, 100), (2, 200), (3, 300), (4, 400)]:
        idx2.append(o, p)
    assert idx2.fetch_upper_bound_offset(0, 150) == OffsetPosition(2, 200)
    assert idx2.fetch_upper_bound_offset(100, 200) == OffsetPosition(3, 300)
    assert idx2.fetch_upper_bound_offset(400, 1) is None


def test_reopen(tmp_path):
    """testReopen: entries survive close + reopen (the file is trimmed on close)."""
    idx = make(tmp_path)
    idx.append(BASE + 1, 10)
    idx.append(BASE + 5, 500)
    idx.close()
    assert (tmp_path / "idx.index").stat().st_size == 16
    idx2 = make(tmp_path)
    assert idx2.entries == 2
    assert idx2.lookup(BASE + 4) == OffsetPosition(BASE + 1, 10)
    assert idx2.last_offset == BASE + 5
    assert idx2.is_full()  # trimmed: no free slot until resized
    idx2.resize(30 * 8)
    idx2.append(BASE + 6, 600)
    assert idx2.lookup(BASE + 100) == OffsetPosition(BASE + 6, 600)


def test_truncate(tmp_path):
    """truncate: truncateTo(o) removes entries >= o, keeps the rest."""
    idx = make(tmp_path, base=0, max_size=10 * 8)
    for i in range(1, 10):
        idx.append(i, i)
    idx.truncate_to(0)
    assert idx.entries == 0 and idx.lookup(10) == OffsetPosition(0, 0)
    for i in range(1, 10):
        idx.append(i, i)
    idx.truncate_to(5)
    assert idx.lookup(10) == OffsetPosition(4, 4), "index should be truncated before 5"
    assert idx.entries == 4
    idx.truncate_to(100)  # past the end: no effect
    assert idx.entries == 4
    idx.truncate()
    assert idx.entries == 0
    # file keeps the entries written before it? what we check is the in-memory truth plus reopen
    idx.append(3, 30)
    idx.close()
    assert make(tmp_path, base=0, max_size=80).all_entries() == [OffsetPosition(3, 30)]


def test_truncate_between_entries(tmp_path):
    idx = make(tmp_path, base=0)
    for o in (2, 4, 6, 8):
        idx.append(o, o * 10)
    idx.truncate_to(5)
    assert idx.all_entries() == [OffsetPosition(2, 20), OffsetPosition(4, 40)]


def test_sanity_last_offset_equal_to_base_offset(tmp_path):
    """testSanityLastOffsetEqualToBaseOffset: an entry at the base offset is sane."""
    idx = make(tmp_path, base=20)
    idx.append(20, 5)
    idx.sanity_check()
    assert idx.last_offset == 20


def test_sanity_check_flags_bad_length(tmp_path):
    p = tmp_path / "00000000000000000000.index"
    p.write_bytes(b"\x00" * 13)
    idx = OffsetIndex(p, 0, 80)
    with pytest.raises(CorruptIndexError):
        idx.sanity_check()


def test_sanity_check_flags_offset_below_base(tmp_path):
    p = tmp_path / "x.index"
    p.write_bytes(struct.pack(">ii", -5, 0))
    idx = OffsetIndex(p, 100, 80)
    with pytest.raises(CorruptIndexError):
        idx.sanity_check()


def test_existing_file_is_read_lazily_and_on_disk_format(tmp_path):
    p = tmp_path / "00000000000000000100.index"
    p.write_bytes(struct.pack(">iiii", 1, 70, 9, 700))
    idx = OffsetIndex(p, 100, 80)
    assert not idx._loaded
    assert idx.last_entry == OffsetPosition(109, 700)   # one small pread, no full load
    assert not idx._loaded
    assert idx.lookup(105) == OffsetPosition(101, 70)
    assert idx._loaded


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 5000), min_size=0, max_size=40, unique=True),
       st.lists(st.integers(-10, 6000), min_size=1, max_size=30))
def test_lookup_matches_model(tmp_path_factory, rels, targets):
    d = tmp_path_factory.mktemp("oi")
    rels = sorted(rels)
    idx = OffsetIndex(d / "a.index", 1000, 64 * 8)
    for r in rels:
        idx.append(1000 + r, r * 3)
    for t in targets:
        lower = [r for r in rels if 1000 + r <= 1000 + t]
        want = OffsetPosition(1000 + lower[-1], lower[-1] * 3) if lower else OffsetPosition(1000, 0)
        assert idx.lookup(1000 + t) == want
    # file bytes are exactly the >ii entries
    idx.trim_to_valid_size()
    raw = (d / "a.index").read_bytes()
    assert raw == b"".join(struct.pack(">ii", r, r * 3) for r in rels)
