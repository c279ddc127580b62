"""Exact-protocol helpers for the reliability tests and tools: create a topic, produce one
batch with chosen acks/idempotence, read a whole partition back, list offsets.

Built on ``tests.helpers.raw.RawClient`` (our codec, one blocking socket), so the tests control
every byte and every retry, and so ``scripts/crash_test.py`` can count acknowledgements exactly.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from protocol.messages.fetch import FetchRequest
from protocol.messages.init_producer_id import InitProducerIdRequest
from protocol.messages.list_offsets import ListOffsetsRequest
from protocol.messages.metadata import MetadataRequest
from protocol.messages.offset_commit import OffsetCommitRequest
from protocol.messages.offset_fetch import OffsetFetchRequest
from protocol.messages.produce import ProduceRequest
from protocol.records.batch import iter_batch_positions
from protocol.records.record import build_batch, decode_batch
from tests.helpers.raw import RawClient

PRODUCE_V = 9
FETCH_V = 11


@dataclass
class Produced:
    error_code: int
    base_offset: int
    log_start_offset: int
    error_message: str | None = None


class Wire(RawClient):
    def create_topic(self, name: str) -> list[int]:
        """Auto-create ``name`` through Metadata; returns its partition ids."""
        req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)],
                              allow_auto_topic_creation=True)
        resp = self.request(3, 9, req)
        t = resp.topics[0]
        return sorted(p.partition_index for p in t.partitions)

    def init_producer_id(self) -> tuple[int, int]:
        resp = self.request(22, 4, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000))
        assert resp.error_code == 0, resp
        return resp.producer_id, resp.producer_epoch

    def produce_raw(self, topic: str, partition: int, records: bytes, acks: int = -1,
                    version: int = PRODUCE_V) -> Produced | None:
        req = ProduceRequest(transactional_id=None, acks=acks, timeout_ms=10000, topic_data=[
            ProduceRequest.TopicProduceData(name=topic, partition_data=[
                ProduceRequest.PartitionProduceData(index=partition, records=records)])])
        resp = self.request(0, version, req, expect_response=acks != 0)
        if resp is None:
            return None
        p = resp.responses[0].partition_responses[0]
        return Produced(p.error_code, p.base_offset, p.log_start_offset, getattr(p, "error_message", None))

    def produce(self, topic: str, partition: int, values: list[bytes], *, acks: int = -1,
                timestamp: int | None = None, producer_id: int = -1, producer_epoch: int = -1,
                base_sequence: int = -1) -> Produced | None:
        """One batch of ``values`` (CreateTime ``timestamp``, default now: old timestamps would
        let time retention delete them)."""
        ts = int(time.time() * 1000) if timestamp is None else timestamp
        batch = build_batch([(None, v, ts) for v in values], producer_id=producer_id,
                            producer_epoch=producer_epoch, base_sequence=base_sequence)
        return self.produce_raw(topic, partition, batch, acks)

    def commit_offset(self, group: str, topic: str, partition: int, offset: int) -> int:
        """A simple (no member) OffsetCommit v8; returns the partition's error code."""
        req = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="",
                                  group_instance_id=None, topics=[OffsetCommitRequest.OffsetCommitRequestTopic(
                                      name=topic, partitions=[OffsetCommitRequest.OffsetCommitRequestPartition(
                                          partition_index=partition, committed_offset=offset,
                                          committed_leader_epoch=-1, committed_metadata="")])])
        return self.request(8, 8, req).topics[0].partitions[0].error_code

    def committed_offset(self, group: str, topic: str, partition: int) -> int:
        """OffsetFetch v7: the group's committed offset (-1 when none)."""
        req = OffsetFetchRequest(group_id=group, topics=[OffsetFetchRequest.OffsetFetchRequestTopic(
            name=topic, partition_indexes=[partition])], require_stable=False)
        p = self.request(9, 7, req).topics[0].partitions[0]
        if p.error_code:
            raise RuntimeError(f"OffsetFetch error {p.error_code}")
        return p.committed_offset

    def fetch(self, topic: str, partition: int, offset: int, max_bytes: int = 1 << 20, max_wait_ms: int = 0):
        """One Fetch; returns the partition response."""
        req = FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=0, max_bytes=max_bytes,
                           isolation_level=0, topics=[FetchRequest.FetchTopic(topic=topic, partitions=[
                               FetchRequest.FetchPartition(partition=partition, fetch_offset=offset,
                                                           partition_max_bytes=max_bytes)])])
        return self.request(1, FETCH_V, req).responses[0].partitions[0]

    def read_all(self, topic: str, partition: int, start: int | None = None) -> tuple[list[tuple[int, bytes]], int, int]:
        """Every record from ``start`` (default: the log start offset) to the high watermark:
        ``([(offset, value)], log_start_offset, high_watermark)``."""
        lso = self.list_offset(topic, partition, -2) if start is None else start
        pos = lso
        out: list[tuple[int, bytes]] = []
        while True:
            p = self.fetch(topic, partition, pos)
            if p.error_code == 1 and start is None:
                # retention moved the log start while we read: continue from the new start (an
                # out-of-range answer carries no log start offset, as Kafka's: ask for it)
                now_start = max(p.log_start_offset, self.list_offset(topic, partition, -2))
                if now_start > pos:
                    lso = pos = now_start
                    out = [(o, v) for o, v in out if o >= lso]
                    continue
            if p.error_code:
                raise AssertionError(f"fetch {topic}-{partition}@{pos}: error {p.error_code}")
            hwm = p.high_watermark
            data = bytes(p.records or b"")
            if not data:
                if pos >= hwm:
                    return out, lso, hwm
                raise AssertionError(f"fetch {topic}-{partition}@{pos} returned nothing below hwm {hwm}")
            for bpos, _h in iter_batch_positions(data):
                _hdr, recs = decode_batch(data, bpos)
                for r in recs:
                    if r.offset >= pos:
                        out.append((r.offset, r.value))
            pos = out[-1][0] + 1 if out and out[-1][0] >= pos else pos
            if pos >= hwm:
                return out, lso, hwm

    def list_offset(self, topic: str, partition: int, timestamp: int) -> int:
        req = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[
            ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
                ListOffsetsRequest.ListOffsetsPartition(partition_index=partition, timestamp=timestamp)])])
        p = self.request(2, 5, req).topics[0].partitions[0]
        assert p.error_code == 0, p
        return p.offset
