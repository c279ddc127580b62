"""SaslHandshake (17) v0-1, outside a SASL exchange.

On a SASL listener the connection's authenticator (``broker.security.authenticator``) answers
the handshake, before and after authentication (KIP-368 re-authentication). This handler is
reached only where no exchange can happen: on PLAINTEXT/SSL listeners, or after a client that
cannot re-authenticate has authenticated; Kafka's ``KafkaApis`` answers ILLEGAL_SASL_STATE there.
"""
from broker.registry import handles
from broker.security.authenticator import SASL_HANDSHAKE, illegal_sasl_state


@handles(17)
async def handle(ctx, req):
    return illegal_sasl_state(SASL_HANDSHAKE)
