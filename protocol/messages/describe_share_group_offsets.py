"""DescribeShareGroupOffsets (key 90), versions 0-1, flexible (KIP-932): per group and partition
(or every initialized share-partition when ``topics`` is null) the share-partition start
offset, -1 when it was never initialized; GROUP_ID_NOT_FOUND for a group of another type.
v1 (KIP-1226) adds each partition's ``lag``: the records from the start offset to the
high watermark not yet acknowledged; -1 when unknown.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(90, "DescribeShareGroupOffsets", valid="0-1", flexible="0+", request=[
    F("groups", "[]DescribeShareGroupOffsetsRequestGroup", "0+", fields=[
        F("group_id", "string", "0+"),
        F("topics", "[]DescribeShareGroupOffsetsRequestTopic", "0+", nullable="0+", fields=[
            F("topic_name", "string", "0+"),
            F("partitions", "[]int32", "0+"),
        ]),
    ]),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("groups", "[]DescribeShareGroupOffsetsResponseGroup", "0+", fields=[
        F("group_id", "string", "0+"),
        F("topics", "[]DescribeShareGroupOffsetsResponseTopic", "0+", fields=[
            F("topic_name", "string", "0+"),
            F("topic_id", "uuid", "0+"),
            F("partitions", "[]DescribeShareGroupOffsetsResponsePartition", "0+", fields=[
                F("partition_index", "int32", "0+"),
                F("start_offset", "int64", "0+"),
                F("leader_epoch", "int32", "0+"),
                F("lag", "int64", "1+", default=-1, ignorable=True),
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+", default=None),
            ]),
        ]),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+", default=None),
    ]),
])

DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse = compile_api(API)
