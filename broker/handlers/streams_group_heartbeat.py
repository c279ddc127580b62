"""StreamsGroupHeartbeat (88) v0-1: the Kafka Streams rebalance protocol (KIP-1071).

A Streams member joins with its topology (epoch 0), keeps alive and reconciles its tasks (its
epoch), or leaves (-1, a static member -2); the group coordinator
(``broker.groups.streams_coordinator``) answers its epoch, the group's statuses and, when they
changed, its active, standby and warm-up tasks. Served only while
``group.coordinator.rebalance.protocols`` lists ``streams`` and ``streams.version`` is 1+ (at 0,
UNSUPPORTED_VERSION while advertised, as Kafka 4.4; without the protocol UNSUPPORTED_VERSION and not
advertised, as Kafka).

ACLs as Kafka's: READ on the group; with a topology, DESCRIBE on its source and internal
topics, and CREATE on the internal topics (CLUSTER or the topic) for the ones the
coordinator creates.
"""
from broker.groups.coordinator import client_host_of
from broker.groups.streams_assignment import by_subtopology
from broker.groups.streams_coordinator import ACCEPTABLE_RECOVERY_LAG, TASK_OFFSET_INTERVAL_MS
from broker.features import STREAMS_VERSION, enabled
from broker.registry import handles
from broker.security.api_acls import active
from protocol.errors import ErrorCode
from protocol.messages.streams_group_heartbeat import StreamsGroupHeartbeatResponse as R


def streams_protocol_enabled(broker) -> bool:
    """The protocol listed and streams.version 1+ (Kafka's streamsGroupSupported)."""
    return "streams" in broker.cfg["group.coordinator.rebalance.protocols"] and enabled(broker, STREAMS_VERSION)


def _error(code, message=None):
    return R(throttle_time_ms=0, error_code=code, error_message=message, member_id="", member_epoch=0,
             heartbeat_interval_ms=0, task_offset_interval_ms=0, endpoint_information_epoch=0, status=[])


def _task_ids(tasks):
    return [R.TaskIds(subtopology_id=sid, partitions=ps) for sid, ps in by_subtopology(tasks)]


@handles(88)
async def handle(ctx, req):
    b = ctx.broker
    if not streams_protocol_enabled(b):
        return _error(ErrorCode.UNSUPPORTED_VERSION)
    az = active(ctx)
    if az is not None:
        if not az.allowed("group", req.group_id):
            return _error(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        if req.topology is not None:
            names = set()
            for s in req.topology.subtopologies:
                names |= set(s.source_topics) | set(s.repartition_sink_topics)
                names |= {t.name for t in s.state_changelog_topics} | {t.name for t in s.repartition_source_topics}
            if names and az.split("topic", sorted(names))[1]:
                return _error(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    if b.share_groups is not None and req.group_id in b.share_groups.groups:  # one group id namespace
        return _error(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {req.group_id} is not a streams group.")
    res = b.groups.handle_streams_group_heartbeat(req, ctx.client_id or "", client_host_of(ctx))
    if res.error:
        return _error(res.error, res.message)
    if res.leaving:
        return R(throttle_time_ms=0, error_code=0, member_id=res.member_id, member_epoch=res.member_epoch,
                 heartbeat_interval_ms=0, task_offset_interval_ms=0, endpoint_information_epoch=0, status=[])
    tasks = res.tasks
    endpoints = None
    if res.partitions_by_endpoint is not None:
        endpoints = [R.EndpointToPartitions(
            user_endpoint=R.EndpointToPartitions.Endpoint(host=h, port=p),
            active_partitions=[R.EndpointToPartitions.TopicPartition(topic=t, partitions=ps) for t, ps in act.items()],
            standby_partitions=[R.EndpointToPartitions.TopicPartition(topic=t, partitions=ps)
                                for t, ps in stb.items()])
            for (h, p), act, stb in res.partitions_by_endpoint]
    return R(throttle_time_ms=0, error_code=0, error_message=None, member_id=res.member_id,
             member_epoch=res.member_epoch, heartbeat_interval_ms=res.heartbeat_interval_ms,
             **({"acceptable_recovery_lag": ACCEPTABLE_RECOVERY_LAG} if ctx.api_version >= 1
                else {"acceptable_recovery_lag_legacy": ACCEPTABLE_RECOVERY_LAG}),
             task_offset_interval_ms=TASK_OFFSET_INTERVAL_MS,
             status=[R.Status(status_code=c, status_detail=d) for c, d in res.status],
             active_tasks=_task_ids(tasks.active) if tasks is not None else None,
             standby_tasks=_task_ids(tasks.standby) if tasks is not None else None,
             warmup_tasks=_task_ids(tasks.warmup) if tasks is not None else None,
             endpoint_information_epoch=res.endpoint_information_epoch,
             partitions_by_user_endpoint=endpoints)
