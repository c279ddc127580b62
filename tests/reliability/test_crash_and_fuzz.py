"""Short passes of the two long-running tools, plus regression tests for what they found.

* ``scripts/crash_test.py``: kill -9 rounds (``make crash-test`` runs 100); here 4 rounds.
* ``scripts/fuzz_broker.py``: hostile frames (``make fuzz``); here a ~12 s pass.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from protocol.messages.metadata import MetadataRequest
from storage.clock import ManualClock
from storage.manager import LogManager
from tests.reliability.test_faults import _batch
from tests.reliability.wire import Wire

REPO = Path(__file__).resolve().parents[2]


def _run(args, timeout):
    return subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=timeout)


@pytest.mark.timeout(150)
def test_crash_test_short_pass_loses_and_duplicates_nothing():
    r = _run(["scripts/crash_test.py", "--rounds", "4", "--seconds", "1", "--seed", "20240", "--quiet"], 140)
    m = re.search(r"crash-test: rounds=(\d+) acked=(\d+) lost=(\d+) duplicates=(\d+)", r.stdout)
    assert m, r.stdout + r.stderr
    rounds, acked, lost, dups = map(int, m.groups())
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert rounds == 4 and acked > 100 and lost == 0 and dups == 0
    assert "violations=0" in r.stdout


@pytest.mark.timeout(120)
def test_fuzz_short_pass_never_crashes_or_hangs_the_broker():
    r = _run(["scripts/fuzz_broker.py", "--seconds", "12", "--seed", "5"], 110)
    m = re.search(r"fuzz: frames=(\d+) .* crashes=(\d+) hangs=(\d+) canary_failures=(\d+)", r.stdout)
    assert m, r.stdout + r.stderr
    frames, crashes, hangs, canary = map(int, m.groups())
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert frames > 50 and crashes == hangs == canary == 0


def test_dump_log_verify_index_only_cli_on_live_and_closed_segments(tmp_path):
    """Regression: ``hourglass dump-log`` failed to import, and the zero-filled preallocated
    tail of an active segment's index was reported as mismatching entries."""
    m = LogManager([str(tmp_path / "logs")], {"log.index.interval.bytes": "50", "log.segment.bytes": "600"},
                   ManualClock(1_700_000_000_000))
    m.load()
    lg = m.create("t", 0)
    for i in range(20):
        lg.append(_batch(i))
    m.flush_dirty()
    files = sorted(str(p) for p in (tmp_path / "logs" / "t-0").iterdir())
    active = [f for f in files if f.startswith(str(lg.active_segment.log_path)[:-4])]
    assert any(f.endswith(".index") for f in active)

    def dump(*paths):
        return _run(["-m", "broker", "dump-log", "--verify-index-only", *paths], 60)

    r = dump(*files)          # the active segment's indexes are still preallocated
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("passed the index sanity check") == sum(f.endswith("index") for f in files)
    m.shutdown()
    assert dump(*files).returncode == 0
    # a corrupt entry is still caught
    idx = next(f for f in files if f.endswith(".index") and Path(f).stat().st_size >= 16)
    raw = bytearray(Path(idx).read_bytes())
    raw[4:8] = (7).to_bytes(4, "big")
    Path(idx).write_bytes(bytes(raw))
    r = dump(idx)
    assert r.returncode == 1 and "Mismatches" in r.stdout


def test_metadata_v10_null_topic_name_is_answered_not_a_dropped_connection(rbroker):
    """Regression (fuzzer): a v10/v11 Metadata request naming a topic by id only made the
    response unencodable and the connection was closed; Kafka answers INVALID_REQUEST."""
    b = rbroker()
    c = Wire(b.bootstrap)
    for v in (10, 11):
        req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=None, topic_id=b"\x01" * 16)],
                              allow_auto_topic_creation=False)
        resp = c.request(3, v, req)
        assert resp.topics[0].error_code == 42
    assert c.create_topic("still-here") == [0]
    c.close()
