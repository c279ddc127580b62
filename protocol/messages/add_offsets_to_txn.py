"""AddOffsetsToTxn (key 25), versions 0-4, flexible from 3.

A transactional producer tells its transaction coordinator it will commit offsets for
``group_id`` in this transaction (the coordinator adds the group's ``__consumer_offsets``
partition to the transaction); it then sends TxnOffsetCommit to the group coordinator.
- v2+ may answer PRODUCER_FENCED (90); v3 is the first flexible version; v4 may answer
  TRANSACTION_ABORTABLE.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(25, "AddOffsetsToTxn", valid="0-4", flexible="3+", request=[
    F("transactional_id", "string", "0+"),
    F("producer_id", "int64", "0+"),
    F("producer_epoch", "int16", "0+"),
    F("group_id", "string", "0+"),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
])

AddOffsetsToTxnRequest, AddOffsetsToTxnResponse = compile_api(API)
