"""In-process counters the broker keeps for itself (requests per API/version, latency,
bytes in/out, connections). A Prometheus exporter can read them; updating them is a dict
increment on the hot path."""
from __future__ import annotations

from collections import Counter, defaultdict


class Metrics:
    def __init__(self) -> None:
        self.requests: Counter = Counter()
        self.errors: Counter = Counter()
        self.latency_sum: defaultdict = defaultdict(float)
        self.bytes_in: Counter = Counter()
        self.bytes_out: Counter = Counter()
        self.records_in: Counter = Counter()
        self.connections_open = 0

    def request_started(self, api_key: int, version: int) -> None:
        self.requests[(api_key, version)] += 1

    def request_done(self, api_key: int, version: int, seconds: float) -> None:
        self.latency_sum[(api_key, version)] += seconds

    def error(self, api_key: int, code: int) -> None:
        self.errors[(api_key, code)] += 1
