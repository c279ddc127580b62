"""broker.pushed_metrics: OTLP payloads decoded into series (gauges, sums, histograms' count
and sum), the bound on their number (least recently pushed first out), expiry after the client
stops pushing, and unreadable payloads refused."""
from __future__ import annotations

import pytest
from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData

from broker.pushed_metrics import PushedMetrics, decode, families, prometheus_name
from protocol.records.compression import compress


def payload(points: dict[str, float], attrs=(("node", "1"),)) -> bytes:
    d = MetricsData()
    sm = d.resource_metrics.add().scope_metrics.add()
    for name, value in points.items():
        m = sm.metrics.add()
        m.name = name
        p = (m.sum if name.endswith("total") else m.gauge).data_points.add()
        p.as_double = value
        for k, v in attrs:
            a = p.attributes.add()
            a.key, a.value.string_value = k, v
    h = sm.metrics.add()
    h.name = "lat"
    hp = h.histogram.data_points.add()
    hp.count, hp.sum = 3, 7.5
    return d.SerializeToString()


def client(i):
    return {"client_instance_id": f"i{i}", "client_id": f"c{i}", "client_software_name": "x",
            "client_software_version": "1"}


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_decode_every_codec(codec):
    got = decode(codec, compress(codec, payload({"a.b": 1.0, "req.total": 5.0})))
    assert sorted((n, v) for n, _a, v in got) == [("a.b", 1.0), ("lat.count", 3.0), ("lat.sum", 7.5),
                                                 ("req.total", 5.0)]
    assert all(a == (("node", "1"),) for n, a, _v in got if not n.startswith("lat"))


def test_unreadable_payload():
    with pytest.raises(ValueError):
        decode(0, b"\xff" * 10)
    with pytest.raises(ValueError):
        decode(4, b"not zstd")


def test_bound_and_expiry():
    now = [0.0]
    pm = PushedMetrics(max_series=5, clock=lambda: now[0])
    pm.accept(client(1), 1000, 0, payload({"a": 1.0}))          # 3 series: a, lat.count, lat.sum
    pm.accept(client(2), 10_000, 0, payload({"a": 2.0}))        # 3 more: client 1's oldest goes
    assert len(pm.current()) == 5
    assert {s.client[0] for s in pm.current()} == {"i1", "i2"}
    now[0] = 3.5                                                # 3 push intervals of client 1 passed
    assert {s.client[0] for s in pm.current()} == {"i2"}
    pm.accept(client(2), 10_000, 0, payload({"a": 4.0}))        # a new value replaces the old one
    assert [s.value for s in pm.current() if s.metric == "a"] == [4.0]


def test_prometheus_families():
    from prometheus_client.core import GaugeMetricFamily
    pm = PushedMetrics()
    pm.accept(client(1), 1000, 0, payload({"org.apache.kafka.producer.rate": 2.0}))
    fams = {f.name: f for f in families(pm, GaugeMetricFamily)}
    f = fams[prometheus_name("org.apache.kafka.producer.rate")]
    assert f.name == "hourglass_client_telemetry_org_apache_kafka_producer_rate"
    (s,) = f.samples
    assert s.value == 2.0 and s.labels == {**client(1), "node": "1"}
