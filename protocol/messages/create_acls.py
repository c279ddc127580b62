"""CreateAcls (key 30), versions 0-3, flexible from 2.

Each creation is one ACL binding (resource pattern + access control entry); the response has
one result per creation, in request order.
- v1 adds ``resource_pattern_type`` (KIP-290; LITERAL 3 or PREFIXED 4 are the only ones a
  binding may have); in v0 it is LITERAL, the field's default.
- v3 allows the USER resource type (KIP-554); nothing changes on the wire.
- Kafka 4.0 dropped v0 (KIP-896); we still serve it, as its layout is v1's minus one field.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(30, "CreateAcls", valid="0-3", flexible="2+", request=[
    F("creations", "[]AclCreation", "0+", fields=[
        F("resource_type", "int8", "0+"),
        F("resource_name", "string", "0+"),
        F("resource_pattern_type", "int8", "1+", default=3),
        F("principal", "string", "0+"),
        F("host", "string", "0+"),
        F("operation", "int8", "0+"),
        F("permission_type", "int8", "0+"),
    ]),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("results", "[]AclCreationResult", "0+", fields=[
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+", default=None),
    ]),
])

CreateAclsRequest, CreateAclsResponse = compile_api(API)
