"""ElectLeaders (key 43), versions 0-2, flexible from 2 (KIP-460).

``kafka-leader-election.sh``/``Admin.electLeaders``: elect the preferred (type 0) or, with no
in-sync replica, any live (type 1, unclean) replica as each partition's leader. On one broker
every partition's only replica is its preferred leader and already leads, so each partition
answers ELECTION_NOT_NEEDED (84); an unknown one UNKNOWN_TOPIC_OR_PARTITION. ``topic_partitions``
null means every partition: then only those whose election did something are listed (none).
- v1 adds ``election_type`` and the top-level error code.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(43, "ElectLeaders", valid="0-2", flexible="2+", request=[
    F("election_type", "int8", "1+", default=0),
    F("topic_partitions", "[]TopicPartitions", "0+", nullable="0+", fields=[
        F("topic", "string", "0+"),
        F("partitions", "[]int32", "0+"),
    ]),
    F("timeout_ms", "int32", "0+", default=60000),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "1+", default=0),
    F("replica_election_results", "[]ReplicaElectionResult", "0+", fields=[
        F("topic", "string", "0+"),
        F("partition_result", "[]PartitionResult", "0+", fields=[
            F("partition_id", "int32", "0+"),
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+", default=None),
        ]),
    ]),
])

ElectLeadersRequest, ElectLeadersResponse = compile_api(API)
