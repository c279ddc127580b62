"""DescribeQuorum (key 55), versions 0-2, flexible from 0 (KIP-595, KIP-836, KIP-853).

``kafka-metadata-quorum.sh describe --status/--replication``: the KRaft metadata partition
``__cluster_metadata``-0 as its leader sees it. Hourglass is a combined broker+controller that
is the only voter of its quorum: the leader is itself, the high watermark is its metadata
offset, the one voter is itself (its log end offset, last caught-up time now) and there are no
observers. Any other topic-partition: UNKNOWN_TOPIC_OR_PARTITION at partition level.
- v1 adds the last fetch / last caught-up timestamps; v2 the error messages, each replica's
  directory id and the voters' listeners (``nodes``).
"""
from protocol.codec import compile_api
from protocol.schema import F, api

_REPLICA_STATE = [
    F("replica_id", "int32", "0+"),
    F("replica_directory_id", "uuid", "2+"),
    F("log_end_offset", "int64", "0+"),
    F("last_fetch_timestamp", "int64", "1+", ignorable=True, default=-1),
    F("last_caught_up_timestamp", "int64", "1+", ignorable=True, default=-1),
]

API = api(55, "DescribeQuorum", valid="0-2", flexible="0+", request=[
    F("topics", "[]TopicData", "0+", fields=[
        F("topic_name", "string", "0+"),
        F("partitions", "[]PartitionData", "0+", fields=[
            F("partition_index", "int32", "0+"),
        ]),
    ]),
], response=[
    F("error_code", "int16", "0+"),
    F("error_message", "string", "2+", nullable="2+", ignorable=True, default=None),
    F("topics", "[]TopicData", "0+", fields=[
        F("topic_name", "string", "0+"),
        F("partitions", "[]PartitionData", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
            F("error_message", "string", "2+", nullable="2+", ignorable=True, default=None),
            F("leader_id", "int32", "0+"),
            F("leader_epoch", "int32", "0+"),
            F("high_watermark", "int64", "0+"),
            F("current_voters", "[]ReplicaState", "0+", fields=_REPLICA_STATE),
            F("observers", "[]ReplicaState", "0+", fields=_REPLICA_STATE),
        ]),
    ]),
    F("nodes", "[]Node", "2+", fields=[
        F("node_id", "int32", "2+"),
        F("listeners", "[]Listener", "2+", fields=[
            F("name", "string", "2+"),
            F("host", "string", "2+"),
            F("port", "uint16", "2+"),
        ]),
    ]),
])

DescribeQuorumRequest, DescribeQuorumResponse = compile_api(API)
