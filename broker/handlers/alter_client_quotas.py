"""AlterClientQuotas (49) v0-1: set or remove quota values of user / client-id / ip entities.

Needs ALTER_CONFIGS on the cluster (each entity answers CLUSTER_AUTHORIZATION_FAILED). The
checks and messages are Kafka 4.x's ``ClientQuotaControlManager`` (all INVALID_REQUEST): an
empty entity, an unknown entity type, an empty name, ip combined with user or client-id, an
unresolvable ip, a key the entity cannot hold, a value <= 0 (or NaN), a fractional or too
large value of a whole-number key, a key twice in one entry ("Ignoring duplicate entity").
A quota for a user that does not exist is accepted, as in Kafka. ``validate_only`` checks
and changes nothing. Accepted changes are applied together with one durable write and take
effect at once (the quota managers re-resolve every client's bound).
"""
from broker.quotas.entities import Alteration, make_entity, plan_alterations
from broker.registry import handles
from protocol.errors import ErrorCode as E
from protocol.messages.alter_client_quotas import AlterClientQuotasResponse as R


def _entity_data(ent):
    return [R.EntityData(entity_type=t, entity_name=n) for t, n in ent]


@handles(49)
async def handle(ctx, req):
    alterations = [Alteration(make_entity((e.entity_type, e.entity_name) for e in entry.entity),
                              [(op.key, None if op.remove else op.value) for op in entry.ops])
                   for entry in req.entries]
    if not ctx.authz.allowed("cluster"):
        return R(entries=[R.EntryData(error_code=E.CLUSTER_AUTHORIZATION_FAILED,
                                      error_message="Cluster authorization failed.", entity=_entity_data(ent))
                          for ent in dict.fromkeys(a.entity for a in alterations)])
    store = ctx.broker.quotas.store
    results, changes = plan_alterations(store.quotas, alterations)
    if changes and not req.validate_only:
        store.apply(changes)
    return R(entries=[R.EntryData(error_code=0 if err is None else E.INVALID_REQUEST,
                                  error_message=None if err is None else str(err), entity=_entity_data(ent))
                      for ent, err in results.items()])
