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
    now = broker.clock.now_ms()
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
    for topic in lake.enabled_topics():
        st = lake.state.get(topic)
        rows.add_metric([topic], st.rows if st else 0)
        commits.add_metric([topic], st.snapshots if st else 0)
        n = lake.lag(topic)
        lag.add_metric([topic], n)
        since = st.behind_since_ms if st else None
        lag_s.add_metric([topic], 0 if n == 0 or since is None else max(now - since, 0) / 1000)
        if st is not None and st.last_commit_ms is not None:
            last.add_metric([topic], st.last_commit_ms / 1000)
    yield from (rows, commits, lag, lag_s, last)
    yield CounterMetricFamily("hourglass_iceberg_translation_failures",
                              "Translation rounds that failed (retried, resuming from the table)",
                              value=lake.stats.failures)
