"""Crash safety of the cleaner's swap (Kafka LogCleanerTest.testRecoveryAfterCrash and
LogLoaderTest's .cleaned/.swap/.deleted cases): the process dies at every file-system step
of a cleaning (writing the .cleaned segment, each rename of the swap, the final directory
fsync); after reloading the directory, every replaced group of segments reads exactly as
before the cleaning or exactly as after it - never a mix, never a loss - and no temporary
file is left."""
from __future__ import annotations

import random

import pytest

from storage.cleaner import Cleaner, OffsetMap, log_facts
from storage.cleaner.decisions import group_segments_by_size, log_to_clean, segments_in_range
from storage.clock import ManualClock
from storage.dump import dump_index
from storage.files import OsFileOps
from storage.log import PartitionLog
from test_cleaner_helpers import NOW, compact_cfg, key_values, put, records


class Crash(Exception):
    pass


class CrashingOps(OsFileOps):
    """Dies at the ``die_at``-th counted step (renames, directory fsyncs, and - when
    ``count_writes`` - writes); once dead, every call fails, as in a killed process."""

    def __init__(self, die_at: int, count_writes: bool = False):
        self.die_at = die_at
        self.count_writes = count_writes
        self.steps = 0
        self.armed = False
        self.dead = False

    def _step(self):
        if self.dead:
            raise Crash("dead")
        if self.armed:
            if self.steps == self.die_at:
                self.dead = True
                raise Crash(f"crash at step {self.steps}")
            self.steps += 1

    def rename(self, src, dst):
        self._step()
        return super().rename(src, dst)

    def fsync_dir(self, path):
        self._step()
        return super().fsync_dir(path)

    def pwrite(self, fd, data, offset):
        if self.count_writes:
            self._step()
        elif self.dead:
            raise Crash("dead")
        return super().pwrite(fd, data, offset)


def _live(method):
    def wrapper(self, *a, **kw):
        if self.dead:
            raise Crash("dead")
        return getattr(OsFileOps, method)(self, *a, **kw)
    return wrapper


for _m in ("open", "close", "pread", "truncate", "remove", "mkdir", "set_mtime_ms", "rmtree"):
    setattr(CrashingOps, _m, _live(_m))


def _no_fsync(self, fd):
    """A killed process loses nothing the kernel already has; fsync only costs time here."""
    if self.dead:
        raise Crash("dead")


CrashingOps.fsync = _no_fsync


def build(dir, ops, clock):
    log = PartitionLog.open(dir, compact_cfg(segment_bytes=400, segment_index_bytes=1200, delete_retention_ms=0), clock, file_ops=ops,
                            recover=False, rng=random.Random(1))
    rng = random.Random(11)
    for i in range(24):
        k = f"k{rng.randrange(8)}"
        put(log, k, None if i % 13 == 5 else f"v{i}")
        if i % 2 == 1:      # 2-record segments: groups of 2 under segment.bytes=400
            log.roll()
    put(log, "k0", "active")
    return log


def reference(tmp_path):
    """The log before cleaning, after cleaning (no crash), and the cleaned groups' bounds."""
    clock = ManualClock(NOW)
    log = build(tmp_path / "reference" / "t-0", OsFileOps(), clock)
    before = records(log)
    ltc = log_to_clean(("t", 0), log_facts(log), None, NOW)
    groups = group_segments_by_size(segments_in_range(log_facts(log).segments, 0, ltc.first_uncleanable_offset),
                                    400, log.config.segment_index_bytes, ltc.first_uncleanable_offset)
    end, _ = Cleaner(OffsetMap(1 << 16)).clean(log, ltc, NOW)
    assert end == ltc.first_uncleanable_offset
    after = records(log)
    log.close()
    bounds = [g[0].base_offset for g in groups] + [ltc.first_uncleanable_offset]
    assert len(groups) > 2
    return before, after, bounds


def run_case(tmp_path, ref, die_at, count_writes):
    before, after, bounds = ref
    clock = ManualClock(NOW)
    ops = CrashingOps(die_at, count_writes)
    dir = tmp_path / f"case-{die_at}-{int(count_writes)}" / "t-0"
    log = build(dir, ops, clock)
    assert records(log) == before
    recovery_point = log.active_segment.base_offset
    ops.armed = True
    crashed = True
    try:
        Cleaner(OffsetMap(1 << 16)).clean(log, log_to_clean(("t", 0), log_facts(log), None, NOW), NOW)
        crashed = False
    except Crash:
        pass
    # restart: a fresh process, real file ops, unclean shutdown
    reopened = PartitionLog.open(dir, log.config, clock, recover=True, recovery_point=recovery_point,
                                 rng=random.Random(1))
    got = records(reopened)
    states = []
    for lo, hi in zip(bounds, bounds[1:]):
        part = [r for r in got if lo <= r[0] < hi]
        old = [r for r in before if lo <= r[0] < hi]
        new = [r for r in after if lo <= r[0] < hi]
        assert part in (old, new), f"group [{lo}, {hi}) is a mix after a crash at step {die_at}"
        states.append("new" if part == new and part != old else "old" if part == old and part != new else "same")
    # groups are swapped in order: never an "old" group before a "new" one
    order = "".join(st[0] for st in states if st != "same")
    assert order == "n" * order.count("n") + "o" * order.count("o"), states
    assert [r for r in got if r[0] >= bounds[-1]] == [r for r in before if r[0] >= bounds[-1]]
    # nothing lost: every key reads its latest value (or its tombstone, or is gone)
    model = kv_of(after)
    kv = key_values(reopened)
    assert {k: v for k, v in kv.items() if v is not None} == {k: v for k, v in model.items() if v is not None}
    leftovers = [p.name for p in dir.iterdir() if p.name.endswith((".cleaned", ".swap", ".deleted"))]
    assert not leftovers
    for seg in reopened.segments.values():
        for p in (seg.offset_index.path, seg.time_index.path):
            assert dump_index(p).ok
    reopened.close()
    return crashed, states


def kv_of(recs):
    """key -> latest value over (offset, key, value) records in offset order."""
    out = {}
    for _o, k, v in recs:
        out[k] = v
    return out


@pytest.mark.parametrize("count_writes", [False, True], ids=["renames", "writes+renames"])
def test_crash_at_every_step_recovers_old_or_new(tmp_path, count_writes):
    """testRecoveryAfterCrash: every crash point, until a run completes without one."""
    seen_old = seen_new = False
    ref = reference(tmp_path)
    for die_at in range(400):
        crashed, states = run_case(tmp_path, ref, die_at, count_writes)
        seen_old |= "old" in states
        seen_new |= "new" in states
        if not crashed:
            break
    else:
        pytest.fail("cleaning never completed")
    assert seen_old and seen_new and die_at > 5
