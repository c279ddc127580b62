"""Kafka's windowed rate (``SampledStat`` + ``Rate`` + ``QuotaUtils.throttleTime``), pure.

Invariant: a rate keeps at most ``samples + 1`` samples of ``window_ms`` each; a sample whose
last event is ``samples * window_ms`` old or older is reset before any measurement; the rate
is the sum of the kept samples over the elapsed time since the oldest sample started, that
time counted as at least ``samples - 1`` whole windows (so a fresh rate is not a spike) and
at least 1 ms. Times are integer milliseconds, as Kafka's.
"""
from __future__ import annotations

import math


class Sample:
    __slots__ = ("value", "events", "start_ms", "last_ms")

    def __init__(self, now_ms: int):
        self.value = 0.0
        self.events = 0
        self.start_ms = now_ms
        self.last_ms = now_ms

    def reset(self, now_ms: int) -> None:
        self.value = 0.0
        self.events = 0
        self.start_ms = now_ms
        self.last_ms = now_ms


class Rate:
    """A windowed sum divided by its window (units per second)."""
    __slots__ = ("samples", "window_ms", "_samples", "_current")

    def __init__(self, samples: int, window_ms: int):
        self.samples = samples
        self.window_ms = window_ms
        self._samples: list[Sample] = []
        self._current = 0

    def _current_sample(self, now_ms: int) -> Sample:
        if not self._samples:
            self._samples.append(Sample(now_ms))
        return self._samples[self._current]

    def record(self, value: float, now_ms: int) -> None:
        s = self._current_sample(now_ms)
        if now_ms - s.start_ms >= self.window_ms:
            # one extra slot holds the sample overlapping the start of the window
            self._current = (self._current + 1) % (self.samples + 1)
            if self._current >= len(self._samples):
                s = Sample(now_ms)
                self._samples.append(s)
            else:
                s = self._samples[self._current]
                s.reset(now_ms)
        s.value += value
        s.events += 1
        s.last_ms = now_ms

    def _purge(self, now_ms: int) -> None:
        expire = self.samples * self.window_ms
        for s in self._samples:
            if now_ms - s.last_ms >= expire:
                s.reset(now_ms)

    def window_size_ms(self, now_ms: int) -> int:
        """Kafka's ``Rate.windowSize``: the time the sum is divided by."""
        self._purge(now_ms)
        if not self._samples:
            self._samples.append(Sample(now_ms))
        oldest = min(s.start_ms for s in self._samples)
        elapsed = now_ms - oldest
        full = elapsed // self.window_ms
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return max(elapsed, 1)

    def total(self, now_ms: int) -> float:
        self._purge(now_ms)
        return sum(s.value for s in self._samples)

    def measure(self, now_ms: int) -> float:
        """Units per second over the window."""
        total = self.total(now_ms)
        return total / (self.window_size_ms(now_ms) / 1000.0)


def throttle_time_ms(value: float, bound: float, window_ms: int) -> int:
    """Kafka's ``QuotaUtils.throttleTime``: the delay X that brings an observed rate O back
    to the bound T over a window W, O * W / (W + X) = T, so X = (O - T) / T * W, rounded
    half up as Java's ``Math.round``."""
    return math.floor((value - bound) / bound * window_ms + 0.5)


def record_and_throttle(rate: Rate, bound: float | None, value: float, now_ms: int,
                        max_throttle_ms: int | None = None) -> int:
    """Record ``value`` and return the throttle time in ms (0 within the bound), as Kafka's
    ``Sensor.record(value, now, checkQuotas=true)`` then ``throttleTime`` on the violation."""
    rate.record(value, now_ms)
    if bound is None:
        return 0
    measured = rate.measure(now_ms)
    if measured <= bound:
        return 0
    t = throttle_time_ms(measured, bound, rate.window_size_ms(now_ms))
    if max_throttle_ms is not None:
        t = min(t, max_throttle_ms)
    return max(t, 0)


class TokenBucket:
    """Kafka's ``TokenBucket`` stat (controller mutation quotas, KIP-599): tokens refill at
    ``bound`` per second up to a burst of ``samples * window_s * bound``; a record takes
    tokens and may leave the bucket negative. Kafka starts it empty at time 0, so a first
    use finds it full."""
    __slots__ = ("tokens", "last_ms")

    def __init__(self):
        self.tokens = 0.0
        self.last_ms = 0

    def _refill(self, bound: float, burst: float, now_ms: int) -> None:
        self.tokens = min(burst, self.tokens + bound * (now_ms - self.last_ms) / 1000.0)
        self.last_ms = now_ms

    def measure(self, bound: float, burst: float, now_ms: int) -> float:
        self._refill(bound, burst, now_ms)
        return self.tokens

    def record(self, value: float, bound: float, burst: float, now_ms: int) -> None:
        self._refill(bound, burst, now_ms)
        self.tokens = min(burst, self.tokens - value)


def token_throttle_ms(tokens: float, bound: float) -> int:
    """Kafka's ``ControllerMutationQuotaManager.throttleTimeMs``: the time to refill a
    negative bucket back to zero, round(-tokens / bound * 1000)."""
    return math.floor(-tokens / bound * 1000 + 0.5)
