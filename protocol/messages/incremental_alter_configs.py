"""IncrementalAlterConfigs (key 44), versions 0-1, flexible from 1.

An admin client changes individual config keys of a resource (topic 2, broker 4, broker
logger 8) without touching the others (KIP-339).
- ``config_operation``: 0 SET, 1 DELETE (revert to default), 2 APPEND and 3 SUBTRACT (list
  configs only, e.g. ``cleanup.policy``). ``value`` is null for DELETE.
- ``validate_only``: check but change nothing.
- Response: one entry per resource with ``error_code``/``error_message`` (INVALID_CONFIG (40),
  UNKNOWN_TOPIC_OR_PARTITION (3), INVALID_REQUEST (42) for a bad operation).
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(44, "IncrementalAlterConfigs", valid="0-1", flexible="1+", request=[
    F("resources", "[]AlterConfigsResource", "0+", fields=[
        F("resource_type", "int8", "0+", map_key=True),
        F("resource_name", "string", "0+", map_key=True),
        F("configs", "[]AlterableConfig", "0+", fields=[
            F("name", "string", "0+", map_key=True),
            F("config_operation", "int8", "0+", map_key=True),
            F("value", "string", "0+", nullable="0+"),
        ]),
    ]),
    F("validate_only", "bool", "0+"),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("responses", "[]AlterConfigsResourceResponse", "0+", fields=[
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
        F("resource_type", "int8", "0+"),
        F("resource_name", "string", "0+"),
    ]),
])

IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse = compile_api(API)
