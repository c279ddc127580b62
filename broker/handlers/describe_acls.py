"""DescribeAcls (29) v0-3: the ACL bindings matching one filter, grouped by resource pattern.

Needs DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED); without an authorizer,
SECURITY_DISABLED "No Authorizer is configured." (Kafka's ``AclApis``). A filter with unknown
codes answers INVALID_REQUEST. Patterns are listed in the order their first binding was
created; bindings likewise.
"""
from broker.registry import handles
from broker.security.api_acls import acl_api_refusal
from broker.security.acl import binding_filter
from protocol.errors import ErrorCode as E
from protocol.messages.describe_acls import DescribeAclsResponse as R


@handles(29)
async def handle(ctx, req):
    authz = ctx.authz
    refused = acl_api_refusal(authz)
    if refused:
        return R(error_code=refused[0], error_message=refused[1])
    flt = binding_filter(req.resource_type_filter, req.resource_name_filter, req.pattern_type_filter,
                         req.principal_filter, req.host_filter, req.operation, req.permission_type)
    if flt.pattern.is_unknown or flt.entry.is_unknown:
        return R(error_code=E.INVALID_REQUEST, error_message="Filter contain UNKNOWN elements")
    groups: dict = {}
    for b in authz.authorizer.acls(flt):
        groups.setdefault(b.pattern, []).append(R.AclDescription(
            principal=b.entry.principal, host=b.entry.host, operation=b.entry.operation,
            permission_type=b.entry.permission))
    return R(error_code=0, error_message="", resources=[  # Kafka's success message: "", not null
        R.DescribeAclsResource(resource_type=p.resource_type, resource_name=p.name, pattern_type=p.pattern_type,
                               acls=acls) for p, acls in groups.items()])
