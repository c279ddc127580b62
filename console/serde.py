"""Keys and values through the Schema Registry (``broker.schema_registry``), in Confluent's
wire format: magic byte 0, the 4-byte big-endian schema id, then (PROTOBUF) the message
indexes as zigzag varints (a single 0 for the first message), then the payload.

- ``resolve``: the schema a REST v3 produce request names, as Confluent's REST proxy resolves
  it: ``schema_id``; else ``schema`` (raw text: registered under the subject if new, as the
  proxy's auto-registration does); else ``schema_version`` or the latest version of the
  subject. The subject is ``subject`` or the subject name strategy's (TOPIC_NAME, the
  default: ``<topic>-key`` / ``<topic>-value``; TOPIC_RECORD_NAME / RECORD_NAME need the
  record name, so they need a schema id or raw schema).
- ``encode``: JSON data -> wire bytes: AVRO through Apache Avro's DatumWriter (data as JSON,
  a union branch given bare or as Avro's ``{"type": value}``), JSON Schema validated with the
  schema, PROTOBUF through the schema's own descriptors (``json_format``). Data that does not
  fit raises ``DataError`` (the REST layer's 422).
- ``decode``: wire bytes -> JSON data and the schema id, for the records page.

The registry's own authorization rules apply (``schema_registry.authz.may``): registering
needs WRITE on the subject's topic, reading a schema READ.
"""
from __future__ import annotations

import io
import json
from typing import Any

MAGIC = 0
TYPES = {"AVRO": "AVRO", "JSONSCHEMA": "JSON", "JSON": "JSON", "PROTOBUF": "PROTOBUF"}  # REST -> registry names


class SerdeError(Exception):
    """(status, error_code, message) for the REST layer."""

    def __init__(self, status: int, error_code: int, message: str):
        super().__init__(message)
        self.status, self.error_code, self.message = status, error_code, message


def DataError(message: str) -> SerdeError:  # noqa: N802 - reads as an error kind
    """Data that does not fit its schema: 422, Confluent's JSON conversion error code."""
    return SerdeError(422, 42203, message)


def _denied(subject: str) -> SerdeError:
    return SerdeError(403, 40301, f"User is denied operation on subject {subject}")


def _registry_error(e) -> SerdeError:
    return SerdeError(e.status, e.error_code, e.message)


def _allowed(broker, principal: str | None, host: str, op, subject: str) -> bool:
    authorizer = broker.security.authorizer if broker.security is not None else None
    if authorizer is None or principal is None:
        return True
    from schema_registry.authz import may
    return may(authorizer, principal, host, op, subject)


def record_name(parsed) -> str | None:
    """The record name RECORD_NAME strategies use: an Avro named type's full name, the first
    Protobuf message's full name, a JSON schema's title."""
    t = parsed.schema_type
    if t == "AVRO":
        return getattr(parsed.schema, "fullname", None)
    if t == "PROTOBUF":
        pkg = parsed.fdp.package
        return (f"{pkg}." if pkg else "") + parsed.fdp.message_type[0].name if parsed.fdp.message_type else None
    if t == "JSON":
        return parsed.data.get("title") if isinstance(parsed.data, dict) else None
    return None


def subject_for(topic: str, is_key: bool, strategy: str | None, name: str | None) -> str | None:
    s = (strategy or "TOPIC_NAME").upper()
    suffix = "key" if is_key else "value"
    if s == "TOPIC_NAME":
        return f"{topic}-{suffix}"
    if s == "RECORD_NAME":
        return name
    if s == "TOPIC_RECORD_NAME":
        return f"{topic}-{name}" if name else None
    raise SerdeError(400, 400, f"Unknown subject_name_strategy {strategy!r}: expected TOPIC_NAME, RECORD_NAME or "
                               "TOPIC_RECORD_NAME")


async def _store(broker):
    store = getattr(broker, "schema_registry", None)
    http = getattr(broker, "http", None)
    if store is None and broker.cfg["schema.registry.listeners"] and http is not None and not http.ready.is_set():
        # the HTTP services start in the background: the registry may come up just after us
        import asyncio
        try:
            await asyncio.wait_for(http.ready.wait(), 30)
        except asyncio.TimeoutError:
            pass
        store = getattr(broker, "schema_registry", None)
    if store is None:
        raise SerdeError(400, 40002, "Schema registry not enabled: AVRO, JSONSCHEMA and PROTOBUF keys/values need "
                                     "schema.registry.listeners")
    await store.ready.wait()
    if store.load_error is not None:
        raise SerdeError(500, 50001, "The schema registry failed to load")
    store.catch_up()
    return store


async def resolve(broker, principal: str | None, host: str, topic: str, is_key: bool, spec: dict):
    """(VersionEntry, ParsedSchema) for a produce request's key or value ``spec``."""
    from broker.security.acl import AclOperation as Op
    from schema_registry.errors import RegistryError
    store = await _store(broker)
    want_type = spec.get("type")
    if want_type is not None and (not isinstance(want_type, str) or want_type.upper() not in TYPES):
        raise SerdeError(400, 400, f"Unknown type {want_type!r}")
    registry_type = TYPES[want_type.upper()] if want_type else None
    strategy = spec.get("subject_name_strategy")
    try:
        if spec.get("schema_id") is not None:
            sid = spec["schema_id"]
            if isinstance(sid, bool) or not isinstance(sid, int):
                raise SerdeError(400, 400, "schema_id must be an integer")
            entry = store.schema_by_id(sid)
            if entry is None:
                raise SerdeError(404, 40403, f"Schema {sid} not found")
            if not any(_allowed(broker, principal, host, Op.READ, s)
                       for s in {e.subject for e in store.state.ids.get(sid, {}).values()}):
                raise _denied(entry.subject)
        elif spec.get("schema") is not None:
            text = spec["schema"]
            if not isinstance(text, str):
                text = json.dumps(text)
            parsed = store.parse(registry_type or "AVRO", text, spec.get("references") or [])
            subject = spec.get("subject") or subject_for(topic, is_key, strategy, record_name(parsed))
            if not subject:
                raise SerdeError(400, 400, "The subject name strategy needs a record name the schema does not have")
            if not _allowed(broker, principal, host, Op.WRITE, subject):
                raise _denied(subject)
            body = {"schema": text, "references": spec.get("references") or []}
            if (registry_type or "AVRO") != "AVRO":
                body["schemaType"] = registry_type
            entry = store.register(subject, body)
        else:
            subject = spec.get("subject") or subject_for(topic, is_key, strategy, None)
            if not subject:
                raise SerdeError(400, 400, "RECORD_NAME strategies need a schema_id or a schema")
            if not _allowed(broker, principal, host, Op.READ, subject):
                raise _denied(subject)
            version = spec.get("schema_version")
            entry = store.get_version(subject, "latest" if version is None else version)
        parsed = store.parsed_entry(entry)
    except RegistryError as e:
        raise _registry_error(e) from None
    if registry_type is not None and entry.schema_type != registry_type:
        raise SerdeError(400, 400, f"Schema {entry.id} is {entry.schema_type}, not {want_type}")
    return entry, parsed


def _header(schema_id: int) -> bytes:
    return bytes([MAGIC]) + schema_id.to_bytes(4, "big")


def encode(entry, parsed, data: Any) -> bytes:
    """JSON data -> wire-format bytes; DataError when it does not fit the schema."""
    t = entry.schema_type
    if t == "AVRO":
        return _header(entry.id) + _avro_encode(parsed.schema, data)
    if t == "JSON":
        import jsonschema
        try:
            jsonschema.validators.validator_for(parsed.data)(parsed.data).validate(data)
        except jsonschema.exceptions.ValidationError as e:
            raise DataError(f"Conversion of JSON to Object failed: {e.message}") from None
        return _header(entry.id) + json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()
    if t == "PROTOBUF":
        from google.protobuf import json_format
        cls = _proto_class(parsed)
        try:
            msg = json_format.ParseDict(data, cls())
        except (json_format.ParseError, TypeError, ValueError) as e:
            raise DataError(f"Conversion of JSON to Object failed: {e}") from None
        return _header(entry.id) + b"\x00" + msg.SerializeToString()
    raise SerdeError(400, 400, f"Unsupported schema type {t}")


# ---- AVRO -------------------------------------------------------------------------------------

def _avro_datum(schema, v):
    """JSON -> the Python datum Avro's DatumWriter takes (bytes/fixed from strings, union
    branches given bare or wrapped as ``{"branch": value}``); anything else is left to the
    writer's own validation."""
    t = schema.type
    if t == "union":
        if isinstance(v, dict) and len(v) == 1:
            (name, inner), = v.items()
            for b in schema.schemas:
                if name in (b.type, getattr(b, "fullname", None), getattr(b, "name", None)):
                    return _avro_datum(b, inner)
        for b in schema.schemas:
            try:
                d = _avro_datum(b, v)
                if _avro_valid(b, d):
                    return d
            except Exception:
                continue
        return v
    if t == "record" or t == "error":
        if not isinstance(v, dict):
            return v
        return {f.name: _avro_datum(f.type, v[f.name]) for f in schema.fields if f.name in v}
    if t == "array":
        return [_avro_datum(schema.items, x) for x in v] if isinstance(v, list) else v
    if t == "map":
        return {k: _avro_datum(schema.values, x) for k, x in v.items()} if isinstance(v, dict) else v
    if t in ("bytes", "fixed") and isinstance(v, str):
        return v.encode("latin-1") if all(ord(c) < 256 for c in v) else v.encode()
    if t in ("float", "double") and isinstance(v, int) and not isinstance(v, bool):
        return float(v)
    return v


def _avro_valid(schema, datum) -> bool:
    import avro.io
    return avro.io.validate(schema, datum)


def _avro_encode(schema, data) -> bytes:
    import avro.errors
    import avro.io
    buf = io.BytesIO()
    try:
        avro.io.DatumWriter(schema).write(_avro_datum(schema, data), avro.io.BinaryEncoder(buf))
    except (avro.errors.AvroTypeException, avro.errors.AvroException, TypeError, ValueError, KeyError) as e:
        raise DataError(f"Conversion of JSON to Avro failed: {e}") from None
    return buf.getvalue()


def _avro_json(schema, v):
    """An Avro datum as JSON (bytes as latin-1 strings, as Avro's JSON encoding)."""
    if isinstance(v, bytes):
        return v.decode("latin-1")
    if isinstance(v, dict):
        return {k: _avro_json(schema, x) for k, x in v.items()}
    if isinstance(v, list):
        return [_avro_json(schema, x) for x in v]
    return v


# ---- PROTOBUF -------------------------------------------------------------------------------

_PROTO_CLASSES: dict[tuple[int, int], tuple[Any, Any]] = {}  # (id(parsed), index) -> (parsed, class)


def _proto_class(parsed, index: int = 0):
    """The message class of the schema's ``index``-th top-level message (built once per parsed
    schema; the entry keeps the schema alive so its id is not reused)."""
    key = (id(parsed), index)
    hit = _PROTO_CLASSES.get(key)
    cls = hit[1] if hit is not None and hit[0] is parsed else None
    if cls is None:
        from google.protobuf import descriptor_pool, message_factory
        pool = descriptor_pool.DescriptorPool()
        for fdp in parsed.deps.values():
            try:
                pool.Add(fdp)
            except TypeError:
                pass  # already there (a well-known type)
        pool.Add(parsed.fdp)
        msg = parsed.fdp.message_type[index]
        name = (f"{parsed.fdp.package}." if parsed.fdp.package else "") + msg.name
        cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(name))
        if len(_PROTO_CLASSES) > 1000:
            _PROTO_CLASSES.clear()
        _PROTO_CLASSES[key] = (parsed, cls)
    return cls


def _zigzag_varints(payload: bytes, pos: int) -> tuple[list[int], int]:
    def one(p):
        shift = result = 0
        while True:
            b = payload[p]
            p += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return (result >> 1) ^ -(result & 1), p
            shift += 7
    n, pos = one(pos)
    if n == 0:
        return [0], pos
    out = []
    for _ in range(n):
        v, pos = one(pos)
        out.append(v)
    return out, pos


# ---- decode ---------------------------------------------------------------------------------

def decode(broker, principal: str | None, host: str, payload: bytes | None) -> dict | None:
    """{schema_id, schema_type, subject, data} of a wire-format payload whose id the registry
    knows and the caller may read; None otherwise (plain bytes, no registry, or undecodable)."""
    if payload is None or len(payload) < 5 or payload[0] != MAGIC:
        return None
    store = getattr(broker, "schema_registry", None)
    if store is None or not store.ready.is_set() or store.load_error is not None:
        return None
    sid = int.from_bytes(payload[1:5], "big")
    entry = store.schema_by_id(sid)
    if entry is None:
        return None
    from broker.security.acl import AclOperation as Op
    if not any(_allowed(broker, principal, host, Op.READ, s) for s in {e.subject for e in store.state.ids[sid].values()}):
        return None
    try:
        parsed = store.parsed_entry(entry)
        if entry.schema_type == "AVRO":
            import avro.io
            data = _avro_json(parsed.schema, avro.io.DatumReader(parsed.schema).read(
                avro.io.BinaryDecoder(io.BytesIO(payload[5:]))))
        elif entry.schema_type == "JSON":
            data = json.loads(payload[5:])
        elif entry.schema_type == "PROTOBUF":
            from google.protobuf import json_format
            indexes, pos = _zigzag_varints(payload, 5)
            if indexes != [0] and len(indexes) != 1:
                return None  # nested message types: shown as bytes
            msg = _proto_class(parsed, indexes[0])()
            msg.ParseFromString(payload[pos:])
            data = json_format.MessageToDict(msg, preserving_proto_field_name=True)
        else:
            return None
    except Exception:  # bytes that only look like the wire format
        return None
    return {"schema_id": sid, "schema_type": "JSONSCHEMA" if entry.schema_type == "JSON" else entry.schema_type,
            "subject": entry.subject, "data": data}


__all__ = ["SerdeError", "DataError", "resolve", "encode", "decode", "subject_for", "record_name", "TYPES"]
