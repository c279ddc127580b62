"""Micro-benchmarks of the compiled message codec (plain timers; ``name value unit`` lines).

    .venv/bin/python bench/micro_codec.py

- a Produce v9 request holding one 1 MiB batch: decode and encode (the batch stays bytes: the
  cost must not grow with the batch's record count);
- a Metadata v12 response with 1000 partitions: encode and decode.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from bench.micro_records import emit, per_call  # noqa: E402
from protocol.messages.metadata import MetadataResponse as MR  # noqa: E402
from protocol.messages.produce import ProduceRequest as PR  # noqa: E402
from protocol.records import build_batch  # noqa: E402


def main():
    batch = build_batch([(None, os.urandom(1024), 1_700_000_000_000 + i) for i in range(1000)])
    req = PR(transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[
        PR.TopicProduceData(name="bench", partition_data=[PR.PartitionProduceData(index=0, records=batch)])])
    for v in (3, 9):
        raw = PR._codec.encode(req, v)
        emit(f"produce_v{v}_1MiB_decode", per_call(lambda: PR._codec.decode(raw, v)) * 1e6, "us")
        emit(f"produce_v{v}_1MiB_encode", per_call(lambda: PR._codec.encode(req, v)) * 1e6, "us")
    small = build_batch([(None, b"v", 1)])
    raw_small = PR._codec.encode(PR(transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[
        PR.TopicProduceData(name="bench", partition_data=[PR.PartitionProduceData(index=0, records=small)])]), 9)
    emit("produce_v9_1record_decode", per_call(lambda: PR._codec.decode(raw_small, 9)) * 1e6, "us")

    parts = [MR.MetadataResponsePartition(error_code=0, partition_index=i, leader_id=1, leader_epoch=0,
                                          replica_nodes=[1], isr_nodes=[1], offline_replicas=[])
             for i in range(100)]
    resp = MR(throttle_time_ms=0, brokers=[MR.MetadataResponseBroker(node_id=1, host="localhost", port=9092)],
              cluster_id="c", controller_id=1,
              topics=[MR.MetadataResponseTopic(error_code=0, name=f"topic-{t}", topic_id=os.urandom(16),
                                               is_internal=False, partitions=parts) for t in range(10)])
    raw = MR._codec.encode(resp, 12)
    emit("metadata_v12_1000_partitions_encode", per_call(lambda: MR._codec.encode(resp, 12)) * 1e6, "us")
    emit("metadata_v12_1000_partitions_decode", per_call(lambda: MR._codec.decode(raw, 12)) * 1e6, "us")
    emit("metadata_v12_1000_partitions_size", len(raw), "bytes")


if __name__ == "__main__":
    main()
