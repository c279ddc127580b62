"""AlterShareGroupOffsets (key 91), version 0, flexible (KIP-932): set share-partition start
offsets of an empty share group (NON_EMPTY_GROUP per partition while it has members); the
share-partition's in-flight state is dropped.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

_PARTITION_RESULT = [
    F("partition_index", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("error_message", "string", "0+", nullable="0+", default=None),
]

API = api(91, "AlterShareGroupOffsets", valid="0", flexible="0+", request=[
    F("group_id", "string", "0+"),
    F("topics", "[]AlterShareGroupOffsetsRequestTopic", "0+", fields=[
        F("topic_name", "string", "0+"),
        F("partitions", "[]AlterShareGroupOffsetsRequestPartition", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("start_offset", "int64", "0+"),
        ]),
    ]),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("error_message", "string", "0+", nullable="0+", default=None),
    F("responses", "[]AlterShareGroupOffsetsResponseTopic", "0+", fields=[
        F("topic_name", "string", "0+"),
        F("topic_id", "uuid", "0+"),
        F("partitions", "[]AlterShareGroupOffsetsResponsePartition", "0+", fields=_PARTITION_RESULT),
    ]),
])

AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse = compile_api(API)
