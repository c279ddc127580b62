"""The broker's metrics: plain counters on the hot path, Prometheus exposition at scrape time.

Updating a metric is a dict increment (or a bisect for a latency bucket) per request or per
partition, never per record: records in/out are counted from batch headers. Partition gauges
(log start/end offset, size), segment, cleaner, group and transaction counters are read from their owners
when scraped, so nothing is kept twice.

``metrics.port`` (off by default; 0 picks a free port) serves, on the broker's own event loop:
``/metrics`` (Prometheus text format) and ``/health`` (200 ``ok`` while the broker serves).
"""
from __future__ import annotations

import asyncio
import bisect
import logging
from collections import Counter, defaultdict

log = logging.getLogger(__name__)

# request latency buckets (seconds), as Prometheus' defaults but finer at the low end
BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    def __init__(self) -> None:
        self.requests: Counter = Counter()          # (api key, version)
        self.errors: Counter = Counter()            # (api key, error code)
        self.failed: Counter = Counter()            # (api key, version): handler failures
        self.rejected: Counter = Counter()          # reason: closed connections
        self.latency_sum: defaultdict = defaultdict(float)               # api key
        self.latency_buckets: dict[int, list[int]] = {}                  # api key -> counts
        self.bytes_in: Counter = Counter()          # topic
        self.bytes_out: Counter = Counter()         # topic
        self.records_in: Counter = Counter()        # topic
        self.records_out: Counter = Counter()       # topic
        self.connections_open = 0
        self.connections_total = 0

    def request_started(self, api_key: int, version: int) -> None:
        self.requests[(api_key, version)] += 1

    def request_done(self, api_key: int, version: int, seconds: float) -> None:
        self.latency_sum[api_key] += seconds
        b = self.latency_buckets.get(api_key)
        if b is None:
            b = self.latency_buckets[api_key] = [0] * (len(BUCKETS) + 1)
        b[bisect.bisect_left(BUCKETS, seconds)] += 1

    def error(self, api_key: int, code: int) -> None:
        self.errors[(api_key, code)] += 1


def quota_families(broker, Gauge, Counter):
    """Per-client quota metrics (Kafka's byte-rate / request-time and throttle-time sensors),
    labelled by quota type and the (user, client-id) the client's usage is counted under."""
    q = broker.quotas
    rate = Gauge("hourglass_client_quota_rate", "Measured rate over the quota window (bytes/s; request: "
                 "percent of one thread)", labels=["quota", "user", "client_id"])
    bound = Gauge("hourglass_client_quota_limit", "The quota that applies", labels=["quota", "user", "client_id"])
    ttot = Counter("hourglass_client_quota_throttle_time_ms", "Throttle time given, ms",
                   labels=["quota", "user", "client_id"])
    tcnt = Counter("hourglass_client_quota_throttled", "Responses throttled", labels=["quota", "user", "client_id"])
    if q is not None:
        import time
        now = int(time.time() * 1000)
        for m in q.managers:
            for (user, client), s in sorted(m.sensors.items()):
                labels = [m.name, user, client]
                if hasattr(s.rate, "window_ms"):  # a Rate (the mutation quota's bucket has no rate)
                    rate.add_metric(labels, s.rate.measure(now))
                if s.bound is not None:
                    bound.add_metric(labels, s.bound)
                ttot.add_metric(labels, s.throttle_total_ms)
                tcnt.add_metric(labels, s.throttle_count)
    return rate, bound, ttot, tcnt


class BrokerCollector:
    """A prometheus_client collector over one broker (its own registry: several embedded
    brokers in one process do not share metrics)."""

    def __init__(self, broker):
        self.broker = broker

    def collect(self):
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
        from protocol.api_keys import APIS
        from protocol.errors import ErrorCode
        b, m = self.broker, self.broker.metrics

        def api(k):
            return APIS[k].name if k in APIS else str(k)

        c = CounterMetricFamily("hourglass_requests", "Requests handled, per API and version", labels=["api", "version"])
        for (k, v), n in sorted(m.requests.items()):
            c.add_metric([api(k), str(v)], n)
        yield c
        c = CounterMetricFamily("hourglass_request_errors", "Error codes answered, per API and error",
                                labels=["api", "error"])
        for (k, code), n in sorted(m.errors.items()):
            try:
                name = ErrorCode(code).name
            except ValueError:
                name = str(code)
            c.add_metric([api(k), name], n)
        yield c
        c = CounterMetricFamily("hourglass_request_failures", "Requests whose handler failed (connection closed)",
                                labels=["api", "version"])
        for (k, v), n in sorted(m.failed.items()):
            c.add_metric([api(k), str(v)], n)
        yield c
        c = CounterMetricFamily("hourglass_rejected_connections", "Connections closed for bad input, per reason",
                                labels=["reason"])
        for reason, n in sorted(m.rejected.items()):
            c.add_metric([reason], n)
        yield c
        h = HistogramMetricFamily("hourglass_request_latency_seconds", "Request handling time, per API",
                                  labels=["api"])
        for k, counts in sorted(m.latency_buckets.items()):
            acc, buckets = 0, []
            for le, n in zip([*map(str, BUCKETS), "+Inf"], counts):
                acc += n
                buckets.append((le, acc))
            h.add_metric([api(k)], buckets, m.latency_sum[k])
        yield h
        for name, doc, counter in (("bytes_in", "Record batch bytes appended", m.bytes_in),
                                   ("bytes_out", "Record batch bytes fetched", m.bytes_out),
                                   ("records_in", "Records appended", m.records_in),
                                   ("records_out", "Records fetched (from batch headers)", m.records_out)):
            c = CounterMetricFamily(f"hourglass_topic_{name}", doc + ", per topic", labels=["topic"])
            for t, n in sorted(counter.items()):
                c.add_metric([t], n)
            yield c
        start = GaugeMetricFamily("hourglass_log_start_offset", "Log start offset", labels=["topic", "partition"])
        end = GaugeMetricFamily("hourglass_log_end_offset", "Log end offset", labels=["topic", "partition"])
        size = GaugeMetricFamily("hourglass_log_size_bytes", "Bytes in the partition's segments",
                                 labels=["topic", "partition"])
        nseg = GaugeMetricFamily("hourglass_log_segments", "Segments in the partition", labels=["topic", "partition"])
        rolled = deleted = 0
        for plog in (b.logs.all_logs() if b.logs is not None else []):
            lab = [plog.topic, str(plog.partition)]
            start.add_metric(lab, plog.log_start_offset)
            end.add_metric(lab, plog.log_end_offset)
            size.add_metric(lab, plog.size_in_bytes)
            nseg.add_metric(lab, plog.num_segments)
            rolled += plog.segments_rolled
            deleted += plog.segments_deleted
        yield from (start, end, size, nseg)
        yield from quota_families(b, GaugeMetricFamily, CounterMetricFamily)
        pushed = getattr(b, "pushed_metrics", None)
        if pushed is not None:   # what clients push with PushTelemetry (KIP-714)
            from broker.pushed_metrics import families
            yield from families(pushed, GaugeMetricFamily)
        yield CounterMetricFamily("hourglass_segments_rolled", "Segments rolled (open logs)", value=rolled)
        yield CounterMetricFamily("hourglass_segments_deleted", "Segments deleted by retention (open logs)",
                                  value=deleted)
        cleaner = getattr(b, "cleaner", None)
        yield CounterMetricFamily("hourglass_cleaner_runs", "Logs cleaned by the log cleaner",
                                  value=getattr(cleaner, "logs_cleaned", 0))
        yield CounterMetricFamily("hourglass_cleaner_bytes_reclaimed", "Bytes the log cleaner removed",
                                  value=getattr(cleaner, "bytes_reclaimed", 0))
        yield GaugeMetricFamily("hourglass_connections_open", "Open client connections", value=m.connections_open)
        yield CounterMetricFamily("hourglass_connections", "Client connections accepted", value=m.connections_total)
        lag = getattr(b, "loop_lag", None)
        if lag is not None:
            yield GaugeMetricFamily("hourglass_event_loop_lag_max_seconds",
                                    "The longest the event loop ran a due timer late over the last minute (the "
                                    "longest loop iteration, or time off the CPU)", value=lag.max_lag())
            yield GaugeMetricFamily("hourglass_event_loop_lag_seconds", "How late the event loop ran its last probe "
                                    f"timer (armed every {lag.interval * 1000:.0f} ms)", value=lag.last_lag)
            yield GaugeMetricFamily("hourglass_event_loop_longest_callback_seconds",
                                    "The most CPU the event loop thread used between two probe ticks over the last "
                                    "minute (bounds the longest callback from above)", value=lag.max_busy())
            yield CounterMetricFamily("hourglass_event_loop_stalls", f"Probe ticks {lag.warn_s:.0f} s or more late",
                                      value=lag.stalls)
        yield CounterMetricFamily("hourglass_group_rebalances", "Consumer group rebalances started",
                                  value=getattr(b.groups, "rebalances", 0))
        for collector in b.extensions.metric_collectors:  # e.g. the Schema Registry's (hourglass.app)
            yield from collector(b)
        txn = getattr(b.txn, "counters", None)
        for name, doc in (("begun", "Transactions begun (first partition added)"),
                          ("committed", "Transactions committed (markers written)"),
                          ("aborted", "Transactions aborted (markers written), timed-out ones included"),
                          ("timed_out", "Transactions the coordinator aborted after transaction.timeout.ms")):
            yield CounterMetricFamily(f"hourglass_transactions_{name}", doc, value=getattr(txn, name, 0))


class MetricsServer:
    """``/metrics`` and ``/health`` over HTTP/1.0 on the broker's loop (scrapes see a
    consistent broker state: no other thread reads it)."""

    def __init__(self, broker, host: str, port: int):
        from prometheus_client import CollectorRegistry
        self.broker, self.host, self.port = broker, host, port
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(BrokerCollector(broker))
        self.server = None
        self.bound: tuple[str, int] | None = None

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, self.host, self.port)
        self.bound = self.server.sockets[0].getsockname()[:2]
        log.info("metrics on http://%s:%d/metrics", *self.bound)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
        try:
            line = await asyncio.wait_for(reader.readline(), 5)
            while (await asyncio.wait_for(reader.readline(), 5)) not in (b"\r\n", b"\n", b""):
                pass  # headers are not needed
            parts = line.decode("latin-1").split()
            path = parts[1].split("?", 1)[0] if len(parts) >= 2 else ""
            if path == "/metrics":
                status, ctype, body = "200 OK", CONTENT_TYPE_LATEST, generate_latest(self.registry)
            elif path == "/health":
                ok = not self.broker._stopping
                status, ctype, body = ("200 OK" if ok else "503 Service Unavailable"), "text/plain", \
                    (b"ok\n" if ok else b"stopping\n")
            else:
                status, ctype, body = "404 Not Found", "text/plain", b"try /metrics or /health\n"
            writer.write(f"HTTP/1.0 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                         f"Connection: close\r\n\r\n".encode() + body)
            await writer.drain()
        except (asyncio.TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
