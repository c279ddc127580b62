"""DeleteRecords (key 21), versions 0-2, flexible from 2.

An admin client advances a partition's log start offset: every record below ``offset`` is
deleted (segments wholly below it are dropped; the rest is hidden by the new log start offset).
- ``offset`` -1 means "up to the high watermark". An offset above the high watermark is
  OFFSET_OUT_OF_RANGE (1); it must be sent to the partition leader.
- Response: per partition the new ``low_watermark`` (the log start offset after deletion),
  ``throttle_time_ms`` in every version. v1 is v0 with throttling after the response.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(21, "DeleteRecords", valid="0-2", flexible="2+", request=[
    F("topics", "[]DeleteRecordsTopic", "0+", fields=[
        F("name", "string", "0+"),
        F("partitions", "[]DeleteRecordsPartition", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("offset", "int64", "0+"),
        ]),
    ]),
    F("timeout_ms", "int32", "0+"),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("topics", "[]DeleteRecordsTopicResult", "0+", fields=[
        F("name", "string", "0+", map_key=True),
        F("partitions", "[]DeleteRecordsPartitionResult", "0+", fields=[
            F("partition_index", "int32", "0+", map_key=True),
            F("low_watermark", "int64", "0+"),
            F("error_code", "int16", "0+"),
        ]),
    ]),
])

DeleteRecordsRequest, DeleteRecordsResponse = compile_api(API)
