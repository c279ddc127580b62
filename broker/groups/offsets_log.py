"""Durable group state: the internal compacted topic ``__consumer_offsets``.

Layout as in Kafka: ``offsets.topic.num.partitions`` partitions (an existing topic keeps its
own count), ``cleanup.policy=compact``; group ``g`` lives in partition
``abs(javaStringHashCode(g)) % partitions`` (Kafka's ``Utils.abs``: Integer.MIN_VALUE maps
to 0). Records use Kafka's own key/value schemas (``broker.groups.schemas``); every
OffsetCommit request becomes one batch (its partitions are committed atomically), every
group metadata change one record.

Appends are synchronous (``PartitionLog.append(..., from_client=False)``): once a write
returns, the record is in the segment file, so it survives a crash of the process (kill -9);
like Kafka, we do not fsync per commit.

Transactional offset commits (TxnOffsetCommit) are one transactional batch carrying the
producer id and epoch; they stay pending until the transaction's marker: a COMMIT makes them
the group's offsets (unless a plain commit further on in the log replaced one), an ABORT drops
them.

Consumer-protocol groups (KIP-848) are written with Kafka's own record types (key versions
3-8 and 16, ``broker.groups.schemas``), one batch per coordinator operation, and replayed in
log order into ``ConsumerGroup`` objects by the same ``ConsumerGroup.replay`` the live
coordinator uses; a group converted between the protocols shows as tombstones of one type
followed by records of the other, so the last type written wins. Streams groups (KIP-1071,
types 17 and 19-23) are replayed as the latest record per key and rebuilt by
``streams_records.group_from_records``; share group records (types 9-15) are skipped.

Replay (``load``) reads every partition from its log start offset in offset order; for each
key the last record wins and a null value (tombstone) deletes it. Transactional offsets are
kept per producer until that producer's marker in the same partition, as Kafka's loader does;
those of transactions still open at the end of the log come back pending.
"""
from __future__ import annotations

import logging
from dataclasses import field
from typing import Optional

from protocol.deferred import dataclass
from broker.groups.consumer_group import ConsumerGroup, IllegalGroupState
from broker.groups.base import OffsetAndMetadata
from broker.groups.classic_records import group_value
from broker.groups.internal_topics import partition_for, read_batches
from broker.groups.schemas import (
    CONSUMER_GROUP_METADATA, CONSUMER_GROUP_RECORDS, OTHER_GROUP_RECORD_TYPES, STREAMS_GROUP_METADATA,
    STREAMS_GROUP_RECORDS, OFFSET_COMMIT_VALUE_VERSION, OFFSET_COMMIT_VALUE_VERSION_EXPIRE,
    GroupMetadataValue, OffsetCommitValue, decode_key, decode_value, encode_versioned,
    group_metadata_key, offset_commit_key,
)
from protocol.errors import CorruptRecordError, DecodeError, ErrorCode
from storage.errors import KafkaStorageError
from protocol.records.record import CONTROL_COMMIT, build_batch, control_record_type
from broker.cluster import LEADER_EPOCH

log = logging.getLogger(__name__)

GROUP_METADATA_TOPIC_NAME = "__consumer_offsets"
# Kafka's offsets topic configs (GroupCoordinator.offsetsTopicConfigs, segment bytes default)
OFFSETS_TOPIC_CONFIGS = {
    "cleanup.policy": "compact",
    "segment.bytes": "104857600",
    "compression.type": "producer",
}
@dataclass
class LoadedState:
    """Replayed contents: the latest group metadata and offsets per group."""
    groups: dict[str, object] = field(default_factory=dict)              # group -> GroupMetadataValue
    offsets: dict[str, dict[tuple[str, int], OffsetAndMetadata]] = field(default_factory=dict)
    records: int = 0
    # group -> {tp: log offset of the batch holding the committed offset}
    positions: dict[str, dict[tuple[str, int], int]] = field(default_factory=dict)
    # group -> producer id -> {tp: (offset, batch position)} of transactions still open
    pending_txn: dict[str, dict[int, dict[tuple[str, int], tuple[OffsetAndMetadata, int]]]] = field(default_factory=dict)
    # consumer-protocol groups (KIP-848), replayed (without their offsets)
    consumer_groups: dict = field(default_factory=dict)
    # Streams groups (KIP-1071): group -> record type -> {member id or None: decoded value}, and
    # group -> {key bytes: value bytes} (the latest record per key, what the log says now)
    streams_groups: dict = field(default_factory=dict)
    streams_written: dict = field(default_factory=dict)


def offset_value(om: OffsetAndMetadata) -> bytes:
    if om.expire_timestamp is not None:
        v = OffsetCommitValue(offset=om.offset, metadata=om.metadata, commit_timestamp=om.commit_timestamp,
                              expire_timestamp=om.expire_timestamp)
        return encode_versioned(OffsetCommitValue, v, OFFSET_COMMIT_VALUE_VERSION_EXPIRE)
    v = OffsetCommitValue(offset=om.offset, leader_epoch=om.leader_epoch, metadata=om.metadata,
                          commit_timestamp=om.commit_timestamp)
    return encode_versioned(OffsetCommitValue, v, OFFSET_COMMIT_VALUE_VERSION)


def offset_from_value(value) -> OffsetAndMetadata:
    version, v = decode_value(OffsetCommitValue, value)
    expire = v.expire_timestamp if version == 1 and v.expire_timestamp >= 0 else None
    return OffsetAndMetadata(v.offset, v.leader_epoch if version >= 3 else -1, v.metadata or "",
                             v.commit_timestamp, expire)


class OffsetsLog:
    """Reads and writes group records through the partition logs of ``__consumer_offsets``."""

    def __init__(self, topics, num_partitions: int, clock):
        self.topics = topics            # broker.topics.TopicManager
        self.num_partitions = num_partitions
        self.clock = clock

    async def ensure_topic_off_loop(self) -> None:
        """``ensure_topic`` for FindCoordinator: the 50 partitions' files are made off the
        event loop (``TopicManager.create_topic_off_loop``), so other connections are served
        meanwhile; concurrent callers share the one creation."""
        from broker.topics import TopicError
        t = self.topics.get(GROUP_METADATA_TOPIC_NAME)
        if t is None:
            try:
                t = await self.topics.create_topic_off_loop(GROUP_METADATA_TOPIC_NAME, self.num_partitions, 1,
                                                            dict(OFFSETS_TOPIC_CONFIGS))
                log.info("created %s with %d partitions", GROUP_METADATA_TOPIC_NAME, t.partitions)
            except TopicError as exc:
                if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
                    raise
                t = self.topics.get(GROUP_METADATA_TOPIC_NAME)
                if t is None:
                    raise
        self.num_partitions = t.partitions

    def ensure_topic(self) -> None:
        """Create the topic on first use (as Kafka does on the first FindCoordinator), so a
        broker that never sees a group has no offsets topic. While FindCoordinator creates it
        off the loop, a write that cannot wait fails with KAFKA_STORAGE_ERROR (mapped to a
        retriable coordinator error): a client that skipped FindCoordinator retries."""
        t = self.topics.get(GROUP_METADATA_TOPIC_NAME)
        if t is None and self.topics.creating(GROUP_METADATA_TOPIC_NAME):
            raise KafkaStorageError(f"{GROUP_METADATA_TOPIC_NAME} is being created")
        if t is None:
            t = self.topics.create_topic(GROUP_METADATA_TOPIC_NAME, self.num_partitions, 1,
                                         dict(OFFSETS_TOPIC_CONFIGS))
            log.info("created %s with %d partitions", GROUP_METADATA_TOPIC_NAME, t.partitions)
        self.num_partitions = t.partitions

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def _log(self, group_id: str):
        self.ensure_topic()
        plog = self.topics.log(GROUP_METADATA_TOPIC_NAME, self.partition_for(group_id))
        if plog is None:
            raise RuntimeError(f"{GROUP_METADATA_TOPIC_NAME} partition for group {group_id} is not open")
        return plog

    def _append(self, group_id: str, records: list[tuple[bytes, Optional[bytes]]], **batch):
        if not records:
            return None
        now = self.clock.now_ms()
        data = build_batch([(k, v, now) for k, v in records], **batch)
        return self._log(group_id).append(data, from_client=False, partition_leader_epoch=LEADER_EPOCH)

    # ---- writes (raise storage errors; the coordinator maps them) -------------------------------
    def write_offsets(self, group_id: str, offsets: dict[tuple[str, int], Optional[OffsetAndMetadata]]):
        """One batch: a value per committed partition, a tombstone per None. Returns the append's
        info (its base offset orders the commit against transactional ones)."""
        return self._append(group_id, [(offset_commit_key(group_id, t, p), None if om is None else offset_value(om))
                                       for (t, p), om in offsets.items()])

    def write_txn_offsets(self, group_id: str, producer_id: int, producer_epoch: int,
                          offsets: dict[tuple[str, int], OffsetAndMetadata]):
        """One transactional batch of the producer (Kafka writes base sequence 0: coordinator
        appends are not sequence-checked); pending until the producer's marker."""
        return self._append(group_id, [(offset_commit_key(group_id, t, p), offset_value(om))
                                       for (t, p), om in offsets.items()],
                            producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=0,
                            is_transactional=True)

    def write_records(self, group_id: str, records: list[tuple[bytes, Optional[bytes]]]):
        """One batch of already encoded (key, value) records (a consumer group operation)."""
        return self._append(group_id, records)

    def write_group(self, group, assignment: dict[str, bytes]) -> None:
        self._append(group.group_id, [(group_metadata_key(group.group_id), group_value(group, assignment))])

    def write_tombstones(self, group_id: str, offsets=(), *, group_record: bool = False) -> None:
        """One batch of tombstones: for the given offsets and, with ``group_record``, for the
        group's metadata (a deleted or expired group)."""
        recs = [(offset_commit_key(group_id, t, p), None) for t, p in offsets]
        if group_record:
            recs.append((group_metadata_key(group_id), None))
        self._append(group_id, recs)

    # ---- replay ---------------------------------------------------------------------------------
    def load(self) -> LoadedState:
        state = LoadedState()
        t = self.topics.get(GROUP_METADATA_TOPIC_NAME)
        if t is None:
            return state
        self.num_partitions = t.partitions  # an existing topic keeps its own partition count
        for p in range(self.num_partitions):
            plog = self.topics.log(GROUP_METADATA_TOPIC_NAME, p)
            if plog is not None:
                self._load_partition(plog, state)
        # groups whose metadata was deleted and which have no offsets left are gone
        for g in [g for g, v in state.groups.items() if v is None]:
            del state.groups[g]
        for g in [g for g, o in state.offsets.items() if not o]:
            del state.offsets[g]
        return state

    def _load_partition(self, plog, state: LoadedState) -> None:
        # producer id -> group -> {tp: (offset, batch position)}: transactions open so far
        open_txns: dict[int, dict[str, dict]] = {}
        for h, records in read_batches(plog):
            if h.is_control:
                txn = open_txns.pop(h.producer_id, None)
                if txn and records and self._is_commit(records[0]):
                    for group, pending in txn.items():
                        offsets = state.offsets.setdefault(group, {})
                        positions = state.positions.setdefault(group, {})
                        for tp, (om, pos) in pending.items():
                            if tp not in offsets or positions.get(tp, -1) < pos:
                                offsets[tp] = om
                                positions[tp] = pos
                continue
            txn = open_txns.setdefault(h.producer_id, {}) if h.is_transactional else None
            for r in records:
                self._apply(r.key, r.value, state, plog, h.base_offset, txn)
        for pid, txn in open_txns.items():
            for group, pending in txn.items():
                if pending:
                    state.pending_txn.setdefault(group, {})[pid] = pending

    @staticmethod
    def _is_commit(record) -> bool:
        try:
            return control_record_type(record.key) == CONTROL_COMMIT
        except CorruptRecordError:
            return False

    @staticmethod
    def _replay_consumer_record(state: LoadedState, record_type: int, k, value) -> None:
        gid = k.group_id
        v = None if value is None else decode_value(CONSUMER_GROUP_RECORDS[record_type][1], value)[1]
        g = state.consumer_groups.get(gid)
        if g is None:
            if v is None:
                return
            g = state.consumer_groups[gid] = ConsumerGroup(gid)
            if state.groups.get(gid) is not None:
                log.warning("group %s: consumer group records follow classic metadata without its tombstone", gid)
                state.groups[gid] = None
        if record_type == CONSUMER_GROUP_METADATA and v is None:
            del state.consumer_groups[gid]
            return
        g.replay(record_type, k, v)

    @staticmethod
    def _drop_streams_group(state: LoadedState, gid: str) -> None:
        state.streams_groups.pop(gid, None)
        state.streams_written.pop(gid, None)

    @staticmethod
    def _replay_streams_record(state: LoadedState, record_type: int, k, key: bytes, value) -> None:
        """The latest record per key; the group's metadata tombstone deletes the whole group
        (Kafka writes it last), its first metadata record replaces a classic or consumer group
        of that name (their tombstones may be missing in logs of older coordinators)."""
        gid = k.group_id
        v = None if value is None else decode_value(STREAMS_GROUP_RECORDS[record_type][1], value)[1]
        if record_type == STREAMS_GROUP_METADATA:
            if v is None:
                OffsetsLog._drop_streams_group(state, gid)
                return
            if state.groups.get(gid) is not None:
                state.groups[gid] = None
            state.consumer_groups.pop(gid, None)
        by_member = state.streams_groups.setdefault(gid, {}).setdefault(record_type, {})
        written = state.streams_written.setdefault(gid, {})
        mid = getattr(k, "member_id", None)
        if v is None:
            by_member.pop(mid, None)
            written.pop(bytes(key), None)
        else:
            by_member[mid] = v
            written[bytes(key)] = bytes(value)

    def _apply(self, key, value, state: LoadedState, plog, position: int = -1, txn: Optional[dict] = None) -> None:
        if key is None:
            return
        if len(key) >= 2 and int.from_bytes(bytes(key[:2]), "big", signed=True) in OTHER_GROUP_RECORD_TYPES:
            return  # share group records: not served here
        try:
            version, k = decode_key(key)
            state.records += 1
            if version in (0, 1):
                tp = (k.topic, k.partition)
                if txn is not None:  # a transactional offset commit: pending until its marker
                    pending = txn.setdefault(k.group, {})
                    if value is None:
                        pending.pop(tp, None)
                    else:
                        pending[tp] = (offset_from_value(value), position)
                    return
                offsets = state.offsets.setdefault(k.group, {})
                if value is None:
                    offsets.pop(tp, None)
                    state.positions.get(k.group, {}).pop(tp, None)
                else:
                    offsets[tp] = offset_from_value(value)
                    state.positions.setdefault(k.group, {})[tp] = position
            elif version == 2:
                if value is None:
                    state.groups[k.group] = None
                    # Kafka keeps offsets written after a deletion; those before were tombstoned
                else:
                    state.groups[k.group] = decode_value(GroupMetadataValue, value)[1]
                    state.consumer_groups.pop(k.group, None)
                    self._drop_streams_group(state, k.group)
            elif version in CONSUMER_GROUP_RECORDS:
                if version == CONSUMER_GROUP_METADATA and value is not None:
                    self._drop_streams_group(state, k.group_id)
                self._replay_consumer_record(state, version, k, value)
            elif version in STREAMS_GROUP_RECORDS:
                self._replay_streams_record(state, version, k, key, value)
        except DecodeError as exc:
            log.error("skipping undecodable record in %s-%d: %s", plog.topic, plog.partition, exc)
        except IllegalGroupState as exc:
            log.error("skipping inconsistent record in %s-%d: %s", plog.topic, plog.partition, exc)
