"""Consumer groups with stock clients: partitions balanced among members, rebalances when a
member leaves or dies, committed offsets resumed after consumer and broker restarts (clean
and kill -9), and the admin view (list/describe/delete groups).

Brokers run with ``group.initial.rebalance.delay.ms=0`` and a low minimum session timeout so
the clients' short session timeouts (4 s) are accepted and a dead member's partitions move
within seconds. Topics get 6 partitions through ``num.partitions=6`` (auto-creation on the
first produce).
"""
from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest

from tests.helpers.clients import wait_until
from tests.helpers.java import run_java

PARTITIONS = 6
SESSION_MS = 4000
BROKER_OVERRIDES = {
    # Kafka's default is 3000 ms. With 0, a kafka-python 3.0.12 leader that assigned before its
    # first metadata answer (an empty assignment), then rejoined, was seen to go silent after
    # its SyncGroup answer (no heartbeat, no fetch) until its session expired; a short delay
    # lets the first member's metadata arrive before it assigns, as on a default Kafka.
    "group.initial.rebalance.delay.ms": 500,
    "group.min.session.timeout.ms": 1000,
    "num.partitions": PARTITIONS,
}
ALL = frozenset(range(PARTITIONS))


@pytest.fixture
def gbroker(broker_factory):
    return broker_factory(BROKER_OVERRIDES)


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def produce(bootstrap: str, topic: str, per_partition: int, start: int = 0) -> None:
    """``per_partition`` records to each partition, values ``p<partition>-<i>``."""
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        futs = [p.send(topic, value=f"p{part}-{i}".encode(), partition=part)
                for i in range(start, start + per_partition) for part in range(PARTITIONS)]
        for f in futs:
            f.get(timeout=20)
    finally:
        p.close()


def ensure_topic(bootstrap: str, topic: str) -> None:
    """Create the topic with PARTITIONS partitions through the admin API."""
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        admin.close()


# ------------------------------------------------------------------------- members in threads
class Member(threading.Thread):
    """One group member polling in its own thread; ``assigned`` is its latest assignment and
    ``records`` what it consumed (partition, offset, value)."""

    def __init__(self, kind: str, bootstrap: str, group: str, topic: str, **extra):
        super().__init__(daemon=True)
        self.kind, self.bootstrap, self.group, self.topic, self.extra = kind, bootstrap, group, topic, extra
        self.assigned: frozenset = frozenset()
        self.records: list[tuple[int, int, bytes]] = []
        self.error: BaseException | None = None
        self.stop_evt = threading.Event()
        self.ready = threading.Event()
        self.lock = threading.Lock()

    def run(self):
        try:
            getattr(self, f"_run_{self.kind}")()
        except BaseException as exc:  # surfaced by the test
            self.error = exc
            self.ready.set()

    def _run_kafka_python(self):
        from kafka import KafkaConsumer
        cfg = dict(bootstrap_servers=self.bootstrap, group_id=self.group, auto_offset_reset="earliest",
                   enable_auto_commit=False, session_timeout_ms=SESSION_MS, heartbeat_interval_ms=300,
                   client_id=f"kp-{uuid.uuid4().hex[:6]}")
        cfg.update(self.extra)
        c = KafkaConsumer(self.topic, **cfg)
        self.ready.set()
        try:
            while not self.stop_evt.is_set():
                batch = c.poll(timeout_ms=100)
                with self.lock:
                    for recs in batch.values():
                        self.records.extend((r.partition, r.offset, r.value) for r in recs)
                    self.assigned = frozenset(tp.partition for tp in c.assignment())
                if self.extra.get("enable_auto_commit") is None and batch:
                    c.commit()
        finally:
            c.close()

    def _run_confluent(self):
        from confluent_kafka import Consumer
        cfg = {"bootstrap.servers": self.bootstrap, "group.id": self.group, "auto.offset.reset": "earliest",
               "enable.auto.commit": False, "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": 300,
               "partition.assignment.strategy": "range"}
        cfg.update(self.extra)
        c = Consumer(cfg)
        c.subscribe([self.topic])
        self.ready.set()
        try:
            while not self.stop_evt.is_set():
                msg = c.poll(0.1)
                with self.lock:
                    if msg is not None and msg.error() is None:
                        self.records.append((msg.partition(), msg.offset(), msg.value()))
                        c.commit(message=msg, asynchronous=False)
                    self.assigned = frozenset(tp.partition for tp in c.assignment())
        finally:
            c.close()

    def _run_aiokafka(self):
        asyncio.run(self._aiokafka_main())

    async def _aiokafka_main(self):
        from aiokafka import AIOKafkaConsumer
        c = AIOKafkaConsumer(self.topic, bootstrap_servers=self.bootstrap, group_id=self.group,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             session_timeout_ms=SESSION_MS, heartbeat_interval_ms=300, **self.extra)
        await c.start()
        self.ready.set()
        try:
            while not self.stop_evt.is_set():
                batch = await c.getmany(timeout_ms=100)
                with self.lock:
                    for recs in batch.values():
                        self.records.extend((r.partition, r.offset, r.value) for r in recs)
                    self.assigned = frozenset(tp.partition for tp in c.assignment())
                if batch:
                    await c.commit()
        finally:
            await c.stop()

    def close(self):
        self.stop_evt.set()
        self.join(30)
        assert not self.is_alive(), f"{self.kind} member did not stop"


def start_members(specs, bootstrap, group, topic) -> list[Member]:
    members = [Member(kind, bootstrap, group, topic, **extra) for kind, extra in specs]
    for m in members:
        m.start()
        m.ready.wait(20)
    return members


def split_is_complete(members: list[Member]) -> bool:
    sets = [m.assigned for m in members]
    if any(not s for s in sets):
        return False
    union = frozenset().union(*sets)
    return union == ALL and sum(len(s) for s in sets) == PARTITIONS


def wait_split(members: list[Member], timeout: float = 30.0) -> list[frozenset]:
    def ok():
        for m in members:
            if m.error is not None:
                raise m.error
        return split_is_complete(members)
    wait_until(ok, timeout=timeout, interval=0.1, what="a disjoint assignment covering all partitions")
    time.sleep(1.0)  # still true one second later (no stray rebalance)
    assert split_is_complete(members), [m.assigned for m in members]
    return [m.assigned for m in members]


def close_all(members):
    for m in members:
        m.close()
    for m in members:
        if m.error is not None:
            raise m.error


# ------------------------------------------------------------------------------------ splits
@pytest.mark.parametrize("kind", ["kafka_python", "confluent", "aiokafka"])
def test_two_then_three_members_split_six_partitions(gbroker, kind):
    """Two members split the 6 partitions 3+3 without overlap; a third joins and all three
    get 2 each; every produced record is consumed exactly once across the group."""
    topic, group = _name("split"), _name("g")
    ensure_topic(gbroker.bootstrap, topic)
    produce(gbroker.bootstrap, topic, 5)
    members = start_members([(kind, {}), (kind, {})], gbroker.bootstrap, group, topic)
    try:
        sets = wait_split(members)
        assert sorted(len(s) for s in sets) == [3, 3]
        members += start_members([(kind, {})], gbroker.bootstrap, group, topic)
        sets = wait_split(members)
        assert sorted(len(s) for s in sets) == [2, 2, 2]
        wait_until(lambda: len({(p, o) for m in members for p, o, _ in m.records}) == 5 * PARTITIONS,
                   timeout=20, what="every record consumed")
    finally:
        close_all(members)


def test_mixed_group_kafka_python_and_confluent(gbroker):
    """kafka-python and librdkafka members with the same assignor (range) share one group."""
    topic, group = _name("mixed"), _name("g")
    ensure_topic(gbroker.bootstrap, topic)
    members = start_members([("kafka_python", {"partition_assignment_strategy": [_kp_range()]}),
                             ("confluent", {})], gbroker.bootstrap, group, topic)
    try:
        sets = wait_split(members)
        assert sorted(len(s) for s in sets) == [3, 3]
    finally:
        close_all(members)


def _kp_range():
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    return RangePartitionAssignor


def test_member_leaving_moves_its_partitions_at_once(gbroker):
    """A member that closes sends LeaveGroup: the other takes all partitions well before the
    session timeout could have expired."""
    topic, group = _name("leave"), _name("g")
    ensure_topic(gbroker.bootstrap, topic)
    a, b = start_members([("kafka_python", {}), ("kafka_python", {})], gbroker.bootstrap, group, topic)
    try:
        wait_split([a, b])
        t0 = time.monotonic()
        b.close()
        wait_until(lambda: a.assigned == ALL, timeout=SESSION_MS / 1000, what="all partitions on the survivor")
        assert time.monotonic() - t0 < SESSION_MS / 1000
    finally:
        close_all([a])


KILLABLE_MEMBER = r"""
import sys
from kafka import KafkaConsumer
c = KafkaConsumer(sys.argv[3], bootstrap_servers=sys.argv[1], group_id=sys.argv[2], auto_offset_reset="earliest",
                  enable_auto_commit=False, session_timeout_ms=int(sys.argv[4]), heartbeat_interval_ms=300)
while True:
    c.poll(timeout_ms=100)
    print(",".join(str(tp.partition) for tp in sorted(c.assignment())), flush=True)
"""


def test_killed_member_partitions_move_within_session_timeout(gbroker):
    """kill -9 of a member's process (no LeaveGroup): once its session times out the group
    rebalances and the survivor owns every partition."""
    topic, group = _name("kill"), _name("g")
    ensure_topic(gbroker.bootstrap, topic)
    proc = subprocess.Popen([sys.executable, "-c", KILLABLE_MEMBER, gbroker.bootstrap, group, topic, str(SESSION_MS)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    (a,) = start_members([("kafka_python", {})], gbroker.bootstrap, group, topic)
    try:
        wait_until(lambda: len(a.assigned) == 3, timeout=30, what="a 3+3 split with the subprocess member")
        time.sleep(1.0)
        assert len(a.assigned) == 3
        t0 = time.monotonic()
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        wait_until(lambda: a.assigned == ALL, timeout=SESSION_MS / 1000 + 10, what="all partitions on the survivor")
        elapsed = time.monotonic() - t0
        # at least most of a session timeout passed (no LeaveGroup was sent), and not much more
        assert SESSION_MS / 1000 - 1.5 <= elapsed <= SESSION_MS / 1000 + 8, elapsed
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        close_all([a])


# ------------------------------------------------------------------------------- committed offsets
def _consume_n(bootstrap, group, topic, n, timeout=30.0):
    """A kafka-python group member that consumes ``n`` records, commits and closes."""
    from kafka import KafkaConsumer
    c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                      enable_auto_commit=False, session_timeout_ms=SESSION_MS, heartbeat_interval_ms=300,
                      max_poll_records=n)
    got = []
    try:
        deadline = time.monotonic() + timeout
        while len(got) < n and time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=200).values():
                got.extend(recs)
        c.commit()
    finally:
        c.close()
    return got


def _committed(bootstrap, group, topic) -> dict[int, int | None]:
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        out = {}
        for p in range(PARTITIONS):
            om = c.committed(TopicPartition(topic, p))
            out[p] = om
        return out
    finally:
        c.close()


def test_committed_offsets_resume_after_consumer_and_broker_restarts(gbroker):
    """A consumer commits what it read; a new consumer of the same group starts after it;
    the offsets survive a clean broker restart and a kill -9 of the broker."""
    topic, group = _name("resume"), _name("g")
    ensure_topic(gbroker.bootstrap, topic)
    produce(gbroker.bootstrap, topic, 4)
    first = _consume_n(gbroker.bootstrap, group, topic, 4 * PARTITIONS)
    assert len(first) == 4 * PARTITIONS
    assert _committed(gbroker.bootstrap, group, topic) == {p: 4 for p in range(PARTITIONS)}

    produce(gbroker.bootstrap, topic, 2, start=4)
    second = _consume_n(gbroker.bootstrap, group, topic, 2 * PARTITIONS)
    assert sorted((r.partition, r.offset) for r in second) == [(p, o) for p in range(PARTITIONS) for o in (4, 5)]

    gbroker.restart()
    assert _committed(gbroker.bootstrap, group, topic) == {p: 6 for p in range(PARTITIONS)}
    produce(gbroker.bootstrap, topic, 1, start=6)
    third = _consume_n(gbroker.bootstrap, group, topic, PARTITIONS)
    assert sorted((r.partition, r.offset) for r in third) == [(p, 6) for p in range(PARTITIONS)]

    gbroker.kill()
    gbroker.start()
    assert _committed(gbroker.bootstrap, group, topic) == {p: 7 for p in range(PARTITIONS)}


def test_simple_assign_mode_commits_with_metadata(gbroker):
    """assign()-mode consumers (no group membership) commit and fetch offsets with metadata;
    kafka-python and librdkafka see each other's commits."""
    from confluent_kafka import Consumer, TopicPartition as CTP
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata
    topic, group = _name("simple"), _name("g")
    ensure_topic(gbroker.bootstrap, topic)
    c = KafkaConsumer(bootstrap_servers=gbroker.bootstrap, group_id=group, enable_auto_commit=False)
    try:
        tp = TopicPartition(topic, 2)
        c.assign([tp])
        c.commit({tp: OffsetAndMetadata(17, "hello", -1)})
        om = c.committed(tp, metadata=True)
        assert om.offset == 17 and om.metadata == "hello"
    finally:
        c.close()
    cc = Consumer({"bootstrap.servers": gbroker.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        (got,) = cc.committed([CTP(topic, 2)], timeout=20)
        # confluent-kafka's binding turns the metadata buffer into a str as a C string,
        # ignoring its length (librdkafka does not NUL-terminate it), so bytes after it may
        # trail; kafka-python above reads exactly "hello" from the same response.
        assert got.offset == 17 and got.metadata[:5] == "hello"
        cc.commit(offsets=[CTP(topic, 3, 5)], asynchronous=False)
    finally:
        cc.close()
    assert _committed(gbroker.bootstrap, group, topic)[3] == 5


def test_java_consumer_resumes_from_committed_offsets(gbroker, client_tools):
    """The Java consumer (subscribe + commitSync) resumes where the group committed, also
    after offsets were committed by kafka-python."""
    topic, group = _name("java"), _name("g")
    ensure_topic(gbroker.bootstrap, topic)
    produce(gbroker.bootstrap, topic, 3)
    props = f"session.timeout.ms={SESSION_MS},heartbeat.interval.ms=300,auto.offset.reset=earliest"
    lines = run_java(["group-consume", "--bootstrap", gbroker.bootstrap, "--group", group, "--topic", topic,
                      "--count", 3 * PARTITIONS, "--props", props])
    assert lines[-1]["committed"] == {str(p): 3 for p in range(PARTITIONS)}
    assert len([x for x in lines if "offset" in x]) == 3 * PARTITIONS
    produce(gbroker.bootstrap, topic, 1, start=3)
    got = _consume_n(gbroker.bootstrap, group, topic, PARTITIONS)     # kafka-python continues at 3
    assert sorted((r.partition, r.offset) for r in got) == [(p, 3) for p in range(PARTITIONS)]
    produce(gbroker.bootstrap, topic, 1, start=4)
    lines = run_java(["group-consume", "--bootstrap", gbroker.bootstrap, "--group", group, "--topic", topic,
                      "--count", PARTITIONS, "--props", props])
    recs = [x for x in lines if "offset" in x]
    assert sorted((x["partition"], x["offset"]) for x in recs) == [(p, 4) for p in range(PARTITIONS)]
    assert lines[-1]["committed"] == {str(p): 5 for p in range(PARTITIONS)}


# ------------------------------------------------------------------------------------ admin
def test_admin_list_describe_delete_groups(gbroker):
    """kafka-python's admin client shows the group Stable with its members and assignment;
    deleting a group with members fails (NON_EMPTY_GROUP); once empty it is deleted with its
    offsets and no longer listed."""
    from kafka import KafkaAdminClient
    from kafka.errors import NonEmptyGroupError, GroupIdNotFoundError
    topic, group = _name("admin"), _name("g")
    ensure_topic(gbroker.bootstrap, topic)
    produce(gbroker.bootstrap, topic, 1)
    admin = KafkaAdminClient(bootstrap_servers=gbroker.bootstrap)
    members = start_members([("kafka_python", {}), ("kafka_python", {})], gbroker.bootstrap, group, topic)
    try:
        wait_split(members)
        listed = admin.list_groups()
        entry = [g for g in listed if _gid(g) == group]
        assert entry, listed
        desc = admin.describe_groups([group])
        d = desc[group] if isinstance(desc, dict) else desc[0]
        d = d if isinstance(d, dict) else d._asdict()
        assert d["group_state"] == "Stable" and d["protocol_type"] == "consumer"
        assert len(d["members"]) == 2
        assert all(m["client_host"].startswith("/127.0.0.1") for m in d["members"])
        res = dict(admin.delete_groups([group]))
        # kafka-python answers 'OK' or the error class name per group
        assert res[group] == NonEmptyGroupError.__name__, res
    finally:
        close_all(members)
    offsets = admin.list_group_offsets({group: None})[group]
    assert {tp.partition: om.offset for tp, om in offsets.items()} == {p: 1 for p in range(PARTITIONS)}
    desc = admin.describe_groups([group])
    d = desc[group] if isinstance(desc, dict) else desc[0]
    d = d if isinstance(d, dict) else d._asdict()
    assert d["group_state"] == "Empty" and d["members"] == []
    res = dict(admin.delete_groups([group]))
    assert res[group] == "OK", res
    assert group not in [_gid(g) for g in admin.list_groups()]
    res = dict(admin.delete_groups([group]))
    assert res[group] == GroupIdNotFoundError.__name__, res
    assert admin.list_group_offsets({group: None})[group] == {}
    admin.close()


def _gid(entry):
    if isinstance(entry, dict):
        return entry.get("group_id") or entry.get("group")
    if isinstance(entry, tuple):
        return entry[0]
    return getattr(entry, "group_id", entry)
