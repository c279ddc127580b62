"""DescribeQuorum (55) v0-2: the metadata partition ``__cluster_metadata``-0 as a combined
broker+controller that is its quorum's only voter describes itself.

The leader is this node at epoch 1, the one voter is itself (directory id zero: a voter from a
static voter list, as Kafka reports it), with no observers; the high watermark and the
voter's log end offset are the metadata offset (``ClusterMeta.metadata_offset``: the topic
records applied, Hourglass keeping no metadata log). The leader's last fetch and caught-up
times are now (v1+). v2 lists the voter's endpoints (``nodes``): Hourglass answers controller
requests on its broker listeners, so those are listed. A request naming anything but exactly
that one partition: UNKNOWN_TOPIC_OR_PARTITION on each partition it names, as Kafka's
``KafkaRaftClient`` answers. Without DESCRIBE on the cluster: CLUSTER_AUTHORIZATION_FAILED at
the top.
"""
import time

from broker.registry import handles
from broker.security.api_acls import active
from protocol.errors import ErrorCode as E
from protocol.messages.describe_quorum import DescribeQuorumResponse as R

METADATA_TOPIC = "__cluster_metadata"
LEADER_EPOCH = 1
ZERO_UUID = bytes(16)
Topic = R.TopicData
Partition = Topic.PartitionData
NOT_HOSTED = "This server does not host this topic-partition."


def _error_answer(req, v2: bool) -> R:
    msg = "" if v2 else None
    return R(error_code=0, error_message=msg, nodes=[], topics=[
        Topic(topic_name=t.topic_name, partitions=[
            Partition(partition_index=p.partition_index, error_code=E.UNKNOWN_TOPIC_OR_PARTITION,
                      error_message=NOT_HOSTED, leader_id=0, leader_epoch=0, high_watermark=0,
                      current_voters=[], observers=[]) for p in t.partitions])
        for t in req.topics])


def _endpoints(b):
    """Each broker listener's name and advertised endpoint."""
    return [(lst.name, b.advertised(lst.name)) for lst in b.cfg.listener_setup.broker]


@handles(55)
async def handle(ctx, req):
    b = ctx.broker
    v2 = ctx.api_version >= 2
    az = active(ctx)
    if az is not None and not az.allowed("cluster"):
        return R(error_code=az.error("cluster"), error_message=None, topics=[], nodes=[])
    if not (len(req.topics) == 1 and req.topics[0].topic_name == METADATA_TOPIC
            and len(req.topics[0].partitions) == 1 and req.topics[0].partitions[0].partition_index == 0):
        return _error_answer(req, v2)
    offset = b.meta.metadata_offset
    now = int(time.time() * 1000)
    me = Partition.ReplicaState(replica_id=b.node_id, replica_directory_id=ZERO_UUID, log_end_offset=offset,
                                last_fetch_timestamp=now, last_caught_up_timestamp=now)
    part = Partition(partition_index=0, error_code=0, error_message="" if v2 else None, leader_id=b.node_id,
                     leader_epoch=LEADER_EPOCH, high_watermark=offset, current_voters=[me], observers=[])
    nodes = [R.Node(node_id=b.node_id, listeners=[
        R.Node.Listener(name=name, host=host, port=port) for name, (host, port) in _endpoints(b)])] if v2 else []
    return R(error_code=0, error_message="" if v2 else None, topics=[Topic(topic_name=METADATA_TOPIC, partitions=[part])],
             nodes=nodes)
