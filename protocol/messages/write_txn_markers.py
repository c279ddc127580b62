"""WriteTxnMarkers (key 27), versions 0-2, flexible from 1.

The transaction coordinator asks a partition leader to append COMMIT/ABORT control batches
(one per partition) for a producer id and epoch, stamped with the coordinator epoch. A
broker-to-broker API (Kafka: CLUSTER_ACTION); ``kafka-transactions.sh abort`` also sends it to
end a hanging transaction.
- v0 (not flexible) was removed in Kafka 4.0, v1 is the baseline there; v2 adds
  ``transaction_version`` per marker (KIP-1228; 0/1 legacy, 2: the epoch must be newer).
- Per partition: UNKNOWN_TOPIC_OR_PARTITION, INVALID_PRODUCER_EPOCH (the marker's epoch is
  older than the producer's), TRANSACTION_COORDINATOR_FENCED (older coordinator epoch).
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(27, "WriteTxnMarkers", valid="0-2", flexible="1+", request=[
    F("markers", "[]WritableTxnMarker", "0+", fields=[
        F("producer_id", "int64", "0+"),
        F("producer_epoch", "int16", "0+"),
        F("transaction_result", "bool", "0+"),
        F("topics", "[]WritableTxnMarkerTopic", "0+", fields=[
            F("name", "string", "0+"),
            F("partition_indexes", "[]int32", "0+"),
        ]),
        F("coordinator_epoch", "int32", "0+"),
        F("transaction_version", "int8", "2+", ignorable=True),
    ]),
], response=[
    F("markers", "[]WritableTxnMarkerResult", "0+", fields=[
        F("producer_id", "int64", "0+"),
        F("topics", "[]WritableTxnMarkerTopicResult", "0+", fields=[
            F("name", "string", "0+"),
            F("partitions", "[]WritableTxnMarkerPartitionResult", "0+", fields=[
                F("partition_index", "int32", "0+"),
                F("error_code", "int16", "0+"),
            ]),
        ]),
    ]),
])

WriteTxnMarkersRequest, WriteTxnMarkersResponse = compile_api(API)
