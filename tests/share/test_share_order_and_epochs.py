"""Pure decisions of issue 42: the order a ShareFetch walks its session's partitions in and
how it splits its byte budget (``broker.share.fetch_order``, Kafka 4.4's PartitionRotateStrategy
and PartitionMaxBytesStrategy), and share-group member epochs (``broker.share.group``: a
member's epoch and assignment move only in its own heartbeat, as Kafka 4.4's coordinator)."""
from hypothesis import given, settings, strategies as st

from broker.share.fetch_order import rotate_round_robin, uniform_max_bytes
from broker.share.group import ShareGroup, can_compute_next_target, epoch_error, reconcile

TID = bytes(range(16))


# ---- rotation -----------------------------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(), max_size=9, unique=True), st.integers(-1, 2**31 - 1))
def test_rotation_against_a_model(parts, epoch):
    got = rotate_round_robin(parts, epoch)
    n = len(parts)
    # the model: Kafka's Collections.rotate(list, -(epoch % n)) for n > 1 and epoch >= 1
    want = list(parts)
    if n > 1 and epoch >= 1:
        for _ in range(epoch % n):
            want.append(want.pop(0))
    assert got == want
    assert sorted(got) == sorted(parts)


def test_rotation_examples():
    ps = ["p0", "p1", "p2", "p3"]
    assert rotate_round_robin(ps, 0) == ps  # the opening request
    assert rotate_round_robin(ps, -1) == ps  # the final one
    assert rotate_round_robin(ps, 1) == ["p1", "p2", "p3", "p0"]
    assert rotate_round_robin(ps, 4) == ps
    assert rotate_round_robin(ps, 7) == ["p3", "p0", "p1", "p2"]
    # consecutive epochs start one partition further on each time: each partition comes first
    assert [rotate_round_robin(ps, e)[0] for e in range(1, 9)] == ["p1", "p2", "p3", "p0"] * 2


# ---- byte budget ---------------------------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(st.integers(-5, 10**8), st.integers(0, 40))
def test_uniform_max_bytes(max_bytes, n):
    got = uniform_max_bytes(max_bytes, n)
    assert len(got) == n and all(b >= 0 for b in got)
    if n == 0:
        return
    assert sum(got) == max(max_bytes, 0)  # the budget is handed out whole, never more
    if max_bytes >= n:
        assert all(b >= max_bytes // n for b in got)
        assert sorted(got)[:-1] == [max_bytes // n] * (n - 1)  # the remainder on one partition
    else:
        assert sorted(set(got)) <= [0, 1]


# ---- member epochs -------------------------------------------------------------------------------
def test_epoch_checks_as_kafka_4_4():
    assert epoch_error(4, 3, 4) is None
    assert epoch_error(4, 3, 3) is None  # the previous epoch: the answer that moved it was lost
    assert epoch_error(4, 3, 0) is None  # a rejoin
    assert "greater member epoch (5)" in epoch_error(4, 3, 5)
    msg = epoch_error(4, 3, 2)
    assert msg.startswith("The share group member has a smaller member epoch (2) than the one known by the group "
                          "coordinator (4), and it does not match the previous member epoch (3).")


def test_reconcile_moves_to_the_target_in_one_step():
    a = {TID: frozenset({0, 1})}
    assert reconcile(3, 2, a, 3, {TID: frozenset({0})}) == (3, 2, a)  # at the target epoch: unchanged
    assert reconcile(3, 2, a, 5, {TID: frozenset({0})}) == (5, 3, {TID: frozenset({0})})


TOPICS = {"t": (TID, 4), "u": (bytes(16), 2)}


def topics_of(names):
    return {n: TOPICS[n] for n in names if n in TOPICS}


ops = st.lists(st.tuples(st.sampled_from(["join", "beat", "beat", "beat", "leave", "resub"]),
                         st.integers(0, 3), st.sampled_from([["t"], ["u"], ["t", "u"]]),
                         st.integers(0, 1500)), max_size=40)


@settings(max_examples=300, deadline=None)
@given(ops, st.sampled_from([0, 1000]))
def test_members_move_only_in_their_own_heartbeat(steps, interval):
    """Joins, leaves and subscription changes interleaved, the clock moving on by random steps
    (with and without an assignment interval): a member that heartbeats with the epoch it was
    last answered is never fenced; no step changes another member's epoch or assignment; after
    its heartbeat a member is at the target's epoch with its target partitions."""
    g = ShareGroup("g")
    told: dict[str, int] = {}  # member -> the epoch its last answer carried
    now = 1
    for op, i, subs, dt in steps:
        now += dt
        mid = f"m{i}"
        others = {k: (m.member_epoch, dict(m.assignment)) for k, m in g.members.items() if k != mid}
        epoch_before = g.group_epoch
        if op == "leave":
            if mid not in g.members:
                continue
            g.remove(mid, topics_of)
            told.pop(mid)
            assert g.group_epoch == epoch_before + 1
        else:
            if op != "join" and mid not in g.members:
                continue
            sent = 0 if op == "join" else told[mid]
            if mid in g.members:
                m = g.members[mid]
                assert epoch_error(m.member_epoch, m.previous_member_epoch, sent) is None
            m, _ = g.heartbeat(mid, subs if op in ("join", "resub") else None, topics_of, now, interval)
            g.initialize()
            told[mid] = m.member_epoch
            assert g.group_epoch >= epoch_before and g.assignment_epoch <= g.group_epoch
            assert m.member_epoch == g.assignment_epoch and m.assignment == g.target.get(mid, {})
            assert all((tid, p) in g.initialized for tid, ps in m.assignment.items() for p in ps)
        assert {k: (m.member_epoch, dict(m.assignment)) for k, m in g.members.items() if k != mid} == others


def test_a_join_does_not_fence_the_member_already_there():
    """The issue's sequence, as Kafka 4.4 answers it: A joins (an empty assignment: its
    share-partitions are initialized after that heartbeat) and gets them on its next heartbeat;
    B joins; A's next heartbeat at its old epoch is accepted and moves it to the new epoch with
    its share of the partitions; B leaves and A, at its epoch, gets them all back."""
    g = ShareGroup("g")

    def beat(mid, subs=None):
        m, before = g.heartbeat(mid, subs, topics_of)
        g.initialize()
        return m.member_epoch, m.previous_member_epoch, m.assignment

    assert beat("A", ["t"]) == (2, 0, {})
    assert beat("A") == (3, 2, {TID: frozenset({0, 1, 2, 3})})
    assert beat("B", ["t"]) == (4, 0, {TID: frozenset({1, 3})})
    assert g.members["A"].member_epoch == 3  # B's join did not touch A
    assert epoch_error(3, 2, 3) is None
    assert beat("A") == (4, 3, {TID: frozenset({0, 2})})
    g.remove("B", topics_of)
    assert (g.group_epoch, g.assignment_epoch, g.members["A"].member_epoch) == (5, 4, 4)
    assert beat("A") == (5, 4, {TID: frozenset({0, 1, 2, 3})})


def test_the_assignment_interval_delays_a_new_target():
    """Kafka 4.4's share.assignment.interval.ms: a change within the interval moves the group
    epoch, and members keep the current target until a heartbeat after the interval."""
    g = ShareGroup("g")
    m, _ = g.heartbeat("A", ["t"], topics_of, now_ms=1_000, interval_ms=1000)
    g.initialize()
    assert (m.member_epoch, m.assignment, g.assignment_ms) == (2, {}, 1_000)
    m, _ = g.heartbeat("A", None, topics_of, now_ms=1_500, interval_ms=1000)
    assert (g.group_epoch, g.assignment_epoch, m.member_epoch, m.assignment) == (3, 2, 2, {})
    m, _ = g.heartbeat("A", None, topics_of, now_ms=2_000, interval_ms=1000)
    assert (g.group_epoch, m.member_epoch, m.assignment) == (3, 3, {TID: frozenset({0, 1, 2, 3})})
    g.remove("A", topics_of)  # an empty group assigns at once again
    m, _ = g.heartbeat("B", ["t"], topics_of, now_ms=2_001, interval_ms=1000)
    assert (m.member_epoch, m.assignment) == (5, {TID: frozenset({0, 1, 2, 3})})


def test_can_compute_next_target():
    assert can_compute_next_target(0, 1000, 5)  # never computed
    assert can_compute_next_target(10, 0, 10)  # no interval
    assert not can_compute_next_target(10, 1000, 1009)
    assert can_compute_next_target(10, 1000, 1010)
