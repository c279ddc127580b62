"""OffsetCommit (key 8), versions 0-10, flexible from 8.

A consumer (or an admin tool) stores committed offsets for a group; the coordinator writes
them to ``__consumer_offsets``.
- v0: group id and offsets only (a "simple" commit outside any generation).
- v1: ``generation_id_or_member_epoch`` and ``member_id`` (a member commits within its
  generation; -1 and "" for a standalone consumer) and a per-partition ``commit_timestamp``
  (v1 only; -1 means "now").
- v2-4: ``retention_time_ms`` (-1 = broker default ``offsets.retention.minutes``); v5+ drop
  it: retention is a broker setting only.
- v3+ responses carry ``throttle_time_ms``.
- v6+: ``committed_leader_epoch`` (-1 unknown) per partition, stored with the offset.
- v7+: ``group_instance_id`` (static membership; FENCED_INSTANCE_ID on mismatch).
- v8 is the first flexible version; v9 is the same as v8 (first usable by KIP-848 groups:
  may answer STALE_MEMBER_EPOCH and GROUP_ID_NOT_FOUND).
- v10 (KIP-848) names topics by ``topic_id`` instead of ``name`` (UNKNOWN_TOPIC_ID).
- Errors are per partition only (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
  REBALANCE_IN_PROGRESS, OFFSET_METADATA_TOO_LARGE, NOT_COORDINATOR, ...).
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(8, "OffsetCommit", valid="0-10", flexible="8+", request=[
    F("group_id", "string", "0+"),
    F("generation_id_or_member_epoch", "int32", "1+", default=-1, ignorable=True),
    F("member_id", "string", "1+", ignorable=True),
    F("group_instance_id", "string", "7+", nullable="7+", default=None),
    F("retention_time_ms", "int64", "2-4", default=-1, ignorable=True),
    F("topics", "[]OffsetCommitRequestTopic", "0+", fields=[
        F("name", "string", "0-9", ignorable=True),
        F("topic_id", "uuid", "10+", ignorable=True),
        F("partitions", "[]OffsetCommitRequestPartition", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("committed_offset", "int64", "0+"),
            F("committed_leader_epoch", "int32", "6+", default=-1, ignorable=True),
            F("commit_timestamp", "int64", "1", default=-1),
            F("committed_metadata", "string", "0+", nullable="0+"),
        ]),
    ]),
], response=[
    F("throttle_time_ms", "int32", "3+", ignorable=True),
    F("topics", "[]OffsetCommitResponseTopic", "0+", fields=[
        F("name", "string", "0-9", ignorable=True),
        F("topic_id", "uuid", "10+", ignorable=True),
        F("partitions", "[]OffsetCommitResponsePartition", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
        ]),
    ]),
])

OffsetCommitRequest, OffsetCommitResponse = compile_api(API)
