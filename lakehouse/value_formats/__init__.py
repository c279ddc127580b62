"""Value formats of the registry modes (``iceberg.mode`` = ``value_schema_id_prefix`` /
``value_schema_latest``): one pure module per schema type, ``lakehouse/value_formats/<fmt>.py``
(``avro``, ``protobuf``, ``jsonschema``), each exposing

    translator(schema_text: str, references: dict[str, str], message_path: tuple[int, ...] = ()) -> Translator

``references`` maps each referenced name (as the schema text imports/names it) to that schema's
text, transitively resolved by the caller. ``message_path`` is Protobuf's message-index path
(``(0,)`` = the first message of the file; other formats ignore it).

A ``Translator`` is what the table side needs of one schema version:

- ``struct``: a pyiceberg ``StructType`` of the value's columns. Field ids are unique within it;
  the table reassigns them (at creation, or when evolution adds columns by name).
- ``decode(payload: bytes) -> dict``: the payload is the value's bytes after Confluent's wire
  prefix (magic byte 0, 4-byte big-endian schema id and, for Protobuf, the message indexes). It
  returns a dict that ``pyarrow.Table.from_pylist(rows, schema=Schema(*struct.fields).as_arrow())``
  accepts (``pyiceberg.schema.Schema``; a StructType has no ``as_arrow`` itself)
  (top-level column name -> value), and raises ``ValueError(reason)`` on bytes that do not decode
  with the schema. It is pure and runs in the translation worker thread.

Protobuf's message-index prefix is parsed by ``protobuf.message_indexes(payload) -> (path,
bytes consumed)`` (path ``(0,)`` for the single-zero shorthand).

Modules import no broker, registry or I/O code: a schema's text in, columns out.
"""
from __future__ import annotations

import importlib
from typing import Any, Protocol, runtime_checkable

#: the registry's schema types (Confluent's ``schemaType``) -> module of this package
MODULES = {"AVRO": "avro", "PROTOBUF": "protobuf", "JSON": "jsonschema"}


@runtime_checkable
class Translator(Protocol):
    """One schema version's columns and decoder (see the module docstring)."""

    struct: Any  # pyiceberg.types.StructType

    def decode(self, payload: bytes) -> dict: ...


class TranslatorFactory(Protocol):
    def __call__(self, schema_text: str, references: dict[str, str],
                 message_path: tuple[int, ...] = ()) -> Translator: ...


def module_for(schema_type: str):
    """The format module of a registry ``schemaType`` (``AVRO`` when absent, as Confluent's)."""
    name = MODULES.get((schema_type or "AVRO").upper())
    if name is None:
        raise ValueError(f"schema type {schema_type!r} has no Iceberg translation")
    return importlib.import_module(f"{__name__}.{name}")


def translator(schema_type: str, schema_text: str, references: dict[str, str],
               message_path: tuple[int, ...] = ()) -> Translator:
    """The ``Translator`` of one schema version, by its registry schema type."""
    return module_for(schema_type).translator(schema_text, references, message_path)
