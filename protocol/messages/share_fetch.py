"""ShareFetch (key 78), versions 1-2, flexible (KIP-932, Kafka 4.1+; v2 Kafka 4.2).

A share-group member fetches records from the share-partitions of its assignment, inside a
share session (``share_session_epoch`` 0 opens one, -1 closes it, otherwise it counts up by
one per request; the session key is (group id, member id)), and may piggy-back the
acknowledgements of records it holds. Each partition answers its records as raw batches plus
``acquired_records`` ranges (first/last offset and delivery count): only records inside those
ranges are the member's; the client drops the rest of each batch.

- Acknowledge types: 0 gap (no record at that offset), 1 accept, 2 release, 3 reject,
  4 renew (v2, KIP-1222: extend the acquisition lock). One type per batch, or one per offset.
- v0 was Kafka 4.0's early access, removed in 4.1. v1: ``max_records``, ``batch_size``; the
  response carries ``acquisition_lock_timeout_ms``. v2 (KIP-1206): ``share_acquire_mode``
  (0 batch-optimized, 1 record-limit: never more than ``max_records``); ``is_renew_ack``
  (KIP-1222: the request's acknowledgements include renewals), on the wire since Kafka 4.2.
- Errors (top level and per partition, ``acknowledge_error_code`` for its acknowledgements):
  SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH, UNKNOWN_TOPIC_ID,
  UNKNOWN_TOPIC_OR_PARTITION, INVALID_RECORD_STATE (acknowledgements only), INVALID_REQUEST.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

_ACK_BATCH = [
    F("first_offset", "int64", "0+"),
    F("last_offset", "int64", "0+"),
    F("acknowledge_types", "[]int8", "0+"),
]
_NODE_ENDPOINT = [
    F("node_id", "int32", "0+"),
    F("host", "string", "0+"),
    F("port", "int32", "0+"),
    F("rack", "string", "0+", nullable="0+", default=None),
]

API = api(78, "ShareFetch", valid="1-2", flexible="0+", request=[
    F("group_id", "string", "0+", nullable="0+", default=None),
    F("member_id", "string", "0+", nullable="0+"),
    F("share_session_epoch", "int32", "0+"),
    F("max_wait_ms", "int32", "0+"),
    F("min_bytes", "int32", "0+"),
    F("max_bytes", "int32", "0+", default=0x7FFFFFFF),
    F("max_records", "int32", "1+"),
    F("batch_size", "int32", "1+"),
    F("share_acquire_mode", "int8", "2+"),
    F("is_renew_ack", "bool", "2+", default=False),
    F("topics", "[]FetchTopic", "0+", fields=[
        F("topic_id", "uuid", "0+"),
        F("partitions", "[]FetchPartition", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("acknowledgement_batches", "[]AcknowledgementBatch", "0+", fields=_ACK_BATCH),
        ]),
    ]),
    F("forgotten_topics_data", "[]ForgottenTopic", "0+", fields=[
        F("topic_id", "uuid", "0+"),
        F("partitions", "[]int32", "0+"),
    ]),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("error_message", "string", "0+", nullable="0+", default=None),
    F("acquisition_lock_timeout_ms", "int32", "1+"),
    F("responses", "[]ShareFetchableTopicResponse", "0+", fields=[
        F("topic_id", "uuid", "0+"),
        F("partitions", "[]PartitionData", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+", default=None),
            F("acknowledge_error_code", "int16", "0+"),
            F("acknowledge_error_message", "string", "0+", nullable="0+", default=None),
            F("current_leader", "LeaderIdAndEpoch", "0+", fields=[
                F("leader_id", "int32", "0+"),
                F("leader_epoch", "int32", "0+"),
            ]),
            F("records", "records", "0+", nullable="0+", default=b""),  # Kafka answers an empty set, never null
            F("acquired_records", "[]AcquiredRecords", "0+", fields=[
                F("first_offset", "int64", "0+"),
                F("last_offset", "int64", "0+"),
                F("delivery_count", "int16", "0+"),
            ]),
        ]),
    ]),
    F("node_endpoints", "[]NodeEndpoint", "0+", fields=_NODE_ENDPOINT),
])

ShareFetchRequest, ShareFetchResponse = compile_api(API)
