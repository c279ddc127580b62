"""DeleteShareGroupOffsets (key 92), version 0, flexible (KIP-932): forget the share-partitions
of whole topics of an empty share group (top-level NON_EMPTY_GROUP otherwise); the next fetch
starts again at ``share.auto.offset.reset``.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(92, "DeleteShareGroupOffsets", valid="0", flexible="0+", request=[
    F("group_id", "string", "0+"),
    F("topics", "[]DeleteShareGroupOffsetsRequestTopic", "0+", fields=[
        F("topic_name", "string", "0+"),
    ]),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("error_message", "string", "0+", nullable="0+", default=None),
    F("responses", "[]DeleteShareGroupOffsetsResponseTopic", "0+", fields=[
        F("topic_name", "string", "0+"),
        F("topic_id", "uuid", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+", default=None),
    ]),
])

DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse = compile_api(API)
