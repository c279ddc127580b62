"""ApiVersions (18) v0-5: our supported ranges, built from the handler registry.

v5 (KIP-1242): a client that names the cluster and node it means to reach (``cluster_id`` not
null) and reached another (another cluster id, or this cluster but another node id) gets
REBOOTSTRAP_REQUIRED and no API ranges, so it re-reads its bootstrap servers, as Kafka's
``KafkaApis`` answers it; a null ``cluster_id`` (the first connection) is not checked. The two
come together or not at all: a cluster id without a node id (-1), or a node id without a
cluster id, is INVALID_REQUEST (Kafka's ``ApiVersionsRequest.isValid``).

v3+ lists the features this node supports and the levels it has finalized with their epoch
(``broker.features``), in tagged fields as Kafka 4.4 does (v3 leaves out the supported
features whose range starts at 0, which v3 clients read as invalid, as Kafka does); clients read the finalized levels
(the Java client moves to the KIP-890 transaction protocol at ``transaction.version`` 2,
``Admin.describeFeatures`` and ``kafka-features describe`` print them). A level of 0 is not
listed. An unknown version is answered by the connection layer with UNSUPPORTED_VERSION and a
v0 body.
"""
import logging

from broker.features import SUPPORTED
from broker.registry import handles, supported_ranges
from protocol.errors import ErrorCode
from protocol.messages.api_versions import ApiVersionsResponse

log = logging.getLogger(__name__)

_CACHE: dict = {}


# the KIP-848 APIs, advertised only while group.coordinator.rebalance.protocols lists "consumer";
# the KIP-1071 ones only while it lists "streams"
CONSUMER_PROTOCOL_APIS = frozenset({68, 69})
STREAMS_PROTOCOL_APIS = frozenset({88, 89})


def unpaired(cluster_id: str | None, node_id: int) -> bool:
    """KIP-1242: a cluster id and a node id are given together or not at all."""
    return (cluster_id is None) != (node_id == -1)


def wrong_node(cluster_id: str | None, node_id: int, our_cluster_id: str, our_node_id: int) -> bool:
    """KIP-1242: the client named a cluster (and node) that is not this broker."""
    return cluster_id is not None and (cluster_id != our_cluster_id or node_id != our_node_id)


@handles(18)
async def handle(ctx, req):
    b = ctx.broker
    if ctx.api_version >= 5 and unpaired(req.cluster_id, req.node_id):
        log.info("ApiVersions v%d with cluster id %r and node id %d (one without the other): INVALID_REQUEST",
                 ctx.api_version, req.cluster_id, req.node_id)
        return ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST, api_keys=[], throttle_time_ms=0)
    if ctx.api_version >= 5 and wrong_node(req.cluster_id, req.node_id, b.cluster_id, b.node_id):
        log.info("ApiVersions from a client that meant cluster %r node %d (this is cluster %r node %d): "
                 "REBOOTSTRAP_REQUIRED", req.cluster_id, req.node_id, b.cluster_id, b.node_id)
        return ApiVersionsResponse(error_code=ErrorCode.REBOOTSTRAP_REQUIRED, api_keys=[], throttle_time_ms=0)
    if ctx.api_version >= 3:   # KIP-511: what KIP-714 subscriptions match on
        ctx.conn.client_software = (req.client_software_name, req.client_software_version)
    protocols = b.cfg["group.coordinator.rebalance.protocols"]
    consumer, streams = "consumer" in protocols, "streams" in protocols
    keys = _CACHE.get((consumer, streams))
    if keys is None:
        hidden = (set() if consumer else CONSUMER_PROTOCOL_APIS) | (set() if streams else STREAMS_PROTOCOL_APIS)
        keys = _CACHE[(consumer, streams)] = [
            ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, lo, hi in supported_ranges() if k not in hidden]
    resp = ApiVersionsResponse(error_code=0, api_keys=keys, throttle_time_ms=0)
    if ctx.api_version >= 3 and b.features is not None:
        resp.supported_features = [ApiVersionsResponse.SupportedFeatureKey(name=n, min_version=lo, max_version=hi)
                                   for n, (lo, hi) in SUPPORTED.items() if lo > 0 or ctx.api_version >= 4]
        resp.finalized_features = [ApiVersionsResponse.FinalizedFeatureKey(name=n, max_version_level=lvl,
                                                                           min_version_level=lvl)
                                   for n, lvl in sorted(b.features.levels.items()) if lvl]
        resp.finalized_features_epoch = b.features.epoch
    return resp
