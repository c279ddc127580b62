"""LeaveGroup (key 13), versions 0-5, flexible from 4.

A member leaves a classic group (triggering a rebalance).
- v0-2: a single ``member_id``; the response has only the top-level ``error_code``.
- v3+: batched ``members`` (member id and/or ``group_instance_id``: an admin may remove
  static members by instance id with an empty member id), answered per member in
  ``members`` with its own ``error_code``; the top-level error is for group-level failures.
- v1+ responses carry ``throttle_time_ms``; v4 is the first flexible version.
- v5+: per-member ``reason`` (KIP-800).
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(13, "LeaveGroup", valid="0-5", flexible="4+", request=[
    F("group_id", "string", "0+"),
    F("member_id", "string", "0-2"),
    F("members", "[]MemberIdentity", "3+", fields=[
        F("member_id", "string", "3+"),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
        F("reason", "string", "5+", nullable="5+", default=None, ignorable=True),
    ]),
], response=[
    F("throttle_time_ms", "int32", "1+", ignorable=True),
    F("error_code", "int16", "0+"),
    F("members", "[]MemberResponse", "3+", fields=[
        F("member_id", "string", "3+"),
        F("group_instance_id", "string", "3+", nullable="3+"),
        F("error_code", "int16", "3+"),
    ]),
])

LeaveGroupRequest, LeaveGroupResponse = compile_api(API)
