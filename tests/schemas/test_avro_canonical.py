"""AVRO schema text as Java clients see it: our canonical form against Apache Avro's Java library
(``Schema.Parser().parse(text).toString(references, false)``, the text Confluent's registry keeps),
on a corpus of schemas, both through the pure function and through the broker's registry with
confluent-kafka's SchemaRegistryClient. The JVM side is tests/jvm/avro-canonical (``make jvm``)."""
from __future__ import annotations

import json
import subprocess
import uuid

import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient

from schema_registry.formats import parse_schema
from schema_registry.store import schema_guid
from tests.helpers import jvm

pytestmark = pytest.mark.hourglass(schema_registry=True)


def rec(name, fields, **extra):
    return {"type": "record", "name": name, "fields": fields, **extra}


def f(name, type_, **extra):
    return {"name": name, "type": type_, **extra}


ENUM = {"type": "enum", "name": "Suit", "symbols": ["HEARTS", "SPADES"]}
# (case, referenced schemas dependencies first, the schema): the inputs are written with keys out
# of Avro-Java's order on purpose
CORPUS: list[tuple[str, list, object]] = [
    ("primitive", [], "int"),
    ("primitive as object", [], {"type": "long"}),
    ("primitive with a property", [], {"avro.java.string": "String", "type": "string"}),
    ("logical date", [], {"type": "int", "logicalType": "date"}),
    ("logical decimal bytes", [], {"scale": 2, "type": "bytes", "precision": 9, "logicalType": "decimal"}),
    ("logical decimal fixed", [], {"type": "fixed", "size": 8, "name": "Dec", "logicalType": "decimal", "precision": 12}),
    ("logical uuid and timestamps", [], rec("T", [f("id", {"type": "string", "logicalType": "uuid"}),
                                                  f("at", {"type": "long", "logicalType": "timestamp-millis"}),
                                                  f("us", {"type": "long", "logicalType": "local-timestamp-micros"})])),
    ("field type before name", [], {"fields": [{"type": "int", "name": "a"}], "name": "R", "type": "record"}),
    ("record in a namespace", [], rec("R", [f("a", "int")], namespace="com.acme")),
    ("dotted name", [], rec("com.acme.R", [f("a", "int")])),
    ("dotted name and a namespace", [], rec("com.acme.R", [f("a", "int")], namespace="org.other")),
    ("nested record, same namespace", [], rec("Outer", [f("in", rec("Inner", [f("x", "int")])),
                                                         f("again", "Inner")], namespace="n")),
    ("nested record, other namespace", [], rec("Outer", [f("in", rec("Inner", [f("x", "int")], namespace="m")),
                                                          f("again", "m.Inner")], namespace="n")),
    ("nested record, null namespace inside", [], rec("Outer", [f("in", rec("Inner", [f("x", "int")], namespace="")),
                                                                f("again", "Inner")], namespace="n")),
    ("reference by full name in the same namespace", [], rec("Outer", [f("e", {**ENUM, "namespace": "n"}),
                                                                        f("e2", "n.Suit")], namespace="n")),
    ("enum with doc, default, aliases", [], {"type": "enum", "name": "E", "namespace": "p", "symbols": ["A", "B"],
                                             "default": "A", "doc": "an enum", "aliases": ["p.Old", "q.Older", "Short"]}),
    ("fixed with aliases", [], {"size": 16, "type": "fixed", "name": "MD5", "namespace": "h", "aliases": ["Hash"]}),
    ("record with doc and aliases", [], rec("R", [f("a", "int")], doc="the R", aliases=["S", "x.T"], namespace="x")),
    ("field doc, default, order, aliases", [], rec("R", [
        {"default": 3, "name": "a", "type": "int", "order": "descending", "aliases": ["b", "c"], "doc": "A!"},
        {"type": "string", "order": "ignore", "name": "s"}, {"type": "long", "order": "ascending", "name": "l"}])),
    ("custom properties everywhere", [], rec("R", [f("a", "int", **{"x-prop": {"k": [1, 2]}, "y": "z"}),
                                                   f("arr", {"type": "array", "items": "int", "p": 1}),
                                                   f("m", {"values": "long", "type": "map", "q": True})],
                                             **{"connect.name": "R", "meta": None})),
    ("defaults of each kind", [], rec("D", [
        f("i", "int", default=1), f("l", "long", default=10000000000), f("fl", "float", default=1.5),
        f("d", "double", default=1e10), f("d2", "double", default=0.00001), f("d3", "double", default=2),
        f("d4", "double", default=100.0), f("s", "string", default="h\u00e9 \"q\" \\ \n"), f("b", "boolean", default=False),
        f("n", "null", default=None), f("by", "bytes", default="\u00ff\u0000"),
        f("u", ["null", "int"], default=None), f("a", {"type": "array", "items": "int"}, default=[1, 2]),
        f("m", {"type": "map", "values": "int"}, default={"b": 1, "a": 2}),
        f("e", ENUM, default="SPADES"),
        f("r", rec("Sub", [f("x", "int"), f("y", "string", default="q")]), default={"x": 1}),
        f("fs", "float", default="2.5")])),
    ("unions with named types", [], rec("U", [f("u", ["null", ENUM, rec("X", [f("a", "int")])], default=None),
                                              f("v", ["X", "Suit", "un.X"][:2])], namespace="un")),
    ("array and map of named types", [], rec("A", [f("a", {"type": "array", "items": ENUM}),
                                                   f("m", {"type": "map", "values": "Suit"})])),
    ("recursive linked list", [], rec("Node", [f("value", "int"), f("next", ["null", "Node"], default=None)],
                                      namespace="ll")),
    ("error type", [], {"type": "error", "name": "Oops", "fields": [f("msg", "string")]}),
    ("unicode and escapes", [], rec("R", [f("a", "string", doc="caf\u00e9 \u2603 \t tab")], doc="\u00fcber")),
    ("names like types in a namespace", [], rec("R", [f("x", rec("record", [f("a", "int")], namespace="ns")),
                                                      f("y", "ns.record")], namespace="ns")),
    ("deep nesting, three namespaces", [], rec("A", [f("b", rec("B", [f("c", rec("C", [f("x", "int")], namespace="c")),
                                                                       f("c2", "c.C")], namespace="b")),
                                                     f("b2", "b.B"), f("c3", "c.C")], namespace="a")),
    ("top-level union", [], ["null", "string", rec("R", [f("a", "int")])]),
    ("array top level", [], {"type": "array", "items": rec("It", [f("a", "int")], namespace="z")}),
    # references: the referenced schemas' top-level names print as names, Java-side and ours
    ("reference used by name", [rec("Address", [f("street", "string")], namespace="geo")],
     rec("Person", [f("home", "geo.Address"), f("work", ["null", "geo.Address"], default=None)], namespace="people")),
    ("reference in the same namespace", [rec("Address", [f("street", "string")], namespace="geo")],
     rec("Place", [f("a", "Address")], namespace="geo")),
    ("reference enum without namespace", [ENUM], rec("Card", [f("suit", "Suit")])),
    ("reference holding a nested type the schema uses",
     [rec("Wrapper", [f("inner", rec("Inner", [f("x", "int")]))], namespace="w")],
     rec("Uses", [f("w", "w.Wrapper"), f("i", "w.Inner")], namespace="u")),
    ("two references, one using the other", [ENUM, rec("Hand", [f("cards", {"type": "array", "items": "Suit"})])],
     rec("Game", [f("h", "Hand"), f("s", "Suit")])),
]


@pytest.fixture(scope="module")
def java_texts() -> dict[str, str]:
    """Avro-Java's text for every corpus case: one JVM for the whole module."""
    lines = ["\t".join(json.dumps(x, separators=(",", ":"), ensure_ascii=False) for x in [*refs, schema])
             for _, refs, schema in CORPUS]
    cp = jvm.classpath(jvm.libs(f"avro-{jvm.version('avro')}"))
    out = subprocess.run([jvm.java(), "-cp", cp, "dev.hourglass.avro.AvroToString"], input="\n".join(lines) + "\n",
                         capture_output=True, text=True, encoding="utf-8", timeout=120, check=True).stdout
    got = out.splitlines()
    assert len(got) == len(CORPUS), out
    return {case: text for (case, _, _), text in zip(CORPUS, got)}


def ours(refs, schema) -> str:
    references = {f"r{i}": json.dumps(r) for i, r in enumerate(refs)}
    return parse_schema("AVRO", json.dumps(schema), references).canonical()


@pytest.mark.parametrize("case", [c for c, _, _ in CORPUS])
def test_canonical_text_is_avro_javas(java_texts, case):
    _, refs, schema = next(x for x in CORPUS if x[0] == case)
    assert not java_texts[case].startswith("ERROR"), java_texts[case]
    assert ours(refs, schema) == java_texts[case]


def test_registered_text_and_guid_are_what_java_clients_see(hourglass_broker, java_texts):
    sr = SchemaRegistryClient({"url": hourglass_broker.schema_registry_url})
    tag = uuid.uuid4().hex[:8]
    for case, refs, schema in CORPUS:
        if refs:
            continue
        subject = f"canon-{tag}-{abs(hash(case))}"
        sr.register_schema(subject, Schema(json.dumps(schema), "AVRO"))
        got = sr.get_latest_version(subject)
        assert got.schema.schema_str == java_texts[case], case
        assert got.guid == schema_guid(java_texts[case], [])
    # with a reference, as Confluent renders it (the referenced name stays a name)
    case = "reference used by name"
    _, refs, schema = next(x for x in CORPUS if x[0] == case)
    sr.register_schema(f"geo-{tag}", Schema(json.dumps(refs[0]), "AVRO"))
    ref = SchemaReference("geo.Address", f"geo-{tag}", 1)
    sr.register_schema(f"person-{tag}", Schema(json.dumps(schema), "AVRO", [ref]))
    assert sr.get_latest_version(f"person-{tag}").schema.schema_str == java_texts[case]
