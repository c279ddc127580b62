"""ShareGroupHeartbeat (key 76), version 1, flexible (KIP-932, Kafka 4.1+).

The one membership RPC of a share group: a member joins (epoch 0, with the member id it
generated itself), stays alive (its current epoch), or leaves (epoch -1). The coordinator
answers the member epoch, the heartbeat interval and, when it changed, the partitions the
member may fetch from (by topic id). Unlike consumer groups there is no reconciliation: a
partition may be assigned to several members at once, and acquisition locks on records keep
deliveries apart.

- v0 was Kafka 4.0's early access and was removed in 4.1 (v1 has the same fields).
- Nullable fields are "null if unchanged since the last heartbeat".
- Errors: NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS,
  INVALID_REQUEST, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, GROUP_MAX_SIZE_REACHED,
  GROUP_ID_NOT_FOUND (a group of another type).
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(76, "ShareGroupHeartbeat", valid="1", flexible="0+", request=[
    F("group_id", "string", "0+"),
    F("member_id", "string", "0+"),
    F("member_epoch", "int32", "0+"),
    F("rack_id", "string", "0+", nullable="0+", default=None),
    F("subscribed_topic_names", "[]string", "0+", nullable="0+", default=None),
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

ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse = compile_api(API)
