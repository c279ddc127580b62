"""ConsumerGroupDescribe (key 69), versions 0-1, flexible from 0 (KIP-848).

The admin view of consumer-protocol groups (``Admin.describeConsumerGroups``): per group its
state (Empty, Assigning, Reconciling, Stable, or Dead for an unknown group with
GROUP_ID_NOT_FOUND), group epoch, target assignment epoch, the server assignor in use, and
per member its epoch, client, subscription (names and regex), current and target assignment
(topic id, name, partitions).

- v1 (KIP-1099) adds each member's ``member_type``: 0 a member speaking the classic protocol
  inside a consumer group, 1 a consumer-protocol member (-1 unknown); the request is the same.
- A classic group answers GROUP_ID_NOT_FOUND ("Group g is not a consumer group.").
"""
from protocol.codec import compile_api
from protocol.schema import F, api

_ASSIGNMENT = [
    F("topic_partitions", "[]TopicPartitions", "0+", fields=[
        F("topic_id", "uuid", "0+"),
        F("topic_name", "string", "0+"),
        F("partitions", "[]int32", "0+"),
    ]),
]

API = api(69, "ConsumerGroupDescribe", valid="0-1", flexible="0+", request=[
    F("group_ids", "[]string", "0+"),
    F("include_authorized_operations", "bool", "0+"),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("groups", "[]DescribedGroup", "0+", fields=[
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+", default=None),
        F("group_id", "string", "0+"),
        F("group_state", "string", "0+"),
        F("group_epoch", "int32", "0+"),
        F("assignment_epoch", "int32", "0+"),
        F("assignor_name", "string", "0+"),
        F("members", "[]Member", "0+", fields=[
            F("member_id", "string", "0+"),
            F("instance_id", "string", "0+", nullable="0+", default=None),
            F("rack_id", "string", "0+", nullable="0+", default=None),
            F("member_epoch", "int32", "0+"),
            F("client_id", "string", "0+"),
            F("client_host", "string", "0+"),
            F("subscribed_topic_names", "[]string", "0+"),
            F("subscribed_topic_regex", "string", "0+", nullable="0+", default=None),
            F("assignment", "Assignment", "0+", fields=_ASSIGNMENT),
            F("target_assignment", "TargetAssignment", "0+", fields=_ASSIGNMENT),
            F("member_type", "int8", "1+", default=-1, ignorable=True),
        ]),
        F("authorized_operations", "int32", "0+", default=-2147483648),
    ]),
])

ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse = compile_api(API)
