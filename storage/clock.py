"""Time source for the storage layer.

Every storage decision that depends on "now" (roll, retention, flush, producer expiry,
LogAppendTime) takes ``now_ms`` as an argument or reads it from a :class:`Clock` handed in
by the caller. Only :class:`SystemClock` reads the wall clock, so tests drive time with
:class:`ManualClock` and never sleep.
"""
from __future__ import annotations

import time


class Clock:
    """Source of milliseconds since the epoch (Kafka's ``Time.milliseconds()``)."""

    def now_ms(self) -> int:  # pragma: no cover - interface
        raise NotImplementedError

    def monotonic_ms(self) -> int:
        """Milliseconds for measuring elapsed time; defaults to :meth:`now_ms`."""
        return self.now_ms()


class SystemClock(Clock):
    """The wall clock (``time.time_ns``) and the monotonic clock for elapsed time."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000


class ManualClock(Clock):
    """A clock that moves only when told to (Kafka's ``MockTime``).

    Invariant: ``now_ms()`` returns exactly the value last set; ``advance`` with a
    negative amount is allowed (tests of clock skew) but never implicit.
    """

    def __init__(self, now_ms: int = 0) -> None:
        self._now_ms = int(now_ms)

    def now_ms(self) -> int:
        return self._now_ms

    def advance(self, ms: int) -> int:
        """Move the clock forward by ``ms`` and return the new time."""
        self._now_ms += int(ms)
        return self._now_ms

    def set(self, ms: int) -> None:
        self._now_ms = int(ms)

    def __repr__(self) -> str:
        return f"ManualClock({self._now_ms})"
