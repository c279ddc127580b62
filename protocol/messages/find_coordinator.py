"""FindCoordinator (key 10), versions 0-6, flexible from 3.

A client asks which broker coordinates a group (``key_type`` 0) or a transactional id
(``key_type`` 1, v1+; 2 = share group, v6+).
- v0-3: one ``key``; the response is one error/node/host/port (v1+ ``throttle_time_ms`` and
  nullable ``error_message``).
- v4+: batched: ``coordinator_keys`` in, one ``coordinators`` entry per key out, each with
  its own error; the v0-3 single fields are gone (not ignorable: a handler must answer in
  the shape of the request version).
- v5 is the same as v4 (may answer TRANSACTION_ABORTABLE); v6 adds share-group keys
  ("groupId:topicId:partition").
- COORDINATOR_NOT_AVAILABLE (15) while the coordinator's ``__consumer_offsets`` /
  ``__transaction_state`` partition is loading or missing; clients retry.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(10, "FindCoordinator", valid="0-6", flexible="3+", request=[
    F("key", "string", "0-3"),
    F("key_type", "int8", "1+", default=0),
    F("coordinator_keys", "[]string", "4+"),
], response=[
    F("throttle_time_ms", "int32", "1+", ignorable=True),
    F("error_code", "int16", "0-3"),
    F("error_message", "string", "1-3", nullable="1-3", ignorable=True),
    F("node_id", "int32", "0-3"),
    F("host", "string", "0-3"),
    F("port", "int32", "0-3"),
    F("coordinators", "[]Coordinator", "4+", fields=[
        F("key", "string", "4+"),
        F("node_id", "int32", "4+"),
        F("host", "string", "4+"),
        F("port", "int32", "4+"),
        F("error_code", "int16", "4+"),
        F("error_message", "string", "4+", nullable="4+", ignorable=True),
    ]),
])

FindCoordinatorRequest, FindCoordinatorResponse = compile_api(API)
