"""DescribeCluster (60) v0-2: this node, the cluster id, and this node as controller.

v1 adds ``endpoint_type``: 1 (brokers) is served; 2 (controllers) is answered with
MISMATCHED_ENDPOINT_TYPE as Kafka does on a broker listener. v2 asks for fenced brokers too
(KIP-1073): this node, the only one, is never fenced, so the answer is the same.
"""
from broker.registry import handles
from broker.security.acl import ResourceType
from broker.security.api_acls import operations
from protocol.errors import ErrorCode
from protocol.messages.describe_cluster import DescribeClusterResponse as R


@handles(60)
async def handle(ctx, req):
    b = ctx.broker
    if ctx.api_version >= 1 and req.endpoint_type != 1:
        return R(throttle_time_ms=0, error_code=ErrorCode.MISMATCHED_ENDPOINT_TYPE,
                 error_message="The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER",
                 endpoint_type=1, cluster_id="", controller_id=-1, brokers=[])  # Kafka: its defaults
    host, port = b.advertised(ctx.listener)
    resp = R(throttle_time_ms=0, error_code=0, error_message=None, endpoint_type=1, cluster_id=b.cluster_id,
             controller_id=b.node_id,
             brokers=[R.DescribeClusterBroker(broker_id=b.node_id, host=host, port=port, rack=None, is_fenced=False)])
    if req.include_cluster_authorized_operations:
        resp.cluster_authorized_operations = operations(ctx, ResourceType.CLUSTER)
    return resp
