"""DescribeAcls (key 29), versions 0-3, flexible from 2.

One filter in, the matching ACL bindings out, grouped by resource pattern.
- v1 adds ``pattern_type_filter`` (KIP-290); in v0 it is LITERAL (3), the field's default.
  Pattern types: 0 UNKNOWN, 1 ANY, 2 MATCH, 3 LITERAL, 4 PREFIXED.
- v3 allows the USER resource type (KIP-554); nothing changes on the wire.
- Kafka 4.0 dropped v0 (KIP-896); we still serve it, as its layout is v1's minus one field.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(29, "DescribeAcls", valid="0-3", flexible="2+", request=[
    F("resource_type_filter", "int8", "0+"),
    F("resource_name_filter", "string", "0+", nullable="0+", default=None),
    F("pattern_type_filter", "int8", "1+", default=3),
    F("principal_filter", "string", "0+", nullable="0+", default=None),
    F("host_filter", "string", "0+", nullable="0+", default=None),
    F("operation", "int8", "0+"),
    F("permission_type", "int8", "0+"),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("error_message", "string", "0+", nullable="0+", default=None),
    F("resources", "[]DescribeAclsResource", "0+", fields=[
        F("resource_type", "int8", "0+"),
        F("resource_name", "string", "0+"),
        F("pattern_type", "int8", "1+", default=3),
        F("acls", "[]AclDescription", "0+", fields=[
            F("principal", "string", "0+"),
            F("host", "string", "0+"),
            F("operation", "int8", "0+"),
            F("permission_type", "int8", "0+"),
        ]),
    ]),
])

DescribeAclsRequest, DescribeAclsResponse = compile_api(API)
