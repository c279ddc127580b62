"""Declarations of Kafka messages, in the shape of Kafka's own JSON message specs.

A message is declared once, as data: its API key, the versions it is valid in, the versions
that use the flexible ("compact" + tagged fields) encoding, and a tree of fields. Each field
names its Kafka type (``int32``, ``string``, ``[]int32``, ``[]Topic`` with sub-fields, ...),
the versions it exists in, the versions where it may be null, an optional tag (tagged fields
live in the struct's tag buffer in flexible versions) and its default.

``protocol.codec`` compiles each (message, version) into flat encode/decode functions once;
nothing here runs on the hot path.

Version ranges use Kafka's notation: ``"3+"``, ``"0-4"``, ``"none"``.
"""
from __future__ import annotations

from dataclasses import field as dc_field
from typing import Any, NamedTuple, Optional

from protocol.deferred import dataclass

PRIMITIVES = {
    "bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64",
    "string", "bytes", "records", "uuid",
}

_NO_DEFAULT = object()


class _EmptyStruct:
    """``default=EMPTY_STRUCT`` on a non-nullable struct field: a fresh struct of its defaults,
    as Kafka's generated classes start such a field (instead of None, built lazily)."""

    def __repr__(self) -> str:
        return "EMPTY_STRUCT"


EMPTY_STRUCT = _EmptyStruct()


class Versions(NamedTuple):
    """An inclusive version range; ``hi`` is None for an open range ("3+")."""
    lo: int
    hi: Optional[int]

    @classmethod
    def parse(cls, text: str | None) -> "Versions":
        # ~1300 parses of a dozen distinct strings at import: ranges are immutable, share them
        hit = _PARSED.get(text)
        if hit is None:
            hit = _PARSED[text] = cls._parse(text)
        return hit

    @classmethod
    def _parse(cls, text: str | None) -> "Versions":
        if text is None or text == "none" or text == "":
            return cls(1, 0)  # empty
        text = text.strip()
        if text.endswith("+"):
            return cls(int(text[:-1]), None)
        if "-" in text:
            lo, hi = text.split("-")
            return cls(int(lo), int(hi))
        return cls(int(text), int(text))

    def __contains__(self, v: int) -> bool:
        return v >= self.lo and (self.hi is None or v <= self.hi)

    @property
    def empty(self) -> bool:
        return self.hi is not None and self.hi < self.lo


_PARSED: dict[str | None, Versions] = {}


@dataclass
class Field:
    """One field of a struct, as in Kafka's JSON specs (names are snake_case here)."""
    name: str
    type: str
    versions: str = "0+"
    nullable: Optional[str] = None          # versions in which null is allowed
    default: Any = _NO_DEFAULT
    tag: Optional[int] = None               # tagged field number
    tagged_versions: Optional[str] = None   # versions in which the field is tagged
    ignorable: bool = False                 # may be dropped silently when absent in a version
    flexible: Optional[str] = None          # per-field flexibleVersions override ("none")
    fields: Optional[list["Field"]] = None  # sub-fields when type is a struct or []struct
    map_key: bool = False                   # informational (Kafka's mapKey)

    def __post_init__(self) -> None:
        self.v = Versions.parse(self.versions)
        self.null_v = Versions.parse(self.nullable)
        self.tag_v = Versions.parse(self.tagged_versions) if self.tag is not None else Versions(1, 0)
        self.flex_override = Versions.parse(self.flexible) if self.flexible is not None else None
        t = self.type
        self.is_array = t.startswith("[]")
        self.elem = t[2:] if self.is_array else t
        self.is_struct = self.elem not in PRIMITIVES
        if self.is_struct and self.fields is None:
            raise ValueError(f"field {self.name}: struct type {self.elem} needs fields")

    def default_value(self):
        """The value a field decodes to in a version that lacks it (Kafka's defaults)."""
        if self.default is not _NO_DEFAULT and self.default is not EMPTY_STRUCT:
            return self.default
        if self.is_array:
            return []
        t = self.elem
        if t in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
            return 0
        if t == "float64":
            return 0.0
        if t == "bool":
            return False
        if t == "string":
            return ""
        if t == "bytes":
            return b""
        if t == "records":
            return None
        if t == "uuid":
            return ZERO_UUID
        return None  # a nested non-array struct defaults to None (built lazily)


ZERO_UUID = bytes(16)


def F(name: str, type: str, versions: str = "0+", **kw) -> Field:
    """Shorthand used by the message declarations."""
    return Field(name, type, versions, **kw)


@dataclass
class MessageSpec:
    """One request or response: ``valid`` and ``flexible`` are version ranges."""
    name: str
    api_key: int
    kind: str                   # "request" | "response" | "header"
    valid: str
    flexible: str
    fields: list[Field]
    doc: str = ""

    def __post_init__(self) -> None:
        self.valid_v = Versions.parse(self.valid)
        self.flex_v = Versions.parse(self.flexible)

    @property
    def min_version(self) -> int:
        return self.valid_v.lo

    @property
    def max_version(self) -> int:
        assert self.valid_v.hi is not None
        return self.valid_v.hi


@dataclass
class Api:
    """A request/response pair, registered by API key."""
    key: int
    name: str
    request: MessageSpec
    response: MessageSpec
    doc: str = ""

    @property
    def min_version(self) -> int:
        return self.request.min_version

    @property
    def max_version(self) -> int:
        return self.request.max_version


def api(key: int, name: str, *, valid: str, flexible: str, request: list[Field],
        response: list[Field], doc: str = "") -> Api:
    """Declare one API: both messages share the valid and flexible version ranges."""
    return Api(
        key, name,
        MessageSpec(name + "Request", key, "request", valid, flexible, request, doc),
        MessageSpec(name + "Response", key, "response", valid, flexible, response, doc),
        doc,
    )
