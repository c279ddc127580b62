"""Kafka's record schemas of the ``__consumer_offsets`` log (group-coordinator message JSONs).

Every record key and value is an int16 schema version followed by the struct in that version:

- key version 0 or 1: ``OffsetCommitKey`` (group, topic, partition) -> ``OffsetCommitValue``
  (v0 offset/metadata/commit timestamp, v1 + expire timestamp, v3 + leader epoch without the
  expire timestamp, v4 flexible); Kafka 3.x writes key v1 and value v3 (v1 when the commit
  carried a retention time).
- key version 2: ``GroupMetadataKey`` (group) -> ``GroupMetadataValue`` (v0 base, v1 +
  rebalance timeout, v2 + current state timestamp, v3 + group instance id, v4 flexible);
  Kafka 3.x writes v3.

Consumer-protocol groups (KIP-848, Kafka 4.x), every value version 0 and flexible, keys
non-flexible and versioned by their record type:

- 3 ``ConsumerGroupMetadataKey`` (group) -> group epoch, tagged metadata hash (4.1+, KIP-1101);
- 4 ``ConsumerGroupPartitionMetadataKey`` (group) -> subscribed topics' metadata: written
  by 4.0 only; 4.1+ (and Hourglass) replaced it by the metadata hash and tombstone it;
- 5 ``ConsumerGroupMemberMetadataKey`` (group, member) -> client, subscription (names and
  regex), rebalance timeout, server assignor, and (tagged) the classic protocol metadata of
  a member that joined with JoinGroup;
- 6 ``ConsumerGroupTargetAssignmentMetadataKey`` (group) -> target assignment epoch;
- 7 ``ConsumerGroupTargetAssignmentMemberKey`` (group, member) -> its target partitions;
- 8 ``ConsumerGroupCurrentMemberAssignmentKey`` (group, member) -> member epoch, previous
  epoch, state (0 stable, 1 unrevoked partitions, 2 unreleased partitions), assigned
  partitions and partitions pending revocation (by topic id), each with the epoch it was
  assigned at (KIP-1251, a tagged field);
- 16 ``ConsumerGroupRegularExpressionKey`` (group, regex) -> the topics it resolved to, the
  metadata version and time of the resolution.

Streams groups (KIP-1071), the same conventions:

- 17 ``StreamsGroupMetadataKey`` (group) -> group epoch, metadata hash, (tagged) the validated
  topology epoch and the last assignment configs;
- 19 ``StreamsGroupMemberMetadataKey`` (group, member) -> instance and rack ids, client, rebalance
  timeout, topology epoch, process id, user endpoint, client tags;
- 20 ``StreamsGroupTargetAssignmentMetadataKey`` (group) -> target assignment epoch;
- 21 ``StreamsGroupTargetAssignmentMemberKey`` (group, member) -> its target active, standby and
  warm-up tasks;
- 22 ``StreamsGroupCurrentMemberAssignmentKey`` (group, member) -> member epoch, previous epoch,
  state, assigned tasks and tasks pending revocation (active ones with their assignment epochs);
- 23 ``StreamsGroupTopologyKey`` (group) -> the topology (subtopologies, their topics).

Types 9-15 (share groups) and 18 (the streams partition metadata of Kafka 4.0) are Kafka's too;
they are skipped on replay.

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

def _group_key(name: str, version: int, *members: str):
    v = str(version)
    return compile_message(MessageSpec(name, -1, "data", v, "none", [
        F("group_id", "string", v), *[F(m, "string", v) for m in members]]))


CONSUMER_GROUP_METADATA = 3
CONSUMER_GROUP_PARTITION_METADATA = 4
CONSUMER_GROUP_MEMBER_METADATA = 5
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = 6
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = 7
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8
CONSUMER_GROUP_REGULAR_EXPRESSION = 16

ConsumerGroupMetadataKey = _group_key("ConsumerGroupMetadataKey", CONSUMER_GROUP_METADATA)
ConsumerGroupPartitionMetadataKey = _group_key("ConsumerGroupPartitionMetadataKey",
                                               CONSUMER_GROUP_PARTITION_METADATA)
ConsumerGroupMemberMetadataKey = _group_key("ConsumerGroupMemberMetadataKey", CONSUMER_GROUP_MEMBER_METADATA,
                                            "member_id")
ConsumerGroupTargetAssignmentMetadataKey = _group_key("ConsumerGroupTargetAssignmentMetadataKey",
                                                      CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA)
ConsumerGroupTargetAssignmentMemberKey = _group_key("ConsumerGroupTargetAssignmentMemberKey",
                                                    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, "member_id")
ConsumerGroupCurrentMemberAssignmentKey = _group_key("ConsumerGroupCurrentMemberAssignmentKey",
                                                     CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, "member_id")
ConsumerGroupRegularExpressionKey = _group_key("ConsumerGroupRegularExpressionKey",
                                               CONSUMER_GROUP_REGULAR_EXPRESSION, "regular_expression")


def _value(name: str, fields):
    return compile_message(MessageSpec(name, -1, "data", "0", "0+", fields))


_TOPIC_PARTITIONS = [F("topic_id", "uuid", "0+"), F("partitions", "[]int32", "0+")]
# KIP-1251 (Kafka 4.2+): the epoch each partition was assigned at, parallel to ``partitions``
# (null in records of older coordinators: the member epoch then stands for every partition)
_EPOCHED_TOPIC_PARTITIONS = _TOPIC_PARTITIONS + [
    F("assignment_epochs", "[]int32", "0+", nullable="0+", default=None, tag=0, tagged_versions="0+")]

ConsumerGroupMetadataValue = _value("ConsumerGroupMetadataValue", [
    F("epoch", "int32", "0+"),
    F("metadata_hash", "int64", "0+", default=0, tag=0, tagged_versions="0+"),
    F("creation_time_ms", "int64", "0+", default=-1, tag=1, tagged_versions="0+"),
])

ConsumerGroupPartitionMetadataValue = _value("ConsumerGroupPartitionMetadataValue", [
    F("epoch", "int32", "0+"),
    F("topics", "[]TopicMetadata", "0+", fields=[
        F("topic_id", "uuid", "0+"),
        F("topic_name", "string", "0+"),
        F("num_partitions", "int32", "0+"),
        F("partition_racks", "[]PartitionMetadata", "0+", fields=[
            F("partition", "int32", "0+"),
            F("racks", "[]string", "0+"),
        ]),
    ]),
])

ConsumerGroupMemberMetadataValue = _value("ConsumerGroupMemberMetadataValue", [
    F("instance_id", "string", "0+", nullable="0+", default=None),
    F("rack_id", "string", "0+", nullable="0+", default=None),
    F("client_id", "string", "0+"),
    F("client_host", "string", "0+"),
    F("subscribed_topic_names", "[]string", "0+"),
    F("subscribed_topic_regex", "string", "0+", nullable="0+", default=None),
    F("rebalance_timeout_ms", "int32", "0+", default=-1),
    F("server_assignor", "string", "0+", nullable="0+", default=None),
    F("classic_member_metadata", "ClassicMemberMetadata", "0+", nullable="0+", default=None, tag=0,
      tagged_versions="0+", fields=[
          F("session_timeout_ms", "int32", "0+"),
          F("supported_protocols", "[]ClassicProtocol", "0+", fields=[
              F("name", "string", "0+"),
              F("metadata", "bytes", "0+"),
          ]),
      ]),
])

ConsumerGroupTargetAssignmentMetadataValue = _value("ConsumerGroupTargetAssignmentMetadataValue", [
    F("assignment_epoch", "int32", "0+"),
    F("assignment_timestamp", "int64", "0+", default=0, tag=0, tagged_versions="0+", ignorable=True),
])

ConsumerGroupTargetAssignmentMemberValue = _value("ConsumerGroupTargetAssignmentMemberValue", [
    F("topic_partitions", "[]TopicPartition", "0+", fields=_TOPIC_PARTITIONS),
])

ConsumerGroupCurrentMemberAssignmentValue = _value("ConsumerGroupCurrentMemberAssignmentValue", [
    F("member_epoch", "int32", "0+"),
    F("previous_member_epoch", "int32", "0+"),
    F("state", "int8", "0+"),
    F("assigned_partitions", "[]TopicPartitions", "0+", fields=_EPOCHED_TOPIC_PARTITIONS),
    F("partitions_pending_revocation", "[]TopicPartitions", "0+", fields=_EPOCHED_TOPIC_PARTITIONS),
])

ConsumerGroupRegularExpressionValue = _value("ConsumerGroupRegularExpressionValue", [
    F("topics", "[]string", "0+"),
    F("version", "int64", "0+"),
    F("timestamp", "int64", "0+"),
])

# record type (key version) -> (key class, value class)
CONSUMER_GROUP_RECORDS = {
    CONSUMER_GROUP_METADATA: (ConsumerGroupMetadataKey, ConsumerGroupMetadataValue),
    CONSUMER_GROUP_PARTITION_METADATA: (ConsumerGroupPartitionMetadataKey, ConsumerGroupPartitionMetadataValue),
    CONSUMER_GROUP_MEMBER_METADATA: (ConsumerGroupMemberMetadataKey, ConsumerGroupMemberMetadataValue),
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA: (ConsumerGroupTargetAssignmentMetadataKey,
                                                ConsumerGroupTargetAssignmentMetadataValue),
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER: (ConsumerGroupTargetAssignmentMemberKey,
                                              ConsumerGroupTargetAssignmentMemberValue),
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: (ConsumerGroupCurrentMemberAssignmentKey,
                                               ConsumerGroupCurrentMemberAssignmentValue),
    CONSUMER_GROUP_REGULAR_EXPRESSION: (ConsumerGroupRegularExpressionKey, ConsumerGroupRegularExpressionValue),
}
# Streams groups (KIP-1071, Kafka 4.4's StreamsGroup*.json): keys non-flexible, values version 0
# and flexible. (Type 18, StreamsGroupPartitionMetadata, existed before 4.1 only.)
STREAMS_GROUP_METADATA = 17
STREAMS_GROUP_MEMBER_METADATA = 19
STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA = 20
STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER = 21
STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT = 22
STREAMS_GROUP_TOPOLOGY = 23

StreamsGroupMetadataKey = _group_key("StreamsGroupMetadataKey", STREAMS_GROUP_METADATA)
StreamsGroupMemberMetadataKey = _group_key("StreamsGroupMemberMetadataKey", STREAMS_GROUP_MEMBER_METADATA,
                                           "member_id")
StreamsGroupTargetAssignmentMetadataKey = _group_key("StreamsGroupTargetAssignmentMetadataKey",
                                                     STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA)
StreamsGroupTargetAssignmentMemberKey = _group_key("StreamsGroupTargetAssignmentMemberKey",
                                                   STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER, "member_id")
StreamsGroupCurrentMemberAssignmentKey = _group_key("StreamsGroupCurrentMemberAssignmentKey",
                                                    STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT, "member_id")
StreamsGroupTopologyKey = _group_key("StreamsGroupTopologyKey", STREAMS_GROUP_TOPOLOGY)

_KEY_VALUE = [F("key", "string", "0+"), F("value", "string", "0+")]

StreamsGroupMetadataValue = _value("StreamsGroupMetadataValue", [
    F("epoch", "int32", "0+"),
    F("metadata_hash", "int64", "0+"),
    F("validated_topology_epoch", "int32", "0+", default=-1, tag=0, tagged_versions="0+"),
    F("last_assignment_configs", "[]LastAssignmentConfig", "0+", nullable="0+", default=None, tag=1,
      tagged_versions="0+", fields=_KEY_VALUE),
    F("stored_description_topology_epoch", "int32", "0+", default=-1, tag=2, tagged_versions="0+"),
    F("failed_description_topology_epoch", "int32", "0+", default=-1, tag=3, tagged_versions="0+"),
])

StreamsGroupMemberMetadataValue = _value("StreamsGroupMemberMetadataValue", [
    F("instance_id", "string", "0+", nullable="0+", default=None),
    F("rack_id", "string", "0+", nullable="0+", default=None),
    F("client_id", "string", "0+"),
    F("client_host", "string", "0+"),
    F("rebalance_timeout_ms", "int32", "0+", default=-1),
    F("topology_epoch", "int32", "0+"),
    F("process_id", "string", "0+"),
    F("user_endpoint", "Endpoint", "0+", nullable="0+", default=None, fields=[
        F("host", "string", "0+"),
        F("port", "uint16", "0+"),
    ]),
    F("client_tags", "[]KeyValue", "0+", fields=_KEY_VALUE),
])

StreamsGroupTargetAssignmentMetadataValue = _value("StreamsGroupTargetAssignmentMetadataValue", [
    F("assignment_epoch", "int32", "0+"),
    F("assignment_timestamp", "int64", "0+", default=0, tag=0, tagged_versions="0+", ignorable=True),
])

_TASK_IDS = [F("subtopology_id", "string", "0+"), F("partitions", "[]int32", "0+")]
# the epoch each active task was assigned at, parallel to ``partitions`` (fences zombie commits)
_EPOCHED_TASK_IDS = _TASK_IDS + [
    F("assignment_epochs", "[]int32", "0+", nullable="0+", default=None, tag=0, tagged_versions="0+")]

StreamsGroupTargetAssignmentMemberValue = _value("StreamsGroupTargetAssignmentMemberValue", [
    F(name, "[]TaskIds", "0+", fields=_TASK_IDS) for name in ("active_tasks", "standby_tasks", "warmup_tasks")
])

StreamsGroupCurrentMemberAssignmentValue = _value("StreamsGroupCurrentMemberAssignmentValue", [
    F("member_epoch", "int32", "0+"),
    F("previous_member_epoch", "int32", "0+"),
    F("state", "int8", "0+"),
    *[F(name, "[]TaskIds", "0+", fields=_EPOCHED_TASK_IDS)
      for name in ("active_tasks", "standby_tasks", "warmup_tasks", "active_tasks_pending_revocation",
                   "standby_tasks_pending_revocation", "warmup_tasks_pending_revocation")],
])

_TOPIC_INFO = [
    F("name", "string", "0+"),
    F("partitions", "int32", "0+"),
    F("replication_factor", "int16", "0+"),
    F("topic_configs", "[]TopicConfig", "0+", fields=_KEY_VALUE),
]

StreamsGroupTopologyValue = _value("StreamsGroupTopologyValue", [
    F("epoch", "int32", "0+"),
    F("subtopologies", "[]Subtopology", "0+", fields=[
        F("subtopology_id", "string", "0+"),
        F("source_topics", "[]string", "0+"),
        F("source_topic_regex", "[]string", "0+"),
        F("state_changelog_topics", "[]TopicInfo", "0+", fields=_TOPIC_INFO),
        F("repartition_sink_topics", "[]string", "0+"),
        F("repartition_source_topics", "[]TopicInfo", "0+", fields=_TOPIC_INFO),
        F("copartition_groups", "[]CopartitionGroup", "0+", fields=[
            F("source_topics", "[]int16", "0+"),
            F("source_topic_regex", "[]int16", "0+"),
            F("repartition_source_topics", "[]int16", "0+"),
        ]),
    ]),
])

STREAMS_GROUP_RECORDS = {
    STREAMS_GROUP_METADATA: (StreamsGroupMetadataKey, StreamsGroupMetadataValue),
    STREAMS_GROUP_MEMBER_METADATA: (StreamsGroupMemberMetadataKey, StreamsGroupMemberMetadataValue),
    STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA: (StreamsGroupTargetAssignmentMetadataKey,
                                               StreamsGroupTargetAssignmentMetadataValue),
    STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER: (StreamsGroupTargetAssignmentMemberKey,
                                             StreamsGroupTargetAssignmentMemberValue),
    STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT: (StreamsGroupCurrentMemberAssignmentKey,
                                              StreamsGroupCurrentMemberAssignmentValue),
    STREAMS_GROUP_TOPOLOGY: (StreamsGroupTopologyKey, StreamsGroupTopologyValue),
}

# Kafka's other record types in __consumer_offsets (share groups, the streams partition
# metadata of 4.0): skipped on replay
OTHER_GROUP_RECORD_TYPES = (frozenset(range(9, 16)) | frozenset(range(17, 32))) - frozenset(STREAMS_GROUP_RECORDS)

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
    elif version in CONSUMER_GROUP_RECORDS:
        key, _ = CONSUMER_GROUP_RECORDS[version][0]._codec.decode(buf, version, 2)
    elif version in STREAMS_GROUP_RECORDS:
        key, _ = STREAMS_GROUP_RECORDS[version][0]._codec.decode(buf, version, 2)
    else:
        raise DecodeError(f"unknown __consumer_offsets key version {version}")
    return version, key


def decode_value(cls, data):
    buf = memoryview(data)
    if len(buf) < 2:
        raise DecodeError("record value shorter than its version")
    (version,) = _VERSION.unpack_from(buf, 0)
    if version < 0 or version > cls._codec.spec.max_version:
        raise DecodeError(f"unknown {cls.__name__} version {version}")
    value, _ = cls._codec.decode(buf, version, 2)
    return version, value


def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return encode_versioned(OffsetCommitKey, OffsetCommitKey(group=group, topic=topic, partition=partition),
                            OFFSET_COMMIT_KEY_VERSION)


def group_metadata_key(group: str) -> bytes:
    return encode_versioned(GroupMetadataKey, GroupMetadataKey(group=group), GROUP_METADATA_KEY_VERSION)


def encode_record_key(record_type: int, key) -> bytes:
    """A consumer-group record key: its type as the int16 version, then the key struct."""
    return encode_versioned(CONSUMER_GROUP_RECORDS[record_type][0], key, record_type)


def encode_record_value(record_type: int, value) -> bytes | None:
    return None if value is None else encode_versioned(CONSUMER_GROUP_RECORDS[record_type][1], value, 0)


def encode_streams_record(record_type: int, key, value) -> tuple[bytes, bytes | None]:
    """A Streams group record: (key bytes, value bytes or None for a tombstone)."""
    k, v = STREAMS_GROUP_RECORDS[record_type]
    return (encode_versioned(k, key, record_type),
            None if value is None else encode_versioned(v, value, 0))
