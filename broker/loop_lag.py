"""How late the broker's event loop runs what is due: a probe timer, re-armed every
``interval`` seconds, measures the lateness of each of its ticks.

Everything the broker does runs on one event loop, so a heartbeat answered late, a session
timer that fires after the member's heartbeat had arrived, a fetch that waits: all of them
are the loop being late. A tick is late by as long as the loop iteration it waited behind (one
long callback, or a burst of them) plus any time the OS kept the process off the CPU. The
probe also reads the loop thread's CPU time, so a stall tells which of the two it was: a stall
that used about as much CPU as it lasted is our own code running that long (to be moved off the
loop); one that used little is the machine starved of CPU.

Kept: the per-second maxima over the last ``window`` seconds (``max_lag``), the latest lag,
and the longest stretch of CPU the loop thread used between two ticks (``max_busy``): at
least as long as the longest callback that ran. ``peaks()`` gives, since the last
``reset_peaks()``, the worst lag and the worst lag of our own making, ``min(lag, busy)``: a
tick late by L while the loop thread used at least L of CPU was held up by our code for about
L; one late while the thread used little was the machine's doing (a test on a busy machine
asserts on the former). A stall above ``warn_s`` is logged at
WARNING (at most once per ``warn_every_s``), so a slow loop shows before a group does; at
DEBUG (logger ``broker.loop_lag``) every lag above ``debug_s`` is logged.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import Optional

log = logging.getLogger(__name__)


class LoopLagProbe:
    def __init__(self, interval: float = 0.1, window: float = 60.0, warn_s: float = 1.0, warn_every_s: float = 10.0,
                 debug_s: float = 0.2, clock=time.monotonic, cpu_clock=time.thread_time):
        self.interval, self.window, self.warn_s, self.warn_every_s = interval, window, warn_s, warn_every_s
        self.debug_s = debug_s  # lags logged at DEBUG from here (every one)
        self._clock, self._cpu = clock, cpu_clock
        self._samples: deque = deque()  # (second, max lag in it, max busy in it), oldest first
        self.last_lag = 0.0
        self.stalls = 0                 # ticks later than warn_s, lifetime
        self._handle: Optional[asyncio.TimerHandle] = None
        self._due = 0.0
        self._cpu_at = 0.0
        self._last_warn = float("-inf")
        self.peak_lag = self.peak_own = 0.0   # since reset_peaks()

    def start(self, loop: Optional[asyncio.AbstractEventLoop] = None) -> None:
        loop = loop or asyncio.get_running_loop()
        self._loop = loop
        self._arm()

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _arm(self) -> None:
        self._due = self._clock() + self.interval
        self._cpu_at = self._cpu()
        self._handle = self._loop.call_later(self.interval, self._tick)

    def _tick(self) -> None:
        now = self._clock()
        lag = max(0.0, now - self._due)
        busy = self._cpu() - self._cpu_at  # CPU the loop thread used since the probe was armed
        self.record(now, lag, busy)
        self._arm()

    def record(self, now: float, lag: float, busy: float) -> None:
        """One tick ``lag`` seconds late, the loop thread having used ``busy`` seconds of CPU
        since the tick before."""
        self.last_lag = lag
        self.peak_lag = max(self.peak_lag, lag)
        self.peak_own = max(self.peak_own, min(lag, busy))
        sec = int(now)
        if self._samples and self._samples[-1][0] == sec:
            _s, l0, b0 = self._samples[-1]
            self._samples[-1] = (sec, max(l0, lag), max(b0, busy))
        else:
            self._samples.append((sec, lag, busy))
        while self._samples and self._samples[0][0] <= sec - self.window:
            self._samples.popleft()
        if lag >= self.debug_s and log.isEnabledFor(logging.DEBUG):
            log.debug("event loop lag: a %.0f ms timer ran %.0f ms late; the loop thread used %.0f ms of CPU since "
                      "it was armed", self.interval * 1000, lag * 1000, busy * 1000)
        if lag >= self.warn_s:
            self.stalls += 1
            if now - self._last_warn >= self.warn_every_s:
                self._last_warn = now
                cause = ("a callback (our code) ran that long" if busy >= 0.5 * lag else
                         "the process was kept off the CPU (a busy machine)")
                log.warning("event loop stalled: ran a %.0f ms timer %.0f ms late; the loop thread used %.0f ms of "
                            "CPU meanwhile: %s", self.interval * 1000, lag * 1000, busy * 1000, cause)

    def reset_peaks(self) -> None:
        self.peak_lag = self.peak_own = 0.0

    def peaks(self) -> tuple[float, float]:
        """(worst lag, worst lag of our own making) since ``reset_peaks``, in seconds."""
        return self.peak_lag, self.peak_own

    def max_lag(self, now: Optional[float] = None) -> float:
        """The longest the loop was late over the last ``window`` seconds."""
        return self._max(1, now)

    def max_busy(self, now: Optional[float] = None) -> float:
        """The most CPU the loop thread used between two ticks over the last ``window``
        seconds (an upper bound of the longest callback's run, a tight one when it stalled)."""
        return self._max(2, now)

    def _max(self, i: int, now: Optional[float]) -> float:
        now = self._clock() if now is None else now
        floor = int(now) - self.window
        return max((s[i] for s in self._samples if s[0] > floor), default=0.0)
