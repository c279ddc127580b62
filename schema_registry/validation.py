"""Broker-side schema ID validation, as Confluent Server does it: pure decisions, no I/O.

A topic with ``confluent.value.schema.validation=true`` (or ``confluent.key...``) only takes
records whose value (key) is in the registry's wire format: magic byte 0, then a 4-byte
big-endian schema id registered under the subject that ``confluent.value.subject.name.strategy``
(``...key...``) names:

* TopicNameStrategy (the default): ``<topic>-value`` / ``<topic>-key``;
* RecordNameStrategy: the record's full name, from the schema the id names (an Avro named
  type's full name, the Protobuf message the wire's message indexes point to, a JSON
  schema's ``title``);
* TopicRecordNameStrategy: ``<topic>-<record name>``.

A null key or value passes (tombstones and keyless records are never refused, as in Confluent
Server). Only the id is checked, never the payload against the schema. One bad record refuses
its whole batch: :func:`check_records` returns ``(batch_index, message)`` per bad record, what
Produce v8+ answers as ``record_errors`` with INVALID_RECORD.
"""
from __future__ import annotations

from typing import Callable, Iterable, NamedTuple, Protocol

TOPIC_NAME = "io.confluent.kafka.serializers.subject.TopicNameStrategy"
RECORD_NAME = "io.confluent.kafka.serializers.subject.RecordNameStrategy"
TOPIC_RECORD_NAME = "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy"

MAGIC_BYTE = 0


class Rules(NamedTuple):
    """What a topic validates (from its LogConfig)."""

    key: bool
    value: bool
    key_strategy: str = TOPIC_NAME
    value_strategy: str = TOPIC_NAME


def rules_of(config) -> Rules:
    """The validation rules of a topic's LogConfig."""
    return Rules(config.confluent_key_schema_validation, config.confluent_value_schema_validation,
                 config.confluent_key_subject_name_strategy, config.confluent_value_subject_name_strategy)


class Registry(Protocol):
    """What validation asks of the registry: ids registered under a subject (soft-deleted
    versions excluded, as Confluent Server does), and the record name an id's schema gives."""

    def registered_ids(self, subject: str) -> Iterable[int]: ...


def schema_id(payload: bytes | None) -> int | None:
    """The schema id of a wire-format payload, None when it has no magic byte and id."""
    if payload is None or len(payload) < 5 or payload[0] != MAGIC_BYTE:
        return None
    return int.from_bytes(payload[1:5], "big")


def message_indexes(payload: bytes, pos: int = 5) -> tuple[list[int], int]:
    """Confluent's Protobuf message indexes at ``pos`` (after the magic byte and schema id by
    default): zigzag varints, a count then the indexes, a lone 0 meaning ``[0]``, as
    confluent-kafka's serializers write them. Returns (indexes, where the message begins);
    raises ValueError when they are truncated or the count is out of range."""

    def varint() -> int:
        nonlocal pos
        shift = result = 0
        while True:
            if pos >= len(payload) or shift > 63:
                raise ValueError("truncated message indexes")
            b = payload[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
        return (result >> 1) ^ -(result & 1)

    count = varint()
    if count == 0:
        return [0], pos
    if count < 0 or count > 64:
        raise ValueError("bad message index count")
    out = [varint() for _ in range(count)]
    return out, pos


def protobuf_message_indexes(payload: bytes) -> list[int]:
    """The message indexes after a Protobuf payload's schema id."""
    return message_indexes(payload)[0]


def record_name(parsed, payload: bytes) -> str | None:
    """The record name RecordNameStrategy names a subject after, from the schema ``parsed``
    (a ParsedSchema) and, for Protobuf, the payload's message indexes."""
    st = getattr(parsed, "schema_type", None)
    if st == "PROTOBUF":
        try:
            return parsed.record_name(protobuf_message_indexes(payload))
        except ValueError:
            return None
    if st == "JSON":
        doc = getattr(parsed, "data", None)
        title = doc.get("title") if isinstance(doc, dict) else None
        return title if isinstance(title, str) else None
    schema = getattr(parsed, "schema", None)  # AVRO: a named type's full name
    name = getattr(schema, "fullname", None)
    return name if isinstance(name, str) else None


def subject_for(topic: str, is_key: bool, strategy: str, name: Callable[[], str | None]) -> str | None:
    """The subject a key (value) of ``topic`` must be registered under; None when the strategy
    needs a record name and the schema gives none."""
    if strategy == TOPIC_NAME:
        return f"{topic}-{'key' if is_key else 'value'}"
    n = name()
    if n is None:
        return None
    return n if strategy == RECORD_NAME else f"{topic}-{n}"


def check_records(topic: str, records: Iterable[tuple[bytes | None, bytes | None]], rules: Rules,
                  registered_ids: Callable[[str], Iterable[int]],
                  name_of: Callable[[int, bytes], str | None] = lambda _id, _p: None) -> list[tuple[int, str]]:
    """``(batch_index, message)`` for every record whose key or value fails ``rules``.

    ``registered_ids(subject)`` answers the ids registered under a subject; ``name_of(id,
    payload)`` the record name of the schema an id names (None for an unknown id), asked only
    for the record-name strategies. Ids per subject are asked once per call."""
    cache: dict[str, frozenset] = {}
    errors: list[tuple[int, str]] = []
    sides = [(True, rules.key_strategy)] if rules.key else []
    if rules.value:
        sides.append((False, rules.value_strategy))
    # TopicNameStrategy has one subject per side: the 5-byte headers it accepts are known
    # up front, and a good record costs a slice and a set lookup
    accepted: dict[bool, frozenset] = {}
    for is_key, strategy in sides:
        if strategy == TOPIC_NAME:
            subject = subject_for(topic, is_key, strategy, lambda: None)
            ids = cache[subject] = frozenset(registered_ids(subject))
            accepted[is_key] = frozenset(b"\x00" + i.to_bytes(4, "big") for i in ids if 0 <= i < 2**32)
    for i, (key, value) in enumerate(records):
        for is_key, strategy in sides:
            payload = key if is_key else value
            if payload is None:
                continue
            ok = accepted.get(is_key)
            if ok is not None and payload[:5] in ok:
                continue
            what = "key" if is_key else "value"
            sid = schema_id(payload)
            if sid is None:
                errors.append((i, f"Record {what} has no schema id: the Schema Registry wire format "
                                  f"(magic byte 0 and a 4-byte schema id) is required on topic {topic}"))
                break
            subject = subject_for(topic, is_key, strategy, lambda: name_of(sid, payload))
            if subject is None:
                errors.append((i, f"Record {what} names schema id {sid}, which is not registered "
                                  f"in the Schema Registry"))
                break
            ids = cache.get(subject)
            if ids is None:
                ids = cache[subject] = frozenset(registered_ids(subject))
            if sid not in ids:
                errors.append((i, f"Record {what} names schema id {sid}, which is not registered "
                                  f"under subject {subject}"))
                break
    return errors


def rejection_message(errors: list[tuple[int, str]]) -> str:
    """The partition's error_message, worded as Kafka's record-error rejections are."""
    return (f"One or more records have been rejected due to {len(errors)} record errors in total, "
            f"and only showing the first three errors at most: {errors[:3]}")
