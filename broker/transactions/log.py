"""Durable transaction state: the internal compacted topic ``__transaction_state``.

Layout as in Kafka: ``transaction.state.log.num.partitions`` partitions (an existing topic
keeps its own count), ``cleanup.policy=compact``, uncompressed, ``segment.bytes`` =
``transaction.state.log.segment.bytes``; created on the first transactional use (Kafka creates
it on the first FindCoordinator or InitProducerId for a transactional id). Transactional id
``t`` lives in partition ``abs(javaStringHashCode(t)) % partitions``, as groups do.

Records (Kafka's transaction-coordinator ``TransactionLogKey.json``/``TransactionLogValue.json``):
key = int16 version 0 + ``TransactionLogKey`` (transactional id); value = int16 version +
``TransactionLogValue``: producer id, epoch, timeout, state id, partitions (null when Empty),
last update and start timestamps; value v1 (flexible) adds tagged previous/next producer id,
client transaction version and (Kafka 4.1) next producer epoch. Like Kafka with transaction
version 1 we write value v0; v1 for a transactional id whose client uses TV2 (its next producer
id must survive a restart). A null value (tombstone) is an expired transactional id.

Every transition of a transactional id is one record, appended synchronously before the
coordinator completes it in memory. Replay (``load``) reads each partition from its log start
in offset order; the last record per key wins, a tombstone removes the id. A record that does
not decode is logged and skipped (Kafka skips unknown versions too).
"""
from __future__ import annotations

import logging
import struct
from typing import Iterable, Optional

from broker.groups.internal_topics import partition_for, read_batches
from broker.transactions.metadata import (
    TV_2, TransactionMetadata, TransactionState, TxnTransitMetadata,
)
from protocol.codec import compile_message
from protocol.errors import DecodeError
from protocol.records.record import build_batch
from protocol.schema import F, MessageSpec
from broker.cluster import LEADER_EPOCH

log = logging.getLogger(__name__)

TRANSACTION_STATE_TOPIC_NAME = "__transaction_state"
KEY_VERSION = 0

TransactionLogKey = compile_message(MessageSpec("TransactionLogKey", -1, "data", "0", "none", [
    F("transactional_id", "string", "0"),
]))

TransactionLogValue = compile_message(MessageSpec("TransactionLogValue", -1, "data", "0-1", "1+", [
    F("producer_id", "int64", "0+"),
    F("previous_producer_id", "int64", "1+", tag=0, tagged_versions="1+", default=-1),
    F("next_producer_id", "int64", "1+", tag=1, tagged_versions="1+", default=-1),
    F("producer_epoch", "int16", "0+"),
    F("transaction_timeout_ms", "int32", "0+"),
    F("transaction_status", "int8", "0+"),
    F("transaction_partitions", "[]PartitionsSchema", "0+", nullable="0+", fields=[
        F("topic", "string", "0+"),
        F("partition_ids", "[]int32", "0+"),
    ]),
    F("transaction_last_update_timestamp_ms", "int64", "0+"),
    F("transaction_start_timestamp_ms", "int64", "0+"),
    F("client_transaction_version", "int16", "1+", tag=2, tagged_versions="1+", default=0),
    F("next_producer_epoch", "int16", "1+", tag=3, tagged_versions="1+", default=-1),
]))

_VERSION = struct.Struct(">h")


def key_bytes(transactional_id: str) -> bytes:
    return _VERSION.pack(KEY_VERSION) + TransactionLogKey._codec.encode(
        TransactionLogKey(transactional_id=transactional_id), KEY_VERSION)


def value_bytes(t: TxnTransitMetadata) -> bytes:
    """Kafka's TransactionLog.valueToBytes (partitions grouped by topic, null when Empty)."""
    if t.txn_state is TransactionState.EMPTY and t.topic_partitions:
        raise ValueError(f"an Empty transaction has no partitions: {t}")
    parts = None
    if t.txn_state is not TransactionState.EMPTY:
        by_topic: dict[str, list[int]] = {}
        for topic, p in sorted(t.topic_partitions):
            by_topic.setdefault(topic, []).append(p)
        parts = [TransactionLogValue.PartitionsSchema(topic=topic, partition_ids=ps) for topic, ps in by_topic.items()]
    version = 1 if t.client_transaction_version >= TV_2 else 0
    v = TransactionLogValue(producer_id=t.producer_id, producer_epoch=t.producer_epoch,
                            transaction_timeout_ms=t.txn_timeout_ms, transaction_status=t.txn_state.id,
                            transaction_partitions=parts, transaction_last_update_timestamp_ms=t.txn_last_update_timestamp,
                            transaction_start_timestamp_ms=t.txn_start_timestamp)
    if version >= 1:  # tagged fields exist only in the flexible version
        v.previous_producer_id = t.prev_producer_id
        v.next_producer_id = t.next_producer_id
        v.client_transaction_version = t.client_transaction_version
    return _VERSION.pack(version) + TransactionLogValue._codec.encode(v, version)


def read_key(data) -> str:
    buf = memoryview(data)
    if len(buf) < 2:
        raise DecodeError("transaction log key shorter than its version")
    (version,) = _VERSION.unpack_from(buf, 0)
    if version != KEY_VERSION:
        raise DecodeError(f"unknown transaction log key version {version}")
    return TransactionLogKey._codec.decode(buf, 0, 2)[0].transactional_id


def read_value(transactional_id: str, data) -> TransactionMetadata:
    buf = memoryview(data)
    if len(buf) < 2:
        raise DecodeError("transaction log value shorter than its version")
    (version,) = _VERSION.unpack_from(buf, 0)
    if version not in (0, 1):
        raise DecodeError(f"unknown transaction log value version {version}")
    v, _ = TransactionLogValue._codec.decode(buf, version, 2)
    try:
        state = TransactionState.from_id(v.transaction_status)
    except ValueError as exc:
        raise DecodeError(str(exc)) from None
    parts = set()
    if state is not TransactionState.EMPTY:
        parts = {(ps.topic, p) for ps in v.transaction_partitions or [] for p in ps.partition_ids}
    t = TxnTransitMetadata(v.producer_id, v.previous_producer_id, v.next_producer_id, v.producer_epoch, -1,
                           v.transaction_timeout_ms, state, frozenset(parts), v.transaction_start_timestamp_ms,
                           v.transaction_last_update_timestamp_ms, v.client_transaction_version)
    return TransactionMetadata.from_transit(transactional_id, t)


def transaction_topic_configs(segment_bytes: int, min_isr: int) -> dict[str, str]:
    """Kafka's TransactionStateManager.transactionTopicConfigs."""
    return {"cleanup.policy": "compact", "compression.type": "uncompressed", "segment.bytes": str(segment_bytes),
            "unclean.leader.election.enable": "false", "min.insync.replicas": str(min_isr)}


class TransactionLog:
    """Reads and writes transaction records through the partition logs of ``__transaction_state``."""

    def __init__(self, topics, num_partitions: int, clock, *, segment_bytes: int = 104857600, min_isr: int = 1):
        self.topics = topics            # broker.topics.TopicManager
        self.num_partitions = num_partitions
        self.clock = clock
        self.segment_bytes = segment_bytes
        self.min_isr = min_isr
        t = topics.get(TRANSACTION_STATE_TOPIC_NAME) if topics is not None else None
        if t is not None:
            self.num_partitions = t.partitions  # an existing topic keeps its own partition count

    def ensure_topic(self) -> None:
        t = self.topics.get(TRANSACTION_STATE_TOPIC_NAME)
        if t is None:
            t = self.topics.create_topic(TRANSACTION_STATE_TOPIC_NAME, self.num_partitions, 1,
                                         transaction_topic_configs(self.segment_bytes, self.min_isr))
            log.info("created %s with %d partitions", TRANSACTION_STATE_TOPIC_NAME, t.partitions)
        self.num_partitions = t.partitions

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.num_partitions)

    def _append(self, partition: int, records: list[tuple[bytes, Optional[bytes]]]) -> None:
        self.ensure_topic()
        plog = self.topics.log(TRANSACTION_STATE_TOPIC_NAME, partition)
        if plog is None:
            raise RuntimeError(f"{TRANSACTION_STATE_TOPIC_NAME}-{partition} is not open")
        now = self.clock.now_ms()
        plog.append(build_batch([(k, v, now) for k, v in records]), from_client=False,
                    partition_leader_epoch=LEADER_EPOCH)

    def write(self, transactional_id: str, t: TxnTransitMetadata) -> None:
        """One record for one transition (raises storage errors; the coordinator maps them)."""
        self._append(self.partition_for(transactional_id), [(key_bytes(transactional_id), value_bytes(t))])

    def write_tombstones(self, partition: int, transactional_ids: Iterable[str]) -> None:
        self._append(partition, [(key_bytes(tid), None) for tid in transactional_ids])

    def load(self) -> dict[str, TransactionMetadata]:
        out: dict[str, TransactionMetadata] = {}
        t = self.topics.get(TRANSACTION_STATE_TOPIC_NAME)
        if t is None:
            return out
        self.num_partitions = t.partitions
        for p in range(t.partitions):
            plog = self.topics.log(TRANSACTION_STATE_TOPIC_NAME, p)
            if plog is None or plog.log_end_offset <= plog.log_start_offset:
                continue
            for _h, records in read_batches(plog):
                for r in records:
                    if r.key is None:
                        continue
                    try:
                        tid = read_key(r.key)
                        if r.value is None:
                            out.pop(tid, None)
                        else:
                            out[tid] = read_value(tid, r.value)
                    except DecodeError as exc:
                        log.error("skipping undecodable record in %s-%d: %s", TRANSACTION_STATE_TOPIC_NAME, p, exc)
        return out
