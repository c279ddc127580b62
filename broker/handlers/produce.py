"""Produce (0) v0-13: append client record batches to partition logs.

v0-2 carry legacy message sets (magic 0/1, up-converted to magic 2 by the validator); v3+
record batches. acks: 0 (no response at all), 1 and -1 (one node: the leader's append is
the whole ISR; ``flush.messages``/``flush.ms`` decide when it is fsynced). Per partition:
UNKNOWN_TOPIC_OR_PARTITION, CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, INVALID_TIMESTAMP (with
``record_errors`` and ``error_message`` from v8), INVALID_RECORD, OUT_OF_ORDER_SEQUENCE_NUMBER.
A duplicate idempotent batch gets the offsets of the original append, not a new one.

Schema ID validation (Confluent Server's ``confluent.key/value.schema.validation`` topic
configs): a batch with a key or value not in the registry's wire format, or naming an id not
registered under the strategy's subject, gets INVALID_RECORD with ``record_errors`` and nothing
of it is appended. Topics without it pay one attribute read.

Authorization (ACLs on): WRITE on the transactional id when one is given, else the whole
request answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED; WRITE on each topic, checked before the
topic's existence (TOPIC_AUTHORIZATION_FAILED, so a denied client cannot probe topic names).

Transactional batches (KIP-890 part 1, ``transaction.partition.verification.enable``): unless
the producer's open transaction already has data in the partition, the transaction coordinator
must have the partition in the producer's transaction (``transactional_id`` of the request),
as Kafka 4's ReplicaManager checks. A partition never added gets INVALID_TXN_STATE (v3-10) or
TRANSACTION_ABORTABLE (v11); a fenced producer INVALID_PRODUCER_EPOCH; an unknown id or another
producer id INVALID_PRODUCER_ID_MAPPING; a transaction still completing (or an unavailable
coordinator) NOT_ENOUGH_REPLICAS, which every client retries. Nothing is appended then.
From v12 (KIP-890 part 2) a transactional batch adds its partition to the transaction instead,
as Kafka's broker does for v12+ (a client without a finalized ``transaction.version`` 2, which
Hourglass never finalizes, sends its transactional produces as v11).

v13 (KIP-516) names topics by id: an id no topic has is UNKNOWN_TOPIC_ID, and the answer is
keyed by the same id.
"""
import logging

import struct

from broker.errors import error_code_for
from broker.registry import handles
from broker.security.api_acls import active

from protocol.errors import ErrorCode
from protocol.records.batch import LOG_OVERHEAD, peek_magic, read_header
from protocol.messages.produce import ProduceResponse as R
from storage.errors import StorageError

log = logging.getLogger(__name__)
P = R.PartitionProduceResponse
_LEN = struct.Struct(">i")
LEADER_EPOCH = 0  # one node, one epoch: batches are stamped like Kafka's leader does


def _error(index: int, code: int, message: str | None = None, record_errors=None,
           log_start_offset: int = -1) -> "P":
    return P(index=index, error_code=code, base_offset=-1, log_append_time_ms=-1,
             log_start_offset=log_start_offset, error_message=message, record_errors=record_errors or [])


# Append failures Kafka answers without the log start offset (ReplicaManager.appendToLocalLog:
# LogAppendInfo.UNKNOWN_LOG_APPEND_INFO); every other append failure (a record the validator
# refused, a sequence or epoch error, ...) carries the partition's log start offset.
_NO_LOG_START = frozenset({
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.MESSAGE_TOO_LARGE,
    ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.CORRUPT_MESSAGE, ErrorCode.KAFKA_STORAGE_ERROR,
    ErrorCode.UNKNOWN_TOPIC_ID,
})


def _log_start(plog, code) -> int:
    return -1 if code in _NO_LOG_START else plog.log_start_offset


def _check_v3_records(records) -> tuple[int, str | None, str] | None:
    """Kafka's ProduceRequest.validateRecords: v3+ carry exactly one magic-2 batch.

    Returns (error code, the message the answer carries, the reason for our log) or None.
    Kafka answers these with the code alone (its PartitionResponse from the exception's
    error), except an unknown magic, which its batch reader reports with a message."""
    if len(records) < LOG_OVERHEAD + 5:
        return ErrorCode.INVALID_RECORD, None, "records too short to hold a record batch"
    magic = peek_magic(records)
    if magic not in (0, 1, 2):
        msg = f"Invalid magic found in record: {magic}"
        return ErrorCode.CORRUPT_MESSAGE, msg, msg
    if magic != 2:
        return ErrorCode.INVALID_RECORD, None, f"magic {magic} batch in a v3+ request (magic 2 only)"
    (length,) = _LEN.unpack_from(records, 8)
    if LOG_OVERHEAD + length > len(records):
        return ErrorCode.INVALID_RECORD, None, "a truncated record batch"
    if LOG_OVERHEAD + length < len(records):
        return ErrorCode.INVALID_RECORD, None, "more than one record batch (v3+ allow exactly one)"
    return None


# Kafka's ReplicaManager: retriable verification errors older producers would not retry, told
# as NOT_ENOUGH_REPLICAS (which every producer retries and which needs no metadata refresh)
_RETRY_AS_NOT_ENOUGH_REPLICAS = frozenset({
    ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.NETWORK_EXCEPTION, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR})


def _verify_transactional(b, v: int, transactional_id, records, plog, topic: str, idx: int):
    """(error, message) when a transactional batch may not be appended, else None."""
    h = read_header(records)
    if not h.is_transactional or h.producer_id < 0:
        return None
    from broker.transactions.coordinator import ADD_PARTITION, DEFAULT_ERROR, GENERIC_ERROR_SUPPORTED
    err = b.txn.verify_partition(transactional_id, h.producer_id, h.producer_epoch, (topic, idx), plog,
                                 ADD_PARTITION if v >= 12 else GENERIC_ERROR_SUPPORTED if v >= 11 else DEFAULT_ERROR)
    if not err:
        return None
    if err in _RETRY_AS_NOT_ENOUGH_REPLICAS:
        return (ErrorCode.NOT_ENOUGH_REPLICAS, "Unable to verify the partition has been added to the "
                f"transaction. Underlying error: {ErrorCode(err).name}")
    if err == ErrorCode.INVALID_TXN_STATE:
        return err, "Partition was not added to the transaction"
    return err, None


def _validate_records(b, topic: str, config, records, v: int):
    """(error, message, record_errors) when the broker's record validator (``broker.extensions``:
    the Schema Registry's schema ID validation, wired in by ``hourglass.app``) refuses the batch
    of a topic whose config asks for validation, else None."""
    validator = b.extensions.record_validator
    if validator is None:
        return (ErrorCode.INVALID_RECORD, f"Record validation is on for topic {topic} but this broker "
                "runs without a record validator (no Schema Registry wired in)", [])
    refused = validator(b, topic, config, records, v)
    if refused is None:
        return None
    err, message, record_errors = refused
    return (err, message, [R.BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=m)
                           for i, m in record_errors])


@handles(0)
async def handle(ctx, req):
    b = ctx.broker
    v = ctx.api_version
    acks = req.acks
    denied = ()
    az = active(ctx)
    if az is not None:
        if v >= 3 and req.transactional_id is not None and not az.allowed("transactional_id", req.transactional_id):
            if acks == 0:
                return None
            return R(throttle_time_ms=0, responses=[R.TopicProduceResponse(
                name=td.name, topic_id=td.topic_id, partition_responses=[
                    _error(pd.index, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED) for pd in td.partition_data])
                for td in req.topic_data])
    if v >= 13:  # by topic id: resolved to the topic's name once, here
        for td in req.topic_data:
            t = b.topics.by_id(td.topic_id)
            td.name = t.name if t is not None else None
    if az is not None:
        denied = az.split("topic", [td.name for td in req.topic_data if td.name is not None])[1]
    responses = []
    for td in req.topic_data:
        if td.name is None:
            responses.append(R.TopicProduceResponse(topic_id=td.topic_id, partition_responses=[
                _error(pd.index, ErrorCode.UNKNOWN_TOPIC_ID) for pd in td.partition_data]))
            continue
        if td.name in denied:
            responses.append(R.TopicProduceResponse(name=td.name, topic_id=td.topic_id, partition_responses=[
                _error(pd.index, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for pd in td.partition_data]))
            continue
        t = b.topics.get(td.name)
        parts = []
        for pd in td.partition_data:
            idx = pd.index
            if acks not in (0, 1, -1):
                parts.append(_error(idx, ErrorCode.INVALID_REQUIRED_ACKS))
                continue
            if t is None or not 0 <= idx < t.partitions:
                parts.append(_error(idx, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            if t.internal:
                parts.append(_error(idx, ErrorCode.INVALID_TOPIC_EXCEPTION,
                                    f"Cannot append to internal topic {t.name}"))
                continue
            if pd.records is None:
                parts.append(_error(idx, ErrorCode.CORRUPT_MESSAGE, "Produce request has no records"))
                continue
            if v >= 3:
                problem = _check_v3_records(pd.records)
                if problem:
                    code, msg, why = problem
                    log.info("produce to %s-%d from %r refused: %s: %s", t.name, idx, ctx.client_id, code.name, why)
                    parts.append(_error(idx, code, msg))
                    continue
            plog = b.topics.log(t.name, idx)
            if plog.config.schema_id_validation:  # one attribute read when off
                refused = _validate_records(b, t.name, plog.config, pd.records, v)
                if refused is not None:
                    code, msg, errors = refused
                    log.info("produce to %s-%d from %r refused by schema ID validation: %s",
                             t.name, idx, ctx.client_id, msg)
                    b.metrics.error(0, int(code))
                    parts.append(_error(idx, code, msg, errors))
                    continue
            if v >= 3 and req.transactional_id is not None and b.txn is not None:
                refused = _verify_transactional(b, v, req.transactional_id, pd.records, plog, t.name, idx)
                if refused is not None:
                    code, msg = refused
                    log.info("produce to %s-%d from %r refused: %s", t.name, idx, ctx.client_id, ErrorCode(code).name)
                    b.metrics.error(0, int(code))
                    parts.append(_error(idx, code, msg))
                    continue
            try:
                info = plog.append(pd.records, from_client=True, partition_leader_epoch=LEADER_EPOCH)
            except StorageError as exc:
                code = error_code_for(exc)
                errors = [R.BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=m)
                          for i, m in getattr(exc, "record_errors", None) or []]
                msg = str(exc)
                log.info("produce to %s-%d from %r rejected: %s: %s", t.name, idx, ctx.client_id, code.name, msg)
                b.metrics.error(0, int(code))
                # Kafka's answer carries a message only for record-level refusals (its
                # RecordValidationException: the ones with record_errors); the rest, the code alone
                parts.append(_error(idx, code, msg if errors else None, errors, _log_start(plog, code)))
                continue
            except Exception as exc:  # corrupt input the validator could not classify, I/O errors
                code = error_code_for(exc)
                if code == ErrorCode.UNKNOWN_SERVER_ERROR:
                    log.exception("append to %s-%d failed", t.name, idx)
                else:
                    log.warning("append to %s-%d from %r failed: %s", t.name, idx, ctx.client_id, exc)
                parts.append(_error(idx, code, None, log_start_offset=_log_start(plog, code)))
                continue
            b.metrics.bytes_in[t.name] += len(pd.records)
            b.metrics.records_in[t.name] += info.record_count
            parts.append(P(index=idx, error_code=0, base_offset=info.base_offset,
                           log_append_time_ms=info.log_append_time, log_start_offset=info.log_start_offset))
        responses.append(R.TopicProduceResponse(name=td.name, topic_id=td.topic_id, partition_responses=parts))
    if acks == 0:
        return None
    return R(responses=responses, throttle_time_ms=0)
