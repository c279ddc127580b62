"""DeleteAcls (31) v0-3: per filter, in request order, the bindings it matched and removed;
one durable write. Needs ALTER on the cluster; without an authorizer every filter answers
SECURITY_DISABLED; a filter with unknown codes answers INVALID_REQUEST. Filters that would
delete more than 10,000 ACLs at once: every filter INVALID_REQUEST, nothing deleted (Kafka
4.4's controller bound, ``broker.controller_limits``)."""
from broker.controller_limits import TOO_MANY_ACLS_REMOVED, batch_too_large
from broker.registry import handles
from broker.security.api_acls import acl_api_refusal
from broker.security.acl import AclError, binding_filter
from protocol.errors import ErrorCode as E
from protocol.messages.delete_acls import DeleteAclsResponse as R


@handles(31)
async def handle(ctx, req):
    authz = ctx.authz
    refused = acl_api_refusal(authz)
    if refused:
        return R(filter_results=[R.DeleteAclsFilterResult(error_code=refused[0], error_message=refused[1])]
                 * len(req.filters))
    filters = [binding_filter(f.resource_type_filter, f.resource_name_filter, f.pattern_type_filter,
                              f.principal_filter, f.host_filter, f.operation, f.permission_type) for f in req.filters]
    if batch_too_large(authz.authorizer.matching_acls(filters)):
        return R(filter_results=[R.DeleteAclsFilterResult(error_code=E.INVALID_REQUEST, error_message=TOO_MANY_ACLS_REMOVED)]
                 * len(req.filters))
    out = []
    for res in authz.authorizer.delete_acls(filters):
        if isinstance(res, AclError):
            out.append(R.DeleteAclsFilterResult(error_code=E.INVALID_REQUEST, error_message=str(res)))
            continue
        out.append(R.DeleteAclsFilterResult(error_code=0, matching_acls=[R.DeleteAclsMatchingAcl(
            error_code=0, resource_type=b.pattern.resource_type, resource_name=b.pattern.name,
            pattern_type=b.pattern.pattern_type, principal=b.entry.principal, host=b.entry.host,
            operation=b.entry.operation, permission_type=b.entry.permission) for b in res]))
    return R(filter_results=out)
