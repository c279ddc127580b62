"""SyncGroup (key 14), versions 0-5, flexible from 4.

After JoinGroup, the leader sends every member's ``assignment`` (for a consumer: a
``ConsumerProtocolAssignment``, see ``protocol.messages.consumer_protocol``); followers send
an empty list. Each member is answered with its own assignment bytes (empty when the leader
gave it none).
- v1+ responses carry ``throttle_time_ms``; v3+ requests ``group_instance_id``.
- v4 is the first flexible version.
- v5+: the request carries ``protocol_type``/``protocol_name``; a mismatch with the group's
  is INCONSISTENT_GROUP_PROTOCOL (23). The response echoes both (KIP-559).
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(14, "SyncGroup", valid="0-5", flexible="4+", request=[
    F("group_id", "string", "0+"),
    F("generation_id", "int32", "0+"),
    F("member_id", "string", "0+"),
    F("group_instance_id", "string", "3+", nullable="3+", default=None),
    F("protocol_type", "string", "5+", nullable="5+", default=None, ignorable=True),
    F("protocol_name", "string", "5+", nullable="5+", default=None, ignorable=True),
    F("assignments", "[]SyncGroupRequestAssignment", "0+", fields=[
        F("member_id", "string", "0+"),
        F("assignment", "bytes", "0+"),
    ]),
], response=[
    F("throttle_time_ms", "int32", "1+", ignorable=True),
    F("error_code", "int16", "0+"),
    F("protocol_type", "string", "5+", nullable="5+", default=None, ignorable=True),
    F("protocol_name", "string", "5+", nullable="5+", default=None, ignorable=True),
    F("assignment", "bytes", "0+"),
])

SyncGroupRequest, SyncGroupResponse = compile_api(API)
