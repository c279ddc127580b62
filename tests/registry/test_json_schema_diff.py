"""JSON Schema compatibility as Confluent's SchemaDiff decides it: one table row per difference
type (original = the writer's schema, update = the reader's, as BACKWARD compares old to new),
with the differences and the STRICT verdict Confluent's registry gives; then the issue-34 cases
through the broker with confluent-kafka's SchemaRegistryClient."""
from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from schema_registry.formats import BACKWARD, FORWARD, parse_schema
from schema_registry.formats.jsonschema_diff import COMPATIBLE_CHANGES, LENIENT, differences, incompatibilities

STR, NUM, INT = {"type": "string"}, {"type": "number"}, {"type": "integer"}
D2020 = {"$schema": "https://json-schema.org/draft/2020-12/schema"}


def obj(props=None, **kw):
    return {"type": "object", "properties": props or {}, **kw}


def arr(**kw):
    return {"type": "array", **kw}


# (case, original, update, [(difference type, path)], compatible)
CASES = [
    # annotations: listed, always compatible
    ("id changed", {"$id": "a"}, {"$id": "b"}, [("ID_CHANGED", "#/")], True),
    ("title changed", {"title": "a"}, {"title": "b"}, [("TITLE_CHANGED", "#/")], True),
    ("description changed", {**STR, "description": "a"}, {**STR, "description": "b"},
     [("DESCRIPTION_CHANGED", "#/")], True),
    ("default changed", {**STR, "default": "a"}, {**STR, "default": "b"}, [("DEFAULT_CHANGED", "#/")], True),
    # types
    ("same", STR, STR, [], True),
    ("type changed", STR, NUM, [("TYPE_CHANGED", "#/")], False),
    ("integer extended to number", INT, NUM, [("TYPE_EXTENDED", "#/")], True),
    ("number narrowed to integer", NUM, INT, [("TYPE_NARROWED", "#/")], False),
    ("true to not-anything", True, {"not": {}}, [("TYPE_CHANGED", "#/")], False),
    ("anything to true", STR, True, [], True),
    ("false to anything", False, STR, [], True),
    ("connect.type bytes both sides", {**STR, "connect.type": "bytes"}, {**NUM, "connect.type": "bytes"}, [], True),
    ("nullable added (a union of types)", STR, {"type": ["string", "null"]}, [("SUM_TYPE_EXTENDED", "#/")], True),
    ("nullable removed", {"type": ["string", "null"]}, STR, [("TYPE_CHANGED", "#/")], False),
    # strings
    ("maxLength added", STR, {**STR, "maxLength": 5}, [("MAX_LENGTH_ADDED", "#/maxLength")], False),
    ("maxLength removed", {**STR, "maxLength": 5}, STR, [("MAX_LENGTH_REMOVED", "#/maxLength")], True),
    ("maxLength increased", {**STR, "maxLength": 5}, {**STR, "maxLength": 6}, [("MAX_LENGTH_INCREASED", "#/maxLength")], True),
    ("maxLength decreased", {**STR, "maxLength": 5}, {**STR, "maxLength": 4}, [("MAX_LENGTH_DECREASED", "#/maxLength")], False),
    ("minLength added", STR, {**STR, "minLength": 1}, [("MIN_LENGTH_ADDED", "#/minLength")], False),
    ("minLength decreased", {**STR, "minLength": 2}, {**STR, "minLength": 1}, [("MIN_LENGTH_DECREASED", "#/minLength")], True),
    ("minLength increased", {**STR, "minLength": 1}, {**STR, "minLength": 2}, [("MIN_LENGTH_INCREASED", "#/minLength")], False),
    ("pattern added", STR, {**STR, "pattern": "^a"}, [("PATTERN_ADDED", "#/pattern")], False),
    ("pattern removed", {**STR, "pattern": "^a"}, STR, [("PATTERN_REMOVED", "#/pattern")], True),
    ("pattern changed", {**STR, "pattern": "^a"}, {**STR, "pattern": "^b"}, [("PATTERN_CHANGED", "#/pattern")], False),
    # numbers
    ("maximum added", NUM, {**NUM, "maximum": 9}, [("MAXIMUM_ADDED", "#/maximum")], False),
    ("maximum increased", {**NUM, "maximum": 9}, {**NUM, "maximum": 10}, [("MAXIMUM_INCREASED", "#/maximum")], True),
    ("maximum decreased", {**NUM, "maximum": 9}, {**NUM, "maximum": 8}, [("MAXIMUM_DECREASED", "#/maximum")], False),
    ("minimum removed", {**NUM, "minimum": 1}, NUM, [("MINIMUM_REMOVED", "#/minimum")], True),
    ("minimum increased", {**NUM, "minimum": 1}, {**NUM, "minimum": 2}, [("MINIMUM_INCREASED", "#/minimum")], False),
    ("exclusiveMaximum increased", {**NUM, "exclusiveMaximum": 1}, {**NUM, "exclusiveMaximum": 2},
     [("EXCLUSIVE_MAXIMUM_INCREASED", "#/exclusiveMaximum")], True),
    ("exclusiveMinimum added", NUM, {**NUM, "exclusiveMinimum": 0}, [("EXCLUSIVE_MINIMUM_ADDED", "#/exclusiveMinimum")], False),
    ("exclusiveMinimum decreased", {**NUM, "exclusiveMinimum": 2}, {**NUM, "exclusiveMinimum": 1},
     [("EXCLUSIVE_MINIMUM_DECREASED", "#/exclusiveMinimum")], True),
    ("multipleOf added", NUM, {**NUM, "multipleOf": 2}, [("MULTIPLE_OF_ADDED", "#/multipleOf")], False),
    ("multipleOf expanded", {**NUM, "multipleOf": 2}, {**NUM, "multipleOf": 4}, [("MULTIPLE_OF_EXPANDED", "#/multipleOf")], False),
    ("multipleOf reduced", {**NUM, "multipleOf": 4}, {**NUM, "multipleOf": 2}, [("MULTIPLE_OF_REDUCED", "#/multipleOf")], True),
    ("multipleOf changed", {**NUM, "multipleOf": 3}, {**NUM, "multipleOf": 2}, [("MULTIPLE_OF_CHANGED", "#/multipleOf")], False),
    # enum, const, not
    ("enum extended", {"enum": ["a"]}, {"enum": ["a", "b"]}, [("ENUM_ARRAY_EXTENDED", "#/enum")], True),
    ("enum narrowed", {"enum": ["a", "b"]}, {"enum": ["a"]}, [("ENUM_ARRAY_NARROWED", "#/enum")], False),
    ("enum changed", {"enum": ["a"]}, {"enum": ["b"]}, [("ENUM_ARRAY_CHANGED", "#/enum")], False),
    ("const changed", {"const": 1}, {"const": 2}, [("ENUM_ARRAY_CHANGED", "#/const")], False),
    ("not narrowed", {"not": NUM}, {"not": INT}, [("NOT_TYPE_NARROWED", "#/not")], True),
    ("not extended", {"not": INT}, {"not": NUM}, [("NOT_TYPE_EXTENDED", "#/not")], False),
    # objects: required
    ("required added", obj({"a": STR}), obj({"a": STR}, required=["a"]), [("REQUIRED_ATTRIBUTE_ADDED", "#/required/a")], False),
    ("required with default added", obj({"a": STR}), obj({"a": {**STR, "default": "x"}}, required=["a"]),
     [("REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED", "#/required/a"), ("DEFAULT_CHANGED", "#/properties/a")], True),
    ("required removed", obj({"a": STR}, required=["a"]), obj({"a": STR}), [("REQUIRED_ATTRIBUTE_REMOVED", "#/required/a")], True),
    # objects: properties against content models
    ("optional property added to an open model", obj(), obj({"a": STR}),
     [("OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", "#/properties/a")], False),
    ("required property added to an open model", obj(), obj({"a": STR}, required=["a"]),
     [("REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", "#/properties/a")], False),
    ("required property with default added to an open model", obj(), obj({"a": {**STR, "default": "x"}}, required=["a"]),
     [("REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL", "#/properties/a")], False),
    ("property with an empty schema added to an open model", obj(), obj({"a": {}}),
     [("PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL", "#/properties/a")], True),
    ("optional property added to a closed model", obj(additionalProperties=False),
     obj({"a": STR}, additionalProperties=False),
     [("OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", "#/properties/a")], True),
    ("required property added to a closed model", obj(additionalProperties=False),
     obj({"a": STR}, additionalProperties=False, required=["a"]),
     [("REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", "#/properties/a")], False),
    ("required property with default added to a closed model", obj(additionalProperties=False),
     obj({"a": {**STR, "default": "x"}}, additionalProperties=False, required=["a"]),
     [("REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL", "#/properties/a")], True),
    ("property removed from an open model", obj({"a": STR}), obj(), [("PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL", "#/properties/a")], True),
    ("property removed from a closed model", obj({"a": STR}, additionalProperties=False), obj(additionalProperties=False),
     [("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", "#/properties/a")], False),
    ("false property removed from a closed model", obj({"a": False}, additionalProperties=False),
     obj(additionalProperties=False), [("PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL", "#/properties/a")], True),
    ("property added, covered by a partially open model", obj(additionalProperties=STR),
     obj({"a": STR}, additionalProperties=STR),
     [("PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "#/properties/a"),
      ("OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", "#/properties/a")], True),
    ("property added, not covered by a partially open model", obj(additionalProperties=STR),
     obj({"a": NUM}, additionalProperties=STR),
     [("TYPE_CHANGED", "#/properties/a"), ("PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "#/properties/a"),
      ("OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", "#/properties/a")], False),
    ("property removed, covered by patternProperties", obj({"a1": STR}, patternProperties={"^a": STR}),
     obj(patternProperties={"^a": STR}),
     [("PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "#/properties/a1")], True),
    ("property removed, not covered by a partially open model", obj({"a": NUM}, additionalProperties=STR),
     obj(additionalProperties=STR),
     [("TYPE_CHANGED", "#/properties/a"), ("PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "#/properties/a")],
     False),
    ("property changed", obj({"a": STR}), obj({"a": NUM}), [("TYPE_CHANGED", "#/properties/a")], False),
    # objects: additionalProperties, dependencies, bounds
    ("additionalProperties removed (closed)", obj(), obj(additionalProperties=False),
     [("ADDITIONAL_PROPERTIES_REMOVED", "#/additionalProperties")], False),
    ("additionalProperties added (opened)", obj(additionalProperties=False), obj(),
     [("ADDITIONAL_PROPERTIES_ADDED", "#/additionalProperties")], True),
    ("additionalProperties narrowed to a schema", obj(), obj(additionalProperties=STR),
     [("ADDITIONAL_PROPERTIES_NARROWED", "#/additionalProperties")], False),
    ("additionalProperties extended from a schema", obj(additionalProperties=STR), obj(),
     [("ADDITIONAL_PROPERTIES_EXTENDED", "#/additionalProperties")], True),
    ("dependency array added", obj({"a": STR}), obj({"a": STR}, dependencies={"a": ["b"]}),
     [("DEPENDENCY_ARRAY_ADDED", "#/dependencies/a")], False),
    ("dependency array extended", obj(dependencies={"a": ["b"]}), obj(dependencies={"a": ["b", "c"]}),
     [("DEPENDENCY_ARRAY_EXTENDED", "#/dependencies/a")], False),
    ("dependency array narrowed", obj(dependencies={"a": ["b", "c"]}), obj(dependencies={"a": ["b"]}),
     [("DEPENDENCY_ARRAY_NARROWED", "#/dependencies/a")], True),
    ("dependency schema removed", obj(dependencies={"a": obj()}), obj(), [("DEPENDENCY_SCHEMA_REMOVED", "#/dependencies/a")], True),
    ("maxProperties decreased", obj(maxProperties=3), obj(maxProperties=2),
     [("MAX_PROPERTIES_DECREASED", "#/maxProperties")], False),
    ("minProperties removed", obj(minProperties=1), obj(), [("MIN_PROPERTIES_REMOVED", "#/minProperties")], True),
    # arrays
    ("items schema changed", arr(items=STR), arr(items=NUM), [("TYPE_CHANGED", "#/items")], False),
    ("items object to a tuple", arr(items=STR), arr(items=[STR]),
     [("SCHEMA_REMOVED", "#/items"), ("ITEM_ADDED_TO_OPEN_CONTENT_MODEL", "#/items/0")], False),
    ("tuple to items object", arr(items=[STR]), arr(items=STR),
     [("SCHEMA_ADDED", "#/items"), ("ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL", "#/items/0")], False),
    ("item with an empty schema added to an open tuple", arr(items=[STR]), arr(items=[STR, {}]),
     [("ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL", "#/items/1")], True),
    ("tuple grows under additionalItems false", arr(items=[STR], additionalItems=False),
     arr(items=[STR, NUM], additionalItems=False), [("ITEM_ADDED_TO_CLOSED_CONTENT_MODEL", "#/items/1")], True),
    ("open tuple grows and closes", arr(items=[STR]), arr(items=[STR, NUM], additionalItems=False),
     [("ITEM_ADDED_TO_OPEN_CONTENT_MODEL", "#/items/1"), ("ADDITIONAL_ITEMS_REMOVED", "#/additionalItems")], False),
    ("tuple shrinks under additionalItems false", arr(items=[STR, NUM], additionalItems=False),
     arr(items=[STR], additionalItems=False), [("ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL", "#/items/1")], False),
    ("false item removed from a closed tuple", arr(items=[STR, False], additionalItems=False),
     arr(items=[STR], additionalItems=False), [("ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL", "#/items/1")], True),
    ("item added, covered by additionalItems", arr(items=[STR], additionalItems=NUM),
     arr(items=[STR, NUM], additionalItems=NUM),
     [("ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "#/items/1")], True),
    ("item added, not covered by additionalItems", arr(items=[STR], additionalItems=NUM),
     arr(items=[STR, STR], additionalItems=NUM),
     [("TYPE_CHANGED", "#/items/1"), ("ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "#/items/1")], False),
    ("item removed, covered by additionalItems", arr(items=[STR, NUM], additionalItems=NUM),
     arr(items=[STR], additionalItems=NUM),
     [("ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "#/items/1")], True),
    ("additionalItems added", arr(items=[STR], additionalItems=False), arr(items=[STR]),
     [("ADDITIONAL_ITEMS_ADDED", "#/additionalItems")], True),
    ("additionalItems narrowed", arr(items=[STR]), arr(items=[STR], additionalItems=STR),
     [("ADDITIONAL_ITEMS_NARROWED", "#/additionalItems")], False),
    ("additionalItems extended", arr(items=[STR], additionalItems=STR), arr(items=[STR]),
     [("ADDITIONAL_ITEMS_EXTENDED", "#/additionalItems")], True),
    ("maxItems added", arr(), arr(maxItems=3), [("MAX_ITEMS_ADDED", "#/maxItems")], False),
    ("minItems decreased", arr(minItems=2), arr(minItems=1), [("MIN_ITEMS_DECREASED", "#/minItems")], True),
    ("uniqueItems added", arr(), arr(uniqueItems=True), [("UNIQUE_ITEMS_ADDED", "#/uniqueItems")], False),
    ("uniqueItems removed", arr(uniqueItems=True), arr(), [("UNIQUE_ITEMS_REMOVED", "#/uniqueItems")], True),
    # draft 2020-12: unevaluated*, prefixItems, contains
    ("unevaluatedProperties closed", {**D2020, **obj({"a": STR})}, {**D2020, **obj({"a": STR}), "unevaluatedProperties": False},
     [("UNEVALUATED_PROPERTIES_REMOVED", "#/unevaluatedProperties")], False),
    ("unevaluatedProperties opened", {**D2020, **obj({"a": STR}), "unevaluatedProperties": False}, {**D2020, **obj({"a": STR})},
     [("UNEVALUATED_PROPERTIES_ADDED", "#/unevaluatedProperties")], True),
    ("unevaluatedProperties narrowed to a schema", {**D2020, **obj()}, {**D2020, **obj(), "unevaluatedProperties": STR},
     [("UNEVALUATED_PROPERTIES_NARROWED", "#/unevaluatedProperties")], False),
    ("prefixItems grow under items false", {**D2020, **arr(prefixItems=[STR], items=False)},
     {**D2020, **arr(prefixItems=[STR, NUM], items=False)}, [("ITEM_ADDED_TO_CLOSED_CONTENT_MODEL", "#/items/1")], True),
    ("unevaluatedItems closed", {**D2020, **arr(prefixItems=[STR])}, {**D2020, **arr(prefixItems=[STR], unevaluatedItems=False)},
     [("UNEVALUATED_ITEMS_REMOVED", "#/unevaluatedItems")], False),
    ("maxContains added", {**D2020, **arr(contains=NUM)}, {**D2020, **arr(contains=NUM, maxContains=2)},
     [("MAX_CONTAINS_ADDED", "#/maxContains")], False),
    ("minContains decreased", {**D2020, **arr(contains=NUM, minContains=2)}, {**D2020, **arr(contains=NUM, minContains=1)},
     [("MIN_CONTAINS_DECREASED", "#/minContains")], True),
    ("dependency schema added", obj(), obj(dependencies={"a": obj()}), [("DEPENDENCY_SCHEMA_ADDED", "#/dependencies/a")], False),
    # combined schemas
    ("oneOf branch added", {"oneOf": [STR]}, {"oneOf": [STR, NUM]}, [("SUM_TYPE_EXTENDED", "#/")], True),
    ("oneOf branch removed", {"oneOf": [STR, NUM]}, {"oneOf": [STR]}, [("SUM_TYPE_NARROWED", "#/")], False),
    ("oneOf number to integer", {"oneOf": [STR, NUM]}, {"oneOf": [STR, INT]},
     [("COMBINED_TYPE_SUBSCHEMAS_CHANGED", "#/")], False),
    ("oneOf integer to number", {"oneOf": [STR, INT]}, {"oneOf": [STR, NUM]}, [("TYPE_EXTENDED", "#/oneOf/1")], True),
    ("closed-model property removed inside oneOf",
     {"oneOf": [obj({"a": STR, "b": STR}, additionalProperties=False), NUM]},
     {"oneOf": [obj({"a": STR}, additionalProperties=False), NUM]},
     [("COMBINED_TYPE_SUBSCHEMAS_CHANGED", "#/")], False),
    ("allOf branch added", {"allOf": [obj({"a": STR})]}, {"allOf": [obj({"a": STR}), obj({"b": STR})]},
     [("PRODUCT_TYPE_EXTENDED", "#/")], False),
    ("allOf branch removed", {"allOf": [obj({"a": STR}), obj({"b": STR})]}, {"allOf": [obj({"a": STR})]},
     [("PRODUCT_TYPE_NARROWED", "#/")], True),
    ("oneOf to anyOf", {"oneOf": [STR, NUM]}, {"anyOf": [STR, NUM]}, [("COMBINED_TYPE_EXTENDED", "#/")], True),
    ("anyOf to oneOf", {"anyOf": [STR, NUM]}, {"oneOf": [STR, NUM]}, [("COMBINED_TYPE_CHANGED", "#/")], False),
    ("single-branch oneOf unwrapped", {"oneOf": [STR]}, STR, [], True),
    ("plain schema wrapped into a single-branch oneOf", STR, {"oneOf": [STR]}, [], True),
    ("plain schema becomes a oneOf branch", STR, {"oneOf": [NUM, STR]}, [("SUM_TYPE_EXTENDED", "#/")], True),
    ("allOf narrowed to one of its branches", {"allOf": [STR, {"maxLength": 3}]}, STR,
     [("PRODUCT_TYPE_NARROWED", "#/")], True),
    # $ref, resolved where it points
    ("$ref into $defs unchanged", {"$defs": {"s": STR}, **obj({"a": {"$ref": "#/$defs/s"}})},
     {"$defs": {"s": STR}, **obj({"a": {"$ref": "#/$defs/s"}})}, [], True),
    ("$ref into definitions changed", {"definitions": {"s": STR}, **obj({"a": {"$ref": "#/definitions/s"}})},
     {"definitions": {"s": NUM}, **obj({"a": {"$ref": "#/definitions/s"}})}, [("TYPE_CHANGED", "#/properties/a")], False),
    ("inline schema moved into $defs", obj({"a": {**INT, "minimum": 0}}),
     {"$defs": {"n": {**INT, "minimum": 0}}, **obj({"a": {"$ref": "#/$defs/n"}})}, [], True),
    ("$defs reference finds definitions", {"definitions": {"s": STR}, **obj({"a": {"$ref": "#/$defs/s"}})},
     {"definitions": {"s": STR}, **obj({"a": {"$ref": "#/definitions/s"}})}, [], True),
    ("recursive $ref", {"$defs": {"node": obj({"v": INT, "next": {"$ref": "#/$defs/node"}})}, "$ref": "#/$defs/node"},
     {"$defs": {"node": obj({"v": NUM, "next": {"$ref": "#/$defs/node"}})}, "$ref": "#/$defs/node"},
     [("TYPE_EXTENDED", "#/properties/v")], True),
]


@pytest.mark.parametrize("case, original, update, expected, compatible", CASES, ids=[c[0] for c in CASES])
def test_schema_diff_differences_and_verdict(case, original, update, expected, compatible):
    got = differences(original, update)
    assert sorted((d.type, d.path) for d in got) == sorted(expected)
    assert (not incompatibilities(original, update)) is compatible


def test_every_rule_has_a_row():
    """Each difference type that decides a verdict appears in the table (annotations aside)."""
    seen = {t for *_, expected, _ in CASES for t, _ in expected}
    wanted = {"TYPE_CHANGED", "TYPE_NARROWED", "TYPE_EXTENDED", "PATTERN_ADDED", "ADDITIONAL_ITEMS_REMOVED",
              "ITEM_ADDED_TO_OPEN_CONTENT_MODEL", "ITEM_ADDED_TO_CLOSED_CONTENT_MODEL", "SUM_TYPE_EXTENDED",
              "SUM_TYPE_NARROWED", "PRODUCT_TYPE_EXTENDED", "PRODUCT_TYPE_NARROWED", "COMBINED_TYPE_EXTENDED",
              "COMBINED_TYPE_CHANGED", "COMBINED_TYPE_SUBSCHEMAS_CHANGED", "NOT_TYPE_NARROWED", "NOT_TYPE_EXTENDED",
              "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL",
              "REQUIRED_ATTRIBUTE_ADDED", "ENUM_ARRAY_NARROWED", "ADDITIONAL_PROPERTIES_REMOVED"}
    assert wanted <= seen, wanted - seen


def test_lenient_policy_allows_content_model_changes():
    assert incompatibilities(obj(), obj({"a": STR})) and not incompatibilities(obj(), obj({"a": STR}), policy=LENIENT)
    assert "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL" in COMPATIBLE_CHANGES[LENIENT]


def test_directions_and_messages_through_the_parsed_schema():
    old = parse_schema("JSON", json.dumps(STR))
    new = parse_schema("JSON", json.dumps({**STR, "pattern": "^a"}))
    assert new.compatibility_errors(old, BACKWARD) == [
        "{errorType:\"PATTERN_ADDED\", description:\"The keyword at path '#/pattern' in the new schema is not "
        "present in the old schema'}"]
    assert new.compatibility_errors(old, FORWARD) == []  # old reads data of the new (stricter) schema
    # references: a $ref into a referenced schema resolves there
    ref = json.dumps({"$defs": {"amount": NUM}})
    a = parse_schema("JSON", json.dumps(obj({"x": {"$ref": "money.json#/$defs/amount"}})), {"money.json": ref})
    b = parse_schema("JSON", json.dumps(obj({"x": INT})))
    assert b.compatibility_errors(a, BACKWARD)[0].startswith('{errorType:"TYPE_NARROWED"')
    assert a.compatibility_errors(b, BACKWARD) == []


# ---- through the broker: the issue's cases, with confluent-kafka's client -------------------------------
ISSUE_CASES = [  # (old, new, BACKWARD-compatible as Confluent answers)
    ({"oneOf": [obj({"a": STR, "b": STR}, additionalProperties=False), NUM]},
     {"oneOf": [obj({"a": STR}, additionalProperties=False), NUM]}, False),
    ({"oneOf": [STR, NUM]}, {"oneOf": [STR, INT]}, False),
    ({"oneOf": [STR]}, STR, True),
    (arr(items=STR), arr(items=[STR]), False),
    (arr(items=[STR]), arr(items=[STR, NUM], additionalItems=False), False),
    (STR, {**STR, "pattern": "^[a-z]+$"}, False),
    (True, {"not": {}}, False),
    ({"definitions": {"n": NUM}, **obj({"a": {"$ref": "#/definitions/n"}})},
     {"$defs": {"n": NUM}, **obj({"a": {"$ref": "#/$defs/n"}})}, True),
]


@pytest.mark.hourglass(schema_registry=True)
def test_issue_cases_through_the_registry(hourglass_broker):
    sr = SchemaRegistryClient({"url": hourglass_broker.schema_registry_url})
    tag = uuid.uuid4().hex[:8]
    for i, (old, new, compatible) in enumerate(ISSUE_CASES):
        subject = f"jd-{tag}-{i}"
        sr.register_schema(subject, Schema(json.dumps(old), "JSON"))
        assert sr.test_compatibility(subject, Schema(json.dumps(new), "JSON")) is compatible, (old, new)
        if compatible:
            assert sr.register_schema(subject, Schema(json.dumps(new), "JSON")) > 0
        else:
            with pytest.raises(SchemaRegistryError) as info:
                sr.register_schema(subject, Schema(json.dumps(new), "JSON"))
            assert (info.value.http_status_code, info.value.error_code) == (409, 40901)
    # a $ref into a schema referenced across subjects
    sr.register_schema(f"money-{tag}", Schema(json.dumps({"$defs": {"amount": NUM}}), "JSON"))
    ref = SchemaReference("money.json", f"money-{tag}", 1)
    subject = f"pay-{tag}"
    sr.register_schema(subject, Schema(json.dumps(obj({"x": {"$ref": "money.json#/$defs/amount"}})), "JSON", [ref]))
    assert sr.test_compatibility(subject, Schema(json.dumps(obj({"x": INT})), "JSON")) is False
    assert sr.test_compatibility(subject, Schema(json.dumps(obj({"x": NUM})), "JSON")) is True


@pytest.mark.hourglass(schema_registry=True)
def test_compatibility_policy_lenient_from_the_subjects_config(hourglass_broker):
    """Confluent's ``compatibilityPolicy`` config: LENIENT lets an optional property join an open
    content model, which STRICT (the default) refuses."""
    sr = SchemaRegistryClient({"url": hourglass_broker.schema_registry_url})
    subject = f"pol-{uuid.uuid4().hex[:8]}"
    sr.register_schema(subject, Schema(json.dumps(obj({"a": STR})), "JSON"))
    grown = Schema(json.dumps(obj({"a": STR, "b": STR})), "JSON")
    assert sr.test_compatibility(subject, grown) is False
    import urllib.request
    req = urllib.request.Request(f"{hourglass_broker.schema_registry_url}/config/{subject}", method="PUT",
                                 data=json.dumps({"compatibilityPolicy": "lenient"}).encode(),
                                 headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        assert json.loads(r.read()) == {"compatibilityPolicy": "lenient"}
    assert sr.test_compatibility(subject, grown) is True
    assert sr.register_schema(subject, grown) > 0
