"""Short histories the charts draw: produce/fetch rates and consumer-group lag over the last hour.

The broker keeps counters (``broker.metrics``: bytes and records in/out per topic) and
committed offsets, not histories; a sampler on the broker's loop reads them every
``INTERVAL_S`` and keeps the last hour in ring buffers. A sample is a few dict sums, and lag
is read only for groups that have committed offsets; nothing here touches the logs beyond
their high watermarks.

UI-side stopgap for the rates and lag-history reads of ``console/model.py`` (see reads.py).
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections import deque

log = logging.getLogger(__name__)

INTERVAL_S = 5.0
KEEP_S = 3600


def rates(prev: tuple[float, dict], cur: tuple[float, dict]) -> dict:
    """Per-second rates between two (time, counters) samples (a counter that went down, e.g.
    after a topic was deleted, counts as 0)."""
    dt = cur[0] - prev[0]
    if dt <= 0:
        return {k: 0.0 for k in cur[1]}
    return {k: max(cur[1][k] - prev[1].get(k, 0), 0) / dt for k in cur[1]}


class History:
    def __init__(self, broker, interval_s: float = INTERVAL_S, keep_s: float = KEEP_S):
        self.broker = broker
        self.interval_s = interval_s
        n = int(keep_s / interval_s) + 1
        self.rates: deque = deque(maxlen=n)  # (t seconds, {bytes_in, bytes_out, records_in, records_out} per s)
        self.lags: dict[str, deque] = {}  # group -> deque of (t seconds, total lag, {(topic, p): lag})
        self._last: tuple[float, dict] | None = None
        self._n = n
        self._task: asyncio.Task | None = None

    def totals(self) -> dict:
        m = self.broker.metrics
        return {"bytes_in": sum(m.bytes_in.values()), "bytes_out": sum(m.bytes_out.values()),
                "records_in": sum(m.records_in.values()), "records_out": sum(m.records_out.values())}

    def sample(self, now: float | None = None) -> None:
        now = time.time() if now is None else now
        cur = (now, self.totals())
        if self._last is not None:
            self.rates.append((now, rates(self._last, cur)))
        self._last = cur
        self._sample_lags(now)

    def _sample_lags(self, now: float) -> None:
        from console.ui.reads import committed_offsets
        g = self.broker.groups
        if g is None:
            return
        for gid in list(g.groups):
            offs = committed_offsets(self.broker, gid)
            if not offs:
                continue
            per = {}
            for (topic, p), off in offs.items():
                plog = self.broker.topics.log(topic, p)
                if plog is not None:
                    per[f"{topic}-{p}"] = max(plog.high_watermark - off, 0)
            self.lags.setdefault(gid, deque(maxlen=self._n)).append((now, sum(per.values()), per))
        for gid in [k for k in self.lags if k not in g.groups]:
            del self.lags[gid]

    async def run(self) -> None:
        while True:
            try:
                self.sample()
            except Exception:  # a sample is best effort; the next one tries again
                log.exception("console history sample failed")
            await asyncio.sleep(self.interval_s)

    def start(self) -> None:
        if self._task is None:
            self.sample()
            self._task = asyncio.get_running_loop().create_task(self.run(), name="console-history")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    def rate_series(self) -> dict:
        """uPlot's aligned data: [times], [bytes in/s], [bytes out/s], [records in/s], [records out/s]."""
        ts = [t for t, _ in self.rates]
        return {"t": ts, **{k: [round(r[k], 1) for _, r in self.rates]
                             for k in ("bytes_in", "bytes_out", "records_in", "records_out")}}

    def lag_series(self, group_id: str) -> dict:
        d = self.lags.get(group_id, ())
        parts = sorted({k for _, _, per in d for k in per})
        return {"t": [t for t, _, _ in d], "total": [tot for _, tot, _ in d],
                "partitions": {k: [per.get(k) for _, _, per in d] for k in parts}}
