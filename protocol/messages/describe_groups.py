"""DescribeGroups (key 15), versions 0-6, flexible from 5.

An admin client reads the state of classic groups: state name ("Stable", "Empty",
"PreparingRebalance", "CompletingRebalance", "Dead"), protocol type, chosen protocol and
members. An unknown group is answered (error 0) as state "Dead" with no members, from v6
(KIP-1043) GROUP_ID_NOT_FOUND with an ``error_message``.
- ``protocol_data`` and each member's ``member_metadata``/``member_assignment`` bytes are
  filled only while the group is Stable (empty otherwise).
- v1+ ``throttle_time_ms``; v3+ ``include_authorized_operations`` and per-group
  ``authorized_operations`` (a bit set; -2^31 = not requested/unknown).
- v4+ members carry ``group_instance_id``; v5 is the first flexible version.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(15, "DescribeGroups", valid="0-6", flexible="5+", request=[
    F("groups", "[]string", "0+"),
    F("include_authorized_operations", "bool", "3+"),
], response=[
    F("throttle_time_ms", "int32", "1+", ignorable=True),
    F("groups", "[]DescribedGroup", "0+", fields=[
        F("error_code", "int16", "0+"),
        F("error_message", "string", "6+", nullable="6+", default=None),
        F("group_id", "string", "0+"),
        F("group_state", "string", "0+"),
        F("protocol_type", "string", "0+"),
        F("protocol_data", "string", "0+"),
        F("members", "[]DescribedGroupMember", "0+", fields=[
            F("member_id", "string", "0+"),
            F("group_instance_id", "string", "4+", nullable="4+", default=None, ignorable=True),
            F("client_id", "string", "0+"),
            F("client_host", "string", "0+"),
            F("member_metadata", "bytes", "0+"),
            F("member_assignment", "bytes", "0+"),
        ]),
        F("authorized_operations", "int32", "3+", default=-2147483648),
    ]),
])

DescribeGroupsRequest, DescribeGroupsResponse = compile_api(API)
