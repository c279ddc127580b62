"""Heartbeat (key 12), versions 0-4, flexible from 4.

A member of a classic group proves it is alive between polls. The answer's ``error_code`` is
the coordinator's signal: REBALANCE_IN_PROGRESS (27) asks the member to rejoin,
ILLEGAL_GENERATION (22) / UNKNOWN_MEMBER_ID (25) / FENCED_INSTANCE_ID (82) fence it.
- v1+ responses carry ``throttle_time_ms``; v3+ requests ``group_instance_id``.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(12, "Heartbeat", valid="0-4", flexible="4+", request=[
    F("group_id", "string", "0+"),
    F("generation_id", "int32", "0+"),
    F("member_id", "string", "0+"),
    F("group_instance_id", "string", "3+", nullable="3+", default=None),
], response=[
    F("throttle_time_ms", "int32", "1+", ignorable=True),
    F("error_code", "int16", "0+"),
])

HeartbeatRequest, HeartbeatResponse = compile_api(API)
