"""LogManager tests; mirror Kafka's LogManagerTest (testCreateLog, testCleanupExpiredSegments,
testCleanupSegmentsToMaintainSize, testDoesntCleanLogsWithCompactPolicy,
testCheckpointRecoveryPoints, clean shutdown), plus checkpoint format and dump tests."""
from __future__ import annotations

import random

import pytest

from protocol.records.record import build_batch
from storage.checkpoints import (
    CheckpointError, format_checkpoint, parse_checkpoint, read_checkpoint,
)
from storage.clock import ManualClock
from storage.dump import dump_index, dump_log, render, verify_index_only
from storage.manager import LogManager

NOW = 1_700_000_000_000


def mgr(tmp_path, clock=None, dirs=("d1",), **defaults):
    return LogManager([str(tmp_path / d) for d in dirs], {k: str(v) for k, v in defaults.items()},
                      clock or ManualClock(NOW), rng=random.Random(0))


def one(ts, value=b"x" * 20, key=None):
    return build_batch([(key, value, ts)])


def test_create_get_and_layout(tmp_path):
    """testCreateLog: the partition dir appears under a log dir."""
    m = mgr(tmp_path)
    m.load()
    lg = m.create("orders", 3, {"segment.bytes": "1000"})
    assert (tmp_path / "d1" / "orders-3" / "00000000000000000000.log").exists()
    assert m.get("orders", 3) is lg and m.create("orders", 3) is lg
    assert lg.config.segment_bytes == 1000
    assert m.get("orders", 4) is None


def test_partitions_spread_over_log_dirs(tmp_path):
    m = mgr(tmp_path, dirs=("a", "b"))
    m.load()
    for p in range(4):
        m.create("t", p)
    assert len(list((tmp_path / "a").iterdir())) == 2 and len(list((tmp_path / "b").iterdir())) == 2


def test_cleanup_expired_segments(tmp_path):
    """testCleanupExpiredSegments: retention driven by the manager, files go after the delay."""
    clock = ManualClock(NOW)
    m = mgr(tmp_path, clock, **{"log.retention.ms": 10_000, "log.segment.delete.delay.ms": 1000})
    m.load()
    size = len(one(0))
    lg = m.create("t", 0, {"segment.bytes": str(size * 2)})
    for i in range(6):
        lg.append(one(NOW - 20_000))
    lg.append(one(NOW))
    assert lg.num_segments == 4
    assert m.cleanup_expired() == 3
    assert lg.log_start_offset == 6
    d = tmp_path / "d1" / "t-0"
    assert any(p.name.endswith(".deleted") for p in d.iterdir())
    clock.advance(1000)
    m.cleanup_expired()
    assert not any(p.name.endswith(".deleted") for p in d.iterdir())


def test_cleanup_segments_to_maintain_size(tmp_path):
    """testCleanupSegmentsToMaintainSize."""
    m = mgr(tmp_path)
    m.load()
    size = len(one(0))
    lg = m.create("t", 0, {"segment.bytes": str(size * 2), "retention.bytes": str(size * 4)})
    for i in range(9):
        lg.append(one(NOW))
    assert lg.num_segments == 5
    assert m.cleanup_expired() == 2
    assert lg.size_in_bytes <= size * 5


def test_doesnt_clean_logs_with_compact_policy(tmp_path):
    """testDoesntCleanLogsWithCompactPolicy."""
    m = mgr(tmp_path, **{"log.retention.ms": 10_000})
    m.load()
    size = len(one(0, key=b"k"))
    lg = m.create("t", 0, {"segment.bytes": str(size * 2), "cleanup.policy": "compact"})
    for i in range(6):
        lg.append(one(NOW - 50_000, key=b"k"))
    assert m.cleanup_expired() == 0


def test_checkpoint_recovery_points_and_clean_shutdown(tmp_path):
    """testCheckpointRecoveryPoints + clean shutdown marker."""
    m = mgr(tmp_path)
    m.load()
    a = m.create("a", 0)
    b = m.create("b", 1)
    for i in range(5):
        a.append(one(NOW))
    b.append(one(NOW))
    a.flush()
    a.delete_records(2)
    m.checkpoint()
    rp = read_checkpoint(tmp_path / "d1" / "recovery-point-offset-checkpoint")
    assert rp == {("a", 0): 5, ("b", 1): 0}
    assert read_checkpoint(tmp_path / "d1" / "log-start-offset-checkpoint") == {("a", 0): 2}
    m.shutdown()
    assert (tmp_path / "d1" / ".kafka_cleanshutdown").exists()
    assert read_checkpoint(tmp_path / "d1" / "recovery-point-offset-checkpoint") == {("a", 0): 5, ("b", 1): 1}
    m2 = mgr(tmp_path)
    m2.load()
    assert not (tmp_path / "d1" / ".kafka_cleanshutdown").exists(), "marker removed after load"
    a2 = m2.get("a", 0)
    assert (a2.log_start_offset, a2.log_end_offset, a2.recovery_point) == (2, 5, 5)
    assert m2.get("b", 1).log_end_offset == 1


def test_unclean_load_recovers(tmp_path):
    m = mgr(tmp_path)
    m.load()
    lg = m.create("t", 0, {"segment.bytes": "300", "index.interval.bytes": "1"})
    for i in range(10):
        lg.append(one(NOW + i))
    for s in lg.segments.values():
        s.close_handlers()            # crash: no checkpoint, no marker
    with open(tmp_path / "d1" / "t-0" / f"{lg.active_segment.base_offset:020d}.log", "ab") as f:
        f.write(b"\x00garbage")
    calls = []
    m2 = LogManager([str(tmp_path / "d1")], {}, ManualClock(NOW), rng=random.Random(0),
                    topic_overrides={"t": {"segment.bytes": "300", "index.interval.bytes": "1"}},
                    progress=lambda *a: calls.append(a))
    m2.load()
    lg2 = m2.get("t", 0)
    assert lg2.log_end_offset == 10
    assert calls, "recovery reported progress"
    for i in range(10):
        assert lg2.offset_for_timestamp(NOW + i) == (i, NOW + i)


def test_delete_topic(tmp_path):
    clock = ManualClock(NOW)
    m = mgr(tmp_path, clock, **{"log.segment.delete.delay.ms": 500})
    m.load()
    m.create("gone", 0).append(one(NOW))
    m.create("gone", 1)
    m.create("kept", 0)
    assert m.delete_topic("gone") == 2
    assert m.get("gone", 0) is None
    names = [p.name for p in (tmp_path / "d1").iterdir() if p.is_dir()]
    assert sorted(n.split(".")[0] for n in names if n.endswith("-delete")) == ["gone-0", "gone-1"]
    clock.advance(500)
    m.run_pending_deletes()
    assert sorted(p.name for p in (tmp_path / "d1").iterdir() if p.is_dir()) == ["kept-0"]


def test_flush_dirty(tmp_path):
    clock = ManualClock(NOW)
    m = mgr(tmp_path, clock)
    m.load()
    lg = m.create("t", 0, {"flush.ms": "1000"})
    lg.append(one(NOW))
    assert m.flush_dirty() == 0
    clock.advance(1000)
    assert m.flush_dirty() == 1 and lg.recovery_point == 1


def test_checkpoint_format():
    """Kafka's CheckpointFile format: version, count, 'topic partition offset' lines."""
    data = format_checkpoint({("b", 1): 7, ("a", 0): 5})
    assert data == b"0\n2\na 0 5\nb 1 7\n"
    assert parse_checkpoint(data) == {("a", 0): 5, ("b", 1): 7}
    for bad in (b"1\n0\n", b"0\n2\na 0 5\n", b"0\n1\na 0\n", b"x\n"):
        with pytest.raises(CheckpointError):
            parse_checkpoint(bad)


def test_dump_log_and_verify_indexes(tmp_path):
    m = mgr(tmp_path)
    m.load()
    lg = m.create("t", 0, {"index.interval.bytes": "1"})
    for i in range(5):
        lg.append(build_batch([(None, b"a", NOW + i), (None, b"b", NOW + i)], compression=1))
    lg.close()
    d = tmp_path / "d1" / "t-0"
    dl = dump_log(d / "00000000000000000000.log", deep=True)
    assert [(b.base_offset, b.last_offset, b.crc_valid) for b in dl.batches] == [(i * 2, i * 2 + 1, True) for i in range(5)]
    assert dl.error is None and len(dl.batches[0].records) == 2
    text = render(dl)
    assert "baseOffset: 0 lastOffset: 1 count: 2" in text and "compresscodec: gzip" in text and "isvalid: true" in text
    oi = dump_index(d / "00000000000000000000.index")
    ti = verify_index_only(d / "00000000000000000000.timeindex")
    assert oi.checked and oi.ok and len(oi.entries) == 4
    assert ti.checked and ti.ok and ti.entries[-1] == (NOW + 4, 9)
    assert "passed the index sanity check" in render(ti, verify_only=True)
    # a wrong entry is reported
    raw = bytearray((d / "00000000000000000000.index").read_bytes())
    raw[3] = 2   # relative offset of entry 0 -> 2, but the batch there ends at offset 3
    (d / "00000000000000000000.index").write_bytes(bytes(raw))
    bad = dump_index(d / "00000000000000000000.index")
    assert not bad.ok and "index offset 2" in bad.mismatches[0]
    # a corrupt batch is flagged, a torn tail reported
    raw = bytearray((d / "00000000000000000000.log").read_bytes())
    raw[40] ^= 0xFF
    (d / "00000000000000000000.log").write_bytes(bytes(raw) + b"\x00\x01")
    dl2 = dump_log(d / "00000000000000000000.log")
    assert dl2.batches[0].crc_valid is False and dl2.trailing_bytes == 2


def test_a_checkpoint_snapshot_written_late_never_replaces_a_newer_one(tmp_path):
    """The broker takes checkpoint snapshots on its loop and writes them in a thread; a periodic
    write that finishes after a newer one (shutdown's) must not bring back older offsets."""
    m = mgr(tmp_path)
    m.load()
    a = m.create("a", 0)
    for i in range(5):
        a.append(one(NOW))
    a.flush()
    old = m.checkpoint_snapshot()          # taken before the records were deleted
    a.delete_records(3)
    m.checkpoint()                          # a newer snapshot, written first
    m.write_checkpoints(old)                # the older one's write arrives late: skipped
    assert read_checkpoint(tmp_path / "d1" / "log-start-offset-checkpoint") == {("a", 0): 3}
    a.delete_records(4)
    newer = m.checkpoint_snapshot()
    m.write_checkpoints(newer)
    assert read_checkpoint(tmp_path / "d1" / "log-start-offset-checkpoint") == {("a", 0): 4}
