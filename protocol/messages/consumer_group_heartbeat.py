"""ConsumerGroupHeartbeat (key 68), versions 0-1, flexible from 0 (KIP-848).

The one RPC of the next-generation consumer group protocol: a member joins (epoch 0), stays
alive and reconciles its assignment (its current epoch), or leaves (epoch -1; a static
member -2). The coordinator answers the member id (the one the member sent; v0 may send ""
on its first join and gets one generated), the member epoch, the heartbeat interval and,
when it changed or on a full request, the partitions the member may use now (by topic id).

- Fields are "null when unchanged since the last heartbeat": instance id, rack id,
  subscribed topic names / regex, server assignor and owned partitions; the rebalance
  timeout is -1 when unchanged.
- v1 (Kafka 4.0) adds ``subscribed_topic_regex`` (RE2/J syntax) and the
  INVALID_REGULAR_EXPRESSION error, and requires a client-generated member id on every
  request (KIP-1082).
- Errors: NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS,
  INVALID_REQUEST, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, UNSUPPORTED_ASSIGNOR,
  UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED, GROUP_ID_NOT_FOUND,
  INVALID_REGULAR_EXPRESSION (v1), each with a message.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(68, "ConsumerGroupHeartbeat", valid="0-1", flexible="0+", request=[
    F("group_id", "string", "0+"),
    F("member_id", "string", "0+"),
    F("member_epoch", "int32", "0+"),
    F("instance_id", "string", "0+", nullable="0+", default=None),
    F("rack_id", "string", "0+", nullable="0+", default=None),
    F("rebalance_timeout_ms", "int32", "0+", default=-1),
    F("subscribed_topic_names", "[]string", "0+", nullable="0+", default=None),
    F("subscribed_topic_regex", "string", "1+", nullable="1+", default=None),
    F("server_assignor", "string", "0+", nullable="0+", default=None),
    F("topic_partitions", "[]TopicPartitions", "0+", nullable="0+", default=None, fields=[
        F("topic_id", "uuid", "0+"),
        F("partitions", "[]int32", "0+"),
    ]),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("error_message", "string", "0+", nullable="0+", default=None),
    F("member_id", "string", "0+", nullable="0+", default=None),
    F("member_epoch", "int32", "0+"),
    F("heartbeat_interval_ms", "int32", "0+"),
    F("assignment", "Assignment", "0+", nullable="0+", default=None, fields=[
        F("topic_partitions", "[]TopicPartitions", "0+", fields=[
            F("topic_id", "uuid", "0+"),
            F("partitions", "[]int32", "0+"),
        ]),
    ]),
])

ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse = compile_api(API)
