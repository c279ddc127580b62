"""Metadata (3) v0-12: this node as the only broker, controller and leader of everything.

Topic lists: v0 empty list = all topics; v1+ null = all topics, empty = none. Unknown topics
are auto-created when ``auto.create.topics.enable`` is on and the request allows it (always
for v0-3, ``allow_auto_topic_creation`` for v4+); otherwise UNKNOWN_TOPIC_OR_PARTITION.
v10+ may name a topic by id only (UNKNOWN_TOPIC_ID when we have none such); v12 returns a
null name then. Leader epoch is 0: one node, one epoch.

ACLs on (Kafka's ``handleTopicMetadataRequest``): listing all topics leaves out those the
caller may not DESCRIBE; a listed topic it may not DESCRIBE answers TOPIC_AUTHORIZATION_FAILED
(existing or not; by id: a null name); auto-creating needs CREATE on the cluster or on the
topic, else TOPIC_AUTHORIZATION_FAILED. ``topic_authorized_operations`` (v8+) and
``cluster_authorized_operations`` (v8-10) are filled when asked for.
"""
import asyncio

from broker.cluster import validate_topic_name
from broker.registry import handles
from broker.security.acl import ResourceType
from broker.security.api_acls import active, operations
from protocol.errors import ErrorCode
from protocol.messages.metadata import MetadataResponse as R
from protocol.schema import ZERO_UUID

LEADER_EPOCH = 0
# topics answered per turn of the event loop: all topics of a cluster of 5,000 (20,000
# partitions, their authorized operations asked for) held the loop ~0.5 s in one piece
_SLICE = 256


def topic_entry(broker, t, version: int):
    nid = broker.node_id
    # The partition entries depend only on the partition count and this node: built once per
    # topic and shared by every response (read-only to the encoder). Rebuilding 20,000 of
    # them was a third of answering Metadata for all topics.
    cached = getattr(t, "_md_partitions", None)
    if cached is None or cached[0] != (t.partitions, nid):
        parts = [R.MetadataResponsePartition(error_code=0, partition_index=p, leader_id=nid,
                                             leader_epoch=LEADER_EPOCH, replica_nodes=[nid], isr_nodes=[nid],
                                             offline_replicas=[])
                 for p in range(t.partitions)]
        cached = t._md_partitions = ((t.partitions, nid), parts)
    parts = cached[1]
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
    az = active(ctx)
    with_ops = v >= 8 and req.include_topic_authorized_operations

    def entry(t):
        e = topic_entry(b, t, v)
        if with_ops:
            e.topic_authorized_operations = operations(ctx, ResourceType.TOPIC, t.name)
        return e

    def denied(name, topic_id=ZERO_UUID):
        return R.MetadataResponseTopic(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=name,
                                       topic_id=topic_id, is_internal=False, partitions=[])
    out = []
    if req.topics is None or (v == 0 and not req.topics):
        for i, t in enumerate(list(topics_mgr.topics.values())):
            if i and i % _SLICE == 0:  # other connections are served between slices
                await asyncio.sleep(0)
            if az is None or az.allowed("all_topics", t.name):
                out.append(entry(t))
    else:
        allow = b.cfg["auto.create.topics.enable"] and (v < 4 or req.allow_auto_topic_creation)
        for i, rt in enumerate(req.topics):
            if i and i % _SLICE == 0:
                await asyncio.sleep(0)
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
                if az is not None and not az.allowed("topic", t.name):
                    out.append(denied(None, rt.topic_id))  # ids are not secret, names are
                    continue
                out.append(entry(t))
                continue
            if az is not None and not az.allowed("topic", name):
                out.append(denied(name))
                continue
            t = topics_mgr.get(name)
            if t is None and allow:
                if az is not None and not (az.allowed("create_cluster") or az.allowed("create", name)):
                    out.append(denied(name))
                    continue
                t = topics_mgr.maybe_auto_create(name)
            if t is None:
                code = ErrorCode.INVALID_TOPIC_EXCEPTION if validate_topic_name(name) else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                e = R.MetadataResponseTopic(error_code=code, name=name, topic_id=ZERO_UUID, partitions=[])
                if with_ops:  # Kafka fills them for unknown and invalid names too
                    e.topic_authorized_operations = operations(ctx, ResourceType.TOPIC, name)
                out.append(e)
                continue
            out.append(entry(t))
    resp = R(throttle_time_ms=0, brokers=brokers(b, ctx.listener), cluster_id=b.cluster_id, controller_id=b.node_id,
             topics=out)
    if 8 <= v <= 10 and req.include_cluster_authorized_operations:
        resp.cluster_authorized_operations = operations(ctx, ResourceType.CLUSTER)
    return resp
