"""The topics' tables in the broker's ``/metrics`` (a metric collector wired in by
``hourglass.app``): per topic with ``iceberg.mode`` on, rows and snapshots committed since the
broker started, how far the table trails the log in offsets (committed records not yet in the
table) and in time (how long it has trailed: 0 when caught up), and the last commit's time."""
from __future__ import annotations

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily


def metric_families(broker):
    lake = getattr(broker, "lakehouse", None)  # lakehouse.service.IcebergTopics
    if lake is None:
        return
    rows = CounterMetricFamily("hourglass_iceberg_rows", "Rows committed to the topic's Iceberg table since start",
                               labels=["topic"])
    commits = CounterMetricFamily("hourglass_iceberg_commits", "Iceberg snapshots committed since start",
                                  labels=["topic"])
    lag = GaugeMetricFamily("hourglass_iceberg_lag_offsets",
                            "Committed records of the topic not yet in its table (all partitions)", labels=["topic"])
    lag_s = GaugeMetricFamily("hourglass_iceberg_lag_seconds",
                              "How long the table has trailed the log (0: caught up)", labels=["topic"])
    last = GaugeMetricFamily("hourglass_iceberg_last_commit_timestamp_seconds",
                             "When this broker last committed a snapshot of the table", labels=["topic"])
    dead = CounterMetricFamily("hourglass_iceberg_dead_letters",
                               "Records written to the topic's dead-letter table <topic>~dlq since start "
                               "(Redpanda's redpanda_iceberg_translation_invalid_records)", labels=["topic"])
    for topic in lake.enabled_topics():
        v = lake.table_view(topic)
        rows.add_metric([topic], v["rows_since_start"])
        commits.add_metric([topic], v["commits_since_start"])
        lag.add_metric([topic], v["lag_offsets"])
        lag_s.add_metric([topic], v["lag_seconds"])
        dead.add_metric([topic], v["dead_letters_since_start"])
        if v["last_commit_ms"] is not None:
            last.add_metric([topic], v["last_commit_ms"] / 1000)
    yield from (rows, commits, lag, lag_s, last, dead)
    yield CounterMetricFamily("hourglass_iceberg_translation_failures",
                              "Translation rounds that failed (retried, resuming from the table)",
                              value=lake.stats.failures)
