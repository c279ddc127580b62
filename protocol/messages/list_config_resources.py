"""ListConfigResources (key 74), versions 0-1, flexible from 0 (KIP-714, KIP-1142).

v0 was ListClientMetricsResources: every CLIENT_METRICS resource (subscription). v1 adds
``resource_types`` (empty: every type the broker lists) and each resource's type.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(74, "ListConfigResources", valid="0-1", flexible="0+", request=[
    F("resource_types", "[]int8", "1+"),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("config_resources", "[]ConfigResource", "0+", fields=[
        F("resource_name", "string", "0+"),
        F("resource_type", "int8", "1+", ignorable=True, default=16),
    ]),
])

ListConfigResourcesRequest, ListConfigResourcesResponse = compile_api(API)
