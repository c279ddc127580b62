"""Inspect segment files, like Kafka's ``kafka-dump-log.sh`` (``DumpLogSegments``).

``dump_file(path)`` dispatches on the suffix:

* ``.log``: every batch with position, offsets, count, timestamps, size, codec, producer
  fields, delete horizon and whether its CRC is valid (``deep=True`` adds the records, and for
  a control record its marker: ``endTxnMarker: COMMIT coordinatorEpoch: 3``); a torn or
  unreadable tail is reported, not raised.
* ``.index``: (offset, position) entries; ``.timeindex``: (timestamp, offset) entries. With the
  segment's ``.log`` next to it, each entry is cross-checked against the log exactly as
  Kafka's ``--index-sanity-check``/``--verify-index-only`` does: an offset index entry must
  point at the start of the batch whose last offset is the entry's offset, offsets must
  increase; a time index entry's offset must be the last offset of a batch whose max
  timestamp is the entry's timestamp, timestamps must not decrease.
* ``.txnindex``: the aborted transactions (``version: 0 producerId: .. firstOffset: ..
  lastOffset: .. lastStableOffset: ..``), as Kafka's ``dumpTxnIndex``.
* ``.snapshot``: the producer entries of a producer state snapshot (CRC-checked), with each
  producer's coordinator epoch and open transaction's first offset.

Results are plain dataclasses (for tests and tools); ``render`` gives Kafka-like text.
"""
from __future__ import annotations

import struct
from dataclasses import field
from pathlib import Path

from protocol.deferred import dataclass
from protocol.errors import CorruptRecordError, DecodeError
from protocol.records.batch import (
    HEADER_SIZE, LOG_OVERHEAD, MIN_BATCH_LENGTH, BatchHeader, compute_crc, read_header,
)
from storage.files import DEFAULT_FILE_OPS, FileOps
from storage.producer_snapshot import SNAPSHOT_SUFFIX, CorruptSnapshotError, decode_snapshot
from protocol.records.record import CONTROL_ABORT, CONTROL_COMMIT, control_record_type, parse_end_txn_marker
from storage.index import CorruptIndexError
from storage.index.txn_index import CURRENT_VERSION, AbortedTxn, parse_entries
from storage.segment import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX, offset_from_filename

_CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
_I32 = struct.Struct(">i")


@dataclass
class BatchInfo:
    position: int
    header: BatchHeader
    crc_valid: bool
    records: list | None = None

    @property
    def base_offset(self) -> int:
        return self.header.base_offset

    @property
    def last_offset(self) -> int:
        return self.header.base_offset + self.header.last_offset_delta

    @property
    def size(self) -> int:
        return self.header.batch_length + LOG_OVERHEAD


@dataclass
class LogDump:
    path: Path
    batches: list[BatchInfo] = field(default_factory=list)
    valid_bytes: int = 0
    file_size: int = 0
    error: str | None = None

    @property
    def trailing_bytes(self) -> int:
        return self.file_size - self.valid_bytes


@dataclass
class IndexDump:
    path: Path
    kind: str                      # "offset" or "time"
    base_offset: int
    entries: list[tuple[int, int]]  # (offset, position) or (timestamp, offset)
    mismatches: list[str] = field(default_factory=list)
    checked: bool = False          # True when cross-checked against the .log

    @property
    def ok(self) -> bool:
        return not self.mismatches


def _iter_file_batches(ops: FileOps, fd: int, size: int):
    """(position, header, bytes or None) of each batch; stops at torn/invalid framing."""
    pos = 0
    while size - pos >= HEADER_SIZE:
        head = ops.pread(fd, HEADER_SIZE, pos)
        (length,) = _I32.unpack_from(head, 8)
        if length < MIN_BATCH_LENGTH:
            raise CorruptRecordError(f"batch length {length} at position {pos} is below {MIN_BATCH_LENGTH}")
        h = read_header(head)
        if pos + h.batch_length + LOG_OVERHEAD > size:
            return
        yield pos, h
        pos += h.batch_length + LOG_OVERHEAD


def dump_log(path, *, deep: bool = False, file_ops: FileOps | None = None) -> LogDump:
    ops = file_ops or DEFAULT_FILE_OPS
    path = Path(path)
    out = LogDump(path)
    fd = ops.open(path, "r")
    try:
        size = out.file_size = ops.fsize(fd)
        try:
            for pos, h in _iter_file_batches(ops, fd, size):
                data = ops.pread(fd, h.batch_length + LOG_OVERHEAD, pos)
                info = BatchInfo(pos, h, compute_crc(data, 0, len(data)) == h.crc)
                if deep:
                    from protocol.records.record import decode_batch
                    try:
                        info.records = decode_batch(data, 0, verify_crc=False)[1]
                    except (DecodeError, Exception) as e:  # codec failures included
                        out.error = f"cannot decode records of batch at {pos}: {e}"
                out.batches.append(info)
                out.valid_bytes = pos + info.size
        except CorruptRecordError as e:
            out.error = str(e)
        if out.error is None and out.valid_bytes < size:
            out.error = f"{size - out.valid_bytes} trailing bytes at position {out.valid_bytes} do not form a batch"
    finally:
        ops.close(fd)
    return out


def _read_entries(ops: FileOps, path: Path, fmt: str) -> list[tuple[int, int]]:
    """Entries up to the preallocated tail: like Kafka's DumpLogSegments, an all-zero entry
    after the first ends the index (an active segment's index is preallocated with zeros).
    A zero first entry ends it too when more zeros follow (an empty preallocated index); a
    real first entry is never zero in an offset index (no entry points at position 0)."""
    raw = ops.read_file(path)
    st = struct.Struct(fmt)
    n = len(raw) // st.size
    zero = bytes(st.size)
    out = []
    for i in range(n):
        if raw[i * st.size:(i + 1) * st.size] == zero and (i > 0 or fmt == ">ii" or n > 1):
            break
        out.append(st.unpack_from(raw, i * st.size))
    return out


def dump_index(path, *, log_path=None, file_ops: FileOps | None = None) -> IndexDump:
    """Entries of a ``.index`` or ``.timeindex`` (absolute offsets), cross-checked against the
    segment's log when it exists. The zero-filled tail of an untrimmed (preallocated)
    index is not reported (see ``_read_entries``)."""
    ops = file_ops or DEFAULT_FILE_OPS
    path = Path(path)
    name = path.name
    base = offset_from_filename(name)
    if name.endswith(TIME_INDEX_SUFFIX):
        kind = "time"
        entries = [(ts, base + rel) for ts, rel in _read_entries(ops, path, ">qi")]
    elif name.endswith(INDEX_SUFFIX):
        kind = "offset"
        entries = [(base + rel, pos) for rel, pos in _read_entries(ops, path, ">ii")]
    else:
        raise ValueError(f"not an index file: {path}")
    out = IndexDump(path, kind, base, entries)
    if log_path is None:
        log_path = path.with_name(f"{base:020d}{LOG_SUFFIX}")
    if ops.exists(log_path):
        _verify(ops, out, Path(log_path))
    return out


def _verify(ops: FileOps, idx: IndexDump, log_path: Path) -> None:
    fd = ops.open(log_path, "r")
    try:
        size = ops.fsize(fd)
        batches = []
        try:
            batches = list(_iter_file_batches(ops, fd, size))
        except CorruptRecordError as e:
            idx.mismatches.append(f"log unreadable: {e}")
        by_pos = {pos: h for pos, h in batches}
        by_last = {h.base_offset + h.last_offset_delta: h for _pos, h in batches}
        idx.checked = True
        prev = None
        for i, (a, b) in enumerate(idx.entries):
            if idx.kind == "offset":
                offset, position = a, b
                h = by_pos.get(position)
                if h is None:
                    idx.mismatches.append(f"entry {i}: position {position} (offset {offset}) is not a batch start")
                elif h.base_offset + h.last_offset_delta != offset:
                    idx.mismatches.append(f"entry {i}: index offset {offset}, log offset "
                                          f"{h.base_offset + h.last_offset_delta} at position {position}")
                if prev is not None and offset <= prev:
                    idx.mismatches.append(f"entry {i}: offset {offset} not larger than previous {prev}")
                prev = offset
            else:
                ts, offset = a, b
                h = by_last.get(offset)
                if h is None:
                    idx.mismatches.append(f"entry {i}: offset {offset} is not the last offset of a batch")
                elif h.max_timestamp != ts:
                    idx.mismatches.append(f"entry {i}: index timestamp {ts}, log max timestamp {h.max_timestamp}")
                if prev is not None and ts < prev:
                    idx.mismatches.append(f"entry {i}: timestamp {ts} smaller than previous {prev}")
                prev = ts
    finally:
        ops.close(fd)


def verify_index_only(path, *, file_ops: FileOps | None = None) -> IndexDump:
    """``--verify-index-only``: the same dump, for its ``mismatches``."""
    return dump_index(path, file_ops=file_ops)


@dataclass
class TxnIndexDump:
    path: Path
    entries: list[AbortedTxn]


def dump_txn_index(path, *, file_ops: FileOps | None = None) -> TxnIndexDump:
    """The aborted transactions of a ``.txnindex`` (CorruptIndexError on an unknown version)."""
    path = Path(path)
    return TxnIndexDump(path, parse_entries((file_ops or DEFAULT_FILE_OPS).read_file(path), str(path)))


@dataclass
class SnapshotDump:
    path: Path
    entries: list   # ProducerStateEntry, by producer id


def dump_snapshot(path, *, file_ops: FileOps | None = None) -> SnapshotDump:
    path = Path(path)
    state = decode_snapshot((file_ops or DEFAULT_FILE_OPS).read_file(path), str(path))
    return SnapshotDump(path, [state.last_entry(pid) for pid in sorted(state.producer_ids())])


def dump_file(path, *, deep: bool = False, file_ops: FileOps | None = None):
    name = Path(path).name
    if name.endswith(LOG_SUFFIX):
        return dump_log(path, deep=deep, file_ops=file_ops)
    if name.endswith(SNAPSHOT_SUFFIX):
        return dump_snapshot(path, file_ops=file_ops)
    if name.endswith(TXN_INDEX_SUFFIX):
        return dump_txn_index(path, file_ops=file_ops)
    return dump_index(path, file_ops=file_ops)


def _optional_long(v) -> str:
    """Java's ``OptionalLong.toString``, as Kafka 4's tools print these fields."""
    return "OptionalLong.empty" if v is None else f"OptionalLong[{v}]"


def _record_extra(h: BatchHeader, r) -> str:
    """What Kafka prints after a control record's header keys: its marker or type."""
    if not h.is_control:
        return ""
    try:
        ctype = control_record_type(r.key)
        if ctype in (CONTROL_ABORT, CONTROL_COMMIT):
            commit, coordinator_epoch = parse_end_txn_marker(r)
            return f" endTxnMarker: {'COMMIT' if commit else 'ABORT'} coordinatorEpoch: {coordinator_epoch}"
        return f" controlType: UNKNOWN({ctype})"
    except CorruptRecordError as e:
        return f" invalid control record: {e}"


def render(result, *, verify_only: bool = False) -> str:
    """Kafka-like text for a LogDump, IndexDump, TxnIndexDump or SnapshotDump."""
    lines = [f"Dumping {result.path}"]
    if isinstance(result, TxnIndexDump):
        for t in result.entries:
            lines.append(f"version: {CURRENT_VERSION} producerId: {t.producer_id} firstOffset: {t.first_offset} "
                         f"lastOffset: {t.last_offset} lastStableOffset: {t.last_stable_offset}")
        return "\n".join(lines)
    if isinstance(result, SnapshotDump):
        for e in result.entries:
            line = (f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch} "
                    f"coordinatorEpoch: {e.coordinator_epoch} "
                    f"currentTxnFirstOffset: {_optional_long(e.current_txn_first_offset)} "
                    f"lastTimestamp: {e.last_timestamp}")
            if e.batches:
                b = e.batches[-1]
                line += (f" firstSequence: {b.first_seq} lastSequence: {b.last_seq} lastOffset: {b.last_offset} "
                         f"offsetDelta: {b.last_offset - b.first_offset} timestamp: {b.timestamp}")
            lines.append(line)
        return "\n".join(lines)
    if isinstance(result, LogDump):
        lines.append("Log starting offset: " + str(offset_from_filename(result.path.name)))
        for b in result.batches:
            h = b.header
            lseq = -1 if h.base_sequence < 0 else (h.base_sequence + h.last_offset_delta) % 0x80000000
            ts_name = "LogAppendTime" if h.timestamp_type else "CreateTime"
            lines.append(
                f"baseOffset: {h.base_offset} lastOffset: {b.last_offset} count: {h.records_count} "
                f"baseSequence: {h.base_sequence} lastSequence: {lseq} producerId: {h.producer_id} "
                f"producerEpoch: {h.producer_epoch} partitionLeaderEpoch: {h.partition_leader_epoch} "
                f"isTransactional: {str(h.is_transactional).lower()} isControl: {str(h.is_control).lower()} "
                f"deleteHorizonMs: {_optional_long(h.base_timestamp if h.has_delete_horizon else None)} "
                f"position: {b.position} {ts_name}: {h.max_timestamp} size: {b.size} magic: {h.magic} "
                f"compresscodec: {_CODECS.get(h.compression, h.compression)} crc: {h.crc} "
                f"isvalid: {str(b.crc_valid).lower()}")
            for r in b.records or ():
                seq = -1 if h.base_sequence < 0 else (h.base_sequence + r.offset - h.base_offset) % 0x80000000
                lines.append(f"| offset: {r.offset} {ts_name}: {r.timestamp} keySize: "
                             f"{-1 if r.key is None else len(r.key)} valueSize: "
                             f"{-1 if r.value is None else len(r.value)} sequence: {seq} headerKeys: "
                             f"[{','.join(k for k, _ in r.headers)}]" + _record_extra(h, r))
        if result.error:
            lines.append(f"Found {result.trailing_bytes} invalid bytes at position {result.valid_bytes}: {result.error}")
        return "\n".join(lines)
    if not verify_only:
        for a, b in result.entries:
            if result.kind == "offset":
                lines.append(f"offset: {a} position: {b}")
            else:
                lines.append(f"timestamp: {a} offset: {b}")
    if result.checked:
        if result.mismatches:
            lines.append(f"Mismatches in :{result.path}")
            lines.extend("  " + m for m in result.mismatches)
        else:
            lines.append(f"{result.path} passed the index sanity check.")
    return "\n".join(lines)


def main(files: list[str], *, verify_index_only: bool = False, print_data: bool = False,
         out=None) -> int:
    """``hourglass dump-log``: print each file; exit 1 if any index disagrees with its log or
    a file cannot be read, else 0 (``--verify-index-only`` prints only the verdicts)."""
    import sys
    out = out or sys.stdout
    rc = 0
    for f in files:
        try:
            if verify_index_only and Path(f).name.endswith(LOG_SUFFIX):
                continue
            res = dump_file(f, deep=print_data)
        except (OSError, ValueError, CorruptRecordError, CorruptSnapshotError, CorruptIndexError) as exc:
            print(f"Dumping {f}\ncannot read {f}: {exc}", file=out)
            rc = 1
            continue
        if isinstance(res, IndexDump) and res.mismatches:
            rc = 1
        print(render(res, verify_only=verify_index_only), file=out)
    return rc


__all__ = ["BatchInfo", "LogDump", "IndexDump", "SnapshotDump", "TxnIndexDump", "dump_log", "dump_index",
           "dump_snapshot", "dump_txn_index", "dump_file",
           "verify_index_only", "render", "main"]
