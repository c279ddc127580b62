"""KIP-848 consumer groups with real clients: the Java consumer (kafka-clients 4.4.0, the
version of the JVM cache; its classic members 3.9.1) and confluent-kafka (librdkafka 2.16) with
``group.protocol=consumer``, against a broker process.

- three members split a 6-partition topic without overlap; a fourth joining and one leaving
  move only the partitions that must move while the others keep consuming; with synchronous
  commits after every poll and a producer running throughout, every record is consumed
  exactly once;
- static members (``group.instance.id``) come back with their partitions;
- a regex subscription picks up a topic created later;
- a group that starts classic upgrades online when a consumer-protocol member joins and
  downgrades back when it leaves, without losing or duplicating a record;
- broker restart and kill -9: members keep their assignments (no new epoch);
- bad input answers Kafka's error codes (raw ConsumerGroupHeartbeat over the wire).

Timeouts are ones Kafka survives on a busy machine: the consumer session is Kafka's default
(45 s; the classic members' too), the heartbeat interval 1 s so each step of a rebalance waits
at most a second. "Settled" means what the group coordinator says: every member joined (a JVM
on a busy machine sends its first heartbeat seconds after it starts) and holds its target.

Load: the module runs inside the parallel ``make test``; ``test_consumer_group_churn_under_load``
(tests/integration/test_group_churn_under_load.py) runs these scenarios with two busy loops
beside the broker. What stalled them before (issue 32): a librdkafka member's synchronous commit
refused with STALE_MEMBER_EPOCH because the coordinator had moved its epoch on while the commit
was in flight (Kafka 4.x accepts it: KIP-1251 assignment epochs), and "settled" checks that
counted a member not yet joined, or stopped one before it had consumed.
"""
from __future__ import annotations

import threading
import time
import uuid

import pytest

from hourglass.cli.wire import WireClient
from protocol.errors import ErrorCode as E
from protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest as HB
from tests.helpers.clients import wait_until
from tests.helpers import jvm
from tests.helpers.java import popen_java

PARTITIONS = 6
# Kafka's default session timeout (45 s): no scenario here waits for a session to expire, and a
# JVM member restarting (the static member) or a member stalled on a busy machine must not lose
# its session meanwhile. A 1 s heartbeat (Kafka's default is 5 s) only paces how soon members
# hear of a new target: each step of a rebalance waits for at most one.
HEARTBEAT_MS = 1000
OVERRIDES = {
    "num.partitions": PARTITIONS,
    "group.consumer.session.timeout.ms": 45000,
    "group.consumer.heartbeat.interval.ms": HEARTBEAT_MS,
    "group.consumer.min.heartbeat.interval.ms": 100,
    "group.initial.rebalance.delay.ms": 0,
}
# the classic members' own timeouts: Kafka's default session, the same heartbeat pace
CLASSIC_PROPS = f"session.timeout.ms=45000,heartbeat.interval.ms={HEARTBEAT_MS}"


@pytest.fixture
def kbroker(broker_factory):
    return broker_factory(OVERRIDES)


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the result is in
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(20)


class Producer(threading.Thread):
    """Produces to every partition in turn until stopped; ``acked`` holds (topic, partition,
    offset) of every acknowledged record."""

    def __init__(self, bootstrap: str, topic: str, rate_per_s: int = 200):
        super().__init__(daemon=True)
        from confluent_kafka import Producer as P
        self.p = P({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
        self.topic, self.rate = topic, rate_per_s
        self.acked: set = set()
        self.stop_evt = threading.Event()
        self.failed: list = []

    def _cb(self, err, msg):
        if err is not None:
            self.failed.append(err)
        else:
            self.acked.add((msg.topic(), msg.partition(), msg.offset()))

    def run(self):
        i = 0
        while not self.stop_evt.is_set():
            self.p.produce(self.topic, value=b"v%d" % i, partition=i % PARTITIONS, on_delivery=self._cb)
            i += 1
            self.p.poll(0)
            time.sleep(1 / self.rate)
        self.p.flush(20)

    def finish(self) -> set:
        self.stop_evt.set()
        self.join(30)
        assert not self.failed, self.failed
        return self.acked


# The Java client a KIP-848 user runs: the consumer protocol is GA from kafka-clients 4.0 (a
# preview in 3.9). 3.9.1 resets a partition assigned while its committed offsets were being
# fetched to auto.offset.reset without asking the coordinator (KAFKA-17674, fixed in 4.0): under
# load a member re-read a partition from offset 0 after its previous owner had committed it.
# Classic members stay on 3.9.1 (the harness's own jars): mixed client versions in one group.
KIP848_JAVA_CLIENTS = jvm.version("kafka")


class JavaMember:
    """A Java consumer in a group (the harness ``group-member`` command): kafka-clients
    ``KIP848_JAVA_CLIENTS`` with the consumer protocol, 3.9.1 with the classic one."""

    def __init__(self, bootstrap: str, group: str, topic: str, *, protocol: str = "consumer", instance_id=None,
                 pattern=None):
        args = ["group-member", "--bootstrap", bootstrap, "--group", group, "--protocol", protocol,
                "--client-id", f"java-{protocol}", "--max-poll-records", "50"]
        args += ["--pattern", pattern] if pattern else ["--topic", topic]
        if instance_id:
            args += ["--instance-id", instance_id]
        if protocol == "classic":
            args += ["--props", CLASSIC_PROPS]
        self.proc = popen_java(args, clients=KIP848_JAVA_CLIENTS if protocol == "consumer" else None)
        assert self.proc.wait_for(lambda l: l.get("ready") or "error" in l, 30) is not None, self.proc.lines

    def assigned(self) -> set:
        for line in reversed(self.proc.lines):
            if "error" in line:
                raise AssertionError(line)
            if "assigned" in line:
                return set(line["assigned"])
        return set()

    def records(self) -> list:
        return [tuple(l["r"].rsplit("-", 2)) for l in self.proc.lines if "r" in l]

    def count(self) -> int:
        return sum(1 for l in self.proc.lines if "r" in l)

    def stop(self) -> None:
        self.proc.send("stop")
        self.proc.finish(60)

    def halt(self) -> None:
        self.proc.send("halt")
        self.proc.proc.wait(30)


def consumed(members) -> list:
    """(topic, partition, offset) of every record the members consumed, repeats kept."""
    out = []
    for m in members:
        out += [(t, int(p), int(o)) for t, p, o in m.records()]
    return out


def parts(topic: str, *ps) -> set:
    return {f"{topic}-{p}" for p in ps}


def assert_exactly_once(produced: set, got: list) -> None:
    dups = len(got) - len(set(got))
    missing = produced - set(got)
    seen, twice = set(), {}
    for r in got:
        if r in seen:
            twice.setdefault((r[0], r[1]), []).append(r[2])
        seen.add(r)
    where = {tp: f"{min(os)}..{max(os)} ({len(os)})" for tp, os in sorted(twice.items())}
    assert not missing and not dups, f"{len(missing)} records lost, {dups} consumed twice: {where}"


def disjoint_cover(members, topic) -> bool:
    sets = [m.assigned() for m in members]
    union = set().union(*sets)
    return sum(len(s) for s in sets) == len(union) == PARTITIONS and union == parts(topic, *range(PARTITIONS))


# ---- Java consumer, consumer protocol ---------------------------------------------------------------
def test_java_members_join_and_leave_moving_only_what_must_move(kbroker):
    b = kbroker.bootstrap
    topic, group = _name("t"), _name("g")
    create_topic(b, topic)
    prod = Producer(b, topic)
    prod.start()
    members = [JavaMember(b, group, topic) for _ in range(3)]
    try:
        wait_until(lambda: disjoint_cover(members, topic) and all(len(m.assigned()) == 2 for m in members),
                   timeout=30, what="3 members with 2 partitions each")
        before = [m.assigned() for m in members]
        # a fourth member joins: it takes one partition from two of them; the others keep theirs
        counts = [m.count() for m in members]
        fourth = JavaMember(b, group, topic)
        all4 = members + [fourth]
        wait_until(lambda: disjoint_cover(all4, topic) and sorted(len(m.assigned()) for m in all4) == [1, 1, 2, 2],
                   timeout=30, what="4 members balanced")
        for m, had in zip(members, before):
            assert m.assigned() <= had  # nobody got a partition that was not the new member's
        assert all(m.count() > c for m, c in zip(members, counts)), "a member stopped consuming during the join"
        # a member leaves: its partitions go to the others, who keep what they had
        leaving = next(m for m in members if len(m.assigned()) == 2)
        rest = [m for m in all4 if m is not leaving]
        kept = [m.assigned() for m in rest]
        leaving.stop()
        wait_until(lambda: disjoint_cover(rest, topic) and sorted(len(m.assigned()) for m in rest) == [2, 2, 2],
                   timeout=30, what="3 members after a leave")
        for m, had in zip(rest, kept):
            assert had <= m.assigned()
        produced = prod.finish()
        ends = {}
        for _t, p, o in produced:
            ends[p] = max(ends.get(p, -1), o)
        wait_until(lambda: all(max((int(o) for _t, pp, o in consumed(all4) if int(pp) == p), default=-1) >= e
                               for p, e in ends.items()), timeout=30, what="every record consumed")
    finally:
        prod.stop_evt.set()
        for m in members + [locals().get("fourth")]:
            if m is not None and m.proc.proc.poll() is None:
                m.stop()
    assert_exactly_once(produced, consumed(all4))


def test_java_static_members_rejoin_with_their_partitions(kbroker):
    b = kbroker.bootstrap
    topic, group = _name("t"), _name("g")
    create_topic(b, topic)
    a = JavaMember(b, group, topic, instance_id="a")
    c = JavaMember(b, group, topic, instance_id="c")
    try:
        wait_until(lambda: disjoint_cover([a, c], topic) and len(a.assigned()) == 3, timeout=30, what="balanced")
        had = a.assigned()
        a.stop()  # a static member leaves with epoch -2: its partitions wait for it
        time.sleep(1.0)
        assert c.assigned() == parts(topic, *range(PARTITIONS)) - had
        a = JavaMember(b, group, topic, instance_id="a")
        wait_until(lambda: a.assigned() == had, timeout=30, what="static member back with its partitions")
        assert c.assigned() == parts(topic, *range(PARTITIONS)) - had
    finally:
        for m in (a, c):
            if m.proc.proc.poll() is None:
                m.stop()


# ---- confluent-kafka (librdkafka), consumer protocol -------------------------------------------------------
class RdMember(threading.Thread):
    """A confluent-kafka consumer in a group, polling in its own thread, committing
    synchronously after every message batch."""

    def __init__(self, bootstrap: str, group: str, topics: list, **extra):
        super().__init__(daemon=True)
        from confluent_kafka import Consumer
        cfg = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
               "auto.offset.reset": "earliest", "enable.auto.commit": False}
        cfg.update(extra)
        self.c = Consumer(cfg)
        self.topics = topics
        self.got: list = []
        self.assigned: set = set()
        self.stop_evt = threading.Event()
        self.error = None
        self.lock = threading.Lock()

    def run(self):
        try:
            self.c.subscribe(self.topics)
            while not self.stop_evt.is_set():
                msgs = self.c.consume(50, 0.1)
                batch = [(m.topic(), m.partition(), m.offset()) for m in msgs if m.error() is None]
                errs = [m.error() for m in msgs if m.error() is not None and m.error().fatal()]
                if errs:
                    raise RuntimeError(errs)
                with self.lock:
                    self.got += batch
                    self.assigned = {f"{tp.topic}-{tp.partition}" for tp in self.c.assignment()}
                if batch:
                    self.c.commit(asynchronous=False)
        except BaseException as exc:  # surfaced by the test (``check``) as soon as it looks
            self.error = exc
        finally:
            self.c.close()

    def check(self) -> None:
        """A member whose consumer failed (a commit refused, a fatal error) fails the test with
        that error at once, not with a bound missed later."""
        assert self.error is None, f"consumer failed: {self.error!r}"

    def stop(self):
        self.stop_evt.set()
        self.join(30)
        self.check()


def test_confluent_members_split_join_leave_exactly_once(kbroker):
    b = kbroker.bootstrap
    topic, group = _name("t"), _name("g")
    create_topic(b, topic)
    prod = Producer(b, topic)
    prod.start()
    members = [RdMember(b, group, [topic]) for _ in range(3)]
    all_members = list(members)
    for m in members:
        m.start()
    try:
        def balanced(ms, sizes):
            for m in all_members:
                m.check()
            sets = [m.assigned for m in ms]
            return (sorted(len(s) for s in sets) == sizes and len(set().union(*sets)) == PARTITIONS
                    and sum(len(s) for s in sets) == PARTITIONS)
        wait_until(lambda: balanced(members, [2, 2, 2]), timeout=30, what="3 members balanced")
        before = [set(m.assigned) for m in members]
        fourth = RdMember(b, group, [topic])
        all_members.append(fourth)
        fourth.start()
        all4 = members + [fourth]
        wait_until(lambda: balanced(all4, [1, 1, 2, 2]), timeout=30, what="4 members balanced")
        for m, had in zip(members, before):
            assert m.assigned <= had
        members[0].stop()
        rest = all4[1:]
        wait_until(lambda: balanced(rest, [2, 2, 2]), timeout=30, what="3 members after a leave")
        produced = prod.finish()
        wait_until(lambda: produced <= {r for m in all4 for r in m.got}, timeout=30, what="every record consumed")
    finally:
        prod.stop_evt.set()
        for m in members + [locals().get("fourth")]:
            if m is not None and m.is_alive():
                m.stop()
    assert_exactly_once(produced, [r for m in all4 for r in m.got])


def test_confluent_regex_subscription_picks_up_a_topic_created_later(kbroker):
    b = kbroker.bootstrap
    prefix = _name("rx")
    create_topic(b, f"{prefix}-a", 2)
    m = RdMember(b, _name("g"), [f"^{prefix}-.*"])
    m.start()
    try:
        wait_until(lambda: m.assigned == parts(f"{prefix}-a", 0, 1), timeout=30, what="regex resolved")
        create_topic(b, f"{prefix}-b", 1)
        create_topic(b, _name("other"), 1)
        # Kafka re-resolves a group's regexes at most every 10 s
        wait_until(lambda: m.assigned == parts(f"{prefix}-a", 0, 1) | parts(f"{prefix}-b", 0), timeout=30,
                   what="the new topic picked up")
    finally:
        m.stop()


# ---- online upgrade and downgrade -------------------------------------------------------------------------
def test_classic_group_upgrades_and_downgrades_online_without_loss_or_duplicate(kbroker):
    b = kbroker.bootstrap
    topic, group = _name("t"), _name("g")
    create_topic(b, topic)
    prod = Producer(b, topic)
    prod.start()
    classic = [JavaMember(b, group, topic, protocol="classic") for _ in range(2)]
    all_members = list(classic)
    try:
        wait_until(lambda: disjoint_cover(classic, topic), timeout=30, what="classic group balanced")
        assert group_type(b, group) == "classic"
        new = JavaMember(b, group, topic, protocol="consumer")
        all_members.append(new)
        wait_until(lambda: group_type(b, group) == "consumer", timeout=30, what="upgrade")
        wait_until(lambda: disjoint_cover(all_members, topic) and all(m.assigned() for m in all_members),
                   timeout=30, what="3 members after the upgrade")
        # it leaves once it has consumed from its partitions (on a busy machine its first fetch
        # can come a few seconds after its assignment)
        wait_until(lambda: new.count() > 0, timeout=30, what="the consumer-protocol member consuming")
        new.stop()  # the last consumer-protocol member leaves: back to classic
        wait_until(lambda: group_type(b, group) == "classic", timeout=30, what="downgrade")
        wait_until(lambda: disjoint_cover(classic, topic), timeout=30, what="classic group after downgrade")
        produced = prod.finish()
        wait_until(lambda: produced <= set(consumed(all_members)), timeout=30, what="every record consumed")
    finally:
        prod.stop_evt.set()
        for m in all_members:
            if m.proc.proc.poll() is None:
                m.stop()
    assert_exactly_once(produced, consumed(all_members))
    assert new.count() > 0  # the consumer-protocol member consumed its share while it was in


def group_type(bootstrap: str, group: str) -> str | None:
    from protocol.messages.list_groups import ListGroupsRequest
    with WireClient(bootstrap) as w:
        res = w.request(16, 5, ListGroupsRequest(states_filter=[], types_filter=[]))
    return next((g.group_type for g in res.groups if g.group_id == group), None)


# ---- restart and kill -9 ----------------------------------------------------------------------------------
def describe(bootstrap: str, group: str):
    from protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
    with WireClient(bootstrap) as w:
        return w.request(69, 1, ConsumerGroupDescribeRequest(group_ids=[group])).groups[0]


def test_broker_restart_and_kill9_keep_assignments(kbroker):
    b = kbroker.bootstrap
    topic, group = _name("t"), _name("g")
    create_topic(b, topic)
    members = [JavaMember(b, group, topic) for _ in range(3)]
    try:
        def settled():
            d = describe(b, group)
            # every member has joined (a JVM on a busy machine can take seconds to send its first
            # heartbeat: two members holding all six partitions is not the settled group) and
            # holds its target at the group epoch
            return (disjoint_cover(members, topic) and all(m.assigned() for m in members)
                    and d.group_state == "Stable" and len(d.members) == len(members)
                    and all(x.member_epoch == d.group_epoch for x in d.members))
        wait_until(settled, timeout=60, what="stable group of 3 members")
        d = describe(b, group)
        epoch, owned = d.group_epoch, [m.assigned() for m in members]
        for crash in (False, True):
            kbroker.restart(crash=crash)
            d2 = describe(kbroker.bootstrap, group)
            assert d2.group_epoch == epoch and d2.group_state == "Stable"
            time.sleep(2.0)  # members reconnect and heartbeat with their epochs
            d3 = describe(kbroker.bootstrap, group)
            assert d3.group_epoch == epoch, "a restart caused a rebalance"
            assert [m.assigned() for m in members] == owned
    finally:
        for m in members:
            if m.proc.proc.poll() is None:
                m.stop()


# ---- bad input ----------------------------------------------------------------------------------------------
def heartbeat(w: WireClient, version=1, **kw):
    base = dict(group_id="g", member_id=uuid.uuid4().hex, member_epoch=0, rebalance_timeout_ms=30000,
                subscribed_topic_names=["t"], topic_partitions=[])
    base.update(kw)
    return w.request(68, version, HB(**base))


def test_bad_input_gets_kafkas_error_codes(kbroker):
    b = kbroker.bootstrap
    create_topic(b, "t")
    with WireClient(b) as w:
        ok = heartbeat(w)
        assert ok.error_code == 0 and ok.member_epoch == 1 and ok.heartbeat_interval_ms == HEARTBEAT_MS
        stale = heartbeat(w, member_id=ok.member_id, member_epoch=7, rebalance_timeout_ms=-1,
                          subscribed_topic_names=None, topic_partitions=None)
        assert stale.error_code == E.FENCED_MEMBER_EPOCH and "greater member epoch" in stale.error_message
        r = heartbeat(w, server_assignor="cooperative-sticky")
        assert r.error_code == E.UNSUPPORTED_ASSIGNOR
        r = heartbeat(w, subscribed_topic_names=None, subscribed_topic_regex="t[")
        assert r.error_code == E.INVALID_REGULAR_EXPRESSION and "not a valid regular expression" in r.error_message
        r = heartbeat(w, member_id="")
        assert (r.error_code, r.error_message) == (E.INVALID_REQUEST, "MemberId can't be empty.")
        r = heartbeat(w, member_id="", version=0)  # v0 members get an id generated
        assert r.error_code == 0 and r.member_id
        r = heartbeat(w, member_id="nobody", member_epoch=3, rebalance_timeout_ms=-1, subscribed_topic_names=None,
                      topic_partitions=None)
        assert r.error_code == E.UNKNOWN_MEMBER_ID
    # a group of the other type: a classic group whose members are not consumers
    from protocol.messages.join_group import JoinGroupRequest
    with WireClient(b) as w:
        j = w.request(11, 9, JoinGroupRequest(group_id="connect-group", session_timeout_ms=10000,
                                              rebalance_timeout_ms=10000, member_id="", group_instance_id="w1",
                                              protocol_type="connect",
                                              protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="default",
                                                                                                    metadata=b"x")]))
        assert j.error_code == 0
        r = heartbeat(w, group_id="connect-group")
        assert r.error_code == E.GROUP_ID_NOT_FOUND
        from protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
        d = w.request(69, 1, ConsumerGroupDescribeRequest(group_ids=["connect-group", "g"])).groups
        assert [x.error_code for x in d] == [E.GROUP_ID_NOT_FOUND, 0]


# ---- admin clients -------------------------------------------------------------------------------------------
def test_admin_client_lists_describes_and_deletes_consumer_groups(kbroker):
    from confluent_kafka import ConsumerGroupState, ConsumerGroupType
    from confluent_kafka.admin import AdminClient
    b = kbroker.bootstrap
    topic, group = _name("t"), _name("g")
    create_topic(b, topic, 2)
    members = [RdMember(b, group, [topic]) for _ in range(2)]
    for m in members:
        m.start()
    admin = AdminClient({"bootstrap.servers": b})
    try:
        wait_until(lambda: all(len(m.assigned) == 1 for m in members), timeout=30, what="balanced")
        listed = admin.list_consumer_groups(types={ConsumerGroupType.CONSUMER}).result(20).valid
        assert [(g.group_id, g.type, g.state) for g in listed if g.group_id == group] == [
            (group, ConsumerGroupType.CONSUMER, ConsumerGroupState.STABLE)]
        assert group not in {g.group_id for g in admin.list_consumer_groups(
            types={ConsumerGroupType.CLASSIC}).result(20).valid}
        d = admin.describe_consumer_groups([group])[group].result(20)  # ConsumerGroupDescribe
        assert (d.type, d.state, d.partition_assignor) == (ConsumerGroupType.CONSUMER, ConsumerGroupState.STABLE,
                                                           "uniform")
        assert sorted(tp.partition for m in d.members for tp in m.assignment.topic_partitions) == [0, 1]
        with pytest.raises(Exception, match="NON_EMPTY_GROUP"):
            admin.delete_consumer_groups([group])[group].result(20)
    finally:
        for m in members:
            m.stop()
    admin.delete_consumer_groups([group])[group].result(20)
    assert group not in {g.group_id for g in admin.list_consumer_groups().result(20).valid}


def test_consumer_protocol_apis_follow_group_coordinator_rebalance_protocols(broker_factory):
    from protocol.messages.api_versions import ApiVersionsRequest
    on = broker_factory(OVERRIDES)
    off = broker_factory({**OVERRIDES, "group.coordinator.rebalance.protocols": "classic"})
    for b, advertised in ((on, True), (off, False)):
        with WireClient(b.bootstrap) as w:
            keys = {k.api_key: (k.min_version, k.max_version)
                    for k in w.request(18, 3, ApiVersionsRequest(client_software_name="t",
                                                                 client_software_version="1")).api_keys}
            assert (keys.get(68), keys.get(69)) == (((0, 1), (0, 1)) if advertised else (None, None))
            if not advertised:
                assert heartbeat(w).error_code == E.UNSUPPORTED_VERSION
