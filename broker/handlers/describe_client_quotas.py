"""DescribeClientQuotas (48) v0-1: the quotas of the entities a filter matches.

Needs DESCRIBE_CONFIGS on the cluster (CLUSTER_AUTHORIZATION_FAILED at the top level, as
Kafka). The filter rules and messages are Kafka 4.x's ``ClientQuotasImage.describe``: an empty
or repeated entity type, a match string where none belongs, an unknown match type, or ip
mixed with user/client-id answer INVALID_REQUEST; an unknown entity type answers
UNSUPPORTED_VERSION; entries are null on error. Entities are listed in a stable order.
"""
from broker.quotas.entities import QuotaError, matches, parse_filter
from broker.registry import handles
from protocol.errors import ErrorCode as E
from protocol.messages.describe_client_quotas import DescribeClientQuotasResponse as R


@handles(48)
async def handle(ctx, req):
    if not ctx.authz.allowed("cluster"):
        return R(error_code=E.CLUSTER_AUTHORIZATION_FAILED, error_message="Cluster authorization failed.",
                 entries=None)
    try:
        exact, typed = parse_filter((c.entity_type, c.match_type, c.match) for c in req.components)
    except QuotaError as exc:
        code = E.UNSUPPORTED_VERSION if exc.unsupported else E.INVALID_REQUEST
        return R(error_code=code, error_message=str(exc), entries=None)
    quotas = ctx.broker.quotas.store.quotas
    entries = []
    for ent in sorted(quotas, key=lambda e: [(t, n is not None, n or "") for t, n in e]):
        if matches(ent, exact, typed, req.strict):
            entries.append(R.EntryData(
                entity=[R.EntityData(entity_type=t, entity_name=n) for t, n in ent],
                values=[R.ValueData(key=k, value=v) for k, v in sorted(quotas[ent].items())]))
    return R(error_code=0, error_message="", entries=entries)  # Kafka's success: "", not null
