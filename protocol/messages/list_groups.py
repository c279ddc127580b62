"""ListGroups (key 16), versions 0-5, flexible from 3.

An admin client lists the groups this broker coordinates.
- v1+ ``throttle_time_ms``; v3 is the first flexible version.
- v4+: ``states_filter`` (empty = all states; matched case-insensitively by Kafka) and
  each listed group's ``group_state``.
- v5+: ``types_filter`` ("classic", "consumer"; empty = all) and each group's
  ``group_type`` (KIP-848).
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(16, "ListGroups", valid="0-5", flexible="3+", request=[
    F("states_filter", "[]string", "4+"),
    F("types_filter", "[]string", "5+"),
], response=[
    F("throttle_time_ms", "int32", "1+", ignorable=True),
    F("error_code", "int16", "0+"),
    F("groups", "[]ListedGroup", "0+", fields=[
        F("group_id", "string", "0+"),
        F("protocol_type", "string", "0+"),
        F("group_state", "string", "4+", ignorable=True),
        F("group_type", "string", "5+", ignorable=True),
    ]),
])

ListGroupsRequest, ListGroupsResponse = compile_api(API)
