"""InitProducerId (22) v0-5: producer ids for idempotent and transactional producers.

Without a transactional id the broker hands out a fresh id with epoch 0 (Java 3.9 and
kafka-python 3.x enable idempotence by default; aiokafka uses v0). v3+ may pass an existing
(id, epoch) to bump the epoch after a fatal sequence error; at epoch 32767 a new id is given.

With a transactional id the transaction coordinator (broker.transactions) answers: a new id,
or the id's producer with its epoch bumped (fencing older incarnations; an open transaction
of theirs is aborted first and this request answered CONCURRENT_TRANSACTIONS, to retry), a new
producer id once the epochs are exhausted; ``transaction_timeout_ms`` must be within
(0, ``transaction.max.timeout.ms``] (INVALID_TRANSACTION_TIMEOUT). v3+ (KIP-360): a given
(id, epoch) must be the current one (or the previous, for a retry), else PRODUCER_FENCED,
which clients before v4 get as INVALID_PRODUCER_EPOCH. An id of -1 with an epoch (or the
reverse) is INVALID_REQUEST.
"""
from broker.registry import handles
from broker.security.api_acls import active
from protocol.errors import ErrorCode
from protocol.messages.init_producer_id import InitProducerIdResponse as R

MAX_EPOCH = 32767


@handles(22)
async def handle(ctx, req):
    b = ctx.broker
    v = ctx.api_version
    pid, epoch = (req.producer_id, req.producer_epoch) if v >= 3 else (-1, -1)
    if (pid == -1) != (epoch == -1):
        return R(throttle_time_ms=0, error_code=ErrorCode.INVALID_REQUEST, producer_id=-1, producer_epoch=-1)
    az = active(ctx)
    if az is not None:  # Kafka: WRITE on the transactional id, else IDEMPOTENT_WRITE or WRITE on any topic
        if req.transactional_id is not None:
            if not az.allowed("transactional_id", req.transactional_id):
                return R(throttle_time_ms=0, error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                         producer_id=-1, producer_epoch=-1)
        elif not (az.allowed("idempotent_write") or az.allowed_any("write_any_topic")):
            return R(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                     producer_id=-1, producer_epoch=-1)
    if req.transactional_id is not None:
        if b.txn is None:
            return R(throttle_time_ms=0, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, producer_id=-1,
                     producer_epoch=-1)
        res = b.txn.handle_init_producer_id(req.transactional_id, req.transaction_timeout_ms,
                                            None if pid == -1 else (pid, epoch))
        err = res.error
        if err == ErrorCode.PRODUCER_FENCED and v < 4:
            err = ErrorCode.INVALID_PRODUCER_EPOCH  # older clients do not know PRODUCER_FENCED
        return R(throttle_time_ms=0, error_code=err, producer_id=res.producer_id, producer_epoch=res.producer_epoch)
    if v >= 3 and pid >= 0 and 0 <= epoch < MAX_EPOCH - 1:
        return R(throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=epoch + 1)
    return R(throttle_time_ms=0, error_code=0, producer_id=b.producer_ids.allocate(), producer_epoch=0)
