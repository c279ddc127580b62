"""CreateAcls (30) v0-3: one result per binding, in request order; all created with one durable
write. Needs ALTER on the cluster; without an authorizer every result is SECURITY_DISABLED.
An invalid binding answers INVALID_REQUEST with Kafka's message; an existing one succeeds.
More than 10,000 new distinct valid bindings in one request: every result POLICY_VIOLATION,
nothing created (Kafka 4.4's controller bound, ``broker.controller_limits``)."""
from broker.controller_limits import BATCH_TOO_LARGE, batch_too_large
from broker.registry import handles
from broker.security.api_acls import acl_api_refusal
from broker.security.acl import binding
from protocol.errors import ErrorCode as E
from protocol.messages.create_acls import CreateAclsResponse as R


@handles(30)
async def handle(ctx, req):
    authz = ctx.authz
    refused = acl_api_refusal(authz)
    if refused:
        return R(results=[R.AclCreationResult(error_code=refused[0], error_message=refused[1])] * len(req.creations))
    bindings = [binding(c.resource_type, c.resource_name, c.resource_pattern_type, c.principal, c.host,
                        c.operation, c.permission_type) for c in req.creations]
    if batch_too_large(authz.authorizer.new_acls(bindings)):
        return R(results=[R.AclCreationResult(error_code=E.POLICY_VIOLATION, error_message=BATCH_TOO_LARGE)]
                 * len(req.creations))
    results = authz.authorizer.create_acls(bindings)
    return R(results=[R.AclCreationResult(error_code=0, error_message="") if e is None else  # Kafka's ""
                      R.AclCreationResult(error_code=E.INVALID_REQUEST, error_message=str(e)) for e in results])
