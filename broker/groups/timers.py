"""Timers shared by the coordinators (groups, share groups, transactions): ``LoopScheduler``,
millisecond timers on the event loop, and ``KeyedTimers``.

Keyed one-shot timers for the coordinators (member session, rebalance, join and sync
timeouts; share-group session timeouts): at most one pending timer per key.

Setting a key replaces its pending timer; a timer that fires is forgotten before its callback
runs, so the callback may set the same key again; a callback's exception is logged, never
raised into the event loop. The scheduler is looked up at each call (``scheduler()``), as the
coordinators get theirs only when they start.

At DEBUG, every timer armed, cancelled and fired is logged with its key, its delay and, when
it fires, how late it ran after its deadline (a late timer is an event loop that was blocked
or starved of CPU: see ``broker.loop_lag``).
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable

log = logging.getLogger(__name__)


class LoopScheduler:
    """Millisecond timers on an asyncio loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop

    def call_later(self, delay_ms: int, fn: Callable[[], None]):
        return self.loop.call_later(max(delay_ms, 0) / 1000.0, fn)


class KeyedTimers:
    def __init__(self, scheduler: Callable[[], object], name: str, *,
                 active: Callable[[], bool] = lambda: True, quiet: tuple[type[BaseException], ...] = ()):
        self._scheduler = scheduler
        self._name = name
        self._active = active        # callbacks are skipped once this says False (unloaded)
        self._quiet = quiet          # expected exceptions: logged at debug level only
        self._handles: dict[tuple, object] = {}

    def __contains__(self, key: tuple) -> bool:
        return key in self._handles

    def set(self, key: tuple, delay_ms: int, fn: Callable[[], None], *, if_absent: bool = False) -> None:
        """Run ``fn`` after ``delay_ms`` unless the key is set again or cancelled first."""
        if if_absent and key in self._handles:
            return
        self.cancel(key, quiet=True)
        deadline = time.monotonic() + max(delay_ms, 0) / 1000.0

        def fire():
            if self._handles.get(key) is handle:
                del self._handles[key]
            if not self._active():
                return
            if log.isEnabledFor(logging.DEBUG):
                log.debug("%s %s fired (armed for %d ms, ran %d ms after its deadline)", self._name, key, delay_ms,
                          (time.monotonic() - deadline) * 1000)
            try:
                fn()
            except self._quiet as exc:
                log.debug("%s %s: %s", self._name, key, exc)
            except Exception:
                log.exception("%s %s failed", self._name, key)
        handle = self._scheduler().call_later(delay_ms, fire)
        self._handles[key] = handle
        if log.isEnabledFor(logging.DEBUG) and key[0] != "session":  # session timers: rearmed by every heartbeat
            log.debug("%s %s armed for %d ms", self._name, key, delay_ms)

    def cancel(self, key: tuple, *, quiet: bool = False) -> None:
        h = self._handles.pop(key, None)
        if h is not None:
            h.cancel()
            if not quiet and log.isEnabledFor(logging.DEBUG):
                log.debug("%s %s cancelled", self._name, key)

    def cancel_all(self) -> None:
        for h in self._handles.values():
            h.cancel()
        self._handles.clear()
