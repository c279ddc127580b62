"""OffsetDelete (key 47), version 0, not flexible.

An admin client deletes committed offsets of some partitions of a group. Allowed when the
group is empty, or for partitions of topics the (consumer-protocol) group is not subscribed
to; otherwise the partition answers GROUP_SUBSCRIBED_TO_TOPIC (86). Group-level errors go
in the top-level ``error_code`` (note: it precedes ``throttle_time_ms``).
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(47, "OffsetDelete", valid="0", flexible="none", request=[
    F("group_id", "string", "0+"),
    F("topics", "[]OffsetDeleteRequestTopic", "0+", fields=[
        F("name", "string", "0+", map_key=True),
        F("partitions", "[]OffsetDeleteRequestPartition", "0+", fields=[
            F("partition_index", "int32", "0+"),
        ]),
    ]),
], response=[
    F("error_code", "int16", "0+"),
    F("throttle_time_ms", "int32", "0+", ignorable=True),
    F("topics", "[]OffsetDeleteResponseTopic", "0+", fields=[
        F("name", "string", "0+", map_key=True),
        F("partitions", "[]OffsetDeleteResponsePartition", "0+", fields=[
            F("partition_index", "int32", "0+", map_key=True),
            F("error_code", "int16", "0+"),
        ]),
    ]),
])

OffsetDeleteRequest, OffsetDeleteResponse = compile_api(API)
