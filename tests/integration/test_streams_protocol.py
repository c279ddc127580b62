"""The Streams rebalance protocol (KIP-1071) at the wire, against a real broker: the APIs
follow ``group.coordinator.rebalance.protocols``; two members share the tasks, the first
revoking before the second gets them (never two active owners of a task); a member whose
session expires is fenced and its tasks move; a member leaving frees its tasks at once; a
shutdown request reaches every member; static leave and bad input get Kafka's errors. (The
answers themselves are compared with Kafka 4.4 in tests/differential/test_streams_groups.py;
Kafka Streams itself runs on it in tests/streams/test_kafka_streams.py.)"""
from __future__ import annotations

import time
import uuid

from hourglass.cli.wire import WireClient
from protocol.errors import ErrorCode as E
from protocol.messages.api_versions import ApiVersionsRequest
from protocol.messages.streams_group_heartbeat import StreamsGroupHeartbeatRequest as HB

OVERRIDES = {"group.streams.initial.rebalance.delay.ms": 0, "group.streams.session.timeout.ms": 2000,
             "group.streams.heartbeat.interval.ms": 500}


def _topology(source: str):
    return HB.Topology(epoch=0, subtopologies=[HB.Topology.Subtopology(
        subtopology_id="0", source_topics=[source], source_topic_regex=[], state_changelog_topics=[],
        repartition_sink_topics=[], repartition_source_topics=[], copartition_groups=[])])


def _tasks(ps):
    return [HB.TaskIds(subtopology_id="0", partitions=sorted(ps))] if ps else []


def hb(w, group, member, epoch, source=None, owned=None, **kw):
    fields = dict(group_id=group, member_id=member, member_epoch=epoch, endpoint_information_epoch=0,
                  rebalance_timeout_ms=30000 if epoch == 0 else -1,
                  topology=_topology(source) if epoch == 0 else None,
                  active_tasks=_tasks(owned) if owned is not None else None,
                  standby_tasks=[] if owned is not None else None, warmup_tasks=[] if owned is not None else None,
                  process_id=f"p-{member}" if epoch == 0 else None, client_tags=[] if epoch == 0 else None)
    fields.update(kw)
    return w.request(88, 1, HB(**fields))


def _active(r):
    return None if r.active_tasks is None else {p for t in r.active_tasks for p in t.partitions}


def _commit(w, group, member, epoch, topic, partition) -> int:
    from protocol.messages.offset_commit import OffsetCommitRequest as OC
    r = w.request(8, 9, OC(group_id=group, generation_id_or_member_epoch=epoch, member_id=member,
                           group_instance_id=None, retention_time_ms=-1, topics=[OC.OffsetCommitRequestTopic(
                               name=topic, partitions=[OC.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                                   partition_index=partition, committed_offset=0, committed_leader_epoch=-1,
                                   commit_timestamp=-1, committed_metadata="")])]))
    return r.topics[0].partitions[0].error_code


def _create(bootstrap, topic, n):
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, n, 1)])[topic].result(20)


def test_streams_apis_follow_group_coordinator_rebalance_protocols(broker_factory):
    on = broker_factory(OVERRIDES)
    off = broker_factory({**OVERRIDES, "group.coordinator.rebalance.protocols": "classic,consumer"})
    for b, advertised in ((on, True), (off, False)):
        with WireClient(b.bootstrap) as w:
            keys = {k.api_key: (k.min_version, k.max_version)
                    for k in w.request(18, 3, ApiVersionsRequest(client_software_name="t",
                                                                 client_software_version="1")).api_keys}
            assert (keys.get(88), keys.get(89)) == (((0, 1), (0, 1)) if advertised else (None, None))
            if not advertised:
                assert hb(w, "g", "m", 0, "t", owned=set()).error_code == E.UNSUPPORTED_VERSION


class Member:
    """One member's view: its epoch and the tasks it runs (it gives up revoked tasks at once)."""

    def __init__(self, w, group, source, mid):
        self.w, self.group, self.source, self.id = w, group, source, mid
        self.epoch, self.owned = 0, set()

    def beat(self, **kw):
        r = hb(self.w, self.group, self.id, self.epoch, self.source if self.epoch == 0 else None,
               owned=self.owned, **kw)
        assert r.error_code == 0, r
        self.epoch = r.member_epoch
        if r.active_tasks is not None:
            self.owned = _active(r)
        return r


def _settle(members, rounds=40):
    """Heartbeat until every member is at one epoch and the six tasks are all held; at every
    step no task has two active owners."""
    for _ in range(rounds):
        for m in members:
            m.beat()
            owners = [p for x in members for p in x.owned]
            assert len(owners) == len(set(owners)), "a task with two active owners"
        if len({m.epoch for m in members}) == 1 and sum(len(m.owned) for m in members) == 6:
            return
    raise AssertionError([(m.id, m.epoch, m.owned) for m in members])


def test_two_members_share_revoke_before_reassign_and_fencing(broker_factory):
    b = broker_factory(OVERRIDES)
    source = f"src-{uuid.uuid4().hex[:6]}"
    group = f"app-{uuid.uuid4().hex[:6]}"
    _create(b.bootstrap, source, 6)
    with WireClient(b.bootstrap) as w:
        a = Member(w, group, source, "a")
        _settle([a])
        assert a.owned == set(range(6))
        c = Member(w, group, source, "c")
        r = c.beat()
        # the newcomer gets nothing a still holds: it waits for a's revocation
        assert not (_active(r) or set()) & a.owned
        old_epoch = a.epoch
        _settle([a, c])
        assert len(a.owned) == len(c.owned) == 3
        # a commit a sent before it read the answer that moved its epoch on: accepted for the
        # tasks it held since then, STALE_MEMBER_EPOCH for one it gave away
        assert a.epoch > old_epoch
        kept, gone = min(a.owned), min(c.owned)
        assert _commit(w, group, "a", old_epoch, source, kept) == 0
        assert _commit(w, group, "a", old_epoch, source, gone) == E.STALE_MEMBER_EPOCH
        assert _commit(w, group, "a", a.epoch + 1, source, kept) == E.STALE_MEMBER_EPOCH
        # c leaves: its tasks go back to a without waiting for anything
        r = hb(w, group, "c", -1)
        assert (r.error_code, r.member_epoch) == (0, -1)
        _settle([a])
        assert a.owned == set(range(6))
        # a new member whose session then expires (it never heartbeats again) is fenced: its
        # tasks come back to a
        d = Member(w, group, source, "d")
        d.beat()
        deadline = time.monotonic() + 30
        while True:
            a.beat()
            if a.owned == set(range(6)) and not d.owned:
                r = hb(w, group, "d", d.epoch, owned=set())
                if r.error_code == E.UNKNOWN_MEMBER_ID:
                    break
            assert time.monotonic() < deadline, "member d never fenced"
            time.sleep(0.3)
        # a shutdown request reaches every member
        r = a.beat(shutdown_application=True)
        assert [s.status_code for s in r.status] == [4]
        # static leave needs an instance id; unknown topology epoch ahead of the group's
        assert hb(w, group, "a", -2).error_code == E.INVALID_REQUEST
        r = hb(w, group, "z", 0, source, owned=set(), topology=HB.Topology(epoch=3, subtopologies=[]))
        assert (r.error_code, r.error_message) == (E.INVALID_REQUEST, "Topology updates are not supported yet.")


def test_members_churning_never_share_a_task(broker_factory):
    """Thirty rounds of a member joining or leaving (rejoining under a new id) while the others
    heartbeat in a shuffled order: at every step no task has two active owners, and each round
    ends balanced with every task held."""
    import random
    rng = random.Random(1071)
    b = broker_factory(OVERRIDES)
    source = f"src-{uuid.uuid4().hex[:6]}"
    group = f"app-{uuid.uuid4().hex[:6]}"
    _create(b.bootstrap, source, 6)
    with WireClient(b.bootstrap) as w:
        members = [Member(w, group, source, f"m{i}") for i in range(2)]
        _settle(members)
        for n in range(30):
            if len(members) < 4 and (len(members) < 2 or rng.random() < 0.5):
                members.append(Member(w, group, source, f"j{n}"))
            else:
                gone = members.pop(rng.randrange(len(members)))
                assert hb(w, group, gone.id, -1).error_code == 0
            for _ in range(60):
                rng.shuffle(members)
                for m in members:
                    m.beat()
                    owners = [p for x in members for p in x.owned]
                    assert len(owners) == len(set(owners)), (n, [(x.id, x.owned) for x in members])
                sizes = sorted(len(m.owned) for m in members)
                if len({m.epoch for m in members}) == 1 and sum(sizes) == 6 and sizes[-1] - sizes[0] <= 1:
                    break
            else:
                raise AssertionError((n, [(m.id, m.epoch, m.owned) for m in members]))


def test_static_member_leaves_for_a_while_and_takes_its_tasks_back(broker_factory):
    b = broker_factory(OVERRIDES)
    source = f"src-{uuid.uuid4().hex[:6]}"
    group = f"app-{uuid.uuid4().hex[:6]}"
    _create(b.bootstrap, source, 6)
    with WireClient(b.bootstrap) as w:
        a, s = Member(w, group, source, "a"), Member(w, group, source, "s1")
        a.beat()
        s.beat(instance_id="inst")
        _settle([a, s])
        held, epoch = set(s.owned), s.epoch
        assert held
        r = hb(w, group, "s1", -2, instance_id="inst")
        assert (r.error_code, r.member_epoch) == (0, -2)
        a.beat()
        assert not a.owned & held  # the tasks wait for the static member
        back = Member(w, group, source, "s2")
        r = back.beat(instance_id="inst", process_id="p-s1")  # a restarted instance keeps its process id
        assert (back.epoch, back.owned) == (epoch, held)
        r = hb(w, group, "s3", 0, source, owned=set(), instance_id="inst")
        assert r.error_code == E.UNRELEASED_INSTANCE_ID, r
        assert hb(w, group, "s1", epoch).error_code == E.UNKNOWN_MEMBER_ID


# ---- persistence: the group in __consumer_offsets ----------------------------------------------------
def _describe(bootstrap, group):
    from protocol.messages.streams_group_describe import StreamsGroupDescribeRequest as D
    with WireClient(bootstrap) as w:
        return w.request(89, 0, D(group_ids=[group], include_authorized_operations=False)).groups[0]


def _view(d):
    return (d.error_code, d.group_state, d.group_epoch, d.assignment_epoch,
            sorted((m.member_id, m.member_epoch, m.process_id,
                    sorted((t.subtopology_id, p) for t in m.assignment.active_tasks for p in t.partitions))
                   for m in d.members))


def test_group_survives_broker_restart_and_kill9_and_deleted_stays_deleted(broker_factory):
    """Kafka keeps a Streams group (members, epochs, topology, assignments) in __consumer_offsets:
    after a clean restart and after kill -9 the members heartbeat at their epochs and keep their
    tasks, with no new group epoch. A group deleted (DeleteGroups, after its members left) stays
    deleted across a restart."""
    from protocol.messages.delete_groups import DeleteGroupsRequest
    # sessions long enough to outlast a restart on a busy machine
    b = broker_factory({**OVERRIDES, "group.streams.session.timeout.ms": 45000})
    source = f"src-{uuid.uuid4().hex[:6]}"
    group = f"app-{uuid.uuid4().hex[:6]}"
    _create(b.bootstrap, source, 6)
    with WireClient(b.bootstrap) as w:
        a, c = Member(w, group, source, "a"), Member(w, group, source, "c")
        _settle([a])
        _settle([a, c])
        for m in (a, c):  # the settled state reaches each member once more (Stable everywhere)
            m.beat()
        before = _view(_describe(b.bootstrap, group))
    assert before[1] == "Stable" and len(before[4]) == 2, before
    for crash in (False, True):
        b.restart(crash=crash)
        assert _view(_describe(b.bootstrap, group)) == before, f"group changed by the restart (crash={crash})"
        with WireClient(b.bootstrap) as w:
            for m in (a, c):
                m.w = w
                epoch, owned = m.epoch, set(m.owned)
                r = m.beat()
                assert (r.member_epoch, m.owned) == (epoch, owned), (crash, m.id, r)
        assert _view(_describe(b.bootstrap, group)) == before
    # leave, delete, restart: gone
    with WireClient(b.bootstrap) as w:
        for m in (a, c):
            assert hb(w, group, m.id, -1).error_code == 0
        r = w.request(42, 2, DeleteGroupsRequest(groups_names=[group]))
        assert [(x.group_id, x.error_code) for x in r.results] == [(group, 0)]
    assert _describe(b.bootstrap, group).error_code == E.GROUP_ID_NOT_FOUND
    b.restart()
    assert _describe(b.bootstrap, group).error_code == E.GROUP_ID_NOT_FOUND
    with WireClient(b.bootstrap) as w:
        assert hb(w, group, "a", a.epoch, owned=a.owned).error_code == E.GROUP_ID_NOT_FOUND
