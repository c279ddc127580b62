"""PushTelemetry (key 72), version 0, flexible (KIP-714).

A client pushes its metrics, an OpenTelemetry ``MetricsData`` protobuf, compressed with
``compression_type`` (Kafka's record compression ids), quoting its instance and subscription
ids; ``terminating`` marks its last push.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(72, "PushTelemetry", valid="0", flexible="0+", request=[
    F("client_instance_id", "uuid", "0+"),
    F("subscription_id", "int32", "0+"),
    F("terminating", "bool", "0+"),
    F("compression_type", "int8", "0+"),
    F("metrics", "bytes", "0+"),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
])

PushTelemetryRequest, PushTelemetryResponse = compile_api(API)
