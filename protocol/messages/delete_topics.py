"""DeleteTopics (key 20), versions 0-6, flexible from 4.

An admin client asks for topics to be deleted.
- v0-5 name the topics in ``topic_names``; v6+ use ``topics`` (``DeleteTopicState``: a
  nullable ``name`` or a ``topic_id``; exactly one is set — name null means "by id", id all
  zero means "by name"). A handler should read whichever the version carries.
- ``timeout_ms`` bounds how long the broker may wait for the deletions to complete.
- Response: v1+ ``throttle_time_ms``; v3+ may answer TOPIC_DELETION_DISABLED (73); v5+ per-topic
  ``error_message`` and THROTTLING_QUOTA_EXCEEDED (KIP-599); v6+ echo ``topic_id`` and allow a
  null ``name`` (UNKNOWN_TOPIC_ID (100) for an id we do not know).
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(20, "DeleteTopics", valid="0-6", flexible="4+", request=[
    F("topics", "[]DeleteTopicState", "6+", fields=[
        F("name", "string", "6+", nullable="6+", default=None),
        F("topic_id", "uuid", "6+"),
    ]),
    F("topic_names", "[]string", "0-5", ignorable=True),
    F("timeout_ms", "int32", "0+"),
], response=[
    F("throttle_time_ms", "int32", "1+", ignorable=True),
    F("responses", "[]DeletableTopicResult", "0+", fields=[
        F("name", "string", "0+", nullable="6+", map_key=True),
        F("topic_id", "uuid", "6+", ignorable=True),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "5+", nullable="5+", default=None, ignorable=True),
    ]),
])

DeleteTopicsRequest, DeleteTopicsResponse = compile_api(API)
