"""The Schema Registry as the pages see it: subjects, versions, a diff, and record values decoded
through it. Reads go through the registry's own store (``broker.schema_registry``, the
``SchemaStore`` its service keeps over ``_schemas``) and its authorization rule (a subject is
readable with READ on the topic it names), exactly as its REST API answers them.

Decoding follows Confluent's wire format: magic byte 0, the schema id (4 bytes, big endian),
then the payload: Avro binary (decoded with the ``avro`` library against the registered
schema, its references resolved by the registry), JSON (JSON Schema: the payload is the
document), or Protobuf (the message indexes as zig-zag varints, a lone 0 meaning the first
message, then the message; decoded with ``protobuf`` from the descriptors the registry
compiled, shown as protobuf's JSON mapping).
"""
from __future__ import annotations

import difflib
import io
import json

from broker.security.acl import AclOperation as Op
from schema_registry.validation import message_indexes as wire_message_indexes


def store_of(broker):
    """The registry's store when it serves and has loaded ``_schemas``, else None."""
    store = getattr(broker, "schema_registry", None)
    if store is None or not store.ready.is_set() or store.load_error is not None:
        return None
    return store


def may_read(broker, principal, host: str, subject: str) -> bool:
    sec = broker.security
    authorizer = sec.authorizer if sec is not None else None
    if authorizer is None or principal is None:
        return True
    from schema_registry import authz
    return authz.may(authorizer, principal, host, Op.READ, subject)


def subjects(store, visible) -> list[dict]:
    """Each readable subject with its latest version, id, type and version count."""
    store.catch_up()
    out = []
    for s in store.subjects():
        if not visible(s):
            continue
        versions = store.versions(s)
        latest = versions[-1]
        out.append({"subject": s, "latest": latest.version, "id": latest.id, "type": latest.schema_type,
                    "versions": len(versions)})
    return out


def pretty(schema_type: str, text: str) -> str:
    """Avro and JSON Schema as indented JSON; Protobuf as written."""
    if schema_type in ("AVRO", "JSON"):
        try:
            return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            return text
    return text


def diff(old: str, new: str, old_name: str, new_name: str) -> list[tuple[str, str]]:
    """A unified diff as (kind, line): kind is ``add``, ``del``, ``hunk``, ``file`` or ``same``."""
    out = []
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), old_name, new_name, lineterm="", n=3):
        if line.startswith(("---", "+++")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "same"
        out.append((kind, line))
    return out


def _plain(v):
    """An Avro datum as JSON-friendly values (bytes as hex, decimals and the like as text)."""
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, (bytes, bytearray)):
        return v.hex()
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    return str(v)


def decode(store, data: bytes | None) -> tuple[str, str] | None:
    """(shown text, label) for a value in Confluent's wire format whose schema id the registry
    knows; None otherwise (the caller shows it as UTF-8, JSON or hex)."""
    if store is None or data is None or len(data) < 5 or data[0] != 0:
        return None
    schema_id = int.from_bytes(data[1:5], "big")
    entry = store.schema_by_id(schema_id)
    if entry is None:
        return None
    label = f"{entry.schema_type.lower()} · schema {schema_id}"
    payload = data[5:]
    try:
        if entry.schema_type == "AVRO":
            import avro.io
            parsed = store.parsed_entry(entry)
            datum = avro.io.DatumReader(parsed.schema).read(avro.io.BinaryDecoder(io.BytesIO(payload)))
            return json.dumps(_plain(datum), indent=2, ensure_ascii=False), label
        if entry.schema_type == "JSON":
            return json.dumps(json.loads(payload), indent=2, ensure_ascii=False), label
        if entry.schema_type == "PROTOBUF":
            return _decode_protobuf(schema_id, store.parsed_entry(entry), payload), label
    except Exception:  # not what the schema says: show the bytes
        return data.hex(" "), f"{label} (does not decode)"
    return data.hex(" "), f"{label} (shown as hex)"


def message_indexes(payload: bytes) -> tuple[list[int], int]:
    """Confluent's Protobuf message indexes at the start of ``payload`` (the bytes after the
    schema id): (indexes, where the message begins); the registry's own parser."""
    return wire_message_indexes(payload, 0)


_POOLS: dict[int, object] = {}  # schema id -> its descriptor pool (an id's schema never changes)


def _decode_protobuf(schema_id: int, parsed, payload: bytes) -> str:
    from google.protobuf import json_format
    from google.protobuf.message_factory import GetMessageClass
    indexes, pos = message_indexes(payload)
    name = parsed.record_name(indexes)
    if name is None:
        raise ValueError(f"no message at indexes {indexes}")
    pool = _POOLS.get(schema_id)
    if pool is None:
        from schema_registry.formats.protobuf import descriptor_pool_of
        files = {**parsed.deps, parsed.fdp.name: parsed.fdp}
        pool = descriptor_pool_of(files, files)
        if len(_POOLS) > 1000:
            _POOLS.clear()
        _POOLS[schema_id] = pool
    msg = GetMessageClass(pool.FindMessageTypeByName(name)).FromString(payload[pos:])
    return json.dumps(json_format.MessageToDict(msg, preserving_proto_field_name=True), indent=2,
                      ensure_ascii=False)
