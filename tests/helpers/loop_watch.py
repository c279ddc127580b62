"""Watch a running broker for stalls while a test drives it: every listener's answer time,
measured by a client of its own that asks something cheap over and over, and the event loop's
lag from the broker's own probe (``broker.loop_lag.LoopLagProbe``, read in-process).

Everything the broker serves runs on one event loop, so a request whose work stays on the loop
for a second delays every other listener's answers by that second. ``LoopWatch`` proves the
opposite of a run: its pingers (one thread per listener: ApiVersions on a Kafka listener, a
GET on an HTTP one) record the slowest answer each got, and the probe the worst lag of the
loop's own making (``peaks()``: a tick late while the loop thread was busy for as long; lag
while the thread sat idle is the machine's doing, not ours).

Thresholds hold on a busy 2-core machine shared with other test runs: a stall the issue saw
lasted seconds (6.7 s for 5,000 partitions); the bounds here (``ANSWER_S``, ``OWN_LAG_S``) are
several times what a quiet run shows (answers within ~0.2 s, the loop's own hold-ups ~0.1-0.16
s: a REST answer listing thousands of partitions, a schema compiled) and a tenth of such a
stall.
"""
from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field

from protocol.messages.api_versions import ApiVersionsRequest
from tests.helpers.raw import RawClient

ANSWER_S = 1.0    # the slowest answer a listener may give while the loop is healthy (busy machine)
OWN_LAG_S = 0.5   # the longest the loop may be held up by the broker's own work (a quiet run: ~0.1-0.16 s)


@dataclass
class ListenerTimes:
    name: str
    answers: int = 0
    worst: float = 0.0
    failures: list = field(default_factory=list)


class LoopWatch:
    """``with LoopWatch(probe, kafka=[bootstrap], http=[url]) as w: ...`` then
    ``w.assert_no_stall()``; ``w.summary()`` for the record. ``probe`` is the broker's
    ``loop_lag`` (None for a broker in another process: answer times only)."""

    def __init__(self, probe=None, *, kafka: list[str] = (), http: list[str] = (), every: float = 0.02):
        self.probe = probe
        self.every = every
        self.times = [ListenerTimes(f"kafka {b}") for b in kafka] + [ListenerTimes(f"http {u}") for u in http]
        self._targets = [("kafka", b) for b in kafka] + [("http", u) for u in http]
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> "LoopWatch":
        if self.probe is not None:
            self.probe.reset_peaks()
        for (kind, where), lt in zip(self._targets, self.times):
            t = threading.Thread(target=self._ping_kafka if kind == "kafka" else self._ping_http, args=(where, lt),
                                 name=f"loop-watch {lt.name}", daemon=True)
            t.start()
            self._threads.append(t)
        deadline = time.monotonic() + 30  # every pinger has an answer before the run starts
        while any(lt.answers == 0 and not lt.failures for lt in self.times) and time.monotonic() < deadline:
            time.sleep(0.01)
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(30)

    def _ping_kafka(self, bootstrap: str, lt: ListenerTimes) -> None:
        body = ApiVersionsRequest(client_software_name="loop-watch", client_software_version="1")
        c = RawClient(bootstrap, client_id="loop-watch", timeout=30)
        try:
            while not self._stop.is_set():
                t0 = time.perf_counter()
                try:
                    r = c.request(18, 3, body)
                except OSError as e:
                    lt.failures.append(repr(e))
                    return
                self._took(lt, time.perf_counter() - t0, r.error_code == 0)
                self._stop.wait(self.every)
        finally:
            c.close()

    def _ping_http(self, url: str, lt: ListenerTimes) -> None:
        while not self._stop.is_set():
            t0 = time.perf_counter()
            try:
                with urllib.request.urlopen(url, timeout=30) as r:
                    r.read()
                    ok = r.status < 500
            except urllib.error.HTTPError as e:
                ok = e.code < 500
            except OSError as e:
                lt.failures.append(repr(e))
                return
            self._took(lt, time.perf_counter() - t0, ok)
            self._stop.wait(self.every)

    @staticmethod
    def _took(lt: ListenerTimes, dt: float, ok: bool) -> None:
        lt.answers += 1
        lt.worst = max(lt.worst, dt)
        if not ok:
            lt.failures.append("an error answer")

    def summary(self) -> str:
        parts = [f"{lt.name}: {lt.answers} answers, slowest {lt.worst * 1000:.0f} ms" for lt in self.times]
        if self.probe is not None:
            lag, own = self.probe.peaks()
            parts.append(f"loop lag worst {lag * 1000:.0f} ms, of its own making {own * 1000:.0f} ms")
        return "; ".join(parts)

    def assert_no_stall(self, answer_s: float = ANSWER_S, own_lag_s: float = OWN_LAG_S) -> None:
        problems = [f"{lt.name} failed: {lt.failures[:3]}" for lt in self.times if lt.failures]
        problems += [f"{lt.name} answered once in {lt.worst:.3f} s (bound {answer_s} s)"
                     for lt in self.times if lt.worst > answer_s]
        problems += [f"{lt.name} never answered" for lt in self.times if lt.answers == 0]
        if self.probe is not None and self.probe.peaks()[1] > own_lag_s:
            problems.append(f"the event loop was held up {self.probe.peaks()[1]:.3f} s by the broker's own work "
                            f"(bound {own_lag_s} s)")
        assert not problems, "; ".join(problems) + " -- " + self.summary()
