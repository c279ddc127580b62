"""ApiVersions (18) v0-4: our supported ranges, built from the handler registry.

No tagged fields are written (features, epochs stay at their defaults): librdkafka before
2.2 (Debian's kcat) misparses a non-empty tag buffer in this response. An unknown version is
answered by the connection layer with UNSUPPORTED_VERSION and a v0 body.
"""
from broker.registry import handles, supported_ranges
from protocol.messages.api_versions import ApiVersionsResponse

_CACHE: dict = {}


@handles(18)
async def handle(ctx, req):
    keys = _CACHE.get("keys")
    if keys is None:
        keys = _CACHE["keys"] = [ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
                                 for k, lo, hi in supported_ranges()]
    return ApiVersionsResponse(error_code=0, api_keys=keys, throttle_time_ms=0)
