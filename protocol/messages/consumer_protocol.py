"""Kafka's consumer embedded protocol: the bytes consumers put inside group messages.

Not an API of its own (no ``API`` here): with ``protocol_type`` "consumer", each
``JoinGroupRequest.protocols[].metadata`` (echoed to the leader in
``JoinGroupResponse.members[].metadata`` and shown by DescribeGroups as
``member_metadata``) is a ``ConsumerProtocolSubscription``, and each
``SyncGroupRequest.assignments[].assignment`` (returned to its member in
``SyncGroupResponse.assignment``, shown as ``member_assignment``) is a
``ConsumerProtocolAssignment``. The broker never needs them to run a classic group; it reads
them for OffsetDelete (GROUP_SUBSCRIBED_TO_TOPIC), for describing groups, and in tests.

Format (Kafka's ``ConsumerProtocolSubscription.json``/``ConsumerProtocolAssignment.json``,
versions 0-3, never flexible): an int16 version, then the struct in that version.
- Subscription: v0 ``topics`` + nullable ``user_data``; v1+ ``owned_partitions``
  (cooperative rebalancing); v2+ ``generation_id`` (-1 unknown); v3+ nullable ``rack_id``.
- Assignment: ``assigned_partitions`` + nullable ``user_data`` in every version (v1-3 exist
  only to follow the subscription's version).

Compatibility rule (Kafka's ``ConsumerProtocol``): future versions may only append fields,
so a version above 3 is read with the v3 layout and bytes after the known fields are
ignored; a negative version is an error. Encoding at a version above 3 writes v3.
An empty assignment (a member the leader gave nothing: SyncGroup answers zero bytes) is not
an encoding; ``assignment_partitions`` maps it to no partitions.
"""
from __future__ import annotations

import struct

from protocol.codec import CompiledMessage
from protocol.errors import DecodeError, EncodeError
from protocol.schema import F, MessageSpec

PROTOCOL_TYPE = "consumer"
LOWEST_VERSION = 0
HIGHEST_VERSION = 3

SUBSCRIPTION = CompiledMessage(MessageSpec("ConsumerProtocolSubscription", -1, "data", "0-3", "none", [
    F("topics", "[]string", "0+"),
    F("user_data", "bytes", "0+", nullable="0+", default=None),
    F("owned_partitions", "[]TopicPartition", "1+", ignorable=True, fields=[
        F("topic", "string", "1+", map_key=True),
        F("partitions", "[]int32", "1+"),
    ]),
    F("generation_id", "int32", "2+", default=-1, ignorable=True),
    F("rack_id", "string", "3+", nullable="3+", default=None, ignorable=True),
]))

ASSIGNMENT = CompiledMessage(MessageSpec("ConsumerProtocolAssignment", -1, "data", "0-3", "none", [
    F("assigned_partitions", "[]TopicPartition", "0+", fields=[
        F("topic", "string", "0+", map_key=True),
        F("partitions", "[]int32", "0+"),
    ]),
    F("user_data", "bytes", "0+", nullable="0+", default=None),
]))

ConsumerProtocolSubscription = SUBSCRIPTION.cls
ConsumerProtocolAssignment = ASSIGNMENT.cls

_VERSION = struct.Struct(">h")


def _read_version(b) -> int:
    if len(b) < 2:
        raise DecodeError("consumer protocol bytes too short for a version")
    (version,) = _VERSION.unpack_from(b, 0)
    if version < LOWEST_VERSION:
        raise DecodeError(f"unsupported consumer protocol version {version}")
    return version


def _decode(codec: CompiledMessage, b):
    version = _read_version(b)
    # Newer versions only append fields: read the known prefix, ignore the rest.
    obj, _end = codec.decode(b, min(version, HIGHEST_VERSION), 2)
    return version, obj


def _encode(codec: CompiledMessage, obj, version: int) -> bytes:
    if version < LOWEST_VERSION:
        raise EncodeError(f"unsupported consumer protocol version {version}")
    version = min(version, HIGHEST_VERSION)
    return b"".join(codec.encode_parts(obj, version, [_VERSION.pack(version)]))


def decode_subscription(b) -> tuple[int, "ConsumerProtocolSubscription"]:
    """``(version as written, subscription)``; fields the version lacks hold their defaults.
    Raises ``DecodeError`` on malformed bytes."""
    return _decode(SUBSCRIPTION, b)


def encode_subscription(obj, version: int = HIGHEST_VERSION) -> bytes:
    """Version prefix + subscription; ``EncodeError`` if a set field is not in ``version``
    (``owned_partitions``, ``generation_id``, ``rack_id`` are dropped silently, as Kafka's
    ignorable fields)."""
    return _encode(SUBSCRIPTION, obj, version)


def decode_assignment(b) -> tuple[int, "ConsumerProtocolAssignment"]:
    """``(version as written, assignment)``; raises ``DecodeError`` on malformed (or empty)
    bytes."""
    return _decode(ASSIGNMENT, b)


def encode_assignment(obj, version: int = HIGHEST_VERSION) -> bytes:
    return _encode(ASSIGNMENT, obj, version)


def subscription_topics(b) -> set[str]:
    """The topics a member's subscription bytes name (``DecodeError`` if malformed)."""
    return set(decode_subscription(b)[1].topics)


def assignment_partitions(b) -> dict[str, list[int]]:
    """Topic -> assigned partitions from a member's assignment bytes; empty bytes (no
    assignment) give ``{}``. Raises ``DecodeError`` if malformed."""
    if len(b) == 0:
        return {}
    out: dict[str, list[int]] = {}
    for tp in decode_assignment(b)[1].assigned_partitions:
        out.setdefault(tp.topic, []).extend(tp.partitions)
    return out


def subscription(topics, *, user_data=None, owned_partitions=None, generation_id: int = -1,
                 rack_id=None) -> "ConsumerProtocolSubscription":
    """Build a subscription; ``owned_partitions`` as ``{topic: [partition, ...]}``."""
    tp = ConsumerProtocolSubscription.TopicPartition
    owned = [tp(topic=t, partitions=list(ps)) for t, ps in (owned_partitions or {}).items()]
    return ConsumerProtocolSubscription(topics=list(topics), user_data=user_data, owned_partitions=owned,
                                        generation_id=generation_id, rack_id=rack_id)


def assignment(partitions: dict, *, user_data=None) -> "ConsumerProtocolAssignment":
    """Build an assignment from ``{topic: [partition, ...]}``."""
    tp = ConsumerProtocolAssignment.TopicPartition
    return ConsumerProtocolAssignment(
        assigned_partitions=[tp(topic=t, partitions=list(ps)) for t, ps in partitions.items()],
        user_data=user_data)
