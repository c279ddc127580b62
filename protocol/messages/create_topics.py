"""CreateTopics (key 19), versions 0-7, flexible from 5.

An admin client asks the controller (any broker here: we are a single node) to create topics.
- ``num_partitions``/``replication_factor`` are -1 when ``assignments`` gives a manual
  placement; from v4 (KIP-464) -1 also means "use the broker's default" even without
  assignments. Before v4 a request with -1 and no assignments is INVALID_REQUEST.
- v1+ ``validate_only``: check the request (names, counts, configs) but create nothing.
- ``timeout_ms`` bounds how long the broker may wait for creation to complete.
- Response: v1+ per-topic ``error_message``; v2+ ``throttle_time_ms``. v5+ (KIP-525) echo the
  created topic's ``num_partitions``, ``replication_factor`` and its ``configs`` (every
  config with its source), plus tagged ``topic_config_error_code`` when configs could not be
  described. v6+ may answer THROTTLING_QUOTA_EXCEEDED (KIP-599). v7+ returns ``topic_id``.
- TOPIC_ALREADY_EXISTS (36), INVALID_TOPIC_EXCEPTION (17), INVALID_PARTITIONS (37),
  INVALID_REPLICATION_FACTOR (38), INVALID_CONFIG (40) are the per-topic errors clients expect.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(19, "CreateTopics", valid="0-7", flexible="5+", request=[
    F("topics", "[]CreatableTopic", "0+", fields=[
        F("name", "string", "0+", map_key=True),
        F("num_partitions", "int32", "0+"),
        F("replication_factor", "int16", "0+"),
        F("assignments", "[]CreatableReplicaAssignment", "0+", fields=[
            F("partition_index", "int32", "0+", map_key=True),
            F("broker_ids", "[]int32", "0+"),
        ]),
        F("configs", "[]CreatableTopicConfig", "0+", fields=[
            F("name", "string", "0+", map_key=True),
            F("value", "string", "0+", nullable="0+"),
        ]),
    ]),
    F("timeout_ms", "int32", "0+", default=60000),
    F("validate_only", "bool", "1+", default=False),
], response=[
    F("throttle_time_ms", "int32", "2+", ignorable=True),
    F("topics", "[]CreatableTopicResult", "0+", fields=[
        F("name", "string", "0+", map_key=True),
        F("topic_id", "uuid", "7+", ignorable=True),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "1+", nullable="0+", ignorable=True),
        F("topic_config_error_code", "int16", "5+", tag=0, tagged_versions="5+", ignorable=True),
        F("num_partitions", "int32", "5+", default=-1, ignorable=True),
        F("replication_factor", "int16", "5+", default=-1, ignorable=True),
        F("configs", "[]CreatableTopicConfigs", "5+", nullable="5+", ignorable=True, fields=[
            F("name", "string", "5+"),
            F("value", "string", "5+", nullable="5+"),
            F("read_only", "bool", "5+"),
            F("config_source", "int8", "5+", default=-1, ignorable=True),
            F("is_sensitive", "bool", "5+"),
        ]),
    ]),
])

CreateTopicsRequest, CreateTopicsResponse = compile_api(API)
