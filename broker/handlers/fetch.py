"""Fetch (1) v0-18: raw record batches out, long-polling until ``min_bytes`` or ``max_wait_ms``.

Batches are returned as stored (no re-encoding) from the one holding ``fetch_offset``;
clients skip the records before it. v0-3 responses are down-converted to magic 0/1 message
sets. v13+ name topics by id (UNKNOWN_TOPIC_ID). Fetch sessions (KIP-227) are declined:
``session_id`` 0 in every answer makes clients send full fetches, which is always correct.
A parked fetch is woken by an append to any partition it reads (``broker.waiters``), never
by polling. Only the first partition with data may exceed its byte limits (KIP-74), so a
batch larger than ``max_bytes`` still makes progress.

The same partition twice in one topic entry is answered once (Kafka's insertion-ordered map:
first position, last entry's offsets). A partition refused before its read (unknown topic or
partition, leader epoch) answers offsets -1 and an empty aborted-transactions list, as Kafka.

Authorization (ACLs on): READ on each topic (TOPIC_AUTHORIZATION_FAILED; by name before the
topic's existence for v0-12, after resolving the id for v13+, where an unknown id stays
UNKNOWN_TOPIC_ID); a follower fetch (replica id >= 0) needs CLUSTER_ACTION, else every
partition answers TOPIC_AUTHORIZATION_FAILED, as Kafka's ``handleFetchRequest``.

Isolation (v4+): READ_UNCOMMITTED reads up to the high watermark and answers a null
``aborted_transactions``; READ_COMMITTED reads only below the last stable offset and lists the
aborted transactions (producer id, first offset) overlapping the returned range, from the
segments' ``.txnindex`` files, so the client drops their records itself (Kafka's
``LocalLog.addAbortedTransactions``). A parked READ_COMMITTED fetch is woken by markers too
(an LSO move notifies the partition's waiters like an append).
"""
import logging
import time

from broker.quotas.fetch_quota import FetchQuota
from broker.registry import handles
from broker.security.api_acls import active
from protocol.errors import ErrorCode
from protocol.messages.fetch import FetchResponse as R
from protocol.records.batch import iter_batch_positions
from protocol.records.legacy import down_convert
from storage.errors import OffsetOutOfRangeError, StorageError

log = logging.getLogger(__name__)
PD = R.PartitionData
AT = R.AbortedTransaction
LEADER_EPOCH = 0
READ_COMMITTED = 1


def _resolve(b, v, topics, az=None):
    """[(topic_response_key, name or None, topic_id, [(partition_request, log or error)])]"""
    out = []
    for ft in topics:
        if v >= 13:
            t = b.topics.by_id(ft.topic_id)
            missing = ErrorCode.UNKNOWN_TOPIC_ID
            name = t.name if t is not None else None
        else:
            t = b.topics.get(ft.topic)
            missing = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            name = ft.topic
        if az is not None and name is not None and not az.allowed("topic", name):
            out.append((ft, None, [(fp, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for fp in ft.partitions]))
            continue
        parts = []
        # a partition named twice is fetched once, where it first appears, with its last entry
        # (Kafka reads the request into an insertion-ordered map)
        for fp in {fp.partition: fp for fp in ft.partitions}.values():
            if t is None:
                parts.append((fp, missing))
            elif not 0 <= fp.partition < t.partitions:
                parts.append((fp, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            elif fp.current_leader_epoch > LEADER_EPOCH:
                parts.append((fp, ErrorCode.UNKNOWN_LEADER_EPOCH))
            elif 0 <= fp.current_leader_epoch < LEADER_EPOCH:
                parts.append((fp, ErrorCode.FENCED_LEADER_EPOCH))
            else:
                plog = b.topics.log(t.name, fp.partition)
                parts.append((fp, plog if plog is not None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
        out.append((ft, t, parts))
    return out


def _aborted(plog, fetch_offset: int, chunks) -> list:
    """The aborted transactions overlapping ``[fetch_offset, next offset after the data)``."""
    upper = fetch_offset
    for _, h in iter_batch_positions(chunks[-1]):
        upper = h.next_offset
    return [AT(producer_id=a.producer_id, first_offset=a.first_offset)
            for a in plog.collect_aborted_transactions(fetch_offset, upper)]


def _read_all(b, v, resolved, max_bytes: int, committed: bool):
    """One pass over every partition; returns (topic responses, bytes gathered, any error)."""
    metrics = b.metrics
    remaining = max_bytes
    total = 0
    first_data = True
    any_error = False
    responses = []
    for ft, t, parts in resolved:
        presp = []
        for fp, target in parts:
            if isinstance(target, ErrorCode):
                # refused before any read: Kafka's error partition data, an empty (not null)
                # aborted transactions list
                any_error = True
                presp.append(PD(partition_index=fp.partition, error_code=target, high_watermark=-1,
                                last_stable_offset=-1, log_start_offset=-1, records=b"",
                                aborted_transactions=[]))
                continue
            plog = target
            limit = min(fp.partition_max_bytes, remaining)
            try:
                res = plog.read(fp.fetch_offset, max(limit, 0), min_one=first_data,
                                max_offset=plog.last_stable_offset if committed else None)
            except OffsetOutOfRangeError:
                # Kafka's read result for a failed read: every offset unknown (-1), so the
                # client resets through ListOffsets rather than trusting these
                any_error = True
                presp.append(PD(partition_index=fp.partition, error_code=ErrorCode.OFFSET_OUT_OF_RANGE,
                                high_watermark=-1, last_stable_offset=-1, log_start_offset=-1, records=b"",
                                aborted_transactions=None))
                continue
            except StorageError as exc:
                any_error = True
                log.warning("fetch from %s-%d failed: %s", plog.topic, plog.partition, exc)
                presp.append(PD(partition_index=fp.partition, error_code=ErrorCode.KAFKA_STORAGE_ERROR,
                                high_watermark=-1, last_stable_offset=-1, log_start_offset=-1, records=b"",
                                aborted_transactions=None))
                continue
            size = sum(len(c) for c in res.chunks)
            if size:
                first_data = False
                remaining -= size
                total += size
                metrics.bytes_out[plog.topic] += size
                # records counted from batch headers (O(batches), no record is decoded)
                metrics.records_out[plog.topic] += sum(h.records_count for c in res.chunks
                                                       for _, h in iter_batch_positions(c))
            records = res.chunks
            if v <= 3 and size:
                records = down_convert(b"".join(res.chunks), 0 if v <= 1 else 1)
            aborted = None
            if committed:
                aborted = _aborted(plog, fp.fetch_offset, res.chunks) if size else []
            presp.append(PD(partition_index=fp.partition, error_code=0, high_watermark=plog.high_watermark,
                            last_stable_offset=plog.last_stable_offset, log_start_offset=plog.log_start_offset,
                            aborted_transactions=aborted, preferred_read_replica=-1,
                            records=records if size else b""))
        responses.append(_topic_response(v, ft, presp))
    return responses, total, any_error


def _topic_response(v, ft, presp):
    if v >= 13:
        return R.FetchableTopicResponse(topic_id=ft.topic_id, partitions=presp)
    return R.FetchableTopicResponse(topic=ft.topic, partitions=presp)


@handles(1)
async def handle(ctx, req):
    b = ctx.broker
    v = ctx.api_version
    max_bytes = req.max_bytes if v >= 3 else 0x7FFFFFFF
    committed = v >= 4 and req.isolation_level == READ_COMMITTED
    az = active(ctx)
    if az is not None:
        rs = req.replica_state if v >= 15 else None
        replica_id = (rs.replica_id if rs is not None else -1) if v >= 15 else req.replica_id
        if replica_id >= 0 and not az.allowed("follower"):
            return R(throttle_time_ms=0, error_code=0, session_id=0, responses=[
                _topic_response(v, ft, [PD(partition_index=fp.partition, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                           high_watermark=-1, last_stable_offset=-1, log_start_offset=-1,
                                           records=b"", aborted_transactions=None) for fp in ft.partitions])
                for ft in req.topics])
    quota = FetchQuota(ctx)
    max_bytes = quota.cap(max_bytes)
    resolved = _resolve(b, v, req.topics, az)
    deadline = time.monotonic() + max(req.max_wait_ms, 0) / 1000.0
    keys = [(t.name, fp.partition) for _ft, t, parts in resolved for fp, target in parts
            if t is not None and not isinstance(target, ErrorCode)]
    while True:
        responses, total, any_error = _read_all(b, v, resolved, max_bytes, committed)
        left = deadline - time.monotonic()
        if total >= req.min_bytes or any_error or left <= 0 or not keys or b._stopping:
            break
        t_wait = time.monotonic()
        await b.waiters.wait(keys, left)
        ctx.waited_s += time.monotonic() - t_wait
        # the topic may have been deleted (or its partitions changed) while parked
        resolved = _resolve(b, v, req.topics, az)
        keys = [(t.name, fp.partition) for _ft, t, parts in resolved for fp, target in parts
                if t is not None and not isinstance(target, ErrorCode)]
    # over either quota: answer at once with no data (the bytes were taken back)
    throttle = quota.throttle(ctx, total)
    if throttle > 0:
        return R(throttle_time_ms=throttle, error_code=0, session_id=0, responses=[])
    return R(throttle_time_ms=0, error_code=0, session_id=0, responses=responses)
