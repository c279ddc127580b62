"""AlterConfigs (key 33), versions 0-2, flexible from 2.

An admin client *replaces* the whole dynamic configuration of each resource (topic 2, broker
4): keys not listed revert to their defaults. (IncrementalAlterConfigs, key 44, is the
per-key alternative modern clients use.)
- A null ``value`` deletes the key. ``validate_only``: check but change nothing.
- Response: one entry per resource with ``error_code``/``error_message``
  (INVALID_CONFIG (40), UNKNOWN_TOPIC_OR_PARTITION (3), INVALID_REQUEST (42)).
  v1 is v0 with throttling after the response.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(33, "AlterConfigs", valid="0-2", flexible="2+", request=[
    F("resources", "[]AlterConfigsResource", "0+", fields=[
        F("resource_type", "int8", "0+", map_key=True),
        F("resource_name", "string", "0+", map_key=True),
        F("configs", "[]AlterableConfig", "0+", fields=[
            F("name", "string", "0+", map_key=True),
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

AlterConfigsRequest, AlterConfigsResponse = compile_api(API)
