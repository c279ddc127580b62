"""ListConfigResources (74) v0-1: the config resources a client may describe (KIP-714, KIP-1142).

v0 (ListClientMetricsResources) lists the client metrics subscriptions; v1 lists the resources
of the types asked for, or of every listed type when none is, in Kafka 4.4's order
(``KafkaApis.handleListConfigResources``): the groups carrying configs (GROUP), the
subscriptions (CLIENT_METRICS), this node as BROKER_LOGGER and as BROKER, every topic (TOPIC);
names within a type in the order of Kafka's hash sets. A type it does not list:
UNSUPPORTED_VERSION for the whole request. DESCRIBE_CONFIGS on the cluster is required
(CLUSTER_AUTHORIZATION_FAILED).
"""
from broker.handlers.describe_configs import BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP, TOPIC
from broker.java_hash import java_hash_order
from broker.registry import handles
from broker.security.api_acls import active
from protocol.errors import ErrorCode
from protocol.messages.list_config_resources import ListConfigResourcesResponse as R

LISTED_TYPES = (GROUP, CLIENT_METRICS, BROKER_LOGGER, BROKER, TOPIC)


def config_resources(b, types) -> list[tuple[int, str]]:
    """[(type, name)] of the resources of ``types`` (a subset of LISTED_TYPES)."""
    out: list[tuple[int, str]] = []
    if GROUP in types:
        out += [(GROUP, g) for g in java_hash_order(b.group_configs.overrides)]
    if CLIENT_METRICS in types:
        out += [(CLIENT_METRICS, n) for n in java_hash_order(b.client_metrics.names())]
    if BROKER_LOGGER in types:
        out.append((BROKER_LOGGER, str(b.node_id)))
    if BROKER in types:
        out.append((BROKER, str(b.node_id)))
    if TOPIC in types:
        out += [(TOPIC, t) for t in java_hash_order(b.topics.topics)]
    return out


@handles(74)
async def handle(ctx, req):
    b = ctx.broker
    az = active(ctx)
    if az is not None and not az.allowed("cluster"):
        return R(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, config_resources=[])
    types = [CLIENT_METRICS] if ctx.api_version == 0 else (list(req.resource_types) or list(LISTED_TYPES))
    if any(t not in LISTED_TYPES for t in types):
        return R(throttle_time_ms=0, error_code=ErrorCode.UNSUPPORTED_VERSION, config_resources=[])
    return R(throttle_time_ms=0, error_code=0, config_resources=[
        R.ConfigResource(resource_name=name, resource_type=t) for t, name in config_resources(b, set(types))])
