"""A manual ``call_later`` scheduler for coordinator unit tests (no event loop timers)."""
from __future__ import annotations

import heapq

from storage.clock import ManualClock


class ManualScheduler:
    """call_later on a ManualClock; ``advance(ms)`` runs due timers in time order."""

    class Handle:
        def __init__(self, due, fn):
            self.due, self.fn, self.cancelled = due, fn, False

        def cancel(self):
            self.cancelled = True

    def __init__(self, clock: ManualClock):
        self.clock = clock
        self.heap: list = []
        self.seq = 0

    def call_later(self, delay_ms, fn):
        h = self.Handle(self.clock.now_ms() + max(delay_ms, 0), fn)
        self.seq += 1
        heapq.heappush(self.heap, (h.due, self.seq, h))
        return h

    def advance(self, ms: int) -> None:
        target = self.clock.now_ms() + ms
        while self.heap and self.heap[0][0] <= target:
            due, _, h = heapq.heappop(self.heap)
            if h.cancelled:
                continue
            self.clock.set(max(due, self.clock.now_ms()))
            h.fn()
        self.clock.set(target)

    def pending(self) -> int:
        return sum(1 for _, _, h in self.heap if not h.cancelled)
