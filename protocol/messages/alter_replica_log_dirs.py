"""AlterReplicaLogDirs (key 34), versions 1-2 (Kafka 4 removed v0, KIP-896), flexible from 2.

``kafka-reassign-partitions.sh`` with ``log_dirs`` / ``Admin.alterReplicaLogDirs``: move each
named partition's replica on this broker into the log dir ``path`` (KIP-113). The broker
creates a ``-future`` log there that copies the current log while it keeps serving, then
swaps it in. Per partition: 0 (accepted, or already there), LOG_DIR_NOT_FOUND (not one of
this broker's log dirs), KAFKA_STORAGE_ERROR (the dir is offline), UNKNOWN_TOPIC_OR_PARTITION,
CLUSTER_AUTHORIZATION_FAILED (ALTER on the cluster is needed).
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(34, "AlterReplicaLogDirs", valid="1-2", flexible="2+", request=[
    F("dirs", "[]AlterReplicaLogDir", "0+", fields=[
        F("path", "string", "0+"),
        F("topics", "[]AlterReplicaLogDirTopic", "0+", fields=[
            F("name", "string", "0+"),
            F("partitions", "[]int32", "0+"),
        ]),
    ]),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("results", "[]AlterReplicaLogDirTopicResult", "0+", fields=[
        F("topic_name", "string", "0+"),
        F("partitions", "[]AlterReplicaLogDirPartitionResult", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
        ]),
    ]),
])

AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse = compile_api(API)
