"""The fetch (``consumer_byte_rate``) and request (``request_percentage``) quotas of one read,
as Kafka's handleFetchRequest and handleShareFetchRequest apply them to Fetch and ShareFetch
alike: a read never takes more at once than the fetch quota's window can hold; after it, the
request's handling time and the response's bytes are recorded, and over either quota the
answer carries the throttle time and no records, with the bytes taken back (the client will
fetch them again once its throttle is over)."""
from __future__ import annotations

import time

from broker.quotas.manager import user_of


class FetchQuota:
    """One request's view of the broker's quotas. ``applies`` is False when no quota can
    throttle it (no quotas configured, or neither the fetch nor the request quota on)."""

    __slots__ = ("quotas", "fq", "user", "client")

    def __init__(self, ctx):
        quotas = getattr(ctx.broker, "quotas", None)
        self.quotas = quotas if quotas is not None and quotas.active else None
        self.fq = quotas.fetch if self.quotas is not None and quotas.fetch.enabled else None
        if self.quotas is not None:
            self.user, self.client = user_of(getattr(ctx.conn, "principal", None)), ctx.client_id or ""

    @property
    def applies(self) -> bool:
        return self.quotas is not None and (self.fq is not None or self.quotas.request.enabled)

    def cap(self, max_bytes: int) -> int:
        """``max_bytes``, no more than the fetch quota's window can hold (Kafka's
        getMaxValueInQuotaWindow)."""
        if self.fq is None:
            return max_bytes
        return int(min(max_bytes, max(self.fq.max_value_in_window(self.user, self.client), 1)))

    def throttle(self, ctx, total_bytes: int) -> int:
        """Record the handling time and ``total_bytes``; the throttle time in ms (0: within
        both quotas). When throttled, the bytes are taken back: the answer must carry none."""
        if not self.applies:
            return 0
        now_ms = int(time.time() * 1000)
        t_req = 0
        if self.quotas.request.enabled:
            t_req = self.quotas.record_request_time(
                self.user, self.client, max(time.perf_counter() - ctx.started - ctx.waited_s, 0.0), now_ms)
            ctx.request_time_recorded = True
        fq = self.fq
        t_bytes = fq.record(self.user, self.client, total_bytes, now_ms) if fq is not None else 0
        throttle = max(t_req, t_bytes)
        if throttle > 0 and fq is not None:
            fq.unrecord(self.user, self.client, total_bytes, now_ms)
            if t_bytes > 0:
                fq.record_throttle(self.user, self.client, t_bytes)
        return throttle
