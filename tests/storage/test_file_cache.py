"""The bounded cache of open segment and index files (storage.lru, storage.files.FileCache).

The eviction choice is checked against a brute-force model; the cache itself on real files:
at most ``capacity`` descriptors after any operation, never one closed under a read in
flight (also from another thread), data intact across evictions, fsync after an eviction
still durable, a file removed while evicted not recreated, EMFILE met by giving
descriptors back and logged once per interval.
"""
from __future__ import annotations

import errno
import logging
import os
import random
import threading

import pytest
from hypothesis import given, settings, strategies as st

from protocol.records.batch import iter_batch_positions
from protocol.records.record import build_batch, decode_batch
from storage.clock import ManualClock
from storage.faults import FaultyFileOps
from storage.files import (
    FdExhaustionLog, FileCache, OsFileOps, capacity_for_limit,
)
from storage.log import PartitionLog
from storage.log_config import LogConfig
from storage.lru import PinnedLru


# ---------------------------------------------------------------------------------------------
# the eviction choice, against a model

class Model:
    """Recency as a plain list (oldest first) and pins as a dict."""

    def __init__(self):
        self.order: list = []
        self.pins: dict = {}

    def add(self, k):
        self.order.append(k)
        self.pins[k] = 0

    def touch(self, k):
        self.order.remove(k)
        self.order.append(k)

    def pin(self, k):
        self.pins[k] += 1
        self.touch(k)

    def unpin(self, k):
        self.pins[k] -= 1

    def discard(self, k):
        if k in self.pins:
            self.order.remove(k)
            del self.pins[k]

    def evict(self, capacity):
        out = []
        for k in list(self.order):
            if len(self.order) <= capacity:
                break
            if self.pins[k] == 0:
                out.append(k)
                self.discard(k)
        return out


ops = st.lists(st.tuples(st.sampled_from(["add", "touch", "pin", "unpin", "discard", "evict"]),
                         st.integers(0, 7), st.integers(0, 6)), max_size=80)


@settings(max_examples=300, deadline=None)
@given(ops)
def test_pinned_lru_matches_the_model(steps):
    m = Model()
    lru = PinnedLru(lambda k: m.pins[k])    # pins live with their owners, as CachedFile.pins
    for op, key, cap in steps:
        present = key in m.pins
        if op == "add":
            if present:
                with pytest.raises(ValueError):
                    lru.add(key)
            else:
                lru.add(key)
                m.add(key)
        elif op == "touch" and present:
            lru.touch(key)
            m.touch(key)
        elif op == "pin" and present:      # what an acquire does: pin and touch
            m.pin(key)
            lru.touch(key)
        elif op == "unpin" and present and m.pins[key]:
            m.unpin(key)
        elif op == "discard":
            lru.discard(key)
            m.discard(key)
        elif op == "evict":
            victims = lru.evict(cap)
            assert victims == m.evict(cap)
        assert list(lru) == m.order
        assert lru.pinned() == sum(1 for n in m.pins.values() if n)


def test_capacity_leaves_room_for_sockets():
    assert capacity_for_limit(1024) == 768
    assert capacity_for_limit(256) == 192
    assert capacity_for_limit(20000) == 15000
    assert capacity_for_limit(10) == 8


# ---------------------------------------------------------------------------------------------
# the cache on real files

def _files(tmp_path, n, ops, cache, size=64):
    hs = []
    for i in range(n):
        p = tmp_path / f"f{i}"
        p.write_bytes(bytes([i]) * size)
        hs.append(cache.handle(ops, p, "rw"))
    return hs


def test_at_most_capacity_open_and_data_intact(tmp_path):
    ops, cache = OsFileOps(), FileCache(4)
    hs = _files(tmp_path, 20, ops, cache)
    rng = random.Random(7)
    for _ in range(500):
        i = rng.randrange(20)
        if rng.random() < 0.3:
            hs[i].pwrite(bytes([i]), rng.randrange(64))
        else:
            assert hs[i].pread(64, 0) == bytes([i]) * 64
        assert len(cache) <= 4
        assert sum(h.is_open for h in hs) == len(cache)
    assert cache.evictions > 0
    for h in hs:
        h.close()
    assert len(cache) == 0


def test_a_pinned_descriptor_is_never_evicted(tmp_path):
    ops, cache = OsFileOps(), FileCache(2)
    hs = _files(tmp_path, 10, ops, cache)
    fd = hs[0].acquire()
    ino = os.fstat(fd).st_ino
    for h in hs[1:]:
        h.pread(1, 0)
    assert hs[0].is_open and os.fstat(fd).st_ino == ino == os.stat(tmp_path / "f0").st_ino
    assert len(cache) == 2
    hs[0].close()                      # closing while pinned waits for the release
    assert hs[0].is_open
    hs[0].release()
    assert not hs[0].is_open
    with pytest.raises(OSError):
        hs[0].pread(1, 0)


def test_reads_in_another_thread_while_the_cache_evicts(tmp_path):
    """Dozens of rounds: a thread reads one file through the cache while this thread churns
    through others under a capacity of 2; no read sees a closed or reused descriptor."""
    ops, cache = OsFileOps(), FileCache(2)
    hs = _files(tmp_path, 12, ops, cache, size=4096)
    errors: list = []
    stop = threading.Event()

    def reader():
        try:
            while not stop.is_set():
                assert hs[0].pread(4096, 0) == bytes([0]) * 4096
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    t = threading.Thread(target=reader)
    t.start()
    try:
        for round_ in range(60):
            for h in hs[1:]:
                assert h.pread(16, round_ % 100) == bytes([hs.index(h)]) * 16
    finally:
        stop.set()
        t.join()
    assert not errors
    assert cache.evictions > 0


def test_reopen_does_not_recreate_a_removed_file(tmp_path):
    ops, cache = OsFileOps(), FileCache(1)
    p = tmp_path / "new"
    fd = ops.open(p, "rw+")
    h = cache.handle(ops, p, "rw+", fd)
    h.pwrite(b"abc", 0)
    other = _files(tmp_path, 1, ops, cache)[0]
    other.pread(1, 0)                  # evicts h
    assert not h.is_open
    os.remove(p)
    with pytest.raises(FileNotFoundError):
        h.pread(3, 0)
    assert not p.exists()


def test_fsync_after_eviction_makes_the_write_durable(tmp_path):
    ops = FaultyFileOps()
    ops.file_cache.set_capacity(1)
    p = tmp_path / "seg"
    h = ops.cached(p, "rw+", ops.open(p, "rw+"))
    ops.fsync_dir(tmp_path)
    h.pwrite(b"x" * 100, 0)
    ops.cached(tmp_path / "other", "rw+", ops.open(tmp_path / "other", "rw+"))   # evicts h
    assert not h.is_open
    h.fsync()
    ops.power_loss()
    assert p.read_bytes() == b"x" * 100
    assert len(ops.file_cache) == 0    # power loss closed everything; the cache forgot it


def test_emfile_gives_descriptors_back_and_retries(tmp_path, caplog):
    ops = FaultyFileOps(track_unsynced=False)
    cache = ops.file_cache
    cache.set_capacity(100)
    hs = _files(tmp_path, 40, ops, cache)
    for h in hs[:39]:
        h.pread(1, 0)
    assert len(cache) == 39
    ops.inject(errno.EMFILE, ops=("open_write",), times=1)
    with caplog.at_level(logging.WARNING, logger="storage.files"):
        assert hs[39].pread(1, 0) == bytes([39])
    assert len(cache) < 39 and cache.capacity < 100        # gave some back, holds fewer now
    assert "out of file descriptors" in caplog.text and "limit" in caplog.text
    ops.inject(errno.EMFILE, ops=("open_write",))
    cache.close_all()
    with pytest.raises(OSError) as ei:
        hs[0].pread(1, 0)
    assert ei.value.errno == errno.EMFILE
    ops.clear_faults()
    assert hs[0].pread(1, 0) == bytes([0])


def test_exhaustion_is_logged_once_per_interval(caplog):
    rep = FdExhaustionLog(interval_s=3600)
    with caplog.at_level(logging.WARNING, logger="storage.files"):
        assert rep.note("accept")
        assert not any(rep.note("accept") for _ in range(50))
    assert caplog.text.count("out of file descriptors") == 1 and rep.total == 51


# ---------------------------------------------------------------------------------------------
# a partition log under a tiny cache

def _log(tmp_path, ops):
    cfg = LogConfig.from_props({}, {"segment.bytes": "600", "index.interval.bytes": "100"})
    return PartitionLog.open(tmp_path / "t-0", cfg, ManualClock(1_000), file_ops=ops, recover=False)


def test_reader_on_an_old_segment_while_the_cache_evicts(tmp_path):
    ops = OsFileOps()
    ops.file_cache.set_capacity(3)
    lg = _log(tmp_path, ops)
    for i in range(60):
        lg.append(build_batch([(None, b"v%03d" % i + b"." * 60, 1_000 + i)]))
    segs = lg.segments.values()
    assert len(segs) > 10 and len(ops.file_cache) <= 3
    old = segs[1]
    # a header walk of an old segment, suspended while every other segment is read
    walk = old.iter_headers(0)
    first = next(walk)
    for _ in range(3):
        for s in segs:
            if s is not old:
                assert s.read(s.base_offset, 10_000) is not None
                assert len(ops.file_cache) <= 3
    rest = list(walk)
    assert [h.base_offset for _p, h in [first] + rest] == list(range(old.base_offset, segs[2].base_offset))
    # every record reads back, in order, through reopened descriptors
    got, off = [], 0
    while off < lg.log_end_offset:
        data = lg.read(off, 100_000).data
        for pos, h in iter_batch_positions(data):
            got.extend(r.value for r in decode_batch(data, pos)[1])
            off = h.base_offset + h.last_offset_delta + 1
        assert len(ops.file_cache) <= 3
    assert got == [b"v%03d" % i + b"." * 60 for i in range(60)]
    lg.close()
    assert len(ops.file_cache) == 0


# ---------------------------------------------------------------------------------------------
# a clean shutdown syncs the file system once instead of fsyncing file by file

def test_clean_shutdown_syncs_once_and_survives_a_power_loss(tmp_path):
    from storage.manager import LogManager
    ops = FaultyFileOps()
    m = LogManager([str(tmp_path / "d")], {}, ManualClock(1_000), file_ops=ops)
    m.load()
    for p in range(20):
        m.create("t", p).append(build_batch([(None, b"r%d" % p, 1_000)], producer_id=-1))
    fsyncs = ops.counts.get("fsync", 0)
    m.shutdown()
    assert ops.counts.get("syncfs") == 1 + 1            # the probe, then once per log dir
    assert ops.counts.get("fsync", 0) - fsyncs <= 4     # checkpoints and the marker only
    ops.power_loss()
    m2 = LogManager([str(tmp_path / "d")], {}, ManualClock(2_000))
    m2.load()
    for p in range(20):
        lg = m2.get("t", p)
        data = lg.read(0, 10_000).data
        assert [r.value for r in decode_batch(data, 0)[1]] == [b"r%d" % p]
        assert lg.recovery_point == 1
    m2.shutdown()
