"""InitProducerId (22) v0-5: producer ids for idempotent producers.

Without a transactional id the broker hands out a fresh id with epoch 0 (Java 3.9 and
kafka-python 3.x enable idempotence by default; aiokafka uses v0). v3+ may pass an existing
(id, epoch) to bump the epoch after a fatal sequence error; at epoch 32767 a new id is given.
Transactions are not served: a transactional id gets UNSUPPORTED_VERSION with a message, and
the transactional APIs are not advertised.
"""
from broker.registry import handles
from protocol.errors import ErrorCode
from protocol.messages.init_producer_id import InitProducerIdResponse as R

MAX_EPOCH = 32767


@handles(22)
async def handle(ctx, req):
    b = ctx.broker
    if req.transactional_id is not None:
        return R(throttle_time_ms=0, error_code=ErrorCode.UNSUPPORTED_VERSION, producer_id=-1, producer_epoch=-1)
    if ctx.api_version >= 3 and req.producer_id >= 0 and 0 <= req.producer_epoch < MAX_EPOCH - 1:
        return R(throttle_time_ms=0, error_code=0, producer_id=req.producer_id,
                 producer_epoch=req.producer_epoch + 1)
    return R(throttle_time_ms=0, error_code=0, producer_id=b.producer_ids.allocate(), producer_epoch=0)
