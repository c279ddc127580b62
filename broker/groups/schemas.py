"""Kafka's record schemas of the ``__consumer_offsets`` log (group-coordinator message JSONs).

Every record key and value is an int16 schema version followed by the struct in that version:

- key version 0 or 1: ``OffsetCommitKey`` (group, topic, partition) -> ``OffsetCommitValue``
  (v0 offset/metadata/commit timestamp, v1 + expire timestamp, v3 + leader epoch without the
  expire timestamp, v4 flexible); Kafka 3.x writes key v1 and value v3 (v1 when the commit
  carried a retention time).
- key version 2: ``GroupMetadataKey`` (group) -> ``GroupMetadataValue`` (v0 base, v1 +
  rebalance timeout, v2 + current state timestamp, v3 + group instance id, v4 flexible);
  Kafka 3.x writes v3.

A null value is a tombstone: the offset (or the group) was deleted; compaction keeps the
latest record per key.
"""
from __future__ import annotations

import struct

from protocol.codec import compile_message
from protocol.errors import DecodeError
from protocol.schema import F, MessageSpec

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION_EXPIRE = 1
GROUP_METADATA_VALUE_VERSION = 3

OffsetCommitKey = compile_message(MessageSpec("OffsetCommitKey", -1, "data", "0-1", "none", [
    F("group", "string", "0+"),
    F("topic", "string", "0+"),
    F("partition", "int32", "0+"),
]))

GroupMetadataKey = compile_message(MessageSpec("GroupMetadataKey", -1, "data", "2", "none", [
    F("group", "string", "2"),
]))

OffsetCommitValue = compile_message(MessageSpec("OffsetCommitValue", -1, "data", "0-4", "4+", [
    F("offset", "int64", "0+"),
    F("leader_epoch", "int32", "3+", default=-1, ignorable=True),
    F("metadata", "string", "0+"),
    F("commit_timestamp", "int64", "0+"),
    F("expire_timestamp", "int64", "1", default=-1, ignorable=True),
]))

GroupMetadataValue = compile_message(MessageSpec("GroupMetadataValue", -1, "data", "0-4", "4+", [
    F("protocol_type", "string", "0+"),
    F("generation", "int32", "0+"),
    F("protocol", "string", "0+", nullable="0+"),
    F("leader", "string", "0+", nullable="0+"),
    F("current_state_timestamp", "int64", "2+", default=-1, ignorable=True),
    F("members", "[]MemberMetadata", "0+", fields=[
        F("member_id", "string", "0+"),
        F("group_instance_id", "string", "3+", nullable="3+", default=None, ignorable=True),
        F("client_id", "string", "0+"),
        F("client_host", "string", "0+"),
        F("rebalance_timeout", "int32", "1+", ignorable=True),
        F("session_timeout", "int32", "0+"),
        F("subscription", "bytes", "0+"),
        F("assignment", "bytes", "0+"),
    ]),
]))

_VERSION = struct.Struct(">h")


def encode_versioned(cls, obj, version: int) -> bytes:
    return _VERSION.pack(version) + cls._codec.encode(obj, version)


def decode_key(data) -> tuple[int, object]:
    """(key version, decoded key); DecodeError for an unknown version."""
    buf = memoryview(data)
    if len(buf) < 2:
        raise DecodeError("record key shorter than its version")
    (version,) = _VERSION.unpack_from(buf, 0)
    if version in (0, 1):
        key, _ = OffsetCommitKey._codec.decode(buf, version, 2)
    elif version == 2:
        key, _ = GroupMetadataKey._codec.decode(buf, version, 2)
    else:
        raise DecodeError(f"unknown __consumer_offsets key version {version}")
    return version, key


def decode_value(cls, data):
    buf = memoryview(data)
    if len(buf) < 2:
        raise DecodeError("record value shorter than its version")
    (version,) = _VERSION.unpack_from(buf, 0)
    if version < 0 or version > 4:
        raise DecodeError(f"unknown {cls.__name__} version {version}")
    value, _ = cls._codec.decode(buf, version, 2)
    return version, value


def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return encode_versioned(OffsetCommitKey, OffsetCommitKey(group=group, topic=topic, partition=partition),
                            OFFSET_COMMIT_KEY_VERSION)


def group_metadata_key(group: str) -> bytes:
    return encode_versioned(GroupMetadataKey, GroupMetadataKey(group=group), GROUP_METADATA_KEY_VERSION)
