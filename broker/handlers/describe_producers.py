"""DescribeProducers (61) v0: the active producers of partitions (KIP-664).

Per partition, from the log's producer state: id, epoch, last sequence and timestamp, the
coordinator epoch of its last marker (-1 if none) and the first offset of its open
transaction (-1 if none), the facts ``kafka-transactions.sh describe-producers`` shows and
``abort`` needs. Unknown partitions get UNKNOWN_TOPIC_OR_PARTITION.
"""
from broker.registry import handles
from broker.security.api_acls import active
from protocol.errors import ErrorCode as E
from protocol.messages.describe_producers import DescribeProducersResponse as R

PartitionResponse = R.TopicResponse.PartitionResponse


# Kafka answers an unknown topic's partitions with the error's own description
UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."


@handles(61)
async def handle(ctx, req):
    b = ctx.broker
    topics = []
    az = active(ctx)
    denied = az.split("topic", [t.name for t in req.topics])[1] if az is not None else ()
    for t in req.topics:
        if t.name in denied:
            topics.append(R.TopicResponse(name=t.name, partitions=[
                PartitionResponse(partition_index=p, error_code=E.TOPIC_AUTHORIZATION_FAILED, error_message=None)
                for p in t.partition_indexes]))
            continue
        parts = []
        for p in t.partition_indexes:
            plog = b.topics.log(t.name, p) if b.topics.get(t.name) is not None else None
            if plog is None:
                known = b.topics.get(t.name) is not None  # a known topic's missing partition: no message
                parts.append(PartitionResponse(partition_index=p, error_code=E.UNKNOWN_TOPIC_OR_PARTITION,
                                               error_message=None if known else UNKNOWN_TOPIC_MESSAGE))
                continue
            parts.append(PartitionResponse(partition_index=p, error_code=0, error_message=None, active_producers=[
                PartitionResponse.ProducerState(
                    producer_id=e.producer_id, producer_epoch=e.producer_epoch, last_sequence=e.last_sequence,
                    last_timestamp=e.last_timestamp, coordinator_epoch=e.coordinator_epoch,
                    current_txn_start_offset=e.current_txn_start_offset)
                for e in plog.producer_entries()]))
        topics.append(R.TopicResponse(name=t.name, partitions=parts))
    return R(throttle_time_ms=0, topics=topics)
