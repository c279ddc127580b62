"""The Schema Registry's figures in the broker's ``/metrics`` (a metric collector wired in by
``hourglass.app``): nothing while the registry does not serve."""
from __future__ import annotations

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily


def metric_families(broker):
    registry = getattr(broker, "schema_registry", None)  # schema_registry.store.SchemaStore when served
    if registry is None:
        return
    counts = registry.counts()
    yield GaugeMetricFamily("hourglass_schema_registry_schemas", "Schema ids held by the Schema Registry",
                            value=counts["schemas"])
    yield GaugeMetricFamily("hourglass_schema_registry_subjects", "Subjects with a live version",
                            value=counts["subjects"])
    yield GaugeMetricFamily("hourglass_schema_registry_versions", "Live (not deleted) subject versions",
                            value=counts["versions"])
    c = CounterMetricFamily("hourglass_schema_registry_requests", "Schema Registry HTTP answers, per status",
                            labels=["status"])
    for status, n in sorted(getattr(registry, "request_stats", {}).items()):
        c.add_metric([str(status)], n)
    yield c
