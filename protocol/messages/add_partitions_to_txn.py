"""AddPartitionsToTxn (key 24), versions 0-5, flexible from 3.

A transactional producer registers the partitions it is about to write with its
transaction coordinator, before producing to them.
- v0-3 (clients): one transaction: ``v3_and_below_transactional_id``/``_producer_id``/
  ``_producer_epoch``/``_topics``; answered per partition in ``results_by_topic_v3_and_below``.
- v4+ (brokers, KIP-890): batched ``transactions``, each with ``verify_only`` (check the
  partitions are already in the transaction, do not add them); answered with a top-level
  ``error_code`` and ``results_by_transaction``. v4+ is only used broker-to-broker; a client
  request at v4+ is rejected by Kafka with CLUSTER_AUTHORIZATION_FAILED.
- v2+ may answer PRODUCER_FENCED (90) instead of INVALID_PRODUCER_EPOCH; v5 may answer
  TRANSACTION_ABORTABLE.
- Kafka's common structs ``AddPartitionsToTxnTopic`` (request) and
  ``AddPartitionsToTxnTopicResult``/``AddPartitionsToTxnPartitionResult`` (response) are each
  declared once and used in both the old and the batched shape.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

# Kafka's "commonStructs": one declaration, used in two places of the same message.
_ADD_PARTITIONS_TO_TXN_TOPIC = [
    F("name", "string", "0+", map_key=True),
    F("partitions", "[]int32", "0+"),
]
_ADD_PARTITIONS_TO_TXN_TOPIC_RESULT = [
    F("name", "string", "0+", map_key=True),
    F("results_by_partition", "[]AddPartitionsToTxnPartitionResult", "0+", fields=[
        F("partition_index", "int32", "0+", map_key=True),
        F("partition_error_code", "int16", "0+"),
    ]),
]

API = api(24, "AddPartitionsToTxn", valid="0-5", flexible="3+", request=[
    F("transactions", "[]AddPartitionsToTxnTransaction", "4+", fields=[
        F("transactional_id", "string", "4+", map_key=True),
        F("producer_id", "int64", "4+"),
        F("producer_epoch", "int16", "4+"),
        F("verify_only", "bool", "4+", default=False),
        F("topics", "[]AddPartitionsToTxnTopic", "4+", fields=_ADD_PARTITIONS_TO_TXN_TOPIC),
    ]),
    F("v3_and_below_transactional_id", "string", "0-3"),
    F("v3_and_below_producer_id", "int64", "0-3"),
    F("v3_and_below_producer_epoch", "int16", "0-3"),
    F("v3_and_below_topics", "[]AddPartitionsToTxnTopic", "0-3", fields=_ADD_PARTITIONS_TO_TXN_TOPIC),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "4+", ignorable=True),
    F("results_by_transaction", "[]AddPartitionsToTxnResult", "4+", fields=[
        F("transactional_id", "string", "4+", map_key=True),
        F("topic_results", "[]AddPartitionsToTxnTopicResult", "4+", fields=_ADD_PARTITIONS_TO_TXN_TOPIC_RESULT),
    ]),
    F("results_by_topic_v3_and_below", "[]AddPartitionsToTxnTopicResult", "0-3",
      fields=_ADD_PARTITIONS_TO_TXN_TOPIC_RESULT),
])

AddPartitionsToTxnRequest, AddPartitionsToTxnResponse = compile_api(API)
