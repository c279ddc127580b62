"""JoinGroup (key 11), versions 0-9, flexible from 6.

A member joins (or rejoins) a classic group; the coordinator answers once the rebalance
completes, the leader getting every member's ``metadata`` (for a consumer: a
``ConsumerProtocolSubscription``, see ``protocol.messages.consumer_protocol``).
- v0 has no ``rebalance_timeout_ms``: the session timeout serves as the rebalance timeout.
- v2+ responses carry ``throttle_time_ms``.
- v4+: a new member joining with an empty ``member_id`` is answered MEMBER_ID_REQUIRED (79)
  with its assigned ``member_id`` and must join again with it (v0-3 members get the id at once).
- v5+: ``group_instance_id`` (static membership), echoed per member in the response.
- v6 is the first flexible version; v7+ responses carry ``protocol_type`` and the chosen
  ``protocol_name`` becomes nullable.
- v8+: ``reason`` (KIP-800), free text for logs.
- v9+ responses: ``skip_assignment`` tells a static leader that rejoined without changes
  not to run the assignor again.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(11, "JoinGroup", valid="0-9", flexible="6+", request=[
    F("group_id", "string", "0+"),
    F("session_timeout_ms", "int32", "0+"),
    F("rebalance_timeout_ms", "int32", "1+", default=-1, ignorable=True),
    F("member_id", "string", "0+"),
    F("group_instance_id", "string", "5+", nullable="5+", default=None),
    F("protocol_type", "string", "0+"),
    F("protocols", "[]JoinGroupRequestProtocol", "0+", fields=[
        F("name", "string", "0+", map_key=True),
        F("metadata", "bytes", "0+"),
    ]),
    F("reason", "string", "8+", nullable="8+", default=None, ignorable=True),
], response=[
    F("throttle_time_ms", "int32", "2+", ignorable=True),
    F("error_code", "int16", "0+"),
    F("generation_id", "int32", "0+", default=-1),
    F("protocol_type", "string", "7+", nullable="7+", default=None, ignorable=True),
    F("protocol_name", "string", "0+", nullable="7+"),
    F("leader", "string", "0+"),
    F("skip_assignment", "bool", "9+", default=False),
    F("member_id", "string", "0+"),
    F("members", "[]JoinGroupResponseMember", "0+", fields=[
        F("member_id", "string", "0+"),
        F("group_instance_id", "string", "5+", nullable="5+", default=None, ignorable=True),
        F("metadata", "bytes", "0+"),
    ]),
])

JoinGroupRequest, JoinGroupResponse = compile_api(API)
