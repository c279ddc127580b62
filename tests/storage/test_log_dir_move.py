"""Log-dir moves (AlterReplicaLogDirs, KIP-113) in the log manager: a ``-future`` copy that
catches up while the log keeps taking appends, then swaps in; and what a crash at each point
of the move leaves (mirrors the intent of Kafka's ``ReplicaManagerTest``/``LogManagerTest``
future-log cases: testFutureLogAfterRestart-style recovery, the swap's rename order)."""
from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from protocol.records.record import build_batch, decode_batch
from protocol.records.batch import iter_batch_positions
from storage.clock import ManualClock
from storage.errors import LogDirNotFoundError
from storage.faults import FaultyFileOps
from storage.manager import LogManager

NOW = 1_700_000_000_000


def mgr(tmp_path, ops=None):
    return LogManager([str(tmp_path / "d1"), str(tmp_path / "d2")], {"log.segment.delete.delay.ms": "0"},
                      ManualClock(NOW), rng=random.Random(0), file_ops=ops)


def records(lg) -> list[tuple[int, bytes]]:
    out = []
    offset = lg.log_start_offset
    while offset < lg.log_end_offset:   # a read stops at a segment's end
        data = lg.read(offset, 1 << 30).data
        for pos, h in iter_batch_positions(data):
            offset = h.base_offset + h.last_offset_delta + 1
            if h.is_control:
                out.append((h.base_offset, b"<control>"))
                continue
            _, recs = decode_batch(data, pos)
            out += [(r.offset, r.value) for r in recs]
    return out


def fill(lg, n, start=0):
    for i in range(start, start + n):
        lg.append(build_batch([(None, f"v{i}".encode(), NOW)]))


def test_move_copies_while_appending_then_swaps(tmp_path):
    """The log keeps taking appends (and a transaction's abort) between copy steps; after the
    swap the same object serves every offset from the new dir, the old dir is gone."""
    m = mgr(tmp_path)
    m.load()
    lg = m.create("t", 0, {"segment.bytes": "300"})
    assert m.dir_of("t", 0) == tmp_path / "d1"
    fill(lg, 20)
    lg.append(build_batch([(None, b"txn", NOW)], producer_id=7, producer_epoch=0, base_sequence=0,
                          is_transactional=True))
    assert m.start_move("t", 0, tmp_path / "d2")
    assert any(n.endswith("-future") for n in os.listdir(tmp_path / "d2"))
    steps = 0
    while not m.move_step("t", 0, max_bytes=200):
        fill(lg, 1, 100 + steps)         # appends land between steps
        steps += 1
        if steps == 5:
            lg.append_marker(7, 0, 0, commit=False)
    assert steps >= 5
    assert m.get("t", 0) is lg and m.dir_of("t", 0) == tmp_path / "d2"
    assert lg.dir == tmp_path / "d2" / "t-0"
    assert not m.future_logs
    before = records(lg)
    assert [v for _, v in before[:20]] == [f"v{i}".encode() for i in range(20)]
    assert len(lg.collect_aborted_transactions(0, lg.log_end_offset)) == 1
    fill(lg, 3, 500)                      # still takes appends after the swap
    m.run_pending_deletes(force=True)
    assert sorted(n for n in os.listdir(tmp_path / "d1") if n.startswith("t-")) == []
    final, leo = records(lg), lg.log_end_offset
    m.shutdown()
    m2 = mgr(tmp_path)
    m2.load()
    again = m2.get("t", 0)
    assert m2.dir_of("t", 0) == tmp_path / "d2"
    assert records(again) == final and again.log_end_offset == leo
    assert len(again.collect_aborted_transactions(0, again.log_end_offset)) == 1


def test_move_refusals_and_noops(tmp_path):
    m = mgr(tmp_path)
    m.load()
    m.create("t", 0)
    with pytest.raises(LogDirNotFoundError):
        m.log_dir_named(str(tmp_path / "elsewhere"))
    with pytest.raises(LogDirNotFoundError):
        m.log_dir_named("d1")            # a relative path names no log dir (Kafka's answer too)
    assert m.log_dir_named(str(tmp_path / "d1") + "/") == tmp_path / "d1"
    assert not m.start_move("t", 0, tmp_path / "d1")        # already there
    with pytest.raises(KeyError):
        m.start_move("t", 9, tmp_path / "d2")
    assert m.start_move("t", 0, tmp_path / "d2")
    assert not m.start_move("t", 0, tmp_path / "d2")        # under way already
    assert not m.start_move("t", 0, tmp_path / "d1")        # back home: the future is dropped
    assert not m.future_logs and not any(n.endswith("-future") for n in os.listdir(tmp_path / "d2"))


def test_delete_topic_during_a_move(tmp_path):
    m = mgr(tmp_path)
    m.load()
    fill(m.create("t", 0), 5)
    m.start_move("t", 0, tmp_path / "d2")
    m.move_step("t", 0, max_bytes=10)
    m.delete_topic("t")
    m.run_pending_deletes(force=True)
    assert not m.future_logs
    assert [n for d in ("d1", "d2") for n in os.listdir(tmp_path / d) if n.startswith("t-")] == []


def test_crash_mid_copy_resumes_after_restart(tmp_path):
    """Killed while the future is half filled: the current log is whole, the future is
    loaded beside it and the move finishes after the restart."""
    m = mgr(tmp_path)
    m.load()
    lg = m.create("t", 0, {"segment.bytes": "300"})
    fill(lg, 30)
    want = records(lg)
    m.start_move("t", 0, tmp_path / "d2")
    assert not m.move_step("t", 0, max_bytes=300)
    # no shutdown: the process is gone (its files as the page cache holds them)
    m2 = mgr(tmp_path)
    m2.load()
    assert records(m2.get("t", 0)) == want and m2.dir_of("t", 0) == tmp_path / "d1"
    assert ("t", 0) in m2.future_logs
    fill(m2.get("t", 0), 2, 30)
    while not m2.move_step("t", 0, max_bytes=300):
        pass
    assert m2.dir_of("t", 0) == tmp_path / "d2"
    assert [v for _, v in records(m2.get("t", 0))] == [f"v{i}".encode() for i in range(32)]


@pytest.mark.parametrize("phase", ["after-first-rename", "before-first-rename", "after-second-rename"])
def test_crash_during_the_swap_loses_nothing(tmp_path, phase):
    """Killed at each point of the swap's two renames: the next load serves every offset, from
    exactly one dir, and no partition dir is left twice."""
    ops = FaultyFileOps(track_unsynced=False)

    class Killed(BaseException):
        pass

    def hook(op, path, when):   # ``path``: the rename's source
        if op != "rename":
            return
        current, future = str(path).endswith("/d1/t-0"), str(path).endswith("-future")
        if (phase == "before-first-rename" and when == "before" and current
                or phase == "after-first-rename" and when == "after" and current
                or phase == "after-second-rename" and when == "after" and future):
            raise Killed

    m = mgr(tmp_path, ops)
    m.load()
    lg = m.create("t", 0, {"segment.bytes": "300"})
    fill(lg, 25)
    want = records(lg)
    m.start_move("t", 0, tmp_path / "d2")
    ops.on_op = hook
    with pytest.raises(Killed):
        while not m.move_step("t", 0):
            pass
    m2 = mgr(tmp_path)
    m2.load()
    assert records(m2.get("t", 0)) == want
    homes = [d for d in ("d1", "d2") if (tmp_path / d / "t-0").is_dir()]
    assert len(homes) == 1
    while not m2.move_step("t", 0):
        pass
    assert m2.dir_of("t", 0) == tmp_path / "d2" and records(m2.get("t", 0)) == want
