"""Properties of the server-side assignors (``broker.groups.assignors``), with hypothesis.

For random groups (members, subscriptions, partition counts, current assignments):
- no partition twice, every subscribed partition assigned, only to a subscriber;
- balance: uniform homogeneous sizes differ by at most one; uniform heterogeneous leaves no
  partition that could move to a subscriber holding two fewer; range gives each subscriber
  ``n // m`` or ``n // m + 1`` partitions of every topic;
- stability: assigning again from the result changes nothing;
- stickiness: a member joining a balanced group only takes partitions (nobody else's
  partition changes hands except towards it), a member leaving only frees its own.
"""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from broker.groups.assignors import RANGE, UNIFORM, MemberSpec, assign, is_homogeneous

SETTINGS = settings(max_examples=150, deadline=None, database=None)
TOPICS = ["a", "b", "c", "d"]


@st.composite
def groups(draw, homogeneous=None):
    parts = {t: draw(st.integers(1, 12)) for t in TOPICS}
    n = draw(st.integers(1, 7))
    homo = draw(st.booleans()) if homogeneous is None else homogeneous
    common = frozenset(draw(st.lists(st.sampled_from(TOPICS), min_size=1, unique=True)))
    members = {}
    for i in range(n):
        subs = common if homo else frozenset(draw(st.lists(st.sampled_from(TOPICS), min_size=1, unique=True)))
        # a random (possibly overlapping, possibly stale) current assignment
        cur = {}
        for t in draw(st.lists(st.sampled_from(TOPICS), unique=True, max_size=3)):
            ps = draw(st.lists(st.integers(0, parts[t] + 2), unique=True, max_size=4))
            if ps:
                cur[t] = frozenset(ps)
        members[f"m{i}"] = MemberSpec(subs, cur)
    return members, parts


def _owners(result):
    owners = {}
    for m, a in result.items():
        for t, ps in a.items():
            for p in ps:
                owners.setdefault((t, p), []).append(m)
    return owners


def _check_valid(members, parts, result):
    owners = _owners(result)
    assert all(len(ms) == 1 for ms in owners.values()), "a partition assigned twice"
    wanted = {(t, p) for m in members.values() for t in m.subscribed for p in range(parts[t])}
    assert set(owners) == wanted
    for (t, _p), (m,) in owners.items():
        assert t in members[m].subscribed


def _sizes(result):
    return {m: sum(len(ps) for ps in a.values()) for m, a in result.items()}


@SETTINGS
@given(groups(), st.sampled_from([UNIFORM, RANGE]))
def test_valid_and_stable(group, name):
    members, parts = group
    result = assign(name, members, parts)
    _check_valid(members, parts, result)
    again = assign(name, {m: MemberSpec(s.subscribed, result[m]) for m, s in members.items()}, parts)
    assert again == result


@SETTINGS
@given(groups())
def test_uniform_balance(group):
    members, parts = group
    result = assign(UNIFORM, members, parts)
    sizes = _sizes(result)
    if is_homogeneous(members):
        assert max(sizes.values()) - min(sizes.values()) <= 1
    else:
        for (t, _p), (m,) in _owners(result).items():
            for other, spec in members.items():
                if t in spec.subscribed:
                    assert sizes[other] >= sizes[m] - 1, f"{t} could move from {m} to {other}"


@SETTINGS
@given(groups())
def test_range_quotas(group):
    members, parts = group
    result = assign(RANGE, members, parts)
    for t in TOPICS:
        subs = [m for m, s in members.items() if t in s.subscribed]
        for m in subs:
            got = len(result[m].get(t, ()))
            assert parts[t] // len(subs) <= got <= parts[t] // len(subs) + 1


def test_range_co_partitioned_topics_go_together():
    members = {m: MemberSpec(frozenset({"a", "b"}), {}) for m in ("x", "y", "z")}
    result = assign(RANGE, members, {"a": 7, "b": 7})
    for m in members:
        assert result[m]["a"] == result[m]["b"]
    assert result["x"]["a"] == {0, 1, 2}


@SETTINGS
@given(groups(homogeneous=True), st.sampled_from([UNIFORM, RANGE]))
def test_sticky_join_and_leave(group, name):
    members, parts = group
    base = assign(name, {m: MemberSpec(s.subscribed, {}) for m, s in members.items()}, parts)
    subs = next(iter(members.values())).subscribed
    # a new member joins: every partition that changes hands goes to it
    joined = {m: MemberSpec(subs, base[m]) for m in members}
    joined["new"] = MemberSpec(subs, {})
    after = assign(name, joined, parts)
    before_owner = {tp: ms[0] for tp, ms in _owners(base).items()}
    for tp, (m,) in _owners(after).items():
        if before_owner[tp] != m:
            assert m == "new", f"{tp} moved from {before_owner[tp]} to {m}"
    # a member leaves: only its partitions change hands
    if len(members) > 1:
        gone = sorted(members)[0]
        left = {m: MemberSpec(subs, base[m]) for m in members if m != gone}
        after = assign(name, left, parts)
        for tp, (m,) in _owners(after).items():
            if before_owner[tp] != m:
                assert before_owner[tp] == gone, f"{tp} moved from {before_owner[tp]} to {m}"


def test_uniform_splits_six_partitions_among_three():
    members = {m: MemberSpec(frozenset({"t"}), {}) for m in ("a", "b", "c")}
    result = assign(UNIFORM, members, {"t": 6})
    assert _sizes(result) == {"a": 2, "b": 2, "c": 2}
    members["d"] = MemberSpec(frozenset({"t"}), {})
    for m in ("a", "b", "c"):
        members[m] = MemberSpec(frozenset({"t"}), result[m])
    after = assign(UNIFORM, members, {"t": 6})
    assert sorted(_sizes(after).values()) == [1, 1, 2, 2]
    moved = sum(1 for m in "abc" for p in result[m]["t"] if p not in after[m].get("t", ()))
    assert moved == 1  # only the new member's partition moves
