"""ApiVersions (18) v0-4: our supported ranges, built from the handler registry.

No tagged fields are written (features, epochs stay at their defaults): librdkafka before
2.2 (Debian's kcat) misparses a non-empty tag buffer in this response. An unknown version is
answered by the connection layer with UNSUPPORTED_VERSION and a v0 body.
"""
from broker.registry import handles, supported_ranges
from protocol.messages.api_versions import ApiVersionsResponse

_CACHE: dict = {}


# the KIP-848 APIs, advertised only while group.coordinator.rebalance.protocols lists "consumer"
CONSUMER_PROTOCOL_APIS = frozenset({68, 69})


@handles(18)
async def handle(ctx, req):
    consumer = "consumer" in ctx.broker.cfg["group.coordinator.rebalance.protocols"]
    keys = _CACHE.get(consumer)
    if keys is None:
        keys = _CACHE[consumer] = [ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
                                   for k, lo, hi in supported_ranges()
                                   if consumer or k not in CONSUMER_PROTOCOL_APIS]
    return ApiVersionsResponse(error_code=0, api_keys=keys, throttle_time_ms=0)
