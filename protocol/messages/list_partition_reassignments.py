"""ListPartitionReassignments (key 46), version 0, flexible from 0 (KIP-455).

``kafka-reassign-partitions.sh --list/--verify``: the reassignments in progress (replicas,
adding, removing) for the named partitions or, with ``topics`` null, for all. On one broker a
reassignment completes as it is made, so none is ever in progress; partitions that do not
exist are left out.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(46, "ListPartitionReassignments", valid="0", flexible="0+", request=[
    F("timeout_ms", "int32", "0+", default=60000),
    F("topics", "[]ListPartitionReassignmentsTopics", "0+", nullable="0+", default=None, fields=[
        F("name", "string", "0+"),
        F("partition_indexes", "[]int32", "0+"),
    ]),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("error_message", "string", "0+", nullable="0+", default=None),
    F("topics", "[]OngoingTopicReassignment", "0+", fields=[
        F("name", "string", "0+"),
        F("partitions", "[]OngoingPartitionReassignment", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("replicas", "[]int32", "0+"),
            F("adding_replicas", "[]int32", "0+"),
            F("removing_replicas", "[]int32", "0+"),
        ]),
    ]),
])

ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse = compile_api(API)
