"""Schema ID validation decisions (schema_registry/validation.py), without a broker: the wire
format check, subjects per strategy, tombstones, and a property test of check_records against
a brute-force model of Confluent Server's rule."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings, strategies as st

from schema_registry.validation import (
    RECORD_NAME, TOPIC_NAME, TOPIC_RECORD_NAME, Rules, check_records, protobuf_message_indexes, schema_id,
    subject_for)
from storage.log_config import LogConfig


def framed(sid: int, payload: bytes = b"x") -> bytes:
    return b"\x00" + struct.pack(">I", sid) + payload


REGISTRY = {"t-value": {1, 2}, "t-key": {3}, "com.acme.Order": {4}, "t-com.acme.Order": {5}}
NAMES = {1: "com.acme.Order", 2: "com.acme.Refund", 3: "k", 4: "com.acme.Order", 5: "com.acme.Order"}


def check(records, rules):
    return check_records("t", records, rules, lambda s: REGISTRY.get(s, ()), lambda i, _p: NAMES.get(i))


VALUE = Rules(key=False, value=True)


@pytest.mark.parametrize("records, rules, bad", [
    ([(None, framed(1)), (None, framed(2))], VALUE, []),
    ([(b"raw key", framed(1))], VALUE, []),                       # keys are not checked
    ([(None, None)], VALUE, []),                                  # tombstone passes
    ([(None, b"plain bytes")], VALUE, [0]),                       # no magic byte
    ([(None, b"\x00\x00\x01")], VALUE, [0]),                      # too short for an id
    ([(None, b"\x01" + struct.pack(">I", 1))], VALUE, [0]),       # wrong magic byte
    ([(None, framed(1)), (None, framed(3)), (None, framed(99))], VALUE, [1, 2]),  # another subject's, unknown
    ([(framed(3), framed(1)), (framed(1), framed(1))], Rules(True, True), [1]),
    ([(None, framed(1))], Rules(True, False), []),                # null key passes
    ([(None, framed(4))], Rules(False, True, value_strategy=RECORD_NAME), []),
    ([(None, framed(1))], Rules(False, True, value_strategy=RECORD_NAME), [0]),   # 1 not under com.acme.Order
    ([(None, framed(5))], Rules(False, True, value_strategy=TOPIC_RECORD_NAME), []),
    ([(None, framed(77))], Rules(False, True, value_strategy=RECORD_NAME), [0]),  # unknown id: no name
])
def test_check_records(records, rules, bad):
    assert [i for i, _ in check(records, rules)] == bad


def test_messages_name_the_side_the_id_and_the_subject():
    errs = check([(None, b"nope"), (None, framed(3))], VALUE)
    assert "value has no schema id" in errs[0][1] and "topic t" in errs[0][1]
    assert errs[1][1] == "Record value names schema id 3, which is not registered under subject t-value"
    kerr = check([(b"nope", framed(1))], Rules(True, True))
    assert kerr[0][1].startswith("Record key has no schema id")


def test_subjects_per_strategy():
    assert subject_for("orders", False, TOPIC_NAME, lambda: 1 / 0) == "orders-value"
    assert subject_for("orders", True, TOPIC_NAME, lambda: 1 / 0) == "orders-key"
    assert subject_for("orders", False, RECORD_NAME, lambda: "a.B") == "a.B"
    assert subject_for("orders", True, TOPIC_RECORD_NAME, lambda: "a.B") == "orders-a.B"


def test_wire_format_helpers():
    assert schema_id(framed(258)) == 258 and schema_id(b"\x00\x00") is None and schema_id(None) is None
    assert protobuf_message_indexes(framed(1, b"\x00rest")) == [0]
    # zigzag varints: count 2 -> 4, indexes 1 -> 2, 3 -> 6
    assert protobuf_message_indexes(framed(1, b"\x04\x02\x06")) == [1, 3]
    with pytest.raises(ValueError):
        protobuf_message_indexes(framed(1, b"\x04\x02"))


def test_log_config_turns_it_on():
    assert not LogConfig.default().schema_id_validation
    c = LogConfig.from_props({}, {"confluent.key.schema.validation": "true",
                                  "confluent.key.subject.name.strategy": RECORD_NAME})
    assert c.schema_id_validation and c.confluent_key_subject_name_strategy == RECORD_NAME
    assert not c.confluent_value_schema_validation


payloads = st.one_of(st.none(), st.binary(max_size=6), st.integers(0, 6).map(framed))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(payloads, payloads), max_size=8), st.booleans(), st.booleans())
def test_check_records_matches_the_rule(records, on_key, on_value):
    """Brute force: a record is bad when a checked side is non-null and either lacks the
    5-byte header with magic 0 or names an id not registered under <topic>-<side>."""
    rules = Rules(on_key, on_value)

    def bad(payload, subject):
        if payload is None:
            return False
        if len(payload) < 5 or payload[0] != 0:
            return True
        return int.from_bytes(payload[1:5], "big") not in REGISTRY.get(subject, ())

    expected = [i for i, (k, v) in enumerate(records)
                if (on_key and bad(k, "t-key")) or (on_value and bad(v, "t-value"))]
    assert [i for i, _ in check(records, rules)] == expected


def test_produce_handler_waits_for_a_registry_still_loading():
    """While the broker's registry replays _schemas, a validated topic answers a retriable
    NOT_ENOUGH_REPLICAS (clients retry); with no registry configured, INVALID_RECORD."""
    import asyncio
    from types import SimpleNamespace

    from schema_registry.produce_validation import check_schema_ids as _check_schema_ids
    from protocol.errors import ErrorCode
    from protocol.records.record import build_batch

    cfg = LogConfig.from_props({}, {"confluent.value.schema.validation": "true"})
    batch = build_batch([(None, framed(1), 1)])
    loading = SimpleNamespace(ready=asyncio.Event(), registered_ids=lambda s: {1})
    b = SimpleNamespace(schema_registry=loading, cfg={"schema.registry.listeners": "http://127.0.0.1:0"})
    code, msg, _ = _check_schema_ids(b, "t", cfg, batch, 9)
    assert code == ErrorCode.NOT_ENOUGH_REPLICAS and "not ready yet" in msg
    loading.ready.set()
    assert _check_schema_ids(b, "t", cfg, batch, 9) is None
    assert _check_schema_ids(b, "t", cfg, build_batch([(None, framed(2), 1)]), 9)[0] == ErrorCode.INVALID_RECORD
    loading.load_error = OSError("disk")
    code, msg, _ = _check_schema_ids(b, "t", cfg, batch, 9)
    assert code == ErrorCode.INVALID_RECORD and "failed to load: disk" in msg
    off = SimpleNamespace(schema_registry=None, cfg={"schema.registry.listeners": ""})
    assert _check_schema_ids(off, "t", cfg, batch, 9)[0] == ErrorCode.INVALID_RECORD


def test_a_broker_without_a_record_validator_refuses_validated_topics():
    """The Kafka core knows no registry: built without the composition root's extensions
    (``hourglass.app``), a topic that asks for validation refuses every batch, whole."""
    from types import SimpleNamespace

    from broker.extensions import NONE, Extensions
    from broker.handlers.produce import _validate_records
    from protocol.errors import ErrorCode
    from protocol.records.record import build_batch

    cfg = LogConfig.from_props({}, {"confluent.value.schema.validation": "true"})
    batch = build_batch([(None, framed(1), 1)])
    code, msg, errors = _validate_records(SimpleNamespace(extensions=NONE), "t", cfg, batch, 9)
    assert code == ErrorCode.INVALID_RECORD and "without a record validator" in msg and errors == []
    refusing = Extensions(record_validator=lambda b, topic, config, records, v:
                          (ErrorCode.INVALID_RECORD, f"no to {topic}", [(0, "bad key")]))
    code, msg, errors = _validate_records(SimpleNamespace(extensions=refusing), "t", cfg, batch, 9)
    assert (code, msg) == (ErrorCode.INVALID_RECORD, "no to t")
    assert [(e.batch_index, e.batch_index_error_message) for e in errors] == [(0, "bad key")]


def test_record_names_of_each_format():
    import json

    from schema_registry.formats import parse_schema
    from schema_registry.validation import record_name
    avro = parse_schema("AVRO", json.dumps({"type": "record", "name": "Order", "namespace": "com.acme",
                                            "fields": [{"name": "id", "type": "string"}]}))
    assert record_name(avro, framed(1)) == "com.acme.Order"
    # Avro's getFullName, as Confluent's AvroSchema.name(): a primitive's type name
    assert record_name(parse_schema("AVRO", '"string"'), framed(1)) == "string"
    js = parse_schema("JSON", json.dumps({"title": "Order", "type": "object"}))
    assert record_name(js, framed(1)) == "Order"
    assert record_name(parse_schema("JSON", '{"type": "object"}'), framed(1)) is None
    pb = parse_schema("PROTOBUF", 'syntax = "proto3";\npackage p;\nmessage A { message In { int32 x = 1; } }\n'
                                  "message B { int32 y = 1; }\n")
    assert record_name(pb, framed(1, b"\x00")) == "p.A"
    assert record_name(pb, framed(1, b"\x02\x02")) == "p.B"          # [1]
    assert record_name(pb, framed(1, b"\x04\x00\x00")) == "p.A.In"   # [0, 0]
    assert record_name(pb, framed(1, b"\x02\x0a")) is None           # [5]: no such message
