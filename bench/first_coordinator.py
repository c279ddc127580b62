"""The first FindCoordinator creates ``__consumer_offsets`` (50 partitions): how long other
connections wait meanwhile. A fresh broker; one connection sends ApiVersions back to back
(a round trip at a time) while another sends the first FindCoordinator; prints the
FindCoordinator's time, the longest ApiVersions round trip while it ran, and the broker's
loop-lag maximum from /metrics. Repeated ``--rounds`` times (a new broker each), medians.

    .venv/bin/python bench/first_coordinator.py [--rounds 5]
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.rawclient import RawClient  # noqa: E402
from protocol.messages.api_versions import ApiVersionsRequest  # noqa: E402
from protocol.messages.find_coordinator import FindCoordinatorRequest  # noqa: E402
from tests.helpers.broker import BrokerProcess  # noqa: E402


def one_round(tmp: Path) -> dict[str, float]:
    b = BrokerProcess(tmp, {"metrics.port": 0}).start()
    try:
        probe, fc = RawClient(b.bootstrap), RawClient(b.bootstrap)
        av = ApiVersionsRequest(client_software_name="bench", client_software_version="1")
        probe.request(18, 3, av)
        rtts: list[tuple[float, float]] = []  # (start, round trip)
        stop = threading.Event()

        def ping():
            while not stop.is_set():
                t = time.perf_counter()
                probe.request(18, 3, av)
                rtts.append((t, time.perf_counter() - t))

        th = threading.Thread(target=ping)
        th.start()
        time.sleep(0.3)
        t0 = time.perf_counter()
        resp = fc.request(10, 4, FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]))
        t1 = time.perf_counter()
        time.sleep(0.1)
        stop.set()
        th.join()
        assert resp.coordinators[0].error_code == 0, resp
        during = [r for s, r in rtts if t0 - r <= s <= t1]
        url = re.findall(r"metrics on (http://\S+)/metrics", b.log_text())[-1]
        body = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
        lag = float(re.search(r"^hourglass_event_loop_lag_max_seconds (\S+)", body, re.M).group(1))
        return {"find_coordinator_ms": (t1 - t0) * 1000, "other_conn_max_rtt_ms": max(during, default=0) * 1000,
                "other_conn_answers_during": len(during), "loop_lag_max_ms": lag * 1000}
    finally:
        b.stop()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args(argv)
    runs: dict[str, list[float]] = {}
    for i in range(a.rounds):
        with tempfile.TemporaryDirectory() as d:
            for k, v in one_round(Path(d) / "data").items():
                runs.setdefault(k, []).append(v)
    for k, vs in runs.items():
        print(f"first_coordinator.{k} {statistics.median(vs):.1f} (rounds: {', '.join(f'{v:.1f}' for v in vs)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
