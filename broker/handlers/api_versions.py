"""ApiVersions (18) v0-4: our supported ranges, built from the handler registry.

No tagged fields are written (features, epochs stay at their defaults): librdkafka before
2.2 (Debian's kcat) misparses a non-empty tag buffer in this response. An unknown version is
answered by the connection layer with UNSUPPORTED_VERSION and a v0 body.
"""
from broker.registry import handles, supported_ranges
from protocol.messages.api_versions import ApiVersionsResponse

_CACHE: dict = {}


# the KIP-848 APIs, advertised only while group.coordinator.rebalance.protocols lists "consumer";
# the KIP-1071 ones only while it lists "streams"
CONSUMER_PROTOCOL_APIS = frozenset({68, 69})
STREAMS_PROTOCOL_APIS = frozenset({88, 89})


@handles(18)
async def handle(ctx, req):
    protocols = ctx.broker.cfg["group.coordinator.rebalance.protocols"]
    consumer, streams = "consumer" in protocols, "streams" in protocols
    keys = _CACHE.get((consumer, streams))
    if keys is None:
        hidden = (set() if consumer else CONSUMER_PROTOCOL_APIS) | (set() if streams else STREAMS_PROTOCOL_APIS)
        keys = _CACHE[(consumer, streams)] = [
            ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, lo, hi in supported_ranges() if k not in hidden]
    return ApiVersionsResponse(error_code=0, api_keys=keys, throttle_time_ms=0)
