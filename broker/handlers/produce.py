"""Produce (0) v0-11: append client record batches to partition logs.

v0-2 carry legacy message sets (magic 0/1, up-converted to magic 2 by the validator); v3+
record batches. acks: 0 (no response at all), 1 and -1 (one node: the leader's append is
the whole ISR; ``flush.messages``/``flush.ms`` decide when it is fsynced). Per partition:
UNKNOWN_TOPIC_OR_PARTITION, CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, INVALID_TIMESTAMP (with
``record_errors`` and ``error_message`` from v8), INVALID_RECORD, OUT_OF_ORDER_SEQUENCE_NUMBER.
A duplicate idempotent batch gets the offsets of the original append, not a new one.
"""
import logging

from broker.errors import error_code_for
from broker.registry import handles
import struct

from protocol.errors import ErrorCode
from protocol.records.batch import LOG_OVERHEAD, peek_magic
from protocol.messages.produce import ProduceResponse as R
from storage.errors import StorageError

log = logging.getLogger(__name__)
P = R.PartitionProduceResponse
_LEN = struct.Struct(">i")
LEADER_EPOCH = 0  # one node, one epoch: batches are stamped like Kafka's leader does


def _error(index: int, code: int, message: str | None = None, record_errors=None) -> "P":
    return P(index=index, error_code=code, base_offset=-1, log_append_time_ms=-1, log_start_offset=-1,
             error_message=message, record_errors=record_errors or [])


def _check_v3_records(records) -> str | None:
    """Kafka's ProduceRequest.validateRecords: v3+ carry exactly one magic-2 batch."""
    if len(records) < LOG_OVERHEAD + 5:
        return "Produce request records are too short to hold a record batch"
    if peek_magic(records) != 2:
        return "Produce requests with version 3 or later must contain record batches with magic version 2"
    (length,) = _LEN.unpack_from(records, 8)
    if LOG_OVERHEAD + length < len(records):  # a torn batch is the validator's CORRUPT_MESSAGE
        return "Produce requests with version 3 or later must contain exactly one record batch"
    return None


@handles(0)
async def handle(ctx, req):
    b = ctx.broker
    v = ctx.api_version
    acks = req.acks
    responses = []
    for td in req.topic_data:
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
                    parts.append(_error(idx, ErrorCode.INVALID_RECORD, problem))
                    continue
            plog = b.topics.log(t.name, idx)
            try:
                info = plog.append(pd.records, from_client=True, partition_leader_epoch=LEADER_EPOCH)
            except StorageError as exc:
                code = error_code_for(exc)
                errors = [R.BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=m)
                          for i, m in getattr(exc, "record_errors", None) or []]
                msg = str(exc)
                log.info("produce to %s-%d from %r rejected: %s: %s", t.name, idx, ctx.client_id, code.name, msg)
                b.metrics.error(0, int(code))
                parts.append(_error(idx, code, msg, errors))
                continue
            except Exception as exc:  # corrupt input the validator could not classify, I/O errors
                code = error_code_for(exc)
                if code == ErrorCode.UNKNOWN_SERVER_ERROR:
                    log.exception("append to %s-%d failed", t.name, idx)
                else:
                    log.warning("append to %s-%d from %r failed: %s", t.name, idx, ctx.client_id, exc)
                parts.append(_error(idx, code, str(exc)))
                continue
            b.metrics.bytes_in[t.name] += len(pd.records)
            b.metrics.records_in[t.name] += info.record_count
            parts.append(P(index=idx, error_code=0, base_offset=info.base_offset,
                           log_append_time_ms=info.log_append_time, log_start_offset=info.log_start_offset))
        responses.append(R.TopicProduceResponse(name=td.name, partition_responses=parts))
    if acks == 0:
        return None
    return R(responses=responses, throttle_time_ms=0)
