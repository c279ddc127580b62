"""Wake long-polling Fetch requests when data arrives, without polling.

A Fetch that must wait registers one future covering all partitions it reads; an append to
any of them resolves it. Invariant: a registered future is resolved at most once and is
removed from every partition's set when its Fetch finishes (woken or timed out).
"""
from __future__ import annotations

import asyncio
from collections import defaultdict


class PartitionWaiters:
    def __init__(self) -> None:
        self._waiting: dict[tuple[str, int], set[asyncio.Future]] = defaultdict(set)

    def notify(self, key: tuple[str, int]) -> None:
        futs = self._waiting.pop(key, None)
        if futs:
            for f in futs:
                if not f.done():
                    f.set_result(key)

    def wake_all(self) -> None:
        for key in list(self._waiting):
            self.notify(key)

    async def wait(self, keys: list[tuple[str, int]], timeout_s: float) -> bool:
        """Wait until one of ``keys`` gets an append or ``timeout_s`` passes; True if woken."""
        if timeout_s <= 0:
            return False
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        for k in keys:
            self._waiting[k].add(fut)
        handle = loop.call_later(timeout_s, lambda: fut.done() or fut.set_result(None))
        try:
            return (await fut) is not None
        finally:
            handle.cancel()
            for k in keys:
                s = self._waiting.get(k)
                if s is not None:
                    s.discard(fut)
                    if not s:
                        del self._waiting[k]
