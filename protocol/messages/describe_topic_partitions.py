"""DescribeTopicPartitions (key 75), version 0, flexible from 0.

KIP-966's paginated topic description (the Java admin client's describeTopics uses it
when the broker advertises it, else falls back to Metadata).
- Empty ``topics`` means all topics. Answers at most ``response_partition_limit``
  partitions (topics sorted by name); ``next_cursor`` (null when done) says where the next
  request's ``cursor`` resumes (topic name + partition index).
- ``eligible_leader_replicas``/``last_known_elr`` are nullable; we have no ELR, so empty.
- Unknown topic: UNKNOWN_TOPIC_OR_PARTITION with the asked name.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(75, "DescribeTopicPartitions", valid="0", flexible="0+", request=[
    F("topics", "[]TopicRequest", "0+", fields=[
        F("name", "string", "0+"),
    ]),
    F("response_partition_limit", "int32", "0+", default=2000),
    F("cursor", "Cursor", "0+", nullable="0+", default=None, fields=[
        F("topic_name", "string", "0+"),
        F("partition_index", "int32", "0+"),
    ]),
], response=[
    F("throttle_time_ms", "int32", "0+", ignorable=True),
    F("topics", "[]DescribeTopicPartitionsResponseTopic", "0+", fields=[
        F("error_code", "int16", "0+"),
        F("name", "string", "0+", nullable="0+", map_key=True),
        F("topic_id", "uuid", "0+", ignorable=True),
        F("is_internal", "bool", "0+", default=False, ignorable=True),
        F("partitions", "[]DescribeTopicPartitionsResponsePartition", "0+", fields=[
            F("error_code", "int16", "0+"),
            F("partition_index", "int32", "0+"),
            F("leader_id", "int32", "0+"),
            F("leader_epoch", "int32", "0+", default=-1, ignorable=True),
            F("replica_nodes", "[]int32", "0+"),
            F("isr_nodes", "[]int32", "0+"),
            F("eligible_leader_replicas", "[]int32", "0+", nullable="0+", default=None),
            F("last_known_elr", "[]int32", "0+", nullable="0+", default=None),
            F("offline_replicas", "[]int32", "0+", ignorable=True),
        ]),
        F("topic_authorized_operations", "int32", "0+", default=-2147483648),
    ]),
    F("next_cursor", "Cursor", "0+", nullable="0+", default=None, fields=[
        F("topic_name", "string", "0+"),
        F("partition_index", "int32", "0+"),
    ]),
])

DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse = compile_api(API)
