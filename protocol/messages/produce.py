"""Produce (key 0), versions 0-13, flexible from 9.

The producer appends record data to partition leaders.
- v0-2 carry legacy message sets (magic 0/1); v3+ carry record batches (magic 2) and add
  ``transactional_id`` (null when the producer is not transactional). A v3+ request must
  hold exactly one magic-2 batch per partition (else INVALID_RECORD); zstd needs v7+
  (else UNSUPPORTED_COMPRESSION_TYPE).
- ``acks`` 0 means the client expects *no response at all*: the broker must send nothing.
- Response: v1+ ``throttle_time_ms``; v2+ ``log_append_time_ms`` (-1 unless the topic uses
  LogAppendTime); v5+ ``log_start_offset``; v8+ ``record_errors``/``error_message``
  (KIP-467); v10+ tagged ``current_leader`` and ``node_endpoints`` (KIP-951, sent with
  NOT_LEADER_OR_FOLLOWER). v4+ clients handle KAFKA_STORAGE_ERROR.
- v11 adds TRANSACTION_ABORTABLE; v12 is v11 for a client with transaction version 2 (KIP-890
  part 2: a transactional batch adds its partition to the transaction); v13 names topics by
  ``topic_id`` instead of ``name`` (KIP-516, UNKNOWN_TOPIC_ID).
- Tagged ``current_leader`` is ``None`` when absent (Kafka's default {-1, -1} is never sent).
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(0, "Produce", valid="0-13", flexible="9+", request=[
    F("transactional_id", "string", "3+", nullable="3+", default=None),
    F("acks", "int16", "0+"),
    F("timeout_ms", "int32", "0+"),
    F("topic_data", "[]TopicProduceData", "0+", fields=[
        F("name", "string", "0-12", map_key=True, ignorable=True),
        F("topic_id", "uuid", "13+", map_key=True, ignorable=True),
        F("partition_data", "[]PartitionProduceData", "0+", fields=[
            F("index", "int32", "0+"),
            F("records", "records", "0+", nullable="0+"),
        ]),
    ]),
], response=[
    F("responses", "[]TopicProduceResponse", "0+", fields=[
        F("name", "string", "0-12", map_key=True, ignorable=True),
        F("topic_id", "uuid", "13+", map_key=True, ignorable=True),
        F("partition_responses", "[]PartitionProduceResponse", "0+", fields=[
            F("index", "int32", "0+"),
            F("error_code", "int16", "0+"),
            F("base_offset", "int64", "0+"),
            F("log_append_time_ms", "int64", "2+", default=-1, ignorable=True),
            F("log_start_offset", "int64", "5+", default=-1, ignorable=True),
            F("record_errors", "[]BatchIndexAndErrorMessage", "8+", ignorable=True, fields=[
                F("batch_index", "int32", "8+"),
                F("batch_index_error_message", "string", "8+", nullable="8+", default=None),
            ]),
            F("error_message", "string", "8+", nullable="8+", default=None, ignorable=True),
            F("current_leader", "LeaderIdAndEpoch", "10+", tag=0, tagged_versions="10+", fields=[
                F("leader_id", "int32", "10+", default=-1),
                F("leader_epoch", "int32", "10+", default=-1),
            ]),
        ]),
    ]),
    F("throttle_time_ms", "int32", "1+", default=0, ignorable=True),
    F("node_endpoints", "[]NodeEndpoint", "10+", tag=0, tagged_versions="10+", fields=[
        F("node_id", "int32", "10+", map_key=True),
        F("host", "string", "10+"),
        F("port", "int32", "10+"),
        F("rack", "string", "10+", nullable="10+", default=None),
    ]),
])

ProduceRequest, ProduceResponse = compile_api(API)
