"""Kafka Streams (kafka-streams ``kafka.version``, exactly_once_v2) on Hourglass (issue 35).

The application (tests/jvm/streams-app, see tests/helpers/streams_app.py for the topology and
why its output is deterministic) runs against a real broker; its output, read back by a
read_committed consumer, must equal the output of the same topology in TopologyTestDriver on the
same input: same keys, values and timestamps in each output partition's order. That holds after
a clean run (on Apache Kafka too, which shows the comparison itself is sound), after the application is killed with kill -9 mid-stream and restarted on an empty
state directory (every store restored from its changelog, nothing counted twice), across a
broker restart, and while two instances share the work and a third joins and leaves.
"""
from __future__ import annotations

import base64
import re
import struct
import threading
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.helpers import streams_app as sa
from tests.helpers.clients import topic_configs, wait_until
from tests.helpers.txn import READ_COMMITTED, end_offsets, group_committed, read_to_end

pytestmark = [pytest.mark.timeout(420), pytest.mark.xdist_group("kafka-streams")]

BROKER_OVERRIDES = {
    "group.initial.rebalance.delay.ms": 0,
    "group.min.session.timeout.ms": 1000,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500,
    # Streams-protocol members: a killed instance's tasks move after 6 s, not Kafka's 45 s
    "group.streams.session.timeout.ms": 6000,
    "group.streams.heartbeat.interval.ms": 1000,
    "group.streams.initial.rebalance.delay.ms": 0,
    # one standby replica per task: with two or three instances each keeps a copy of another's
    # stores up to date (the classic protocol takes num.standby.replicas from the app, 0 here)
    "group.streams.num.standby.replicas": 1,
}
# Kafka Streams' two rebalance protocols: the classic group protocol with Streams' own
# assignor, and KIP-1071's Streams groups (the broker assigns the tasks)
PROTOCOLS = ["classic", "streams"]
PARTITIONS = 4
DONE_TIMEOUT_S = 180.0
CLEAN_EXIT = (0, 143)  # 143: the JVM's status after SIGTERM, its shutdown hook (KafkaStreams.close) run


@pytest.fixture(scope="module")
def data():
    return sa.make_input(partitions=PARTITIONS, rounds=30, per_round=40)


@pytest.fixture(scope="module")
def expected(data, tmp_path_factory):
    """The reference output: the topology in TopologyTestDriver, per output partition."""
    out = sa.run_driver(data.rows(), tmp_path_factory.mktemp("driver"))
    per = sa.by_partition(out, PARTITIONS)
    assert sum(len(v) for v in per.values()) > 500  # the input closes hundreds of windows
    return per


def _producer(bootstrap: str) -> Producer:
    # idempotent: a broker restart mid-stream must not duplicate or reorder the designed input
    return Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5,
                     "message.timeout.ms": 120_000})


def produce_all(bootstrap: str, data: sa.StreamsInput) -> None:
    p = _producer(bootstrap)
    sa.produce(p, data.rows(), data.partitions)
    assert p.flush(60) == 0


class PacedProducer(threading.Thread):
    """The regions, then the events one round every ``interval`` seconds (a live stream).

    With ``hold_at`` rounds, it stops before each until the next ``release()``: the disruption
    a test makes (a kill, a broker restart, an instance joining or leaving) is then mid-stream
    by construction, however slow the machine, and rounds keep coming while it happens.
    """

    def __init__(self, bootstrap: str, data: sa.StreamsInput, interval: float, hold_at: tuple[int, ...] = ()):
        super().__init__(daemon=True)
        self.bootstrap, self.data, self.interval = bootstrap, data, interval
        self._holds = {r: threading.Event() for r in hold_at}
        self._order = sorted(hold_at)
        self.rounds_sent = 0
        self.error: BaseException | None = None

    def release(self) -> None:
        """Let the producer past its next hold."""
        for r in self._order:
            if not self._holds[r].is_set():
                self._holds[r].set()
                return

    def run(self) -> None:
        try:
            p = _producer(self.bootstrap)
            sa.produce(p, self.data.regions, self.data.partitions)
            assert p.flush(60) == 0
            for i, rnd in enumerate(self.data.rounds):
                if i in self._holds:
                    self._holds[i].wait(300)
                sa.produce(p, rnd, self.data.partitions)
                assert p.flush(120) == 0
                self.rounds_sent += 1
                time.sleep(self.interval)
        except BaseException as exc:  # noqa: BLE001 - surfaced by finish()
            self.error = exc

    def finish(self, timeout: float = 300.0) -> None:
        for e in self._holds.values():
            e.set()
        self.join(timeout)
        assert not self.is_alive(), "the paced producer did not finish"
        if self.error is not None:
            raise self.error


def read_outputs(bootstrap: str, timeout: float = 30.0) -> dict[tuple[str, int], list[tuple[str, str, int]]]:
    """Both output topics read_committed from the beginning to their last stable offsets."""
    out: dict[tuple[str, int], list[tuple[str, str, int]]] = {}
    for topic in sa.OUTPUTS:
        res = read_to_end(bootstrap, topic, range(PARTITIONS), READ_COMMITTED, timeout=timeout,
                          record=lambda m: (m.key().decode(), m.value().decode(), m.timestamp()[1]))
        out.update(((topic, p), recs) for p, recs in res.records.items())
    return out


def output_counts(bootstrap: str) -> int:
    return sum(sum(end_offsets(bootstrap, t, range(PARTITIONS), READ_COMMITTED).values()) for t in sa.OUTPUTS)


def wait_until_done(bootstrap: str, app_id: str, data: sa.StreamsInput, apps, timeout: float = DONE_TIMEOUT_S) -> None:
    """Until the application has committed every input offset and every repartition offset."""
    ev_end = end_offsets(bootstrap, sa.EVENTS, range(PARTITIONS), READ_COMMITTED)
    assert sum(ev_end.values()) == data.events
    repart = f"{app_id}-by-region-repartition"
    deadline = time.monotonic() + timeout
    while True:
        for app in apps:
            assert app.running, f"{app.name} exited {app.proc.returncode}:\n{app.tail()}"
        committed = group_committed(bootstrap, app_id, sa.EVENTS, range(PARTITIONS))
        if committed == ev_end:
            rp_end = end_offsets(bootstrap, repart, range(PARTITIONS), READ_COMMITTED)
            if group_committed(bootstrap, app_id, repart, range(PARTITIONS)) == rp_end:
                return
        if time.monotonic() > deadline:
            raise AssertionError(f"{app_id} did not finish within {timeout:.0f} s: committed {committed} of "
                                 f"{ev_end}\n" + "\n".join(a.tail(30) for a in apps))
        time.sleep(0.5)


def assert_same_as_driver(bootstrap: str, app_id: str, data: sa.StreamsInput, expected, apps) -> None:
    """Once the application is done with ``data``, its output equals the driver's, partition by partition."""
    wait_until_done(bootstrap, app_id, data, apps)
    got = read_outputs(bootstrap)
    for key in sorted(set(got) | set(expected)):
        want, have = expected.get(key, []), got.get(key, [])
        if want != have:
            first = next((i for i, (a, b) in enumerate(zip(want, have)) if a != b), min(len(want), len(have)))
            pytest.fail(f"{key[0]} partition {key[1]}: {len(have)} records on the broker, {len(want)} from "
                        f"TopologyTestDriver; first difference at #{first}: broker "
                        f"{have[first:first + 3]} driver {want[first:first + 3]}", pytrace=False)


def wait_output(bootstrap: str, at_least: int, apps, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while output_counts(bootstrap) < at_least:
        for app in apps:
            assert app.running, f"{app.name} exited:\n{app.tail()}"
        assert time.monotonic() < deadline, (f"fewer than {at_least} output records within {timeout:.0f} s "
                                             f"(have {output_counts(bootstrap)})")
        time.sleep(0.3)


def start_apps(app_factory, bootstrap: str, names=("a",)) -> tuple[str, list[sa.StreamsAppProcess]]:
    """A fresh application id and one instance of the application per name, each RUNNING."""
    app_id = f"hg-streams-{uuid.uuid4().hex[:6]}"
    apps = [app_factory(bootstrap, app_id, name).start() for name in names]
    for app in apps:
        app.wait_state("RUNNING")
    return app_id, apps


def start_mid_stream(broker, app_factory, data: sa.StreamsInput, names=("a",), hold_at=(20,)):
    """Topics, the instances RUNNING and a paced producer held at ``hold_at``, returned once the
    application has written output: what a test disrupts next is mid-stream."""
    sa.create_topics(broker.bootstrap, PARTITIONS)
    app_id, apps = start_apps(app_factory, broker.bootstrap, names)
    producer = PacedProducer(broker.bootstrap, data, interval=0.2, hold_at=hold_at)
    producer.start()
    wait_output(broker.bootstrap, 150, apps)
    return app_id, apps, producer


@pytest.fixture(params=PROTOCOLS)
def protocol(request) -> str:
    return request.param


@pytest.fixture
def app_factory(tmp_path, protocol):
    apps: list[sa.StreamsAppProcess] = []

    def make(bootstrap: str, app_id: str, name: str, **kw) -> sa.StreamsAppProcess:
        kw["extra"] = {"group.protocol": protocol, **kw.get("extra", {})}
        app = sa.StreamsAppProcess(bootstrap, app_id, tmp_path, name, **kw)
        apps.append(app)
        return app

    yield make
    for app in apps:
        app.kill9()


@pytest.mark.parametrize("kind", ["hourglass", "kafka"])
def test_clean_run_equals_topology_test_driver(kind, request, data, expected, app_factory, protocol):
    """On Hourglass, and on Apache Kafka as the oracle: the comparison itself is sound."""
    if kind == "hourglass":
        broker = request.getfixturevalue("broker_factory")(BROKER_OVERRIDES)
    else:
        broker = request.getfixturevalue("kafka_factory")()
    sa.create_topics(broker.bootstrap, PARTITIONS)
    produce_all(broker.bootstrap, data)
    app_id, [app] = start_apps(app_factory, broker.bootstrap)
    assert_same_as_driver(broker.bootstrap, app_id, data, expected, [app])

    # the offsets were committed with Streams' metadata (base64 of a version byte and the
    # partition's stream time): the broker keeps it, and a restarted task resumes that time
    # (read with kafka-python: confluent-kafka 2.16's committed() hands back undecodable
    # metadata from Apache Kafka 4.4 for these offsets, while kafka-python reads the same string)
    from kafka import KafkaAdminClient
    admin_kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        committed = admin_kp.list_group_offsets(app_id)[app_id]
    finally:
        admin_kp.close()
    for p in range(PARTITIONS):
        om = committed[next(tp for tp in committed if tp.topic == sa.EVENTS and tp.partition == p)]
        raw = base64.b64decode(om.metadata)
        stream_time = struct.unpack(">q", raw[1:9])[0]
        want = max(ts for t, k, v, ts in data.rows() if t == sa.EVENTS and sa.partition_of(k, PARTITIONS) == p)
        assert raw[0] == 2 and stream_time == want, (p, raw, stream_time, want)

    # the internal topics Kafka Streams created, as it asked for them
    for store in ("regions-store", "region-totals-store"):
        assert topic_configs(broker.bootstrap, f"{app_id}-{store}-changelog")["cleanup.policy"] == "compact"
    assert topic_configs(broker.bootstrap, f"{app_id}-user-windows-changelog")["cleanup.policy"] == "compact,delete"
    # the repartition topic is purged (DeleteRecords) up to what the app committed
    repart = f"{app_id}-by-region-repartition"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    from confluent_kafka.admin import OffsetSpec
    deadline = time.monotonic() + 30
    while True:
        starts = {tp.partition: f.result().offset for tp, f in admin.list_offsets(
            {TopicPartition(repart, p): OffsetSpec.earliest() for p in range(PARTITIONS)}).items()}
        if all(v > 0 for v in starts.values()):
            break
        assert time.monotonic() < deadline, f"repartition topic never purged: log start offsets {starts}"
        time.sleep(0.5)
    if protocol == "streams":
        _check_streams_groups_tool(broker.bootstrap, app_id)
    assert app.stop() in CLEAN_EXIT, app.tail()


def _describe_streams_group(bootstrap: str, app_id: str) -> str:
    from tests.helpers.kafka_oracle import run_tool
    r = run_tool("org.apache.kafka.tools.streams.StreamsGroupCommand", "--bootstrap-server", bootstrap, "--describe",
                 "--group", app_id, "--members", "--verbose", check=False)
    assert r.returncode == 0, (r.stdout, r.stderr)
    return r.stdout


def _wait_streams_group(bootstrap: str, app_id: str, holds, what: str, timeout: float = 30.0) -> None:
    """Until the group's description satisfies ``holds``. A member gets a task another member
    gave up only in its own next heartbeat (as in Kafka: the coordinator never pushes), so one
    description taken right after the others released it can show the task as only a target."""
    last = [""]

    def described() -> bool:
        last[0] = _describe_streams_group(bootstrap, app_id)
        return holds(last[0])
    wait_until(described, timeout, interval=0.5, what=lambda: f"{what} (last description:\n{last[0]})")


def _check_streams_groups_tool(bootstrap: str, app_id: str) -> None:
    """kafka-streams-groups.sh (``StreamsGroupCommand``) lists and describes the group."""
    from tests.helpers.kafka_oracle import run_tool
    tool = "org.apache.kafka.tools.streams.StreamsGroupCommand"
    listed = run_tool(tool, "--bootstrap-server", bootstrap, "--list", check=False)
    assert listed.returncode == 0 and app_id in listed.stdout.split(), (listed.stdout, listed.stderr)
    described = run_tool(tool, "--bootstrap-server", bootstrap, "--describe", "--group", app_id, "--members",
                         "--verbose", check=False)
    print(described.stdout)
    assert described.returncode == 0, (described.stdout, described.stderr)
    lines = [ln.split() for ln in described.stdout.splitlines() if ln.strip()]
    header = lines[0]
    rows = [dict(zip(header, ln)) for ln in lines[1:] if ln and ln[0] == app_id]
    assert len(rows) == 1, described.stdout  # one member: the app's single stream thread
    assert described.stdout.count("0:[0,1,2,3]") >= 1 and described.stdout.count("1:[0,1,2,3]") >= 1, described.stdout


def test_kill9_mid_stream_then_restore_from_changelogs(broker_factory, data, expected, app_factory):
    broker = broker_factory(BROKER_OVERRIDES)
    app_id, [app], producer = start_mid_stream(broker, app_factory, data)
    app.kill9()
    time.sleep(1.0)
    # an empty state directory: every store comes back from its changelog topic
    app.start(fresh_state=True)
    app.wait_state("RUNNING")
    producer.finish()
    assert_same_as_driver(broker.bootstrap, app_id, data, expected, [app])
    assert app.stop() in CLEAN_EXIT, app.tail()


def _streams_group_view(bootstrap: str, app_id: str):
    """(group epoch, {member id: member epoch}) by StreamsGroupDescribe."""
    from hourglass.cli.wire import WireClient
    from protocol.messages.streams_group_describe import StreamsGroupDescribeRequest as D
    with WireClient(bootstrap) as w:
        g = w.request(89, 0, D(group_ids=[app_id], include_authorized_operations=False)).groups[0]
    assert g.error_code == 0, g
    return g.group_epoch, {m.member_id: m.member_epoch for m in g.members}


def _joins(broker, app_id: str) -> int:
    """How often a member joined the app's Streams group (epoch 0, unknown to the group), by the
    broker's log (kept across restarts)."""
    text = broker.log_path.read_text(errors="replace")
    return sum(1 for ln in text.splitlines() if f"[GroupId {app_id}]" in ln and "Member joins the streams group" in ln)


def test_broker_restart_mid_stream(broker_factory, data, expected, app_factory, protocol):
    broker = broker_factory(BROKER_OVERRIDES)
    app_id, [app], producer = start_mid_stream(broker, app_factory, data)
    if protocol == "streams":
        before, joins = _streams_group_view(broker.bootstrap, app_id), _joins(broker, app_id)
    broker.restart()
    producer.finish()
    assert_same_as_driver(broker.bootstrap, app_id, data, expected, [app])
    if protocol == "streams":
        # the group came back from __consumer_offsets: the app's member carried on at its epoch
        # (Kafka keeps the group; it does not send the member through a rejoin)
        assert _joins(broker, app_id) == joins, "the app's member rejoined after the broker restart"
        assert _streams_group_view(broker.bootstrap, app_id) == before
    assert app.stop() in CLEAN_EXIT, app.tail()


def test_two_instances_and_a_third_joining_and_leaving(broker_factory, data, expected, app_factory, protocol):
    broker = broker_factory(BROKER_OVERRIDES)
    app_id, [a, b], producer = start_mid_stream(broker, app_factory, data, names=("a", "b"), hold_at=(12, 24))
    c = app_factory(broker.bootstrap, app_id, "c").start()
    c.wait_state("RUNNING")
    # the baseline is taken while the producer is held at round 12, before the release: it counts
    # at most the output of rounds 0 to 11 (windows up to 9), so rounds 12 to 23 add twelve
    # windows' output, far above 150. Counted after the release, a slow count could already
    # include all of that (the twelve rounds take a few seconds) and wait for output that never comes.
    before = output_counts(broker.bootstrap)
    producer.release()  # rounds 12 to 23 while the three share the work
    wait_output(broker.bootstrap, before + 150, [a, b, c])
    if protocol == "streams":
        # the third instance really took a share: the broker's assignment gives each of the
        # three members active tasks (the Streams protocol moves a task without sending the
        # others through REBALANCING, so their states say nothing here)
        def each_of_three_active(out: str) -> bool:
            rows = [ln for ln in out.splitlines() if ln.startswith(app_id)]
            return len(rows) == 3 and all(re.search(r"(?<!TARGET-)ACTIVE: \d+:\[", ln) for ln in rows)
        _wait_streams_group(broker.bootstrap, app_id, each_of_three_active, "each of the three members with active tasks")
    assert c.stop() in CLEAN_EXIT, c.tail()
    producer.finish()  # the rest after the third left
    assert_same_as_driver(broker.bootstrap, app_id, data, expected, [a, b])
    if protocol == "streams":
        # the broker's assignment: each instance runs half the tasks and a standby of the others
        _wait_streams_group(broker.bootstrap, app_id, lambda out: out.count("STANDBY:") >= 2 and "STANDBY: 0:" in out,
                            "a standby of the other's tasks on each of the two members")
    if protocol == "classic":
        # the third instance really took a share: it reached RUNNING after a rebalance gave it tasks
        assert "REBALANCING" in a.states[1:] and "REBALANCING" in b.states[1:]
    assert a.stop() in CLEAN_EXIT, a.tail()
    assert b.stop() in CLEAN_EXIT, b.tail()
