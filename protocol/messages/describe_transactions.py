"""DescribeTransactions (key 65), version 0, flexible from 0.

KIP-664: the coordinator's view of transactional ids (``kafka-transactions.sh describe``).
- Per id: error (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, TRANSACTIONAL_ID_NOT_FOUND for
  an unknown or expiring id, INVALID_REQUEST for ""), state name (Empty, Ongoing,
  PrepareCommit, ...), timeout, start time (-1 when none), producer id and epoch, and the
  partitions of the open transaction (while preparing: those still without a marker).
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(65, "DescribeTransactions", valid="0", flexible="0+", request=[
    F("transactional_ids", "[]string", "0+"),
], response=[
    F("throttle_time_ms", "int32", "0+", ignorable=True),
    F("transaction_states", "[]TransactionState", "0+", fields=[
        F("error_code", "int16", "0+"),
        F("transactional_id", "string", "0+"),
        F("transaction_state", "string", "0+"),
        F("transaction_timeout_ms", "int32", "0+"),
        F("transaction_start_time_ms", "int64", "0+"),
        F("producer_id", "int64", "0+"),
        F("producer_epoch", "int16", "0+"),
        F("topics", "[]TopicData", "0+", fields=[
            F("topic", "string", "0+"),
            F("partitions", "[]int32", "0+"),
        ]),
    ]),
])

DescribeTransactionsRequest, DescribeTransactionsResponse = compile_api(API)
