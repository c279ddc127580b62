"""ListTransactions (key 66), versions 0-2, flexible from 0.

KIP-664: every transactional id a coordinator knows (``kafka-transactions.sh list``),
filtered by state names and producer ids (empty filter = all); state names the coordinator
does not know come back in ``unknown_state_filters``.
- v1 (KIP-994) adds ``duration_filter``: only transactions running longer than that many
  milliseconds (-1 = no filter). The response is the same in v0 and v1.
- v2 (KIP-1152) adds ``transactional_id_pattern``: only transactional ids the regular
  expression matches (null or empty: no filter); an invalid one is INVALID_REGULAR_EXPRESSION.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(66, "ListTransactions", valid="0-2", flexible="0+", request=[
    F("state_filters", "[]string", "0+"),
    F("producer_id_filters", "[]int64", "0+"),
    F("duration_filter", "int64", "1+", default=-1),
    F("transactional_id_pattern", "string", "2+", nullable="2+", default=None),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("unknown_state_filters", "[]string", "0+"),
    F("transaction_states", "[]TransactionState", "0+", fields=[
        F("transactional_id", "string", "0+"),
        F("producer_id", "int64", "0+"),
        F("transaction_state", "string", "0+"),
    ]),
])

ListTransactionsRequest, ListTransactionsResponse = compile_api(API)
