"""AlterPartitionReassignments (key 45), versions 0-1, flexible from 0 (KIP-455).

``kafka-reassign-partitions.sh --execute``/``Admin.alterPartitionReassignments``: a new replica
list per partition, or null to cancel a pending reassignment. On one broker the only
possible target is that broker: a reassignment onto it completes at once (nothing to copy);
a broker id that does not exist is INVALID_REPLICA_ASSIGNMENT; cancelling when none is pending
is NO_REASSIGNMENT_IN_PROGRESS.
- v1 adds ``allow_replication_factor_change`` (KIP-860), echoed in the response; false refuses
  a list of another length than the current one with INVALID_REPLICATION_FACTOR.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(45, "AlterPartitionReassignments", valid="0-1", flexible="0+", request=[
    F("timeout_ms", "int32", "0+", default=60000),
    F("allow_replication_factor_change", "bool", "1+", default=True),
    F("topics", "[]ReassignableTopic", "0+", fields=[
        F("name", "string", "0+"),
        F("partitions", "[]ReassignablePartition", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("replicas", "[]int32", "0+", nullable="0+", default=None),
        ]),
    ]),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("allow_replication_factor_change", "bool", "1+", ignorable=True, default=True),
    F("error_code", "int16", "0+"),
    F("error_message", "string", "0+", nullable="0+", default=None),
    F("responses", "[]ReassignableTopicResponse", "0+", fields=[
        F("name", "string", "0+"),
        F("partitions", "[]ReassignablePartitionResponse", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+", default=None),
        ]),
    ]),
])

AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse = compile_api(API)
