"""Metadata (3) v0-12: this node as the only broker, controller and leader of everything.

Topic lists: v0 empty list = all topics; v1+ null = all topics, empty = none. Unknown topics
are auto-created when ``auto.create.topics.enable`` is on and the request allows it (always
for v0-3, ``allow_auto_topic_creation`` for v4+); otherwise UNKNOWN_TOPIC_OR_PARTITION.
v10+ may name a topic by id only (UNKNOWN_TOPIC_ID when we have none such); v12 returns a
null name then. Leader epoch is 0: one node, one epoch.
"""
from broker.cluster import validate_topic_name
from broker.registry import handles
from protocol.errors import ErrorCode
from protocol.messages.metadata import MetadataResponse as R
from protocol.schema import ZERO_UUID

LEADER_EPOCH = 0


def topic_entry(broker, t, version: int):
    nid = broker.node_id
    parts = [R.MetadataResponsePartition(error_code=0, partition_index=p, leader_id=nid,
                                         leader_epoch=LEADER_EPOCH, replica_nodes=[nid], isr_nodes=[nid],
                                         offline_replicas=[])
             for p in range(t.partitions)]
    return R.MetadataResponseTopic(error_code=0, name=t.name, topic_id=t.topic_id,
                                   is_internal=t.internal, partitions=parts)


def brokers(broker, listener=None):
    host, port = broker.advertised(listener)
    return [R.MetadataResponseBroker(node_id=broker.node_id, host=host, port=port, rack=None)]


@handles(3)
async def handle(ctx, req):
    b = ctx.broker
    v = ctx.api_version
    topics_mgr = b.topics
    out = []
    if req.topics is None or (v == 0 and not req.topics):
        for t in list(topics_mgr.topics.values()):
            out.append(topic_entry(b, t, v))
    else:
        allow = b.cfg["auto.create.topics.enable"] and (v < 4 or req.allow_auto_topic_creation)
        for rt in req.topics:
            name = rt.name
            if name is None and v < 12:
                # v10-11 requests may carry a null name but their responses cannot (Kafka:
                # InvalidRequestException, "topic names can not be null in these versions")
                out.append(R.MetadataResponseTopic(error_code=ErrorCode.INVALID_REQUEST, name="",
                                                   topic_id=rt.topic_id, partitions=[]))
                continue
            if name is None:
                t = topics_mgr.by_id(rt.topic_id) if rt.topic_id != ZERO_UUID else None
                if t is None:
                    out.append(R.MetadataResponseTopic(error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None,
                                                       topic_id=rt.topic_id, partitions=[]))
                    continue
                out.append(topic_entry(b, t, v))
                continue
            t = topics_mgr.get(name)
            if t is None and allow:
                t = topics_mgr.maybe_auto_create(name)
            if t is None:
                code = ErrorCode.INVALID_TOPIC_EXCEPTION if validate_topic_name(name) else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                out.append(R.MetadataResponseTopic(error_code=code, name=name, topic_id=ZERO_UUID, partitions=[]))
                continue
            out.append(topic_entry(b, t, v))
    return R(throttle_time_ms=0, brokers=brokers(b, ctx.listener), cluster_id=b.cluster_id, controller_id=b.node_id,
             topics=out)
