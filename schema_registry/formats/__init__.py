"""Schema formats: parsing, canonical text and compatibility verdicts, without I/O.

Contract shared by every format (AVRO, JSON, PROTOBUF):

- ``parse_schema(schema_type, text, references)`` returns a ``ParsedSchema`` or raises
  ``SchemaError`` whose message is the parser's own (the registry answers it as 42201);
  ``references`` maps each reference's import name to the referenced schema's text.
- ``ParsedSchema.canonical()`` is the text the registry keeps and looks schemas up by (two
  registrations with the same canonical text are the same schema and share an id);
  ``normalized()`` is the stronger form used when a request says ``normalize=true``.
- ``ParsedSchema.compatibility_errors(previous, direction, policy)`` lists why ``self`` (the new
  schema) is not compatible with ``previous`` in one direction, empty when it is:
  ``BACKWARD``: a reader using ``self`` reads data written with ``previous``;
  ``FORWARD``: a reader using ``previous`` reads data written with ``self``.
  The levels (FULL, _TRANSITIVE) are combined from these in ``schema_registry.compatibility``.
- ``ParsedSchema.formatted(fmt)``: the text answered for ``?format=fmt`` (None: as stored).

PROTOBUF lives in ``schema_registry.formats.protobuf`` (its ``parse(text, references)``) and
is imported lazily: where that module is absent the type answers 42201 "not available".
"""
from __future__ import annotations

import importlib
from typing import Callable

BACKWARD = "BACKWARD"
FORWARD = "FORWARD"


class SchemaError(ValueError):
    """An invalid schema; the message is the parser's, answered with error code 42201."""


class ParsedSchema:
    """A parsed schema of one type. Subclasses set ``schema_type`` and implement the methods."""

    schema_type: str = ""

    def canonical(self) -> str:
        raise NotImplementedError

    def normalized(self) -> str:
        return self.canonical()

    def compatibility_errors(self, previous: "ParsedSchema", direction: str, policy: str = "STRICT") -> list[str]:
        raise NotImplementedError

    def formatted(self, fmt: str) -> str | None:
        """The schema text in another form a client asks for with ``?format=`` on
        ``/schemas/ids/{id}`` and ``/subjects/{s}/versions/{v}`` (PROTOBUF: ``serialized``, the
        base64 FileDescriptorProto); None: the stored text, as Confluent does for unknown formats."""
        return None

    def __repr__(self) -> str:
        return f"<{self.schema_type} {self.canonical()[:60]}>"


def _avro(text: str, references: dict[str, str], new: bool) -> ParsedSchema:
    from schema_registry.formats.avro import parse
    return parse(text, references, new=new)


def _json(text: str, references: dict[str, str], new: bool) -> ParsedSchema:
    from schema_registry.formats.jsonschema import parse
    return parse(text, references)


def _protobuf(text: str, references: dict[str, str], new: bool) -> ParsedSchema:
    try:
        module = importlib.import_module("schema_registry.formats.protobuf")
    except ImportError as exc:
        if exc.name not in ("schema_registry.formats.protobuf",):
            raise SchemaError(f"PROTOBUF schemas are not available: {exc}") from None
        raise SchemaError("PROTOBUF schemas are not available in this build") from None
    return module.parse(text, references)


FORMATS: dict[str, Callable[[str, dict[str, str], bool], ParsedSchema]] = {
    "AVRO": _avro,
    "JSON": _json,
    "PROTOBUF": _protobuf,
}


def parse_schema(schema_type: str | None, text: str, references: dict[str, str] | None = None, *,
                 new: bool = True) -> ParsedSchema:
    """Parse ``text`` as ``schema_type`` (None or "" means AVRO, as Confluent's default).
    ``new``: a schema being registered or looked up (validated in full); False for one already
    stored, which Confluent parses leniently (``validateAsNew=false``) so that what it once
    accepted keeps serving."""
    st = (schema_type or "AVRO").upper()
    fn = FORMATS.get(st)
    if fn is None:
        raise SchemaError(f"Invalid schema type {schema_type}")
    if not isinstance(text, str) or not text.strip():
        raise SchemaError("Empty schema")
    return fn(text, dict(references or {}), new)
