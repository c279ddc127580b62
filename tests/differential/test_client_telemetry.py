"""GetTelemetrySubscriptions (71) and PushTelemetry (72) on both brokers: the Kafka oracle with
a client telemetry receiver (tests/java/TelemetrySink, in ``metric.reporters``; Kafka serves
71/72 only with one), Hourglass as it always runs. Both hold the same subscriptions; clients
name the same instance ids, so the subscription ids (a CRC of the metric set and interval XOR
the instance id's hash) are compared as they are. Covered: instance id assignment, matching by
client id, the union of metric prefixes and the lowest interval, ``*``, throttled requests,
unknown subscription ids, unknown compression, too-large payloads, terminating, a zero
instance id, and a real OTLP payload accepted."""
from __future__ import annotations

import uuid

import pytest

from tests.differential.conftest import start_pair, stop_pair
from tests.differential.framework import req
from tests.helpers.java import CLASSES_DIR, ensure_compiled

pytestmark = pytest.mark.xdist_group("differential")

CM, SET = 16, 0


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """This module's pair: Kafka with the telemetry receiver, both with a small payload bound."""
    ensure_compiled()
    p = start_pair(tmp_path_factory, {"metric.reporters": "TelemetrySink", "telemetry.max.bytes": 2048},
                   {"telemetry.max.bytes": 2048}, name="telemetry-pair", kafka_classpath=(CLASSES_DIR,))
    yield p
    stop_pair(p)


def _subscribe(ex, name, **cfgs):
    ex.send(44, 1, req(44, 1, resources=[{"resource_type": CM, "resource_name": name, "configs": [
        {"name": k.replace("_", "."), "config_operation": SET, "value": v} for k, v in cfgs.items()]}]),
        scenario=f"subscription {name}")


def _get(iid):
    return req(71, 0, client_instance_id=iid)


def _push(iid, sid, *, terminating=False, compression=0, metrics=b""):
    return req(72, 0, client_instance_id=iid, subscription_id=sid, terminating=terminating,
               compression_type=compression, metrics=metrics)


def _otlp() -> bytes:
    from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData
    d = MetricsData()
    m = d.resource_metrics.add().scope_metrics.add().metrics.add()
    m.name = "org.apache.kafka.producer.record.queue.time.avg"
    p = m.gauge.data_points.add()
    p.as_double = 1.5
    a = p.attributes.add()
    a.key, a.value.string_value = "client_id", "x"
    return d.SerializeToString()


def test_no_subscription_then_subscriptions(ex):
    iid = uuid.uuid4().bytes
    ex.send(71, 0, _get(iid), scenario="a named instance, no subscription: nothing requested, 5 minutes")
    ex.send(71, 0, _get(iid), scenario="again at once: throttled")
    k, h = ex.send(71, 0, _get(bytes(16)), compare_=False)
    for r in (k, h):
        assert r.error_code == 0 and r.client_instance_id != bytes(16)
        r.client_instance_id, r.subscription_id = b"assigned", 0   # random on each side
    ex.compare(71, 0, k, h, scenario="a zero instance id: one assigned")
    _subscribe(ex, "producers", metrics="org.apache.kafka.producer., org.apache.kafka.consumer.fetch, "
               "org.apache.kafka.consumer.coordinator", interval_ms="1000")
    _subscribe(ex, "others", metrics="*", interval_ms="500", match="client_id=nobody-.*")
    ex.send(71, 0, _get(iid), scenario="after a subscription change: the new set at once")
    iid2 = uuid.uuid4().bytes
    ex.send(71, 0, _get(iid2), scenario="a new instance with two subscriptions, one matching")


def test_push(ex):
    iid = uuid.uuid4().bytes
    k, _h = ex.send(71, 0, _get(iid), scenario="before pushing")
    sid = k.subscription_id
    ex.send(72, 0, _push(bytes(16), sid), scenario="a zero instance id")
    ex.send(72, 0, _push(iid, sid + 1), scenario="an unknown subscription id")
    ex.send(72, 0, _push(iid, sid), scenario="after the refused push: too soon")
    iid = uuid.uuid4().bytes
    k, _h = ex.send(71, 0, _get(iid), scenario="another instance")
    sid = k.subscription_id
    ex.send(72, 0, _push(iid, sid, compression=9), scenario="an unknown compression id")
    iid = uuid.uuid4().bytes
    k, _h = ex.send(71, 0, _get(iid), scenario="another instance")
    sid = k.subscription_id
    ex.send(72, 0, _push(iid, sid, metrics=b"\0" * 4096), scenario="a payload over telemetry.max.bytes")
    iid = uuid.uuid4().bytes
    k, _h = ex.send(71, 0, _get(iid), scenario="another instance")
    sid = k.subscription_id
    from protocol.records.compression import compress
    ex.send(72, 0, _push(iid, sid, compression=4, metrics=compress(4, _otlp())), scenario="an OTLP payload, zstd")
    ex.send(72, 0, _push(iid, sid, metrics=_otlp()), scenario="again at once: throttled")
    ex.send(72, 0, _push(iid, sid, terminating=True, metrics=_otlp()), scenario="terminating: accepted at once")
    ex.send(72, 0, _push(iid, sid, terminating=True), scenario="after terminating")
