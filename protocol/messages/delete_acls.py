"""DeleteAcls (key 31), versions 0-3, flexible from 2.

Each filter removes every ACL binding it matches; the response lists, per filter in request
order, the bindings it removed.
- v1 adds the pattern type (KIP-290) to filters and matches; in v0 it is LITERAL (3).
- v3 allows the USER resource type (KIP-554); nothing changes on the wire.
- Kafka 4.0 dropped v0 (KIP-896); we still serve it, as its layout is v1's minus one field.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(31, "DeleteAcls", valid="0-3", flexible="2+", request=[
    F("filters", "[]DeleteAclsFilter", "0+", fields=[
        F("resource_type_filter", "int8", "0+"),
        F("resource_name_filter", "string", "0+", nullable="0+", default=None),
        F("pattern_type_filter", "int8", "1+", default=3),
        F("principal_filter", "string", "0+", nullable="0+", default=None),
        F("host_filter", "string", "0+", nullable="0+", default=None),
        F("operation", "int8", "0+"),
        F("permission_type", "int8", "0+"),
    ]),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("filter_results", "[]DeleteAclsFilterResult", "0+", fields=[
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+", default=None),
        F("matching_acls", "[]DeleteAclsMatchingAcl", "0+", fields=[
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+", default=None),
            F("resource_type", "int8", "0+"),
            F("resource_name", "string", "0+"),
            F("pattern_type", "int8", "1+", default=3),
            F("principal", "string", "0+"),
            F("host", "string", "0+"),
            F("operation", "int8", "0+"),
            F("permission_type", "int8", "0+"),
        ]),
    ]),
])

DeleteAclsRequest, DeleteAclsResponse = compile_api(API)
