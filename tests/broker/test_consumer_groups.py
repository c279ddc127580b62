"""KIP-848 consumer groups in the group coordinator, on an event loop, over a real broker's
storage in a tmp dir (real ``__consumer_offsets`` partition logs); a ManualClock and a manual
scheduler drive session, rebalance, join and sync timeouts.

Cases follow Kafka's GroupMetadataManagerTest / CurrentAssignmentBuilderTest where one
exists: joining and epochs, the revoke-before-assign handover (a partition is never owned by
two members), leaving (-1, static -2), session and rebalance timeouts, static membership
(UNRELEASED_INSTANCE_ID), the heartbeat validation errors, regex subscriptions re-evaluated
when topics appear, the offset checks with member epochs (STALE_MEMBER_EPOCH per version),
replay after a restart, online upgrade from a classic group and downgrade back, and the
admin views. A property test drives random joins, leaves and heartbeats of simulated clients
and checks that no partition is ever owned by two members and that the group converges.
"""
from __future__ import annotations

import pytest
import pytest_asyncio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.config import BrokerConfig
from broker.groups.consumer_group import ConsumerGroup, ConsumerGroupState, MemberState
from broker.groups.coordinator import GroupCoordinator
from broker.groups.base import OffsetAndMetadata
from broker.groups.group import GroupMetadata, GroupState
from broker.server import Broker
from protocol.errors import ErrorCode as E
from protocol.messages import consumer_protocol as cp
from protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest as HB
from storage.clock import ManualClock
from tests.helpers.scheduler import ManualScheduler

T0 = 1_700_000_000_000
TOPIC = "events"
SESSION = 45_000
REBALANCE = 30_000


class Env:
    def __init__(self, data_dir, **overrides):
        raw = {"log.dirs": str(data_dir), "listeners": "PLAINTEXT://127.0.0.1:0", "offsets.topic.num.partitions": "3"}
        raw.update({k: str(v) for k, v in overrides.items()})
        self.clock = ManualClock(T0)
        self.sched = ManualScheduler(self.clock)
        self.broker = Broker(BrokerConfig(raw), clock=self.clock)
        self.stopped = False
        self.next: list[Env] = []

    async def start(self, partitions: int = 6) -> "Env":
        b = self.broker
        b.open_storage()
        b.groups = GroupCoordinator(b, scheduler=self.sched)
        await b.groups.start()
        if b.topics.get(TOPIC) is None:
            b.topics.create_topic(TOPIC, partitions)
        return self

    async def stop(self) -> None:
        for e in self.next:
            await e.stop()
        if not self.stopped:
            self.stopped = True
            await self.broker.groups.stop()
            self.broker.logs.shutdown()

    @property
    def gc(self) -> GroupCoordinator:
        return self.broker.groups

    def tid(self, name=TOPIC) -> bytes:
        return bytes(self.broker.topics.get(name).topic_id)

    def hb(self, group="g", member_id="", epoch=0, *, topics=(TOPIC,), regex=None, owned=None, instance_id=None,
           assignor=None, rebalance_timeout=REBALANCE, version=1, full=None):
        """One heartbeat; a join (epoch 0) sends everything, later ones only ``owned``."""
        join = epoch == 0
        tp = HB.TopicPartitions
        req = HB(group_id=group, member_id=member_id, member_epoch=epoch, instance_id=instance_id,
                 rebalance_timeout_ms=rebalance_timeout if join else -1,
                 subscribed_topic_names=list(topics) if (join and topics is not None) else None,
                 subscribed_topic_regex=regex if join else None, server_assignor=assignor,
                 topic_partitions=[] if join else (None if owned is None else
                                                   [tp(topic_id=t, partitions=sorted(ps)) for t, ps in owned.items()]))
        if full is not None:
            for k, v in full.items():
                setattr(req, k, v)
        return self.gc.handle_consumer_group_heartbeat(req, version, "client", "/127.0.0.1")

    def group(self, gid="g"):
        return self.gc.groups.get(gid)


@pytest_asyncio.fixture
async def env(tmp_path):
    e = await Env(tmp_path / "data").start()
    yield e
    await e.stop()


async def restart(e: Env) -> Env:
    await e.stop()
    e2 = Env(e.broker.cfg.log_dirs[0])
    e2.clock.set(e.clock.now_ms())
    e.next.append(e2)
    return await e2.start()


class Sim:
    """A consumer-protocol client: owns what its last assignment gave it (revoking at once what
    the assignment no longer holds) and reports it in every heartbeat."""

    def __init__(self, env: Env, name: str, group="g", instance_id=None, topics=(TOPIC,)):
        self.env, self.group, self.instance_id, self.topics = env, group, instance_id, topics
        self.member_id = name
        self.epoch = 0
        self.owned: dict = {}
        self.revoking: dict = {}  # given up by the assignment, still being revoked (slow callback)

    def beat(self, slow: bool = False):
        """One heartbeat reporting what it owns; ``slow``: partitions the last assignment took
        away are still being revoked (as while a long onPartitionsRevoked runs), so they stay
        owned and reported for this heartbeat."""
        if not slow:
            self.revoking = {}
        reported = {t: set(ps) | self.revoking.get(t, set()) for t, ps in self.owned.items()}
        for t, ps in self.revoking.items():
            reported.setdefault(t, set()).update(ps)
        r = self.env.hb(self.group, self.member_id, self.epoch, owned=reported, instance_id=self.instance_id,
                        topics=self.topics)
        if r.error == E.FENCED_MEMBER_EPOCH:
            self.owned, self.epoch, self.revoking = {}, 0, {}
            return r
        assert r.error == 0, r
        self.epoch = r.member_epoch
        if r.assignment is not None:
            new = {t: set(ps) for t, ps in r.assignment.items() if ps}
            for t, ps in reported.items():
                gone = ps - new.get(t, set())
                if gone and slow:
                    self.revoking.setdefault(t, set()).update(gone)
            self.owned = new
        return r

    def holds(self) -> dict:
        out = {t: set(ps) for t, ps in self.owned.items()}
        for t, ps in self.revoking.items():
            out.setdefault(t, set()).update(ps)
        return out

    def leave(self, epoch=-1):
        r = self.env.hb(self.group, self.member_id, epoch, instance_id=self.instance_id)
        self.owned, self.epoch = {}, 0
        return r

    def parts(self) -> set:
        return {p for ps in self.owned.values() for p in ps}


def owners(sims) -> dict:
    seen: dict = {}
    for s in sims:
        for t, ps in s.holds().items():
            for p in ps:
                assert (t, p) not in seen, f"{p} owned by {seen[(t, p)]} and {s.member_id}"
                seen[(t, p)] = s.member_id
    return seen


def settle(sims, rounds=6):
    for _ in range(rounds):
        for s in sims:
            s.beat()
            owners(sims)


# ---- joining, epochs, handover -----------------------------------------------------------------------
@pytest.mark.asyncio
async def test_three_members_split_six_partitions(env):
    sims = [Sim(env, f"m{i}") for i in range(3)]
    settle(sims)
    g = env.group()
    assert isinstance(g, ConsumerGroup) and g.state is ConsumerGroupState.STABLE
    # the group starts at epoch 1 (Kafka 4.4), each join bumps it
    assert g.group_epoch == g.target_assignment_epoch == 4
    assert sorted(len(s.parts()) for s in sims) == [2, 2, 2]
    assert len(owners(sims)) == 6
    assert all(m.member_epoch == 4 and m.state is MemberState.STABLE for m in g.members.values())


@pytest.mark.asyncio
async def test_a_fourth_member_gets_partitions_only_after_their_owner_revoked_them(env):
    sims = [Sim(env, f"m{i}") for i in range(3)]
    settle(sims)
    before = {s.member_id: s.parts() for s in sims}
    new = Sim(env, "m3")
    r = new.beat()
    assert r.member_epoch == 5 and r.assignment == {}  # its partition is still owned by another member
    g = env.group()
    assert g.members["m3"].state is MemberState.UNRELEASED_PARTITIONS
    # the owner to revoke learns it on its next heartbeat and stays at its epoch until it has
    for s in sims:
        s.beat()
        owners(sims + [new])
    revoking = [m for m in g.members.values() if m.state is MemberState.UNREVOKED_PARTITIONS]
    assert len(revoking) <= 1
    settle(sims + [new])
    assert sorted(len(s.parts()) for s in sims + [new]) == [1, 1, 2, 2]
    # only what had to move moved: every old member kept a subset of what it had
    for s in sims:
        assert s.parts() <= before[s.member_id]
    assert env.group().state is ConsumerGroupState.STABLE


@pytest.mark.asyncio
async def test_leaving_member_partitions_go_to_the_others(env):
    sims = [Sim(env, f"m{i}") for i in range(3)]
    settle(sims)
    r = sims[0].leave()
    assert (r.error, r.member_epoch) == (0, -1)
    assert "m0" not in env.group().members and env.group().group_epoch == 5
    settle(sims[1:])
    assert sorted(len(s.parts()) for s in sims[1:]) == [3, 3]


@pytest.mark.asyncio
async def test_session_timeout_fences_a_silent_member(env):
    sims = [Sim(env, f"m{i}") for i in range(2)]
    settle(sims)
    env.sched.advance(SESSION - 1000)
    sims[0].beat()
    env.sched.advance(2000)  # m1 silent for longer than the session timeout
    assert set(env.group().members) == {"m0"}
    r = env.hb("g", "m1", sims[1].epoch, owned=sims[1].owned)
    assert r.error == E.UNKNOWN_MEMBER_ID


@pytest.mark.asyncio
async def test_rebalance_timeout_fences_a_member_that_does_not_revoke(env):
    a = Sim(env, "a")
    settle([a])
    b = Sim(env, "b")
    b.beat()
    r = env.hb("g", "a", a.epoch, owned=a.owned)  # told to revoke, keeps reporting them owned
    assert env.group().members["a"].state is MemberState.UNREVOKED_PARTITIONS
    env.sched.advance(REBALANCE - 1)
    env.hb("g", "a", a.epoch, owned=a.owned)
    env.hb("g", "b", b.epoch, owned=b.owned)
    assert "a" in env.group().members
    env.sched.advance(2)
    assert "a" not in env.group().members
    assert r.error == 0


@pytest.mark.asyncio
async def test_previous_epoch_is_accepted_when_the_answer_was_lost(env):
    a = Sim(env, "a")
    settle([a])
    b = Sim(env, "b")
    b.beat()
    # a revokes; the answer that moved it to the new epoch is "lost"
    old_epoch, old_owned = a.epoch, a.owned
    a.beat()
    a.beat()
    assert a.epoch > old_epoch
    kept = {t: set(ps) & old_owned.get(t, set()) for t, ps in a.owned.items()}
    r = env.hb("g", "a", old_epoch, owned=kept)
    assert r.error == 0 and r.member_epoch == a.epoch
    r = env.hb("g", "a", old_epoch, owned=old_owned)  # owns more than its assignment: fenced
    assert r.error == E.FENCED_MEMBER_EPOCH


# ---- static membership ----------------------------------------------------------------------------------
@pytest.mark.asyncio
async def test_static_member_leaves_temporarily_and_rejoins_with_its_partitions(env):
    a, b = Sim(env, "a", instance_id="ia"), Sim(env, "b", instance_id="ib")
    settle([a, b])
    parts = a.parts()
    r = a.leave(-2)
    assert (r.error, r.member_epoch) == (0, -2)
    epoch = env.group().group_epoch
    a2 = Sim(env, "a2", instance_id="ia")
    r = a2.beat()
    assert r.error == 0 and a2.parts() == parts
    assert env.group().group_epoch == epoch  # no rebalance
    assert set(env.group().members) == {"a2", "b"}


@pytest.mark.asyncio
async def test_static_member_id_in_use_is_unreleased(env):
    a = Sim(env, "a", instance_id="ia")
    settle([a])
    r = env.hb("g", "other", 0, instance_id="ia")
    assert r.error == E.UNRELEASED_INSTANCE_ID
    r = env.hb("g", "other", a.epoch, instance_id="ia", owned={})
    assert r.error == E.FENCED_INSTANCE_ID
    # after its session expires, the instance id is free again
    env.sched.advance(SESSION + 1)
    assert env.hb("g", "other", 0, instance_id="ia").error == 0


# ---- validation and errors --------------------------------------------------------------------------------
@pytest.mark.asyncio
async def test_heartbeat_validation_errors(env):
    assert env.hb(member_id="").error == E.INVALID_REQUEST  # v1: member id required
    assert env.hb(member_id="", version=0).error == 0       # v0: generated
    r = env.hb(member_id="x", rebalance_timeout=-1)
    assert (r.error, r.message) == (E.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
    r = env.hb(member_id="x", topics=None)
    assert r.message == "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."
    r = env.hb(member_id="x", full={"topic_partitions": None})
    assert r.message == "TopicPartitions must be empty when (re-)joining."
    assert env.hb(member_id="x", epoch=-3).message == "MemberEpoch is invalid."
    assert env.hb(member_id="x", epoch=-2).message == "InstanceId can't be null."
    assert env.hb(group=" ", member_id="x").message == "GroupId can't be empty."
    assert env.hb(member_id="x", instance_id="").message == "InstanceId can't be empty."
    r = env.hb(member_id="x", assignor="sticky")
    assert (r.error, r.message) == (E.UNSUPPORTED_ASSIGNOR,
                                    "ServerAssignor sticky is not supported. Supported assignors: uniform, range.")
    r = env.hb(member_id="x", topics=None, regex="ev[ents")
    assert r.error == E.INVALID_REGULAR_EXPRESSION
    r = env.hb(member_id="x", topics=None, regex="(?<=x)y")  # lookbehind: RE2 refuses it
    assert r.error == E.INVALID_REGULAR_EXPRESSION


@pytest.mark.asyncio
async def test_stale_epoch_unknown_member_and_group_errors(env):
    a, b, c = Sim(env, "a"), Sim(env, "b"), Sim(env, "c")
    settle([a, b, c])
    prev = env.group().members["a"].previous_member_epoch
    stale = next(e for e in range(1, a.epoch) if e != prev)
    assert env.hb("g", "a", a.epoch + 1, owned=a.owned).error == E.FENCED_MEMBER_EPOCH
    assert env.hb("g", "a", stale, owned=a.owned).error == E.FENCED_MEMBER_EPOCH
    assert env.hb("g", "nobody", 1, owned={}).error == E.UNKNOWN_MEMBER_ID
    assert env.hb("missing", "a", 1, owned={}).error == E.GROUP_ID_NOT_FOUND
    # rejoining with epoch 0 and the same id is accepted (after a fence, KIP-848)
    r = env.hb("g", "a", 0)
    assert r.error == 0 and r.member_epoch == a.epoch


@pytest.mark.asyncio
async def test_group_max_size(tmp_path):
    e = await Env(tmp_path / "d", **{"group.consumer.max.size": 2}).start()
    try:
        assert e.hb(member_id="a").error == 0
        assert e.hb(member_id="b").error == 0
        r = e.hb(member_id="c")
        assert (r.error, r.message) == (E.GROUP_MAX_SIZE_REACHED,
                                        "The consumer group has reached its maximum capacity of 2 members.")
    finally:
        await e.stop()


@pytest.mark.asyncio
async def test_a_classic_group_of_another_protocol_type_is_not_a_consumer_group(env):
    import asyncio
    fut = asyncio.ensure_future(env.gc.join_group(group_id="c", member_id="", group_instance_id=None, require_known_member_id=False,
                                  support_skip_assignment=False, client_id="x", client_host="/h",
                                  rebalance_timeout_ms=10000, session_timeout_ms=10000, protocol_type="connect",
                                  protocols=[("default", b"x")]))
    await asyncio.sleep(0)
    env.sched.advance(3001)
    res = await fut
    s = await env.gc.sync_group(group_id="c", generation_id=res.generation_id, member_id=res.member_id,
                                protocol_type="connect", protocol_name="default", group_instance_id=None,
                                assignments={res.member_id: b""})
    assert s.error == 0
    r = env.hb("c", "m", 0)
    assert r.error == E.GROUP_ID_NOT_FOUND
    assert "does not use the consumer embedded protocol" in r.message
    assert res.error == 0


# ---- regex subscriptions ------------------------------------------------------------------------------------
@pytest.mark.asyncio
async def test_regex_subscription_picks_up_a_topic_created_later(env):
    env.broker.topics.create_topic("orders-a", 2)
    a = Sim(env, "a", topics=None)
    r = env.hb("g", "a", 0, topics=None, regex="orders-.*")
    assert r.error == 0 and r.assignment == {}  # resolved right after this heartbeat
    a.epoch = r.member_epoch
    a.beat()
    assert a.owned == {env.tid("orders-a"): {0, 1}}
    env.broker.topics.create_topic("orders-b", 1)
    env.broker.topics.create_topic("other", 1)
    env.sched.advance(10_001)  # Kafka resolves a group's regexes at most every 10 s
    a.beat()  # triggers the new resolution, which bumps the epoch
    a.beat()
    assert a.owned == {env.tid("orders-a"): {0, 1}, env.tid("orders-b"): {0}}
    g = env.group()
    assert g.resolved_regexes["orders-.*"].topics == {"orders-a", "orders-b"}


# ---- offsets with member epochs ---------------------------------------------------------------------------------
@pytest.mark.asyncio
async def test_offset_commit_and_fetch_check_the_member_epoch(env):
    a = Sim(env, "a")
    settle([a])
    om = {(TOPIC, 0): OffsetAndMetadata(5, commit_timestamp=T0)}
    assert env.gc.handle_commit_offsets("g", "a", None, a.epoch, om, api_version=9) == {(TOPIC, 0): 0}
    assert env.gc.handle_commit_offsets("g", "a", None, a.epoch - 1, om, api_version=9) == {(TOPIC, 0): E.STALE_MEMBER_EPOCH}
    assert env.gc.handle_commit_offsets("g", "a", None, a.epoch, om, api_version=8) == {(TOPIC, 0): E.UNSUPPORTED_VERSION}
    assert env.gc.handle_commit_offsets("g", "zz", None, a.epoch, om, api_version=9) == {(TOPIC, 0): E.UNKNOWN_MEMBER_ID}
    assert env.gc.handle_commit_offsets("g", "", None, -1, om, api_version=9) == {(TOPIC, 0): E.UNKNOWN_MEMBER_ID}
    assert env.gc.handle_commit_offsets("nope", "a", None, 3, om, api_version=9) == {(TOPIC, 0): E.GROUP_ID_NOT_FOUND}
    assert env.gc.handle_commit_offsets("nope", "a", None, 3, om, api_version=8) == {(TOPIC, 0): E.ILLEGAL_GENERATION}
    err, found = env.gc.handle_fetch_offsets("g", False, [(TOPIC, 0)], "a", a.epoch)
    assert err == 0 and found[(TOPIC, 0)][0] == 5
    assert env.gc.handle_fetch_offsets("g", False, [(TOPIC, 0)], "a", a.epoch - 1)[0] == E.STALE_MEMBER_EPOCH
    assert env.gc.handle_fetch_offsets("g", False, [(TOPIC, 0)], "zz", 1)[0] == E.UNKNOWN_MEMBER_ID
    assert env.gc.handle_fetch_offsets("g", False, [(TOPIC, 0)])[0] == 0  # admin: no member
    # transactional commits: a stale epoch is ILLEGAL_GENERATION (TxnOffsetCommit has no STALE code)
    res = env.gc.handle_txn_commit_offsets("g", 7, 0, "a", None, a.epoch - 1, om)
    assert res == {(TOPIC, 0): E.ILLEGAL_GENERATION}


@pytest.mark.asyncio
async def test_a_commit_at_the_epoch_before_is_accepted_for_partitions_held_since(env):
    """KIP-1251 (Kafka 4.2+): the coordinator moves a member's epoch on when it answers a
    heartbeat; a commit the member sent before reading that answer carries the epoch before.
    It is accepted for partitions the member held at that epoch (assigned or pending
    revocation), refused (STALE_MEMBER_EPOCH) for one assigned later or not held; the
    epochs each partition was assigned at survive a restart."""
    sims = [Sim(env, f"m{i}") for i in range(2)]
    settle(sims)
    a = sims[0]
    old = a.epoch
    kept = sorted(a.parts())
    Sim(env, "m2").beat()  # a third member: a new epoch, a partition of each to revoke
    settle(sims)
    assert a.epoch > old
    t = TOPIC
    mine = sorted(a.parts())
    om = lambda p: {(t, p): OffsetAndMetadata(5, commit_timestamp=T0)}  # noqa: E731
    assert env.gc.handle_commit_offsets("g", "m0", None, old, om(mine[0]), api_version=9) == {(t, mine[0]): 0}
    gone = next(p for p in kept if p not in mine)  # revoked: no longer held
    assert env.gc.handle_commit_offsets("g", "m0", None, old, om(gone), api_version=9) == {(t, gone): E.STALE_MEMBER_EPOCH}
    other = next(p for p in range(6) if p not in kept)  # never this member's
    assert env.gc.handle_commit_offsets("g", "m0", None, old, om(other), api_version=9) == {
        (t, other): E.STALE_MEMBER_EPOCH}
    assert env.gc.handle_commit_offsets("g", "m0", None, a.epoch + 1, om(mine[0]), api_version=9) == {
        (t, mine[0]): E.STALE_MEMBER_EPOCH}
    # a partition assigned at the new epoch is refused at the old one
    new = Sim(env, "m2")
    new.member_id, new.epoch = "m2", env.group().members["m2"].member_epoch
    new.owned = {}
    settle(sims + [new])
    m2 = env.group().members["m2"]
    p2 = sorted(new.parts())[0]
    assert m2.assignment_epoch(env.tid(), p2) == m2.member_epoch
    assert env.gc.handle_commit_offsets("g", "m2", None, m2.member_epoch - 1, om(p2), api_version=9) == {
        (t, p2): E.STALE_MEMBER_EPOCH}
    epochs = {mid: dict(m.assignment_epochs) for mid, m in env.group().members.items()}
    e2 = await restart(env)
    assert {mid: dict(m.assignment_epochs) for mid, m in e2.group().members.items()} == epochs
    assert e2.gc.handle_commit_offsets("g", "m0", None, old, om(mine[0]), api_version=9) == {(t, mine[0]): 0}


# ---- durability --------------------------------------------------------------------------------------------------
@pytest.mark.asyncio
async def test_restart_replays_epochs_and_assignments(env):
    sims = [Sim(env, f"m{i}", instance_id="s" if i == 0 else None) for i in range(3)]
    settle(sims)
    Sim(env, "m3").beat()  # leaves the group reconciling
    sims[1].beat()
    om = {(TOPIC, 1): OffsetAndMetadata(9, commit_timestamp=T0)}
    env.gc.handle_commit_offsets("g", "m1", None, sims[1].epoch, om, api_version=9)
    g = env.group()
    snap = (g.group_epoch, g.target_assignment_epoch, dict(g.target_assignment),
            {m: (x.member_epoch, x.previous_member_epoch, x.state, dict(x.assigned), dict(x.pending_revocation),
                 x.instance_id, x.subscribed_topic_names) for m, x in g.members.items()},
            dict(g.partition_epochs), g.metadata_hash)
    e2 = await restart(env)
    g2 = e2.group()
    assert isinstance(g2, ConsumerGroup)
    snap2 = (g2.group_epoch, g2.target_assignment_epoch, dict(g2.target_assignment),
             {m: (x.member_epoch, x.previous_member_epoch, x.state, dict(x.assigned), dict(x.pending_revocation),
                  x.instance_id, x.subscribed_topic_names) for m, x in g2.members.items()},
             dict(g2.partition_epochs), g2.metadata_hash)
    assert snap2 == snap
    assert g2.offsets[(TOPIC, 1)].offset == 9
    # members carry on with their epochs: no rebalance storm
    for s in sims:
        s.env = e2
    r = e2.hb("g", "m0", sims[0].epoch, owned=sims[0].owned, instance_id="s")
    assert r.error == 0
    assert e2.group().group_epoch == g.group_epoch


# ---- upgrade from classic and downgrade back -----------------------------------------------------------------------
async def classic_join(env, gid, member_id="", topics=(TOPIC,), owned=None, instance_id=None):
    meta = cp.encode_subscription(cp.subscription(topics, owned_partitions=owned or {}), 1)
    return await env.gc.join_group(group_id=gid, member_id=member_id, group_instance_id=instance_id,
                                   require_known_member_id=False, support_skip_assignment=False, client_id="classic",
                                   client_host="/h", rebalance_timeout_ms=REBALANCE, session_timeout_ms=10_000,
                                   protocol_type="consumer", protocols=[("range", meta)])


async def classic_sync(env, gid, member_id, generation, assignments=None):
    return await env.gc.sync_group(group_id=gid, generation_id=generation, member_id=member_id,
                                   protocol_type="consumer", protocol_name="range", group_instance_id=None,
                                   assignments=assignments or {})


@pytest.mark.asyncio
async def test_online_upgrade_and_downgrade(env):
    import asyncio
    # a classic group with one member holding all 6 partitions
    fut = asyncio.ensure_future(classic_join(env, "u"))
    await asyncio.sleep(0)
    env.sched.advance(3001)  # group.initial.rebalance.delay.ms
    j = await fut
    assert j.error == 0
    everything = cp.encode_assignment(cp.assignment({TOPIC: list(range(6))}), 1)
    s = await classic_sync(env, "u", j.member_id, j.generation_id, {j.member_id: everything})
    assert s.error == 0
    env.gc.handle_commit_offsets("u", j.member_id, None, j.generation_id,
                                 {(TOPIC, 0): OffsetAndMetadata(3, commit_timestamp=T0)})
    # a consumer-protocol member joins: the group converts online, offsets kept
    n = Sim(env, "new", group="u")
    r = n.beat()
    assert r.error == 0
    g = env.group("u")
    assert isinstance(g, ConsumerGroup) and g.offsets[(TOPIC, 0)].offset == 3
    assert g.members[j.member_id].use_classic_protocol
    assert n.parts() == set()  # the classic member still owns everything
    # the classic member is told to rejoin, revokes (eager) and rejoins
    assert env.gc.handle_heartbeat("u", j.member_id, None, j.generation_id) == E.REBALANCE_IN_PROGRESS
    j2 = await classic_join(env, "u", j.member_id)
    assert j2.error == 0 and j2.generation_id == g.group_epoch
    s2 = await classic_sync(env, "u", j.member_id, j2.generation_id)
    classic_parts = cp.assignment_partitions(s2.assignment).get(TOPIC, [])
    assert len(classic_parts) == 3
    n.beat()
    assert len(n.parts()) == 3 and not (n.parts() & set(classic_parts))
    assert env.gc.handle_heartbeat("u", j.member_id, None, j2.generation_id) == 0
    # the last consumer-protocol member leaves: back to a classic group, rebalancing
    n.leave()
    g = env.group("u")
    assert isinstance(g, GroupMetadata) and g.state is GroupState.PREPARING_REBALANCE
    assert g.offsets[(TOPIC, 0)].offset == 3 and g.generation_id >= j2.generation_id
    e2 = await restart(env)
    g2 = e2.group("u")
    assert isinstance(g2, GroupMetadata) and set(g2.members) == {j.member_id}


# ---- admin --------------------------------------------------------------------------------------------------------------
@pytest.mark.asyncio
async def test_list_describe_delete(env):
    sims = [Sim(env, f"m{i}") for i in range(2)]
    settle(sims)
    err, groups = env.gc.handle_list_groups(types=["consumer"])
    assert [(x.group_id, x.group_type, x.state, x.protocol_type) for x in groups] == [("g", "consumer", "Stable",
                                                                                       "consumer")]
    assert env.gc.handle_list_groups(types=["classic"])[1] == []
    assert [x.group_id for x in env.gc.handle_list_groups(states=["STABLE"])[1]] == ["g"]
    [d] = env.gc.handle_consumer_group_describe(["g"])
    assert (d.error, d.state, d.group_epoch, d.assignment_epoch, d.assignor_name) == (0, "Stable", 3, 3, "uniform")
    assert sorted(len(m.assignment[0][2]) for m in d.members) == [3, 3]
    assert all(m.member_type == 1 and m.assignment == m.target_assignment for m in d.members)
    [nf] = env.gc.handle_consumer_group_describe(["nope"])
    assert nf.error == E.GROUP_ID_NOT_FOUND
    assert env.gc.handle_describe_group("g")[1].state == "Dead"
    assert env.gc.handle_delete_groups(["g"]) == {"g": E.NON_EMPTY_GROUP}
    for s in sims:
        s.leave()
    assert env.group().state is ConsumerGroupState.EMPTY
    assert env.gc.handle_delete_groups(["g"]) == {"g": 0}
    assert env.group() is None
    e2 = await restart(env)
    assert e2.group() is None


# ---- property: never two owners ------------------------------------------------------------------------------------------
OPS = st.lists(st.tuples(st.sampled_from(["join", "leave", "beat", "beat", "slow", "tick"]), st.integers(0, 4)),
               min_size=5, max_size=40)


@settings(max_examples=25, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(ops=OPS, assignor=st.sampled_from(["uniform", "range"]))
@pytest.mark.asyncio
async def test_no_partition_is_ever_owned_twice(tmp_path_factory, ops, assignor):
    e = await Env(tmp_path_factory.mktemp("p") / "data").start(partitions=5)
    try:
        sims: dict[int, Sim] = {}
        for op, i in ops:
            if op == "join" and i not in sims:
                sims[i] = Sim(e, f"m{i}")
                r = e.hb("g", f"m{i}", 0, assignor=assignor)
                assert r.error == 0
                sims[i].epoch = r.member_epoch
                sims[i].owned = {t: set(ps) for t, ps in (r.assignment or {}).items() if ps}
            elif op == "leave" and i in sims:
                sims.pop(i).leave()
            elif op in ("beat", "slow") and i in sims:
                sims[i].beat(slow=op == "slow")
            elif op == "tick":
                e.sched.advance(1000)
            owners(sims.values())
        settle(list(sims.values()), rounds=8)
        got = owners(sims.values())
        if sims:
            assert len(got) == 5  # converged: every partition owned once
            assert e.group().state is ConsumerGroupState.STABLE
    finally:
        await e.stop()


@pytest.mark.asyncio
async def test_offset_delete_refuses_subscribed_topics(env):
    env.broker.topics.create_topic("other", 1)
    a = Sim(env, "a")
    settle([a])
    om = {(TOPIC, 0): OffsetAndMetadata(1, commit_timestamp=T0), ("other", 0): OffsetAndMetadata(2, commit_timestamp=T0)}
    assert set(env.gc.handle_commit_offsets("g", "a", None, a.epoch, om, api_version=9).values()) == {0}
    err, res = env.gc.handle_delete_offsets("g", [(TOPIC, 0), ("other", 0)])
    assert err == 0 and res == {(TOPIC, 0): E.GROUP_SUBSCRIBED_TO_TOPIC, ("other", 0): 0}
    assert set(env.group().offsets) == {(TOPIC, 0)}


def test_consumer_group_config_checks(tmp_path):
    from broker.config import ConfigError
    base = {"log.dirs": str(tmp_path)}
    cfg = BrokerConfig(base)
    assert cfg["group.consumer.session.timeout.ms"] == 45000 and cfg["group.consumer.heartbeat.interval.ms"] == 5000
    with pytest.raises(ConfigError, match="group.consumer.heartbeat.interval.ms must be less than "
                                          "group.consumer.session.timeout.ms"):
        BrokerConfig({**base, "group.consumer.heartbeat.interval.ms": "9000", "group.consumer.session.timeout.ms": "8000",
                      "group.consumer.min.session.timeout.ms": "1000"})
    with pytest.raises(ConfigError, match="must be greater than or equal to group.consumer.min.session.timeout.ms"):
        BrokerConfig({**base, "group.consumer.session.timeout.ms": "1000"})
    with pytest.raises(ConfigError, match="Invalid value sticky for configuration group.consumer.assignors"):
        BrokerConfig({**base, "group.consumer.assignors": "sticky"})
    from broker.groups.coordinator import GroupConfig
    c = GroupConfig.from_broker_config(BrokerConfig({**base, "group.consumer.assignors":
                                                     "org.apache.kafka.coordinator.group.assignor.RangeAssignor,uniform",
                                                     "group.consumer.migration.policy": "UPGRADE"}))
    assert c.consumer_assignors == ("range", "uniform") and c.migration_policy == "upgrade"


@pytest.mark.asyncio
async def test_migration_policy_disabled_keeps_the_classic_group(tmp_path):
    import asyncio
    e = await Env(tmp_path / "d", **{"group.consumer.migration.policy": "downgrade"}).start()
    try:
        fut = asyncio.ensure_future(classic_join(e, "u"))
        await asyncio.sleep(0)
        e.sched.advance(3001)
        j = await fut
        await classic_sync(e, "u", j.member_id, j.generation_id)
        r = e.hb("u", "n", 0)
        assert r.error == E.GROUP_ID_NOT_FOUND and "online upgrade is disabled" in r.message
        assert isinstance(e.group("u"), GroupMetadata)
    finally:
        await e.stop()


@pytest.mark.asyncio
async def test_empty_consumer_group_becomes_classic_on_join_keeping_offsets(env):
    import asyncio
    a = Sim(env, "a")
    settle([a])
    env.gc.handle_commit_offsets("g", "a", None, a.epoch, {(TOPIC, 2): OffsetAndMetadata(4, commit_timestamp=T0)},
                                 api_version=9)
    a.leave()
    fut = asyncio.ensure_future(classic_join(env, "g"))
    await asyncio.sleep(0)
    env.sched.advance(3001)
    j = await fut
    assert j.error == 0
    g = env.group()
    assert isinstance(g, GroupMetadata) and g.offsets[(TOPIC, 2)].offset == 4
    e2 = await restart(env)
    g2 = e2.group()
    assert isinstance(g2, GroupMetadata) and g2.offsets[(TOPIC, 2)].offset == 4


@pytest.mark.asyncio
async def test_topics_created_grown_or_deleted_after_the_subscription(env):
    a = Sim(env, "a", topics=(TOPIC, "later"))
    settle([a])
    assert a.parts() == set(range(6))
    env.broker.topics.create_topic("later", 2)  # subscribed before it existed
    a.beat()
    a.beat()
    assert a.owned[env.tid("later")] == {0, 1}
    env.broker.topics.add_partitions("later", 3)
    a.beat()
    a.beat()
    assert a.owned[env.tid("later")] == {0, 1, 2}
    gone = env.tid("later")
    env.broker.topics.delete_topic("later")
    a.beat()
    a.beat()
    assert gone not in a.owned and env.group().state is ConsumerGroupState.STABLE
