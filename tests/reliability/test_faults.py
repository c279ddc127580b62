"""The fault layer itself (``storage.faults.FaultyFileOps``) and what the storage layer does under
it: simulated power loss with and without ``flush.messages=1``, full/failing/read-only disks.

Each test drives real ``LogManager``/``PartitionLog`` objects over real files in a temp dir, then
"crashes" (``power_loss``) and reopens with a fresh manager, as a restarted broker would.
"""
from __future__ import annotations

import errno
import os
import random

import pytest

from protocol.records.record import build_batch, decode_batch
from protocol.records.batch import iter_batch_positions
from storage.clock import ManualClock
from storage.dump import verify_index_only
from storage.errors import KafkaStorageError
from storage.faults import FaultyFileOps
from storage.files import OsFileOps
from storage.manager import LogManager

NOW = 1_700_000_000_000


# ---------------------------------------------------------------------------------- the layer

def test_unsynced_write_is_dropped_and_synced_write_survives(tmp_path):
    ops = FaultyFileOps()
    ops.mkdir(tmp_path / "d")
    ops.fsync_dir(tmp_path)
    fd = ops.open(tmp_path / "d" / "f", "rw+")
    ops.pwrite(fd, b"hello", 0)
    ops.fsync(fd)
    ops.fsync_dir(tmp_path / "d")
    ops.pwrite(fd, b" world", 5)
    ops.pwrite(fd, b"J", 0)
    assert ops.unsynced_bytes() == 7
    rep = ops.power_loss()
    assert rep.bytes_dropped == 7
    assert (tmp_path / "d" / "f").read_bytes() == b"hello"


def test_new_file_vanishes_without_directory_fsync(tmp_path):
    ops = FaultyFileOps()
    fd = ops.open(tmp_path / "new", "rw+")
    ops.pwrite(fd, b"data", 0)
    ops.fsync(fd)          # data durable, but the name is not
    ops.power_loss()
    assert not (tmp_path / "new").exists()


def test_rename_and_remove_roll_back_unless_directory_synced(tmp_path):
    (tmp_path / "a").write_bytes(b"A")
    (tmp_path / "b").write_bytes(b"B")
    (tmp_path / "c").write_bytes(b"C")
    ops = FaultyFileOps()
    ops.rename(tmp_path / "a", tmp_path / "b")   # replaces b
    ops.remove(tmp_path / "c")
    ops.power_loss()
    assert (tmp_path / "a").read_bytes() == b"A" and (tmp_path / "b").read_bytes() == b"B"
    assert (tmp_path / "c").read_bytes() == b"C"
    ops.rename(tmp_path / "a", tmp_path / "b")
    ops.fsync_dir(tmp_path)
    ops.power_loss()
    assert not (tmp_path / "a").exists() and (tmp_path / "b").read_bytes() == b"A"


def test_truncate_is_rolled_back(tmp_path):
    (tmp_path / "f").write_bytes(b"0123456789")
    ops = FaultyFileOps()
    fd = ops.open(tmp_path / "f", "rw")
    ops.truncate(fd, 4)
    ops.pwrite(fd, b"xy", 4)
    ops.truncate(fd, 100)
    ops.power_loss()
    assert (tmp_path / "f").read_bytes() == b"0123456789"


def test_partial_power_loss_keeps_a_prefix_of_writes(tmp_path):
    for seed in range(30):
        p = tmp_path / f"f{seed}"
        p.write_bytes(b"")
        ops = FaultyFileOps()
        fd = ops.open(p, "rw")
        chunks = [bytes([65 + i]) * 10 for i in range(5)]
        for i, c in enumerate(chunks):
            ops.pwrite(fd, c, i * 10)
        ops.power_loss(random.Random(seed))
        got = p.read_bytes()
        full = b"".join(chunks)
        assert full.startswith(got), (seed, got)


def test_injected_errors_and_disk_full(tmp_path):
    ops = FaultyFileOps()
    fd = ops.open(tmp_path / "f", "rw+")
    rule = ops.inject(errno.EIO, ops=("pwrite",), times=1)
    with pytest.raises(OSError) as ei:
        ops.pwrite(fd, b"abc", 0)
    assert ei.value.errno == errno.EIO and rule.fired == 1
    ops.pwrite(fd, b"abc", 0)          # the rule fired its one time
    ops.disk_full(2)
    with pytest.raises(OSError) as ei:
        ops.pwrite(fd, b"defg", 3)
    assert ei.value.errno == errno.ENOSPC
    assert (tmp_path / "f").read_bytes() == b"abcde"   # what fitted landed, as on a real disk
    ops.pwrite(fd, b"XY", 0)           # overwrite in place needs no space
    with pytest.raises(OSError):
        ops.open(tmp_path / "g", "rw+")
    ops.clear_faults()
    ops.read_only = True
    with pytest.raises(OSError) as ei:
        ops.rename(tmp_path / "f", tmp_path / "h")
    assert ei.value.errno == errno.EROFS
    assert ops.pread(fd, 5, 0) == b"XYcde"
    ops.clear_faults()
    ops.close(fd)


# ------------------------------------------------------------------------- storage under faults

def _mgr(root, ops, **defaults) -> LogManager:
    m = LogManager([str(root / "logs")], {k: str(v) for k, v in defaults.items()}, ManualClock(NOW),
                   file_ops=ops, rng=random.Random(0))
    m.load()
    return m


def _batch(i: int, n: int = 3) -> bytes:
    return build_batch([(b"k%d" % i, b"v%d-%d" % (i, j), NOW + i) for j in range(n)])


def _records(lg) -> list[tuple[int, bytes]]:
    out: list[tuple[int, bytes]] = []
    offset = lg.log_start_offset
    while offset < lg.log_end_offset:
        data = lg.read(offset, 1 << 30, min_one=True).data   # one segment at a time
        assert data, f"no data at offset {offset} below the log end offset {lg.log_end_offset}"
        for pos, _h in iter_batch_positions(data):
            _hdr, recs = decode_batch(data, pos)
            out.extend((r.offset, r.value) for r in recs if r.offset >= offset)
        offset = out[-1][0] + 1
    return out


def _expected(n_batches: int, per: int = 3) -> list[tuple[int, bytes]]:
    return [(i * per + j, b"v%d-%d" % (i, j)) for i in range(n_batches) for j in range(per)]


def _verify_indexes(root) -> None:
    for dirpath, _dirs, files in os.walk(root / "logs"):
        for f in files:
            if f.endswith((".index", ".timeindex")):
                res = verify_index_only(os.path.join(dirpath, f))
                assert res.ok, (f, res.mismatches)


@pytest.mark.parametrize("segment_bytes", [300, 1 << 20])
def test_flush_messages_1_acknowledged_survives_power_loss(tmp_path, segment_bytes):
    """Durable mode: with flush.messages=1 every append that returned survives a power loss,
    including segments rolled since the last flush and a topic created just before."""
    ops = FaultyFileOps()
    m = _mgr(tmp_path, ops, **{"log.flush.interval.messages": 1, "log.segment.bytes": segment_bytes})
    lg = m.create("t", 0)
    for i in range(40):
        lg.append(_batch(i))
    assert ops.unsynced_bytes() == 0
    ops.power_loss()
    m2 = _mgr(tmp_path, FaultyFileOps())
    lg2 = m2.get("t", 0)
    assert lg2 is not None, "an acknowledged partition vanished"
    assert _records(lg2) == _expected(40)
    assert lg2.log_end_offset == 120


@pytest.mark.parametrize("seed", range(12))
def test_default_policy_loss_is_bounded_and_recovery_yields_a_clean_prefix(tmp_path, seed):
    """No flush policy: a power loss may drop what was appended since the last roll (rolls
    fsync the old segment), never more; what remains is a clean prefix with valid indexes,
    and the log takes appends again at its new end."""
    rng = random.Random(seed)
    ops = FaultyFileOps()
    m = _mgr(tmp_path, ops, **{"log.segment.bytes": 400, "log.index.interval.bytes": 50})
    lg = m.create("t", 0)
    m.checkpoint()
    n = rng.randint(5, 60)
    for i in range(n):
        lg.append(_batch(i))
        if rng.random() < 0.1:
            m.checkpoint()
    durable_floor = lg.recovery_point
    ops.power_loss(rng if seed % 2 else None)
    m2 = _mgr(tmp_path, FaultyFileOps())
    lg2 = m2.get("t", 0)
    assert lg2 is not None
    got = _records(lg2)
    assert got == _expected(n)[: len(got)], "recovery must keep a clean prefix"
    assert lg2.log_end_offset == len(got)
    assert len(got) >= durable_floor, (len(got), durable_floor)
    lg2.append(_batch(999))
    assert _records(lg2)[-1][0] == len(got) + 2
    m2.shutdown()
    _verify_indexes(tmp_path)


def test_power_loss_during_retention_and_checkpoints_keeps_a_consistent_log(tmp_path):
    ops = FaultyFileOps()
    m = _mgr(tmp_path, ops, **{"log.segment.bytes": 300, "log.retention.bytes": 900,
                               "log.flush.interval.messages": 1})
    lg = m.create("t", 0)
    for i in range(30):
        lg.append(_batch(i))
        if i % 7 == 0:
            m.cleanup_expired()
            m.checkpoint()
    start = lg.log_start_offset
    ops.power_loss()
    m2 = _mgr(tmp_path, FaultyFileOps())
    lg2 = m2.get("t", 0)
    got = _records(lg2)
    assert lg2.log_end_offset == 90
    # retention may be undone by the power loss (its renames were not synced), data never lost
    assert lg2.log_start_offset <= start
    assert got == [r for r in _expected(30) if r[0] >= lg2.log_start_offset]


def test_power_loss_right_after_clean_shutdown_loads_cleanly(tmp_path):
    """A clean shutdown is trusted (no recovery) at the next start, so everything it wrote,
    trimmed index lengths included, must be durable before the marker is."""
    ops = FaultyFileOps()
    m = _mgr(tmp_path, ops, **{"log.segment.bytes": 400, "log.index.interval.bytes": 50})
    lg = m.create("t", 0)
    for i in range(25):
        lg.append(_batch(i))
    m.shutdown()
    assert ops.unsynced_bytes() == 0 and not ops.pending_names
    ops.power_loss()
    _verify_indexes(tmp_path)
    m2 = _mgr(tmp_path, FaultyFileOps())
    lg2 = m2.get("t", 0)
    assert _records(lg2) == _expected(25)
    assert lg2.offset_for_timestamp(NOW + 20)[0] == 60


def test_clean_restarts_with_and_without_appends_stay_durable(tmp_path):
    """Files a clean shutdown left are trusted without a new fsync, and so is the producer
    snapshot it wrote; anything a later run appends (and the snapshot replacing the old one)
    is durable again by its own clean shutdown. Power is lost after each shutdown."""
    def idem(seq):
        return build_batch([(None, b"p%d" % (seq + j), NOW + seq + j) for j in range(3)],
                           producer_id=5, producer_epoch=0, base_sequence=seq)

    ops = FaultyFileOps()
    m = _mgr(tmp_path, ops, **{"log.segment.bytes": 400})
    lg = m.create("t", 0)
    for seq in range(0, 30, 3):
        lg.append(idem(seq))
    m.shutdown()
    ops.power_loss()

    ops = FaultyFileOps()
    m = _mgr(tmp_path, ops)   # idle run: its shutdown has nothing to write
    m.shutdown()
    assert ops.unsynced_bytes() == 0 and not ops.pending_names
    ops.power_loss()

    ops = FaultyFileOps()
    m = _mgr(tmp_path, ops, **{"log.segment.bytes": 400})
    lg = m.get("t", 0)
    assert lg.append(idem(27)).duplicate, "producer state came back from the snapshot"
    for seq in range(30, 45, 3):
        lg.append(idem(seq))
    m.shutdown()
    assert ops.unsynced_bytes() == 0 and not ops.pending_names
    ops.power_loss()

    m = _mgr(tmp_path, FaultyFileOps())
    lg = m.get("t", 0)
    assert lg.log_end_offset == 45
    assert [v for _o, v in _records(lg)] == [b"p%d" % i for i in range(45)]
    assert lg.append(idem(42)).duplicate
    # one snapshot per roll (Kafka's, named after the new segment) and the last close's at 45
    rolled = [f"{b:020d}.snapshot" for b in lg.segments.base_offsets()[1:]]
    assert sorted(n for n in os.listdir(lg.dir) if n.endswith(".snapshot")) == rolled + [f"{45:020d}.snapshot"]
    _verify_indexes(tmp_path)
