"""Schema-embedded tags, as Confluent's registry edits them (``POST
/subjects/{s}/versions/{v}/tags``, its ``TagSchemaRequest``), pure functions.

A tag request names schema entities by a path and a type, ``sr_record`` (a record, JSON
object or message) or ``sr_field`` (one of its fields), and lists tags to add and to remove;
the tags live inside the schema text, where each format keeps them:

- AVRO: a ``"confluent:tags"`` array property on the record or the field. Paths are
  ``[namespace.]Record`` and ``[namespace.]Record.field``; found breadth first from the top
  of the schema, the namespace compared with the top-level schema's own (Confluent's
  ``AvroSchemaUtils.findMatchingEntity``, whose quirks are kept);
- JSON: a ``"confluent:tags"`` keyword on the object schema or the property's schema. Paths
  walk the schema: ``object`` (the object itself), ``object.<property>``, ``object.definitions.<name>``
  / ``object.$defs.<name>``, ``array`` (the items), ``oneof|anyof|allof.<index>`` (the index
  into the subschemas as Confluent sorts them), ``not``, ``allof.<i>.conditional.if|then|else``,
  a property name with dots taken whole where the schema has it (``JsonSchemaUtils``);
- PROTOBUF: ``tags`` of the ``(confluent.message_meta)`` or ``(confluent.field_meta)`` option
  (``confluent/meta.proto``). Paths are message names from the file's top level without the
  package, ``Message[.Nested]``, then ``.field`` or ``.oneof.field``; a leading ``.`` is ignored.

The tags of one entity keep their order; added ones go last, then removed ones are dropped;
an entity left with no tags loses the property (or the option, when nothing else is in it).
A path that names nothing is Confluent's 42201 with its message.
"""
from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from functools import cmp_to_key
from typing import Any

from schema_registry import config_model as M
from schema_registry.errors import RegistryError, invalid_schema

RECORD, FIELD = "sr_record", "sr_field"
ENTITY_TYPES = (RECORD, FIELD)
TAGS = "confluent:tags"
CONFLUENT_VERSION = "confluent:version"


@dataclass(frozen=True)
class Entity:
    """Confluent's ``SchemaEntity``: two entities are one when their paths agree once a leading
    ``.`` is dropped; the path is used as given."""
    path: str
    type: str

    @property
    def key(self) -> tuple[str, str]:
        return (self.path[1:] if self.path.startswith(".") else self.path, self.type)


@dataclass
class TagRequest:
    """Confluent's ``TagSchemaRequest``, typed."""
    new_version: int | None = None
    to_add: dict[tuple, tuple[Entity, list[str]]] = field(default_factory=dict)
    to_remove: dict[tuple, tuple[Entity, list[str]]] = field(default_factory=dict)
    metadata: dict | None = None
    rule_set: dict | None = None
    rules_to_merge: dict | None = None
    rules_to_remove: list[str] | None = None
    raw_rules: dict = field(default_factory=dict)  # typed by check_rules


def _entity_tags(v, where: str) -> dict[tuple, tuple[Entity, list[str]]]:
    """``[{"schemaEntity": {"entityPath", "entityType"}, "tags": [...]}]`` by entity, the tags
    of one entity named twice joined (``schemaTagsListToMap``)."""
    out: dict[tuple, tuple[Entity, list[str]]] = {}
    for i, item in enumerate(M._as_list(v, where) or []):
        w = f"{where}[{i}]"
        obj = M._as_object(item, w)
        if obj is None:
            continue
        ent = M._as_object(obj.get("schemaEntity"), f"{w}.schemaEntity")
        path = M.as_string(ent.get("entityPath"), f"{w}.schemaEntity.entityPath") if ent else None
        if path is None:  # Confluent's SchemaEntity cannot be built without its path
            raise M.MappingError(f"{w}.schemaEntity.entityPath is required")
        etype = ent.get("entityType")
        if not isinstance(etype, str) or etype not in ENTITY_TYPES:
            raise M.MappingError(f"Cannot deserialize value of type `EntityType` from {M._kind(etype)} "
                                 f"{json.dumps(etype)}: not one of the values accepted for Enum class: "
                                 f"[sr_record, sr_field] (at {w}.schemaEntity.entityType)")
        raw_tags = M._as_list(obj.get("tags"), f"{w}.tags") or []
        if any(isinstance(t, (list, dict)) for t in raw_tags):
            raise M.MappingError(f"Cannot deserialize value of type `java.lang.String` from an array or object "
                                 f"(at {w}.tags)")
        tags = [M.as_string(t, f"{w}.tags") for t in raw_tags]
        e = Entity(path, etype)
        _, have = out.setdefault(e.key, (e, []))
        have.extend(t for t in tags if t is not None and t not in have)
    return out


def parse_request(body: dict) -> TagRequest:
    """The typed request, or MappingError (422/422); its rule sets are typed and checked by
    ``check_rules`` once the version to tag is found, as Confluent orders its checks."""
    nv = body.get("newVersion")
    if nv is not None and (isinstance(nv, bool) or not isinstance(nv, int)):
        if isinstance(nv, str) and nv.strip().lstrip("-").isdigit():
            nv = int(nv)  # Jackson reads a numeric string as an Integer
        elif isinstance(nv, float) and nv.is_integer():
            nv = int(nv)  # and a float (ACCEPT_FLOAT_AS_INT)
        else:
            raise M.MappingError(f"Cannot deserialize value of type `java.lang.Integer` from {M._kind(nv)} "
                                 f"(at newVersion)")
    req = TagRequest(new_version=nv,
                     to_add=_entity_tags(body.get("tagsToAdd"), "tagsToAdd"),
                     to_remove=_entity_tags(body.get("tagsToRemove"), "tagsToRemove"),
                     metadata=M.metadata(body.get("metadata"), "metadata"))
    if body.get("rulesToRemove") is not None:
        req.rules_to_remove = [M.as_string(n, "rulesToRemove") for n in M._as_list(body["rulesToRemove"], "rulesToRemove")]
    req.raw_rules = {k: body.get(k) for k in ("ruleSet", "rulesToMerge")}
    return req


def check_rules(req: TagRequest) -> None:
    """The rule sets typed and validated (42210), as Confluent checks them once it has found
    the version to tag: ``ruleSet`` excludes ``rulesToMerge``/``rulesToRemove``."""
    raw = req.raw_rules
    if (raw.get("rulesToMerge") is not None or req.rules_to_remove is not None) and raw.get("ruleSet") is not None:
        raise M.invalid_rule_set("ruleSet should be omitted if specifying rulesToMerge or rulesToRemove")
    req.rules_to_merge = M.rule_set(raw.get("rulesToMerge"), "rulesToMerge")
    req.rule_set = M.rule_set(raw.get("ruleSet"), "ruleSet")


# ---- rule sets ----------------------------------------------------------------------------------
_PHASES = ("migrationRules", "domainRules", "encodingRules")


def merge_rule_sets(old: dict | None, new: dict | None) -> dict | None:
    """``RuleSet.mergeRuleSets``: per phase, the old rules not named in the new ones, then the
    new ones; ``enableAt`` the new one's if set."""
    if not old:
        return new
    if not new:
        return old
    out: dict[str, Any] = {}
    for phase in _PHASES:
        o, n = old.get(phase) or [], new.get(phase) or []
        names = {r.get("name") for r in n}
        merged = ([r for r in o if r.get("name") not in names] + list(n)) if o and n else (n or o)
        if merged:
            out[phase] = merged
    enable_at = new.get("enableAt") or old.get("enableAt")
    if enable_at:
        out["enableAt"] = enable_at
    return out


def remove_rules(rs: dict | None, names: list[str]) -> dict | None:
    if rs is None:
        return None
    out = {k: v for k, v in rs.items() if k not in _PHASES}
    for phase in _PHASES:
        if phase in rs:
            out[phase] = [r for r in rs[phase] if r.get("name") not in names]
    return out


def with_confluent_version(metadata: dict | None, version: int) -> dict:
    """``Metadata.setConfluentVersion``: the metadata with ``properties["confluent:version"]``."""
    out = dict(metadata or {})
    props = dict(out.get("properties") or {})
    props[CONFLUENT_VERSION] = str(version)
    out["properties"] = dict(sorted(props.items()))
    return {k: out[k] for k in ("tags", "properties", "sensitive") if k in out}


def without_confluent_version(metadata: dict | None) -> dict | None:
    if not metadata:
        return metadata or None
    props = {k: v for k, v in (metadata.get("properties") or {}).items() if k != CONFLUENT_VERSION}
    out = {k: v for k, v in metadata.items() if k != "properties"}
    if props:
        out["properties"] = props
    return out or None


# ---- editing the tags of one entity -------------------------------------------------------------
def _no_match(message: str) -> RegistryError:
    # Confluent wraps the IllegalArgumentException in an InvalidSchemaException: its text
    return invalid_schema(f"java.lang.IllegalArgumentException: {message}")


def _java_split(path: str) -> list[str]:
    """``String.split("\\\\.")``: trailing empty parts dropped."""
    parts = path.split(".")
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    return parts


def _edit(have: list[str], add: list[str], remove: list[str]) -> list[str]:
    tags = list(dict.fromkeys(have))
    tags += [t for t in add if t not in tags]
    return [t for t in tags if t not in remove]


def _entities(req: TagRequest):
    """(entity, add, remove) in Confluent's order: the entities to add to, then the others."""
    seen = {}
    for k, (e, _) in list(req.to_add.items()) + list(req.to_remove.items()):
        seen.setdefault(k, e)
    for k, e in seen.items():
        yield e, req.to_add.get(k, (e, []))[1], req.to_remove.get(k, (e, []))[1]


def _set_json_tags(node: dict, add: list[str], remove: list[str]) -> None:
    old = node.get(TAGS)
    have = [t if isinstance(t, str) else json.dumps(t) for t in old] if isinstance(old, list) else []
    tags = _edit(have, add, remove)
    if tags:
        node[TAGS] = tags  # an existing key keeps its place, a new one goes last (as Jackson's)
    else:
        node.pop(TAGS, None)


# AVRO
def _avro_find(root, entity: Entity):
    ids = _java_split(entity.path)
    if entity.type == RECORD:
        space, record, field_name = ".".join(ids[:-1]), ids[-1], None
    else:
        if len(ids) < 2:
            raise _no_match(f"No matching path '{entity.path}' found in the schema")
        space, record, field_name = ".".join(ids[:-2]), ids[-2], ids[-1]
    top_space = root.get("namespace") if isinstance(root, dict) else None
    queue = deque([root])
    while queue:
        node = queue.popleft()
        if not (isinstance(node, dict) and "type" in node):
            if isinstance(node, list):  # a union
                queue.extend(node)
            elif isinstance(node, dict):
                queue.extend(node.values())
            continue
        kind = node["type"] if isinstance(node["type"], str) else ""
        if kind == "record":
            # only the top-level schema's namespace counts (as Confluent's search does)
            if (space == "" or space == top_space) and record == str(node.get("name")):
                if field_name is None:
                    return node
                for f in node.get("fields") or []:
                    if isinstance(f, dict) and f.get("name") == field_name:
                        return f
            else:
                queue.extend(node.get("fields") or [])
        elif kind == "array":
            queue.append(node.get("items"))
        elif kind == "map":
            queue.append(node.get("values"))
        else:
            queue.append(node["type"])
    raise _no_match(f"No matching path '{entity.path}' found in the schema")


def avro_tagged(text: str, req: TagRequest) -> str:
    """The AVRO schema text with the request's tags edited (to be canonicalized again)."""
    root = json.loads(text)
    for entity, add, remove in _entities(req):
        _set_json_tags(_avro_find(root, entity), add, remove)
    return json.dumps(root, separators=(",", ":"), ensure_ascii=False)


# JSON
_KIND_ORDER = ("ARRAY", "BOOLEAN", "COMBINED", "CONDITIONAL", "CONST", "EMPTY", "ENUM", "FALSE", "NOT",
               "NULL", "NUMBER", "OBJECT", "REFERENCE", "STRING", "TRUE")
_COMBINERS = (("allOf", "allof"), ("anyOf", "anyof"), ("oneOf", "oneof"))


def _json_kind(s) -> str:
    """The class the everit loader Confluent uses builds for a raw schema (what its
    ``JsonSchemaComparator`` orders subschemas by first)."""
    if s is True:
        return "TRUE"
    if s is False:
        return "FALSE"
    if not isinstance(s, dict) or not s:
        return "EMPTY"
    if "$ref" in s:
        return "REFERENCE"
    t = s.get("type")
    if isinstance(t, list) or any(k in s for k, _ in _COMBINERS):
        return "COMBINED"
    if "if" in s:
        return "CONDITIONAL"
    if "not" in s and t is None:
        return "NOT"
    if "const" in s:
        return "CONST"
    if "enum" in s:
        return "ENUM"
    return {"object": "OBJECT", "array": "ARRAY", "string": "STRING", "number": "NUMBER", "integer": "NUMBER",
            "boolean": "BOOLEAN", "null": "NULL"}.get(t) or (
        "OBJECT" if "properties" in s else "ARRAY" if "items" in s else "EMPTY")


def _cmp_str(a, b) -> int:
    if a == b:
        return 0
    if a is None:
        return -1
    if b is None:
        return 1
    return -1 if a < b else 1


def _cmp_coll(a, b) -> int:
    if len(a) != len(b):
        return len(a) - len(b)
    for x, y in zip(sorted(map(str, a)), sorted(map(str, b))):
        c = _cmp_str(x, y)
        if c:
            return c
    return 0


def _subschemas(s) -> tuple[str | None, list]:
    for key, name in _COMBINERS:
        if isinstance(s, dict) and key in s:
            return name, list(s[key])
    if isinstance(s, dict) and isinstance(s.get("type"), list):
        return "anyof", [{"type": t} for t in s["type"]]
    return None, []


def _json_cmp(a, b) -> int:
    """Confluent's ``JsonSchemaComparator`` on raw schemas: kind, title, description, default,
    then what the kind compares (property names and required ones, items, subschemas...)."""
    ka, kb = _json_kind(a), _json_kind(b)
    if ka != kb:
        return _KIND_ORDER.index(ka) - _KIND_ORDER.index(kb)
    da, db = (a if isinstance(a, dict) else {}), (b if isinstance(b, dict) else {})
    for k in ("title", "description"):
        c = _cmp_str(da.get(k), db.get(k))
        if c:
            return c
    c = _cmp_str(None if "default" not in da else json.dumps(da["default"]),
                 None if "default" not in db else json.dumps(db["default"]))
    if c:
        return c
    if ka == "CONST":
        return _cmp_str(json.dumps(da["const"]), json.dumps(db["const"]))
    if ka == "ENUM":
        return _cmp_coll(da.get("enum") or [], db.get("enum") or [])
    if ka == "COMBINED":
        (ca, sa), (cb, sb) = _subschemas(da), _subschemas(db)
        c = _cmp_str(ca, cb) or (len(sa) - len(sb))
        if c:
            return c
        for x, y in zip(sorted(sa, key=cmp_to_key(_json_cmp)), sorted(sb, key=cmp_to_key(_json_cmp))):
            c = _json_cmp(x, y)
            if c:
                return c
        return 0
    if ka == "NOT":
        return _json_cmp(da.get("not"), db.get("not"))
    if ka == "OBJECT":
        return (_cmp_coll(list((da.get("properties") or {}).keys()), list((db.get("properties") or {}).keys()))
                or _cmp_coll(da.get("required") or [], db.get("required") or []))
    if ka == "ARRAY":
        return _json_cmp(da.get("items"), db.get("items"))
    return 0


def _from_name(node, ids: deque):
    """``findNodeFromNameBuilder``: the child named by the next part, or by the next parts
    joined with dots (a property name holding dots)."""
    if not ids or not isinstance(node, dict):
        return None
    name = ids.popleft()
    while name not in node and ids:
        name += "." + ids.popleft()
    return node.get(name)


def _json_walk(node, etype: str, ids: deque):
    if not ids or node is None:
        return None
    step = ids.popleft()
    if step == "object":
        if etype == RECORD and not ids:
            return node
        if not ids or not isinstance(node, dict):
            return None
        if ids[0] in ("definitions", "$defs"):
            result = _from_name(node.get(ids.popleft()), ids)
        else:
            result = _from_name(node.get("properties"), ids)
        return result if result is None or not ids else _json_walk(result, etype, ids)
    if step == "array":
        return _json_walk(node.get("items") if isinstance(node, dict) else None, etype, ids)
    if step in ("anyof", "allof", "oneof"):
        key = {"anyof": "anyOf", "allof": "allOf", "oneof": "oneOf"}[step]
        if isinstance(node, dict) and key in node:
            if not ids:
                return None
            index = ids.popleft()
            subs = sorted(node[key], key=cmp_to_key(_json_cmp))
            try:
                return _json_walk(subs[int(index)], etype, ids)
            except (ValueError, IndexError):
                return None
        if step == "oneof":
            return None
        if ids:
            ids.popleft()  # the index of "type": [...] (anyof) or of an if/then/else (allof)
        if step == "allof" and ids and ids[0] == "conditional":
            ids.popleft()
            branch = ids.popleft() if ids else None
            return _json_walk(node.get(branch) if isinstance(node, dict) else None, etype, ids)
        return _json_walk(node, etype, ids)
    if step == "not":
        return _json_walk(node.get("not") if isinstance(node, dict) else None, etype, ids)
    return None


def json_tagged(text: str, req: TagRequest) -> str:
    root = json.loads(text)
    for entity, add, remove in _entities(req):
        node = _json_walk(root, entity.type, deque(_java_split(entity.path)))
        if not isinstance(node, dict):
            raise _no_match(f"No matching path '{entity.path}' found in the schema")
        _set_json_tags(node, add, remove)
    return json.dumps(root, separators=(",", ":"), ensure_ascii=False)


# PROTOBUF
META_PROTO = "confluent/meta.proto"


def _proto_find(fdp, entity: Entity):
    """``ProtobufSchemaUtils.findMatchingElement`` on a FileDescriptorProto: the message, or
    the field (directly in the message or in its oneof named in the path)."""
    ids = _java_split(entity.key[0])
    is_field = entity.type == FIELD
    end = len(ids) - 1 if is_field else len(ids)
    msg, i = None, 0
    while i < end:
        target = ids[i]
        candidates = fdp.message_type if msg is None else msg.nested_type
        found = next((m for m in candidates if m.name == target and not m.options.map_entry), None)
        if found is not None:
            msg = found
        elif i == end - 1 and is_field:
            break  # the last part may be a oneof's name
        else:
            raise _no_match(f"No matching Message with name '{target}' found in the schema")
        i += 1
    if not is_field:
        return msg
    field_name = ids[-1]
    if msg is not None:
        if i == end:
            for f in msg.field:
                if f.name == field_name:
                    return f
        else:
            oneof = next((k for k, o in enumerate(msg.oneof_decl) if o.name == ids[i]), None)
            for f in msg.field:
                if oneof is not None and f.HasField("oneof_index") and f.oneof_index == oneof and f.name == field_name:
                    return f
    raise _no_match(f"No matching Field with name '{field_name}' found in the schema")


def proto_tagged(fdp, req: TagRequest):
    """A copy of the FileDescriptorProto with the request's tags edited in the Confluent meta
    options; ``confluent/meta.proto`` is imported when the file did not import it (protoc
    refuses the option without it; Confluent's text parser does not look)."""
    from confluent_kafka.schema_registry.confluent import meta_pb2  # registers the options' extensions

    out = type(fdp)()
    out.CopyFrom(fdp)
    for entity, add, remove in _entities(req):
        target = _proto_find(out, entity)
        ext = meta_pb2.message_meta if entity.type == RECORD else meta_pb2.field_meta
        # read back through the default pool, which knows the extension now
        opts = type(target.options).FromString(target.options.SerializeToString())
        meta = opts.Extensions[ext]
        tags = _edit(list(meta.tags), add, remove)
        del meta.tags[:]
        meta.tags.extend(tags)
        if not meta.ListFields():
            opts.ClearExtension(ext)
        target.options.CopyFrom(opts)
        if target.options.ByteSize() == 0:
            target.ClearField("options")
    if META_PROTO not in out.dependency and any(add for _, add, _ in _entities(req)):
        out.dependency.append(META_PROTO)
    return out


# ---- finding tagged entities (?findTags=) --------------------------------------------------------
def _json_tag_list(node) -> list[str]:
    v = node.get(TAGS) if isinstance(node, dict) else None
    if not isinstance(v, list):
        return []
    return list(dict.fromkeys(t if isinstance(t, str) else json.dumps(t) for t in v))


def _avro_entities(root) -> list[tuple[Entity, list[str]]]:
    """Confluent's AVRO ``inlineTaggedEntities``: depth first through unions, arrays, maps and
    records (each record once, by full name), a record's tags before its fields'."""
    out: list[tuple[Entity, list[str]]] = []
    visited: set[str] = set()

    def walk(node, space):
        if isinstance(node, list):
            for n in node:
                walk(n, space)
            return
        if not isinstance(node, dict):
            return  # a primitive, or a named type met before (already walked)
        kind = node.get("type")
        if kind == "array":
            walk(node.get("items"), space)
        elif kind == "map":
            walk(node.get("values"), space)
        elif kind in ("record", "error"):
            name = str(node.get("name"))
            if "." in name:
                full = name
                space = name.rsplit(".", 1)[0]
            else:
                if "namespace" in node:
                    space = node["namespace"] or None
                full = f"{space}.{name}" if space else name
            if full in visited:
                return
            visited.add(full)
            tags = _json_tag_list(node)
            if tags:
                out.append((Entity(full, RECORD), tags))
            for f in node.get("fields") or []:
                ftags = _json_tag_list(f)
                if ftags:
                    out.append((Entity(f"{full}.{f.get('name')}", FIELD), ftags))
                walk(f.get("type"), space)
        elif isinstance(kind, (dict, list)):
            walk(kind, space)

    walk(root, None)
    return out


def _json_entities(root) -> list[tuple[Entity, list[str]]]:
    """Confluent's JSON Schema ``inlineTaggedEntities`` over the raw schema: objects by their
    path (``object``, ``object.<property>``, ...), combined schemas' subschemas in Confluent's
    order, array items, ``not``, ``if``/``then``/``else``, ``definitions`` and ``$defs``."""
    out: list[tuple[Entity, list[str]]] = []
    visited: set[str] = set()

    def walk(node, scope: str, in_field: bool):
        kind = _json_kind(node)
        if kind == "COMBINED":
            criterion, subs = _subschemas(node)
            subs = sorted(subs, key=cmp_to_key(_json_cmp))
            for i, sub in enumerate(subs):
                walk(sub, f"{scope}{criterion}.{i}.", False)
        elif kind == "ARRAY":
            items = node.get("items")
            if isinstance(items, (dict, bool)):
                walk(items, scope + "array.", False)
        elif kind == "OBJECT":
            name = scope + "object"
            if name in visited:
                return
            visited.add(name)
            if not in_field:
                tags = _json_tag_list(node)
                if tags:
                    out.append((Entity(name, RECORD), tags))
            for prop, sub in (node.get("properties") or {}).items():
                ftags = _json_tag_list(sub)
                if ftags:
                    out.append((Entity(f"{name}.{prop}", FIELD), ftags))
                walk(sub, f"{name}.{prop}.", True)
            for key in ("definitions", "$defs"):
                for dname, sub in (node.get(key) or {}).items():
                    walk(sub, f"{name}.{key}.{dname}.", False)
        elif kind == "CONDITIONAL":
            for branch in ("if", "then", "else"):
                if branch in node:
                    walk(node[branch], f"{scope}conditional.{branch}.", False)
        elif kind == "NOT":
            walk(node.get("not"), scope + "not.", False)

    walk(root, "", False)
    return out


def _proto_entities(fdp) -> list[tuple[Entity, list[str]]]:
    """Confluent's PROTOBUF ``inlineTaggedEntities``: per message (path without the package),
    its ``message_meta`` tags, its oneofs' fields', its other fields', then nested messages."""
    from confluent_kafka.schema_registry.confluent import meta_pb2

    out: list[tuple[Entity, list[str]]] = []

    def tags_of(options, ext) -> list[str]:
        opts = type(options).FromString(options.SerializeToString())
        return list(dict.fromkeys(opts.Extensions[ext].tags)) if opts.HasExtension(ext) else []

    def walk(msgs, scope: str):
        for m in msgs:
            if m.options.map_entry:
                continue
            name = scope + m.name
            tags = tags_of(m.options, meta_pb2.message_meta)
            if tags:
                out.append((Entity(name, RECORD), tags))
            real = {i for i, _ in enumerate(m.oneof_decl)
                    if not any(f.HasField("oneof_index") and f.oneof_index == i and f.proto3_optional for f in m.field)}
            in_oneof = [f for i in sorted(real) for f in m.field if f.HasField("oneof_index") and f.oneof_index == i]
            plain = [f for f in m.field if f not in in_oneof]
            for f in in_oneof + plain:
                ftags = tags_of(f.options, meta_pb2.field_meta)
                if ftags:
                    out.append((Entity(f"{name}.{f.name}", FIELD), ftags))
            walk(m.nested_type, name + ".")

    walk(fdp.message_type, "")
    return out


def find_tags(parsed, wanted: list[str]) -> list[dict]:
    """Confluent's ``extractSchemaTags``: the schema's tagged entities that carry one of
    ``wanted`` (``*``: every one), as ``schemaTags`` entries."""
    if parsed.schema_type == "AVRO":
        found = _avro_entities(json.loads(parsed.canonical()))
    elif parsed.schema_type == "JSON":
        found = _json_entities(json.loads(parsed.canonical()))
    else:
        found = _proto_entities(parsed.fdp)
    every = "*" in wanted
    return [{"schemaEntity": {"entityPath": e.path, "entityType": e.type}, "tags": tags}
            for e, tags in found if every or set(tags) & set(wanted)]
