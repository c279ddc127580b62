"""Client metrics subscriptions (KIP-714) on both brokers: CLIENT_METRICS config resources
(type 16) through IncrementalAlterConfigs (44), AlterConfigs (33) and DescribeConfigs (32),
and ListConfigResources (74), each at every version both serve; and Kafka 4.4's own
``kafka-client-metrics`` tool (``--alter``, ``--list``, ``--describe``, ``--delete``) with the
same inputs, outputs compared."""
from __future__ import annotations

import re

import pytest

from tests.differential.framework import req
from tests.helpers.clients import wait_until
from tests.helpers.kafka_oracle import run_tool

pytestmark = pytest.mark.xdist_group("differential")

CLIENT_METRICS = 16
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
TOOL = "org.apache.kafka.tools.ClientMetricsCommand"


def _incremental(name, cfgs, v, validate_only=False, rtype=CLIENT_METRICS):
    return req(44, v, resources=[{"resource_type": rtype, "resource_name": name, "configs": [
        {"name": k, "config_operation": op, "value": val} for k, op, val in cfgs]}], validate_only=validate_only)


def _settled(ex, name):
    """Wait (up to 15 s) until Kafka describes ``name`` as Hourglass does: Kafka's broker applies
    a committed config change to its metadata cache a moment after answering the alter. Still
    different after that: the comparison that follows reports it."""
    def kept(side):
        r = side.request(32, 4, _describe([name], 4))
        return {c.name: c.value for c in r.results[0].configs if c.config_source == 7}
    try:
        wait_until(lambda: kept(ex.kafka) == kept(ex.hourglass), timeout=15, what=f"{name} settled")
    except TimeoutError:
        pass


def _describe(names, v, keys=None):
    return req(32, v, resources=[{"resource_type": CLIENT_METRICS, "resource_name": n, "configuration_keys": keys}
                                 for n in names], include_synonyms=True, include_documentation=True)


BAD = [
    ([("metrics", SET, "a,b")], "", "an empty subscription name"),
    ([("no.such.key", SET, "1")], None, "an unknown key"),
    ([("interval.ms", SET, "99")], None, "interval below 100"),
    ([("interval.ms", SET, "3600001")], None, "interval above an hour"),
    ([("interval.ms", SET, "abc")], None, "interval not a number"),
    ([("interval.ms", SET, "99999999999")], None, "interval beyond an int"),
    ([("metrics", SET, "a,a")], None, "a duplicated metric (accepted)"),
    ([("metrics", SET, "a,,b")], None, "an empty metric"),
    ([("match", SET, "client_id")], None, "a match without ="),
    ([("match", SET, "client_id=a=b")], None, "a match with two ="),
    ([("match", SET, "client_id=")], None, "a match with an empty regex"),
    ([("match", SET, "nosuch=x")], None, "an unknown selector"),
    ([("match", SET, "client_id=[a")], None, "a bad regex"),
    ([("match", SET, " client_id = x.* ")], None, "spaces around selector and regex"),
    ([("metrics", APPEND, "x")], None, "APPEND to a list key"),
    ([("match", SUBTRACT, "client_id=x")], None, "SUBTRACT from a list key"),
    ([("interval.ms", APPEND, "5")], None, "APPEND to an int key"),
    ([("metrics", SET, None)], None, "a null value"),
    ([("metrics", SET, "a"), ("metrics", DELETE, None)], None, "the same key twice"),
]


def test_incremental_alter_and_describe(ex):
    name = ex.topic_name("sub")
    for v in ex.versions(44):
        sub = f"{name}-{v}"
        for cfgs, rname, scenario in BAD:
            ex.send(44, v, _incremental(sub if rname is None else rname, cfgs, v), scenario=scenario)
        ex.send(44, v, _incremental(sub, [("metrics", SET, "org.apache.kafka.producer., org.apache.kafka.consumer.")],
                                    v, validate_only=True), scenario="validate only")
        ex.send(44, v, _incremental(sub, [("metrics", SET, "org.apache.kafka.producer."), ("interval.ms", SET, "1000"),
                                          ("match", SET, "client_software_name=apache-kafka-java, client_id=app.*")], v),
                scenario="a subscription")
        ex.send(44, v, _incremental(sub, [("metrics", SET, "org.apache.kafka.producer.,org.apache.kafka.consumer.")],
                                    v), scenario="SET again, another value")
        _settled(ex, sub)
        for dv in ex.versions(32):
            ex.send(32, dv, _describe([sub, ex.topic_name("nosuch")], dv), scenario="a subscription, an unknown one")
            ex.send(32, dv, _describe([sub], dv, ["interval.ms", "nosuch"]), scenario="named keys")
        ex.send(32, 4, _describe([""], 4), scenario="an empty name")
        ex.send(44, v, _incremental(sub, [("metrics", DELETE, None), ("interval.ms", DELETE, None),
                                          ("match", DELETE, None)], v), scenario="every key deleted")
        _settled(ex, sub)
        ex.send(32, 4, _describe([sub], 4), scenario="after every key is deleted")


def test_legacy_alter_configs(ex):
    name = ex.topic_name("legacy")
    for v in ex.versions(33):
        ex.send(33, v, req(33, v, resources=[{"resource_type": CLIENT_METRICS, "resource_name": f"{name}-{v}",
                                               "configs": [{"name": "metrics", "value": "a"},
                                                           {"name": "interval.ms", "value": "5000"}]}]),
                scenario="AlterConfigs on a subscription")
        ex.send(33, v, req(33, v, resources=[{"resource_type": CLIENT_METRICS, "resource_name": f"{name}-{v}",
                                               "configs": [{"name": "interval.ms", "value": "5"}]}]),
                scenario="AlterConfigs with a bad interval")
        _settled(ex, f"{name}-{v}")
        ex.send(32, 4, _describe([f"{name}-{v}"], 4), scenario="after AlterConfigs")


def test_list_config_resources(ex):
    name = ex.topic_name("listed")
    ex.send(44, 1, _incremental(name, [("metrics", SET, "*")], 1), scenario="a subscription to list")
    for v in ex.versions(74):
        k, h = ex.send(74, v, req(74, v), compare_=False)
        for r in (k, h):   # the shared pair holds others' subscriptions: compare this test's
            r.config_resources = [c for c in r.config_resources if c.resource_name == name]
        ex.compare(74, v, k, h, scenario="every client metrics resource (this test's compared)")
    k, h = ex.send(74, 1, req(74, 1, resource_types=[4, 8]), scenario="this node as broker and broker-logger")
    k, h = ex.send(74, 1, req(74, 1), compare_=False)
    for r in (k, h):   # every type: the node's own entries and this test's subscription compared
        r.config_resources = [c for c in r.config_resources if c.resource_type in (4, 8) or c.resource_name == name]
    ex.compare(74, 1, k, h, scenario="every type (the node's entries and this test's subscription)")
    for types, scenario in (([CLIENT_METRICS], "client metrics only"), ([99], "an unknown type"),
                            ([1], "type 1 (ANY? not a config type)")):
        k, h = ex.send(74, 1, req(74, 1, resource_types=types), compare_=False)
        for r in (k, h):
            r.config_resources = [c for c in r.config_resources if c.resource_name == name]
        ex.compare(74, 1, k, h, scenario=scenario)


def _tool_both(ex, *args):
    """Run kafka-client-metrics on both brokers; (rc, stdout) asserted equal and returned."""
    outs = []
    for proc in (ex.pair.kafka, ex.pair.hourglass):
        r = run_tool(TOOL, "--bootstrap-server", proc.bootstrap, *args, check=False, timeout=120)
        # the tool's error lines carry the time they were printed
        out = re.sub(r"\d{4}-\d\d-\d\dT[\d:.]+Z", "<time>", r.stdout)
        outs.append((r.returncode, out, r.stderr))
    (krc, kout, kerr), (hrc, hout, herr) = outs
    assert (krc, kout) == (hrc, hout), f"kafka rc {krc}:\n{kout}\n{kerr[-2000:]}\nhourglass rc {hrc}:\n{hout}\n{herr[-2000:]}"
    return krc, kout


def test_kafka_client_metrics_tool(ex):
    name = ex.topic_name("tool")
    rc, out = _tool_both(ex, "--alter", "--name", name, "--metrics", "org.apache.kafka.producer.,org.apache.kafka.consumer.",
                         "--interval", "1000", "--match", "client_software_name=apache-kafka-java")
    assert rc == 0 and name in out
    _settled(ex, name)
    rc, out = _tool_both(ex, "--describe", "--name", name)
    assert rc == 0 and "1000" in out
    rc, out = _tool_both(ex, "--list")
    assert rc == 0 and name in out.split()
    rc, out = _tool_both(ex, "--alter", "--name", name, "--interval", "5")
    assert rc != 0
    rc, out = _tool_both(ex, "--delete", "--name", name)
    assert rc == 0
    _settled(ex, name)
    rc, out = _tool_both(ex, "--list")
    assert name not in out.split()
