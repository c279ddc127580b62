"""Producer state snapshots (Kafka's ``<offset>.snapshot`` files): the format, and a clean
restart that reads one instead of replaying batch headers (ProducerStateManagerTest rows)."""
from __future__ import annotations

import os
import random
import struct

import pytest
from crc32c import crc32c
from hypothesis import given, settings, strategies as st

import storage.loader as loader
from protocol.records.record import build_batch
from storage.clock import ManualClock
from storage.log import PartitionLog
from storage.log_config import LogConfig
from storage.producer_snapshot import (
    CorruptSnapshotError, decode_snapshot, encode_snapshot, first_sequence,
)
from storage.producer_state import INT_MAX, ProducerStateManager, last_sequence

NOW = 1_700_000_000_000


# -- the format --------------------------------------------------------------------------------
def test_layout_is_kafkas():
    """version int16, crc uint32 (CRC-32C of what follows), int32 count, then per producer
    id, epoch, last sequence, last offset, offset delta, timestamp, coordinator epoch and
    current transaction first offset: 46 bytes each."""
    m = ProducerStateManager()
    m.update(42, 3, 10, 14, 100, 104, NOW)
    data = encode_snapshot(m)
    assert len(data) == 2 + 4 + 4 + 46
    version, crc = struct.unpack_from(">hI", data, 0)
    assert version == 1 and crc == crc32c(data[6:])
    assert struct.unpack_from(">i", data, 6) == (1,)
    assert struct.unpack_from(">qhiqiqiq", data, 10) == (42, 3, 14, 104, 4, NOW, -1, -1)


def test_a_producer_without_a_data_batch_has_no_batch_after_reload():
    m = ProducerStateManager()
    m.update(5, 2, -1, -1, 7, 7, NOW)  # e.g. only a batch without a sequence
    back = decode_snapshot(encode_snapshot(m))
    e = back.last_entry(5)
    assert e.producer_epoch == 2 and not e.batches and e.last_timestamp == NOW
    assert struct.unpack_from(">iq", encode_snapshot(m), 10 + 10) == (-1, -1)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2**40), st.integers(0, 5), st.integers(0, INT_MAX),
                          st.integers(0, 1000), st.integers(0, 2**40), st.integers(-1, 2**41)),
                max_size=20))
def test_round_trip_keeps_each_producers_last_batch(batches):
    """Against the model: after a round trip every producer has its epoch, last timestamp
    and exactly its last batch (first/last offset and sequence, wrapping at Int.MAX)."""
    m = ProducerStateManager()
    for pid, epoch, first_seq, delta, first_offset, ts in batches:
        m.update(pid, epoch, first_seq, last_sequence(first_seq, delta), first_offset, first_offset + delta, ts)
    back = decode_snapshot(encode_snapshot(m))
    assert sorted(back.producer_ids()) == sorted(m.producer_ids())
    for pid in m.producer_ids():
        want, got = m.last_entry(pid), back.last_entry(pid)
        assert (got.producer_epoch, got.last_timestamp) == (want.producer_epoch, want.last_timestamp)
        assert list(got.batches) == [want.batches[-1]]


def test_first_sequence_undoes_last_sequence_across_the_wrap():
    for first, delta in [(0, 0), (5, 10), (INT_MAX - 3, 10), (INT_MAX, 1), (INT_MAX, 0)]:
        assert first_sequence(last_sequence(first, delta), delta) == first


@pytest.mark.parametrize("damage", ["flip", "truncate", "version", "empty"])
def test_damaged_snapshot_is_refused(damage):
    m = ProducerStateManager()
    m.update(1, 0, 0, 9, 0, 9, NOW)
    data = bytearray(encode_snapshot(m))
    if damage == "flip":
        data[20] ^= 0x01
    elif damage == "truncate":
        data = data[:-3]
    elif damage == "version":
        data[1] = 2
    else:
        data = bytearray()
    with pytest.raises(CorruptSnapshotError):
        decode_snapshot(bytes(data))


# -- a log restarting ------------------------------------------------------------------------
def cfg():
    return LogConfig.from_props({}, {"segment.bytes": "1000"})


def open_log(d, recover=False):
    return PartitionLog.open(d, cfg(), ManualClock(NOW), recover=recover, rng=random.Random(0))


def idempotent(pid, seq, n=3, epoch=0):
    return build_batch([(None, b"v%d" % (seq + i), NOW + seq + i) for i in range(n)],
                       producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def snapshots(d):
    return sorted(n for n in os.listdir(d) if ".snapshot" in n)


def test_clean_restart_reads_the_snapshot_and_replays_nothing(tmp_path, monkeypatch):
    d = tmp_path / "t-0"
    log = open_log(d)
    for pid in (7, 8):
        for seq in range(0, 60, 3):
            log.append(idempotent(pid, seq))
    last = idempotent(7, 57)
    assert len(log.segments) > 2
    rolled = [f"{b:020d}.snapshot" for b in log.segments.base_offsets()[1:]]
    log.close()
    assert snapshots(d) == rolled + [f"{120:020d}.snapshot"], "one per roll (Kafka) and one at the close"

    def no_replay(*_a, **_k):
        raise AssertionError("producer state was replayed from the log")
    monkeypatch.setattr(loader, "replay_segment", no_replay)
    again = open_log(d)
    assert again.append(last).duplicate, "the last batch of a producer is still recognised"
    info = again.append(idempotent(7, 60))
    assert not info.duplicate and info.base_offset == 120
    with pytest.raises(Exception, match="[Ss]equence"):
        again.append(idempotent(8, 66))  # a gap after its last batch (57..59)
    again.close()
    assert snapshots(d) == rolled + [f"{123:020d}.snapshot"], "the new close snapshot replaces the old one"


def test_idle_restart_leaves_the_snapshot_as_it_is(tmp_path):
    d = tmp_path / "t-0"
    log = open_log(d)
    log.append(idempotent(3, 0))
    log.close()
    path = d / f"{3:020d}.snapshot"
    before = (path.stat().st_ino, path.stat().st_mtime_ns)
    open_log(d).close()
    assert (path.stat().st_ino, path.stat().st_mtime_ns) == before


def test_unclean_restart_ignores_snapshots_and_replays(tmp_path):
    """After a crash the state is reloaded at the first segment to recover (Kafka's
    recoverSegment): snapshots past its base offset, such as the last clean close's, are not
    used and the log is replayed. (Kafka also deletes their files; here one at or below the
    recovered log end stays, it still describes intact data: removing a file per partition
    was most of a restart after kill -9 with thousands of partitions.)"""
    d = tmp_path / "t-0"
    log = open_log(d)
    log.append(idempotent(3, 0))
    log.close()
    again = open_log(d)
    again.append(idempotent(3, 3))
    for s in again.segments.values():
        s.close_handlers()  # killed: no clean close, the old snapshot stays on disk
    crashed = open_log(d, recover=True)
    assert snapshots(d) == [f"{3:020d}.snapshot"]
    assert crashed.append(idempotent(3, 3)).duplicate, "state replayed from the log, not the stale snapshot"
    crashed.truncate_to(2)                       # a cut below it takes it away
    assert snapshots(d) == []


@pytest.mark.parametrize("damage", ["corrupt", "wrong offset", "leftover tmp"])
def test_unusable_snapshot_files_are_removed_and_the_log_replayed(tmp_path, damage, caplog):
    d = tmp_path / "t-0"
    log = open_log(d)
    log.append(idempotent(3, 0))
    log.close()
    path = d / f"{3:020d}.snapshot"
    if damage == "corrupt":
        data = bytearray(path.read_bytes())
        data[-1] ^= 0xFF
        path.write_bytes(bytes(data))
    elif damage == "wrong offset":
        path.rename(d / f"{2:020d}.snapshot")
    else:
        (d / f"{3:020d}.snapshot.tmp").write_bytes(b"half")
    again = open_log(d)
    assert again.append(idempotent(3, 0)).duplicate
    if damage == "corrupt":
        assert "ignoring producer snapshot" in caplog.text
        assert snapshots(d) == []
    elif damage == "wrong offset":
        # a snapshot below the log end offset is a valid starting point (Kafka keeps the
        # newest stray one): read, then the batches after it replayed
        assert snapshots(d) == [f"{2:020d}.snapshot"]
    else:
        assert snapshots(d) == [f"{3:020d}.snapshot"]


def test_dump_log_prints_a_snapshot(tmp_path, capsys):
    """``hourglass dump-log <offset>.snapshot`` lists each producer's last batch, as
    kafka-dump-log.sh does; a corrupt one is reported and exits 1."""
    from hourglass.cli import main
    d = tmp_path / "t-0"
    log = open_log(d)
    log.append(idempotent(3, 0, epoch=2))
    log.close()
    path = d / f"{3:020d}.snapshot"
    assert main(["dump-log", str(path)]) == 0
    out = capsys.readouterr().out
    assert ("producerId: 3 producerEpoch: 2 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty lastTimestamp: "
            f"{NOW + 2} firstSequence: 0 lastSequence: 2 lastOffset: 2 offsetDelta: 2 timestamp: {NOW + 2}") in out
    path.write_bytes(path.read_bytes()[:-1])
    assert main(["dump-log", str(path)]) == 1
    assert "cannot read" in capsys.readouterr().out


def test_an_empty_log_writes_no_snapshot(tmp_path):
    d = tmp_path / "t-0"
    open_log(d).close()
    assert snapshots(d) == []
    log = open_log(d)
    log.append(build_batch([(None, b"plain", NOW)]))  # no producer id: the state stays empty
    log.close()
    assert snapshots(d) == [f"{1:020d}.snapshot"], "a log with data gets one, even an empty one"
    assert len(decode_snapshot((d / f"{1:020d}.snapshot").read_bytes())) == 0
