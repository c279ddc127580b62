"""Full, failing and read-only disks (through ``storage.faults.FaultyFileOps``).

The bar: a failed append answers KAFKA_STORAGE_ERROR and leaves nothing half-written (not in
memory, not on disk, not after a restart); existing data stays readable; appends resume at
the same log end offset once the disk is healthy again.
"""
from __future__ import annotations

import errno
import os
import random

import pytest

from protocol.errors import ErrorCode
from storage.clock import ManualClock
from storage.errors import KafkaStorageError
from storage.faults import FaultyFileOps
from storage.manager import LogManager
from tests.reliability.inproc import InProcessBroker
from tests.reliability.test_faults import _batch, _expected, _records, _verify_indexes
from tests.reliability.wire import Wire

NOW = 1_700_000_000_000


def _mgr(root, ops, **defaults) -> LogManager:
    m = LogManager([str(root / "logs")], {k: str(v) for k, v in defaults.items()}, ManualClock(NOW),
                   file_ops=ops, rng=random.Random(0))
    m.load()
    return m


def _reopen_and_check(root, n_batches: int) -> None:
    m = _mgr(root, FaultyFileOps())
    assert _records(m.get("t", 0)) == _expected(n_batches)
    m.shutdown()
    _verify_indexes(root)


FAULTS = {
    "enospc-partial-log-write": lambda ops: ops.inject(errno.ENOSPC, ops=("pwrite",), path_contains=".log",
                                                       partial=True),
    "eio-log-write": lambda ops: ops.inject(errno.EIO, ops=("pwrite",), path_contains=".log"),
    "eio-index-write": lambda ops: ops.inject(errno.EIO, ops=("pwrite",), path_contains=".index"),
    "eio-timeindex-write": lambda ops: ops.inject(errno.EIO, ops=("pwrite",), path_contains=".timeindex"),
    "disk-full": lambda ops: ops.disk_full(37),
    "read-only": lambda ops: setattr(ops, "read_only", True),
    "enospc-and-cut-fails": lambda ops: (
        ops.inject(errno.ENOSPC, ops=("pwrite",), path_contains=".log", partial=True),
        ops.inject(errno.EIO, ops=("truncate",), path_contains=".log", times=1)),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
@pytest.mark.parametrize("segment_bytes", [350, 1 << 20])
def test_failed_append_leaves_nothing_and_appends_resume(tmp_path, fault, segment_bytes):
    ops = FaultyFileOps()
    m = _mgr(tmp_path, ops, **{"log.segment.bytes": segment_bytes, "log.index.interval.bytes": 1})
    lg = m.create("t", 0)
    for i in range(5):
        lg.append(_batch(i))
    size_before = sum(s.size for s in lg.segments.values())
    FAULTS[fault](ops)
    for _ in range(3):
        with pytest.raises(KafkaStorageError):
            lg.append(_batch(99))
    assert lg.log_end_offset == 15
    assert _records(lg) == _expected(5)          # reads keep working
    ops.clear_faults()
    assert sum(s.size for s in lg.segments.values()) == size_before
    for i in range(5, 10):                       # space is back: same offsets as if nothing happened
        assert lg.append(_batch(i)).base_offset == 3 * i
    assert _records(lg) == _expected(10)
    m.shutdown()
    _reopen_and_check(tmp_path, 10)


@pytest.mark.parametrize("fault", ["enospc-partial-log-write", "enospc-and-cut-fails", "disk-full"])
def test_restart_while_the_disk_is_still_failing_loses_nothing_acknowledged(tmp_path, fault):
    ops = FaultyFileOps()
    m = _mgr(tmp_path, ops, **{"log.segment.bytes": 350})
    lg = m.create("t", 0)
    for i in range(7):
        lg.append(_batch(i))
    FAULTS[fault](ops)
    with pytest.raises(KafkaStorageError):
        lg.append(_batch(99))
    try:
        m.shutdown()           # may fail (no space for checkpoints): then the next start recovers
    except (OSError, KafkaStorageError):
        pass
    _reopen_and_check(tmp_path, 7)


# ------------------------------------------------------------------------------ through the broker

@pytest.fixture
def faulty_broker(tmp_path):
    ops = FaultyFileOps()
    b = InProcessBroker(tmp_path / "data", {"log.segment.bytes": 2000}, file_ops=ops).start()
    yield b, ops
    ops.clear_faults()
    b.stop()
    ops.cleanup()


@pytest.mark.parametrize("fault", ["enospc-partial-log-write", "eio-log-write", "read-only", "disk-full"])
def test_produce_answers_kafka_storage_error_fetch_keeps_working_and_appends_resume(faulty_broker, fault):
    b, ops = faulty_broker
    c = Wire(b.bootstrap)
    other = Wire(b.bootstrap)
    c.create_topic("df")
    for i in range(20):
        assert c.produce("df", 0, [b"v%d" % i]).error_code == 0
    FAULTS[fault](ops)
    for acks in (1, -1):
        r = c.produce("df", 0, [b"lost"], acks=acks)
        assert r.error_code == ErrorCode.KAFKA_STORAGE_ERROR, r
    # the connection and other sessions carry on; existing data is served
    recs, _lso, hwm = other.read_all("df", 0)
    assert hwm == 20 and [v for _o, v in recs] == [b"v%d" % i for i in range(20)]
    assert c.list_offset("df", 0, -1) == 20
    ops.clear_faults()
    r = c.produce("df", 0, [b"back"])
    assert (r.error_code, r.base_offset) == (0, 20)
    recs, _lso, hwm = other.read_all("df", 0)
    assert hwm == 21 and recs[-1] == (20, b"back")
    c.close()
    other.close()


def test_idempotent_producer_retry_after_storage_error_is_not_duplicated(faulty_broker):
    b, ops = faulty_broker
    c = Wire(b.bootstrap)
    c.create_topic("idf")
    pid, epoch = c.init_producer_id()
    assert c.produce("idf", 0, [b"a", b"b"], producer_id=pid, producer_epoch=epoch, base_sequence=0).error_code == 0
    ops.inject(errno.ENOSPC, ops=("pwrite",), path_contains=".log", partial=True)
    r = c.produce("idf", 0, [b"c"], producer_id=pid, producer_epoch=epoch, base_sequence=2)
    assert r.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    ops.clear_faults()
    r1 = c.produce("idf", 0, [b"c"], producer_id=pid, producer_epoch=epoch, base_sequence=2)
    r2 = c.produce("idf", 0, [b"c"], producer_id=pid, producer_epoch=epoch, base_sequence=2)
    assert (r1.error_code, r1.base_offset) == (0, 2) and (r2.error_code, r2.base_offset) == (0, 2)
    recs, _lso, hwm = c.read_all("idf", 0)
    assert [v for _o, v in recs] == [b"a", b"b", b"c"]
    c.close()
