"""Load / recovery tests; mirror Kafka's LogLoaderTest (core/.../log/LogLoaderTest.scala)."""
from __future__ import annotations

import os
import random

import pytest

from protocol.records.batch import iter_batch_positions
from protocol.records.record import build_batch, decode_batch
from storage.clock import ManualClock
from storage.files import OsFileOps
from storage.log import PartitionLog
from storage.log_config import LogConfig

NOW = 1_700_000_000_000


def cfg(**kw):
    base = {"segment.bytes": "1000", "index.interval.bytes": "1"}
    base.update({k.replace("_", "."): str(v) for k, v in kw.items()})
    return LogConfig.from_props({}, base)


def open_log(d, recover, recovery_point=0, log_start_offset=0, progress=None, **kw):
    return PartitionLog.open(d, cfg(**kw), ManualClock(NOW), recover=recover, recovery_point=recovery_point,
                             log_start_offset=log_start_offset, progress=progress, rng=random.Random(1))


def crash(log):
    """Drop every handle without trimming, fsyncing or writing roll entries."""
    for s in log.segments.values():
        s.close_handlers()


def fill(log, n, start_ts=NOW):
    for i in range(n):
        log.append(build_batch([(b"k%d" % i, b"value-%d" % i, start_ts + i * 10)]))


def all_records(log):
    out = []
    off = log.log_start_offset
    while off < log.log_end_offset:
        data = log.read(off, 1 << 20).data
        assert data, f"nothing readable at {off}"
        for pos, _h in iter_batch_positions(data):
            for r in decode_batch(data, pos)[1]:
                if r.offset >= off:
                    out.append((r.offset, r.key, r.value, r.timestamp))
        off = out[-1][0] + 1
    return out


def model(n, start_ts=NOW):
    return [(i, b"k%d" % i, b"value-%d" % i, start_ts + i * 10) for i in range(n)]


def assert_lookups(log, n, start_ts=NOW):
    for i in range(n):
        assert log.offset_for_timestamp(start_ts + i * 10) == (i, start_ts + i * 10)
        assert log.read(i, 1).data, f"offset {i} unreadable"


def test_log_recovers_to_correct_offset(tmp_path):
    """testLogRecoversToCorrectOffset."""
    d = tmp_path / "t-0"
    log = open_log(d, recover=False)
    fill(log, 40)
    assert log.num_segments > 1
    crash(log)
    again = open_log(d, recover=True)
    assert again.log_end_offset == 40
    assert all_records(again) == model(40)
    assert_lookups(again, 40)


def test_index_rebuild(tmp_path):
    """testIndexRebuild: deleted index files are rebuilt (clean shutdown too)."""
    d = tmp_path / "t-0"
    log = open_log(d, recover=False)
    fill(log, 40)
    log.close()
    for p in d.iterdir():
        if p.suffix in (".index", ".timeindex"):
            p.unlink()
    again = open_log(d, recover=False)
    assert all_records(again) == model(40)
    assert_lookups(again, 40)
    assert all((d / f"{b:020d}.timeindex").exists() for b in again.segments.base_offsets())


@pytest.mark.parametrize("seed", range(3))
def test_corrupt_index_rebuild(tmp_path, seed):
    """testCorruptIndexRebuild: junk indexes + unclean shutdown -> every offset readable and
    every ts_i resolves to i."""
    d = tmp_path / "t-0"
    log = open_log(d, recover=False)
    fill(log, 40)
    log.close()
    rng = random.Random(seed)
    for p in d.iterdir():
        if p.suffix in (".index", ".timeindex"):
            p.write_bytes(bytes(rng.randrange(256) for _ in range(max(p.stat().st_size, 24))))
    again = open_log(d, recover=True)
    assert all_records(again) == model(40)
    assert_lookups(again, 40)


def test_rebuild_time_index_for_clean_but_missing_time_index(tmp_path):
    """testRebuildTimeIndexForOldMessages (our variant: a missing .timeindex is rebuilt)."""
    d = tmp_path / "t-0"
    log = open_log(d, recover=False)
    fill(log, 30)
    log.close()
    for p in d.glob("*.timeindex"):
        p.unlink()
    again = open_log(d, recover=False)
    assert_lookups(again, 30)


@pytest.mark.parametrize("seed", range(4))
def test_corrupt_log_garbage_appended(tmp_path, seed):
    """testCorruptLog: random bytes appended to the active .log and .index -> exactly the
    original records after recovery."""
    d = tmp_path / "t-0"
    log = open_log(d, recover=False)
    fill(log, 25)
    active = log.active_segment.base_offset
    crash(log)
    rng = random.Random(seed)
    with open(d / f"{active:020d}.log", "ab") as f:
        f.write(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))))
    with open(d / f"{active:020d}.index", "ab") as f:
        f.write(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 50))))
    again = open_log(d, recover=True)
    assert all_records(again) == model(25)
    assert_lookups(again, 25)
    again.append(build_batch([(b"k25", b"value-25", NOW + 250)]))
    assert all_records(again) == model(26)


def test_bogus_index_segments_are_removed(tmp_path):
    """testBogusIndexSegmentsAreRemoved: orphan index files without a .log go away."""
    d = tmp_path / "t-0"
    log = open_log(d, recover=False)
    fill(log, 5)
    log.close()
    (d / "00000000000000000005.index").write_bytes(b"\0" * 80)
    (d / "00000000000000000005.timeindex").write_bytes(b"\0" * 12)
    (d / "00000000000000000005.txnindex").write_bytes(b"")
    again = open_log(d, recover=False)
    assert not (d / "00000000000000000005.index").exists()
    assert not (d / "00000000000000000005.timeindex").exists()
    assert not (d / "00000000000000000005.txnindex").exists()
    assert all_records(again) == model(5)


def test_open_deletes_obsolete_files(tmp_path):
    """testOpenDeletesObsoleteFiles: *.deleted and *.cleaned leftovers are removed."""
    d = tmp_path / "t-0"
    log = open_log(d, recover=False)
    fill(log, 30)
    log.close()
    (d / "00000000000000099999.log.deleted").write_bytes(b"junk")
    (d / "00000000000000099999.index.deleted").write_bytes(b"junk")
    (d / "00000000000000000000.log.cleaned").write_bytes(b"junk")
    again = open_log(d, recover=False)
    names = {p.name for p in d.iterdir()}
    assert not any(n.endswith((".deleted", ".cleaned")) for n in names)
    assert all_records(again) == model(30)


def _segment_files(d, base):
    return [d / f"{base:020d}{s}" for s in (".log", ".index", ".timeindex")]


def test_swap_file_replaces_the_segments_it_covers(tmp_path):
    """testRecoveryAfterCrashDuringSplitPhase / swap leftovers: a valid .swap replaces the
    segments inside its offset range, then is renamed in."""
    d = tmp_path / "t-0"
    log = open_log(d, recover=False)
    fill(log, 30)
    bases = log.segments.base_offsets()
    assert len(bases) >= 3
    log.close()
    # A "cleaned" replacement of the first two segments: same records, one file.
    first_two = b"".join((d / f"{b:020d}.log").read_bytes() for b in bases[:2])
    (d / f"{bases[0]:020d}.log.swap").write_bytes(first_two)
    again = open_log(d, recover=False)
    assert again.segments.base_offsets() == [bases[0]] + bases[2:]
    assert not any(p.name.endswith(".swap") for p in d.iterdir())
    assert all_records(again) == model(30)
    assert_lookups(again, 30)


def test_swap_above_min_cleaned_offset_is_dropped(tmp_path):
    """An unfinished split: a .swap at or above the smallest .cleaned offset is invalid."""
    d = tmp_path / "t-0"
    log = open_log(d, recover=False)
    fill(log, 30)
    bases = log.segments.base_offsets()
    log.close()
    (d / f"{bases[1]:020d}.log.cleaned").write_bytes(b"x")
    (d / f"{bases[1]:020d}.log.swap").write_bytes((d / f"{bases[1]:020d}.log").read_bytes()[:10])
    again = open_log(d, recover=False)
    assert not any(p.name.endswith((".swap", ".cleaned")) for p in d.iterdir())
    assert all_records(again) == model(30)


def test_clean_shutdown_skips_recovery(tmp_path):
    """testCleanShutdownFile: a clean shutdown loads without recovering segments."""
    d = tmp_path / "t-0"
    log = open_log(d, recover=False)
    fill(log, 30)
    log.close()
    calls = []
    again = open_log(d, recover=False, progress=lambda *a: calls.append(a))
    assert calls == []
    assert again.recovery_point == again.log_end_offset == 30
    assert not again.segments.first_segment.offset_index._loaded, "indexes are not read at load"


def test_recover_only_last_segment(tmp_path):
    """testRecoverOnlyLastSegment: segments below the recovery point are not recovered."""
    d = tmp_path / "t-0"
    log = open_log(d, recover=False)
    fill(log, 40)
    last = log.active_segment.base_offset
    crash(log)
    calls = []
    again = open_log(d, recover=True, recovery_point=last, progress=lambda *a: calls.append(a))
    assert calls == [(1, 1, last)]
    assert again.recovery_point == last
    assert all_records(again) == model(40)


def test_recover_with_empty_active_segment(tmp_path):
    """testRecoverWithEmptyActiveSegment."""
    d = tmp_path / "t-0"
    log = open_log(d, recover=False)
    fill(log, 20)
    log.roll()
    crash(log)
    again = open_log(d, recover=True)
    assert again.log_end_offset == 20
    assert again.active_segment.size == 0
    again.append(build_batch([(b"k20", b"value-20", NOW + 200)]))
    assert all_records(again) == model(21)


def test_log_end_less_than_start_after_reopen(tmp_path):
    """testLogEndLessThanStartAfterReopen: every segment deleted, log restarts at log start."""
    d = tmp_path / "t-0"
    log = open_log(d, recover=False)
    fill(log, 10)
    log.close()
    again = open_log(d, recover=False, log_start_offset=50)
    assert again.segments.base_offsets() == [50]
    assert again.log_start_offset == again.log_end_offset == 50


def test_corruption_in_middle_segment_drops_later_segments(tmp_path):
    d = tmp_path / "t-0"
    log = open_log(d, recover=False)
    fill(log, 40)
    bases = log.segments.base_offsets()
    crash(log)
    victim = d / f"{bases[1]:020d}.log"
    raw = bytearray(victim.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    victim.write_bytes(bytes(raw))
    again = open_log(d, recover=True)
    assert again.segments.base_offsets() == bases[:2]
    got = all_records(again)
    assert got == model(40)[: len(got)] and bases[1] <= len(got) < bases[2]


def test_producer_state_rebuilt_after_reopen(tmp_path):
    d = tmp_path / "t-0"
    log = open_log(d, recover=False)
    b = build_batch([(None, b"a", NOW)], producer_id=9, producer_epoch=0, base_sequence=0)
    log.append(b)
    log.close()
    again = open_log(d, recover=False)
    assert again.append(b).duplicate


def test_active_indexes_grow_back_on_first_append_not_at_load(tmp_path):
    """Kafka resizes the active segment's indexes to segment.index.bytes at load; we defer the
    resize to the first append, so an idle partition's files stay as its clean close left them
    (and closing it again changes nothing), while capacity checks see the full size."""
    d = tmp_path / "t-0"
    log = open_log(d, recover=False, segment_bytes=100_000, segment_index_bytes=4096)
    fill(log, 5)
    seg = log.active_segment
    log.close()
    index, time_index = d / f"{0:020d}.index", d / f"{0:020d}.timeindex"
    trimmed = (index.stat().st_size, time_index.stat().st_size)
    assert trimmed == (seg.offset_index.entries * 8, seg.time_index.entries * 12) != (0, 0)

    idle = open_log(d, recover=False, segment_bytes=100_000, segment_index_bytes=4096)
    assert (index.stat().st_size, time_index.stat().st_size) == trimmed
    idle.close()
    assert (index.stat().st_size, time_index.stat().st_size) == trimmed

    again = open_log(d, recover=False, segment_bytes=100_000, segment_index_bytes=4096)
    seg = again.active_segment
    assert seg.offset_index.max_entries == 4096 // 8 and not seg.offset_index.is_full()
    fill(again, 3, start_ts=NOW + 1000)
    assert index.stat().st_size == 4096 and time_index.stat().st_size == 4096 // 12 * 12
    assert again.segments.base_offsets() == [0], "a trimmed index must not look full and roll"
    assert [r[0] for r in all_records(again)] == list(range(8))
    again.close()
    reopened = open_log(d, recover=False)
    assert [r[0] for r in all_records(reopened)] == list(range(8))
    assert_lookups(reopened, 5)


def test_full_time_index_after_load_still_rolls(tmp_path):
    """A deferred resize must not hide a full index: with room for only two time index
    entries (one kept for the roll entry), the second distinct timestamp rolls the segment."""
    d = tmp_path / "t-0"
    log = open_log(d, recover=False, segment_bytes=100_000, segment_index_bytes=24)
    fill(log, 1)
    log.close()
    again = open_log(d, recover=False, segment_bytes=100_000, segment_index_bytes=24)
    fill(again, 3, start_ts=NOW + 1000)
    assert len(again.segments.base_offsets()) > 1
    assert [r[0] for r in all_records(again)] == list(range(4))


class CountingOps(OsFileOps):
    """The real file system, counting fsyncs per file name."""

    def __init__(self):
        self.names: dict[int, str] = {}
        self.fsyncs: list[str] = []

    def open(self, path, mode="r"):
        fd = super().open(path, mode)
        self.names[fd] = os.path.basename(path)
        return fd

    def fsync(self, fd):
        self.fsyncs.append(self.names[fd])
        super().fsync(fd)


def test_clean_close_fsyncs_only_what_was_written(tmp_path):
    """A clean shutdown fsyncs every file written since its last fsync (Kafka fsyncs every
    segment at close); files a clean shutdown left and nobody wrote since need none."""
    d = tmp_path / "t-0"
    log = open_log(d, recover=False, segment_bytes=100_000)
    fill(log, 5)
    log.close()

    ops = CountingOps()
    idle = PartitionLog.open(d, cfg(segment_bytes=100_000), ManualClock(NOW), recover=False, file_ops=ops)
    idle.flush()
    idle.close()
    assert ops.fsyncs == []

    ops = CountingOps()
    busy = PartitionLog.open(d, cfg(segment_bytes=100_000), ManualClock(NOW), recover=False, file_ops=ops)
    fill(busy, 3, start_ts=NOW + 1000)
    busy.flush()
    assert sorted(ops.fsyncs) == sorted([f"{0:020d}.log", f"{0:020d}.index", f"{0:020d}.timeindex"])
    ops.fsyncs.clear()
    busy.close()  # trimming both indexes, the time index's close entry, the producer snapshot
    assert sorted(ops.fsyncs) == sorted([f"{0:020d}.index", f"{0:020d}.timeindex", f"{8:020d}.snapshot.tmp"])
    assert [r[0] for r in all_records(open_log(d, recover=False))] == list(range(8))


def test_unclean_load_fsyncs_the_files_it_found(tmp_path):
    """After a crash the found files may hold bytes the old process never fsynced: the first
    flush past the recovery point fsyncs them even if nothing was appended since."""
    d = tmp_path / "t-0"
    log = open_log(d, recover=False, segment_bytes=100_000)
    fill(log, 5)
    crash(log)
    ops = CountingOps()
    again = PartitionLog.open(d, cfg(segment_bytes=100_000), ManualClock(NOW), recover=True, file_ops=ops)
    again.flush()
    assert f"{0:020d}.log" in ops.fsyncs
