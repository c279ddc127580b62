"""StreamsGroupDescribe (key 89), versions 0-1, flexible from 0 (KIP-1071).

The admin view of Streams groups (``Admin.describeStreamsGroups``, kafka-streams-groups.sh):
per group its state (Empty, NotReady, Assigning, Reconciling, Stable, or Dead for an unknown
group with GROUP_ID_NOT_FOUND), group epoch, target assignment epoch, the topology (epoch and
subtopologies with their source, repartition and changelog topics), and per member its epochs,
client, process id, endpoint, client tags, current and target tasks.

- v1 (KIP-1331) adds ``IncludeTopologyDescription`` to the request and the topology
  description, its status (0 NOT_REQUESTED, 1 NOT_STORED, 2 ERROR, 3 AVAILABLE) and the
  assignor name to the response.
- A group of another type answers GROUP_ID_NOT_FOUND ("Group g is not a streams group.").
"""
from protocol.codec import compile_api
from protocol.messages.streams_group_heartbeat import (  # its structs, declared with the same fields
    _ENDPOINT, _KEY_VALUE, _TASK_IDS, _TASK_OFFSET, _TOPIC_INFO)
from protocol.schema import F, api

_ASSIGNMENT = [
    F("active_tasks", "[]TaskIds", "0+", fields=_TASK_IDS),
    F("standby_tasks", "[]TaskIds", "0+", fields=_TASK_IDS),
    F("warmup_tasks", "[]TaskIds", "0+", fields=_TASK_IDS),
]


def topology_description_fields(since: str, **node_kw) -> list:
    """KIP-1331's TopologyDescription (a common struct in Kafka's specs): its fields, existing
    from version ``since`` of the message holding it (here and in StreamsGroupTopologyDescriptionUpdate);
    ``node_kw`` goes to the global stores' source and processor nodes."""
    node = [
        F("name", "string", since),
        F("node_type", "int8", since),
        F("source_topics", "[]string", since),
        F("sink_topic", "string", since, nullable=since, default=None),
        F("stores", "[]string", since),
        F("successors", "[]string", since),
    ]
    return [
        F("subtopologies", "[]TopologyDescriptionSubtopology", since, fields=[
            F("subtopology_id", "string", since),
            F("nodes", "[]TopologyDescriptionNode", since, fields=node),
        ]),
        F("global_stores", "[]TopologyDescriptionGlobalStore", since, fields=[
            F("source", "TopologyDescriptionNode", since, fields=node, **node_kw),
            F("processor", "TopologyDescriptionNode", since, fields=node, **node_kw),
        ]),
    ]


API = api(89, "StreamsGroupDescribe", valid="0-1", flexible="0+", request=[
    F("group_ids", "[]string", "0+"),
    F("include_authorized_operations", "bool", "0+"),
    F("include_topology_description", "bool", "1+", default=False),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("groups", "[]DescribedGroup", "0+", fields=[
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+", default=None),
        F("group_id", "string", "0+"),
        F("group_state", "string", "0+"),
        F("group_epoch", "int32", "0+"),
        F("assignment_epoch", "int32", "0+"),
        F("topology", "Topology", "0+", nullable="0+", default=None, fields=[
            F("epoch", "int32", "0+"),
            F("subtopologies", "[]Subtopology", "0+", nullable="0+", default=None, fields=[
                F("subtopology_id", "string", "0+"),
                F("source_topics", "[]string", "0+"),
                F("repartition_sink_topics", "[]string", "0+"),
                F("state_changelog_topics", "[]TopicInfo", "0+", fields=_TOPIC_INFO),
                F("repartition_source_topics", "[]TopicInfo", "0+", fields=_TOPIC_INFO),
            ]),
        ]),
        F("members", "[]Member", "0+", fields=[
            F("member_id", "string", "0+"),
            F("member_epoch", "int32", "0+"),
            F("instance_id", "string", "0+", nullable="0+", default=None),
            F("rack_id", "string", "0+", nullable="0+", default=None),
            F("client_id", "string", "0+"),
            F("client_host", "string", "0+"),
            F("topology_epoch", "int32", "0+"),
            F("process_id", "string", "0+"),
            F("user_endpoint", "Endpoint", "0+", nullable="0+", default=None, fields=_ENDPOINT),
            F("client_tags", "[]KeyValue", "0+", fields=_KEY_VALUE),
            F("task_offsets", "[]TaskOffset", "0+", fields=_TASK_OFFSET),
            F("task_end_offsets", "[]TaskOffset", "0+", fields=_TASK_OFFSET),
            F("assignment", "Assignment", "0+", fields=_ASSIGNMENT),
            F("target_assignment", "Assignment", "0+", fields=_ASSIGNMENT),
            F("is_classic", "bool", "0+"),
        ]),
        F("authorized_operations", "int32", "0+", default=-2147483648),
        F("topology_description", "TopologyDescription", "1+", nullable="1+", default=None,
          fields=topology_description_fields("1+")),
        F("topology_description_status", "int8", "1+", default=0),
        F("assignor_name", "string", "1+", nullable="1+", default=None, ignorable=True),
    ]),
])

StreamsGroupDescribeRequest, StreamsGroupDescribeResponse = compile_api(API)
