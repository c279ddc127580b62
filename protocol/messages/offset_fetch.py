"""OffsetFetch (key 9), versions 0-10, flexible from 6.

A consumer reads the committed offsets of a group.
- v0-7: one group (``group_id`` + ``topics``). ``topics`` null (v2+) means "every partition
  the group has offsets for"; v0-1 cannot say that (an empty list means none).
- v2-7 responses have a top-level ``error_code`` (group/coordinator errors); in v0-1 such an
  error can only be reported per partition.
- v3+ responses carry ``throttle_time_ms``; v5+ ``committed_leader_epoch`` (-1 unknown).
- v6 is the first flexible version; v7+ ``require_stable``: with pending transactional
  commits the partition answers UNSTABLE_OFFSET_COMMIT (so the client retries).
- v8+: batched: ``groups`` (request and response), each group with its own topics (null =
  all) and its own ``error_code``; the v0-7 top-level fields are gone.
- v9+: ``member_id``/``member_epoch`` per group (only checked for KIP-848 consumer groups;
  a classic consumer sends null / -1).
- v10 (KIP-848) names topics by ``topic_id`` instead of ``name`` (UNKNOWN_TOPIC_ID).
- A partition without a committed offset answers offset -1, metadata "" and error 0.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(9, "OffsetFetch", valid="0-10", flexible="6+", request=[
    F("group_id", "string", "0-7"),
    F("topics", "[]OffsetFetchRequestTopic", "0-7", nullable="2-7", fields=[
        F("name", "string", "0-7"),
        F("partition_indexes", "[]int32", "0-7"),
    ]),
    F("groups", "[]OffsetFetchRequestGroup", "8+", fields=[
        F("group_id", "string", "8+"),
        F("member_id", "string", "9+", nullable="9+", default=None, ignorable=True),
        F("member_epoch", "int32", "9+", default=-1, ignorable=True),
        F("topics", "[]OffsetFetchRequestTopics", "8+", nullable="8+", fields=[
            F("name", "string", "8-9", ignorable=True),
            F("topic_id", "uuid", "10+", ignorable=True),
            F("partition_indexes", "[]int32", "8+"),
        ]),
    ]),
    F("require_stable", "bool", "7+", default=False),
], response=[
    F("throttle_time_ms", "int32", "3+", ignorable=True),
    F("topics", "[]OffsetFetchResponseTopic", "0-7", fields=[
        F("name", "string", "0-7"),
        F("partitions", "[]OffsetFetchResponsePartition", "0-7", fields=[
            F("partition_index", "int32", "0-7"),
            F("committed_offset", "int64", "0-7"),
            F("committed_leader_epoch", "int32", "5-7", default=-1, ignorable=True),
            F("metadata", "string", "0-7", nullable="0-7"),
            F("error_code", "int16", "0-7"),
        ]),
    ]),
    F("error_code", "int16", "2-7", default=0, ignorable=True),
    F("groups", "[]OffsetFetchResponseGroup", "8+", fields=[
        F("group_id", "string", "8+"),
        F("topics", "[]OffsetFetchResponseTopics", "8+", fields=[
            F("name", "string", "8-9", ignorable=True),
            F("topic_id", "uuid", "10+", ignorable=True),
            F("partitions", "[]OffsetFetchResponsePartitions", "8+", fields=[
                F("partition_index", "int32", "8+"),
                F("committed_offset", "int64", "8+"),
                F("committed_leader_epoch", "int32", "8+", default=-1, ignorable=True),
                F("metadata", "string", "8+", nullable="8+"),
                F("error_code", "int16", "8+"),
            ]),
        ]),
        F("error_code", "int16", "8+", default=0),
    ]),
])

OffsetFetchRequest, OffsetFetchResponse = compile_api(API)
