"""ShareAcknowledge (key 79), versions 1-2, flexible (KIP-932, Kafka 4.1+; v2 Kafka 4.2).

Acknowledges records a share-group member holds without fetching more, inside its share
session (epoch -1 acknowledges and closes the session, as ``close()`` does). Acknowledge
types as in ShareFetch: 0 gap, 1 accept, 2 release, 3 reject, 4 renew (v2 with
``is_renew_ack``; the v2 response then carries ``acquisition_lock_timeout_ms``).
v0 was Kafka 4.0's early access, removed in 4.1.

Errors: SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH, UNKNOWN_TOPIC_ID,
UNKNOWN_TOPIC_OR_PARTITION, INVALID_RECORD_STATE (a record not acquired by this member, or
whose lock expired), INVALID_REQUEST.
"""
from protocol.codec import compile_api
from protocol.schema import F, api
from protocol.messages.share_fetch import _ACK_BATCH, _NODE_ENDPOINT

API = api(79, "ShareAcknowledge", valid="1-2", flexible="0+", request=[
    F("group_id", "string", "0+", nullable="0+", default=None),
    F("member_id", "string", "0+", nullable="0+"),
    F("share_session_epoch", "int32", "0+"),
    F("is_renew_ack", "bool", "2+", default=False),
    F("topics", "[]AcknowledgeTopic", "0+", fields=[
        F("topic_id", "uuid", "0+"),
        F("partitions", "[]AcknowledgePartition", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("acknowledgement_batches", "[]AcknowledgementBatch", "0+", fields=_ACK_BATCH),
        ]),
    ]),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("error_message", "string", "0+", nullable="0+", default=None),
    F("acquisition_lock_timeout_ms", "int32", "2+", default=0, ignorable=True),
    F("responses", "[]ShareAcknowledgeTopicResponse", "0+", fields=[
        F("topic_id", "uuid", "0+"),
        F("partitions", "[]PartitionData", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+", default=None),
            F("current_leader", "LeaderIdAndEpoch", "0+", fields=[
                F("leader_id", "int32", "0+"),
                F("leader_epoch", "int32", "0+"),
            ]),
        ]),
    ]),
    F("node_endpoints", "[]NodeEndpoint", "0+", fields=_NODE_ENDPOINT),
])

ShareAcknowledgeRequest, ShareAcknowledgeResponse = compile_api(API)
