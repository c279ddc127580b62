"""InitProducerId (key 22), versions 0-5, flexible from 2.

Idempotent and transactional producers obtain a producer id and epoch.
- ``transactional_id`` null: an idempotent producer; any broker answers with a fresh
  producer id, epoch 0. Non-null: must go to the transaction coordinator
  (NOT_COORDINATOR otherwise), which bumps the epoch and fences older instances.
- ``transaction_timeout_ms`` above the broker maximum -> INVALID_TRANSACTION_TIMEOUT.
- v3+ ``producer_id``/``producer_epoch`` (KIP-360: an existing producer asks for an epoch
  bump after an error; -1/-1 means a new producer; a mismatch -> PRODUCER_FENCED (v4+,
  INVALID_PRODUCER_EPOCH before)).
- v4+ clients handle PRODUCER_FENCED; v5 (KIP-890) clients handle TRANSACTION_ABORTABLE;
  the layout is unchanged since v3.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(22, "InitProducerId", valid="0-5", flexible="2+", request=[
    F("transactional_id", "string", "0+", nullable="0+"),
    F("transaction_timeout_ms", "int32", "0+"),
    F("producer_id", "int64", "3+", default=-1),
    F("producer_epoch", "int16", "3+", default=-1),
], response=[
    F("throttle_time_ms", "int32", "0+", ignorable=True),
    F("error_code", "int16", "0+"),
    F("producer_id", "int64", "0+", default=-1),
    F("producer_epoch", "int16", "0+"),
])

InitProducerIdRequest, InitProducerIdResponse = compile_api(API)
