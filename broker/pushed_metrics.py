"""The metrics clients push with PushTelemetry (KIP-714), kept for the broker's ``/metrics``:
Kafka hands them to an exporter plugin and drops them without one; Hourglass keeps the last
value of each series.

A payload is an OpenTelemetry ``MetricsData`` protobuf (decoded with the ``opentelemetry-proto``
package) compressed with a Kafka compression id. Each gauge and sum data point becomes one
series: (client instance, metric name, the point's attributes) -> its last value; histograms
and summaries give their ``_count`` and ``_sum``. Every series carries the client's labels
(instance id, client id, software name and version). Invariants: at most ``max_series``
series are kept (the least recently pushed go first), and a client's series expire
``3 x`` its push interval after its last push (a client that stopped pushing disappears).
A payload that does not decompress or decode raises ``ValueError`` (PushTelemetry answers
INVALID_RECORD, as Kafka does when its exporter fails).
"""
from __future__ import annotations

import re
import time
from collections import OrderedDict
from dataclasses import dataclass

CLIENT_LABELS = ("client_instance_id", "client_id", "client_software_name", "client_software_version")
MAX_SERIES = 10_000


@dataclass
class Series:
    metric: str
    client: tuple[str, ...]               # CLIENT_LABELS values
    attributes: tuple[tuple[str, str], ...]
    value: float
    expires: float


def prometheus_name(metric: str) -> str:
    """A Prometheus metric name for an OTLP metric name: ``hourglass_client_telemetry_`` + the name with
    every character outside ``[a-zA-Z0-9_]`` as ``_``."""
    return "hourglass_client_telemetry_" + re.sub(r"[^a-zA-Z0-9_]", "_", metric)


def _attr_value(v) -> str:
    kind = v.WhichOneof("value")
    return "" if kind is None else str(getattr(v, kind))


def decode(compression: int, payload: bytes) -> list[tuple[str, tuple[tuple[str, str], ...], float]]:
    """[(metric name, sorted point attributes, value)] of a pushed payload; ValueError if it is
    not a compressed MetricsData."""
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData

    from protocol.records.compression import decompress
    try:
        raw = decompress(compression, payload)
        data = MetricsData.FromString(raw)
    except (DecodeError, Exception) as exc:
        raise ValueError(f"not an OTLP MetricsData ({type(exc).__name__}: {exc})") from None
    out = []
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                kind = m.WhichOneof("data")
                if kind in ("gauge", "sum"):
                    for p in getattr(m, kind).data_points:
                        attrs = tuple(sorted((a.key, _attr_value(a.value)) for a in p.attributes))
                        value = p.as_double if p.WhichOneof("value") == "as_double" else float(p.as_int)
                        out.append((m.name, attrs, value))
                elif kind in ("histogram", "exponential_histogram", "summary"):
                    for p in getattr(m, kind).data_points:
                        attrs = tuple(sorted((a.key, _attr_value(a.value)) for a in p.attributes))
                        out.append((m.name + ".count", attrs, float(p.count)))
                        out.append((m.name + ".sum", attrs, float(p.sum)))
    return out


class PushedMetrics:
    """The kept series, least recently pushed first."""

    def __init__(self, max_series: int = MAX_SERIES, clock=time.monotonic):
        self.max_series = max_series
        self.clock = clock
        self.series: OrderedDict[tuple, Series] = OrderedDict()

    def accept(self, client: dict, interval_ms: int, compression: int, payload: bytes) -> int:
        """Keep the points of one push from a client (``client``: its CLIENT_LABELS); returns
        how many points were kept. Raises ValueError for an unreadable payload."""
        points = decode(compression, payload)
        labels = tuple(str(client.get(k) or "") for k in CLIENT_LABELS)
        expires = self.clock() + 3 * interval_ms / 1000
        for name, attrs, value in points:
            key = (labels[0], name, attrs)
            self.series.pop(key, None)
            self.series[key] = Series(name, labels, attrs, value, expires)
        for key, s in list(self.series.items()):   # the client's series it did not push again
            if s.client[0] == labels[0]:
                s.expires = expires
        while len(self.series) > self.max_series:
            self.series.popitem(last=False)
        return len(points)

    def current(self) -> list[Series]:
        """The series not expired (expired ones are dropped)."""
        now = self.clock()
        for key in [k for k, s in self.series.items() if s.expires <= now]:
            del self.series[key]
        return list(self.series.values())

    def clients(self) -> dict[str, dict]:
        """client instance id -> {labels, metrics: {name: [(attributes, value)]}} (the console's view)."""
        out: dict[str, dict] = {}
        for s in self.current():
            c = out.setdefault(s.client[0], {"labels": dict(zip(CLIENT_LABELS, s.client)), "metrics": {}})
            c["metrics"].setdefault(s.metric, []).append((dict(s.attributes), s.value))
        return out


def families(pushed: PushedMetrics, GaugeMetricFamily):
    """One Prometheus gauge family per pushed metric name, a sample per client and attribute set."""
    by_name: dict[str, list[Series]] = {}
    for s in pushed.current():
        by_name.setdefault(s.metric, []).append(s)
    for metric, series in sorted(by_name.items()):
        attr_keys = sorted({re.sub(r"[^a-zA-Z0-9_]", "_", k) for s in series for k, _ in s.attributes}
                           - set(CLIENT_LABELS))
        fam = GaugeMetricFamily(prometheus_name(metric), f"Pushed by clients (KIP-714): {metric}",
                                labels=[*CLIENT_LABELS, *attr_keys])
        for s in series:
            attrs = {re.sub(r"[^a-zA-Z0-9_]", "_", k): v for k, v in s.attributes}
            fam.add_metric([*s.client, *(attrs.get(k, "") for k in attr_keys)], s.value)
        yield fam
