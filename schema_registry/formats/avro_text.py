"""The text Avro-Java prints for an AVRO schema (``Schema.toString(references, false)``), pure.

Confluent's registry keeps and answers that text (``AvroSchema.canonicalString()``), and Java
clients compute fingerprints and GUIDs over it, so the registry produces the same characters:

- keys in Avro-Java's order: ``type``, ``name``, ``namespace`` (only where it differs from the
  enclosing one; ``""`` for a null namespace inside a non-null one), ``doc``, then ``fields`` /
  ``symbols`` (+ enum ``default``) / ``size`` / ``items`` / ``values``, custom properties in
  their given order, ``aliases`` (relative to the type's namespace); fields as ``name``,
  ``type``, ``doc``, ``default``, ``order`` (when not ascending), ``aliases``, properties;
- a named type is written in full where it is first met and as a name afterwards, short when
  its namespace is the enclosing one (and the name is no primitive's), else fully qualified;
  the top-level names of the referenced schemas count as met (Confluent passes them in);
- a primitive without properties is its name (``{"type":"int"}`` is ``"int"``);
- JSON values (defaults, properties) as Jackson writes them: a fraction as Java's
  ``Double.toString`` (``1.0E10``, ``1.0E-5``), text unescaped beyond JSON's rules.

Name resolution follows Avro-Java's parser: an unqualified name is looked up in the enclosing
namespace, then as given; a record is known by name only once its fields are parsed.
The schema has been validated by Apache Avro's Python parser before this runs.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from storage.log_config import java_double_str

PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
# Avro-Java's Schema.Type names: a named type called like one is always written qualified
TYPE_NAMES = frozenset(PRIMITIVES) | {"record", "enum", "array", "map", "union", "fixed"}
SCHEMA_RESERVED = frozenset(("doc", "fields", "items", "name", "namespace", "size", "symbols", "values",
                             "type", "aliases"))
ENUM_RESERVED = SCHEMA_RESERVED | {"default"}
FIELD_RESERVED = frozenset(("default", "doc", "name", "order", "type", "aliases"))


@dataclass
class Name:
    name: str
    space: str | None

    @classmethod
    def of(cls, name: str, space: str | None) -> "Name":
        if "." in name:
            space, name = name.rsplit(".", 1)
        return cls(name, space or None)

    @property
    def full(self) -> str:
        return self.name if self.space is None else f"{self.space}.{self.name}"

    def qualified(self, default_space: str | None) -> str:
        if self.space is not None and self.space == default_space and self.name not in TYPE_NAMES:
            return self.name
        return self.full


@dataclass
class Prim:
    type: str
    props: dict


@dataclass
class Ref:
    full: str


@dataclass
class Field:
    name: str
    type: Any
    doc: str | None
    default: Any
    has_default: bool
    order: str
    aliases: list[str] | None
    props: dict


@dataclass
class Named:
    kind: str  # record, error, enum, fixed
    name: Name
    doc: str | None
    props: dict
    aliases: list[str] | None
    fields: list[Field] = field(default_factory=list)
    symbols: list = field(default_factory=list)
    enum_default: str | None = None
    size: int = 0


@dataclass
class Container:
    kind: str  # array, map
    child: Any
    props: dict


@dataclass
class Union:
    branches: list


def _text(node: dict, key: str) -> str | None:
    """Jackson's ``textValue()``: the string, or None for anything else."""
    v = node.get(key)
    return v if isinstance(v, str) else None


def _props(node: dict, reserved) -> dict:
    return {k: v for k, v in node.items() if k not in reserved}


class _Parser:
    """Builds the model of one or more schema documents sharing named types (one Avro-Java
    ``Schema.Parser``)."""

    def __init__(self):
        self.defs: dict[str, Named] = {}

    def find(self, name: str, space: str | None):
        if name in PRIMITIVES:
            return Prim(name, {})
        full = f"{space}.{name}" if space is not None and "." not in name else name
        if full in self.defs:
            return Ref(full)
        if name in self.defs:
            return Ref(name)
        return Ref(full)  # defined later (a record's own name inside its fields)

    def parse(self, node, space: str | None):
        if isinstance(node, str):
            return self.find(node, space)
        if isinstance(node, list):
            return Union([self.parse(n, space) for n in node])
        if not isinstance(node, dict):
            raise ValueError(f"Schema not yet supported: {node!r}")
        t = _text(node, "type")
        if t in PRIMITIVES:
            return Prim(t, _props(node, SCHEMA_RESERVED))
        if t in ("record", "error", "enum", "fixed"):
            return self._named(t, node, space)
        if t in ("array", "map"):
            child = self.parse(node["items" if t == "array" else "values"], space)
            return Container(t, child, _props(node, SCHEMA_RESERVED))
        if t is None:
            raise ValueError(f"No type: {node!r}")
        return self.find(t, space)

    def _named(self, kind: str, node: dict, space: str | None) -> Named:
        own_space = _text(node, "namespace")
        name = Name.of(node["name"], own_space if own_space is not None else space)
        aliases = node.get("aliases")
        named = Named(kind, name, _text(node, "doc"),
                      _props(node, ENUM_RESERVED if kind == "enum" else SCHEMA_RESERVED),
                      [Name.of(a, name.space).qualified(name.space) for a in aliases] if aliases else None)
        if kind in ("record", "error"):
            named.fields = [self._field(f, name.space) for f in node["fields"]]
        elif kind == "enum":
            named.symbols = list(node["symbols"])
            named.enum_default = _text(node, "default")
        else:
            named.size = node["size"]
        self.defs.setdefault(name.full, named)
        return named

    def _field(self, node: dict, space: str | None) -> Field:
        ftype = self.parse(node["type"], space)
        default, has_default = node.get("default"), "default" in node
        if has_default and isinstance(default, str) and isinstance(ftype, Prim) and ftype.type in ("float", "double"):
            default = float(default)
        order = _text(node, "order")
        return Field(node["name"], ftype, _text(node, "doc"), default, has_default,
                     order.lower() if order else "ascending", list(node["aliases"]) if node.get("aliases") else None,
                     _props(node, FIELD_RESERVED))


def _json(v) -> str:
    """A JSON value as Jackson writes a parsed tree."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return java_double_str(v)  # Jackson writes a double as Java's Double.toString
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ",".join(_json(x) for x in v) + "]"
    return "{" + ",".join(f"{json.dumps(str(k), ensure_ascii=False)}:{_json(x)}" for k, x in v.items()) + "}"


class _Writer:
    def __init__(self, defs: dict[str, Named], known: set[str]):
        self.defs, self.known = defs, known

    def write(self, node, space: str | None) -> str:
        if isinstance(node, Prim):
            if not node.props:
                return _json(node.type)
            return "{" + ",".join([f'"type":{_json(node.type)}', *self._props(node.props)]) + "}"
        if isinstance(node, Ref):
            return self._named(self.defs[node.full], space)
        if isinstance(node, Named):
            return self._named(node, space)
        if isinstance(node, Container):
            key = "items" if node.kind == "array" else "values"
            return "{" + ",".join([f'"type":"{node.kind}"', f'"{key}":{self.write(node.child, space)}',
                                   *self._props(node.props)]) + "}"
        return "[" + ",".join(self.write(b, space) for b in node.branches) + "]"

    @staticmethod
    def _props(props: dict) -> list[str]:
        return [f"{_json(k)}:{_json(v)}" for k, v in props.items()]

    def _named(self, n: Named, space: str | None) -> str:
        if n.name.full in self.known:
            return _json(n.name.qualified(space))
        self.known.add(n.name.full)
        parts = [f'"type":"{n.kind}"', f'"name":{_json(n.name.name)}']
        if n.name.space is not None:
            if n.name.space != space:
                parts.append(f'"namespace":{_json(n.name.space)}')
        elif space is not None:
            parts.append('"namespace":""')
        if n.doc is not None:
            parts.append(f'"doc":{_json(n.doc)}')
        if n.kind in ("record", "error"):
            parts.append('"fields":[' + ",".join(self._field(f, n.name.space) for f in n.fields) + "]")
        elif n.kind == "enum":
            parts.append(f'"symbols":{_json(n.symbols)}')
            if n.enum_default is not None:
                parts.append(f'"default":{_json(n.enum_default)}')
        else:
            parts.append(f'"size":{_json(n.size)}')
        parts.extend(self._props(n.props))
        if n.aliases:
            parts.append(f'"aliases":{_json(n.aliases)}')
        return "{" + ",".join(parts) + "}"

    def _field(self, f: Field, space: str | None) -> str:
        parts = [f'"name":{_json(f.name)}', f'"type":{self.write(f.type, space)}']
        if f.doc is not None:
            parts.append(f'"doc":{_json(f.doc)}')
        if f.has_default:
            parts.append(f'"default":{_json(f.default)}')
        if f.order != "ascending":
            parts.append(f'"order":{_json(f.order)}')
        if f.aliases:
            parts.append(f'"aliases":{_json(f.aliases)}')
        parts.extend(self._props(f.props))
        return "{" + ",".join(parts) + "}"


def java_text(data, references: list = ()) -> str:
    """Avro-Java's ``toString(references, false)`` of the parsed JSON ``data``; ``references``
    are the referenced schemas' parsed JSON, dependencies first."""
    parser = _Parser()
    known: set[str] = set()
    for ref in references:
        top = parser.parse(ref, None)
        if isinstance(top, Named):
            known.add(top.name.full)
    schema = parser.parse(data, None)
    return _Writer(parser.defs, known).write(schema, None)
