"""DeleteRecords (21) v0-2: advance a partition's log start offset (Kafka's
Partition.deleteRecordsOnLeader + UnifiedLog.maybeIncrementLogStartOffset).

- offset -1 means the high watermark; an offset below 0 or above the high watermark:
  OFFSET_OUT_OF_RANGE; an offset below the current log start offset changes nothing;
- a topic whose ``cleanup.policy`` lacks ``delete`` (compact only): POLICY_VIOLATION, as
  Kafka ("Records of partition ... can not be deleted due to the configured policy");
- unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION; errors answer low watermark -1.

On success the low watermark (the new log start offset) is returned, the segments now wholly
below it are deleted right away (the retention pass Kafka would run at its next
``log.retention.check.interval.ms``, run for this partition now), and the log-start-offset
checkpoint is written so the deletion survives a crash. Later fetches below it get
OFFSET_OUT_OF_RANGE and ListOffsets earliest answers it.
"""
from __future__ import annotations

import asyncio

import logging

from broker.registry import handles
from broker.security.api_acls import active
from protocol.errors import ErrorCode
from protocol.messages.delete_records import DeleteRecordsResponse as R
from storage.errors import OffsetOutOfRangeError, StorageError

log = logging.getLogger(__name__)
INVALID_LOW_WATERMARK = -1


def delete_records(b, topic: str, partition: int, offset: int) -> tuple[int, int]:
    """(error code, low watermark) for one partition."""
    t = b.topics.get(topic)
    if t is None or not 0 <= partition < t.partitions:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, INVALID_LOW_WATERMARK
    plog = b.topics.log(topic, partition)
    if plog is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, INVALID_LOW_WATERMARK
    if not plog.config.delete:
        log.info("DeleteRecords on %s-%d refused: cleanup.policy=%s", topic, partition,
                 ",".join(plog.config.cleanup_policy))
        return ErrorCode.POLICY_VIOLATION, INVALID_LOW_WATERMARK
    try:
        low = plog.delete_records(offset)
        plog.delete_old_segments()
    except OffsetOutOfRangeError:
        return ErrorCode.OFFSET_OUT_OF_RANGE, INVALID_LOW_WATERMARK
    except StorageError as exc:
        log.warning("DeleteRecords on %s-%d failed: %s", topic, partition, exc)
        return ErrorCode.KAFKA_STORAGE_ERROR, INVALID_LOW_WATERMARK
    return 0, low


_SLICE = 64  # partitions per turn of the event loop


@handles(21)
async def handle(ctx, req):
    b = ctx.broker
    topics = []
    advanced = False
    done = 0
    az = active(ctx)
    denied = az.split("delete", [rt.name for rt in req.topics])[1] if az is not None else ()
    for rt in req.topics:
        if rt.name in denied:
            topics.append(R.DeleteRecordsTopicResult(name=rt.name, partitions=[
                R.DeleteRecordsPartitionResult(partition_index=rp.partition_index, low_watermark=-1,
                                               error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                for rp in rt.partitions]))
            continue
        parts = []
        for rp in rt.partitions:
            done += 1
            if done % _SLICE == 0:  # thousands of partitions: other connections are served between slices
                await asyncio.sleep(0)
            code, low = delete_records(b, rt.name, rp.partition_index, rp.offset)
            advanced |= code == 0
            parts.append(R.DeleteRecordsPartitionResult(partition_index=rp.partition_index,
                                                        low_watermark=low, error_code=code))
        topics.append(R.DeleteRecordsTopicResult(name=rt.name, partitions=parts))
    if advanced:
        b.logs.checkpoint()
    return R(throttle_time_ms=0, topics=topics)
