"""Helpers for the transaction tests (issue 17), as a user would check a transactional topic.

- ``tbroker``: a broker fixture with ``TXN_BROKER_OVERRIDES``; ``unique(prefix)`` names.
- ``txn_producer(bootstrap, txn_id, **cfg)``: a confluent-kafka transactional producer,
  ``init_transactions()`` done.
- ``read_to_end(bootstrap, topic, partitions, isolation)``: every record a fresh consumer by
  manual assignment reads from the beginning up to the end *for that isolation level* (the
  high watermark, or the last stable offset under read_committed), and its positions there
  (``record=`` picks what is kept of each message: by default its offset and value).
- ``end_offsets(bootstrap, topic, partitions, isolation)``: ListOffsets LATEST through the
  admin client with that isolation level (read_committed: the LSO).
- ``scan_partition(dir)``: a brute-force walk of one partition's ``.log`` files with
  ``protocol.records`` (no broker code): which records are committed, aborted, still open or
  not transactional, the aborted transactions Kafka's ``.txnindex`` must hold (per segment,
  with the LSO Kafka records), and the LSO. ``read_txn_index(path)`` parses a ``.txnindex``
  file (Kafka's format: 34-byte entries ``>hqqqq``: version 0, producer id, first offset,
  last offset, last stable offset).

The LSO rule restated from Kafka (``ProducerStateManager.lastStableOffset(completedTxn)``):
when an ABORT marker completes a producer's transaction, the entry's last stable offset is
the first offset of the earliest *other* ongoing transaction in the partition, else the
marker's offset + 1. A marker for a producer with no data in the partition completes a
transaction whose first offset is the marker itself (``currentTxnFirstOffset.orElse(offset)``).
"""
from __future__ import annotations

import struct
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from protocol.primitives import read_uvarint
from protocol.records.record import decode_batch, parse_end_txn_marker

READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"

# Brokers for transaction tests: a silent transaction is aborted within transaction.timeout.ms
# plus this interval (Kafka's default is 10 s); groups rebalance at once and accept the short
# session timeouts the consume-transform-produce members use.
TXN_BROKER_OVERRIDES = {
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500,
    "group.initial.rebalance.delay.ms": 0,
    "group.min.session.timeout.ms": 1000,
}


@pytest.fixture
def tbroker(broker_factory):
    """A broker with ``TXN_BROKER_OVERRIDES`` (import this fixture into a test module)."""
    return broker_factory(TXN_BROKER_OVERRIDES)


def unique(prefix: str) -> str:
    """A topic, group or transactional id no other test uses."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"

TXN_INDEX_ENTRY = struct.Struct(">hqqqq")   # version, producer id, first, last, last stable offset


# ------------------------------------------------------------------------------- clients
def txn_producer(bootstrap: str, txn_id: str, *, init_timeout: float = 30.0, **cfg):
    """A confluent-kafka producer with ``transactional.id`` = ``txn_id``, transactions initialised."""
    from confluent_kafka import Producer
    conf = {"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 0}
    conf.update(cfg)
    p = Producer(conf)
    p.init_transactions(init_timeout)
    return p


def consumer(bootstrap: str, isolation: str, **cfg):
    from confluent_kafka import Consumer
    conf = {"bootstrap.servers": bootstrap, "group.id": f"txn-reader-{time.monotonic_ns()}",
            "enable.auto.commit": False, "isolation.level": isolation, "enable.partition.eof": True,
            "auto.offset.reset": "earliest"}
    conf.update(cfg)
    return Consumer(conf)


def offset_and_value(m) -> tuple[int, bytes]:
    return m.offset(), m.value()


@dataclass
class ReadResult:
    records: dict[int, list]                        # partition -> [record(m)] in read order ((offset, value) by default)
    positions: dict[int, int]                       # partition -> consumer position at the end

    def values(self, partition: int) -> list[bytes]:
        return [v for _, v in self.records[partition]]

    def all_values(self) -> list[bytes]:
        return [v for recs in self.records.values() for _, v in recs]


def read_to_end(bootstrap: str, topic: str, partitions, isolation: str, *, timeout: float = 20.0,
                record=offset_and_value) -> ReadResult:
    """Read ``partitions`` from the beginning until each reports end-of-partition at (or past)
    the end offset for ``isolation``; returns ``record(message)`` of each and the final positions."""
    from confluent_kafka import KafkaError, OFFSET_BEGINNING, TopicPartition
    partitions = list(partitions)
    ends = end_offsets(bootstrap, topic, partitions, isolation)
    c = consumer(bootstrap, isolation)
    out: dict[int, list] = {p: [] for p in partitions}
    try:
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        done: set[int] = {p for p in partitions if ends[p] == 0}
        deadline = time.monotonic() + timeout
        while len(done) < len(partitions):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{isolation} read of {topic} {partitions}: end offsets {ends}, "
                                   f"reached {sorted(done)}, got {({p: len(r) for p, r in out.items()})}")
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error() is not None:
                if m.error().code() == KafkaError._PARTITION_EOF:
                    if m.offset() >= ends[m.partition()]:
                        done.add(m.partition())
                    continue
                raise RuntimeError(f"reading {topic}: {m.error()}")
            out[m.partition()].append(record(m))
        pos = c.position([TopicPartition(topic, p) for p in partitions])
        return ReadResult(out, {tp.partition: tp.offset for tp in pos})
    finally:
        c.close()


def end_offsets(bootstrap: str, topic: str, partitions, isolation: str) -> dict[int, int]:
    """ListOffsets LATEST with the given isolation level (read_committed answers the LSO)."""
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec
    level = IsolationLevel.READ_COMMITTED if isolation == READ_COMMITTED else IsolationLevel.READ_UNCOMMITTED
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futs = admin.list_offsets({TopicPartition(topic, p): OffsetSpec.latest() for p in partitions},
                              isolation_level=level, request_timeout=20)
    return {tp.partition: f.result().offset for tp, f in futs.items()}


def create_topic(bootstrap: str, topic: str, partitions: int, config: dict | None = None) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1, config=config or {})])[topic].result(20)


def ctp_topics(bootstrap: str, prefix: str, per_partition: int, partitions: int = 4) -> tuple[str, str, str]:
    """(input, output, group) names for a consume-transform-produce test: both topics created
    with ``partitions`` partitions, the input holding ``per_partition`` plain records
    ``in-<partition>-<i>`` in each partition."""
    from confluent_kafka import Producer
    src, dst, group = unique(f"{prefix}-in"), unique(f"{prefix}-out"), unique(f"{prefix}-g")
    create_topic(bootstrap, src, partitions)
    create_topic(bootstrap, dst, partitions)
    plain = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for part in range(partitions):
        for i in range(per_partition):
            plain.produce(src, f"in-{part}-{i}".encode(), partition=part)
    assert plain.flush(20) == 0
    return src, dst, group


def group_committed(bootstrap: str, group: str, topic: str, partitions) -> dict[int, int]:
    """The group's committed offsets (``-1001`` = none), read by a consumer outside the group."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        res = c.committed([TopicPartition(topic, p) for p in partitions], timeout=20)
        return {tp.partition: tp.offset for tp in res}
    finally:
        c.close()


# ------------------------------------------------------------------------------- the log itself
@dataclass
class ScannedRecord:
    offset: int
    value: bytes | None
    producer_id: int
    state: str            # "committed", "aborted", "open" (transaction not completed) or "plain"
    timestamp: int = -1


@dataclass
class LogScan:
    log_end_offset: int
    records: list[ScannedRecord]
    markers: list[tuple[int, int, bool, int]]            # (offset, producer id, is_commit, timestamp)
    aborted: dict[int, list[tuple[int, int, int, int]]]  # segment base -> [(pid, first, last, lso)]
    ongoing: dict[int, int] = field(default_factory=dict)  # pid -> first offset of its open txn
    segments: list[int] = field(default_factory=list)

    @property
    def last_stable_offset(self) -> int:
        return min(self.ongoing.values(), default=self.log_end_offset)

    def values(self, *states: str) -> list[bytes]:
        return [r.value for r in self.records if r.state in states]

    def first_offset_reaching(self, ts: int) -> int | None:
        """KIP-33 over everything in the log, control batches included (their timestamp is
        when the marker was written): the first offset whose timestamp is >= ts."""
        hits = [r.offset for r in self.records if r.timestamp >= ts] + [m[0] for m in self.markers if m[3] >= ts]
        return min(hits, default=None)


def scan_partition(partition_dir: str | Path) -> LogScan:
    """Brute force over every ``.log`` file of a partition dir, in base-offset order."""
    d = Path(partition_dir)
    logs = sorted(d.glob("*.log"), key=lambda p: int(p.stem))
    records: list[ScannedRecord] = []
    by_pid_open: dict[int, list[ScannedRecord]] = {}
    ongoing: dict[int, int] = {}
    markers: list[tuple[int, int, bool, int]] = []
    aborted: dict[int, list[tuple[int, int, int, int]]] = {}
    leo = 0
    for log in logs:
        base = int(log.stem)
        buf = log.read_bytes()
        pos = 0
        while len(buf) - pos >= 12:
            (length,) = struct.unpack_from(">i", buf, pos + 8)
            if length <= 0 or pos + 12 + length > len(buf):
                break               # preallocated zeros or a torn tail
            header, recs = decode_batch(buf, pos)
            pos += 12 + length
            leo = header.base_offset + header.last_offset_delta + 1
            pid = header.producer_id
            if header.is_control:
                for r in recs:
                    is_commit, _epoch = parse_end_txn_marker(r)
                    markers.append((r.offset, pid, is_commit, r.timestamp))
                    first = ongoing.pop(pid, r.offset)
                    for sr in by_pid_open.pop(pid, []):
                        sr.state = "committed" if is_commit else "aborted"
                    if not is_commit:
                        lso = min(ongoing.values(), default=r.offset + 1)
                        aborted.setdefault(base, []).append((pid, first, r.offset, lso))
                continue
            if header.is_transactional:
                ongoing.setdefault(pid, header.base_offset)
                for r in recs:
                    sr = ScannedRecord(r.offset, r.value, pid, "open", r.timestamp)
                    records.append(sr)
                    by_pid_open.setdefault(pid, []).append(sr)
            else:
                records.extend(ScannedRecord(r.offset, r.value, pid, "plain", r.timestamp) for r in recs)
    return LogScan(leo, records, markers, aborted, ongoing, [int(p.stem) for p in logs])


def read_txn_index(path: str | Path) -> list[tuple[int, int, int, int]]:
    """Entries of a ``.txnindex`` file as (producer id, first, last, last stable offset)."""
    raw = Path(path).read_bytes()
    assert len(raw) % TXN_INDEX_ENTRY.size == 0, f"{path}: {len(raw)} bytes is not a multiple of 34"
    out = []
    for i in range(0, len(raw), TXN_INDEX_ENTRY.size):
        version, pid, first, last, lso = TXN_INDEX_ENTRY.unpack_from(raw, i)
        assert version == 0, f"{path}: entry {i // 34} has version {version}"
        out.append((pid, first, last, lso))
    return out


def txn_indexes_on_disk(partition_dir: str | Path) -> dict[int, list[tuple[int, int, int, int]]]:
    """segment base offset -> its ``.txnindex`` entries (segments without the file omitted,
    as Kafka creates it lazily; an empty file counts as no entries)."""
    out = {}
    for p in Path(partition_dir).glob("*.txnindex"):
        entries = read_txn_index(p)
        if entries:
            out[int(p.stem)] = entries
    return out


# ------------------------------------------------------------------ __transaction_state on disk
# Kafka's TransactionState ids as stored in TransactionLogValue.TransactionStatus.
TXN_STATUS = {"Empty": 0, "Ongoing": 1, "PrepareCommit": 2, "PrepareAbort": 3, "CompleteCommit": 4,
              "CompleteAbort": 5, "Dead": 6, "PrepareEpochFence": 7}
_STATUS_OFFSET = 2 + 8 + 2 + 4   # version, ProducerId, ProducerEpoch, TransactionTimeoutMs (v0 and v1 alike)


def java_string_hash(s: str) -> int:
    h = 0
    for unit in struct.unpack(f">{len(s.encode('utf-16-be')) // 2}H", s.encode("utf-16-be")):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def txn_state_partition(txn_id: str, num_partitions: int = 50) -> int:
    """Kafka's TransactionStateManager.partitionFor: Utils.abs(id.hashCode) % partitions."""
    h = java_string_hash(txn_id)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions


def txn_log_key(txn_id: str) -> bytes:
    """TransactionLogKey (version 0): int16 version, TransactionalId as an int16-length string."""
    raw = txn_id.encode()
    return struct.pack(">hh", 0, len(raw)) + raw


def decode_txn_log_value(value: bytes) -> dict:
    """TransactionLogValue v0 (classic encoding) or v1 (flexible: compact strings/arrays and
    tagged fields), restated from Kafka's TransactionLogValue.json."""
    version, pid, epoch, timeout, status = struct.unpack_from(">hqhib", value, 0)
    pos = _STATUS_OFFSET + 1
    parts: dict[str, list[int]] = {}
    if version == 0:
        (n,) = struct.unpack_from(">i", value, pos)
        pos += 4
        for _ in range(max(n, 0)):
            (ln,) = struct.unpack_from(">h", value, pos)
            topic = value[pos + 2:pos + 2 + ln].decode()
            pos += 2 + ln
            (k,) = struct.unpack_from(">i", value, pos)
            parts[topic] = list(struct.unpack_from(f">{k}i", value, pos + 4))
            pos += 4 + 4 * k
    else:
        n, pos = read_uvarint(value, pos)
        for _ in range(max(n - 1, 0)):
            ln, pos = read_uvarint(value, pos)
            topic = value[pos:pos + ln - 1].decode()
            pos += ln - 1
            k, pos = read_uvarint(value, pos)
            parts[topic] = list(struct.unpack_from(f">{k - 1}i", value, pos))
            pos += 4 * (k - 1)
            _tags, pos = read_uvarint(value, pos)       # the element's tagged fields (none known)
            assert _tags == 0, "unexpected tagged fields in PartitionsSchema"
    last_update, start = struct.unpack_from(">qq", value, pos)
    return {"version": version, "producer_id": pid, "producer_epoch": epoch, "timeout_ms": timeout,
            "status": status, "partitions": parts, "last_update_ms": last_update, "start_ms": start}


def _valid_end(buf: bytes) -> tuple[int, int]:
    """(byte position after the last whole batch, next offset) of one .log file's bytes."""
    pos, nxt = 0, None
    while len(buf) - pos >= 12:
        base, length = struct.unpack_from(">qi", buf, pos)
        if length <= 0 or pos + 12 + length > len(buf):
            break
        (last_delta,) = struct.unpack_from(">i", buf, pos + 23)
        nxt = base + last_delta + 1
        pos += 12 + length
    return pos, nxt


def latest_record_for_key(partition_dir: str | Path, key: bytes) -> tuple[int, bytes | None] | None:
    """(offset, value) of the last record with ``key`` in a partition dir, None if none."""
    found = None
    for log in sorted(Path(partition_dir).glob("*.log"), key=lambda p: int(p.stem)):
        buf = log.read_bytes()
        end, _ = _valid_end(buf)
        pos = 0
        while pos < end:
            header, recs = decode_batch(buf, pos)
            pos += header.size
            for r in recs:
                if r.key == key:
                    found = (r.offset, r.value)
    return found


def append_record_offline(partition_dir: str | Path, key: bytes, value: bytes, timestamp_ms: int) -> int:
    """Append one plain record batch at the log end of a partition of a *stopped* broker (as
    if the broker had written it just before dying); returns its offset. Bytes after the last
    whole batch (a torn tail, preallocated zeros) are cut first."""
    from protocol.records.record import build_batch
    logs = sorted(Path(partition_dir).glob("*.log"), key=lambda p: int(p.stem))
    active = logs[-1]
    buf = active.read_bytes()
    end, nxt = _valid_end(buf)
    offset = int(active.stem) if nxt is None else nxt
    batch = build_batch([(key, value, timestamp_ms)], base_offset=offset, partition_leader_epoch=0)
    with open(active, "r+b") as f:
        f.truncate(end)
        f.seek(end)
        f.write(batch)
    return offset


def rewrite_txn_status_offline(data_dir: str | Path, txn_id: str, status: str, num_partitions: int = 50) -> dict:
    """Append to ``__transaction_state`` a copy of ``txn_id``'s latest TransactionLogValue
    with TransactionStatus set to ``status``: what the coordinator writes first when it
    prepares a commit or abort (Kafka's TransactionMetadata.prepareComplete... transitions
    keep the producer id/epoch and partitions). Returns the decoded original value."""
    d = Path(data_dir) / f"__transaction_state-{txn_state_partition(txn_id, num_partitions)}"
    key = txn_log_key(txn_id)
    latest = latest_record_for_key(d, key)
    assert latest is not None and latest[1] is not None, f"no TransactionLogValue for {txn_id} in {d}"
    before = decode_txn_log_value(latest[1])
    patched = bytearray(latest[1])
    patched[_STATUS_OFFSET] = TXN_STATUS[status]
    now = int(time.time() * 1000)
    append_record_offline(d, key, bytes(patched), now)
    return before
