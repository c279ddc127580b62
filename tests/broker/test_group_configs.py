"""Per-group configs (``broker.groups.group_configs``): Kafka 4.4's ``GroupConfig.validate`` as
plain rules over plain data, and, over TCP with real clients, that what a user sets on a group
is honoured by its coordinator or refused with the key and the reason.

(Kafka's own answers for the same alters and describes: tests/differential/test_group_configs.py.)"""
from __future__ import annotations

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType

from broker.groups.group_configs import KEYS, UNSERVED, GroupConfigError, GroupConfigs, java_str
from protocol.errors import ErrorCode as E


def _configs(**broker) -> GroupConfigs:
    return GroupConfigs({k.replace("_", "."): v for k, v in broker.items()})


def _refusal(gc: GroupConfigs, new: dict) -> str:
    with pytest.raises(GroupConfigError) as exc:
        gc.validate(new)
    return str(exc.value)


def test_every_unserved_key_takes_its_default_and_refuses_another_value_naming_it():
    gc = _configs()
    others = {"boolean": lambda d: "false" if d else "true", "int": lambda d: str(d + 1),
              "long": lambda d: str(d + 1), "list": lambda d: "zone", "string": lambda d: "dlq"}
    for name, why in UNSERVED.items():
        key = next(k for k in KEYS if k.name == name)
        default = gc.default(name)
        gc.validate({name: java_str(default)})  # the default is accepted
        msg = _refusal(gc, {name: others[key.type](default)})
        assert msg.startswith(f"{name}=") and why in msg and "not served by Hourglass" in msg


def test_kafkas_bounds_and_messages():
    gc = _configs()
    assert _refusal(gc, {"nope": "1"}) == "Unknown group config name: nope"
    assert _refusal(gc, {"consumer.session.timeout.ms": "1_000"}) == \
        "Invalid value 1_000 for configuration consumer.session.timeout.ms: Not a number of type INT"
    assert _refusal(gc, {"consumer.session.timeout.ms": "0"}) == \
        "Invalid value 0 for configuration consumer.session.timeout.ms: Value must be at least 1"
    assert _refusal(gc, {"streams.session.timeout.ms": "70000"}) == \
        "streams.session.timeout.ms must be in the range 45000 to 60000 inclusive."
    assert _refusal(gc, {"streams.num.standby.replicas": "3"}) == \
        "streams.num.standby.replicas must be less than or equal to 2"
    assert _refusal(gc, {"streams.task.offset.interval.ms": "100"}) == \
        "streams.task.offset.interval.ms must be greater than or equal to 15000"
    assert _refusal(gc, {"share.heartbeat.interval.ms": "16000"}) == \
        "share.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."
    assert _refusal(gc, {"streams.rack.aware.assignment.tags": "a, b ,a"}) == \
        "streams.rack.aware.assignment.tags must not contain duplicate tag keys."
    assert _refusal(gc, {"streams.assignor.name": "x"}) == \
        "streams.assignor.name 'x' is not a registered task assignor. Registered assignors are: [sticky]."
    assert _refusal(gc, {"errors.deadletterqueue.topic.name": "__x"}) == \
        "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'"
    # the broker's own bounds where it has the key: a wider session range
    wide = _configs(group_consumer_max_session_timeout_ms=90000)
    wide.validate({"consumer.session.timeout.ms": "90000"})
    assert _refusal(gc, {"consumer.session.timeout.ms": "90000"}) == \
        "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."


def test_session_must_exceed_heartbeat_with_the_defaults_filling_in():
    gc = _configs(group_consumer_max_heartbeat_interval_ms=60000)
    assert _refusal(gc, {"consumer.heartbeat.interval.ms": "45000", "consumer.session.timeout.ms": "45000"}) == \
        "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"
    # one side set: the other is the broker's (45 s session)
    assert _refusal(gc, {"consumer.heartbeat.interval.ms": "50000"}) == \
        "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"
    gc.validate({"consumer.heartbeat.interval.ms": "44999"})


def test_describe_lists_internal_keys_only_when_overridden():
    gc = _configs()
    names = [e[0] for e in gc.entries("g")]
    assert "streams.num.warmup.replicas" not in names and "streams.num.standby.replicas" in names
    gc.set("g", {"streams.num.warmup.replicas": "2"})
    assert ("streams.num.warmup.replicas", "2", True) == next(e[:3] for e in gc.entries("g")
                                                               if e[0] == "streams.num.warmup.replicas")


# ---- over TCP ----------------------------------------------------------------------------------

def _alter(bs: str, group: str, **configs) -> None:
    admin = AdminClient({"bootstrap.servers": bs})
    res = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(k.replace("_", "."), str(v), incremental_operation=AlterConfigOpType.SET)
        for k, v in configs.items()])
    admin.incremental_alter_configs([res])[res].result(timeout=30)


def test_an_unserved_key_is_refused_over_the_wire_and_its_default_kept(broker):
    bs = broker.bootstrap
    with pytest.raises(KafkaException) as exc:
        _alter(bs, "g1", errors_deadletterqueue_topic_name="dlq")
    err = exc.value.args[0]
    assert err.code() == E.INVALID_CONFIG
    assert "errors.deadletterqueue.topic.name" in err.str() and "dead-letter" in err.str()
    _alter(bs, "g1", errors_deadletterqueue_topic_name="")  # the default: accepted
    admin = AdminClient({"bootstrap.servers": bs})
    described = admin.describe_configs([ConfigResource(ResourceType.GROUP, "g1")])
    entries = next(iter(described.values())).result(timeout=30)
    assert entries["errors.deadletterqueue.topic.name"].value == ""
    assert entries["streams.assignor.name"].value == "sticky"


def test_streams_group_configs_are_honoured(broker_factory):
    """The group's own standby count, heartbeat interval and initial delay, over the broker's:
    the broker waits 10 minutes before a new group's first assignment and gives no standbys;
    the group says 0 ms and one standby."""
    from tests.helpers.streams_group import StreamsGroup
    b = broker_factory({"group.streams.initial.rebalance.delay.ms": 600000, "group.streams.num.standby.replicas": 0})
    bs = b.bootstrap
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic("src", 2, 1)])["src"].result(timeout=30)
    _alter(bs, "app", streams_num_standby_replicas=1, streams_heartbeat_interval_ms=6000,
           streams_initial_rebalance_delay_ms=0)
    g = StreamsGroup(bs, "app", "src", 2, members=2)  # settles (every task owned) within 30 s
    try:
        snap = g.snapshot()
        assert sum(len(ps) for m in snap for ps in m["standby"].values()) == 2  # each store task's standby
        assert g.members[0].beat().heartbeat_interval_ms == 6000
    finally:
        g.close()


def test_share_renew_acknowledge_enable_false_refuses_renew(broker_factory):
    from tests.share.test_share_consumers import _topic_id, setup_topic
    from tests.share.test_share_wire import RENEW, ACCEPT, ack, acquired, fetch, join
    from tests.helpers.raw import RawClient
    b = broker_factory({"group.share.heartbeat.interval.ms": 1000, "group.share.min.heartbeat.interval.ms": 1000})
    bs = b.bootstrap
    setup_topic(bs, "t", 3, **{"share.renew.acknowledge.enable": "false"})
    raw = RawClient(bs)
    try:
        tid = _topic_id(raw, "t")
        join(raw, "m1")
        assert acquired(fetch(raw, "m1", 0, tid, max_wait=1000)) == {0: [(0, 2, 1)]}
        r = ack(raw, "m1", 1, tid, [(0, 0, RENEW)], version=2)
        p = r.responses[0].partitions[0]
        assert (p.error_code, p.error_message) == (E.INVALID_RECORD_STATE,
                                                   "Renewing acquisition locks is not enabled for the group.")
        _alter(bs, "g", share_renew_acknowledge_enable="true")
        assert ack(raw, "m1", 2, tid, [(0, 0, RENEW)], version=2).responses[0].partitions[0].error_code == 0
        assert ack(raw, "m1", 3, tid, [(0, 2, ACCEPT)], version=2).responses[0].partitions[0].error_code == 0
    finally:
        raw.close()


def test_streams_session_timeout_is_the_groups_own(broker_factory):
    """Two one-member Streams groups fall silent together on a broker whose Streams session
    timeout is 2 s; the one whose group config says 45 s keeps its member after the other's
    has been removed."""
    from hourglass.cli.wire import WireClient
    from protocol.messages.streams_group_describe import StreamsGroupDescribeRequest as D
    from tests.helpers.clients import wait_until
    from tests.helpers.streams_group import StreamsMember, topology
    b = broker_factory({"group.streams.session.timeout.ms": 2000, "group.streams.heartbeat.interval.ms": 500,
                        "group.streams.initial.rebalance.delay.ms": 0})
    bs = b.bootstrap
    admin = AdminClient({"bootstrap.servers": bs})  # kept referenced until its future answers
    admin.create_topics([NewTopic("src", 1, 1)])["src"].result(timeout=30)
    _alter(bs, "kept", streams_session_timeout_ms=45000)
    with WireClient(bs) as w:
        members = [StreamsMember(w, g, topology(g, "src", 1), "a", 7070) for g in ("kept", "plain")]
        for m in members:
            m.beat()
            assert m.epoch > 0

        def member_count(group):
            return len(w.request(89, 0, D(group_ids=[group], include_authorized_operations=False)).groups[0].members)
        wait_until(lambda: member_count("plain") == 0, timeout=30, what="the plain group's member removed")
        assert member_count("kept") == 1
