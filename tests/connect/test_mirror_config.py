"""The pure decisions behind ``hourglass mirror-config`` and ``hourglass copy-window``."""
from __future__ import annotations

import pytest

from hourglass.cli.mirror import MirrorConfigError, mm2_properties, render, window_bounds


def test_one_flow_identity_names_and_offsets_synced_exactly():
    p = mm2_properties(source_bootstrap="localhost:9092", target_bootstrap="k1:9092,k2:9092")
    assert p["clusters"] == "hourglass, kafka"
    assert p["hourglass->kafka.enabled"] == "true" and p["kafka->hourglass.enabled"] == "false"
    assert p["kafka->hourglass.emit.heartbeats.enabled"] == "false"  # nothing written to Hourglass
    assert p["offset-syncs.topic.location"] == "target"
    assert p["replication.policy.class"].endswith("IdentityReplicationPolicy")
    assert p["sync.group.offsets.enabled"] == "true" and p["offset.lag.max"] == "0"
    # the offset syncs leave with the worker's offset commit: as often as the group sync (a worker
    # setting, under the target's alias in dedicated mode)
    assert p["kafka.offset.flush.interval.ms"] == str(int(p["sync.group.offsets.interval.seconds"]) * 1000)
    assert p["replication.factor"] == "3" and p["offset.storage.replication.factor"] == "3"


def test_security_settings_go_under_each_alias_and_nothing_else_does():
    src = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
           "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required username="a" password="b";',
           "ssl.truststore.location": "/etc/ca.pem", "ssl.truststore.type": "PEM", "group.id": "not-a-cluster-key",
           "bootstrap.servers": "ignored:1"}
    p = mm2_properties(source_bootstrap="hg:9093", target_bootstrap="k:9092", source_client=src,
                       target_client={"security.protocol": "SSL"})
    assert p["hourglass.security.protocol"] == "SASL_SSL"
    assert p["hourglass.sasl.mechanism"] == "SCRAM-SHA-512"
    assert p["hourglass.ssl.truststore.location"] == "/etc/ca.pem"
    assert p["hourglass.bootstrap.servers"] == "hg:9093"
    assert "hourglass.group.id" not in p
    assert p["kafka.security.protocol"] == "SSL"
    assert "\\\\" in render({"x": "C:\\ca.pem"})  # Java properties escape backslashes


def test_prefixed_names_and_exactly_once():
    p = mm2_properties(source_bootstrap="a:1", target_bootstrap="b:1", keep_topic_names=False, exactly_once=True,
                       source_alias="prod", target_alias="local", replication_factor=1)
    assert "replication.policy.class" not in p
    assert p["local.exactly.once.source.support"] == "enabled" and p["prod->local.enabled"] == "true"


@pytest.mark.parametrize("kw", [dict(source_alias="same", target_alias="same"), dict(source_alias="a b"),
                                dict(replication_factor=0)])
def test_bad_input_is_refused(kw):
    with pytest.raises(MirrorConfigError):
        mm2_properties(source_bootstrap="a:1", target_bootstrap="b:1", **kw)


def test_window_bounds():
    ends = {0: 100, 1: 50, 2: 10}
    # partition 0: window inside; 1: open end (no record at or after until); 2: nothing at or after since
    got = window_bounds({0: 20, 1: 30, 2: -1}, {0: 40, 1: -1, 2: -1}, ends)
    assert got == {0: (20, 40), 1: (30, 50), 2: (10, 10)}
    # a stop before the start (out-of-order timestamps) is an empty window, never a negative one
    assert window_bounds({0: 20}, {0: 10}, {0: 100}) == {0: (20, 20)}
