"""Per-group configs (GROUP config resources, type 32) against Kafka 4.4's ``GroupConfig``:
DescribeConfigs (32) of a group at its defaults and after a SET of every key, and
IncrementalAlterConfigs (44) refusing what ``GroupConfig.validate`` refuses, with its error code
and message. Keys whose feature Hourglass does not have accept their default value only: a
non-default value is refused (a kept difference, README "Not served")."""
from __future__ import annotations

import pytest

from tests.differential.framework import req
from tests.helpers.clients import wait_until

pytestmark = pytest.mark.xdist_group("differential")

GROUP, SET, DELETE, APPEND = 32, 0, 1, 2

# a valid value of every key: non-default where Hourglass honours the key, the default where
# it does not (those are refused otherwise; see UNSERVED below)
VALID = {
    "consumer.session.timeout.ms": "50000",
    "consumer.heartbeat.interval.ms": "6000",
    "consumer.assignment.interval.ms": "1000",
    "consumer.assignor.offload.enable": "true",
    "share.session.timeout.ms": "50000",
    "share.heartbeat.interval.ms": "6000",
    "share.record.lock.duration.ms": "20000",
    "share.delivery.count.limit": "7",
    "share.partition.max.record.locks": "500",
    "share.auto.offset.reset": "earliest",
    "share.isolation.level": "read_committed",
    "share.renew.acknowledge.enable": "false",
    "share.assignment.interval.ms": "0",
    "share.assignor.offload.enable": "true",
    "streams.session.timeout.ms": "50000",
    "streams.heartbeat.interval.ms": "6000",
    "streams.num.standby.replicas": "1",
    "streams.initial.rebalance.delay.ms": "100",
    "streams.assignment.interval.ms": "1000",
    "streams.rack.aware.assignment.tags": "",
    "streams.assignor.offload.enable": "true",
    "streams.task.offset.interval.ms": "60000",
    "streams.num.warmup.replicas": "2",
    "streams.acceptable.recovery.lag": "10000",
    "errors.deadletterqueue.topic.name": "",
    "errors.deadletterqueue.copy.record.enable": "false",
}

BAD = [
    ({"no.such.key": "1"}, "an unknown key"),
    ({"consumer.session.timeout.ms": "abc"}, "not a number"),
    ({"consumer.session.timeout.ms": "0"}, "below the definition's floor"),
    ({"consumer.session.timeout.ms": "30000"}, "below the broker's min"),
    ({"consumer.heartbeat.interval.ms": "20000"}, "above the broker's max"),
    ({"consumer.session.timeout.ms": "45000", "consumer.heartbeat.interval.ms": "15000"}, "heartbeat not below session"),
    ({"consumer.heartbeat.interval.ms": "45000"}, "heartbeat above session (and max)"),
    ({"consumer.assignment.interval.ms": "-1"}, "negative assignment interval"),
    ({"consumer.assignment.interval.ms": "20000"}, "assignment interval above max"),
    ({"consumer.assignor.offload.enable": "maybe"}, "not a boolean"),
    ({"share.record.lock.duration.ms": "999"}, "lock duration below 1000"),
    ({"share.delivery.count.limit": "1"}, "delivery count below 2"),
    ({"share.delivery.count.limit": "11"}, "delivery count above max"),
    ({"share.partition.max.record.locks": "99"}, "record locks below 100"),
    ({"share.partition.max.record.locks": "5000"}, "record locks above the broker's max"),
    ({"share.auto.offset.reset": "sometimes"}, "bad reset"),
    ({"share.auto.offset.reset": "by_duration:-PT1H"}, "negative duration"),
    ({"share.isolation.level": "READ_COMMITTED"}, "isolation level in capitals"),
    ({"share.isolation.level": "serializable"}, "bad isolation level"),
    ({"share.renew.acknowledge.enable": "yes"}, "renew not a boolean"),
    ({"share.session.timeout.ms": "45000", "share.heartbeat.interval.ms": "45000"}, "share heartbeat = session"),
    ({"streams.session.timeout.ms": "70000"}, "streams session above max"),
    ({"streams.heartbeat.interval.ms": "1"}, "streams heartbeat below min"),
    ({"streams.num.standby.replicas": "3"}, "standby above max"),
    ({"streams.num.standby.replicas": "-1"}, "negative standby"),
    ({"streams.initial.rebalance.delay.ms": "-1"}, "negative delay"),
    ({"streams.assignment.interval.ms": "15001"}, "streams assignment interval above max"),
    ({"streams.task.offset.interval.ms": "100"}, "task offset interval below min"),
    ({"streams.task.offset.interval.ms": "0"}, "task offset interval zero"),
    ({"streams.num.warmup.replicas": "21"}, "warmup above max"),
    ({"streams.acceptable.recovery.lag": "-5"}, "negative lag"),
    ({"streams.acceptable.recovery.lag": "x"}, "lag not a number"),
    ({"streams.rack.aware.assignment.tags": "a,a"}, "duplicate tags"),
    ({"streams.rack.aware.assignment.tags": "a, b , a"}, "duplicate tags with spaces"),
    ({"streams.assignor.name": "nosuch"}, "unknown assignor"),
    ({"errors.deadletterqueue.topic.name": "__dlq"}, "internal DLQ name"),
    ({"errors.deadletterqueue.copy.record.enable": "1"}, "copy not a boolean"),
    ({"streams.session.timeout.ms": "99999999999"}, "beyond an int"),
]


def _alter(group, configs, op=SET, validate_only=False):
    return req(44, 1, resources=[{"resource_type": GROUP, "resource_name": group, "configs": [
        {"name": k, "config_operation": op, "value": v} for k, v in configs.items()]}], validate_only=validate_only)


def _describe(group, v, keys=None):
    return req(32, v, resources=[{"resource_type": GROUP, "resource_name": group, "configuration_keys": keys}],
               include_synonyms=True, include_documentation=True)


def _settled(ex, group):
    """Wait (up to 15 s) until Kafka lists ``group``'s overrides as Hourglass does: Kafka's
    broker applies a committed config change to its metadata cache a moment after answering."""
    def over(side):
        r = side.request(32, 4, _describe(group, 4))
        return {c.name: c.value for c in r.results[0].configs if c.config_source == 8}
    try:
        wait_until(lambda: over(ex.kafka) == over(ex.hourglass), timeout=15, what=f"{group} settled")
    except TimeoutError:
        pass


def test_describe_at_defaults(ex):
    g = ex.topic_name("gcfg-defaults")
    for v in ex.versions(32):
        ex.send(32, v, _describe(g, v), scenario="a group's configs at their defaults")
    ex.send(32, 4, _describe(g, 4, ["streams.num.standby.replicas", "streams.num.warmup.replicas", "nosuch"]), scenario="named keys")
    ex.send(32, 4, _describe("", 4), scenario="an empty group id")


def test_alter_every_key_then_describe(ex):
    g = ex.topic_name("gcfg-every")
    for key, value in VALID.items():
        ex.send(44, 1, _alter(g, {key: value}), scenario=f"SET {key}={value}")
    ex.send(44, 1, _alter(g, {"streams.assignor.name": None}, op=DELETE), scenario="DELETE an unset key")
    _settled(ex, g)
    for v in ex.versions(32):
        ex.send(32, v, _describe(g, v), scenario="after a SET of every key")
    ex.send(44, 1, _alter(g, {k: None for k in VALID}, op=DELETE), scenario="DELETE every key")
    _settled(ex, g)
    ex.send(32, 4, _describe(g, 4), scenario="after every key is deleted")


def test_invalid_alters(ex):
    g = ex.topic_name("gcfg-bad")
    for configs, scenario in BAD:
        for validate_only in (False, True):
            ex.send(44, 1, _alter(g, configs, validate_only=validate_only),
                    scenario=f"{scenario}{' (validate only)' if validate_only else ''}")
    ex.send(44, 1, _alter(g, {"streams.rack.aware.assignment.tags": "a"}, op=APPEND), scenario="APPEND to a list key")
    ex.send(44, 1, _alter(g, {"consumer.session.timeout.ms": "50000"}, op=APPEND), scenario="APPEND to an int key")
    ex.send(44, 1, _alter("", {"consumer.session.timeout.ms": "50000"}), scenario="an empty group id")
    _settled(ex, g)
    ex.send(32, 4, _describe(g, 4), scenario="after refused alters: nothing kept")


# a non-default value of each key whose feature Hourglass does not have: Kafka accepts it,
# Hourglass refuses it naming the key and why (kept.py: GROUP_CONFIG_UNSERVED)
UNSERVED_VALUES = {
    "consumer.assignment.interval.ms": "2000",
    "consumer.assignor.offload.enable": "false",
    "share.assignor.offload.enable": "false",
    "streams.assignment.interval.ms": "2000",
    "streams.assignor.offload.enable": "false",
    "streams.task.offset.interval.ms": "30000",
    "streams.num.warmup.replicas": "3",
    "streams.acceptable.recovery.lag": "5",
    "streams.rack.aware.assignment.tags": "zone",
    "errors.deadletterqueue.topic.name": "dlq",
    "errors.deadletterqueue.copy.record.enable": "true",
}


def test_unserved_keys_take_only_their_default(ex):
    from broker.groups.group_configs import UNSERVED
    assert set(UNSERVED_VALUES) == set(UNSERVED)
    g = ex.topic_name("gcfg-unserved")
    for key, value in UNSERVED_VALUES.items():
        for validate_only in (True, False):
            ex.send(44, 1, _alter(g, {key: value}, validate_only=validate_only),
                    scenario=f"unserved: SET {key}={value}{' (validate only)' if validate_only else ''}")


def test_kafka_configs_tool_on_groups(ex):
    """Kafka 4.4's ``kafka-configs --entity-type groups`` on both, same inputs, outputs compared."""
    from tests.helpers.kafka_oracle import run_tool
    g = ex.topic_name("gcfg-tool")

    def both(*args):
        outs = []
        for proc in (ex.pair.kafka, ex.pair.hourglass):
            r = run_tool("org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", proc.bootstrap,
                         "--entity-type", "groups", "--entity-name", g, *args, check=False, timeout=120)
            outs.append((r.returncode, r.stdout.strip(), r.stderr[-1500:]))
        (krc, kout, kerr), (hrc, hout, herr) = outs
        assert (krc, kout) == (hrc, hout), f"kafka rc {krc}:\n{kout}\n{kerr}\nhourglass rc {hrc}:\n{hout}\n{herr}"
        return krc, kout

    rc, _ = both("--alter", "--add-config", "streams.num.standby.replicas=1,consumer.session.timeout.ms=50000")
    assert rc == 0
    _settled(ex, g)
    rc, out = both("--describe")
    assert rc == 0 and "streams.num.standby.replicas=1" in out
    rc, out = both("--describe", "--all")
    assert rc == 0 and "share.isolation.level=read_uncommitted" in out
    rc, out = both("--alter", "--add-config", "streams.num.standby.replicas=9")
    assert rc != 0
