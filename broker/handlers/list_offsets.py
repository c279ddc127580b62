"""ListOffsets (2) v0-11: offsets by timestamp, exactly as Kafka (see shared TEST-BAR rules).

- T >= 0: the first record, in offset order, whose timestamp is >= T (found through the time
  index by ``PartitionLog.offset_for_timestamp``); no match -> offset -1, timestamp -1,
  leader epoch -1 (a real offset with a negative timestamp makes the Java client throw).
- -1 latest (log end offset = high watermark here), -2 earliest (log start offset),
  -3 (v7+) the record with the largest timestamp, -4 (v8+) earliest local = earliest,
  -5 (v9+) latest tiered and -6 (v11+, KIP-1023) earliest pending upload: no tiered storage,
  so no offset (offset, timestamp and leader epoch -1, as Kafka answers without remote
  storage). A special target below the version's minimum, and a negative target Kafka does not
  know (-7 and below), get UNSUPPORTED_VERSION, as Kafka 4.4 answers them (v1+).
- v10 (KIP-1075) adds ``timeout_ms``, the wait for a remote-storage lookup: with no remote
  storage every answer is immediate.
- v0: up to ``max_num_offsets`` segment base offsets (newest first) from segments older than
  T, in ``old_style_offsets``.
- The same partition twice in one request: one INVALID_REQUEST entry for it, where it first
  appears (Kafka answers per partition, not per request entry).
- ACLs on: DESCRIBE on the topic, else TOPIC_AUTHORIZATION_FAILED (before anything else).
- Isolation (v2+): READ_COMMITTED answers the last stable offset for -1 and never an offset at
  or past it for a timestamp (Kafka's ``Partition.fetchOffsetForTimestamp``, whose last
  fetchable offset is the LSO under READ_COMMITTED and the high watermark otherwise).
"""
from collections import Counter

from broker.registry import handles
from broker.security.api_acls import active
from protocol.errors import ErrorCode
from protocol.messages.list_offsets import ListOffsetsResponse as R

LEADER_EPOCH = 0
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -1, -2, -3, -4, -5, -6
_MIN_VERSION = {MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, LATEST_TIERED: 9, EARLIEST_PENDING_UPLOAD: 11}
_KNOWN_TARGETS = {LATEST, EARLIEST, *_MIN_VERSION}
PR = R.ListOffsetsPartitionResponse


READ_COMMITTED = 1


def _answer(plog, ts: int, committed: bool):
    """(error, offset, timestamp, leader_epoch) for one partition."""
    last_fetchable = plog.last_stable_offset if committed else plog.high_watermark
    if ts == LATEST:
        return 0, last_fetchable, -1, LEADER_EPOCH
    if ts in (EARLIEST, EARLIEST_LOCAL):
        return 0, plog.log_start_offset, -1, LEADER_EPOCH
    if ts in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
        return 0, -1, -1, -1
    found = plog.offset_for_timestamp(ts)
    if found is None:
        return 0, -1, -1, -1
    offset, timestamp = found
    if offset >= last_fetchable:  # never answer what the client could not fetch
        return 0, -1, -1, -1
    return 0, offset, timestamp, LEADER_EPOCH


@handles(2)
async def handle(ctx, req):
    b = ctx.broker
    v = ctx.api_version
    committed = v >= 2 and req.isolation_level == READ_COMMITTED
    seen = Counter((t.name, p.partition_index) for t in req.topics for p in t.partitions)
    az = active(ctx)
    denied = az.split("topic", [t.name for t in req.topics])[1] if az is not None else ()
    topics = []
    answered = set()  # duplicated partitions already answered
    for rt in req.topics:
        if rt.name in denied:
            topics.append(R.ListOffsetsTopicResponse(name=rt.name, partitions=[
                PR(partition_index=p.partition_index, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                for p in rt.partitions]))
            continue
        t = b.topics.get(rt.name)
        parts = []
        for rp in rt.partitions:
            idx = rp.partition_index
            if seen[(rt.name, idx)] > 1:
                if (rt.name, idx) not in answered:
                    answered.add((rt.name, idx))
                    parts.append(PR(partition_index=idx, error_code=ErrorCode.INVALID_REQUEST))
                continue
            if t is None or not 0 <= idx < t.partitions:
                parts.append(PR(partition_index=idx, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            if rp.current_leader_epoch > LEADER_EPOCH:
                parts.append(PR(partition_index=idx, error_code=ErrorCode.UNKNOWN_LEADER_EPOCH))
                continue
            if 0 <= rp.current_leader_epoch < LEADER_EPOCH:
                parts.append(PR(partition_index=idx, error_code=ErrorCode.FENCED_LEADER_EPOCH))
                continue
            plog = b.topics.log(t.name, idx)
            ts = rp.timestamp
            if v == 0:
                offsets = plog.legacy_offsets_before(ts, rp.max_num_offsets)
                parts.append(PR(partition_index=idx, error_code=0, old_style_offsets=offsets))
                continue
            if ts < 0 and (ts not in _KNOWN_TARGETS or _MIN_VERSION.get(ts, 0) > v):
                parts.append(PR(partition_index=idx, error_code=ErrorCode.UNSUPPORTED_VERSION))
                continue
            err, offset, timestamp, epoch = _answer(plog, ts, committed)
            parts.append(PR(partition_index=idx, error_code=err, offset=offset, timestamp=timestamp,
                            leader_epoch=epoch if v >= 4 else -1))  # not in v1-3 (not ignorable)
        topics.append(R.ListOffsetsTopicResponse(name=rt.name, partitions=parts))
    return R(throttle_time_ms=0, topics=topics)
