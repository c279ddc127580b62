"""A partition's log: the directory ``<topic>-<partition>/`` and its segments (Kafka's
``UnifiedLog`` + ``LocalLog`` for a single-node broker).

Offsets: ``log_start_offset <= last_stable_offset <= high_watermark == log_end_offset``.
Single node, so the high watermark is the log end offset: a batch is visible to
read_uncommitted as soon as it is appended. The last stable offset (LSO) is the first offset
of the earliest open transaction (the producer state's first unstable offset), clamped to
``[log start offset, high watermark]`` as Kafka's ``UnifiedLog`` does: retention and
DeleteRecords may move the log start offset past an open transaction's first offset (Kafka 4
does not hold them back), and the LSO then stands at the log start offset.
``recovery_point`` is the offset below which everything is fsynced; recovery after a crash
starts there.

Append: ``validator.validate_and_assign_offsets`` (framing, CRC, timestamps, offsets in
place) -> producer state checks (a client batch: idempotence, where a duplicate returns the
original offsets and nothing is written, and transaction state; the broker's own batches,
``from_client=False``: producer epoch, and for a COMMIT/ABORT control batch Kafka's marker
checks) -> roll when ``roll.should_roll`` says so -> segment append (index upkeep) ->
producer state update per batch (data batches by header only; a control batch's one record
is decoded for its marker, and an aborted transaction it completes becomes an entry of the
active segment's ``.txnindex``) -> flush policy (``flush.messages`` counted as LEO - recovery
point, ``flush.ms`` via ``needs_flush``) -> ``on_append`` callback (wakes fetch waiters,
markers included: a moved LSO must wake read_committed fetches).

Read committed: ``collect_aborted_transactions(start, upper)`` walks the transaction
indexes from the segment holding ``start`` until one says the search is complete (Kafka's
``LocalLog.collectAbortedTransactions``); each index answers from memory with a bisect, so
the work is the aborted transactions in range plus a check per later segment.

Roll: the old active segment gets its final time index entry, trimmed indexes and an fsync;
the recovery point moves to the new segment's base offset, and a producer state snapshot is
written at that offset (Kafka ``UnifiedLog.roll``), so that recovery after a crash replays
from the segment it recovers. Snapshots go with the segments they are named after
(retention, cleaning, truncation).

Timestamp lookup (ListOffsets v1+), exactly Kafka's rules: the first segment whose largest
timestamp >= T (no whole-log scan), then the segment's time index / offset index / header
scan, then the first record inside the batch with timestamp >= T and offset >= log start
offset. If that segment has no qualifying record at or past the log start offset (only
possible for the segment holding the log start offset), the search continues with the next
segment whose largest timestamp >= T (likewise for a segment without record timestamps,
whose largest timestamp is its file mtime; Kafka would answer nothing there). Special targets: -1 latest (LEO), -2 earliest (log
start), -3 the first record with the largest timestamp, -4 earliest local (= log start),
-5 latest tiered (no tiered storage: no answer). None means no answer (the broker replies
offset -1, timestamp -1).

Retention: ``retention.plan_retention`` on segment snapshots; deleted segments are renamed
to ``*.deleted`` and queued in ``pending_deletes`` for removal after
``file.delete.delay.ms`` (``run_pending_deletes``; the manager drives it). Retention skips a
log while the log cleaner works on it (``cleaning_in_progress``).

Compaction (``storage.cleaner``): ``replace_segments`` swaps cleaned segments in for old ones
with Kafka's crash-safe rename sequence (``.cleaned`` -> ``.swap``, old -> ``.deleted``,
``.swap`` -> final); ``structure_version`` changes with every change of the segment set
except a roll, so a cleaning prepared on an older set is thrown away instead of swapped.
"""
from __future__ import annotations

import logging
import os
import random
from dataclasses import field
from pathlib import Path
from typing import Callable, NamedTuple

from protocol.deferred import dataclass
from protocol.records.batch import check_crc, iter_batch_positions
from storage.clock import Clock, SystemClock
from storage.errors import (
    CorruptRecordError, InvalidTxnStateError, KafkaStorageError, OffsetOutOfRangeError, OutOfOrderSequenceError,
    RecordBatchTooLargeError, StorageError,
)
from storage.files import DEFAULT_FILE_OPS, FileOps, PathAttr
from storage.index.txn_index import AbortedTxn
from storage.loader import (
    Progress, apply_batch, load_log, new_segment, rebuild_producer_state, snapshot_files,
)
from storage.producer_snapshot import encode_snapshot, snapshot_file_name
from storage.producer_state import (
    BatchMetadata, LastRecord, ProducerStateManager, read_end_txn_marker, sequence_in_order,
)
from storage.retention import SegmentSnapshot, plan_retention
from storage.roll import RollParams, should_roll
from storage.segment import DELETED_SUFFIX, LogSegment, TimestampAndOffset
from storage.segments import LogSegments
from storage.validator import validate_and_assign_offsets

log = logging.getLogger(__name__)

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5
NO_TIMESTAMP = -1


@dataclass
class AppendInfo:
    """Result of an append. ``log_append_time`` is -1 for CreateTime topics, except for a
    duplicate, which carries the original batch's max timestamp (Kafka's answer)."""

    base_offset: int
    last_offset: int
    log_append_time: int
    log_start_offset: int
    max_timestamp: int
    record_count: int
    duplicate: bool = False


@dataclass
class ReadResult:
    """Whole batches starting with the one holding the fetch offset (empty when none)."""

    chunks: list = field(default_factory=list)
    high_watermark: int = 0
    log_start_offset: int = 0
    log_end_offset: int = 0
    last_stable_offset: int = 0

    @property
    def size(self) -> int:
        return sum(len(c) for c in self.chunks)

    @property
    def data(self) -> bytes:
        return b"".join(bytes(c) for c in self.chunks)


class ProducerInfo(NamedTuple):
    """One producer's state on a partition (DescribeProducers' ProducerState)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int   # -1 when no transaction is open here


@dataclass
class PendingDelete:
    due_ms: int
    paths: list[Path]


#: Kafka's suffixes of a partition dir that is not (yet, or any more) the one served:
#: ``<topic>-<partition>.<uuid hex>-future|-delete|-stray``
_SIDE_DIR_SUFFIXES = ("-future", "-delete", "-stray")


def parse_topic_partition(dir_name: str) -> tuple[str, int]:
    """``"my-topic-3"`` -> ``("my-topic", 3)`` (Kafka: the partition follows the last dash);
    ``"my-topic-3.<uuid>-future"`` too (Kafka's ``parseTopicPartitionName``)."""
    if dir_name.endswith(_SIDE_DIR_SUFFIXES) and "." in dir_name:
        dir_name = dir_name[:dir_name.rindex(".")]
    topic, sep, part = dir_name.rpartition("-")
    if not sep or not topic or not part.isdigit():
        raise ValueError(f"not a partition directory name: {dir_name!r}")
    return topic, int(part)


class PartitionLog:
    """One partition's log. Not thread-safe: the broker calls it from its event loop."""

    dir = PathAttr()   # self._dir: the same path as a str (start-up opens thousands of logs)

    def __init__(self, dir: Path, config, clock: Clock, file_ops: FileOps, segments: LogSegments,
                 *, log_start_offset: int, recovery_point: int, next_offset: int,
                 producer_state: ProducerStateManager, rng: random.Random,
                 snapshot_offset: int | None = None):
        self.dir = dir
        self.topic, self.partition = parse_topic_partition(os.path.basename(self._dir))
        self.config = config
        self.clock = clock
        self.file_ops = file_ops
        self.segments = segments
        self.log_start_offset = log_start_offset
        self.recovery_point = recovery_point
        self._next_offset = next_offset
        self.producer_state = producer_state
        # (offset, state, version) of the producer snapshot file on disk while it still
        # describes the state: an idle log's clean close then has nothing to write.
        self._snapshot = None if snapshot_offset is None else (snapshot_offset, producer_state, producer_state.version)
        self._rng = rng
        self.on_append: Callable[["PartitionLog"], None] | None = None
        self.pending_deletes: list[PendingDelete] = []
        self.last_flush_ms = clock.now_ms()
        self._closed = False
        # Bumped by every change to the segment set other than a roll (truncation, retention,
        # segment replacement, close): the log cleaner swaps only onto the version it read.
        self.structure_version = 0
        # lifetime counters, read by the broker's metrics at scrape time
        self.segments_rolled = 0
        self.segments_deleted = 0
        # Set by the log cleaner while it works on this log; retention waits (as in Kafka,
        # where cleaning and deletion of a compacted log never overlap).
        self.cleaning_in_progress = False
        # True for a log created since the last start whose directory's name is not yet
        # durable in its parent (LogManager.create): the first flush syncs the parent too.
        self.parent_dir_unsynced = False

    @property
    def dir_str(self) -> str:
        """``dir`` as a str, for os calls made once per partition (no ``Path`` built)."""
        return self._dir

    # -- construction -----------------------------------------------------------------------
    @classmethod
    def open(cls, dir, config, clock: Clock | None = None, *, file_ops: FileOps | None = None,
             recover: bool = True, recovery_point: int = 0, log_start_offset: int = 0,
             progress: Progress | None = None, rng: random.Random | None = None) -> "PartitionLog":
        """Open ``dir`` (created if missing). ``recover=False`` means the directory had a
        clean shutdown: no scan beyond cheap index sanity checks."""
        clock = clock or SystemClock()
        ops = file_ops or DEFAULT_FILE_OPS
        rng = rng or random.Random()
        loaded = load_log(dir, config=config, clock=clock, file_ops=ops,
                          had_clean_shutdown=not recover, recovery_point=recovery_point,
                          log_start_offset=log_start_offset, progress=progress, rng=rng)
        return cls(dir, config, clock, ops, loaded.segments,
                   log_start_offset=loaded.log_start_offset, recovery_point=loaded.recovery_point,
                   next_offset=loaded.next_offset, producer_state=loaded.producer_state, rng=rng,
                   snapshot_offset=loaded.snapshot_offset)

    def set_config(self, config) -> None:
        """Swap the config live (AlterConfigs); takes effect for the next append/roll/retention."""
        self.config = config

    # -- offsets ----------------------------------------------------------------------------
    @property
    def log_end_offset(self) -> int:
        return self._next_offset

    @property
    def high_watermark(self) -> int:
        return self._next_offset

    @property
    def first_unstable_offset(self) -> int | None:
        """First offset of the earliest open transaction, never below the log start offset
        (Kafka ``firstUnstableOffset``); None when no transaction is open."""
        fuo = self.producer_state.first_unstable_offset
        return None if fuo is None else max(fuo, self.log_start_offset)

    @property
    def last_stable_offset(self) -> int:
        """Kafka ``lastStableOffset``: the first unstable offset when it is below the high
        watermark, else the high watermark."""
        hwm = self._next_offset
        fuo = self.producer_state.first_unstable_offset
        if fuo is None or fuo >= hwm:
            return hwm
        return max(fuo, self.log_start_offset)

    @property
    def active_segment(self) -> LogSegment:
        return self.segments.active_segment

    @property
    def size_in_bytes(self) -> int:
        return self.segments.size_in_bytes()

    @property
    def num_segments(self) -> int:
        return len(self.segments)

    def __repr__(self) -> str:
        return (f"PartitionLog({self.topic}-{self.partition}, start={self.log_start_offset}, "
                f"end={self._next_offset}, segments={len(self.segments)})")

    # -- append -----------------------------------------------------------------------------
    def append(self, data, *, from_client: bool = True, partition_leader_epoch: int | None = None) -> AppendInfo:
        """Validate, assign offsets and append ``data`` (one or more batches)."""
        self._check_open()
        now = self.clock.now_ms()
        config = self.config
        vr = validate_and_assign_offsets(data, next_offset=self._next_offset, now_ms=now, config=config,
                                         from_client=from_client,
                                         partition_leader_epoch=partition_leader_epoch,
                                         topic_partition=f"{self.topic}-{self.partition}")
        if vr.size > config.segment_bytes:
            raise RecordBatchTooLargeError(
                f"message batch size is {vr.size} bytes in append to partition {self.topic}-{self.partition} "
                f"which exceeds the maximum configured segment size of {config.segment_bytes}")

        dup = self._check_producer_state(vr, from_client)
        if dup is not None:
            # Kafka's UnifiedLog answers a duplicate with the original batch's timestamp as
            # the log append time, whatever the topic's timestamp type
            return AppendInfo(dup.first_offset, dup.last_offset, dup.timestamp,
                              self.log_start_offset, dup.timestamp,
                              dup.last_offset - dup.first_offset + 1, duplicate=True)

        try:
            segment = self._maybe_roll(vr.size, vr.max_timestamp, vr.last_offset, now)
        except OSError as exc:  # e.g. no space for the new segment's files; nothing was appended
            raise KafkaStorageError(f"I/O error rolling a segment of {self.topic}-{self.partition}: {exc}") from exc
        # all or nothing: an I/O error leaves no bytes behind and raises KafkaStorageError
        segment.append(vr.last_offset, vr.max_timestamp, vr.shallow_offset_of_max_timestamp, vr.buf, vr.batches)
        # The log end offset moves first (Kafka): should the transaction index write fail,
        # later appends still get growing offsets and recovery rebuilds the index.
        self._next_offset = vr.last_offset + 1
        state = self.producer_state
        for pos, h in vr.batches:
            if h.producer_id >= 0:
                marker = read_end_txn_marker(vr.buf, pos) if h.is_control else None
                try:
                    apply_batch(state, h, marker, segment)
                except OSError as exc:
                    raise KafkaStorageError(f"I/O error writing the transaction index of {self.topic}-"
                                            f"{self.partition}: {exc}") from exc
        if self._next_offset - self.recovery_point >= config.flush_messages:
            try:
                self.flush()
            except OSError as exc:  # appended (and visible) but not known to be on disk
                raise KafkaStorageError(f"fsync of {self.topic}-{self.partition} failed: {exc}") from exc
        info = AppendInfo(vr.base_offset, vr.last_offset, vr.log_append_time, self.log_start_offset,
                          vr.max_timestamp, vr.record_count)
        cb = self.on_append
        if cb is not None:
            cb(self)
        return info

    def append_as_follower(self, data) -> int:
        """Kafka's ``appendAsFollower``: whole batches copied from another log with their
        offsets, timestamps and producer fields as they are (offset gaps of a compacted log
        included), as the ``-future`` log of a log-dir move copies the current one. Each batch's
        CRC is checked and its base offset must be at or past the log end offset. Producer
        state and the transaction index follow the batches, as on the leader. Returns the new
        log end offset."""
        self._check_open()
        buf = data if isinstance(data, (bytes, bytearray)) else bytes(data)
        if not buf:
            return self._next_offset
        batches = list(iter_batch_positions(buf))
        if not batches:
            return self._next_offset
        for pos, h in batches:
            if not check_crc(buf, pos, h):
                raise CorruptRecordError(f"copied batch at offset {h.base_offset} of {self.topic}-"
                                         f"{self.partition} fails its CRC")
        first, last = batches[0][1], batches[-1][1]
        if first.base_offset < self._next_offset:
            raise StorageError(f"copied batch at offset {first.base_offset} of {self.topic}-{self.partition} "
                               f"is below the log end offset {self._next_offset}")
        last_offset = last.base_offset + last.last_offset_delta
        max_ts = max(h.max_timestamp for _, h in batches)
        now = self.clock.now_ms()
        segment = self._maybe_roll(len(buf), max_ts, last_offset, now, roll_at=first.base_offset)
        segment.append(last_offset, max_ts, last_offset, buf, batches)
        self._next_offset = last_offset + 1
        state = self.producer_state
        for pos, h in batches:
            if h.producer_id >= 0:
                apply_batch(state, h, read_end_txn_marker(buf, pos) if h.is_control else None, segment)
        return self._next_offset

    def take_over(self, moved: "PartitionLog") -> list[LogSegment]:
        """Serve ``moved``'s files from now on (the swap of a log-dir move): this object, the
        one fetch waiters and callbacks hold, gets ``moved``'s dir and segments; its producer
        state (the one in memory, the truth) stays. ``moved`` must hold the same offsets.
        Returns the old segments, for the caller to close."""
        self._check_open()
        if moved.log_end_offset != self._next_offset:
            raise StorageError(f"cannot swap in a copy of {self.topic}-{self.partition} ending at "
                               f"{moved.log_end_offset}: the log ends at {self._next_offset}")
        old = self.segments.values()
        self.dir = moved.dir
        self.segments = moved.segments
        self.recovery_point = moved.recovery_point
        self.pending_deletes = []            # their files went with the old dir
        self.structure_version += 1          # a cleaning prepared on the old files is dropped
        self._snapshot = None
        moved._closed = True
        self._take_snapshot(self._next_offset)
        return old

    def _check_producer_state(self, vr, from_client: bool) -> BatchMetadata | None:
        """Kafka ``analyzeAndValidateProducerState`` before anything is written: the original
        metadata of a client duplicate, or None; raises on a batch the producer state refuses."""
        state = self.producer_state
        seen: dict[int, object] = {}
        for pos, h in vr.batches:
            pid = h.producer_id
            if pid < 0:
                continue
            prev = seen.get(pid)
            if not from_client:
                if h.is_control:
                    marker = read_end_txn_marker(vr.buf, pos)
                    if marker is not None:
                        state.check_marker(pid, h.producer_epoch, marker.coordinator_epoch)
                else:
                    state.check_coordinator_batch(pid, h.producer_epoch, h.is_transactional)
            elif prev is None:
                dup = state.check_and_prepare(pid, h.producer_epoch, h.base_sequence, _last_seq(h),
                                              h.is_transactional)
                if dup is not None:
                    return dup
            else:
                if prev.producer_epoch == h.producer_epoch and not sequence_in_order(_last_seq(prev), h.base_sequence):
                    raise OutOfOrderSequenceError(
                        f"Out of order sequence number for producer {pid}: {h.base_sequence} (incoming seq. "
                        f"number), {_last_seq(prev)} (current end sequence number)")
                if prev.is_transactional and not h.is_transactional:
                    raise InvalidTxnStateError(f"Expected transactional write from producer {pid}")
            seen[pid] = h
        return None

    def append_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool, *,
                      partition_leader_epoch: int = 0, transaction_version: int = 0) -> AppendInfo:
        """Write a COMMIT or ABORT marker for ``producer_id`` (Kafka's WriteTxnMarkers on the
        partition leader): one control batch (transactional, no sequence) holding one
        EndTransactionMarker record stamped now. It completes the producer's open transaction
        here, if any; an aborted one gets a ``.txnindex`` entry. Raises
        InvalidProducerEpochError (epoch older than the producer's) or
        TransactionCoordinatorFencedError (coordinator epoch older than the last marker's);
        ``transaction_version`` 2 (KIP-1228) also refuses the producer's current epoch."""
        from protocol.records.record import build_batch, end_txn_marker
        if transaction_version >= 2:
            self.producer_state.check_marker(producer_id, producer_epoch, coordinator_epoch, transaction_version)
        now = self.clock.now_ms()
        batch = build_batch([end_txn_marker(commit, coordinator_epoch, now)], producer_id=producer_id,
                            producer_epoch=producer_epoch, is_transactional=True, is_control=True,
                            partition_leader_epoch=partition_leader_epoch)
        return self.append(batch, from_client=False, partition_leader_epoch=partition_leader_epoch)

    def _maybe_roll(self, batches_size: int, max_timestamp: int, max_offset: int, now: int, *,
                    roll_at: int | None = None) -> LogSegment:
        seg = self.segments.active_segment
        config = self.config
        params = RollParams(max_segment_bytes=config.segment_bytes, max_segment_ms=config.max_segment_ms,
                            roll_jitter_ms=seg.roll_jitter_ms, max_timestamp_in_batches=max_timestamp,
                            max_offset_in_batches=max_offset, batches_size=batches_size, now_ms=now)
        if should_roll(segment_size=seg.size, segment_base_offset=seg.base_offset,
                       rolling_based_timestamp=seg.rolling_based_timestamp, segment_created_ms=seg.created_ms,
                       offset_index_full=seg.offset_index.is_full(), time_index_full=seg.time_index.is_full(),
                       params=params):
            log.debug("rolling %s-%d at offset %d", self.topic, self.partition, self._next_offset)
            return self.roll(self._next_offset if roll_at is None else roll_at)
        return seg

    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """Start a new active segment at ``max(expected_next_offset, log end offset)``.

        The old active segment gets its final time index entry and trimmed indexes and is
        fsynced (so the recovery point can move to the new base offset). Rolling an empty
        active segment at the same base offset is a no-op.
        """
        self._check_open()
        new_offset = max(expected_next_offset or 0, self._next_offset)
        active = self.segments.active_segment
        if new_offset in self.segments:
            if active.base_offset == new_offset and active.size == 0:
                return active
            raise StorageError(f"trying to roll a new segment at {new_offset} of {self.topic}-{self.partition} "
                               f"but a segment with that base offset already exists")
        if new_offset < active.base_offset:
            raise StorageError(f"trying to roll a new segment at {new_offset} below the active segment "
                               f"{active.base_offset} of {self.topic}-{self.partition}")
        from storage.segment import log_file, offset_index_file, time_index_file, txn_index_file
        for p in (log_file(self.dir, new_offset), offset_index_file(self.dir, new_offset),
                  time_index_file(self.dir, new_offset), txn_index_file(self.dir, new_offset)):
            if self.file_ops.exists(p):
                log.warning("newly rolled segment file %s already exists; deleting it first", p)
                self.file_ops.remove(p)
        active.on_become_inactive()
        # The recovery point moves to the new base offset: everything below it must be on disk,
        # not only the old active segment (segments recovered after a crash were not fsynced).
        self._flush_segments(min(self.recovery_point, active.base_offset), new_offset)
        new = new_segment(self.dir, new_offset, self.config, self.clock, self.file_ops, self._rng)
        self.segments.add(new)
        self.segments_rolled += 1
        self._take_snapshot(new_offset)
        if self.recovery_point < new_offset:
            self.recovery_point = new_offset
            self.last_flush_ms = self.clock.now_ms()
        return new

    # -- read -------------------------------------------------------------------------------
    def read(self, offset: int, max_bytes: int, *, min_one: bool = True, max_offset: int | None = None) -> ReadResult:
        """Raw whole batches from the batch holding ``offset``: at most ``max_bytes`` (the first
        batch regardless when ``min_one``), never at or past ``max_offset`` (default: HWM).

        Raises OffsetOutOfRangeError below the log start offset or above the log end offset,
        KafkaStorageError when a segment cannot be read (e.g. no descriptor to reopen it with).
        """
        try:
            return self._read(offset, max_bytes, min_one, max_offset)
        except OSError as exc:
            raise KafkaStorageError(f"I/O error reading {self.topic}-{self.partition}: {exc}") from exc

    def _read(self, offset: int, max_bytes: int, min_one: bool, max_offset: int | None) -> ReadResult:
        self._check_open()
        leo = self._next_offset
        res = ReadResult([], leo, self.log_start_offset, leo, self.last_stable_offset)
        if offset < self.log_start_offset or offset > leo:
            raise OffsetOutOfRangeError(offset, self.log_start_offset, leo)
        limit = leo if max_offset is None else min(max_offset, leo)
        if offset >= limit:
            return res
        seg = self.segments.floor_segment(offset)
        if seg is None:
            raise OffsetOutOfRangeError(offset, self.log_start_offset, leo)
        limit_seg = self.segments.floor_segment(limit) if limit < leo else None
        while seg is not None:
            if limit_seg is None or seg.base_offset < limit_seg.base_offset:
                max_position = seg.size
            elif seg.base_offset == limit_seg.base_offset:
                max_position = seg.position_of(limit)
            else:
                return res
            r = seg.read(offset, max_bytes, max_position, min_one)
            if r is not None:
                if r.data:
                    res.chunks.append(r.data)
                return res
            seg = self.segments.higher_segment(seg.base_offset)
        return res

    # -- timestamps -------------------------------------------------------------------------
    def lookup_timestamp(self, ts: int) -> TimestampAndOffset | None:
        """ListOffsets answer with leader epoch (see the module docstring); None = no answer."""
        self._check_open()
        if ts == EARLIEST_TIMESTAMP or ts == EARLIEST_LOCAL_TIMESTAMP:
            return TimestampAndOffset(NO_TIMESTAMP, self.log_start_offset, -1)
        if ts == LATEST_TIMESTAMP:
            return TimestampAndOffset(NO_TIMESTAMP, self._next_offset, -1)
        if ts == LATEST_TIERED_TIMESTAMP:
            return None
        if ts == MAX_TIMESTAMP:
            best = None
            for seg in self.segments.values():
                if best is None or seg.max_timestamp_so_far > best.max_timestamp_so_far:
                    best = seg
            if best is None or best.max_timestamp_so_far < 0:
                return None
            return best.offset_of_max_timestamp()
        if ts < 0:
            raise ValueError(f"unsupported target timestamp {ts}")
        start = self.log_start_offset
        hwm = self.high_watermark
        for seg in self.segments.from_first_reaching(ts):
            if seg.largest_timestamp < ts:
                continue
            nxt = self.segments.next_base_offset_after(seg)
            if nxt is not None and nxt <= start:
                continue  # wholly below the log start offset
            hit = seg.find_offset_by_timestamp(ts, start)
            if hit is not None:
                return hit if hit.offset < hwm else None
            # No qualifying record here (only below the log start offset, or a segment whose
            # "largest timestamp" is its mtime): the answer, if any, is in a later segment.
        return None

    def offset_for_timestamp(self, ts: int) -> tuple[int, int] | None:
        """``(offset, timestamp)`` for ListOffsets (``lookup_timestamp`` without the epoch)."""
        hit = self.lookup_timestamp(ts)
        return None if hit is None else (hit.offset, hit.timestamp)

    def legacy_offsets_before(self, ts: int, max_num: int) -> list[int]:
        """ListOffsets v0 (Kafka ``legacyFetchOffsetsBefore``): segment base offsets (clamped to
        the log start offset) whose segment last-modified time <= ``ts``, plus the log end
        offset (stamped now) when the active segment is non-empty; newest first, at most
        ``max_num``. -1 = latest only, -2 = from the earliest."""
        self._check_open()
        segs = self.segments.values()
        pairs = [(max(s.base_offset, self.log_start_offset), s.last_modified_ms) for s in segs]
        if segs and segs[-1].size > 0:
            pairs.append((self._next_offset, self.clock.now_ms()))
        if ts == LATEST_TIMESTAMP:
            start = len(pairs) - 1
        elif ts == EARLIEST_TIMESTAMP:
            start = 0
        else:
            start = len(pairs) - 1
            while start >= 0 and pairs[start][1] > ts:
                start -= 1
        n = min(max_num, start + 1)
        out = [pairs[start - j][0] for j in range(n)]
        return sorted(out, reverse=True)

    # -- transactions -----------------------------------------------------------------------
    def collect_aborted_transactions(self, start_offset: int, upper_bound_offset: int, *,
                                     from_log_start: bool = False) -> list[AbortedTxn]:
        """Aborted transactions overlapping ``[start_offset, upper_bound_offset)``, for a
        read_committed fetch (Kafka ``LocalLog.collectAbortedTransactions``): the transaction
        indexes from the segment holding ``start_offset`` on, until one is complete. With
        ``from_log_start`` those indexes are searched from the log start offset instead
        (Kafka ``UnifiedLog.collectAbortedTransactions``, the cleaner's question)."""
        out: list[AbortedTxn] = []
        fetch_offset = self.log_start_offset if from_log_start else start_offset
        for seg in self.segments.iter_from(start_offset):
            res = seg.collect_aborted_txns(fetch_offset, upper_bound_offset)
            out.extend(res.aborted_transactions)
            if res.is_complete:
                break
        return out

    def remove_expired_producers(self, now_ms: int, producer_id_expiration_ms: int) -> int:
        """Forget idle producers without an open transaction (Kafka's
        ``UnifiedLog.removeExpiredProducers``); their next batch is accepted at any sequence."""
        self._check_open()
        return len(self.producer_state.remove_expired(now_ms, producer_id_expiration_ms))

    def producer_entries(self) -> list[ProducerInfo]:
        """Each producer's state here, for DescribeProducers (Kafka ``activeProducers``)."""
        out = []
        for e in self.producer_state.entries():
            txn = e.current_txn_first_offset
            out.append(ProducerInfo(e.producer_id, e.producer_epoch, e.last_seq, e.last_timestamp,
                                    e.coordinator_epoch, -1 if txn is None else txn))
        return out

    def ongoing_transactions(self) -> list[tuple[int, int, int]]:
        """``(producer id, first offset, last offset)`` of each open transaction, by first
        offset; the last offset is that of the producer's last data batch."""
        state = self.producer_state
        out = []
        for pid, first in state.ongoing_transactions():
            e = state.last_entry(pid)
            last = e.last_offset if e is not None else -1
            out.append((pid, first, max(last, first)))
        return out

    # -- log start offset and retention ------------------------------------------------------
    def delete_records(self, offset: int) -> int:
        """DeleteRecords: raise the log start offset to ``offset`` (-1 = high watermark).
        Returns the new low watermark. Segments below it go at the next retention pass."""
        self._check_open()
        if offset == -1:
            offset = self.high_watermark
        if offset < 0 or offset > self.high_watermark:
            raise OffsetOutOfRangeError(offset, self.log_start_offset, self.high_watermark)
        if offset > self.log_start_offset:
            self.log_start_offset = offset
        return self.log_start_offset

    def _snapshots(self) -> list[SegmentSnapshot]:
        segs = self.segments.values()
        out = []
        for i, s in enumerate(segs):
            nxt = segs[i + 1].base_offset if i + 1 < len(segs) else self._next_offset
            out.append(SegmentSnapshot(s.base_offset, nxt, s.size, s.largest_timestamp))
        return out

    def delete_old_segments(self) -> int:
        """Apply retention (log start offset, size, time); returns the number of segments deleted."""
        self._check_open()
        if self.cleaning_in_progress:
            return 0
        now = self.clock.now_ms()
        plan = plan_retention(self._snapshots(), now_ms=now, config=self.config,
                              log_start_offset=self.log_start_offset, high_watermark=self.high_watermark)
        if not plan.to_delete:
            return 0
        if plan.roll_first:
            self.roll()
        doomed = [self.segments.get(s.base_offset) for s in plan.to_delete]
        self.structure_version += 1
        for seg in doomed:
            self.segments.remove(seg.base_offset)
        self._schedule_delete(doomed, now)
        self.segments_deleted += len(doomed)
        first = self.segments.first_segment
        if first.base_offset > self.log_start_offset:
            self.log_start_offset = first.base_offset
        log.info("deleted %d segment(s) of %s-%d (%s); log start offset now %d", len(doomed), self.topic,
                 self.partition, plan.reason, self.log_start_offset)
        return len(doomed)

    def _schedule_delete(self, segments: list[LogSegment], now: int, *, snapshots: bool = True) -> None:
        """Rename the segments' files (and, with ``snapshots``, the producer snapshots named
        after their base offsets: Kafka ``deleteProducerSnapshots``) to ``*.deleted`` and
        queue them for removal after ``file.delete.delay.ms``."""
        paths: list[Path] = []
        for seg in segments:
            seg.close_handlers()
            seg.change_file_suffixes("", DELETED_SUFFIX)
            paths.extend([seg.log_path, seg.offset_index.path, seg.time_index.path, seg.txn_index.path])
            if snapshots:
                snap = os.path.join(self._dir, snapshot_file_name(seg.base_offset))
                if self.file_ops.exists(snap):
                    self.file_ops.rename(snap, snap + DELETED_SUFFIX)
                    paths.append(Path(snap + DELETED_SUFFIX))
                    if self._snapshot is not None and self._snapshot[0] == seg.base_offset:
                        self._snapshot = None
        self.pending_deletes.append(PendingDelete(now + self.config.file_delete_delay_ms, paths))

    def run_pending_deletes(self, now_ms: int | None = None, *, force: bool = False) -> int:
        """Remove ``*.deleted`` files whose delay has passed; returns files removed."""
        now = self.clock.now_ms() if now_ms is None else now_ms
        keep, removed = [], 0
        for pd in self.pending_deletes:
            if force or pd.due_ms <= now:
                for p in pd.paths:
                    removed += bool(self.file_ops.remove(p))
            else:
                keep.append(pd)
        self.pending_deletes = keep
        return removed

    def replace_segments(self, new_segments: list[LogSegment], old_segments: list[LogSegment]) -> list[LogSegment]:
        """Swap cleaned segments in for old ones, crash-safely (Kafka ``LocalLog.replaceSegments``).

        ``new_segments`` carry the ``.cleaned`` suffix and hold a subset of the old segments'
        batches (same offsets). Steps, each a rename the loader knows how to finish or undo:
        new ``.cleaned`` -> ``.swap`` (descending base offsets); new segments enter the
        segment map; old segments leave it, their files renamed ``.deleted`` (removed after
        ``file.delete.delay.ms``); ``.swap`` -> no suffix; directory fsynced. A crash before
        every ``.swap`` rename is done recovers the old segments, after it the new ones.
        Returns the old segments that no new segment replaced at the same base offset.
        """
        self._check_open()
        from storage.segment import CLEANED_SUFFIX, SWAP_SUFFIX
        new_sorted = sorted(new_segments, key=lambda s: s.base_offset)
        old_sorted = sorted((s for s in old_segments if self.segments.get(s.base_offset) is s),
                            key=lambda s: s.base_offset)
        self.structure_version += 1
        for seg in reversed(new_sorted):
            seg.change_file_suffixes(CLEANED_SUFFIX, SWAP_SUFFIX)
        for seg in reversed(new_sorted):
            self.segments.add(seg)
        new_bases = {s.base_offset for s in new_sorted}
        now = self.clock.now_ms()
        not_replaced = []
        for seg in old_sorted:
            if seg.base_offset != new_sorted[0].base_offset:
                self.segments.remove(seg.base_offset)
            # Kafka deletes the snapshots of the old segments no new one replaced at their base.
            self._schedule_delete([seg], now, snapshots=seg.base_offset not in new_bases)
            if seg.base_offset not in new_bases:
                not_replaced.append(seg)
        for seg in new_sorted:
            seg.change_file_suffixes(SWAP_SUFFIX, "")
        self.file_ops.fsync_dir(self.dir)
        return not_replaced

    def last_records_of_active_producers(self) -> dict[int, LastRecord]:
        """Producer id -> its last data offset (None if it has none) and epoch: the batch
        the cleaner must keep so producers keep their sequence numbers and epochs (Kafka
        ``lastRecordsOfActiveProducers``)."""
        return {e.producer_id: LastRecord(e.last_offset if e.last_offset >= 0 else None, e.producer_epoch)
                for e in self.producer_state.entries()}

    def truncate_to(self, offset: int) -> bool:
        """Remove everything at or after ``offset`` (whole batches); True if anything changed."""
        self._check_open()
        if offset < 0:
            raise ValueError(f"cannot truncate to a negative offset ({offset})")
        if offset >= self._next_offset:
            return False
        self.structure_version += 1
        if offset < self.segments.first_segment.base_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        now = self.clock.now_ms()
        doomed = [s for s in self.segments.values() if s.base_offset > offset]
        for seg in doomed:
            self.segments.remove(seg.base_offset)
        self._schedule_delete(doomed, now)
        active = self.segments.active_segment
        active.truncate_to(offset)
        active.resize_indexes(self.config.segment_index_bytes)
        self._next_offset = active.read_next_offset()
        self.recovery_point = min(self.recovery_point, self._next_offset)
        self.log_start_offset = min(self.log_start_offset, self._next_offset)
        # Kafka truncateAndReload: snapshots past the new end go; the state is reloaded from
        # the newest remaining one and the batches after it.
        snapshots = snapshot_files(self._dir, self.file_ops.list_files(self._dir))
        for off in [o for o in snapshots if o > self._next_offset]:
            self.file_ops.remove(snapshots.pop(off))
        self.producer_state = rebuild_producer_state(self.segments, self.log_start_offset, self._next_offset,
                                                     snapshots=snapshots, ops=self.file_ops)
        self._snapshot = None
        return True

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Delete every segment and restart the log empty at ``new_offset``."""
        self._check_open()
        self.structure_version += 1
        now = self.clock.now_ms()
        doomed = self.segments.values()
        self.segments.clear()
        self._schedule_delete(doomed, now)
        self.segments.add(new_segment(self.dir, new_offset, self.config, self.clock, self.file_ops, self._rng))
        self._next_offset = new_offset
        self.log_start_offset = new_offset
        self.recovery_point = new_offset
        self.producer_state = ProducerStateManager()
        for path in snapshot_files(self._dir, self.file_ops.list_files(self._dir)).values():
            self.file_ops.remove(path)
        self._snapshot = None

    # -- flush ------------------------------------------------------------------------------
    @property
    def unflushed_messages(self) -> int:
        return self._next_offset - self.recovery_point

    def needs_flush(self, now_ms: int | None = None) -> bool:
        """flush.messages reached, or data older than flush.ms not yet fsynced."""
        if self._next_offset <= self.recovery_point:
            return False
        if self.unflushed_messages >= self.config.flush_messages:
            return True
        now = self.clock.now_ms() if now_ms is None else now_ms
        return now - self.last_flush_ms >= self.config.flush_ms

    def flush(self) -> None:
        """fsync every segment holding offsets >= the recovery point; recovery point = LEO."""
        self._check_open()
        if self._next_offset > self.recovery_point:
            self._flush_segments(self.recovery_point, self._next_offset)
            self.recovery_point = self._next_offset
        self.last_flush_ms = self.clock.now_ms()

    def _flush_segments(self, from_offset: int, to_offset: int) -> None:
        """fsync the segments holding ``[from, to)``, and the directory when one of them was
        created since the last flush: its name is not durable until then (Kafka's LocalLog.flush)."""
        segs = self.segments.values(from_offset, to_offset)
        for seg in segs:
            seg.flush()
        if any(seg.base_offset >= from_offset for seg in segs) or self.parent_dir_unsynced:
            self.file_ops.fsync_dir(self.dir)
        if self.parent_dir_unsynced:
            self.file_ops.fsync_dir(os.path.dirname(self._dir))
            self.parent_dir_unsynced = False

    # -- lifecycle --------------------------------------------------------------------------
    def close(self, sync: bool = True) -> None:
        """Flush, then close every segment cleanly (indexes trimmed, roll entry written).

        ``sync=False`` writes the same files without a single fsync: the caller (a clean
        shutdown of every log) makes the whole file system durable at once afterwards and
        counts nothing as clean until that succeeded."""
        if self._closed:
            return
        self.structure_version += 1
        if sync:
            self.flush()
        else:
            self.recovery_point = self._next_offset
            self.parent_dir_unsynced = False
        for seg in self.segments.values():
            seg.close(sync)
        self._write_producer_snapshot(sync)
        self._closed = True

    def _write_producer_snapshot(self, sync: bool = True) -> None:
        """At a clean close: ``<log end offset>.snapshot``, which the next start reads instead
        of replaying batch headers, unless the one on disk still describes the state."""
        state, offset = self.producer_state, self._next_offset
        if self._snapshot == (offset, state, state.version):
            return
        # An empty log replays for free: no file (a broker with 1000 new partitions would
        # otherwise write and fsync 1000 empty snapshots at its first shutdown).
        if len(state) == 0 and self.segments.size_in_bytes() == 0:
            old = self._snapshot
            if old is not None and old[0] not in self.segments:
                self.file_ops.remove(os.path.join(self._dir, snapshot_file_name(old[0])))
                if sync:
                    self.file_ops.fsync_dir(self._dir)
            self._snapshot = None
            return
        self._take_snapshot(offset, sync)

    def _take_snapshot(self, offset: int, sync: bool = True) -> None:
        """Write ``<offset>.snapshot`` of the producer state (atomically and durably), unless
        the one on disk already describes it. A snapshot the last clean close wrote (at an
        offset that is no segment's base) is superseded and goes first: the new file's atomic
        write fsyncs the directory, which makes the removal durable too."""
        state = self.producer_state
        if self._snapshot == (offset, state, state.version):
            return
        ops = self.file_ops
        old = self._snapshot
        if old is not None and old[0] != offset and old[0] not in self.segments:
            ops.remove(os.path.join(self._dir, snapshot_file_name(old[0])))
        ops.write_atomic(os.path.join(self._dir, snapshot_file_name(offset)), encode_snapshot(state), durable=sync)
        self._snapshot = (offset, state, state.version)

    def delete(self) -> None:
        """Close handles and remove the whole partition directory."""
        self.structure_version += 1
        for seg in self.segments.values():
            seg.close_handlers()
        self._closed = True
        if self.file_ops.exists(self.dir):
            self.file_ops.rmtree(self.dir)

    def _check_open(self) -> None:
        if self._closed:
            raise StorageError(f"log {self.topic}-{self.partition} is closed")

    @property
    def closed(self) -> bool:
        return self._closed

    # -- introspection ----------------------------------------------------------------------
    def segments_info(self) -> list[dict]:
        segs = self.segments.values()
        out = []
        for i, s in enumerate(segs):
            nxt = segs[i + 1].base_offset if i + 1 < len(segs) else self._next_offset
            out.append({
                "base_offset": s.base_offset,
                "next_offset": nxt,
                "size": s.size,
                "largest_record_timestamp": s.largest_record_timestamp,
                "largest_timestamp": s.largest_timestamp,
                "offset_of_max_timestamp": s.offset_of_max_timestamp_so_far,
                "rolling_based_timestamp": s.rolling_based_timestamp,
                "created_ms": s.created_ms,
                "last_modified_ms": s.last_modified_ms,
                "offset_index_entries": s.offset_index.entries,
                "time_index_entries": s.time_index.entries,
                "log_path": str(s.log_path),
                "active": i == len(segs) - 1,
            })
        return out


def _last_seq(h) -> int:
    if h.base_sequence < 0:
        return -1
    return (h.base_sequence + h.last_offset_delta) % 0x80000000


__all__ = [
    "PartitionLog", "AppendInfo", "ReadResult", "PendingDelete", "ProducerInfo", "parse_topic_partition",
    "LATEST_TIMESTAMP", "EARLIEST_TIMESTAMP", "MAX_TIMESTAMP", "EARLIEST_LOCAL_TIMESTAMP",
    "LATEST_TIERED_TIMESTAMP",
]
