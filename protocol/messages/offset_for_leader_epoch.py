"""OffsetForLeaderEpoch (key 23), versions 0-4, flexible from 4.

Given a leader epoch, answer the end offset of that epoch: the start offset of the first
epoch greater than it (or the log end offset if it is the latest epoch), from the leader
epoch cache. Consumers use it after a leader change to detect truncation (KIP-320).
- v1+ response ``leader_epoch`` (the largest epoch <= the one asked; -1 if none);
  v2+ request ``current_leader_epoch`` (fencing: FENCED_LEADER_EPOCH/UNKNOWN_LEADER_EPOCH)
  and response ``throttle_time_ms``; v3+ ``replica_id`` (-1 consumer, followers send their
  broker id; -2, the default, is what a pre-v3 request decodes to).
- Unknown epoch: UNDEFINED_EPOCH_OFFSET (end_offset -1, leader_epoch -1).
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(23, "OffsetForLeaderEpoch", valid="0-4", flexible="4+", request=[
    F("replica_id", "int32", "3+", default=-2, ignorable=True),
    F("topics", "[]OffsetForLeaderTopic", "0+", fields=[
        F("topic", "string", "0+", map_key=True),
        F("partitions", "[]OffsetForLeaderPartition", "0+", fields=[
            F("partition", "int32", "0+"),
            F("current_leader_epoch", "int32", "2+", default=-1, ignorable=True),
            F("leader_epoch", "int32", "0+"),
        ]),
    ]),
], response=[
    F("throttle_time_ms", "int32", "2+", ignorable=True),
    F("topics", "[]OffsetForLeaderTopicResult", "0+", fields=[
        F("topic", "string", "0+", map_key=True),
        F("partitions", "[]EpochEndOffset", "0+", fields=[
            F("error_code", "int16", "0+"),
            F("partition", "int32", "0+"),
            F("leader_epoch", "int32", "1+", default=-1, ignorable=True),
            F("end_offset", "int64", "0+", default=-1),
        ]),
    ]),
])

OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse = compile_api(API)
