"""ListOffsets (key 2), versions 0-11, flexible from 6.

Look up an offset by timestamp per partition (KIP-79 semantics from v1).
- ``timestamp`` is a time in ms or a sentinel: -1 LATEST (log end offset, or last stable
  offset under READ_COMMITTED), -2 EARLIEST (log start offset), -3 MAX_TIMESTAMP (v7+,
  KIP-734: offset of the record with the largest timestamp), -4 EARLIEST_LOCAL (v8+,
  KIP-1005), -5 LATEST_TIERED (v9+), -6 EARLIEST_PENDING_UPLOAD (v11+, KIP-1023). A time gives the first offset whose timestamp is
  >= it (time index lookup), or offset -1/timestamp -1 when none.
- v0 only: request ``max_num_offsets`` and response ``old_style_offsets`` (a list of
  offsets, no timestamp); v1+ answer one ``timestamp`` + ``offset``.
- v2+ ``isolation_level`` and response ``throttle_time_ms``; v4+ ``current_leader_epoch``
  (fencing) and response ``leader_epoch``.
- v10+ ``timeout_ms`` (KIP-1075): how long a broker may wait for a remote-storage lookup.
- ``replica_id`` is -1 for consumers.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(2, "ListOffsets", valid="0-11", flexible="6+", request=[
    F("replica_id", "int32", "0+"),
    F("isolation_level", "int8", "2+"),
    F("topics", "[]ListOffsetsTopic", "0+", fields=[
        F("name", "string", "0+"),
        F("partitions", "[]ListOffsetsPartition", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("current_leader_epoch", "int32", "4+", default=-1, ignorable=True),
            F("timestamp", "int64", "0+"),
            F("max_num_offsets", "int32", "0", default=1),
        ]),
    ]),
    F("timeout_ms", "int32", "10+", ignorable=True),
], response=[
    F("throttle_time_ms", "int32", "2+", ignorable=True),
    F("topics", "[]ListOffsetsTopicResponse", "0+", fields=[
        F("name", "string", "0+"),
        F("partitions", "[]ListOffsetsPartitionResponse", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
            F("old_style_offsets", "[]int64", "0"),
            F("timestamp", "int64", "1+", default=-1),
            F("offset", "int64", "1+", default=-1),
            F("leader_epoch", "int32", "4+", default=-1),
        ]),
    ]),
])

ListOffsetsRequest, ListOffsetsResponse = compile_api(API)
