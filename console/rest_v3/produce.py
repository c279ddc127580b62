"""Confluent's v3 produce request (``POST /v3/clusters/{c}/topics/{t}/records``), pure parts.

A request is one JSON object (or, Confluent's streaming mode, several concatenated in one
body, each answered by one JSON object in the same order)::

    {"partition_id": 1, "timestamp": "2021-02-05T19:14:42Z",
     "headers": [{"name": "h", "value": "<base64>"}],
     "key": {"type": "STRING", "data": "k"}, "value": {"type": "JSON", "data": {"a": 1}}}

``type``: BINARY (``data`` base64), STRING (UTF-8), JSON (any JSON, written compactly);
AVRO, JSONSCHEMA and PROTOBUF (or ``schema_id`` / ``schema_version`` / ``subject``) go
through the Schema Registry. A key or value without ``type`` and without schema fields is
JSON. A missing or null key/value is a null key/value.
"""
from __future__ import annotations

import base64
import binascii
import datetime as _dt
import json

SCHEMA_TYPES = ("AVRO", "JSONSCHEMA", "PROTOBUF")
PLAIN_TYPES = ("BINARY", "JSON", "STRING")


class ProduceInputError(Exception):
    """A produce request that does not parse: (status, error_code, message)."""

    def __init__(self, status: int, error_code: int, message: str):
        super().__init__(message)
        self.status, self.error_code, self.message = status, error_code, message


def bad(message: str) -> ProduceInputError:
    return ProduceInputError(400, 400, message)


def split_stream(raw: bytes) -> list:
    """The JSON objects of a body (one, or several concatenated in streaming mode)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise bad(f"Unexpected character / malformed JSON: {e}") from None
    dec = json.JSONDecoder()
    out, pos = [], 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        if pos >= len(text):
            break
        try:
            obj, pos = dec.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            raise bad(f"Unexpected character / malformed JSON: {e}") from None
        out.append(obj)
    if not out:
        raise bad("Request body is empty: expected a produce request")
    return out


def parse_timestamp(v) -> int | None:
    """Confluent's ``timestamp``: ISO 8601 (a zone-less time is UTC) or epoch milliseconds."""
    if v is None:
        return None
    if isinstance(v, bool):
        raise bad(f"Invalid timestamp {v!r}")
    if isinstance(v, (int, float)):
        return int(v)
    if isinstance(v, str):
        s = v.strip()
        if s.lstrip("-").isdigit():
            return int(s)
        try:
            d = _dt.datetime.fromisoformat(s.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise bad(f"Invalid timestamp {v!r}: expected ISO 8601 or epoch milliseconds") from None
        if d.tzinfo is None:
            d = d.replace(tzinfo=_dt.timezone.utc)
        return int(d.timestamp() * 1000)
    raise bad(f"Invalid timestamp {v!r}")


def needs_registry(data: dict | None) -> bool:
    if not isinstance(data, dict):
        return False
    t = data.get("type")
    return (isinstance(t, str) and t.upper() in SCHEMA_TYPES) or any(
        data.get(f) is not None for f in ("schema_id", "schema_version", "subject", "schema"))


def encode_data(field: str, data) -> tuple[bytes | None, str | None]:
    """(bytes, type) for a key or value without schema; raises ProduceInputError."""
    if data is None:
        return None, None
    if not isinstance(data, dict):
        raise bad(f"{field} must be an object with 'type' and 'data'")
    t = data.get("type", "JSON")
    if not isinstance(t, str) or t.upper() not in PLAIN_TYPES + SCHEMA_TYPES:
        raise bad(f"Unknown {field} type {t!r}: expected BINARY, JSON, STRING, AVRO, JSONSCHEMA or PROTOBUF")
    t = t.upper()
    if "data" not in data or data["data"] is None:
        return None, t
    d = data["data"]
    if t == "BINARY":
        if not isinstance(d, str):
            raise bad(f"{field}.data of type BINARY must be a base64 string")
        try:
            return base64.b64decode(d, validate=True), t
        except (binascii.Error, ValueError):
            raise bad(f"{field}.data of type BINARY is not valid base64") from None
    if t == "STRING":
        if not isinstance(d, str):
            raise bad(f"{field}.data of type STRING must be a string")
        return d.encode("utf-8"), t
    return json.dumps(d, separators=(",", ":"), ensure_ascii=False).encode("utf-8"), t


def parse_headers(hs) -> list[tuple[str, bytes | None]]:
    if hs is None:
        return []
    if not isinstance(hs, list):
        raise bad("headers must be a list of {name, value}")
    out = []
    for h in hs:
        if not isinstance(h, dict) or not isinstance(h.get("name"), str):
            raise bad("each header needs a string 'name'")
        v = h.get("value")
        if v is None:
            out.append((h["name"], None))
            continue
        if not isinstance(v, str):
            raise bad(f"header {h['name']!r}: value must be a base64 string")
        try:
            out.append((h["name"], base64.b64decode(v, validate=True)))
        except (binascii.Error, ValueError):
            raise bad(f"header {h['name']!r}: value is not valid base64") from None
    return out


def parse_partition(v) -> int | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise bad(f"partition_id must be an integer, got {v!r}")
    return v
