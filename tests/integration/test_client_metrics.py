"""Client metrics (KIP-714) on one broker over the wire: subscriptions kept across a restart
(and a kill -9), listed by ListConfigResources, and the telemetry exchange of a client:
GetTelemetrySubscriptions assigning an instance id and answering the matching subscriptions,
PushTelemetry's refusals (unknown subscription id, too frequent, too large, unknown
compression, after terminating) and a subscription change seen at the next request."""
from __future__ import annotations

import pytest

from hourglass.cli.wire import WireClient
from protocol.errors import ErrorCode as E
from tests.differential.framework import req
from tests.helpers.broker import BrokerProcess

CM = 16


def alter(c, name, cfgs, v=1):
    r = c.request(44, v, req(44, v, resources=[{"resource_type": CM, "resource_name": name, "configs": [
        {"name": k, "config_operation": 0 if val is not None else 1, "value": val} for k, val in cfgs.items()]}]))
    return r.responses[0]


def describe(c, name):
    r = c.request(32, 4, req(32, 4, resources=[{"resource_type": CM, "resource_name": name,
                                                  "configuration_keys": None}]))
    return {e.name: e.value for e in r.results[0].configs if e.config_source == 7}   # the keys set


def listed(c, v=0):
    return sorted(x.resource_name for x in c.request(74, v, req(74, v)).config_resources if x.resource_type == CM)


@pytest.fixture
def broker(tmp_path):
    b = BrokerProcess(tmp_path / "d", {"telemetry.max.bytes": 64}).start()
    yield b
    b.kill()


@pytest.mark.parametrize("crash", [False, True])
def test_subscriptions_survive_restart(broker, crash):
    c = WireClient(broker.bootstrap)
    assert alter(c, "s1", {"metrics": "org.apache.kafka.producer.", "interval.ms": "1000"}).error_code == 0
    assert alter(c, "s2", {"metrics": "*", "match": "client_id=app-.*"}).error_code == 0
    bad = alter(c, "s3", {"interval.ms": "10"})
    assert (bad.error_code, bad.error_message) == (
        E.INVALID_REQUEST, "Invalid value 10 for interval.ms, interval must be between 100 and 3600000 (1 hour)")
    c.close()
    broker.restart(crash=crash)
    c = WireClient(broker.bootstrap)
    assert listed(c) == ["s1", "s2"] and listed(c, 1) == ["s1", "s2"]
    assert describe(c, "s1") == {"metrics": "org.apache.kafka.producer.", "interval.ms": "1000"}
    assert alter(c, "s1", {"metrics": None, "interval.ms": None}).error_code == 0
    assert listed(c) == ["s2"]
    c.close()


def get(c, iid=bytes(16)):
    return c.request(71, 0, req(71, 0, client_instance_id=iid))


def push(c, iid, sid, data=b"", terminating=False, compression=0):
    return c.request(72, 0, req(72, 0, client_instance_id=iid, subscription_id=sid, terminating=terminating,
                                compression_type=compression, metrics=data)).error_code


def test_telemetry_exchange(broker):
    c = WireClient(broker.bootstrap, client_id="app-1")
    g = get(c)
    assert g.error_code == 0 and g.client_instance_id != bytes(16)
    assert (g.requested_metrics, g.push_interval_ms, g.telemetry_max_bytes, g.delta_temporality) == ([], 300000, 64, True)
    assert g.accepted_compression_types == [4, 3, 1, 2]
    iid = g.client_instance_id
    assert get(c, iid).error_code == E.THROTTLING_QUOTA_EXCEEDED   # before one push interval
    assert push(c, iid, g.subscription_id + 1) == E.UNKNOWN_SUBSCRIPTION_ID
    assert push(c, iid, g.subscription_id) == E.THROTTLING_QUOTA_EXCEEDED   # the refused push counted
    assert push(c, bytes(16), 0) == E.INVALID_REQUEST
    # a subscription that selects this client: seen at once, with a new subscription id
    assert alter(c, "mine", {"metrics": "org.apache.kafka.consumer.,org.apache.kafka.producer.",
                             "interval.ms": "200", "match": "client_id=app-.*"}).error_code == 0
    assert alter(c, "other", {"metrics": "*", "match": "client_id=nobody"}).error_code == 0
    g2 = get(c, iid)
    assert g2.error_code == 0 and g2.client_instance_id == iid and g2.subscription_id != g.subscription_id
    assert sorted(g2.requested_metrics) == ["org.apache.kafka.consumer.", "org.apache.kafka.producer."]
    assert g2.push_interval_ms == 200
    sid = g2.subscription_id
    assert push(c, iid, sid, compression=9) == E.UNSUPPORTED_COMPRESSION_TYPE
    c2 = WireClient(broker.bootstrap, client_id="app-2")
    g3 = get(c2)
    assert push(c2, g3.client_instance_id, g3.subscription_id, data=b"x" * 65) == E.TELEMETRY_TOO_LARGE
    assert push(c2, g3.client_instance_id, g3.subscription_id, data=b"\xff" * 10, terminating=True) == E.INVALID_RECORD
    assert push(c2, g3.client_instance_id, g3.subscription_id, terminating=True) == E.INVALID_REQUEST
    c.close()
    c2.close()


def test_librdkafka_pushes_metrics_onto_metrics_endpoint(tmp_path):
    """A librdkafka producer with ``enable.metrics.push`` (KIP-714) subscribed by a client_id
    match: what it pushes appears on /metrics labelled with its instance, client id and software;
    after it closes (a terminating push) and its series expire, they are gone."""
    import urllib.request

    from confluent_kafka import Producer
    from prometheus_client.parser import text_string_to_metric_families

    from tests.everyday.test_metrics import _metrics_url
    from tests.helpers.clients import wait_until

    b = BrokerProcess(tmp_path / "d", {"metrics.port": 0}).start()
    try:
        c = WireClient(b.bootstrap)
        assert alter(c, "rdkafka", {"metrics": "org.apache.kafka.producer.", "interval.ms": "500",
                                    "match": "client_id=pusher-.*"}).error_code == 0
        c.close()
        url = _metrics_url(b)

        def pushed():
            text = urllib.request.urlopen(url + "/metrics", timeout=5).read().decode()
            return [s for fam in text_string_to_metric_families(text) if fam.name.startswith("hourglass_client_telemetry_")
                    for s in fam.samples]
        p = Producer({"bootstrap.servers": b.bootstrap, "client.id": "pusher-1", "enable.metrics.push": True})
        p.produce("t", b"v")
        p.flush(10)
        wait_until(lambda: pushed(), timeout=30, what="pushed client metrics on /metrics")
        samples = pushed()
        assert all(s.labels["client_id"] == "pusher-1" and s.labels["client_software_name"]
                   and s.labels["client_instance_id"] for s in samples), samples[:3]
        assert any("producer" in s.name for s in samples)
        assert not b.log_text().count("INVALID_RECORD")
    finally:
        b.kill()


def test_java_4_4_consumer_pushes_metrics(tmp_path):
    """A Kafka 4.4 Java consumer (metrics push is on by default) subscribed by its software name
    and version pushes its metrics while it polls: they appear on /metrics."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    from tests.everyday.test_metrics import _metrics_url
    from tests.helpers.java import run_java

    b = BrokerProcess(tmp_path / "d", {"metrics.port": 0}).start()
    try:
        with WireClient(b.bootstrap) as c:
            assert alter(c, "java", {"metrics": "org.apache.kafka.consumer.", "interval.ms": "500",
                                     "match": "client_software_name=apache-kafka-java, client_software_version=4\\.4\\..*"}
                         ).error_code == 0
        # polls an empty partition for 4 s: several push intervals
        run_java(["consume", "--bootstrap", b.bootstrap, "--topic", "jt", "--partition", 0, "--from-offset", 0,
                  "--count", 1, "--timeout-ms", 4000], clients="4.4.0", check=False)
        text = urllib.request.urlopen(_metrics_url(b) + "/metrics", timeout=5).read().decode()
        samples = [s for fam in text_string_to_metric_families(text)
                   if fam.name.startswith("hourglass_client_telemetry_org_apache_kafka_consumer_") for s in fam.samples]
        assert samples and all(s.labels["client_software_name"] == "apache-kafka-java"
                               and s.labels["client_software_version"] == "4.4.0" for s in samples)
    finally:
        b.kill()
