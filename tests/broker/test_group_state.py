"""Unit tests of the classic group state machine (broker.groups), no sockets, no event loop.

Time is a ManualClock and timers a manual scheduler, so session timeouts, rebalance timeouts
and the initial rebalance delay are exercised exactly. Many cases mirror Kafka's
GroupCoordinatorTest (core/src/test/scala/unit/kafka/coordinator/group), named in each
docstring.
"""
from __future__ import annotations

import struct

import pytest
from hypothesis import given, strategies as st

from broker.groups.coordinator import GroupConfig, GroupCoordinator
from broker.groups.base import OffsetAndMetadata
from broker.groups.classic_records import group_from_value, group_value
from broker.groups.group import GroupMetadata, GroupState, MemberMetadata, parse_subscription_topics
from broker.groups.internal_topics import partition_for
from broker.groups.offsets_log import LoadedState, OffsetsLog, offset_from_value, offset_value
from broker.java_hash import java_string_hash
from broker.groups.schemas import GroupMetadataValue, decode_value
from protocol.errors import ErrorCode as E
from storage.clock import ManualClock
from tests.helpers.scheduler import ManualScheduler

S = GroupState
SESSION = 10_000
REBALANCE = 30_000


class FakeStore:
    """Records what the coordinator writes; ``load`` replays it like the offsets log would."""

    def __init__(self):
        self.records: list[tuple] = []  # ("offsets", gid, {tp: om|None}) / ("group", gid, bytes) / ("tomb", gid, tps, group)
        self.fail_next: Exception | None = None

    def _check(self):
        if self.fail_next is not None:
            exc, self.fail_next = self.fail_next, None
            raise exc

    def write_offsets(self, gid, offsets):
        self._check()
        self.records.append(("offsets", gid, dict(offsets)))

    def write_group(self, group, assignment):
        self._check()
        self.records.append(("group", group.group_id, group_value(group, assignment)))

    def write_tombstones(self, gid, offsets, *, group_record=False):
        self._check()
        self.records.append(("tomb", gid, list(offsets), group_record))

    def load(self) -> LoadedState:
        st_ = LoadedState()
        for rec in self.records:
            kind, gid = rec[0], rec[1]
            if kind == "offsets":
                for tp, om in rec[2].items():
                    if om is None:
                        st_.offsets.setdefault(gid, {}).pop(tp, None)
                    else:
                        st_.offsets.setdefault(gid, {})[tp] = om
            elif kind == "group":
                st_.groups[gid] = decode_value(GroupMetadataValue, rec[2])[1]
            else:
                for tp in rec[2]:
                    st_.offsets.setdefault(gid, {}).pop(tp, None)
                if rec[3]:
                    st_.groups.pop(gid, None)
        st_.offsets = {g: o for g, o in st_.offsets.items() if o}
        return st_


def subscription(*topics: str) -> bytes:
    """ConsumerProtocolSubscription v0: version, topics, user data (null)."""
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)


PROTOCOLS = [("range", subscription("t"))]


class Env:
    def __init__(self, delay_ms=0, store=None, **cfg):
        self.clock = ManualClock(1_000_000)
        self.sched = ManualScheduler(self.clock)
        self.store = store or FakeStore()
        self.coord = GroupCoordinator(config=GroupConfig(initial_rebalance_delay_ms=delay_ms, **cfg),
                                      clock=self.clock, scheduler=self.sched, store=self.store)
        self.coord.load()

    def group(self, gid="g") -> GroupMetadata:
        return self.coord.groups[gid]

    def join(self, gid="g", member_id="", instance=None, protocols=PROTOCOLS, session=SESSION,
             rebalance=REBALANCE, require_known=False, protocol_type="consumer", client_id="client",
             skip=False):
        out = []
        self.coord.handle_join_group(gid, member_id, instance, require_known, skip, client_id, "/127.0.0.1",
                                     rebalance, session, protocol_type, protocols, out.append)
        return out

    def sync(self, member_id, generation, assignment=None, gid="g", instance=None, ptype=None, pname=None):
        out = []
        self.coord.handle_sync_group(gid, generation, member_id, ptype, pname, instance, assignment or {},
                                     out.append)
        return out

    def hb(self, member_id, generation, gid="g", instance=None):
        return self.coord.handle_heartbeat(gid, member_id, instance, generation)

    def join_stable(self, gid="g", **kw):
        """One member joins an empty group and syncs: returns its member id and generation."""
        r = self.join(gid, **kw)
        self.sched.advance(0)
        (res,) = r
        assert res.error == 0
        (s,) = self.sync(res.member_id, res.generation_id, {res.member_id: b"A"}, gid=gid,
                         instance=kw.get("instance"))
        assert s.error == 0
        return res.member_id, res.generation_id


def om(offset, metadata="", now=1_000_000, epoch=-1):
    return OffsetAndMetadata(offset, epoch, metadata, now)


# ---------------------------------------------------------------------------------- join/sync
def test_member_id_required_then_join_completes_after_initial_delay():
    """Kafka: testJoinGroupUnknownMemberIdWithRequireKnownMemberId /
    shouldDelayInitialRebalanceByGroupInitialRebalanceDelayOnEmptyGroup."""
    env = Env(delay_ms=3000)
    (first,) = env.join(require_known=True)
    assert first.error == E.MEMBER_ID_REQUIRED and first.member_id.startswith("client-")
    assert env.group().is_(S.EMPTY) and env.group().is_pending_member(first.member_id)
    second = env.join(member_id=first.member_id, require_known=True)
    assert second == [] and env.group().is_(S.PREPARING_REBALANCE)
    env.sched.advance(2999)
    assert second == []
    env.sched.advance(1)
    (res,) = second
    assert res.error == 0 and res.generation_id == 1 and res.leader_id == first.member_id
    assert res.protocol_name == "range" and res.protocol_type == "consumer"
    assert [m.member_id for m in res.members] == [first.member_id]
    assert env.group().is_(S.COMPLETING_REBALANCE)


def test_initial_delay_extends_for_new_members_up_to_rebalance_timeout():
    """Kafka: shouldDelayRebalanceUptoRebalanceTimeout (InitialDelayedJoin)."""
    env = Env(delay_ms=3000)
    a = env.join(rebalance=7000)
    env.sched.advance(2000)
    b = env.join(rebalance=7000)           # a new member during the delay: extend
    env.sched.advance(1000)                 # t=3000: re-armed for min(3000, 4000)
    assert a == [] and b == []
    env.sched.advance(2999)
    assert a == [] and b == []
    env.sched.advance(1)                   # t=6000
    assert a[0].error == 0 and b[0].error == 0
    assert a[0].generation_id == b[0].generation_id == 1
    assert a[0].leader_id == a[0].member_id and len(a[0].members) == 2 and b[0].members == []


def test_two_members_rebalance_and_assignment_relay():
    """A second member joining a Stable group: the first learns REBALANCE_IN_PROGRESS from its
    heartbeat, rejoins, both get generation 2; the leader's assignment reaches both."""
    env = Env()
    m1, gen1 = env.join_stable()
    assert env.group().is_(S.STABLE) and gen1 == 1
    j2 = env.join(client_id="other")
    assert j2 == [] and env.group().is_(S.PREPARING_REBALANCE)
    assert env.hb(m1, gen1) == E.REBALANCE_IN_PROGRESS
    j1 = env.join(member_id=m1)
    (r1,), (r2,) = j1, j2
    assert r1.generation_id == r2.generation_id == 2
    assert r1.leader_id == m1 and {m.member_id for m in r1.members} == {m1, r2.member_id}
    assert r2.members == [] and r2.leader_id == m1
    # follower syncs first and waits for the leader
    s2 = env.sync(r2.member_id, 2)
    assert s2 == []
    s1 = env.sync(m1, 2, {m1: b"p0,p1", r2.member_id: b"p2"})
    assert s1[0].assignment == b"p0,p1" and s2[0].assignment == b"p2"
    assert s1[0].protocol_name == "range" and s1[0].protocol_type == "consumer"
    assert env.group().is_(S.STABLE)
    # a follower syncing again in Stable gets its assignment at once
    assert env.sync(r2.member_id, 2)[0].assignment == b"p2"
    # the assignment was stored with the group
    kind, gid, value = env.store.records[-1]
    v = decode_value(GroupMetadataValue, value)[1]
    assert kind == "group" and v.generation == 2 and {m.member_id: m.assignment for m in v.members} == {
        m1: b"p0,p1", r2.member_id: b"p2"}


def test_missing_assignments_are_empty():
    """Kafka: testSyncGroupLeaderAfterFollower... members the leader leaves out get b''."""
    env = Env()
    a, b = env.join(), env.join()
    env.sched.advance(0)
    leader = a[0].member_id
    sb = env.sync(b[0].member_id, 1)
    env.sync(leader, 1, {leader: b"x"})
    assert sb[0].error == 0 and sb[0].assignment == b""


def test_session_timeout_removes_silent_member_and_rebalances():
    """Kafka: testHeartbeatExpiration / a member that dies: its partitions move once its
    session times out."""
    env = Env()
    m1, _ = env.join_stable()
    j2 = env.join()
    assert env.hb(m1, 1) == E.REBALANCE_IN_PROGRESS
    env.join(member_id=m1)
    m2 = j2[0].member_id
    env.sync(m2, 2)
    env.sync(m1, 2, {m1: b"a", m2: b"b"})
    assert env.group().is_(S.STABLE)
    for _ in range(3):  # m1 keeps heartbeating, m2 is silent
        env.sched.advance(SESSION // 2)
        assert env.hb(m1, 2) in (0, E.REBALANCE_IN_PROGRESS)
    assert not env.group().has(m2)
    assert env.hb(m1, 2) == E.REBALANCE_IN_PROGRESS
    (r,) = env.join(member_id=m1)  # only member left: completes at once
    assert r.generation_id == 3 and r.leader_id == m1 and [m.member_id for m in r.members] == [m1]


def test_session_expiry_exactly_at_deadline():
    env = Env()
    m1, gen = env.join_stable()
    env.sched.advance(SESSION - 1)
    assert env.group().has(m1)
    assert env.hb(m1, gen) == 0
    env.sched.advance(SESSION - 1)
    assert env.group().has(m1)
    env.sched.advance(1)
    assert not env.group().has(m1)
    # last member gone -> the rebalance completes empty
    assert env.group().is_(S.EMPTY) and env.group().generation_id == 2


def test_rebalance_timeout_drops_members_that_do_not_rejoin():
    """Kafka: testRebalanceTimeout-like: a member that keeps heartbeating but never rejoins is
    removed when the rebalance timeout passes (its heartbeats get REBALANCE_IN_PROGRESS)."""
    env = Env()
    m1, _ = env.join_stable(rebalance=5000)
    j2 = env.join(rebalance=5000)
    for _ in range(4):
        env.sched.advance(1000)
        assert env.hb(m1, 1) == E.REBALANCE_IN_PROGRESS
    env.sched.advance(1000)
    (r2,) = j2
    assert r2.error == 0 and r2.generation_id == 2 and r2.leader_id == r2.member_id
    assert not env.group().has(m1)
    assert env.hb(m1, 1) == E.UNKNOWN_MEMBER_ID


def test_pending_sync_expiry_removes_members_that_never_sync():
    """Kafka: testRebalanceCompletesBeforeMemberJoins / pending sync expiration."""
    env = Env()
    a, b = env.join(rebalance=4000), env.join(rebalance=4000)
    env.sched.advance(0)
    leader, follower = a[0].member_id, b[0].member_id
    env.sync(leader, 1, {leader: b"x", follower: b"y"})
    assert env.group().is_(S.STABLE)
    env.sched.advance(3999)
    assert env.hb(leader, 1) == 0
    env.sched.advance(1)
    assert not env.group().has(follower) and env.group().is_(S.PREPARING_REBALANCE)


def test_sync_group_errors():
    """Kafka: testSyncGroupFromUnknownGroup / UnknownMember / IllegalGeneration /
    testSyncGroupFromIllegalGeneration / during PreparingRebalance."""
    env = Env()
    assert env.sync("nobody", 1, gid="unknown")[0].error == E.UNKNOWN_MEMBER_ID
    m1, gen = env.join_stable()
    assert env.sync("nobody", gen)[0].error == E.UNKNOWN_MEMBER_ID
    assert env.sync(m1, gen + 1)[0].error == E.ILLEGAL_GENERATION
    assert env.sync(m1, gen, ptype="other")[0].error == E.INCONSISTENT_GROUP_PROTOCOL
    assert env.sync(m1, gen, pname="roundrobin")[0].error == E.INCONSISTENT_GROUP_PROTOCOL
    assert env.sync(m1, gen, ptype="consumer", pname="range")[0].error == 0
    env.join()  # a new member: PreparingRebalance
    assert env.sync(m1, gen)[0].error == E.REBALANCE_IN_PROGRESS
    assert env.sync("", gen, gid="")[0].error == E.INVALID_GROUP_ID


def test_heartbeat_errors():
    """Kafka: testHeartbeatUnknownGroup / UnknownConsumerExistingGroup / IllegalGeneration /
    testHeartbeatEmptyGroup / testHeartbeatDuringRebalanceCausesRebalanceInProgress."""
    env = Env()
    assert env.hb("m", 1, gid="nope") == E.UNKNOWN_MEMBER_ID
    assert env.hb("m", 1, gid="") == E.INVALID_GROUP_ID
    m1, gen = env.join_stable()
    assert env.hb("other", gen) == E.UNKNOWN_MEMBER_ID
    assert env.hb(m1, gen + 1) == E.ILLEGAL_GENERATION
    assert env.hb(m1, gen) == 0
    env.coord.handle_commit_offsets("simple", "", None, -1, {("t", 0): om(1)})
    assert env.hb("m", 0, gid="simple") == E.UNKNOWN_MEMBER_ID


def test_heartbeat_during_completing_rebalance_is_ok():
    env = Env()
    j = env.join()
    env.sched.advance(0)
    (r,) = j
    assert env.group().is_(S.COMPLETING_REBALANCE)
    assert env.hb(r.member_id, 1) == 0


def test_join_errors():
    """Kafka: testJoinGroupWrongCoordinator-like checks: invalid group id, session timeout
    bounds, unknown member of unknown group, inconsistent protocols."""
    env = Env()
    assert env.join(gid="")[0].error == E.INVALID_GROUP_ID
    assert env.join(session=5999)[0].error == E.INVALID_SESSION_TIMEOUT
    assert env.join(session=1800001)[0].error == E.INVALID_SESSION_TIMEOUT
    assert env.join(gid="x", member_id="m-1")[0].error == E.UNKNOWN_MEMBER_ID
    assert env.join(gid="y", protocols=[])[0].error == E.INCONSISTENT_GROUP_PROTOCOL
    assert env.join(gid="z", protocol_type="")[0].error == E.INCONSISTENT_GROUP_PROTOCOL
    env.join_stable()
    r = env.join(protocols=[("roundrobin", b"")])
    assert r[0].error == E.INCONSISTENT_GROUP_PROTOCOL
    r = env.join(protocol_type="connect")
    assert r[0].error == E.INCONSISTENT_GROUP_PROTOCOL
    assert env.join(member_id="ghost")[0].error == E.UNKNOWN_MEMBER_ID


def test_protocol_selection_by_votes_among_common_protocols():
    """Kafka: GroupMetadataTest.testSelectProtocol."""
    g = GroupMetadata("g")
    g.add(MemberMetadata("a", None, "c", "h", 1, 1, "consumer", [("range", b""), ("roundrobin", b"")]))
    g.add(MemberMetadata("b", None, "c", "h", 1, 1, "consumer", [("roundrobin", b""), ("range", b"")]))
    g.add(MemberMetadata("c", None, "c", "h", 1, 1, "consumer",
                         [("roundrobin", b""), ("sticky", b""), ("range", b"")]))
    assert g.select_protocol() == "roundrobin"
    g.transition_to(S.PREPARING_REBALANCE, 0)
    g.remove("c")
    g.add(MemberMetadata("d", None, "c", "h", 1, 1, "consumer", [("sticky", b""), ("range", b"")]))
    # candidates: range only (roundrobin not supported by d)
    assert g.candidate_protocols() == {"range"} and g.select_protocol() == "range"
    assert g.supports_protocols("consumer", ["range"]) and not g.supports_protocols("consumer", ["roundrobin"])


@given(st.lists(st.permutations(["range", "roundrobin", "cooperative-sticky"]).map(lambda p: p[:2]),
                min_size=1, max_size=6))
def test_selected_protocol_is_supported_by_everyone_and_most_voted(lists):
    g = GroupMetadata("g")
    for i, names in enumerate(lists):
        g.add(MemberMetadata(f"m{i}", None, "c", "h", 1, 1, "consumer", [(n, b"") for n in names]))
    common = set.intersection(*(set(n) for n in lists))
    if not common:
        with pytest.raises(ValueError):
            g.select_protocol()
        return
    chosen = g.select_protocol()
    assert all(chosen in names for names in lists)
    votes = {p: sum(1 for names in lists if next(n for n in names if n in common) == p) for p in common}
    assert votes[chosen] == max(votes.values())


def test_leader_rejoin_in_stable_triggers_rebalance_follower_same_metadata_does_not():
    """Kafka: testLeaderRejoin... / testFollowerJoinWithMatchingMetadata."""
    env = Env()
    a, b = env.join(), env.join()
    env.sched.advance(0)
    leader, follower = a[0].member_id, b[0].member_id
    env.sync(follower, 1)
    env.sync(leader, 1, {leader: b"x", follower: b"y"})
    (r,) = env.join(member_id=follower)
    assert r.generation_id == 1 and r.members == [] and env.group().is_(S.STABLE)
    assert env.join(member_id=leader) == [] and env.group().is_(S.PREPARING_REBALANCE)


def test_rejoin_in_completing_rebalance_with_same_metadata_returns_current_generation():
    """Kafka: testJoinGroupCompletingRebalance... a member that lost its JoinGroup answer."""
    env = Env()
    a, b = env.join(), env.join()
    env.sched.advance(0)
    (r,) = env.join(member_id=a[0].member_id)
    assert r.generation_id == 1 and r.leader_id == a[0].member_id and len(r.members) == 2
    assert env.group().is_(S.COMPLETING_REBALANCE)
    # different metadata: rebalance, and parked followers' SyncGroup gets REBALANCE_IN_PROGRESS
    sb = env.sync(b[0].member_id, 1)
    env.join(member_id=a[0].member_id, protocols=[("range", subscription("t", "u"))])
    assert sb[0].error == E.REBALANCE_IN_PROGRESS and env.group().is_(S.PREPARING_REBALANCE)


def test_leave_group():
    """Kafka: testLeaveGroupWrongCoordinator-like family: unknown group/member, leaving
    triggers a rebalance, batch leave by instance id (v3+)."""
    env = Env()
    assert env.coord.handle_leave_group("nope", [("m", None, None)]) == (0, [("m", None, E.UNKNOWN_MEMBER_ID)])
    assert env.coord.handle_leave_group("", [("m", None, None)]) == (E.INVALID_GROUP_ID, [])
    a, b = env.join(), env.join(instance="inst-b")
    env.sched.advance(0)
    ma, mb = a[0].member_id, b[0].member_id
    assert mb.startswith("inst-b-")
    env.sync(mb, 1, instance="inst-b")
    env.sync(ma, 1, {ma: b"1", mb: b"2"})
    top, members = env.coord.handle_leave_group("g", [("ghost", None, None), ("", "inst-b", "bye"),
                                                      ("", "inst-x", None)])
    assert top == 0 and members == [("ghost", None, E.UNKNOWN_MEMBER_ID), ("", "inst-b", 0),
                                    ("", "inst-x", E.UNKNOWN_MEMBER_ID)]
    assert not env.group().has(mb) and env.group().is_(S.PREPARING_REBALANCE)
    (r,) = env.join(member_id=ma)
    assert r.generation_id == 2
    assert env.coord.handle_leave_group("g", [(ma, None, None)]) == (0, [(ma, None, 0)])
    # last member left during Stable -> PreparingRebalance -> Empty (all joined: 0 of 0)
    assert env.group().is_(S.EMPTY) and env.group().generation_id == 3


def test_leave_of_pending_member():
    env = Env()
    (r,) = env.join(require_known=True)
    assert env.group().is_pending_member(r.member_id)
    assert env.coord.handle_leave_group("g", [(r.member_id, None, None)]) == (0, [(r.member_id, None, 0)])
    assert not env.group().is_pending_member(r.member_id)


def test_pending_member_expires_after_session_timeout():
    """Kafka: testPendingMemberWithUnexpectedJoin... pending members hold the rebalance only
    until their session timeout."""
    env = Env()
    m1, _ = env.join_stable()
    (p,) = env.join(require_known=True)
    assert p.error == E.MEMBER_ID_REQUIRED
    j1 = env.join(member_id=m1)       # leader rejoins: waits for the pending member
    assert j1 == []
    env.sched.advance(SESSION)
    assert not env.group().is_pending_member(p.member_id)
    assert j1[0].generation_id == 2


def test_static_member_rejoin_in_stable_keeps_generation_and_fences_old_id():
    """Kafka: staticMemberRejoinWithKnownMemberId / staticMemberFenceDuplicateRejoinedFollower."""
    env = Env()
    a = env.join(instance="i-a")
    b = env.join(instance="i-b")
    env.sched.advance(0)
    ma, mb = a[0].member_id, b[0].member_id
    leader = a[0].leader_id
    env.sync(mb, 1, instance="i-b")
    env.sync(ma, 1, {ma: b"A", mb: b"B"}, instance="i-a")
    follower_old = mb if leader == ma else ma
    inst = "i-b" if follower_old == mb else "i-a"
    (r,) = env.join(instance=inst)          # restarted static follower, unknown member id
    assert r.error == 0 and r.generation_id == 1 and r.member_id != follower_old
    assert r.leader_id == leader and r.members == [] and env.group().is_(S.STABLE)
    assert env.hb(follower_old, 1, instance=inst) == E.FENCED_INSTANCE_ID
    assert env.hb(r.member_id, 1, instance=inst) == 0
    assert env.sync(r.member_id, 1, instance=inst)[0].assignment == (b"B" if inst == "i-b" else b"A")
    assert env.join(member_id=follower_old, instance=inst)[0].error == E.FENCED_INSTANCE_ID


def test_static_leader_rejoin_skip_assignment_v9():
    """KIP-814: a static leader rejoining a Stable group with JoinGroup v9 learns it leads
    with skip_assignment and no rebalance."""
    env = Env()
    a, _ = env.join_stable(instance="i-a")
    (r,) = env.join(instance="i-a", skip=True)
    assert r.skip_assignment and r.leader_id == r.member_id and len(r.members) == 1
    assert r.generation_id == 1 and env.group().is_(S.STABLE)


def test_static_member_survives_rebalance_without_rejoining_until_session_timeout():
    """Static members are not removed for missing a join phase (only by session timeout)."""
    env = Env()
    a, _ = env.join_stable(instance="i-a", rebalance=5000)
    j = env.join(rebalance=5000)
    env.sched.advance(5000)
    assert j[0].generation_id == 2 and env.group().has(a)


def test_group_max_size():
    env = Env(max_size=1)
    env.join_stable()
    (r,) = env.join()
    assert r.error == E.GROUP_MAX_SIZE_REACHED


# ---------------------------------------------------------------------------------- offsets
def test_simple_commit_creates_empty_group_and_fetch_returns_it():
    """Kafka: testCommitOffsetFromUnknownGroup / testFetchOffsets."""
    env = Env()
    assert env.coord.handle_commit_offsets("s", "", None, -1, {("t", 0): om(5, "meta", epoch=3)}) == {("t", 0): 0}
    assert env.group("s").is_(S.EMPTY) and env.group("s").protocol_type is None
    err, res = env.coord.handle_fetch_offsets("s", False, [("t", 0), ("t", 1)])
    assert err == 0 and res == {("t", 0): (5, 3, "meta", 0), ("t", 1): (-1, -1, "", 0)}
    assert env.coord.handle_fetch_offsets("s", False, None) == (0, {("t", 0): (5, 3, "meta", 0)})
    assert env.coord.handle_fetch_offsets("none", False, [("t", 0)]) == (0, {("t", 0): (-1, -1, "", 0)})
    assert env.coord.handle_fetch_offsets("none", False, None) == (0, {})
    # the empty group id is allowed for offsets (backwards compatibility)
    assert env.coord.handle_commit_offsets("", "", None, -1, {("t", 0): om(1)}) == {("t", 0): 0}


def test_commit_errors_by_state():
    """Kafka: testCommitOffsetWithDefaultGeneration / testCommitOffsetsAfterGroupIsEmpty /
    testCommitOffsetInCompletingRebalance / testCommitMaintainsSession..."""
    env = Env()
    tp = ("t", 0)
    assert env.coord.handle_commit_offsets("g", "m", None, 1, {tp: om(1)}) == {tp: E.ILLEGAL_GENERATION}
    j = env.join()
    env.sched.advance(0)
    m = j[0].member_id
    assert env.coord.handle_commit_offsets("g", m, None, 1, {tp: om(1)}) == {tp: E.REBALANCE_IN_PROGRESS}
    env.sync(m, 1, {m: b""})
    assert env.coord.handle_commit_offsets("g", m, None, 1, {tp: om(1)}) == {tp: 0}
    assert env.coord.handle_commit_offsets("g", m, None, 2, {tp: om(1)}) == {tp: E.ILLEGAL_GENERATION}
    assert env.coord.handle_commit_offsets("g", "x", None, 1, {tp: om(1)}) == {tp: E.UNKNOWN_MEMBER_ID}
    assert env.coord.handle_commit_offsets("g", "", None, -1, {tp: om(1)}) == {tp: E.UNKNOWN_MEMBER_ID}
    too_big = "x" * 4097
    assert env.coord.handle_commit_offsets("g", m, None, 1, {tp: om(2, too_big), ("t", 1): om(3)}) == {
        tp: E.OFFSET_METADATA_TOO_LARGE, ("t", 1): 0}
    # commits keep the session alive (Kafka: testCommitMaintainsSession)
    env.sched.advance(SESSION - 1)
    env.coord.handle_commit_offsets("g", m, None, 1, {tp: om(4)})
    env.sched.advance(SESSION - 1)
    assert env.group().has(m)
    # during PreparingRebalance the current generation may still commit
    env.join()
    assert env.coord.handle_commit_offsets("g", m, None, 1, {tp: om(5)}) == {tp: 0}
    assert env.coord.handle_fetch_offsets("g", False, [tp])[1][tp][0] == 5


def test_commit_store_failure_maps_errors_and_does_not_update_cache():
    from storage.errors import KafkaStorageError, RecordBatchTooLargeError
    env = Env()
    tp = ("t", 0)
    env.store.fail_next = RecordBatchTooLargeError("big")
    assert env.coord.handle_commit_offsets("s", "", None, -1, {tp: om(1)}) == {tp: E.INVALID_COMMIT_OFFSET_SIZE}
    env.store.fail_next = KafkaStorageError("disk")
    assert env.coord.handle_commit_offsets("s", "", None, -1, {tp: om(1)}) == {tp: E.NOT_COORDINATOR}
    assert env.coord.handle_fetch_offsets("s", False, [tp])[1][tp][0] == -1


def test_offsets_expire_after_retention_once_group_is_empty():
    """Kafka: testOffsetExpirationOfActiveGroupSemantics / ...Empty group: retention counts
    from the moment the group became Empty; an Empty group without offsets dies."""
    retention = 60_000
    env = Env(offsets_retention_ms=retention, offsets_retention_check_interval_ms=1000)
    m, gen = env.join_stable()
    env.coord.handle_commit_offsets("g", m, None, gen, {("t", 0): om(7)})
    for _ in range(2 * retention // 5000):   # a stable group subscribed to t keeps its offsets
        env.sched.advance(5000)
        assert env.hb(m, gen) == 0
    assert ("t", 0) in env.group().offsets
    # the member leaves: group becomes Empty now
    env.coord.handle_leave_group("g", [(m, None, None)])
    assert env.group().is_(S.EMPTY)
    env.sched.advance(retention - 1000)
    assert ("t", 0) in env.group().offsets
    env.sched.advance(1000)
    assert "g" not in env.coord.groups
    assert env.store.records[-1] == ("tomb", "g", [("t", 0)], True)


def test_simple_group_offsets_expire_from_commit_time():
    env = Env(offsets_retention_ms=10_000, offsets_retention_check_interval_ms=1000)
    env.coord.handle_commit_offsets("s", "", None, -1, {("t", 0): om(1, now=env.clock.now_ms())})
    env.sched.advance(5000)
    env.coord.handle_commit_offsets("s", "", None, -1, {("t", 1): om(1, now=env.clock.now_ms())})
    env.sched.advance(5000)
    assert list(env.group("s").offsets) == [("t", 1)]
    env.sched.advance(5000)
    assert "s" not in env.coord.groups
    # generation 0: no group metadata tombstone, only the offset's
    assert env.store.records[-1] == ("tomb", "s", [("t", 1)], False)


def test_stable_group_expires_offsets_of_unsubscribed_topics_only():
    env = Env(offsets_retention_ms=1000, offsets_retention_check_interval_ms=1000)
    m, gen = env.join_stable()   # subscribed to "t"
    for topic in ("t", "old"):
        env.coord.handle_commit_offsets("g", m, None, gen, {(topic, 0): om(1, now=env.clock.now_ms())})
    env.sched.advance(1000)
    env.hb(m, gen)
    env.sched.advance(1000)
    assert list(env.group().offsets) == [("t", 0)]


# ---------------------------------------------------------------------------------- admin
def test_describe_list_delete_groups():
    """Kafka: testDescribeGroupStable / testDeleteNonEmptyGroup / testDeleteEmptyGroup /
    testListGroups with states filter."""
    env = Env()
    m, gen = env.join_stable()
    err, summary = env.coord.handle_describe_group("g")
    assert err == 0 and summary.state == "Stable" and summary.protocol == "range"
    assert summary.protocol_type == "consumer"
    (ms,) = summary.members
    assert ms.member_id == m and ms.client_id == "client" and ms.client_host == "/127.0.0.1"
    assert ms.metadata == subscription("t") and ms.assignment == b"A"
    assert env.coord.handle_describe_group("nope") == (0, env.coord.handle_describe_group("nope")[1])
    assert env.coord.handle_describe_group("nope")[1].state == "Dead"
    env.coord.handle_commit_offsets("s", "", None, -1, {("t", 0): om(1)})
    err, groups = env.coord.handle_list_groups()
    assert err == 0 and {(g.group_id, g.state, g.protocol_type) for g in groups} == {
        ("g", "Stable", "consumer"), ("s", "Empty", "")}
    assert [g.group_id for g in env.coord.handle_list_groups(["empty"])[1]] == ["s"]
    assert env.coord.handle_list_groups(types=["consumer"]) == (0, [])
    assert len(env.coord.handle_list_groups(types=["Classic"])[1]) == 2
    res = env.coord.handle_delete_groups(["g", "s", "missing"])
    assert res == {"g": E.NON_EMPTY_GROUP, "s": 0, "missing": E.GROUP_ID_NOT_FOUND}
    assert "s" not in env.coord.groups
    assert env.coord.handle_fetch_offsets("s", False, [("t", 0)])[1][("t", 0)][0] == -1
    # describe while rebalancing: no metadata/assignment
    env.join()
    summary = env.coord.handle_describe_group("g")[1]
    assert summary.state == "PreparingRebalance" and summary.protocol == ""
    assert all(x.metadata == b"" and x.assignment == b"" for x in summary.members)


def test_delete_offsets():
    """Kafka: testDeleteOffsetOfEmptyConsumerGroup / ...OfStableConsumerGroup (subscribed
    topics answer GROUP_SUBSCRIBED_TO_TOPIC)."""
    env = Env()
    assert env.coord.handle_delete_offsets("nope", [("t", 0)]) == (E.GROUP_ID_NOT_FOUND, {})
    m, gen = env.join_stable()
    env.coord.handle_commit_offsets("g", m, None, gen, {("t", 0): om(1), ("u", 0): om(2)})
    err, res = env.coord.handle_delete_offsets("g", [("t", 0), ("u", 0)])
    assert err == 0 and res == {("t", 0): E.GROUP_SUBSCRIBED_TO_TOPIC, ("u", 0): 0}
    assert list(env.group().offsets) == [("t", 0)]
    env.coord.handle_commit_offsets("s", "", None, -1, {("t", 0): om(1)})
    assert env.coord.handle_delete_offsets("s", [("t", 0)]) == (0, {("t", 0): 0})


# ---------------------------------------------------------------------------------- persistence
def test_reload_restores_stable_group_offsets_and_expires_absent_members():
    """Broker restart: the group comes back Stable with its generation, assignment and
    offsets; members that do not heartbeat within their session timeout are removed."""
    env = Env()
    a, b = env.join(), env.join()
    env.sched.advance(0)
    ma, mb = a[0].member_id, b[0].member_id
    env.sync(mb, 1)
    env.sync(ma, 1, {ma: b"A", mb: b"B"})
    env.coord.handle_commit_offsets("g", ma, None, 1, {("t", 0): om(10, "x", epoch=2)})
    env.coord.handle_commit_offsets("s", "", None, -1, {("t", 3): om(4)})
    env2 = Env(store=env.store)
    g = env2.group()
    assert g.is_(S.STABLE) and g.generation_id == 1 and g.protocol_name == "range"
    assert g.protocol_type == "consumer" and g.leader_id == a[0].leader_id
    assert {m.member_id: m.assignment for m in g.all_members()} == {ma: b"A", mb: b"B"}
    assert g.offsets[("t", 0)] == om(10, "x", epoch=2)
    assert env2.group("s").offsets[("t", 3)].offset == 4
    # ma keeps heartbeating with its old generation; mb is gone
    for _ in range(3):
        env2.sched.advance(SESSION // 2)
        assert env2.hb(ma, 1) in (0, E.REBALANCE_IN_PROGRESS)
    assert not env2.group().has(mb)
    assert env2.hb(ma, 1) == E.REBALANCE_IN_PROGRESS
    assert env2.sync(ma, 1)[0].error == E.REBALANCE_IN_PROGRESS


def test_group_value_roundtrip_and_from_value():
    g = GroupMetadata("g", S.EMPTY, 5)
    g.add(MemberMetadata("m1", "inst", "cid", "/h", 300, 100, "consumer", [("range", b"sub")]))
    g.transition_to(S.PREPARING_REBALANCE, 6)
    g.init_next_generation(7)
    value = decode_value(GroupMetadataValue, group_value(g, {"m1": b"asg"}))
    assert value[0] == 3
    v = value[1]
    assert (v.protocol_type, v.generation, v.protocol, v.leader, v.current_state_timestamp) == (
        "consumer", 1, "range", "m1", 7)
    g2 = group_from_value("g", v)
    assert g2.is_(S.STABLE) and g2.get("m1").group_instance_id == "inst"
    assert g2.get("m1").rebalance_timeout_ms == 300 and g2.get("m1").assignment == b"asg"
    assert g2.static_members == {"inst": "m1"} and g2.subscribed_topics is None  # b"sub" unparsable


def test_offset_value_versions():
    a = OffsetAndMetadata(5, 2, "m", 100)
    assert offset_value(a)[:2] == b"\x00\x03" and offset_from_value(offset_value(a)) == a
    b = OffsetAndMetadata(5, -1, "m", 100, expire_timestamp=200)
    assert offset_value(b)[:2] == b"\x00\x01" and offset_from_value(offset_value(b)) == b


def test_java_string_hash_and_partition_for():
    """Kafka's partitionFor: Utils.abs(groupId.hashCode) % partitions."""
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(2**31)   # Integer.MIN_VALUE -> abs 0
    assert partition_for("polygenelubricants", 50) == 0
    assert java_string_hash("é") == 233 and java_string_hash("\U0001F600") == 55357 * 31 + 56832
    assert partition_for("hello", 50) == 99162322 % 50


def test_parse_subscription_topics():
    assert parse_subscription_topics(subscription("a", "bb")) == ["a", "bb"]
    with pytest.raises(Exception):
        parse_subscription_topics(b"\x00")


def test_unload_answers_parked_requests():
    env = Env(delay_ms=3000)
    j = env.join()
    env.coord.unload()
    assert j[0].error == E.NOT_COORDINATOR and env.sched.pending() == 0
    assert env.join()[0].error == E.COORDINATOR_NOT_AVAILABLE


# ---------------------------------------------------------------------------------- offsets log
def _open_topics(data_dir, clock):
    from broker.cluster import ClusterMeta
    from broker.topics import TopicManager
    from storage.manager import LogManager
    meta = ClusterMeta([data_dir], 1, "test-cluster")
    known = meta.load_topics()
    logs = LogManager([str(data_dir)], {}, clock, topic_overrides={t.name: t.configs for t in known})
    logs.load()
    topics = TopicManager(meta, logs, {}, num_partitions=1, auto_create=False)
    topics.open_all()
    return topics, logs


def test_offsets_log_is_compacted_internal_topic_and_replays_after_restart(tmp_path):
    """The real storage path: records land in __consumer_offsets-<partitionFor(group)> in
    Kafka's schemas, and a new coordinator over the same directory (after a close without
    clean shutdown too) gets the same groups and offsets back; tombstones delete."""
    clock = ManualClock(1_000_000)
    topics, logs = _open_topics(tmp_path, clock)
    store = OffsetsLog(topics, 5, clock)
    env = Env(store=store)
    assert topics.get("__consumer_offsets") is None       # created lazily
    m, gen = env.join_stable(gid="grp")
    t = topics.get("__consumer_offsets")
    assert t.partitions == 5 and t.configs["cleanup.policy"] == "compact"
    env.coord.handle_commit_offsets("grp", m, None, gen, {("t", 0): om(42, "meta", epoch=1)})
    env.coord.handle_commit_offsets("simple", "", None, -1, {("t", 1): om(7), ("t", 2): om(8)})
    env.coord.handle_commit_offsets("simple", "", None, -1, {("t", 1): om(9)})
    env.coord.handle_commit_offsets("gone", "", None, -1, {("t", 0): om(1)})
    assert env.coord.handle_delete_groups(["gone"]) == {"gone": 0}
    plog = topics.log("__consumer_offsets", partition_for("grp", 5))
    assert plog.log_end_offset == 2  # group metadata (at SyncGroup), then the offset commit
    logs.shutdown()

    topics2, logs2 = _open_topics(tmp_path, clock)
    env2 = Env(store=OffsetsLog(topics2, 50, clock))   # the topic keeps its 5 partitions
    assert env2.coord.store.num_partitions == 5
    g = env2.group("grp")
    assert g.is_(S.STABLE) and g.generation_id == gen and g.has(m) and g.get(m).assignment == b"A"
    assert env2.coord.handle_fetch_offsets("grp", False, None) == (0, {("t", 0): (42, 1, "meta", 0)})
    assert env2.coord.handle_fetch_offsets("simple", False, None) == (0, {("t", 1): (9, -1, "", 0),
                                                                         ("t", 2): (8, -1, "", 0)})
    assert "gone" not in env2.coord.groups
    logs2.shutdown()
