"""SaslAuthenticate (36) v0-2, outside a SASL exchange: ILLEGAL_SASL_STATE ("SaslAuthenticate
request received after successful authentication"), as Kafka's ``KafkaApis`` answers. Inside
an exchange the connection's authenticator handles the tokens."""
from broker.registry import handles
from broker.security.authenticator import SASL_AUTHENTICATE, illegal_sasl_state


@handles(36)
async def handle(ctx, req):
    return illegal_sasl_state(SASL_AUTHENTICATE)
