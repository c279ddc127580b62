"""JSON Schema compatibility as Confluent's ``SchemaDiff`` decides it (pure functions).

Confluent's registry loads a JSON Schema into everit's object model and walks two of them
(``SchemaDiff.compare(original, update)``), listing ``Difference``s; a difference whose type is
not in the policy's set of compatible changes makes the pair incompatible. ``original`` is the
schema data was written with and ``update`` the one reading it: BACKWARD compares (old, new),
FORWARD (new, old). This module is that walk over our own model of everit's schema classes:

- ``load`` builds the model the way everit's loader does: ``true`` / ``false`` / ``{}``;
  ``$ref`` (resolved into ``#/$defs``, ``#/definitions`` — a ``#/$defs/X`` also finds
  ``definitions.X``, as Confluent bridges them — and into referenced schemas by name);
  each of ``enum``, ``const``, ``not``, ``allOf``/``anyOf``/``oneOf`` and the type-specific
  keywords (by ``type``, or sniffed from the keywords present when it is absent) yields one
  schema, several are a (synthetic) ``allOf``; a list of types is an ``anyOf`` of one schema per
  type; ``title``/``description``/``default``/``$id`` go to the schema as a whole.
- ``compare`` follows SchemaDiff: a combined schema against a plain one (single-branch
  unwrapping, a plain schema matched by one ``anyOf``/``oneOf`` branch: SUM_TYPE_EXTENDED, one
  ``allOf`` branch matched by a plain schema: PRODUCT_TYPE_NARROWED); different schema classes
  are TYPE_CHANGED unless the original is ``false`` or the update is ``{}``/``true`` (or both
  carry ``connect.type: bytes``); then per class: strings (lengths, PATTERN_*), numbers
  (bounds, multipleOf, integer vs number), enum/const, ``not`` (reversed), combined schemas
  (criteria, sizes, and a maximum matching of compatible subschema pairs, else
  COMBINED_TYPE_SUBSCHEMAS_CHANGED), objects (required, properties against open, closed and
  partially open content models, dependencies, additionalProperties, unevaluatedProperties,
  min/maxProperties) and arrays (``items`` object vs tuple, tuples against open/closed/partial
  models, additionalItems, unevaluatedItems, bounds, uniqueItems, min/maxContains).
  Recursive ``$ref``s stop where a schema is already being compared, as SchemaDiff's context does.

Two places where SchemaDiff would throw (an ``exclusiveMaximum`` decrease compared with the
update's ``maximum``; a fractional ``multipleOf`` taken as an integer) give the evident
difference instead. An unresolvable ``$ref`` accepts anything.
"""
from __future__ import annotations

import json
import re
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

STRICT, LENIENT = "STRICT", "LENIENT"

_COMPATIBLE_STRICT = frozenset("""
ID_CHANGED DESCRIPTION_CHANGED TITLE_CHANGED DEFAULT_CHANGED SCHEMA_REMOVED TYPE_EXTENDED
MAX_LENGTH_INCREASED MAX_LENGTH_REMOVED MIN_LENGTH_DECREASED MIN_LENGTH_REMOVED PATTERN_REMOVED
MAXIMUM_INCREASED MAXIMUM_REMOVED MINIMUM_DECREASED MINIMUM_REMOVED EXCLUSIVE_MAXIMUM_INCREASED
EXCLUSIVE_MAXIMUM_REMOVED EXCLUSIVE_MINIMUM_DECREASED EXCLUSIVE_MINIMUM_REMOVED MULTIPLE_OF_REDUCED
MULTIPLE_OF_REMOVED REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED REQUIRED_ATTRIBUTE_REMOVED DEPENDENCY_ARRAY_NARROWED
DEPENDENCY_ARRAY_REMOVED DEPENDENCY_SCHEMA_REMOVED MAX_PROPERTIES_INCREASED MAX_PROPERTIES_REMOVED
MIN_PROPERTIES_DECREASED MIN_PROPERTIES_REMOVED ADDITIONAL_PROPERTIES_ADDED ADDITIONAL_PROPERTIES_EXTENDED
UNEVALUATED_PROPERTIES_ADDED UNEVALUATED_PROPERTIES_EXTENDED PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL
REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL
PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL
PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
MAX_ITEMS_INCREASED MAX_ITEMS_REMOVED MIN_ITEMS_DECREASED MIN_ITEMS_REMOVED MAX_CONTAINS_INCREASED
MAX_CONTAINS_REMOVED MIN_CONTAINS_DECREASED MIN_CONTAINS_REMOVED UNIQUE_ITEMS_REMOVED ADDITIONAL_ITEMS_ADDED
ADDITIONAL_ITEMS_EXTENDED UNEVALUATED_ITEMS_ADDED UNEVALUATED_ITEMS_EXTENDED
ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL ITEM_ADDED_TO_CLOSED_CONTENT_MODEL
ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL
ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
ENUM_ARRAY_EXTENDED COMBINED_TYPE_EXTENDED PRODUCT_TYPE_NARROWED SUM_TYPE_EXTENDED NOT_TYPE_NARROWED
""".split())
COMPATIBLE_CHANGES = {
    STRICT: _COMPATIBLE_STRICT,
    LENIENT: _COMPATIBLE_STRICT | frozenset("""
ADDITIONAL_PROPERTIES_NARROWED ADDITIONAL_PROPERTIES_REMOVED UNEVALUATED_PROPERTIES_NARROWED
UNEVALUATED_PROPERTIES_REMOVED REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL
OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL
PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
""".split()),
}

# ---------------------------------------------------------------------------------------- the model

OBJECT_KEYWORDS = ("properties", "required", "minProperties", "maxProperties", "dependencies",
                   "patternProperties", "additionalProperties", "propertyNames", "dependentRequired",
                   "dependentSchemas", "unevaluatedProperties")
ARRAY_KEYWORDS = ("items", "additionalItems", "minItems", "maxItems", "uniqueItems", "contains", "prefixItems",
                  "unevaluatedItems", "minContains", "maxContains")
NUMBER_KEYWORDS = ("minimum", "maximum", "multipleOf", "exclusiveMinimum", "exclusiveMaximum")
STRING_KEYWORDS = ("minLength", "maxLength", "pattern", "format")
CONDITIONAL_KEYWORDS = ("if", "then", "else")


@dataclass(eq=False)
class S:
    """One everit schema: ``kind`` names its class (true, empty, false, string, number, boolean,
    null, object, array, enum, const, not, combined, ref, conditional); ``a`` its attributes.
    Compared by identity, as everit's objects are in SchemaDiff's recursion guard."""
    kind: str
    a: dict = field(default_factory=dict)
    id: Any = None
    title: Any = None
    description: Any = None
    default: Any = None
    has_default: bool = False
    connect_type: Any = None

    def get(self, key, default=None):
        return self.a.get(key, default)


class Loader:
    """Loads schema documents (the root and the referenced ones, by name) into ``S`` objects;
    the same JSON node always loads to the same object, so ``$ref`` cycles are finite."""

    def __init__(self, root, references: dict[str, Any], modern: bool):
        self.root = root
        self.references = references
        self.modern = modern  # draft 2019-09 / 2020-12 keywords
        self._cache: dict[int, S] = {}
        self._keep: list = []  # nodes whose id() keys the cache stay alive

    def load(self, node, doc=None) -> S:
        doc = self.root if doc is None else doc
        key = id(node)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        s = S("empty")
        self._cache[key] = s  # before the children: a cycle finds it
        self._keep.append(node)
        self._fill(s, node, doc)
        return s

    def _fill(self, s: S, node, doc) -> None:
        if node is False:
            s.kind = "false"
            return
        if node is True or not isinstance(node, dict):
            s.kind = "true" if node is True else "empty"
            return
        if "$ref" in node and isinstance(node["$ref"], str) and not self.modern:
            s.kind, s.a = "ref", {"ref": node["$ref"], "doc": doc, "resolved": None}
            return
        built: list[S] = []
        if "$ref" in node and isinstance(node["$ref"], str):  # 2019-09+: $ref beside other keywords
            built.append(S("ref", {"ref": node["$ref"], "doc": doc, "resolved": None}))
        if "enum" in node and isinstance(node["enum"], list):
            built.append(S("enum", {"values": node["enum"]}))
        for crit in ("allOf", "anyOf", "oneOf"):
            if isinstance(node.get(crit), list):
                built.append(S("combined", {"criterion": crit, "subs": [self.load(x, doc) for x in node[crit]]}))
        if "not" in node:
            built.append(S("not", {"schema": self.load(node["not"], doc)}))
        if "const" in node:
            built.append(S("const", {"value": node["const"]}))
        t = node.get("type")
        if isinstance(t, list):
            built.append(S("combined", {"criterion": "anyOf", "subs": [self._typed(x, node, doc) for x in t]}))
        elif isinstance(t, str):
            built.append(self._typed(t, node, doc))
        else:
            if any(k in node for k in ARRAY_KEYWORDS):
                built.append(self._typed("array", node, doc))
            if any(k in node for k in OBJECT_KEYWORDS):
                built.append(self._typed("object", node, doc))
            if any(k in node for k in NUMBER_KEYWORDS):
                built.append(self._typed("number", node, doc))
            if any(k in node for k in STRING_KEYWORDS):
                built.append(self._typed("string", node, doc))
            if any(k in node for k in CONDITIONAL_KEYWORDS):
                built.append(S("conditional"))
        if len(built) == 1:
            s.kind, s.a = built[0].kind, built[0].a
        elif built:
            s.kind, s.a = "combined", {"criterion": "allOf", "subs": built, "synthetic": True}
        else:
            s.kind = "empty"
        s.id = node.get("$id", node.get("id"))
        s.title, s.description = node.get("title"), node.get("description")
        s.has_default, s.default = "default" in node, node.get("default")
        s.connect_type = node.get("connect.type")

    def _typed(self, t: str, node: dict, doc) -> S:
        if t == "string":
            return S("string", {k: node.get(k) for k in ("minLength", "maxLength", "pattern")})
        if t in ("number", "integer"):
            a = {k: node.get(k) for k in ("minimum", "maximum", "multipleOf")}
            for k in ("exclusiveMinimum", "exclusiveMaximum"):  # draft 4's booleans are no limits
                v = node.get(k)
                a[k] = v if isinstance(v, (int, float)) and not isinstance(v, bool) else None
            a["integer"] = t == "integer"
            return S("number", a)
        if t == "object":
            return self._object(node, doc)
        if t == "array":
            return self._array(node, doc)
        if t in ("boolean", "null"):
            return S(t)
        return S("empty")

    def _object(self, node: dict, doc) -> S:
        load = lambda x: self.load(x, doc)  # noqa: E731
        props = node.get("properties") if isinstance(node.get("properties"), dict) else {}
        extra = node.get("additionalProperties", True)
        deps = node.get("dependencies") if isinstance(node.get("dependencies"), dict) else {}
        prop_deps = {k: set(v) for k, v in deps.items() if isinstance(v, list)}
        schema_deps = {k: load(v) for k, v in deps.items() if not isinstance(v, list)}
        if isinstance(node.get("dependentRequired"), dict):
            prop_deps.update({k: set(v) for k, v in node["dependentRequired"].items() if isinstance(v, list)})
        if isinstance(node.get("dependentSchemas"), dict):
            schema_deps.update({k: load(v) for k, v in node["dependentSchemas"].items()})
        patterns = node.get("patternProperties") if isinstance(node.get("patternProperties"), dict) else {}
        return S("object", {
            "properties": {k: load(v) for k, v in props.items()},
            "required": set(node.get("required") or []) if isinstance(node.get("required", []), list) else set(),
            "permits_additional": extra is not False,
            "additional": None if isinstance(extra, bool) else load(extra),
            "patterns": [(p, load(v)) for p, v in patterns.items()],
            "property_deps": prop_deps, "schema_deps": schema_deps,
            "minProperties": node.get("minProperties"), "maxProperties": node.get("maxProperties"),
            "unevaluated": load(node["unevaluatedProperties"]) if "unevaluatedProperties" in node else None,
        })

    def _array(self, node: dict, doc) -> S:
        load = lambda x: self.load(x, doc)  # noqa: E731
        items = node.get("items")
        all_items, tuple_items, extra = None, None, node.get("additionalItems", True)
        if self.modern and isinstance(node.get("prefixItems"), list):
            # 2020-12: a tuple is prefixItems, and items holds what follows it
            tuple_items = [load(x) for x in node["prefixItems"]]
            extra = items if items is not None else True
        elif self.modern and isinstance(items, bool):
            extra = items
        elif isinstance(items, list):
            tuple_items = [load(x) for x in items]
        elif items is not None:
            all_items = load(items)
        return S("array", {
            "all_items": all_items, "items": tuple_items,
            "permits_additional": extra is not False,
            "additional": None if isinstance(extra, bool) else load(extra),
            "maxItems": node.get("maxItems"), "minItems": node.get("minItems"),
            "unique": node.get("uniqueItems") is True,
            "maxContains": node.get("maxContains"), "minContains": node.get("minContains"),
            "unevaluated": load(node["unevaluatedItems"]) if "unevaluatedItems" in node else None,
        })

    def resolve(self, ref: S) -> S:
        """The schema a ``$ref`` names; ``true`` when it names nothing we hold."""
        if ref.a["resolved"] is None:
            node, doc = self._lookup(ref.a["ref"], ref.a["doc"])
            ref.a["resolved"] = S("true") if node is None else self.load(node, doc)
        return ref.a["resolved"]

    def _lookup(self, ref: str, doc):
        target, _, fragment = ref.partition("#")
        if target:
            name = target[2:] if target.startswith("./") else target
            doc = self.references.get(name, self.references.get(target))
            if doc is None:
                return None, None
        fragment = urllib.parse.unquote(fragment)
        node = _pointer(doc, fragment)
        if node is None and fragment.startswith("/$defs/"):  # Confluent bridges definitions into $defs
            node = _pointer(doc, "/definitions/" + fragment[len("/$defs/"):])
        elif node is None and fragment.startswith("/definitions/"):
            node = _pointer(doc, "/$defs/" + fragment[len("/definitions/"):])
        return node, doc


def _pointer(doc, pointer: str):
    if pointer in ("", "/"):
        return doc
    if not pointer.startswith("/"):
        return None
    node = doc
    for part in pointer[1:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


# ---------------------------------------------------------------------------------------- the walk

@dataclass(frozen=True)
class Difference:
    type: str
    path: str


class Context:
    def __init__(self, loader: Loader, compatible: frozenset, schemas=(), path=()):
        self.loader, self.compatible = loader, compatible
        self.schemas: set[int] = set(schemas)  # ids of the originals being compared (recursion)
        self.path: list[str] = list(path)
        self.diffs: list[Difference] = []

    def sub(self) -> "Context":
        return Context(self.loader, self.compatible, self.schemas, self.path)

    def add(self, kind: str, attribute: str | None = None) -> None:
        parts = self.path + ([attribute] if attribute is not None else [])
        self.diffs.append(Difference(kind, "#/" + "/".join(parts)))

    def compatible_so_far(self) -> bool:
        return all(d.type in self.compatible for d in self.diffs)


class _Path:
    def __init__(self, ctx: Context, part: str):
        self.ctx, self.part = ctx, part

    def __enter__(self):
        self.ctx.path.append(self.part)

    def __exit__(self, *exc):
        self.ctx.path.pop()


def _canonical(s: S) -> str:
    """A key collapsing equal subschemas (Confluent collects them in sets of JsonSchema)."""
    return json.dumps(_node_key(s, set()), sort_keys=True, default=str)


def _node_key(s: S, seen: set):
    if id(s) in seen:
        return ["cycle", id(s)]
    seen = seen | {id(s)}
    out: dict = {"kind": s.kind, "id": s.id, "title": s.title, "description": s.description,
                 "default": [s.has_default, s.default]}
    for k, v in s.a.items():
        if k in ("doc", "resolved"):
            continue
        out[k] = _value_key(v, seen)
    return out


def _value_key(v, seen):
    if isinstance(v, S):
        return _node_key(v, seen)
    if isinstance(v, dict):
        return {str(k): _value_key(x, seen) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_value_key(x, seen) for x in v]
    if isinstance(v, set):
        return sorted(map(str, v))
    return v


def _kept_if_compatible(ctx: Context, original: S, update: S) -> bool:
    """Compares aside: when every difference is a compatible one, they join ``ctx``'s and the
    answer is True; otherwise ``ctx`` is left as it was."""
    sub = ctx.sub()
    compare(sub, original, update)
    if sub.compatible_so_far():
        ctx.diffs.extend(sub.diffs)
        return True
    return False


def compare(ctx: Context, original: S | None, update: S | None) -> None:
    """SchemaDiff.compare: add to ``ctx`` the differences from ``original`` to ``update``."""
    if original is None and update is None:
        return
    if original is None:
        ctx.add("SCHEMA_ADDED")
        return
    if update is None:
        ctx.add("SCHEMA_REMOVED")
        return
    if original.kind == "ref":
        original = ctx.loader.resolve(original)
    if update.kind == "ref":
        update = ctx.loader.resolve(update)

    if original.kind != "combined" and update.kind == "combined":
        subs = update.a["subs"]
        if len(subs) == 1:  # a single-branch union is its branch
            if _kept_if_compatible(ctx, original, subs[0]):
                return
        elif update.a["criterion"] in ("anyOf", "oneOf"):
            if any(_kept_if_compatible(ctx, original, branch) for branch in subs):  # the first that reads it
                ctx.add("SUM_TYPE_EXTENDED")
                return
    elif original.kind == "combined" and update.kind != "combined":
        subs = original.a["subs"]
        if len(subs) == 1:
            if _kept_if_compatible(ctx, subs[0], update):
                return
        elif original.a["criterion"] == "allOf":
            if any(_kept_if_compatible(ctx, branch, update) for branch in subs):
                ctx.add("PRODUCT_TYPE_NARROWED")
                return

    if original.kind != update.kind:
        if original.kind == "false" or update.kind in ("empty", "true"):  # TrueSchema is an EmptySchema
            return
        if original.connect_type == "bytes" and update.connect_type == "bytes":
            return
        ctx.add("TYPE_CHANGED")
        return

    if id(original) in ctx.schemas:  # already being compared further up: a recursive $ref
        return
    ctx.schemas.add(id(original))
    try:
        if original.id != update.id:
            ctx.add("ID_CHANGED")
        if original.title != update.title:
            ctx.add("TITLE_CHANGED")
        if original.description != update.description:
            ctx.add("DESCRIPTION_CHANGED")
        if (original.has_default, original.default) != (update.has_default, update.default):
            ctx.add("DEFAULT_CHANGED")
        fn = _BY_KIND.get(original.kind)
        if fn is not None:
            fn(ctx, original, update)
    finally:
        ctx.schemas.discard(id(original))


def _bounds(ctx: Context, o: S, u: S, *keys: str) -> None:
    """``<NAME>_ADDED/REMOVED/INCREASED/DECREASED`` for each numeric keyword in turn, NAME its
    camel case in capitals (``maxLength``: ``MAX_LENGTH_INCREASED``); a value that is no number
    counts as absent."""
    for key in keys:
        ov, uv = _number(o.get(key)), _number(u.get(key))
        if ov == uv:
            continue
        name = re.sub("([A-Z])", r"_\1", key).upper()
        if ov is None:
            ctx.add(f"{name}_ADDED", key)
        elif uv is None:
            ctx.add(f"{name}_REMOVED", key)
        elif ov < uv:
            ctx.add(f"{name}_INCREASED", key)
        elif ov > uv:
            ctx.add(f"{name}_DECREASED", key)


def _number(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _strings(ctx: Context, o: S, u: S) -> None:
    _bounds(ctx, o, u, "maxLength", "minLength")
    op, up = o.get("pattern"), u.get("pattern")
    if op is None and up is not None:
        ctx.add("PATTERN_ADDED", "pattern")
    elif op is not None and up is None:
        ctx.add("PATTERN_REMOVED", "pattern")
    elif op is not None and op != up:
        ctx.add("PATTERN_CHANGED", "pattern")


def _numbers(ctx: Context, o: S, u: S) -> None:
    # the loader keeps exclusiveMaximum/Minimum only as numbers (draft 4's booleans are no limits)
    _bounds(ctx, o, u, "maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum")
    om, um = _number(o.get("multipleOf")), _number(u.get("multipleOf"))
    if om != um:
        if om is None:
            ctx.add("MULTIPLE_OF_ADDED", "multipleOf")
        elif um is None:
            ctx.add("MULTIPLE_OF_REMOVED", "multipleOf")
        elif int(om) and int(um) and int(um) % int(om) == 0:  # Confluent compares their integer parts
            ctx.add("MULTIPLE_OF_EXPANDED", "multipleOf")
        elif int(om) and int(um) and int(om) % int(um) == 0:
            ctx.add("MULTIPLE_OF_REDUCED", "multipleOf")
        else:
            ctx.add("MULTIPLE_OF_CHANGED", "multipleOf")
    if o.get("integer") != u.get("integer"):
        ctx.add("TYPE_EXTENDED" if o.get("integer") else "TYPE_NARROWED")


def _value_set(values) -> set:
    return {json.dumps(v, sort_keys=True) for v in values}


def _enums(ctx: Context, o: S, u: S) -> None:
    ov, uv = _value_set(o.get("values")), _value_set(u.get("values"))
    if ov != uv:
        if uv >= ov:
            ctx.add("ENUM_ARRAY_EXTENDED", "enum")
        elif ov >= uv:
            ctx.add("ENUM_ARRAY_NARROWED", "enum")
        else:
            ctx.add("ENUM_ARRAY_CHANGED", "enum")


def _consts(ctx: Context, o: S, u: S) -> None:
    if _value_set([o.get("value")]) != _value_set([u.get("value")]):
        ctx.add("ENUM_ARRAY_CHANGED", "const")


def _nots(ctx: Context, o: S, u: S) -> None:
    with _Path(ctx, "not"):
        sub = ctx.sub()
        compare(sub, u.get("schema"), o.get("schema"))  # reversed: what must not match
        ctx.add("NOT_TYPE_NARROWED" if sub.compatible_so_far() else "NOT_TYPE_EXTENDED")


def _criteria(ctx: Context, o: S, u: S) -> str | None:
    oc, uc = o.get("criterion"), u.get("criterion")
    if oc == uc:
        return None
    o1, u1 = len(o.get("subs")) == 1, len(u.get("subs")) == 1
    if uc == "anyOf" or (o1 and u1) or (o1 and uc == "oneOf") or (u1 and oc == "allOf"):
        kind = "COMBINED_TYPE_EXTENDED"
    else:
        kind = "COMBINED_TYPE_CHANGED"
    ctx.add(kind)
    return kind


def _distinct(subs: list[S]) -> list[S]:
    seen, out = set(), []
    for s in subs:
        key = _canonical(s)
        if key not in seen:
            seen.add(key)
            out.append(s)
    return out


def _max_matching(n_left: int, edges: dict[int, list[int]]) -> dict[int, int]:
    """A maximum bipartite matching (augmenting paths): right index -> left index."""
    match: dict[int, int] = {}

    def augment(left: int, visited: set) -> bool:
        for right in edges.get(left, ()):
            if right in visited:
                continue
            visited.add(right)
            if right not in match or augment(match[right], visited):
                match[right] = left
                return True
        return False

    for left in range(n_left):
        augment(left, set())
    return match


def _combined(ctx: Context, o: S, u: S) -> None:
    if _criteria(ctx, o, u) == "COMBINED_TYPE_CHANGED":
        return
    osubs, usubs = _distinct(o.get("subs")), _distinct(u.get("subs"))
    if len(osubs) < len(usubs):
        ctx.add("PRODUCT_TYPE_EXTENDED" if u.get("criterion") == "allOf" else "SUM_TYPE_EXTENDED")
    elif len(osubs) > len(usubs):
        ctx.add("SUM_TYPE_NARROWED" if o.get("criterion") in ("anyOf", "oneOf") else "PRODUCT_TYPE_NARROWED")
    edges: dict[int, list[int]] = {}
    found: dict[tuple[int, int], list[Difference]] = {}
    for i, osub in enumerate(osubs):
        with _Path(ctx, f"{o.get('criterion')}/{i}"):
            for j, usub in enumerate(usubs):
                sub = ctx.sub()
                compare(sub, osub, usub)
                if sub.compatible_so_far():
                    edges.setdefault(i, []).append(j)
                    found[(i, j)] = sub.diffs
    matching = _max_matching(len(osubs), edges)
    for j, i in sorted(matching.items(), key=lambda x: x[1]):
        ctx.diffs.extend(found[(i, j)])
    if len(matching) < min(len(osubs), len(usubs)):
        ctx.add("COMBINED_TYPE_SUBSCHEMAS_CHANGED")


# ---- content models (objects' properties, arrays' tuple items)

def _covered(ctx: Context, original: S, update: S, what: str) -> None:
    """``<what>_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL`` when ``update`` (the schema the
    partially open model applies) reads what ``original`` accepted, with that comparison's own
    differences listed first; else ``<what>_NOT_COVERED_...``."""
    sub = ctx.sub()
    compare(sub, original, update)
    ctx.diffs.extend(sub.diffs)
    ctx.add(f"{what}_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL" if sub.compatible_so_far()
            else f"{what}_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL")


def _removed(ctx: Context, osch: S, is_open: bool, partial: S | None, what: str) -> None:
    """A ``what`` (PROPERTY, ITEM) the update no longer has: only the update's content model
    matters (``is_open``, else the schema its partially open model gives it, if any)."""
    if is_open:
        ctx.add(f"{what}_REMOVED_FROM_OPEN_CONTENT_MODEL")
    elif partial is not None:
        _covered(ctx, osch, partial, f"{what}_REMOVED")
    elif osch.kind == "false":
        ctx.add(f"{what}_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL")
    else:
        ctx.add(f"{what}_REMOVED_FROM_CLOSED_CONTENT_MODEL")


# ---- objects

def _object_open(s: S) -> bool:
    """Fully open: additionalProperties true or absent, no patternProperties, and
    unevaluatedProperties absent or true."""
    if not s.get("permits_additional") or s.get("additional") is not None or s.get("patterns"):
        return False
    uneval = s.get("unevaluated")
    return uneval is None or uneval.kind in ("empty", "true")


def _object_partial(s: S, name: str) -> S | None:
    for pattern, schema in s.get("patterns"):
        try:
            if re.search(pattern, name):
                return schema
        except re.error:
            continue
    if s.get("additional") is not None:
        return s.get("additional")
    if s.get("permits_additional") and s.get("additional") is None:
        uneval = s.get("unevaluated")
        if uneval is not None and uneval.kind not in ("false", "empty", "true"):
            return uneval
    return None


def _objects(ctx: Context, o: S, u: S) -> None:
    oprops, uprops = o.get("properties"), u.get("properties")
    with _Path(ctx, "required"):
        for name in oprops:
            if name in uprops:
                with _Path(ctx, name):
                    oreq, ureq = name in o.get("required"), name in u.get("required")
                    if oreq and not ureq:
                        ctx.add("REQUIRED_ATTRIBUTE_REMOVED")
                    elif ureq and not oreq:
                        ctx.add("REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED" if uprops[name].has_default
                                else "REQUIRED_ATTRIBUTE_ADDED")
    with _Path(ctx, "properties"):
        for name in list(oprops) + [n for n in uprops if n not in oprops]:
            with _Path(ctx, name):
                _property(ctx, o, u, name, oprops.get(name), uprops.get(name))
    with _Path(ctx, "dependencies"):
        odeps, udeps = o.get("property_deps"), u.get("property_deps")
        for name in list(odeps) + [n for n in udeps if n not in odeps]:
            with _Path(ctx, name):
                od, ud = odeps.get(name), udeps.get(name)
                if ud is None:
                    ctx.add("DEPENDENCY_ARRAY_REMOVED")
                elif od is None:
                    ctx.add("DEPENDENCY_ARRAY_ADDED")
                elif od != ud:
                    ctx.add("DEPENDENCY_ARRAY_EXTENDED" if ud >= od else
                            "DEPENDENCY_ARRAY_NARROWED" if od >= ud else "DEPENDENCY_ARRAY_CHANGED")
        odeps, udeps = o.get("schema_deps"), u.get("schema_deps")
        for name in list(odeps) + [n for n in udeps if n not in odeps]:
            with _Path(ctx, name):
                if name not in udeps:
                    ctx.add("DEPENDENCY_SCHEMA_REMOVED")
                elif name not in odeps:
                    ctx.add("DEPENDENCY_SCHEMA_ADDED")
                else:
                    compare(ctx, odeps[name], udeps[name])
    with _Path(ctx, "additionalProperties"):
        _additional(ctx, o, u, "PROPERTIES")
    _unevaluated(ctx, o.get("unevaluated"), u.get("unevaluated"), "unevaluatedProperties", "PROPERTIES")
    _bounds(ctx, o, u, "maxProperties", "minProperties")


def _property(ctx: Context, o: S, u: S, name: str, osch: S | None, usch: S | None) -> None:
    if usch is None:
        _removed(ctx, osch, _object_open(u), _object_partial(u, name), "PROPERTY")
    elif osch is None:  # added: only the original's content model matters
        required = name in u.get("required")
        if _object_open(o):
            if usch.kind in ("empty", "true"):
                ctx.add("PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL")
            elif required:
                ctx.add("REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL" if usch.has_default
                        else "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL")
            else:
                ctx.add("OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL")
            return
        partial = _object_partial(o, name)
        if partial is not None:
            _covered(ctx, partial, usch, "PROPERTY_ADDED")
        if required:
            ctx.add("REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL" if usch.has_default
                    else "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")
        else:
            ctx.add("OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")
    else:
        compare(ctx, osch, usch)


def _additional(ctx: Context, o: S, u: S, what: str) -> None:
    if o.get("permits_additional") != u.get("permits_additional"):
        if what == "PROPERTIES":
            ctx.add(f"ADDITIONAL_{what}_ADDED" if u.get("permits_additional") else f"ADDITIONAL_{what}_REMOVED")
        else:
            ctx.add(f"ADDITIONAL_{what}_REMOVED" if o.get("permits_additional") else f"ADDITIONAL_{what}_ADDED")
    elif o.get("additional") is None and u.get("additional") is not None:
        ctx.add(f"ADDITIONAL_{what}_NARROWED")
    elif u.get("additional") is None and o.get("additional") is not None:
        ctx.add(f"ADDITIONAL_{what}_EXTENDED")
    else:
        compare(ctx, o.get("additional"), u.get("additional"))


def _unevaluated(ctx: Context, ou: S | None, uu: S | None, key: str, what: str) -> None:
    if ou is None and uu is None:
        return
    empty = ("empty", "true")
    with _Path(ctx, key):
        if ou is None:
            ctx.add(f"UNEVALUATED_{what}_REMOVED" if uu.kind == "false" else f"UNEVALUATED_{what}_NARROWED")
        elif uu is None:
            ctx.add(f"UNEVALUATED_{what}_ADDED" if ou.kind == "false" else f"UNEVALUATED_{what}_EXTENDED")
        elif ou.kind == "false" and uu.kind != "false":
            ctx.add(f"UNEVALUATED_{what}_ADDED")
        elif ou.kind != "false" and uu.kind == "false":
            ctx.add(f"UNEVALUATED_{what}_REMOVED")
        elif ou.kind in empty and uu.kind not in empty:
            ctx.add(f"UNEVALUATED_{what}_NARROWED")
        elif ou.kind not in empty and uu.kind in empty:
            ctx.add(f"UNEVALUATED_{what}_EXTENDED")
        else:
            compare(ctx, ou, uu)


# ---- arrays

def _array_open(s: S) -> bool:
    if not s.get("permits_additional") or s.get("additional") is not None:
        return False
    uneval = s.get("unevaluated")
    return uneval is None or uneval.kind in ("empty", "true")


def _array_partial(s: S) -> S | None:
    if s.get("additional") is not None:
        return s.get("additional")
    if s.get("permits_additional"):
        uneval = s.get("unevaluated")
        if uneval is not None and uneval.kind not in ("false", "empty", "true"):
            return uneval
    return None


def _arrays(ctx: Context, o: S, u: S) -> None:
    with _Path(ctx, "items"):
        compare(ctx, o.get("all_items"), u.get("all_items"))
    oitems, uitems = o.get("items") or [], u.get("items") or []
    for index in range(max(len(oitems), len(uitems))):
        with _Path(ctx, f"items/{index}"):
            if index < len(oitems) and index < len(uitems):
                compare(ctx, oitems[index], uitems[index])
            elif index < len(oitems):  # removed from the tuple
                _removed(ctx, oitems[index], _array_open(u), _array_partial(u), "ITEM")
            else:
                _item_added(ctx, o, uitems[index])
    with _Path(ctx, "additionalItems"):
        _additional(ctx, o, u, "ITEMS")
    _unevaluated(ctx, o.get("unevaluated"), u.get("unevaluated"), "unevaluatedItems", "ITEMS")
    _bounds(ctx, o, u, "maxItems", "minItems")
    if o.get("unique") != u.get("unique"):
        ctx.add("UNIQUE_ITEMS_REMOVED" if o.get("unique") else "UNIQUE_ITEMS_ADDED", "uniqueItems")
    _bounds(ctx, o, u, "maxContains", "minContains")


def _item_added(ctx: Context, o: S, usch: S) -> None:
    if _array_open(o):
        ctx.add("ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL" if usch.kind in ("empty", "true")
                else "ITEM_ADDED_TO_OPEN_CONTENT_MODEL")
        return
    partial = _array_partial(o)
    if partial is not None:
        _covered(ctx, partial, usch, "ITEM_ADDED")
    else:
        ctx.add("ITEM_ADDED_TO_CLOSED_CONTENT_MODEL")


_BY_KIND = {"string": _strings, "number": _numbers, "enum": _enums, "const": _consts, "not": _nots,
            "combined": _combined, "object": _objects, "array": _arrays}


# ---------------------------------------------------------------------------------------- entry points

MODERN_DRAFTS = ("2019-09", "2020-12")


def is_modern(data) -> bool:
    return isinstance(data, dict) and any(d in str(data.get("$schema", "")) for d in MODERN_DRAFTS)


def differences(original, update, *, original_refs: dict | None = None, update_refs: dict | None = None,
                policy: str = STRICT) -> list[Difference]:
    """Every difference SchemaDiff lists from ``original`` (the writer's schema document) to
    ``update`` (the reader's); ``*_refs`` map reference names to parsed documents."""
    lo = Loader(original, original_refs or {}, is_modern(original))
    lu = Loader(update, update_refs or {}, is_modern(update))
    ctx = Context(_TwoLoaders(lo, lu), COMPATIBLE_CHANGES[policy])
    compare(ctx, lo.load(original), lu.load(update))
    return ctx.diffs


class _TwoLoaders:
    """Resolves each ``$ref`` with the loader of the document it came from."""

    def __init__(self, *loaders: Loader):
        self.loaders = loaders

    def resolve(self, ref: S) -> S:
        for loader in self.loaders:
            if ref.a["doc"] is loader.root or any(ref.a["doc"] is d for d in loader.references.values()):
                return loader.resolve(ref)
        return self.loaders[0].resolve(ref)


def incompatibilities(original, update, **kw) -> list[Difference]:
    """The differences that make ``update`` unable to read data valid for ``original``."""
    policy = kw.get("policy", STRICT)
    return [d for d in differences(original, update, **kw) if d.type not in COMPATIBLE_CHANGES[policy]]


_KEYWORD = {"MAXIMUM_ADDED", "MINIMUM_ADDED", "EXCLUSIVE_MAXIMUM_ADDED", "EXCLUSIVE_MINIMUM_ADDED",
            "MULTIPLE_OF_ADDED", "MAX_LENGTH_ADDED", "MIN_LENGTH_ADDED", "PATTERN_ADDED", "REQUIRED_ATTRIBUTE_ADDED",
            "MAX_PROPERTIES_ADDED", "MIN_PROPERTIES_ADDED", "DEPENDENCY_ARRAY_ADDED", "DEPENDENCY_SCHEMA_ADDED",
            "MAX_ITEMS_ADDED", "MIN_ITEMS_ADDED", "MAX_CONTAINS_ADDED", "MIN_CONTAINS_ADDED", "UNIQUE_ITEMS_ADDED",
            "ADDITIONAL_ITEMS_REMOVED", "ADDITIONAL_PROPERTIES_REMOVED", "UNEVALUATED_PROPERTIES_REMOVED",
            "UNEVALUATED_ITEMS_REMOVED"}
_MORE = {"MIN_LENGTH_INCREASED", "MINIMUM_INCREASED", "EXCLUSIVE_MINIMUM_INCREASED", "MIN_PROPERTIES_INCREASED",
         "MULTIPLE_OF_EXPANDED", "MIN_ITEMS_INCREASED", "MIN_CONTAINS_INCREASED"}
_LESS = {"MAX_LENGTH_DECREASED", "MAXIMUM_DECREASED", "MAX_ITEMS_DECREASED", "MAX_CONTAINS_DECREASED",
         "EXCLUSIVE_MAXIMUM_DECREASED", "MAX_PROPERTIES_DECREASED"}
_FEWER = {"ADDITIONAL_ITEMS_NARROWED", "ENUM_ARRAY_NARROWED", "SUM_TYPE_NARROWED", "ADDITIONAL_PROPERTIES_NARROWED",
          "UNEVALUATED_PROPERTIES_NARROWED", "UNEVALUATED_ITEMS_NARROWED"}
_VALUE = {"PATTERN_CHANGED", "MULTIPLE_OF_CHANGED", "DEPENDENCY_ARRAY_CHANGED"}
_TYPE = {"TYPE_CHANGED", "TYPE_NARROWED", "COMBINED_TYPE_CHANGED", "COMBINED_TYPE_SUBSCHEMAS_CHANGED",
         "ENUM_ARRAY_CHANGED"}
_MORE_ELEMENTS = {"DEPENDENCY_ARRAY_EXTENDED", "PRODUCT_TYPE_EXTENDED", "SUM_TYPE_EXTENDED", "NOT_TYPE_EXTENDED"}
_ADDED_TO_OPEN = {"REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
                  "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL",
                  "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", "ITEM_ADDED_TO_OPEN_CONTENT_MODEL"}


def describe(d: Difference, reader: str, writer: str) -> str:
    """Confluent's message for a difference (``Difference.toString`` with its two ``%s`` filled
    as SchemaValidatorBuilder fills them: the reader's name, then the writer's)."""
    p = d.path
    t = d.type
    if t in _KEYWORD:
        text = f"The keyword at path '{p}' in the {reader} schema is not present in the {writer} schema"
    elif t in _MORE:
        text = f"The value at path '{p}' in the {reader} schema is more than its value in the {writer} schema"
    elif t in _LESS:
        text = f"The value at path '{p}' in the {reader} schema is less than its value in the {writer} schema"
    elif t in _VALUE:
        text = f"The value at path '{p}' is different between the {reader} and {writer} schema"
    elif t in _FEWER:
        text = (f"An array or combined type at path '{p}' has fewer elements in the {reader} schema "
                f"than the {writer} schema")
    elif t in _MORE_ELEMENTS:
        text = (f"An array or combined type at path '{p}' has more elements in the {reader} schema "
                f"than the {writer} schema")
    elif t in _TYPE:
        text = f"A type at path '{p}' is different between the {reader} schema and the {writer} schema"
    elif t in _ADDED_TO_OPEN:
        text = (f"The {reader} schema has an open content model and has a property or item at path '{p}' "
                f"which is missing in the {writer} schema")
    elif t == "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL":
        text = (f"The {reader} schema has an unopen content model and has a required property at path '{p}' "
                f"which is missing in the {writer} schema")
    elif t in ("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL"):
        text = (f"The {reader} has a closed content model and is missing a property or item present at "
                f"path '{p}' in the {writer} schema")
    elif t in ("PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
               "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"):
        text = (f"A property or item is missing in the {reader} schema but present at path '{p}' in the "
                f"{writer} schema and is not covered by its partially open content model")
    elif t in ("PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
               "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"):
        text = (f"The {reader} schema has a property or item at path '{p}' which is missing in the {writer} "
                f"schema and is not covered by its partially open content model")
    else:
        text = ""
    return f"{{errorType:\"{t}\", description:\"{text}'}}"
