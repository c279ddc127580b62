"""TxnOffsetCommit (key 28), versions 0-6, flexible from 3.

A transactional producer commits consumer offsets as part of its transaction (after
AddOffsetsToTxn); they become visible to OffsetFetch only when the transaction commits
(until then ``require_stable`` fetches answer UNSTABLE_OFFSET_COMMIT).
- v2+: ``committed_leader_epoch`` per partition.
- v3+ (first flexible): the consumer's ``generation_id`` (-1), ``member_id`` ("") and
  ``group_instance_id`` so the coordinator can fence zombies (ILLEGAL_GENERATION,
  UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID). They are not ignorable: a client that knows its
  generation must use v3+.
- v4 is the same as v3 (may answer TRANSACTION_ABORTABLE).
- v5 is the same as v4; with transaction version 2 (KIP-890 part 2) it also adds the group's
  ``__consumer_offsets`` partition to the transaction (no AddOffsetsToTxn first).
- v6 names topics by ``topic_id`` instead of ``name`` (UNKNOWN_TOPIC_ID).
- Errors are per partition.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(28, "TxnOffsetCommit", valid="0-6", flexible="3+", request=[
    F("transactional_id", "string", "0+"),
    F("group_id", "string", "0+"),
    F("producer_id", "int64", "0+"),
    F("producer_epoch", "int16", "0+"),
    F("generation_id", "int32", "3+", default=-1),
    F("member_id", "string", "3+", default=""),
    F("group_instance_id", "string", "3+", nullable="3+", default=None),
    F("topics", "[]TxnOffsetCommitRequestTopic", "0+", fields=[
        F("name", "string", "0-5", ignorable=True),
        F("topic_id", "uuid", "6+", ignorable=True),
        F("partitions", "[]TxnOffsetCommitRequestPartition", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("committed_offset", "int64", "0+"),
            F("committed_leader_epoch", "int32", "2+", default=-1, ignorable=True),
            F("committed_metadata", "string", "0+", nullable="0+"),
        ]),
    ]),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("topics", "[]TxnOffsetCommitResponseTopic", "0+", fields=[
        F("name", "string", "0-5", ignorable=True),
        F("topic_id", "uuid", "6+", ignorable=True),
        F("partitions", "[]TxnOffsetCommitResponsePartition", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
        ]),
    ]),
])

TxnOffsetCommitRequest, TxnOffsetCommitResponse = compile_api(API)
