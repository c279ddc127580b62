"""PROTOBUF schemas (schema_registry/formats/protobuf.py), without a broker.

Parsing both forms (``.proto`` text through protoc, base64 FileDescriptorProto as
confluent-kafka's serializer sends it), protoc's messages for invalid schemas, the canonical
text (stable, compiles, one text for both forms), and Confluent's Protobuf compatibility rules
as a table of schema pairs with their verdict per level (from Confluent's ``SchemaDiff`` and
its documentation), plus a property test of the scalar groups against a brute-force model.
"""
from __future__ import annotations

import base64

import pytest
from google.protobuf import descriptor_pb2
from hypothesis import given, settings, strategies as st

from schema_registry.formats.protobuf import SchemaError, parse, schema_diff

P3 = 'syntax = "proto3";\n'
P2 = 'syntax = "proto2";\n'


def _p(text: str, refs=None):
    return parse(text, refs or {})


def verdicts(old: str, new: str, old_refs=None, new_refs=None) -> tuple[bool, bool, bool]:
    o, n = _p(old, old_refs), _p(new, new_refs)
    return tuple(not n.compatibility_errors(o, level) for level in ("BACKWARD", "FORWARD", "FULL"))


# ---------------------------------------------------------------------------------- parsing

def test_text_and_descriptor_forms_share_one_canonical_text():
    text = P3 + """package shop.v1;
import "google/protobuf/timestamp.proto";
message Order {
  string id = 1;
  google.protobuf.Timestamp at = 2;
  map<string, int64> qty = 3;
  optional string note = 4;
  oneof pay { string card = 5; string iban = 6; }
  Status status = 7;
  message Line { int32 n = 1; }
  repeated Line lines = 8;
}
enum Status { NEW = 0; PAID = 1; }
"""
    s = _p(text)
    assert s.schema_type == "PROTOBUF"
    c = s.canonical()
    assert "map<string, int64> qty = 3;" in c and "optional string note = 4;" in c
    assert ".google.protobuf.Timestamp at = 2;" in c and "oneof pay {" in c
    # stable: the canonical text parses to itself
    assert _p(c).canonical() == c
    # the serialized form (what ?format=serialized answers) parses back to the same text
    ser = s.formatted("serialized")
    fdp = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(ser))
    assert [m.name for m in fdp.message_type] == ["Order"] and fdp.package == "shop.v1"
    assert _p(ser).canonical() == c
    assert s.record_name() == "shop.v1.Order" and s.record_name([0, 1]) == "shop.v1.Order.Line"


def test_descriptor_from_a_generated_class_is_accepted():
    # what ProtobufSerializer registers: base64 of the class's file descriptor
    from google.protobuf import timestamp_pb2
    ser = base64.standard_b64encode(timestamp_pb2.DESCRIPTOR.serialized_pb).decode()
    s = _p(ser)
    assert "message Timestamp {" in s.canonical() and "int64 seconds = 1;" in s.canonical()
    assert s.record_name() == "google.protobuf.Timestamp"


def test_references_are_compiled_beside_the_schema():
    common = P3 + "package common;\nmessage Money { int64 units = 1; string currency = 2; }\n"
    s = _p(P3 + 'import "common/money.proto";\nmessage Price { common.Money amount = 1; }\n',
           {"common/money.proto": common})
    assert ".common.Money amount = 1;" in s.canonical()
    assert list(s.deps) == ["common/money.proto"] or "common/money.proto" in s.deps


@pytest.mark.parametrize("text, fragment", [
    (P3 + "message C { int32 y = 1; strin z = 2; }", '"strin" is not defined.'),
    (P3 + "message C { int32 y = 1; string z = 1; }", 'Field number 1 has already been used'),
    (P3 + 'import "missing.proto";\nmessage C { int32 y = 1; }', "missing.proto: File not found."),
    ("not a schema at all", "Expected top-level statement"),
    (P3 + "message C { int32 y = 1 }", "Expected \";\""),
])
def test_invalid_schemas_get_protocs_message(text, fragment):
    with pytest.raises(SchemaError) as exc:
        _p(text)
    assert fragment in str(exc.value)
    # protoc's file:line:column
    assert "default:" in str(exc.value) or "File not found" in str(exc.value)


def test_reference_name_may_not_escape_the_temp_dir():
    with pytest.raises(SchemaError):
        _p(P3 + 'import "../x.proto";\nmessage C { int32 y = 1; }', {"../x.proto": P3})


def test_normalized_sorts_fields_and_imports_but_keeps_message_order():
    a = _p(P3 + 'import "google/protobuf/timestamp.proto";\nimport "google/protobuf/any.proto";\n'
           "message Z { int32 b = 2; int32 a = 1; google.protobuf.Timestamp t = 3; google.protobuf.Any x = 4; }\n"
           "message A { int32 x = 1; }\n")
    n = a.normalized()
    assert n.index('any.proto') < n.index('timestamp.proto')
    assert n.index("int32 a = 1;") < n.index("int32 b = 2;")
    assert n.index("message Z") < n.index("message A")
    assert _p(n).normalized() == n


# ---------------------------------------------------------------------------- compatibility

M = "message M {\n  %s\n}\n"

# (name, old, new, (BACKWARD, FORWARD, FULL)); Confluent's rules (protobuf diff/SchemaDiff):
# which difference types are compatible is one set, applied old->new for BACKWARD and
# new->old for FORWARD.
CASES = [
    ("field added", P3 + M % "int32 a = 1;", P3 + M % "int32 a = 1; string b = 2;", (True, True, True)),
    ("field removed", P3 + M % "int32 a = 1; string b = 2;", P3 + M % "int32 a = 1;", (True, True, True)),
    ("field renamed", P3 + M % "int32 a = 1;", P3 + M % "int32 renamed = 1;", (True, True, True)),
    ("int32 -> int64 (one group)", P3 + M % "int32 a = 1;", P3 + M % "int64 a = 1;", (True, True, True)),
    ("uint64 -> bool (one group)", P3 + M % "uint64 a = 1;", P3 + M % "bool a = 1;", (True, True, True)),
    ("int32 -> sint32", P3 + M % "int32 a = 1;", P3 + M % "sint32 a = 1;", (False, False, False)),
    ("sint32 -> sint64", P3 + M % "sint32 a = 1;", P3 + M % "sint64 a = 1;", (True, True, True)),
    ("string -> bytes", P3 + M % "string a = 1;", P3 + M % "bytes a = 1;", (True, True, True)),
    ("int32 -> string", P3 + M % "int32 a = 1;", P3 + M % "string a = 1;", (False, False, False)),
    ("fixed32 -> sfixed32", P3 + M % "fixed32 a = 1;", P3 + M % "sfixed32 a = 1;", (True, True, True)),
    ("fixed32 -> fixed64", P3 + M % "fixed32 a = 1;", P3 + M % "fixed64 a = 1;", (False, False, False)),
    ("float -> double", P3 + M % "float a = 1;", P3 + M % "double a = 1;", (False, False, False)),
    ("int32 -> enum", P3 + M % "int32 a = 1;" + "enum E { Z = 0; }\n",
     P3 + M % "E a = 1;" + "enum E { Z = 0; }\n", (True, True, True)),
    ("scalar -> message", P3 + M % "int32 a = 1;" + "message N { int32 x = 1; }\n",
     P3 + M % "N a = 1;" + "message N { int32 x = 1; }\n", (False, False, False)),
    ("message type renamed", P3 + M % "N a = 1;" + "message N { int32 x = 1; }\nmessage O { int32 x = 1; }\n",
     P3 + M % "O a = 1;" + "message N { int32 x = 1; }\nmessage O { int32 x = 1; }\n", (False, False, False)),
    ("map value kind", P3 + M % "map<string, int32> a = 1;", P3 + M % "map<string, string> a = 1;",
     (False, False, False)),
    ("map value int32 -> int64", P3 + M % "map<string, int32> a = 1;", P3 + M % "map<string, int64> a = 1;",
     (True, True, True)),
    ("map -> scalar", P3 + M % "map<string, int32> a = 1;", P3 + M % "int32 a = 1;", (False, False, False)),
    ("package changed", P3 + "package a;\n" + M % "int32 a = 1;", P3 + "package b;\n" + M % "int32 a = 1;",
     (False, False, False)),
    ("message removed", P3 + M % "int32 a = 1;" + "message N { int32 x = 1; }\n", P3 + M % "int32 a = 1;",
     (False, True, False)),
    ("message added", P3 + M % "int32 a = 1;", P3 + M % "int32 a = 1;" + "message N { int32 x = 1; }\n",
     (True, False, False)),
    ("messages reordered", P3 + "message A { int32 a = 1; }\nmessage B { int32 b = 1; }\n",
     P3 + "message B { int32 b = 1; }\nmessage A { int32 a = 1; }\n", (True, True, True)),
    ("nested message removed", P3 + "message A { message In { int32 x = 1; } In i = 1; }\n",
     P3 + "message A { int32 j = 2; }\n", (False, True, False)),
    ("enum value added", P3 + "enum E { A = 0; }\n" + M % "E e = 1;", P3 + "enum E { A = 0; B = 1; }\n" + M % "E e = 1;",
     (True, True, True)),
    ("enum removed", P3 + "enum E { A = 0; }\n" + M % "int32 e = 1;", P3 + M % "int32 e = 1;", (True, True, True)),
    ("proto2 required added", P2 + M % "optional int32 a = 1;", P2 + M % "optional int32 a = 1; required int32 b = 2;",
     (False, False, False)),
    ("proto2 optional added", P2 + M % "optional int32 a = 1;", P2 + M % "optional int32 a = 1; optional int32 b = 2;",
     (True, True, True)),
    ("proto2 optional -> repeated number", P2 + M % "optional int32 a = 1;", P2 + M % "repeated int32 a = 1;",
     (False, False, False)),
    ("proto2 optional -> repeated string", P2 + M % "optional string a = 1;", P2 + M % "repeated string a = 1;",
     (True, True, True)),
    ("proto3 implicit -> repeated (no label to compare)", P3 + M % "int32 a = 1;", P3 + M % "repeated int32 a = 1;",
     (True, True, True)),
    ("proto3 optional -> repeated", P3 + M % "optional int32 a = 1;", P3 + M % "repeated int32 a = 1;",
     (False, False, False)),
    ("proto2 -> proto3 same fields", P2 + M % "optional int32 a = 1;", P3 + M % "int32 a = 1;", (True, True, True)),
    ("oneof added around one field", P3 + M % "int32 a = 1;", P3 + M % "oneof o { int32 a = 1; }",
     (True, True, True)),
    ("two fields moved into a new oneof", P3 + M % "int32 a = 1; int32 b = 2;",
     P3 + M % "oneof o { int32 a = 1; int32 b = 2; }", (False, True, False)),
    ("field moved into an existing oneof", P3 + M % "int32 a = 1; oneof o { int32 b = 2; }",
     P3 + M % "oneof o { int32 a = 1; int32 b = 2; }", (False, True, False)),
    ("oneof member added", P3 + M % "oneof o { int32 a = 1; }", P3 + M % "oneof o { int32 a = 1; int32 b = 2; }",
     (True, False, False)),
    ("oneof member removed", P3 + M % "oneof o { int32 a = 1; int32 b = 2; }", P3 + M % "oneof o { int32 a = 1; }",
     (False, True, False)),
    ("whole oneof removed", P3 + M % "int32 x = 3; oneof o { int32 a = 1; int32 b = 2; }", P3 + M % "int32 x = 3;",
     (True, True, True)),
    ("oneof renamed", P3 + M % "oneof o { int32 a = 1; int32 b = 2; }", P3 + M % "oneof p { int32 a = 1; int32 b = 2; }",
     (True, True, True)),
    ("oneof member moved to top level", P3 + M % "oneof o { int32 a = 1; int32 b = 2; }",
     P3 + M % "int32 a = 1; oneof o { int32 b = 2; }", (True, False, False)),
    ("type change inside a oneof", P3 + M % "oneof o { int32 a = 1; string s = 2; }",
     P3 + M % "oneof o { string a = 1; string s = 2; }", (False, False, False)),
]


@pytest.mark.parametrize("name, old, new, expected", CASES, ids=[c[0] for c in CASES])
def test_compatibility_matrix(name, old, new, expected):
    assert verdicts(old, new) == expected


def test_messages_name_the_path_and_the_sides():
    old, new = _p(P3 + M % "int32 a = 1;"), _p(P3 + M % "string a = 1;")
    errs = new.compatibility_errors(old, "BACKWARD")
    assert errs == ['{errorType:"FIELD_SCALAR_KIND_CHANGED", description:"The kind of a SCALAR field at path '
                    "'#/M/1' in the new schema does not match its kind in the old schema\"}"]
    fwd = new.compatibility_errors(old, "FORWARD")
    assert "in the old schema does not match its kind in the new schema" in fwd[0]
    assert len(new.compatibility_errors(old, "FULL")) == 2
    assert new.compatibility_errors(old, "backward_transitive") == errs


def test_changed_reference_is_compared_inside():
    v1 = P3 + "package common;\nmessage Money { int64 units = 1; }\n"
    v2 = P3 + "package common;\nmessage Money { string units = 1; }\n"
    v3 = P3 + "package common;\nmessage Money { int64 units = 1; string currency = 2; }\n"
    main = P3 + 'import "money.proto";\nmessage Price { common.Money amount = 1; }\n'
    assert verdicts(main, main, {"money.proto": v1}, {"money.proto": v2}) == (False, False, False)
    assert verdicts(main, main, {"money.proto": v1}, {"money.proto": v3}) == (True, True, True)
    diffs = schema_diff(_p(main, {"money.proto": v1}), _p(main, {"money.proto": v2}))
    assert {d.type for d in diffs} >= {"FIELD_SCALAR_KIND_CHANGED", "FIELD_NAMED_TYPE_CHANGED"}


def test_a_different_schema_type_is_incompatible():
    class Other:
        schema_type = "AVRO"
    assert _p(P3 + M % "int32 a = 1;").compatibility_errors(Other(), "BACKWARD") == [
        "Incompatible because of different schema type"]


# Confluent groups scalars as protobuf's "updating a message type" guide does; the brute-force
# model: two scalar types are interchangeable exactly when they are in one group.
GROUPS = [{"int32", "int64", "uint32", "uint64", "bool"}, {"sint32", "sint64"}, {"string", "bytes"},
          {"fixed32", "sfixed32"}, {"fixed64", "sfixed64"}, {"float"}, {"double"}]
SCALARS = sorted(set().union(*GROUPS))


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(SCALARS), st.sampled_from(SCALARS), st.sampled_from(["", "repeated ", "optional "]))
def test_scalar_changes_follow_the_groups(a, b, label):
    same_group = any(a in g and b in g for g in GROUPS)
    v = verdicts(P3 + M % f"{label}{a} f = 1;", P3 + M % f"{label}{b} f = 1;")
    assert v == (same_group,) * 3


def test_nested_type_order_survives_map_fields_and_groups():
    # message indexes count map entries and groups among the nested types, in declaration order
    for text in (P3 + "message A { message In { int32 x = 1; } map<string, In> m = 1; In i = 2; }\n",
                 P3 + "message A { map<string, int32> m = 1; message In { int32 x = 1; } }\n",
                 P2 + "message A { message In { optional int32 x = 1; } optional group G = 1 { optional int32 y = 2; }"
                      " map<string, In> m = 3; }\n"):
        s = _p(text)
        raw = parse(text, {}).fdp
        again = _p(s.canonical()).fdp
        assert [n.name for n in again.message_type[0].nested_type] == [n.name for n in raw.message_type[0].nested_type]
        assert _p(s.formatted("serialized")).canonical() == s.canonical()


def test_custom_options_survive_the_canonical_text():
    opts = (P3 + 'package o;\nimport "google/protobuf/descriptor.proto";\n'
            "extend google.protobuf.FieldOptions { int32 weight = 50001; string label = 50002; }\n"
            "extend google.protobuf.MessageOptions { bool audited = 50003; }\n")
    s = _p(P3 + 'import "opts.proto";\nmessage M { option (o.audited) = true;\n'
           '  int32 a = 1 [(o.weight) = 5, (o.label) = "x"]; }\n', {"opts.proto": opts})
    c = s.canonical()
    assert "option (o.audited) = true;" in c and '(o.weight) = 5' in c and '(o.label) = "x"' in c
    assert _p(c, {"opts.proto": opts}).canonical() == c
    assert _p(s.formatted("serialized"), {"opts.proto": opts}).canonical() == c


def test_confluents_own_protos_are_known_without_references():
    # confluent-kafka's serializers never send confluent/meta.proto as a reference
    s = _p(P3 + 'import "confluent/meta.proto";\n'
           'message M { int32 a = 1 [(confluent.field_meta) = { doc: "the a", tags: ["PII"] }]; }\n')
    # as Confluent writes an option it read from a descriptor (the wire library's option map)
    assert ('  int32 a = 1 [(confluent.field_meta) = {\n    doc: "the a",\n    tags: [\n      "PII"\n    ]\n  }];\n'
            in s.canonical())
    assert _p(s.formatted("serialized")).canonical() == s.canonical()


def test_options_are_laid_out_as_confluent_writes_a_descriptor():
    # Confluent's ProtobufSchema(descriptor).canonicalString(): a message-valued option as a
    # multi-line map (lists one item a line, "," between entries), several options of one field
    # one a line, and blank lines inside a nested message indented like the rest
    s = _p(P3 + 'package lay;\nimport "confluent/meta.proto";\n'
               'message Top {\n'
               '  option (confluent.message_meta).tags = "A";\n'
               '  int32 one = 1 [(confluent.field_meta).tags = "X", (confluent.field_meta).tags = "Y"];\n'
               '  string two = 2 [json_name = "zwei", (confluent.field_meta) = { doc: "d", tags: ["T"] }];\n'
               '  message In {\n    option (confluent.message_meta).doc = "in";\n    int64 n = 1;\n  }\n'
               '}\n')
    assert s.canonical() == (
        'syntax = "proto3";\npackage lay;\n\nimport "confluent/meta.proto";\n\n'
        'message Top {\n'
        '  option (confluent.message_meta) = {\n    tags: [\n      "A"\n    ]\n  };\n\n'
        '  int32 one = 1 [(confluent.field_meta) = {\n    tags: [\n      "X",\n      "Y"\n    ]\n  }];\n'
        '  string two = 2 [\n    json_name = "zwei",\n    (confluent.field_meta) = {\n      doc: "d",\n'
        '      tags: [\n        "T"\n      ]\n    }\n  ];\n\n'
        '  message In {\n    option (confluent.message_meta) = {\n      doc: "in"\n    };\n  \n    int64 n = 1;\n  }\n'
        '}\n')
    # normalized: a lone list item bare, as Confluent's normalization writes tags: "A"
    assert '  option (confluent.message_meta) = {\n    tags: "A"\n  };\n' in s.normalized()
    assert _p(s.canonical()).canonical() == s.canonical()
