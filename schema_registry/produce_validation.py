"""Schema ID validation of produced records (Confluent Server's
``confluent.{key,value}.schema.validation`` topic configs), as the broker's record validator
(``broker.extensions``; wired in by ``hourglass.app``). The rules are ``schema_registry.validation``'s;
this fetches the batch's records and the registry serving on this broker.

Answers None (accepted) or ``(error_code, message, [(batch_index, message), ...])``: the produce
handler refuses the whole batch with it, appending nothing.
"""
from __future__ import annotations

from protocol.errors import CorruptRecordError, ErrorCode
from protocol.records.record import decode_batch
from schema_registry.validation import check_records, record_name, rejection_message, rules_of


def check_schema_ids(b, topic: str, config, records, v: int):
    store = getattr(b, "schema_registry", None)
    if store is None or not store.ready.is_set():
        if b.cfg["schema.registry.listeners"]:
            # still starting (or replaying _schemas): a retriable error, every client retries it
            return (ErrorCode.NOT_ENOUGH_REPLICAS, f"Schema ID validation is on for topic {topic} and "
                    "this broker's Schema Registry is not ready yet", [])
        # Confluent Server cannot validate without a registry (confluent.schema.registry.url);
        # refusing is the only answer that keeps the topic's promise
        return (ErrorCode.INVALID_RECORD, f"Schema ID validation is on for topic {topic} but this broker "
                "serves no Schema Registry (schema.registry.listeners is empty)", [])
    if getattr(store, "load_error", None) is not None:
        return (ErrorCode.INVALID_RECORD, f"Schema ID validation is on for topic {topic} but this broker's "
                f"Schema Registry failed to load: {store.load_error}", [])
    if v < 3:
        return (ErrorCode.INVALID_RECORD, f"Schema ID validation on topic {topic} needs record batches "
                "(Produce v3 or later)", [])
    try:
        _, recs = decode_batch(records, 0)
    except (CorruptRecordError, ValueError, IndexError):
        return None  # the append answers CORRUPT_MESSAGE

    def name_of(schema_id: int, payload: bytes):
        entry = store.schema_by_id(schema_id)
        return None if entry is None else record_name(store.parsed_entry(entry), payload)

    errors = check_records(topic, [(r.key, r.value) for r in recs], rules_of(config),
                           store.registered_ids, name_of)
    if not errors:
        return None
    return ErrorCode.INVALID_RECORD, rejection_message(errors), list(errors)
