"""StreamsGroupHeartbeat (key 88), versions 0-1, flexible from 0 (KIP-1071).

The one RPC of the Kafka Streams rebalance protocol (``group.protocol=streams``): a member
joins (epoch 0, with its topology), stays alive and reconciles its tasks (its current epoch),
or leaves (epoch -1; a static member -2). The coordinator answers the member epoch, the
heartbeat interval, the group's statuses (missing source or internal topics, a stale
topology, a requested shutdown) and, when they changed, the active, standby and warm-up
tasks the member may run now (subtopology id and partitions).

- Fields are "null when unchanged since the last heartbeat": instance id, rack id, topology
  (sent only when joining), the three task lists (all null or none), process id, user
  endpoint, client tags, task offsets; the rebalance timeout is -1 when unchanged.
- v1 (KIP-1331) is the same request; its response replaces the int32
  ``AcceptableRecoveryLagLegacy`` by an int64 ``AcceptableRecoveryLag`` and adds
  ``TopologyDescriptionRequired``.
- Errors: GROUP_AUTHORIZATION_FAILED, GROUP_ID_NOT_FOUND, NOT_COORDINATOR,
  COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, INVALID_REQUEST, UNKNOWN_MEMBER_ID,
  FENCED_MEMBER_EPOCH, UNRELEASED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED,
  TOPIC_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED, STREAMS_INVALID_TOPOLOGY,
  STREAMS_INVALID_TOPOLOGY_EPOCH, STREAMS_TOPOLOGY_FENCED.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

_KEY_VALUE = [F("key", "string", "0+"), F("value", "string", "0+")]
_TOPIC_INFO = [
    F("name", "string", "0+"),
    F("partitions", "int32", "0+"),
    F("replication_factor", "int16", "0+"),
    F("topic_configs", "[]KeyValue", "0+", fields=_KEY_VALUE),
]
_TASK_IDS = [F("subtopology_id", "string", "0+"), F("partitions", "[]int32", "0+")]
_TASK_OFFSET = [F("subtopology_id", "string", "0+"), F("partition", "int32", "0+"), F("offset", "int64", "0+")]
_ENDPOINT = [F("host", "string", "0+"), F("port", "uint16", "0+")]
_TOPIC_PARTITION = [F("topic", "string", "0+"), F("partitions", "[]int32", "0+")]

API = api(88, "StreamsGroupHeartbeat", valid="0-1", flexible="0+", request=[
    F("group_id", "string", "0+"),
    F("member_id", "string", "0+"),
    F("member_epoch", "int32", "0+"),
    F("endpoint_information_epoch", "int32", "0+"),
    F("instance_id", "string", "0+", nullable="0+", default=None),
    F("rack_id", "string", "0+", nullable="0+", default=None),
    F("rebalance_timeout_ms", "int32", "0+", default=-1),
    F("topology", "Topology", "0+", nullable="0+", default=None, fields=[
        F("epoch", "int32", "0+"),
        F("subtopologies", "[]Subtopology", "0+", fields=[
            F("subtopology_id", "string", "0+"),
            F("source_topics", "[]string", "0+"),
            F("source_topic_regex", "[]string", "0+"),
            F("state_changelog_topics", "[]TopicInfo", "0+", fields=_TOPIC_INFO),
            F("repartition_sink_topics", "[]string", "0+"),
            F("repartition_source_topics", "[]TopicInfo", "0+", fields=_TOPIC_INFO),
            F("copartition_groups", "[]CopartitionGroup", "0+", fields=[
                F("source_topics", "[]int16", "0+"),
                F("source_topic_regex", "[]int16", "0+"),
                F("repartition_source_topics", "[]int16", "0+"),
            ]),
        ]),
    ]),
    F("active_tasks", "[]TaskIds", "0+", nullable="0+", default=None, fields=_TASK_IDS),
    F("standby_tasks", "[]TaskIds", "0+", nullable="0+", default=None, fields=_TASK_IDS),
    F("warmup_tasks", "[]TaskIds", "0+", nullable="0+", default=None, fields=_TASK_IDS),
    F("process_id", "string", "0+", nullable="0+", default=None),
    F("user_endpoint", "Endpoint", "0+", nullable="0+", default=None, fields=_ENDPOINT),
    F("client_tags", "[]KeyValue", "0+", nullable="0+", default=None, fields=_KEY_VALUE),
    F("task_offsets", "[]TaskOffset", "0+", nullable="0+", default=None, fields=_TASK_OFFSET),
    F("task_end_offsets", "[]TaskOffset", "0+", nullable="0+", default=None, fields=_TASK_OFFSET),
    F("shutdown_application", "bool", "0+", default=False),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("error_message", "string", "0+", nullable="0+", default=None),
    F("member_id", "string", "0+"),
    F("member_epoch", "int32", "0+"),
    F("heartbeat_interval_ms", "int32", "0+"),
    F("acceptable_recovery_lag_legacy", "int32", "0", default=0),
    F("task_offset_interval_ms", "int32", "0+"),
    F("acceptable_recovery_lag", "int64", "1+", default=-1, ignorable=True),
    F("status", "[]Status", "0+", nullable="0+", default=None, fields=[
        F("status_code", "int8", "0+"),
        F("status_detail", "string", "0+"),
    ]),
    F("active_tasks", "[]TaskIds", "0+", nullable="0+", default=None, fields=_TASK_IDS),
    F("standby_tasks", "[]TaskIds", "0+", nullable="0+", default=None, fields=_TASK_IDS),
    F("warmup_tasks", "[]TaskIds", "0+", nullable="0+", default=None, fields=_TASK_IDS),
    F("topology_description_required", "bool", "1+", default=False),
    F("endpoint_information_epoch", "int32", "0+"),
    F("partitions_by_user_endpoint", "[]EndpointToPartitions", "0+", nullable="0+", default=None, fields=[
        F("user_endpoint", "Endpoint", "0+", fields=_ENDPOINT),
        F("active_partitions", "[]TopicPartition", "0+", fields=_TOPIC_PARTITION),
        F("standby_partitions", "[]TopicPartition", "0+", fields=_TOPIC_PARTITION),
    ]),
])

StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse = compile_api(API)
