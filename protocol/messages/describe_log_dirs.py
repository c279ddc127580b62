"""DescribeLogDirs (key 35), versions 1-5 (Kafka 4 removed v0, KIP-896), flexible from 2.

``kafka-log-dirs.sh --describe``, ``Admin.describeLogDirs``/``describeReplicaLogDirs``: per
log directory of the broker its error (0, or KAFKA_STORAGE_ERROR for an offline dir), path,
and per hosted partition its size (bytes of its segments), offset lag (current log: HW - LEO,
always 0 on one node; a ``-future`` log: the current log's LEO - the future's LEO) and
whether it is the future copy an AlterReplicaLogDirs move is filling.
- ``topics`` null: every partition; else only those named (unknown ones are left out).
- v3 adds a top-level error code (CLUSTER_AUTHORIZATION_FAILED without DESCRIBE on the
  cluster, and then no results); v4 the volume's total and usable bytes (KIP-827); v5 whether
  the dir is cordoned (KIP-1066).
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(35, "DescribeLogDirs", valid="1-5", flexible="2+", request=[
    F("topics", "[]DescribableLogDirTopic", "0+", nullable="0+", fields=[
        F("topic", "string", "0+"),
        F("partitions", "[]int32", "0+"),
    ]),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "3+", ignorable=True, default=0),
    F("results", "[]DescribeLogDirsResult", "0+", fields=[
        F("error_code", "int16", "0+"),
        F("log_dir", "string", "0+"),
        F("topics", "[]DescribeLogDirsTopic", "0+", fields=[
            F("name", "string", "0+"),
            F("partitions", "[]DescribeLogDirsPartition", "0+", fields=[
                F("partition_index", "int32", "0+"),
                F("partition_size", "int64", "0+"),
                F("offset_lag", "int64", "0+"),
                F("is_future_key", "bool", "0+"),
            ]),
        ]),
        F("total_bytes", "int64", "4+", ignorable=True, default=-1),
        F("usable_bytes", "int64", "4+", ignorable=True, default=-1),
        F("is_cordoned", "bool", "5+", ignorable=True, default=False),
    ]),
])

DescribeLogDirsRequest, DescribeLogDirsResponse = compile_api(API)
