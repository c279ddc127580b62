"""GetTelemetrySubscriptions (key 71), version 0, flexible (KIP-714).

A client asks which of its metrics the broker wants pushed: a zero ``client_instance_id``
gets one assigned. The answer carries the subscription id to quote in PushTelemetry, the
compression types the broker accepts, the push interval, the payload bound, the temporality
and the requested metric-name prefixes (empty: none; ``*``: every metric).
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(71, "GetTelemetrySubscriptions", valid="0", flexible="0+", request=[
    F("client_instance_id", "uuid", "0+"),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("client_instance_id", "uuid", "0+"),
    F("subscription_id", "int32", "0+"),
    F("accepted_compression_types", "[]int8", "0+"),
    F("push_interval_ms", "int32", "0+"),
    F("telemetry_max_bytes", "int32", "0+"),
    F("delta_temporality", "bool", "0+"),
    F("requested_metrics", "[]string", "0+"),
])

GetTelemetrySubscriptionsRequest, GetTelemetrySubscriptionsResponse = compile_api(API)
