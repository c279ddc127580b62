"""AlterPartitionReassignments (45) v0-1 and ListPartitionReassignments (46) v0 on one broker.

The only broker a replica can be placed on is this one, already the only replica of every
partition: a reassignment onto it completes as it is made (nothing to copy), so none is ever
in progress and the list is always empty. The refusals are Kafka 4.4's controller's
(``ReplicationControlManager.alterPartitionReassignment``), messages included: an unknown
topic or partition is UNKNOWN_TOPIC_OR_PARTITION; an empty list, a broker named twice or a
broker that is not registered INVALID_REPLICA_ASSIGNMENT; cancelling (null replicas) when
nothing is pending NO_REASSIGNMENT_IN_PROGRESS. A valid list on one broker always keeps the
replication factor (1), so ``allow_replication_factor_change`` never refuses anything; it is
echoed back (v1). Without ALTER (45) / DESCRIBE (46) on the cluster: the top-level
CLUSTER_AUTHORIZATION_FAILED.
"""
from broker.registry import handles
from broker.security.api_acls import active
from protocol.errors import ErrorCode as E
from protocol.messages.alter_partition_reassignments import AlterPartitionReassignmentsResponse as AR
from protocol.messages.list_partition_reassignments import ListPartitionReassignmentsResponse as LR

TopicResponse = AR.ReassignableTopicResponse
PartitionResponse = TopicResponse.ReassignablePartitionResponse


def reassignment_error(topic_partitions: int | None, topic: str, partition: int, replicas: list[int] | None,
                       brokers: set[int]) -> tuple[int, str | None]:
    """Kafka's verdict on one partition's reassignment (pure): (error code, message)."""
    if topic_partitions is None:
        return E.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {topic}."
    if not 0 <= partition < topic_partitions:
        return E.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}:{partition}."
    if replicas is None:
        return E.NO_REASSIGNMENT_IN_PROGRESS, None
    if not replicas:
        return E.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."
    prev = None
    for r in sorted(replicas):   # Kafka walks the ids sorted: registered, then not repeated
        if r not in brokers:
            return (E.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes broker {r}, but no such broker is registered.")
        if r == prev:
            return E.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes the broker {r} more than once."
        prev = r
    return 0, None  # onto the only broker: done at once


@handles(45)
async def alter(ctx, req):
    b = ctx.broker
    # Kafka answers a request naming no topic with an empty (not null) top-level message
    resp = AR(throttle_time_ms=0, allow_replication_factor_change=req.allow_replication_factor_change,
              error_code=0, error_message=None if req.topics else "", responses=[])
    az = active(ctx)
    if az is not None and not az.allowed("cluster"):
        resp.error_code = az.error("cluster")
        resp.error_message = "Cluster authorization failed."
        return resp
    brokers = {b.node_id}
    for t in req.topics:
        info = b.topics.get(t.name)
        n = None if info is None else info.partitions
        parts = []
        for p in t.partitions:
            code, msg = reassignment_error(n, t.name, p.partition_index, p.replicas, brokers)
            parts.append(PartitionResponse(partition_index=p.partition_index, error_code=code, error_message=msg))
        resp.responses.append(TopicResponse(name=t.name, partitions=parts))
    return resp


@handles(46)
async def list_(ctx, req):
    az = active(ctx)
    if az is not None and not az.allowed("cluster"):
        return LR(throttle_time_ms=0, error_code=az.error("cluster"), error_message="Cluster authorization failed.",
                  topics=[])
    return LR(throttle_time_ms=0, error_code=0, error_message=None, topics=[])  # none is ever in progress
