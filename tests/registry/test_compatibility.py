"""Compatibility matrices per level for AVRO and JSON Schema: tables of (old, new) schema pairs
with the verdicts of Avro's specification (schema resolution) and Confluent's documentation
(JSON Schema content models), checked through the pure verdict functions."""
from __future__ import annotations

import json

import pytest

from schema_registry.compatibility import LEVELS, check
from schema_registry.formats import SchemaError, parse_schema


def rec(*fields, name="R", **extra):
    return json.dumps({"type": "record", "name": name, "fields": list(fields), **extra})


F_INT = {"name": "a", "type": "int"}
# (case, old, new, backward ok, forward ok): BACKWARD = new reads old data, FORWARD = old reads new
AVRO_PAIRS = [
    ("same", rec(F_INT), rec(F_INT), True, True),
    ("add field with default", rec(F_INT), rec(F_INT, {"name": "b", "type": "string", "default": "x"}), True, True),
    ("add field without default", rec(F_INT), rec(F_INT, {"name": "b", "type": "string"}), False, True),
    ("remove field without default", rec(F_INT, {"name": "b", "type": "string"}), rec(F_INT), True, False),
    ("remove field with default", rec(F_INT, {"name": "b", "type": "string", "default": "x"}), rec(F_INT), True, True),
    ("int promoted to long", rec(F_INT), rec({"name": "a", "type": "long"}), True, False),
    ("long narrowed to int", rec({"name": "a", "type": "long"}), rec(F_INT), False, True),
    ("float promoted to double", rec({"name": "a", "type": "float"}), rec({"name": "a", "type": "double"}), True, False),
    ("string and bytes interchange", rec({"name": "a", "type": "string"}), rec({"name": "a", "type": "bytes"}), True, True),
    ("int changed to string", rec(F_INT), rec({"name": "a", "type": "string"}), False, False),
    ("enum symbol added", json.dumps({"type": "enum", "name": "E", "symbols": ["A", "B"]}),
     json.dumps({"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}), True, False),
    ("enum symbol removed", json.dumps({"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}),
     json.dumps({"type": "enum", "name": "E", "symbols": ["A", "B"]}), False, True),
    ("union branch added", rec({"name": "a", "type": ["null", "int"]}),
     rec({"name": "a", "type": ["null", "int", "string"]}), True, False),
    ("field made nullable", rec(F_INT), rec({"name": "a", "type": ["null", "int"]}), True, False),
    ("record renamed", rec(F_INT, name="R"), rec(F_INT, name="S"), False, False),
    ("record renamed with alias", rec(F_INT, name="R"), rec(F_INT, name="S", aliases=["R"]), True, False),
    ("fixed size changed", json.dumps({"type": "fixed", "name": "X", "size": 4}),
     json.dumps({"type": "fixed", "name": "X", "size": 8}), False, False),
    ("array item promoted", json.dumps({"type": "array", "items": "int"}),
     json.dumps({"type": "array", "items": "long"}), True, False),
    ("map value changed", json.dumps({"type": "map", "values": "int"}),
     json.dumps({"type": "map", "values": "string"}), False, False),
]

JSON_OPEN = {"type": "object", "properties": {"a": {"type": "string"}}}
JSON_CLOSED = {**JSON_OPEN, "additionalProperties": False}


def with_props(base, **props):
    return {**base, "properties": {**base["properties"], **props}}


JSON_PAIRS = [
    ("same", JSON_OPEN, JSON_OPEN, True, True),
    ("open: property added", JSON_OPEN, with_props(JSON_OPEN, b={"type": "integer"}), False, True),
    ("open: property removed", with_props(JSON_OPEN, b={"type": "integer"}), JSON_OPEN, True, False),
    ("closed: optional property added", JSON_CLOSED, with_props(JSON_CLOSED, b={"type": "integer"}), True, False),
    ("closed: property removed", with_props(JSON_CLOSED, b={"type": "integer"}), JSON_CLOSED, False, True),
    ("closed: required property added", JSON_CLOSED,
     {**with_props(JSON_CLOSED, b={"type": "integer"}), "required": ["b"]}, False, False),
    ("content model closed", JSON_OPEN, JSON_CLOSED, False, True),
    ("closed: required property with default added", JSON_CLOSED,
     {**with_props(JSON_CLOSED, b={"type": "integer", "default": 0}), "required": ["b"]}, True, False),
    ("open: property with empty schema added", JSON_OPEN, with_props(JSON_OPEN, b={}), True, True),
    ("partially open: added property covered", {**JSON_OPEN, "additionalProperties": {"type": "string"}},
     with_props({**JSON_OPEN, "additionalProperties": {"type": "string"}}, b={"type": "string"}), True, True),
    ("partially open: added property not covered", {**JSON_OPEN, "additionalProperties": {"type": "string"}},
     with_props({**JSON_OPEN, "additionalProperties": {"type": "string"}}, b={"type": "integer"}), False, False),
    ("type changed", {"type": "string"}, {"type": "integer"}, False, False),
    ("integer widened to number", {"type": "integer"}, {"type": "number"}, True, False),
    ("type union widened", {"type": "string"}, {"type": ["string", "null"]}, True, False),
    ("existing property made required", JSON_OPEN, {**JSON_OPEN, "required": ["a"]}, False, True),
    ("enum extended", {"enum": ["x", "y"]}, {"enum": ["x", "y", "z"]}, True, False),
    ("maxLength decreased", {"type": "string", "maxLength": 10}, {"type": "string", "maxLength": 5}, False, True),
    ("minimum raised", {"type": "integer", "minimum": 0}, {"type": "integer", "minimum": 5}, False, True),
    ("nested property type changed", with_props(JSON_OPEN, n={"type": "object", "properties": {"x": {"type": "string"}}}),
     with_props(JSON_OPEN, n={"type": "object", "properties": {"x": {"type": "boolean"}}}), False, False),
    ("array items widened", {"type": "array", "items": {"type": "integer"}},
     {"type": "array", "items": {"type": "number"}}, True, False),
]


def expected(level: str, backward: bool, forward: bool) -> bool:
    base = level.removesuffix("_TRANSITIVE")
    return {"NONE": True, "BACKWARD": backward, "FORWARD": forward, "FULL": backward and forward}[base]


def _matrix(pairs, schema_type, dump):
    return [pytest.param(schema_type, dump(old), dump(new), level, expected(level, b, f), id=f"{schema_type}-{case}-{level}")
            for case, old, new, b, f in pairs for level in LEVELS]


@pytest.mark.parametrize("schema_type,old,new,level,ok",
                         _matrix(AVRO_PAIRS, "AVRO", lambda s: s) + _matrix(JSON_PAIRS, "JSON", json.dumps))
def test_pair_matrix(schema_type, old, new, level, ok):
    errors = check(parse_schema(schema_type, new), [parse_schema(schema_type, old)], level)
    assert (not errors) == ok, errors


# Transitive levels: v3 is compatible with v2 but not with v1.
AVRO_CHAIN = [rec(F_INT), rec(F_INT, {"name": "b", "type": "string", "default": "x"}),
              rec(F_INT, {"name": "b", "type": "string"})]  # BACKWARD: v3 reads v2, not v1
AVRO_CHAIN_FWD = [rec(F_INT, {"name": "b", "type": "string"}),
                  rec(F_INT, {"name": "b", "type": "string", "default": "x"}), rec(F_INT)]  # FORWARD: v1 cannot read v3
JSON_CHAIN = [JSON_CLOSED, with_props(JSON_CLOSED, b={"type": "integer"}),
              with_props(JSON_OPEN, b={"type": "integer"})]


@pytest.mark.parametrize("schema_type,chain,level,ok", [
    ("AVRO", AVRO_CHAIN, "BACKWARD", True), ("AVRO", AVRO_CHAIN, "BACKWARD_TRANSITIVE", False),
    ("AVRO", AVRO_CHAIN_FWD, "FORWARD", True), ("AVRO", AVRO_CHAIN_FWD, "FORWARD_TRANSITIVE", False),
    ("AVRO", AVRO_CHAIN, "FULL", True), ("AVRO", AVRO_CHAIN, "FULL_TRANSITIVE", False),
    ("AVRO", AVRO_CHAIN[:2], "FULL_TRANSITIVE", True),
    ("AVRO", AVRO_CHAIN, "NONE", True),
    ("JSON", [json.dumps(s) for s in JSON_CHAIN], "BACKWARD", True),
])
def test_transitive(schema_type, chain, level, ok):
    *previous, new = [parse_schema(schema_type, s) for s in chain]
    assert (not check(new, previous, level)) == ok


@pytest.mark.parametrize("schema_type,text,message", [
    ("AVRO", '{"type":"record","name":"R"}', "Record schema requires a non-empty fields property"),
    ("AVRO", '{"type":"nope"}', "Undefined type: nope"),
    ("AVRO", '{"type":', "Expecting value"),
    ("AVRO", '{"type":"enum","name":"E","symbols":["A","A"]}', "Duplicate symbol"),
    ("JSON", '{"type":"strin"}', "is not valid under any of the given schemas"),
    ("JSON", '{"type":"object","properties":{"a":{"minLength":-1}}}', "-1 is less than the minimum of 0"),
    ("JSON", '[1,2]', "a JSON Schema is an object or a boolean"),
    ("XML", "<a/>", "Invalid schema type XML"),
])
def test_invalid_schema_messages_are_the_parsers(schema_type, text, message):
    with pytest.raises(SchemaError, match=None) as info:
        parse_schema(schema_type, text)
    assert message in str(info.value)


def test_avro_references_and_forms():
    addr = rec({"name": "street", "type": "string"}, name="Address", namespace="x")
    person = rec({"name": "home", "type": "x.Address"}, name="Person", namespace="x")
    p = parse_schema("AVRO", person, {"x.Address": addr})
    # the reference stays a name, short in its own namespace as Avro-Java prints it
    assert json.loads(p.canonical()) == json.loads(person.replace('"x.Address"', '"Address"'))
    reordered = json.dumps({"fields": [{"type": "string", "name": "name"}, {"type": "x.Address", "name": "home"}],
                            "namespace": "x", "name": "Person", "type": "record"})
    assert parse_schema("AVRO", reordered, {"x.Address": addr}).canonical() == \
        parse_schema("AVRO", rec({"name": "name", "type": "string"}, {"name": "home", "type": "x.Address"},
                                 name="Person", namespace="x"), {"x.Address": addr}).canonical()
    assert '"x.Address"' in p.normalized() or '"Address"' in p.normalized()
    with pytest.raises(SchemaError, match="Address"):
        parse_schema("AVRO", person)
    spaced = parse_schema("AVRO", '{ "type" : "record", "name":"R", "fields" : [ {"name":"a","type":"int"} ] }')
    assert spaced.canonical() == parse_schema("AVRO", rec(F_INT)).canonical()
    assert parse_schema("AVRO", rec({"name": "a", "type": {"type": "int"}})).canonical() == \
        parse_schema("AVRO", rec(F_INT)).canonical()
    # defaults, docs and custom properties keep schemas apart
    assert parse_schema("AVRO", rec({"name": "a", "type": "int", "doc": "x"})).canonical() != \
        parse_schema("AVRO", rec(F_INT)).canonical()
