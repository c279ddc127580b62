"""Fetch (key 1), versions 0-18, flexible from 12.

Consumers (replica_id -1) and followers read record data from partition leaders.
- v0-3 clients cannot read magic-2 batches: the broker down-converts (v0-1 to magic 0,
  v2-3 to magic 1). v4+ add ``isolation_level``
  (1 = READ_COMMITTED: read only up to the last stable offset) and, per partition,
  ``last_stable_offset`` and ``aborted_transactions`` (null allowed).
- v3+ ``max_bytes`` (response-wide limit, KIP-74: the first batch of the first non-empty
  partition is returned whole even if larger than the limits).
- v5+ ``log_start_offset``; v7+ fetch sessions (KIP-227: ``session_id``/``session_epoch``,
  ``forgotten_topics_data``, top-level ``error_code``); v9+ ``current_leader_epoch``
  (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH); v11+ ``rack_id`` and
  ``preferred_read_replica``; v12+ ``last_fetched_epoch`` and tagged ``diverging_epoch``,
  ``current_leader``, ``snapshot_id``.
- v13+ topics by ``topic_id`` instead of name (UNKNOWN_TOPIC_ID); v15+ ``replica_id`` moves
  to tagged ``replica_state``; v16+ tagged ``node_endpoints``; v17 tagged
  ``replica_directory_id``; v18 (KIP-1166) a follower's tagged ``high_watermark`` per partition
  (the leader may answer a follower's delayed fetch early when it lags; consumers leave it
  at its default, Long.MAX_VALUE, and nothing else changes).
- ``records`` may be a list of chunks when encoding (zero-copy from segments); it decodes
  as a ``memoryview`` into the frame. Tagged structs are ``None`` when absent.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(1, "Fetch", valid="0-18", flexible="12+", request=[
    F("cluster_id", "string", "12+", nullable="12+", default=None, tag=0, tagged_versions="12+", ignorable=True),
    F("replica_id", "int32", "0-14", default=-1),
    F("replica_state", "ReplicaState", "15+", tag=1, tagged_versions="15+", fields=[
        F("replica_id", "int32", "15+", default=-1),
        F("replica_epoch", "int64", "15+", default=-1),
    ]),
    F("max_wait_ms", "int32", "0+"),
    F("min_bytes", "int32", "0+"),
    F("max_bytes", "int32", "3+", default=0x7FFFFFFF, ignorable=True),
    F("isolation_level", "int8", "4+", default=0, ignorable=True),
    F("session_id", "int32", "7+", default=0, ignorable=True),
    F("session_epoch", "int32", "7+", default=-1, ignorable=True),
    F("topics", "[]FetchTopic", "0+", fields=[
        F("topic", "string", "0-12", ignorable=True),
        F("topic_id", "uuid", "13+", ignorable=True),
        F("partitions", "[]FetchPartition", "0+", fields=[
            F("partition", "int32", "0+"),
            F("current_leader_epoch", "int32", "9+", default=-1, ignorable=True),
            F("fetch_offset", "int64", "0+"),
            F("last_fetched_epoch", "int32", "12+", default=-1),
            F("log_start_offset", "int64", "5+", default=-1, ignorable=True),
            F("partition_max_bytes", "int32", "0+"),
            F("replica_directory_id", "uuid", "17+", tag=0, tagged_versions="17+", ignorable=True),
            F("high_watermark", "int64", "18+", tag=1, tagged_versions="18+", default=0x7FFFFFFFFFFFFFFF,
              ignorable=True),
        ]),
    ]),
    F("forgotten_topics_data", "[]ForgottenTopic", "7+", fields=[
        F("topic", "string", "7-12", ignorable=True),
        F("topic_id", "uuid", "13+", ignorable=True),
        F("partitions", "[]int32", "7+"),
    ]),
    F("rack_id", "string", "11+", default="", ignorable=True),
], response=[
    F("throttle_time_ms", "int32", "1+", ignorable=True),
    F("error_code", "int16", "7+", ignorable=True),
    F("session_id", "int32", "7+", default=0),
    F("responses", "[]FetchableTopicResponse", "0+", fields=[
        F("topic", "string", "0-12", ignorable=True),
        F("topic_id", "uuid", "13+", ignorable=True),
        F("partitions", "[]PartitionData", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
            F("high_watermark", "int64", "0+"),
            F("last_stable_offset", "int64", "4+", default=-1, ignorable=True),
            F("log_start_offset", "int64", "5+", default=-1, ignorable=True),
            F("diverging_epoch", "EpochEndOffset", "12+", tag=0, tagged_versions="12+", fields=[
                F("epoch", "int32", "12+", default=-1),
                F("end_offset", "int64", "12+", default=-1),
            ]),
            F("current_leader", "LeaderIdAndEpoch", "12+", tag=1, tagged_versions="12+", fields=[
                F("leader_id", "int32", "12+", default=-1),
                F("leader_epoch", "int32", "12+", default=-1),
            ]),
            F("snapshot_id", "SnapshotId", "12+", tag=2, tagged_versions="12+", fields=[
                F("end_offset", "int64", "0+", default=-1),
                F("epoch", "int32", "0+", default=-1),
            ]),
            F("aborted_transactions", "[]AbortedTransaction", "4+", nullable="4+", ignorable=True, fields=[
                F("producer_id", "int64", "4+"),
                F("first_offset", "int64", "4+"),
            ]),
            F("preferred_read_replica", "int32", "11+", default=-1),
            F("records", "records", "0+", nullable="0+", default=b""),  # Kafka answers an empty set, never null
        ]),
    ]),
    F("node_endpoints", "[]NodeEndpoint", "16+", tag=0, tagged_versions="16+", fields=[
        F("node_id", "int32", "16+", map_key=True),
        F("host", "string", "16+"),
        F("port", "int32", "16+"),
        F("rack", "string", "16+", nullable="16+", default=None),
    ]),
])

FetchRequest, FetchResponse = compile_api(API)
