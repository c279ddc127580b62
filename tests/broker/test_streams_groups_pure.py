"""The pure decisions of the Streams group coordinator (KIP-1071):
``broker.groups.streams_topology`` (topology configuration), ``broker.groups.streams_assignment``
(sticky task assignment, reconciliation) and the request checks of
``broker.groups.streams_coordinator``.

Assignment properties, with hypothesis, for random groups (members in processes, subtopologies
with task counts, previous targets):
- every task has exactly one active owner; active shares differ by at most one;
- stability: assigning again from the result changes nothing;
- stickiness: a member joining a balanced group only takes tasks; a member leaving frees only
  its own;
- standby replicas never sit on the active owner's process.
"""
from __future__ import annotations

from types import SimpleNamespace as NS

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.groups import streams_topology as T
from broker.groups.streams_assignment import (
    NO_TASKS, AssignmentState, MemberState, Tasks, all_tasks, assign, reconcile,
)
from broker.groups.streams_coordinator import StreamsGroupError, check_member_epoch, validate_heartbeat
from broker.groups.streams_group import StreamsMember
from protocol.errors import ErrorCode as E

SETTINGS = settings(max_examples=150, deadline=None, database=None)


# ---- topology configuration -------------------------------------------------------------------
def _topology(copartition=False, fixed_repartition=0):
    """events -> (sub 0) -> by-region repartition -> (sub 1, joined with regions) -> changelog."""
    return T.StreamsTopology(0, (
        T.Subtopology("0", ("events",), ("app-by-region-repartition",),
                      (T.TopicInfo("app-windows-changelog", 0, 0, (("cleanup.policy", "compact,delete"),)),)),
        T.Subtopology("1", ("regions",), (), (T.TopicInfo("app-totals-changelog"),),
                      (T.TopicInfo("app-by-region-repartition", fixed_repartition, 0, (("cleanup.policy", "delete"),)),),
                      (frozenset({"regions", "app-by-region-repartition"}),) if copartition else ()),
    ))


def test_missing_source_topics_are_listed_sorted():
    c = T.configure_topology(_topology(), {}.get)
    assert c.status == (T.MISSING_SOURCE_TOPICS, "Source topics events, regions are missing.") and not c.ready


def test_internal_topics_sized_from_their_writers_and_copartitioning():
    counts = {"events": 4, "regions": 2}
    c = T.configure_topology(_topology(), counts.get)
    assert c.tasks == {"0": 4, "1": 4}  # the repartition topic takes its writer's 4 tasks
    assert {t.name: t.partitions for t in c.to_create} == {
        "app-by-region-repartition": 4, "app-windows-changelog": 4, "app-totals-changelog": 4}
    assert c.status[0] == T.MISSING_INTERNAL_TOPICS and not c.ready
    # copartitioned with regions: the repartition topic takes regions' count
    c = T.configure_topology(_topology(copartition=True), counts.get)
    assert c.tasks == {"0": 4, "1": 2} and c.internal_partitions["app-by-region-repartition"] == 2
    # a fixed repartition count that disagrees is an error
    c = T.configure_topology(_topology(copartition=True, fixed_repartition=3), counts.get)
    assert c.status == (T.INCORRECTLY_PARTITIONED_TOPICS, "Number of partitions [3] of repartition topic "
                        "[app-by-region-repartition] doesn't match number of partitions [2] of the source topic.")


def test_ready_once_internal_topics_exist_and_wrong_counts_refused():
    counts = {"events": 4, "regions": 4, "app-by-region-repartition": 4, "app-windows-changelog": 4,
              "app-totals-changelog": 4}
    c = T.configure_topology(_topology(), counts.get)
    assert c.ready and c.status is None and c.to_create == []
    counts["app-totals-changelog"] = 2
    c = T.configure_topology(_topology(), counts.get)
    assert c.status == (T.INCORRECTLY_PARTITIONED_TOPICS, "Existing topic app-totals-changelog has different "
                                                           "number of partitions: expected 4, found 2")


def test_repartition_topic_nobody_writes():
    t = T.StreamsTopology(0, (T.Subtopology("0", ("a",), (), (), (T.TopicInfo("r"),)),))
    assert T.configure_topology(t, {"a": 1}.get).status[0] == T.INCORRECTLY_PARTITIONED_TOPICS


def test_summaries_and_java_hash_order():
    assert T.summarize_topics(["a", "b", "c", "d", "e"]) == "a, b, c and 2 additional topics"
    # java.util.HashSet order of these two names (what Kafka 4.4 printed for them)
    names = ["d-streams-group-join-topology-an-app-da7771-by-key-repartition",
             "d-streams-group-join-topology-an-app-da7771-store-changelog"]
    assert T.java_hash_order(names) == [names[1], names[0]]


# ---- assignment -------------------------------------------------------------------------------
@st.composite
def groups(draw):
    subs = {str(i): draw(st.integers(0, 9)) for i in range(draw(st.integers(1, 4)))}
    n = draw(st.integers(1, 6))
    procs = draw(st.integers(1, n))
    members = {f"m{i}": (f"p{i % procs}", NO_TASKS) for i in range(n)}
    return members, subs


def _check_balanced(members, subs, out):
    owners = [t for tasks in out.values() for t in tasks.active]
    assert sorted(owners) == sorted(all_tasks(subs))
    sizes = [len(t.active) for t in out.values()]
    assert max(sizes) - min(sizes) <= 1


@SETTINGS
@given(groups(), st.integers(0, 2))
def test_assignment_complete_balanced_stable(group, standbys):
    members, subs = group
    out = assign(members, subs, standbys)
    _check_balanced(members, subs, out)
    again = assign({m: (members[m][0], out[m]) for m in members}, subs, standbys)
    assert again == out
    for m, tasks in out.items():
        for t in tasks.standby:
            owner = next(o for o, x in out.items() if t in x.active)
            assert members[owner][0] != members[m][0]


@SETTINGS
@given(groups(), st.integers(1, 2), st.data())
def test_standby_replicas_only_for_stateful_subtopologies(group, standbys, data):
    """Kafka's sticky assignor gives standby replicas to stateful tasks only (a subtopology
    with state changelog topics); a stateless task has no state for a standby to restore."""
    members, subs = group
    stateful = frozenset(data.draw(st.sets(st.sampled_from(sorted(subs)))))
    out = assign(members, subs, standbys, stateful)
    _check_balanced(members, subs, out)
    standby = {t for tasks in out.values() for t in tasks.standby}
    assert {sid for sid, _ in standby} <= stateful
    processes = len({p for p, _ in members.values()})
    if processes > 1:  # every stateful task has a standby on another process
        assert standby == {t for t in all_tasks(subs) if t[0] in stateful}


@SETTINGS
@given(groups())
def test_assignment_sticky_on_join_and_leave(group):
    members, subs = group
    out = assign(members, subs)
    prev = {m: (members[m][0], out[m]) for m in members}
    joined = assign({**prev, "new": ("pnew", NO_TASKS)}, subs)
    _check_balanced(None, subs, joined)
    for m in members:
        assert joined[m].active <= out[m].active  # the others only give tasks away
    if len(members) > 1:
        gone = sorted(members)[0]
        left = assign({m: v for m, v in prev.items() if m != gone}, subs)
        for m in left:
            assert out[m].active <= left[m].active  # the others keep theirs


# ---- reconciliation ---------------------------------------------------------------------------
A = ("0", 0)
B = ("0", 1)


def test_revoke_then_move_to_the_target_epoch():
    m = AssignmentState(3, 2, MemberState.STABLE, Tasks(frozenset({A, B})), NO_TASKS)
    r = reconcile(m, 4, Tasks(frozenset({A})), None, lambda t: "me", "me")
    assert r.state is MemberState.UNREVOKED_TASKS and r.member_epoch == 3 and r.pending_revocation.active == {B}
    # still holding B: nothing moves
    assert reconcile(r, 4, Tasks(frozenset({A})), Tasks(frozenset({A, B})), lambda t: "me", "me") == r
    done = reconcile(r, 4, Tasks(frozenset({A})), Tasks(frozenset({A})), lambda t: "me", "me")
    assert done.state is MemberState.STABLE and done.member_epoch == 4 and done.previous_member_epoch == 3


def test_a_task_another_member_holds_waits():
    m = AssignmentState(3, 2, MemberState.STABLE, NO_TASKS, NO_TASKS)
    owner = {A: "other"}
    r = reconcile(m, 4, Tasks(frozenset({A, B})), None, owner.get, "me")
    assert r.state is MemberState.UNRELEASED_TASKS and r.member_epoch == 4 and r.assigned.active == {B}
    owner.clear()
    r = reconcile(r, 4, Tasks(frozenset({A, B})), None, owner.get, "me")
    assert r.state is MemberState.STABLE and r.assigned.active == {A, B}


# ---- request checks -----------------------------------------------------------------------------
def _req(**kw):
    base = dict(group_id="g", member_id="m", member_epoch=0, instance_id=None, rack_id=None,
                rebalance_timeout_ms=1000, topology=NS(epoch=0, subtopologies=[]), active_tasks=[],
                standby_tasks=[], warmup_tasks=[])
    base.update(kw)
    return NS(**base)


@pytest.mark.parametrize("kw, code, message", [
    (dict(member_id=""), E.INVALID_REQUEST, "MemberId can't be empty."),
    (dict(topology=None), E.INVALID_REQUEST, "Topology must be non-null when (re-)joining."),
    (dict(standby_tasks=None), E.INVALID_REQUEST, "StandbyTasks must be empty when (re-)joining."),
    (dict(member_epoch=-3, topology=None), E.INVALID_REQUEST, "MemberEpoch is -3, but must be greater than or equal to -2."),
    (dict(member_epoch=2, active_tasks=None, standby_tasks=None, warmup_tasks=[]), E.INVALID_REQUEST,
     "If one task-type is non-null, all must be non-null."),
    (dict(member_epoch=2), E.INVALID_REQUEST, "Topology can only be provided when (re-)joining."),
])
def test_request_checks(kw, code, message):
    with pytest.raises(StreamsGroupError) as exc:
        validate_heartbeat(_req(**kw))
    assert (exc.value.code, exc.value.message) == (code, message)


def test_member_epoch_checks():
    m = StreamsMember("m", assignment=AssignmentState(5, 4, MemberState.STABLE, Tasks(frozenset({A})), NO_TASKS))
    check_member_epoch(m, 5, None)
    check_member_epoch(m, 4, Tasks(frozenset({A})))  # the answer moving it to 5 was lost
    for epoch, owned in ((6, None), (4, None), (4, Tasks(frozenset({A, B}))), (3, Tasks())):
        with pytest.raises(StreamsGroupError) as exc:
            check_member_epoch(m, epoch, owned)
        assert exc.value.code == E.FENCED_MEMBER_EPOCH
