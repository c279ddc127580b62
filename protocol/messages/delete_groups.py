"""DeleteGroups (key 42), versions 0-3, flexible from 2.

An admin client deletes groups and their committed offsets. Only a group with no members
can be deleted: a live group answers NON_EMPTY_GROUP (68); an unknown one
GROUP_ID_NOT_FOUND (69). One result per requested group; v3 adds its ``error_message``
(null when there is none).
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(42, "DeleteGroups", valid="0-3", flexible="2+", request=[
    F("groups_names", "[]string", "0+"),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("results", "[]DeletableGroupResult", "0+", fields=[
        F("group_id", "string", "0+", map_key=True),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "3+", nullable="3+", default=None, ignorable=True),
    ]),
])

DeleteGroupsRequest, DeleteGroupsResponse = compile_api(API)
