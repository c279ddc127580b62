"""CreatePartitions (key 37), versions 0-3, flexible from 2.

An admin client raises a topic's partition count to ``count`` (never lowers it:
INVALID_PARTITIONS (37) when ``count`` is not above the current count).
- ``assignments`` null lets the broker place the new partitions; otherwise one entry per *new*
  partition with its ``broker_ids``.
- ``validate_only``: check but change nothing. ``timeout_ms`` bounds the wait.
- Response: one ``results`` entry per topic; v3 may answer THROTTLING_QUOTA_EXCEEDED (KIP-599).
  v1 is v0 with throttling after the response.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(37, "CreatePartitions", valid="0-3", flexible="2+", request=[
    F("topics", "[]CreatePartitionsTopic", "0+", fields=[
        F("name", "string", "0+", map_key=True),
        F("count", "int32", "0+"),
        F("assignments", "[]CreatePartitionsAssignment", "0+", nullable="0+", fields=[
            F("broker_ids", "[]int32", "0+"),
        ]),
    ]),
    F("timeout_ms", "int32", "0+"),
    F("validate_only", "bool", "0+"),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("results", "[]CreatePartitionsTopicResult", "0+", fields=[
        F("name", "string", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+", default=None),
    ]),
])

CreatePartitionsRequest, CreatePartitionsResponse = compile_api(API)
