"""``LogSegments.from_first_reaching`` (the bisected start of a time lookup) against a scan."""
from dataclasses import dataclass

from hypothesis import given, strategies as st

from storage.segments import LogSegments


@dataclass
class Seg:
    base_offset: int
    largest_timestamp: int


def scan(segs, ts):
    for i, s in enumerate(segs):
        if s.largest_timestamp >= ts:
            return segs[i:]
    return []


@given(st.lists(st.integers(-1, 1000), min_size=0, max_size=40), st.lists(st.integers(-5, 1005), max_size=20),
       st.integers(0, 39), st.integers(-1, 2000))
def test_matches_a_scan_through_changes(largest, targets, drop, grow):
    segs = LogSegments()
    plain = [Seg(i * 10, ts) for i, ts in enumerate(largest)]
    for s in plain:
        segs.add(s)

    def check():
        for t in targets:
            got = [s for s in segs.from_first_reaching(t) if s.largest_timestamp >= t][:1]
            want = scan(plain, t)[:1]
            assert got == want, (t, [s.largest_timestamp for s in plain])
    check()
    if plain:
        plain[-1].largest_timestamp = grow  # the active segment grows: no cache invalidation needed
        check()
        victim = plain.pop(min(drop, len(plain) - 1))
        segs.remove(victim.base_offset)
        check()
    s = Seg(10_000, grow)
    plain.append(s)
    segs.add(s)  # a roll
    check()
