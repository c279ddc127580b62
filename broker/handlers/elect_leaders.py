"""ElectLeaders (43) v0-2: one broker is every partition's only replica, its preferred leader,
and already leads it, so no election is ever needed.

As Kafka 4.4's controller answers (``ReplicationControlManager.electLeaders``): a listed
partition that exists gets ELECTION_NOT_NEEDED, an unknown topic or partition
UNKNOWN_TOPIC_OR_PARTITION (with Kafka's messages); with ``topic_partitions`` null every topic
is listed with no partition (those needing no election are left out); an election type
other than 0 (preferred) and 1 (unclean) is INVALID_REQUEST on every partition and at the top.
Without ALTER on the cluster every listed partition and the top carry
CLUSTER_AUTHORIZATION_FAILED.
"""
from broker.registry import handles
from broker.security.api_acls import active
from protocol.errors import ErrorCode as E
from protocol.messages.elect_leaders import ElectLeadersResponse as R

Result = R.ReplicaElectionResult
PartitionResult = Result.PartitionResult

NOT_NEEDED = "Leader election not needed for topic partition."


def election_results(topics, partition_count, requested, error=None):
    """The results of an election over ``requested`` ([(topic, [partitions])], or None for
    all): a pure function of the topic table (``partition_count(topic)`` -> count or None).
    ``error`` = (code, message) answers every listed partition with it."""
    if requested is None:
        return [Result(topic=t, partition_result=[]) for t in topics]
    out = []
    for topic, parts in requested:
        n = partition_count(topic)
        rs = []
        for p in parts:
            if error is not None:
                code, msg = error
            elif n is None:
                code, msg = E.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic}"
            elif not 0 <= p < n:
                code, msg = E.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {topic}-{p}"
            else:
                code, msg = E.ELECTION_NOT_NEEDED, NOT_NEEDED
            rs.append(PartitionResult(partition_id=p, error_code=code, error_message=msg))
        out.append(Result(topic=topic, partition_result=rs))
    return out


@handles(43)
async def handle(ctx, req):
    topics = ctx.broker.topics
    requested = None if req.topic_partitions is None else [(t.topic, t.partitions) for t in req.topic_partitions]
    top, error = 0, None
    az = active(ctx)
    if az is not None and not az.allowed("cluster"):
        top, error = az.error("cluster"), (az.error("cluster"), None)
        requested = requested or []
    elif req.election_type not in (0, 1):
        top, error = E.INVALID_REQUEST, (E.INVALID_REQUEST, f"Unknown election type {req.election_type}")
    count = lambda name: (t.partitions if (t := topics.get(name)) is not None else None)  # noqa: E731
    return R(throttle_time_ms=0, error_code=top if ctx.api_version >= 1 else 0,  # v0 has no top-level error
             replica_election_results=election_results(list(topics.topics), count, requested, error))
