"""EndTxn (key 26), versions 0-4, flexible from 3.

A transactional producer ends its transaction: ``committed`` true commits, false aborts; the
coordinator writes the markers to every partition of the transaction.
- v2+ may answer PRODUCER_FENCED (90); v3 is the first flexible version; v4 may answer
  TRANSACTION_ABORTABLE. (Kafka 4's v5, which returns a bumped producer id/epoch, is not
  supported.)
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(26, "EndTxn", valid="0-4", flexible="3+", request=[
    F("transactional_id", "string", "0+"),
    F("producer_id", "int64", "0+"),
    F("producer_epoch", "int16", "0+"),
    F("committed", "bool", "0+"),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
])

EndTxnRequest, EndTxnResponse = compile_api(API)
