"""EndTxn (key 26), versions 0-5, flexible from 3.

A transactional producer ends its transaction: ``committed`` true commits, false aborts; the
coordinator writes the markers to every partition of the transaction.
- v2+ may answer PRODUCER_FENCED (90) (INVALID_PRODUCER_EPOCH before); v3 is the first
  flexible version; v4 may answer TRANSACTION_ABORTABLE.
- v5 (KIP-890 part 2, "transaction version 2"): the coordinator bumps the producer epoch at
  every EndTxn and answers the (possibly new) ``producer_id``/``producer_epoch``; clients use
  it only when the broker finalizes the ``transaction.version`` feature at 2.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(26, "EndTxn", valid="0-5", flexible="3+", request=[
    F("transactional_id", "string", "0+"),
    F("producer_id", "int64", "0+"),
    F("producer_epoch", "int16", "0+"),
    F("committed", "bool", "0+"),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("producer_id", "int64", "5+", default=-1, ignorable=True),
    F("producer_epoch", "int16", "5+", default=-1, ignorable=True),
])

EndTxnRequest, EndTxnResponse = compile_api(API)
