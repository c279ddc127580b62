"""GetTelemetrySubscriptions (71) and PushTelemetry (72) v0: KIP-714 client telemetry, decided
by ``broker.client_telemetry.ClientMetricsManager`` (Kafka 4.4's ClientMetricsManager).

Kafka serves them only with an exporter plugin configured; Hourglass always keeps what clients
push (the composition root hands accepted payloads to its metrics room), so it always serves them.
"""
from broker.registry import handles
from protocol.messages.get_telemetry_subscriptions import GetTelemetrySubscriptionsResponse as G
from protocol.messages.push_telemetry import PushTelemetryResponse as P


def client_attributes(ctx) -> dict:
    """The KIP-714 selectors of the requesting client (Kafka's ClientMetricsInstanceMetadata)."""
    conn = ctx.conn
    name, version = getattr(conn, "client_software", (None, None))
    port = getattr(conn, "port", None)
    return {"client_id": ctx.client_id, "client_software_name": name, "client_software_version": version,
            "client_source_address": getattr(conn, "host", None),
            "client_source_port": None if port is None else str(port)}


@handles(71)
async def get_subscriptions(ctx, req):
    a = ctx.broker.client_telemetry.get_subscriptions(req.client_instance_id, client_attributes(ctx), ctx.conn)
    return G(throttle_time_ms=0, error_code=a.error, client_instance_id=a.instance_id,
             subscription_id=a.subscription_id, accepted_compression_types=a.compression_types,
             push_interval_ms=a.interval_ms, telemetry_max_bytes=a.max_bytes,
             delta_temporality=a.delta_temporality, requested_metrics=a.metrics)


@handles(72)
async def push(ctx, req):
    code, _message = ctx.broker.client_telemetry.push(
        req.client_instance_id, req.subscription_id, req.terminating, req.compression_type, req.metrics,
        client_attributes(ctx), ctx.conn)
    return P(throttle_time_ms=0, error_code=code)
