"""Metadata (key 3), versions 0-13, flexible from 9.

Clients learn brokers, the controller and topic/partition leadership.
- Which topics: v0 an empty list means *all* topics; v1+ ``topics`` null means all topics
  and an empty list means none. v10+ a topic may be named by ``topic_id`` (name null from
  v10); v12 response topic ``name`` may be null (topic asked for by an unknown id).
- v4+ ``allow_auto_topic_creation`` (default true; v0-3 always auto-create if enabled).
- Response: v1+ ``rack``, ``controller_id``, ``is_internal``; v2+ ``cluster_id``; v3+
  ``throttle_time_ms``; v5+ ``offline_replicas``; v7+ ``leader_epoch``; v8+ authorized
  operations (bit fields, -2147483648 = not requested; the cluster-level one is v8-10
  only, later moved to DescribeCluster); v10+ ``topic_id``; v13+ a top-level ``error_code``.
- Unknown topic: error_code UNKNOWN_TOPIC_OR_PARTITION (3) or LEADER_NOT_AVAILABLE (5)
  while being created.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(3, "Metadata", valid="0-13", flexible="9+", request=[
    F("topics", "[]MetadataRequestTopic", "0+", nullable="1+", fields=[
        F("topic_id", "uuid", "10+", ignorable=True),
        F("name", "string", "0+", nullable="10+"),
    ]),
    F("allow_auto_topic_creation", "bool", "4+", default=True),
    F("include_cluster_authorized_operations", "bool", "8-10"),
    F("include_topic_authorized_operations", "bool", "8+"),
], response=[
    F("throttle_time_ms", "int32", "3+", ignorable=True),
    F("brokers", "[]MetadataResponseBroker", "0+", fields=[
        F("node_id", "int32", "0+", map_key=True),
        F("host", "string", "0+"),
        F("port", "int32", "0+"),
        F("rack", "string", "1+", nullable="1+", default=None, ignorable=True),
    ]),
    F("cluster_id", "string", "2+", nullable="2+", default=None, ignorable=True),
    F("controller_id", "int32", "1+", default=-1, ignorable=True),
    F("topics", "[]MetadataResponseTopic", "0+", fields=[
        F("error_code", "int16", "0+"),
        F("name", "string", "0+", nullable="12+", map_key=True),
        F("topic_id", "uuid", "10+", ignorable=True),
        F("is_internal", "bool", "1+", default=False, ignorable=True),
        F("partitions", "[]MetadataResponsePartition", "0+", fields=[
            F("error_code", "int16", "0+"),
            F("partition_index", "int32", "0+"),
            F("leader_id", "int32", "0+"),
            F("leader_epoch", "int32", "7+", default=-1, ignorable=True),
            F("replica_nodes", "[]int32", "0+"),
            F("isr_nodes", "[]int32", "0+"),
            F("offline_replicas", "[]int32", "5+", ignorable=True),
        ]),
        F("topic_authorized_operations", "int32", "8+", default=-2147483648),
    ]),
    F("cluster_authorized_operations", "int32", "8-10", default=-2147483648),
    F("error_code", "int16", "13+", ignorable=True),
])

MetadataRequest, MetadataResponse = compile_api(API)
