"""DescribeProducers (key 61), version 0, flexible from 0.

KIP-664: list the active producers (producer state) of partitions, as
``kafka-transactions.sh describe-producers`` does.
- Per producer: id, epoch, last sequence, last timestamp, coordinator epoch (-1 if never
  transactional) and ``current_txn_start_offset`` (-1 when no transaction is open).
- Must go to the partition leader (NOT_LEADER_OR_FOLLOWER otherwise); unknown partition ->
  UNKNOWN_TOPIC_OR_PARTITION.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(61, "DescribeProducers", valid="0", flexible="0+", request=[
    F("topics", "[]TopicRequest", "0+", fields=[
        F("name", "string", "0+"),
        F("partition_indexes", "[]int32", "0+"),
    ]),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("topics", "[]TopicResponse", "0+", fields=[
        F("name", "string", "0+"),
        F("partitions", "[]PartitionResponse", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+", default=None),
            F("active_producers", "[]ProducerState", "0+", fields=[
                F("producer_id", "int64", "0+"),
                F("producer_epoch", "int32", "0+"),
                F("last_sequence", "int32", "0+", default=-1),
                F("last_timestamp", "int64", "0+", default=-1),
                F("coordinator_epoch", "int32", "0+"),
                F("current_txn_start_offset", "int64", "0+", default=-1),
            ]),
        ]),
    ]),
])

DescribeProducersRequest, DescribeProducersResponse = compile_api(API)
