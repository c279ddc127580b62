"""DescribeTopicPartitions (75) v0: topic partitions with a cursor (what Java's Admin
``describeTopics`` uses when advertised; Spark's driver calls it).

Topics are answered in name order; at most ``response_partition_limit`` partitions per
response, continuing from ``cursor`` and returning ``next_cursor`` when more remain.
"""
from broker.cluster import validate_topic_name
from broker.registry import handles
from broker.security.acl import ResourceType
from broker.security.api_acls import active, operations
from protocol.errors import ErrorCode
from protocol.messages.describe_topic_partitions import DescribeTopicPartitionsResponse as R
from protocol.schema import ZERO_UUID

LEADER_EPOCH = 0


@handles(75)
async def handle(ctx, req):
    b = ctx.broker
    az = active(ctx)
    listed = bool(req.topics)
    names = sorted({t.name for t in req.topics}) if req.topics else sorted(b.topics.topics)
    if az is not None and not listed:  # listing all: the ones the caller may not describe are left out
        names = [n for n in names if az.allowed("all_topics", n)]
    cursor = req.cursor
    if cursor is not None:
        names = [n for n in names if n >= cursor.topic_name]
    limit = max(req.response_partition_limit, 1)
    out = []
    next_cursor = None
    budget = limit
    for name in names:
        if az is not None and listed and not az.allowed("topic", name):
            out.append(R.DescribeTopicPartitionsResponseTopic(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                                              name=name, topic_id=ZERO_UUID, partitions=[]))
            continue
        t = b.topics.get(name)
        if t is None:
            code = ErrorCode.INVALID_TOPIC_EXCEPTION if validate_topic_name(name) else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            out.append(R.DescribeTopicPartitionsResponseTopic(
                error_code=code, name=name, topic_id=ZERO_UUID, partitions=[],
                topic_authorized_operations=operations(ctx, ResourceType.TOPIC, name)))  # as Kafka, errors too
            continue
        start = cursor.partition_index if cursor is not None and cursor.topic_name == name else 0
        parts = []
        p = start
        while p < t.partitions:
            if budget == 0:
                next_cursor = R.Cursor(topic_name=name, partition_index=p)
                break
            nid = b.node_id
            parts.append(R.DescribeTopicPartitionsResponsePartition(
                error_code=0, partition_index=p, leader_id=nid, leader_epoch=LEADER_EPOCH, replica_nodes=[nid],
                isr_nodes=[nid], eligible_leader_replicas=[], last_known_elr=[], offline_replicas=[]))
            budget -= 1
            p += 1
        out.append(R.DescribeTopicPartitionsResponseTopic(
            error_code=0, name=name, topic_id=t.topic_id, is_internal=t.internal, partitions=parts,
            topic_authorized_operations=operations(ctx, ResourceType.TOPIC, name)))  # always filled, as Kafka
        if next_cursor is not None:
            break
    return R(throttle_time_ms=0, topics=out, next_cursor=next_cursor)
