"""Durable share-partition state: the internal compacted topic ``__share_group_state``
(Kafka's share coordinator log, KIP-932).

Layout as Kafka's: ``share.coordinator.state.topic.num.partitions`` partitions (an existing
topic keeps its count), ``cleanup.policy=compact``; the state of share-partition (group, topic
id, partition) lives in partition ``abs(javaStringHashCode("group:topicId:partition")) % n``
(Kafka's ``SharePartitionKey.asCoordinatorKey``).

Records, Kafka's coordinator record types (key: int16 record type, then the non-flexible key;
value: int16 version 0, then the flexible value):

- 0 ``ShareSnapshotKey`` (group id, topic id, partition) -> ``ShareSnapshotValue``: snapshot
  epoch, state epoch, leader epoch, start offset, create/write timestamps (Kafka 4.1+), tagged
  delivery complete count (4.2, KIP-1226), state batches (first, last offset, delivery state
  0 available / 2 acknowledged / 4 archived, delivery count): the whole in-flight state;
- 1 ``ShareUpdateKey`` (same key) -> ``ShareUpdateValue``: snapshot epoch, leader epoch, start
  offset (-1: unchanged), tagged delivery complete count, the state batches that changed, laid
  over the snapshot's.

A ShareSnapshot is written when a share-partition is initialized (its start offset from
``share.auto.offset.reset``) and after every
``share.coordinator.snapshot.update.records.per.snapshot`` updates; a ShareUpdate after each
request that changed the state (acknowledgements, releases, expired locks, new deliveries).
Acquired records are written as available with their delivery count: a restart breaks every
acquisition lock, so they are delivered again; acknowledged ones never are. A null value
deletes the share-partition (DeleteGroups, DeleteShareGroupOffsets).

Appends are synchronous (``from_client=False``), so an acknowledged answer is on disk (not
fsynced, like Kafka) before the client hears it; kill -9 loses nothing acknowledged.
"""
from __future__ import annotations

import base64
import logging
from typing import Iterable, Optional

from broker.groups.internal_topics import read_batches
from broker.java_hash import java_string_hash
from protocol.codec import compile_message
from protocol.errors import DecodeError
from protocol.records.record import build_batch
from protocol.schema import F, MessageSpec
from broker.cluster import LEADER_EPOCH

log = logging.getLogger(__name__)

SHARE_GROUP_STATE_TOPIC = "__share_group_state"
STATE_TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": "104857600", "compression.type": "producer"}
SHARE_SNAPSHOT, SHARE_UPDATE = 0, 1

_STATE_BATCH = [
    F("first_offset", "int64", "0+"),
    F("last_offset", "int64", "0+"),
    F("delivery_state", "int8", "0+"),
    F("delivery_count", "int16", "0+"),
]


def _key(name: str, version: int):
    v = str(version)
    return compile_message(MessageSpec(name, -1, "data", v, "none", [
        F("group_id", "string", v), F("topic_id", "uuid", v), F("partition", "int32", v)]))


ShareSnapshotKey = _key("ShareSnapshotKey", SHARE_SNAPSHOT)
ShareUpdateKey = _key("ShareUpdateKey", SHARE_UPDATE)
ShareSnapshotValue = compile_message(MessageSpec("ShareSnapshotValue", -1, "data", "0", "0+", [
    F("snapshot_epoch", "int32", "0+"),
    F("state_epoch", "int32", "0+"),
    F("leader_epoch", "int32", "0+"),
    F("start_offset", "int64", "0+"),
    F("create_timestamp", "int64", "0+"),
    F("write_timestamp", "int64", "0+"),
    F("delivery_complete_count", "int32", "0+", default=-1, tag=0, tagged_versions="0+"),
    F("state_batches", "[]StateBatch", "0+", fields=_STATE_BATCH),
]))
ShareUpdateValue = compile_message(MessageSpec("ShareUpdateValue", -1, "data", "0", "0+", [
    F("snapshot_epoch", "int32", "0+"),
    F("leader_epoch", "int32", "0+"),
    F("start_offset", "int64", "0+"),
    F("delivery_complete_count", "int32", "0+", default=-1, tag=0, tagged_versions="0+"),
    F("state_batches", "[]StateBatch", "0+", fields=_STATE_BATCH),
]))
_KEYS = {SHARE_SNAPSHOT: ShareSnapshotKey, SHARE_UPDATE: ShareUpdateKey}
_VALUES = {SHARE_SNAPSHOT: ShareSnapshotValue, SHARE_UPDATE: ShareUpdateValue}

SPKey = tuple  # (group id, topic id bytes, partition)


def coordinator_key(key: SPKey) -> str:
    g, tid, p = key
    return f"{g}:{base64.urlsafe_b64encode(tid).rstrip(b'=').decode()}:{p}"


def encode_key(record_type: int, key: SPKey) -> bytes:
    g, tid, p = key
    cls = _KEYS[record_type]
    return record_type.to_bytes(2, "big", signed=True) + cls._codec.encode(
        cls(group_id=g, topic_id=tid, partition=p), record_type)


def encode_value(record_type: int, value) -> bytes:
    return (0).to_bytes(2, "big") + _VALUES[record_type]._codec.encode(value, 0)


def decode_record(k, v) -> tuple[int, SPKey, Optional[object]]:
    kb = memoryview(k)
    rt = int.from_bytes(kb[:2], "big", signed=True)
    if rt not in _KEYS:
        raise DecodeError(f"unknown __share_group_state key version {rt}")
    key, _ = _KEYS[rt]._codec.decode(kb, rt, 2)
    value = None
    if v is not None:
        vb = memoryview(v)
        value, _ = _VALUES[rt]._codec.decode(vb, 0, 2)
    return rt, (key.group_id, bytes(key.topic_id), key.partition), value


class PersistedState:
    """One share-partition's state as replayed: start offset, state epoch, offset -> (state,
    count), and how many updates follow the last snapshot."""

    def __init__(self, start_offset: int, state_epoch: int, snapshot_epoch: int):
        self.start_offset = start_offset
        self.state_epoch = state_epoch
        self.snapshot_epoch = snapshot_epoch
        self.offsets: dict[int, tuple[int, int]] = {}
        self.updates = 0

    def apply_batches(self, batches) -> None:
        for b in batches:
            for off in range(b.first_offset, b.last_offset + 1):
                self.offsets[off] = (b.delivery_state, b.delivery_count)

    def batches(self) -> list[tuple[int, int, int, int]]:
        out: list[list[int]] = []
        for off in sorted(o for o in self.offsets if o >= self.start_offset):
            st, c = self.offsets[off]
            if out and out[-1][1] == off - 1 and out[-1][2] == st and out[-1][3] == c:
                out[-1][1] = off
            else:
                out.append([off, off, st, c])
        return [tuple(b) for b in out]


def replay(records: Iterable[tuple[bytes, Optional[bytes]]]) -> dict[SPKey, PersistedState]:
    """Fold records (in log order) into the state of every share-partition."""
    state: dict[SPKey, PersistedState] = {}
    for k, v in records:
        try:
            rt, key, value = decode_record(k, v)
        except DecodeError as exc:
            log.warning("skipping undecodable __share_group_state record: %s", exc)
            continue
        if value is None:
            state.pop(key, None)
        elif rt == SHARE_SNAPSHOT:
            ps = PersistedState(value.start_offset, value.state_epoch, value.snapshot_epoch)
            ps.apply_batches(value.state_batches)
            state[key] = ps
        else:
            ps = state.get(key)
            if ps is None or value.snapshot_epoch != ps.snapshot_epoch:
                continue  # an update without its snapshot (compacted away): Kafka ignores it too
            if value.start_offset >= 0:
                ps.start_offset = value.start_offset
                for off in [o for o in ps.offsets if o < ps.start_offset]:
                    del ps.offsets[off]
            ps.apply_batches(value.state_batches)
            ps.updates += 1
    return state


def _state_batch(cls, batches):
    return [cls.StateBatch(first_offset=a, last_offset=b, delivery_state=s, delivery_count=c)
            for a, b, s, c in batches]


class ShareStateLog:
    """Reads and writes share-partition state through ``__share_group_state``."""

    def __init__(self, topics, num_partitions: int, clock, updates_per_snapshot: int = 500):
        self.topics = topics
        self.num_partitions = num_partitions
        self.clock = clock
        self.updates_per_snapshot = updates_per_snapshot
        self.epochs: dict[SPKey, list[int]] = {}  # key -> [snapshot epoch, updates since]

    def ensure_topic(self) -> None:
        t = self.topics.get(SHARE_GROUP_STATE_TOPIC)
        if t is None:
            t = self.topics.create_topic(SHARE_GROUP_STATE_TOPIC, self.num_partitions, 1, dict(STATE_TOPIC_CONFIGS))
            log.info("created %s with %d partitions", SHARE_GROUP_STATE_TOPIC, t.partitions)
        self.num_partitions = t.partitions

    def partition_for(self, key: SPKey) -> int:
        h = java_string_hash(coordinator_key(key))
        return (0 if h == -2**31 else abs(h)) % self.num_partitions

    def _append(self, key: SPKey, k: bytes, v: Optional[bytes]) -> None:
        self.ensure_topic()
        plog = self.topics.log(SHARE_GROUP_STATE_TOPIC, self.partition_for(key))
        plog.append(build_batch([(k, v, self.clock.now_ms())]), from_client=False,
                    partition_leader_epoch=LEADER_EPOCH)

    def load(self) -> dict[SPKey, PersistedState]:
        t = self.topics.get(SHARE_GROUP_STATE_TOPIC)
        if t is None:
            return {}
        self.num_partitions = t.partitions

        def records():
            for p in range(t.partitions):
                plog = self.topics.log(SHARE_GROUP_STATE_TOPIC, p)
                if plog is None:
                    continue
                for h, recs in read_batches(plog):
                    if h.is_control:
                        continue
                    for r in recs:
                        yield r.key, r.value
        state = replay(records())
        for key, ps in state.items():
            self.epochs[key] = [ps.snapshot_epoch, ps.updates]
        return state

    def write(self, key: SPKey, start_offset: int, state_epoch: int, batches) -> None:
        """The share-partition's current state: a ShareUpdate, or a ShareSnapshot when it has
        none yet or enough updates followed the last one."""
        now = self.clock.now_ms()
        ep = self.epochs.get(key)
        if ep is None or ep[1] >= self.updates_per_snapshot:
            snap = 0 if ep is None else ep[0] + 1
            v = ShareSnapshotValue(snapshot_epoch=snap, state_epoch=state_epoch, leader_epoch=0,
                                   start_offset=start_offset, create_timestamp=now, write_timestamp=now,
                                   state_batches=_state_batch(ShareSnapshotValue, batches))
            self._append(key, encode_key(SHARE_SNAPSHOT, key), encode_value(SHARE_SNAPSHOT, v))
            self.epochs[key] = [snap, 0]
            return
        v = ShareUpdateValue(snapshot_epoch=ep[0], leader_epoch=0, start_offset=start_offset,
                             state_batches=_state_batch(ShareUpdateValue, batches))
        self._append(key, encode_key(SHARE_UPDATE, key), encode_value(SHARE_UPDATE, v))
        ep[1] += 1

    def delete(self, key: SPKey) -> None:
        if key in self.epochs:
            del self.epochs[key]
            self._append(key, encode_key(SHARE_SNAPSHOT, key), None)
            self._append(key, encode_key(SHARE_UPDATE, key), None)
