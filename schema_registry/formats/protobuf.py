"""PROTOBUF schemas: parsed by protoc, rendered in Confluent's layout, compared by Confluent's rules.

Clients send a schema in one of two forms, and both land on the same ``FileDescriptorProto``:

* ``.proto`` text: compiled by protoc (the one bundled in ``grpcio-tools``, in process), with
  each reference written as a file under its import name beside it and the well-known types
  (``google/protobuf/*``, ``google/type/*`` when googleapis-common-protos is installed) on the
  include path. protoc's own message (``file:line:column: text``) is the ``SchemaError``;
* the base64 serialized ``FileDescriptorProto`` that confluent-kafka's ``ProtobufSerializer``
  registers (``_schema_to_str``: ``descriptor.file.serialized_pb``) and looks up; it also asks
  for ``?format=serialized``, which answers that form back (:meth:`ProtobufSchema.formatted`).

The canonical form is the descriptor rendered as ``.proto`` text in the layout of Confluent's
``ProtobufSchemaUtils.toString`` (syntax, package, imports, options, messages then enums, extends,
services; inside a message: reserved, options, fields, oneofs, extensions, extends, nested
messages then enums), with type names fully qualified and a leading dot, as Confluent writes
them for a descriptor. Text and binary forms of one schema thus get one canonical text (and one
id); Confluent keeps the text as its parser read it, so there they differ unless normalized.
The canonical text is compiled again, so what is stored always compiles. ``normalized()`` also
sorts what Confluent's normalization sorts (imports, fields by number, oneofs, enum values,
reserved ranges, options); message order is kept, as message indexes on the wire depend on it.

Compatibility follows Confluent's ``SchemaDiff`` (protobuf-provider ``diff/``): a one-way diff
old -> new lists typed differences (field kind, scalar group, message type, label of a numeric
field, required field added/removed, oneof membership, package, message removed...), and a
change is compatible when every difference is in Confluent's compatible set. BACKWARD diffs
the previous schema to the new one, FORWARD the reverse, FULL both.

Custom options (extensions of ``google.protobuf.*Options`` that the schema or its references
define) are read back through a descriptor pool holding their definitions, so they survive;
Confluent's own ``confluent/meta.proto`` and ``confluent/type/decimal.proto`` are known without
references, as in Confluent's registry. Not kept: comments. Editions files are rendered best
effort.
"""
from __future__ import annotations

import base64
import binascii
import codecs
import io
import os
import re
import tempfile
import threading
import tokenize
from dataclasses import dataclass, field
from typing import Iterable

from google.protobuf import descriptor_pb2 as dpb
from google.protobuf import text_format
from google.protobuf.message import DecodeError

from schema_registry.formats import ParsedSchema, SchemaError

FDP = dpb.FileDescriptorProto
F = dpb.FieldDescriptorProto

MAX_FIELD_NUMBER = 536_870_911
_B64 = re.compile(r"[A-Za-z0-9+/=\s]+")
_lock = threading.Lock()  # protoc's in-process compiler is one global instance

# --------------------------------------------------------------------------- protoc


def _include_dirs() -> list[str]:
    """The well-known types that ship with grpcio-tools, then googleapis' google/type."""
    from grpc_tools import protoc
    dirs = [protoc._get_resource_file_name("grpc_tools", "_proto")]
    # googleapis-common-protos installs google/type/*.proto beside its modules: the include
    # directory is the one holding google/ (google.type is a namespace package, so its
    # __path__ names .../google/type)
    try:
        import google.type
    except ImportError:
        return dirs
    for path in google.type.__path__:
        if os.path.exists(os.path.join(path, "color.proto")):
            dirs.append(os.path.dirname(os.path.dirname(path)))
            break
    return dirs


_INCLUDES: list[str] | None = None
_KNOWN: dict[str, str] | None = None
# Confluent's own .proto files, which its registry knows built in (ProtobufSchema's
# KNOWN_DEPENDENCIES: these, google/type/* and google/protobuf/*, the last two from the include
# path) and confluent-kafka's serializers never send as references: rendered from the modules
# confluent-kafka[protobuf] ships (a runtime dependency). confluent/types/decimal.proto is the
# older name confluent-kafka still ships.
_KNOWN_MODULES = {
    "confluent/meta.proto": "confluent_kafka.schema_registry.confluent.meta_pb2",
    "confluent/type/decimal.proto": "confluent_kafka.schema_registry.confluent.type.decimal_pb2",
    "confluent/types/decimal.proto": "confluent_kafka.schema_registry.confluent.types.decimal_pb2",
}
# newer than some confluent-kafka versions the dependency range admits: known when shipped
_KNOWN_IF_SHIPPED = {
    "confluent/type/variant.proto": "confluent_kafka.schema_registry.confluent.type.variant_pb2",
}


def _known_dependencies() -> dict[str, str]:
    global _KNOWN
    if _KNOWN is None:
        import importlib
        known = {}
        for name, module in {**_KNOWN_MODULES, **_KNOWN_IF_SHIPPED}.items():
            try:
                mod = importlib.import_module(module)
            except ModuleNotFoundError as e:
                if name in _KNOWN_IF_SHIPPED and e.name == module:
                    continue
                raise  # a missing runtime dependency is an install bug, never a 42201 later
            known[name] = render(FDP.FromString(mod.DESCRIPTOR.serialized_pb))
        _KNOWN = known
    return _KNOWN


def _serialized_files(generated_code: bytes) -> bytes:
    """The serialized FileDescriptorProto in protoc's Python output (its AddSerializedFile
    argument), read with the tokenizer and the bytes literal's escapes: the code is never run,
    and never given to ``ast`` (CPython 3.11's AST builder is not thread-safe: a broker thread
    parsing here while its embedding application imports a module fails one of the two)."""
    tokens = tokenize.tokenize(io.BytesIO(generated_code).readline)
    want = 0  # 0: looking for AddSerializedFile, 1: for "(", 2: for the literal
    for tok in tokens:
        if want == 0 and tok.type == tokenize.NAME and tok.string == "AddSerializedFile":
            want = 1
        elif want == 1:
            want = 2 if tok.type == tokenize.OP and tok.string == "(" else 0
        elif want == 2:
            literal = tok.string
            if tok.type == tokenize.STRING and literal[:1] in "bB" and literal[1:2] in "'\"":
                quote = literal[1:4] if literal[1:4] in ("\'\'\'", '"""') else literal[1]
                body = literal[1 + len(quote):-len(quote)]
                return codecs.escape_decode(body.encode("latin-1"))[0]
            want = 0
    raise SchemaError("protoc produced no descriptor")


class ProtocError(SchemaError):
    """protoc's messages (``file:line:column: message``), with each as (file, line, column,
    message), line and column 0-based (-1 when protoc names no place)."""

    def __init__(self, message: str, errors: list[tuple[str, int, int, str]]):
        super().__init__(message)
        self.errors = errors


_UNKNOWN_OPTION = re.compile(r'^Option "\(.+" unknown\.')


def compile_files(files: dict[str, str], main: str) -> dict[str, FDP]:
    """``_compile`` with Confluent's leniency for custom options nothing defines: its parser
    (Square's wire) keeps an option it cannot resolve out of the descriptor and registers the
    schema, where protoc refuses it. An undefined custom option (``(name) = value`` on a file,
    message, field, oneof, enum, value, service or method) is dropped from the text it was
    written in and the files compiled again; any other error is protoc's."""
    for _ in range(8):  # each round drops every option protoc named; a few rounds at most
        try:
            return _compile(files, main)
        except ProtocError as exc:
            unknown = [(f, line, col) for f, line, col, msg in exc.errors
                       if _UNKNOWN_OPTION.match(msg) and f in files and line >= 0]
            if not unknown or len(unknown) != len(exc.errors):
                raise
            files = dict(files)
            for name in {f for f, _, _ in unknown}:
                files[name] = strip_options(files[name], [(line, col) for f, line, col in unknown if f == name])
    return _compile(files, main)


def _compile(files: dict[str, str], main: str) -> dict[str, FDP]:
    """protoc over ``files`` (import name -> .proto text); every file ``main`` needs, by name.

    Raises ProtocError with protoc's messages (``file:line:column: message``)."""
    global _INCLUDES
    if _INCLUDES is None:
        _INCLUDES = _include_dirs()
    from grpc_tools import _protoc_compiler
    if any('"confluent/' in text for text in files.values()):
        files = {**{n: t for n, t in _known_dependencies().items() if n not in files}, **files}
    with tempfile.TemporaryDirectory(prefix="hg-proto-") as tmp:
        root = os.path.realpath(tmp)
        for name, text in files.items():
            path = os.path.realpath(os.path.join(root, name))
            if not path.startswith(root + os.sep):
                raise SchemaError(f"Invalid reference name {name!r}")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
        try:
            with _lock:
                out = _protoc_compiler.get_protos(main.encode(), [root.encode()] + [d.encode() for d in _INCLUDES])
        except Exception as exc:
            errors = getattr(exc, "errors", None)
            if callable(errors):
                found = [(e.filename.decode(errors="replace"), e.line, e.column, e.message.decode(errors="replace"))
                         for e in errors()]
                msgs = [f"{f}:{line + 1}:{col + 1}: {msg}" if line >= 0 else f"{f}: {msg}"
                        for f, line, col, msg in found]
                raise ProtocError("; ".join(msgs) or str(exc), found) from None
            raise ProtocError(str(exc), []) from None
    result: dict[str, FDP] = {}
    for _module, code in out:
        fdp = FDP.FromString(_serialized_files(code))
        result[fdp.name] = fdp
    return result


def _skip_value(text: str, i: int) -> int:
    """The offset just past the option value starting at ``i`` (after ``=``): an aggregate
    ``{...}`` (nested, strings inside), a string (adjacent literals concatenate) or a scalar."""
    n = len(text)
    while i < n and text[i].isspace():
        i += 1
    if i < n and text[i] == "{":
        depth = 0
        while i < n:
            c = text[i]
            if c in "\"'":
                i = _skip_string(text, i)
                continue
            depth += (c == "{") - (c == "}")
            i += 1
            if depth == 0:
                return i
        return i
    if i < n and text[i] in "\"'":
        while i < n and text[i] in "\"'":
            i = _skip_string(text, i)
            while i < n and text[i].isspace():
                i += 1
        return i
    while i < n and text[i] not in ",;]":
        i += 1
    return i


def _skip_string(text: str, i: int) -> int:
    quote, i = text[i], i + 1
    while i < len(text) and text[i] != quote:
        i += 2 if text[i] == "\\" else 1
    return i + 1


def strip_options(text: str, places: list[tuple[int, int]]) -> str:
    """``text`` without the options whose names start at ``places`` ((line, column), 0-based,
    as protoc reports them): an ``option (x) = v;`` statement goes whole; a ``(x) = v`` in a
    field's or value's ``[...]`` goes with its comma (and the brackets, when nothing is left)."""
    starts = []
    lines = text.split("\n")
    for line, col in places:
        starts.append(sum(len(s) + 1 for s in lines[:line]) + col)
    for start in sorted(set(starts), reverse=True):
        eq = text.find("=", start)
        if eq < 0:
            continue
        end = _skip_value(text, eq + 1)
        before = text[:start].rstrip()
        if before.endswith("option") and (len(before) == 6 or not (before[-7].isalnum() or before[-7] == "_")):
            semi = text.find(";", end)
            text = before[:-6] + text[(semi + 1 if semi >= 0 else end):]
            continue
        after = text[end:].lstrip()
        if after.startswith(","):  # drop "(x) = v," up to the next option
            text = text[:start] + after[1:].lstrip()
        elif before.endswith(","):  # the last in its list: drop ", (x) = v"
            text = before[:-1] + text[end:]
        elif before.endswith("[") and after.startswith("]"):  # the only one: drop "[...]"
            text = before[:-1].rstrip() + after[1:]
        else:
            text = text[:start] + text[end:]
    return text


# --------------------------------------------------------------------------- rendering

_SCALAR_NAMES = {v: k[len("TYPE_"):].lower() for k, v in F.Type.items()}
_LABEL_NAMES = {F.LABEL_OPTIONAL: "optional", F.LABEL_REQUIRED: "required", F.LABEL_REPEATED: "repeated"}


def _quote(s: str) -> str:
    out = []
    for ch in s:
        o = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\{o:03o}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _scalar_value(fd, value, normalize: bool = False) -> str:
    if fd.type == fd.TYPE_STRING:
        return _quote(value)
    if fd.type == fd.TYPE_BYTES:
        return '"' + text_format.CEscape(value, as_utf8=False) + '"'
    if fd.type == fd.TYPE_BOOL:
        return "true" if value else "false"
    if fd.type == fd.TYPE_ENUM:
        ev = fd.enum_type.values_by_number.get(value)
        return ev.name if ev is not None else str(value)
    if fd.type in (fd.TYPE_FLOAT, fd.TYPE_DOUBLE):
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return repr(float(value))
    if fd.type in (fd.TYPE_MESSAGE, fd.TYPE_GROUP):
        return _option_map(value, normalize)
    return str(value)


def _indent_all(text: str) -> str:
    """Every line two spaces deeper, blank ones too (the wire library's ``appendIndented``)."""
    return "".join("  " + line for line in text.splitlines(True))


def _option_map(value, normalize: bool = False) -> str:
    """A message-valued option as Confluent writes one it read from a descriptor (the wire
    library's option map): ``{``, one ``name: value`` a line with ``,`` between them, ``}``;
    a repeated field as a ``[...]`` list of one item a line (normalized: a lone item bare, as
    Confluent's normalization writes ``tags: "PII"``), nested messages alike."""
    entries = []
    for fd, v in value.ListFields():
        name = f"[{fd.full_name}]" if fd.is_extension else fd.name
        if fd.is_repeated:
            items = [_scalar_value(fd, x, normalize) for x in v]
            if normalize and len(items) == 1:
                text = items[0]
            else:
                text = "[\n" + ",\n".join(_indent_all(i) for i in items) + "\n]"
        else:
            text = _scalar_value(fd, v, normalize)
        entries.append(f"{name}: {text}")
    if not entries:
        return "{\n}"
    return "{\n" + _indent_all(",\n".join(entries)) + "\n}"


def _bracketed(opts: list[str]) -> str:
    """Field and enum value options as the wire library appends them: one inline, several one a line."""
    if len(opts) == 1:
        return "[" + opts[0] + "]"
    return "[\n" + "".join(_indent_all(o + ("," if i < len(opts) - 1 else "") + "\n")
                           for i, o in enumerate(opts)) + "]"


def _options(opts, normalize: bool, classes: dict | None = None) -> list[str]:
    """``name = value`` for every option set in an options message; custom options (extensions
    the schema or its references define) through ``classes``, the options message classes of a
    pool holding those files."""
    if classes:
        cls = classes.get(opts.DESCRIPTOR.full_name)
        if cls is not None:
            opts = cls.FromString(opts.SerializeToString())
    out = []
    for fd, value in opts.ListFields():
        name = f"({fd.full_name})" if fd.is_extension else fd.name
        values = value if fd.is_repeated else [value]
        for v in values:
            out.append(f"{name} = {_scalar_value(fd, v, normalize)}")
    return sorted(out) if normalize else out


def _join_ranges(ranges, end_exclusive: bool) -> list[str]:
    parts = []
    for r in ranges:
        end = r.end - 1 if end_exclusive else r.end
        if end == r.start:
            parts.append(str(r.start))
        else:
            parts.append(f"{r.start} to {'max' if end >= MAX_FIELD_NUMBER or end == 2**31 - 1 else end}")
    return parts


class _Renderer:
    def __init__(self, fdp: FDP, normalize: bool, option_classes: dict | None = None):
        self.fdp = fdp
        self.normalize = normalize
        self.option_classes = option_classes
        self.proto3 = fdp.syntax == "proto3"
        self.editions = fdp.syntax == "editions"
        # map entry and group types, by full name with the leading dot
        self.maps: dict[str, dpb.DescriptorProto] = {}
        self.groups: set[str] = set()
        prefix = "." + fdp.package if fdp.package else ""
        for m in fdp.message_type:
            self._index(m, prefix)

    def _index(self, m, prefix):
        full = f"{prefix}.{m.name}"
        if m.options.map_entry:
            self.maps[full] = m
        for f in m.field:
            if f.type == F.TYPE_GROUP:
                self.groups.add(f.type_name)
        for n in m.nested_type:
            self._index(n, full)

    def _opts(self, opts) -> list[str]:
        return _options(opts, self.normalize, self.option_classes)

    def render(self) -> str:
        fdp = self.fdp
        out = []
        if self.editions:
            out.append(f'edition = "{dpb.Edition.Name(fdp.edition).replace("EDITION_", "")}";\n')
        elif fdp.syntax and not (self.normalize and fdp.syntax == "proto2"):
            out.append(f'syntax = "{fdp.syntax}";\n')
        elif not fdp.syntax and not self.normalize:
            out.append('syntax = "proto2";\n')
        if fdp.package:
            out.append(f"package {fdp.package};\n")
        public = set(fdp.public_dependency)
        weak = set(fdp.weak_dependency)
        plain = [d for i, d in enumerate(fdp.dependency) if i not in public and i not in weak]
        pub = [d for i, d in enumerate(fdp.dependency) if i in public]
        wk = [d for i, d in enumerate(fdp.dependency) if i in weak]
        if self.normalize:
            plain, pub, wk = sorted(set(plain)), sorted(set(pub)), sorted(set(wk))
        if plain or pub or wk:
            out.append("\n")
            out += [f'import "{d}";\n' for d in plain]
            out += [f'import public "{d}";\n' for d in pub]
            out += [f'import weak "{d}";\n' for d in wk]
        opts = self._opts(fdp.options)
        if opts:
            out.append("\n")
            out += [f"option {o};\n" for o in opts]
        types = [self.message(m) for m in fdp.message_type if not m.options.map_entry]
        types += [self.enum(e) for e in fdp.enum_type]
        if types:
            out.append("\n")
            out += types
        if fdp.extension:
            out.append("\n")
            out += self.extends(fdp.extension)
        if fdp.service:
            out.append("\n")
            out += [self.service(s) for s in fdp.service]
        return "".join(out)

    @staticmethod
    def _indent(text: str) -> str:
        return _indent_all(text)

    def _type(self, f) -> str:
        if f.type in (F.TYPE_MESSAGE, F.TYPE_ENUM, F.TYPE_GROUP):
            return f.type_name
        return _SCALAR_NAMES[f.type]

    def field(self, f, in_oneof: bool = False, extension: bool = False) -> str:
        entry = self.maps.get(f.type_name) if f.type == F.TYPE_MESSAGE else None
        if entry is not None and f.label == F.LABEL_REPEATED:
            k, v = entry.field[0], entry.field[1]
            head = f"map<{self._type(k)}, {self._type(v)}> {f.name} = {f.number}"
        else:
            label = ""
            if not in_oneof and not self.editions:
                if f.label == F.LABEL_REPEATED:
                    label = "repeated "
                elif self.proto3:
                    label = "optional " if f.proto3_optional else ""
                else:
                    label = _LABEL_NAMES[f.label] + " "
            elif self.editions and f.label == F.LABEL_REPEATED:
                label = "repeated "
            head = f"{label}{self._type(f)} {f.name} = {f.number}"
        opts = []
        if f.HasField("default_value"):
            if f.type == F.TYPE_STRING:
                dv = _quote(f.default_value)
            elif f.type == F.TYPE_BYTES:
                dv = f'"{f.default_value}"'  # already C-escaped in the descriptor
            else:
                dv = f.default_value
            opts.append(f"default = {dv}")
        if f.HasField("json_name") and f.json_name != _json_name(f.name):
            opts.append(f"json_name = {_quote(f.json_name)}")
        opts += self._opts(f.options)
        if opts:
            head += " " + _bracketed(opts)
        return head + ";\n"

    def group(self, f, m, in_oneof: bool) -> str:
        label = "" if in_oneof or self.proto3 else _LABEL_NAMES[f.label] + " "
        body = self._message_body(m)
        return f"{label}group {m.name} = {f.number} {{{body}}}\n"

    def message(self, m) -> str:
        return f"message {m.name} {{{self._message_body(m)}}}\n"

    def _message_body(self, m) -> str:
        out = []
        reserved = self._reserved(m.reserved_range, m.reserved_name, end_exclusive=True)
        if reserved:
            out.append("\n")
            out += [self._indent(r) for r in reserved]
        opts = self._opts(m.options)
        if opts:
            out.append("\n")
            out += [self._indent(f"option {o};\n") for o in opts]
        real_oneofs = [i for i, o in enumerate(m.oneof_decl)
                       if not any(f.HasField("oneof_index") and f.oneof_index == i and f.proto3_optional
                                  for f in m.field)]
        nested_by_name = {n.name: n for n in m.nested_type}
        group_types = set()
        top = [f for f in m.field if not (f.HasField("oneof_index") and f.oneof_index in real_oneofs)]
        if self.normalize:
            top.sort(key=lambda f: f.number)
        # protoc creates a map field's entry type (and a group's type) where the field is
        # declared; message indexes on the wire count them among the nested types, so their
        # order must survive: fields first (Confluent's layout) when that keeps it, else each
        # such field at its type's place among the nested messages
        implicit = {self._implicit_name(f, nested_by_name): f for f in top}
        implicit.pop(None, None)
        layout = [n for n, f in implicit.items()] + [n.name for n in m.nested_type if n.name not in implicit]
        interleaved = [n.name for n in m.nested_type if n.name in implicit or n.name in nested_by_name]
        inline = layout != interleaved
        nested_out = []
        if inline:
            for n in m.nested_type:
                f = implicit.get(n.name)
                if f is not None:
                    nested_out.append(self._field_or_group(f, m, nested_by_name, group_types, False))
                elif not n.options.map_entry:
                    nested_out.append(self.message(n))
            top = [f for f in top if f not in implicit.values()]
        if top:
            out.append("\n")
            for f in top:
                out.append(self._indent(self._field_or_group(f, m, nested_by_name, group_types, False)))
        oneofs = []
        for i in real_oneofs:
            members = [f for f in m.field if f.HasField("oneof_index") and f.oneof_index == i]
            if self.normalize:
                if not members:
                    continue
                members.sort(key=lambda f: f.number)
            oneofs.append((m.oneof_decl[i], members))
        if self.normalize:
            oneofs.sort(key=lambda om: om[1][0].number)
        if oneofs:
            out.append("\n")
            for o, members in oneofs:
                body = []
                oo = self._opts(o.options)
                if oo:
                    body.append("\n")
                    body += [self._indent(f"option {x};\n") for x in oo]
                if members:
                    body.append("\n")
                    body += [self._indent(self._field_or_group(f, m, nested_by_name, group_types, True))
                             for f in members]
                out.append(self._indent(f"oneof {o.name} {{{''.join(body)}}}\n"))
        if m.extension_range:
            out.append("\n")
            ranges = sorted(m.extension_range, key=lambda r: r.start) if self.normalize else m.extension_range
            for r in ranges:
                line = "extensions " + ", ".join(_join_ranges([r], True))
                eo = self._opts(r.options)
                if eo:
                    line += " [" + ", ".join(eo) + "]"
                out.append(self._indent(line + ";\n"))
        if m.extension:
            out.append("\n")
            out += [self._indent(e) for e in self.extends(m.extension)]
        nested = nested_out if inline else [self.message(n) for n in m.nested_type
                                            if not n.options.map_entry and n.name not in group_types]
        nested += [self.enum(e) for e in m.enum_type]
        if nested:
            out.append("\n")
            out += [self._indent(n) for n in nested]
        return "".join(out)

    def _implicit_name(self, f, nested_by_name) -> str | None:
        """The nested type a field declares implicitly (map entry or group), if any."""
        name = f.type_name.rsplit(".", 1)[-1]
        n = nested_by_name.get(name)
        if n is None:
            return None
        if f.type == F.TYPE_GROUP or (f.type == F.TYPE_MESSAGE and n.options.map_entry
                                      and f.label == F.LABEL_REPEATED and f.type_name in self.maps):
            return name
        return None

    def _field_or_group(self, f, m, nested_by_name, group_types, in_oneof) -> str:
        if f.type == F.TYPE_GROUP:
            name = f.type_name.rsplit(".", 1)[-1]
            if name in nested_by_name:
                group_types.add(name)
                return self.group(f, nested_by_name[name], in_oneof)
        return self.field(f, in_oneof=in_oneof)

    def _reserved(self, ranges, names, end_exclusive: bool) -> list[str]:
        out = []
        rs = list(ranges)
        if self.normalize:
            rs.sort(key=lambda r: r.start)
            out += [f"reserved {p};\n" for p in _join_ranges(rs, end_exclusive)]
            out += [f"reserved {_quote(n)};\n" for n in sorted(names)]
            return out
        if rs:
            out.append("reserved " + ", ".join(_join_ranges(rs, end_exclusive)) + ";\n")
        if names:
            if self.editions:
                out.append("reserved " + ", ".join(names) + ";\n")
            else:
                out.append("reserved " + ", ".join(_quote(n) for n in names) + ";\n")
        return out

    def enum(self, e) -> str:
        out = []
        reserved = self._reserved(e.reserved_range, e.reserved_name, end_exclusive=False)
        if reserved:
            out.append("\n")
            out += [self._indent(r) for r in reserved]
        opts = self._opts(e.options)
        if not reserved and (opts or e.value):
            out.append("\n")
        out += [self._indent(f"option {o};\n") for o in opts]
        values = list(e.value)
        if self.normalize:
            values.sort(key=lambda v: (v.number, v.name))
        for v in values:
            line = f"{v.name} = {v.number}"
            vo = self._opts(v.options)
            if vo:
                line += " " + _bracketed(vo)
            out.append(self._indent(line + ";\n"))
        return f"enum {e.name} {{{''.join(out)}}}\n"

    def extends(self, fields: Iterable) -> list[str]:
        by_extendee: dict[str, list] = {}
        for f in fields:
            by_extendee.setdefault(f.extendee, []).append(f)
        out = []
        for extendee, fs in by_extendee.items():
            if self.normalize:
                fs = sorted(fs, key=lambda f: f.number)
            body = "".join(self._indent(self.field(f, extension=True)) for f in fs)
            out.append(f"extend {extendee} {{\n{body}}}\n")
        return out

    def service(self, s) -> str:
        out = []
        opts = self._opts(s.options)
        if opts:
            out.append("\n")
            out += [self._indent(f"option {o};\n") for o in opts]
        if s.method:
            out.append("\n")
            for r in s.method:
                line = (f"rpc {r.name} ({'stream ' if r.client_streaming else ''}{r.input_type}) returns "
                        f"({'stream ' if r.server_streaming else ''}{r.output_type})")
                ro = self._opts(r.options)
                if ro:
                    line += " {\n" + "".join(self._indent(f"option {o};\n") for o in ro) + "}"
                out.append(self._indent(line + ";\n"))
        return f"service {s.name} {{{''.join(out)}}}\n"


def _json_name(name: str) -> str:
    """protoc's default json_name (ToJsonName: drop '_', upper-case the letter after it)."""
    out, upper = [], False
    for ch in name:
        if ch == "_":
            upper = True
        elif upper:
            out.append(ch.upper())
            upper = False
        else:
            out.append(ch)
    return "".join(out)


def render(fdp: FDP, normalize: bool = False, option_classes: dict | None = None) -> str:
    """A FileDescriptorProto as .proto text, in Confluent's layout (see the module docstring);
    ``option_classes`` (from :func:`option_classes`) make custom options survive."""
    return _Renderer(fdp, normalize, option_classes).render()


_OPTION_MESSAGES = ("FileOptions", "MessageOptions", "FieldOptions", "OneofOptions", "EnumOptions",
                    "EnumValueOptions", "ServiceOptions", "MethodOptions", "ExtensionRangeOptions")


def descriptor_pool_of(files: dict[str, FDP], names: Iterable[str]):
    """A fresh ``DescriptorPool`` holding ``files[name]`` for each of ``names``, each file
    added after the files it imports (a name ``files`` lacks is left out). Raises what the
    pool raises for files it refuses (TypeError)."""
    from google.protobuf import descriptor_pool
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(name: str) -> None:
        if name in added or name not in files:
            return
        added.add(name)
        for dep in files[name].dependency:
            add(dep)
        pool.Add(files[name])

    for name in names:
        add(name)
    return pool


def option_classes(files: dict[str, FDP]) -> dict | None:
    """Options message classes that know the custom options ``files`` define (None when they
    define none): protoc keeps custom option values as extension fields, which only a pool
    holding their definitions can read back."""
    def extendees(msgs, exts):
        out = {e.extendee for e in exts}
        for m in msgs:
            out |= extendees(m.nested_type, m.extension)
        return out
    wanted = set()
    for f in files.values():
        wanted |= {e for e in extendees(f.message_type, f.extension)
                   if e.startswith(".google.protobuf.") and e.endswith("Options")}
    if not wanted:
        return None
    from google.protobuf.message_factory import GetMessageClass
    try:
        pool = descriptor_pool_of(files, files)
        return {f"google.protobuf.{n}": GetMessageClass(pool.FindMessageTypeByName(f"google.protobuf.{n}"))
                for n in _OPTION_MESSAGES if f".google.protobuf.{n}" in wanted}
    except Exception:  # a pool that will not build: options stay as the default pool reads them
        return None


# --------------------------------------------------------------------------- parse

def _as_descriptor(text: str) -> FDP | None:
    """The FileDescriptorProto a base64 schema string carries, or None when it is not one.

    Confluent tries the text parser first and falls back to base64; a .proto file with any
    content has a space, ';' or '{', which base64 never has, so one look decides here."""
    s = text.strip()
    if not s or not _B64.fullmatch(s):
        return None
    try:
        raw = base64.b64decode("".join(s.split()), validate=True)
        fdp = FDP.FromString(raw)
    except (binascii.Error, ValueError, DecodeError):
        return None
    return fdp if (fdp.message_type or fdp.enum_type or fdp.service or fdp.package or fdp.syntax) else None


MAIN_NAME = "default"  # Confluent's ProtobufSchema.DEFAULT_NAME; clients rename it anyway


def parse(text: str, references: dict[str, str]) -> "ProtobufSchema":
    """Parse a PROTOBUF schema (``.proto`` text or base64 FileDescriptorProto); references map
    import names to the referenced schemas (either form). Raises SchemaError."""
    if not isinstance(text, str):
        raise SchemaError("Protobuf schema must be a string")
    files: dict[str, str] = {}
    for name, ref_text in (references or {}).items():
        fdp = _as_descriptor(ref_text)
        files[name] = render(fdp) if fdp is not None else ref_text
    main = MAIN_NAME
    while main in files:
        main = "_" + main
    given = _as_descriptor(text)
    source = render(given) if given is not None else text
    files[main] = source
    compiled = compile_files(files, main)
    if given is not None:
        # custom options in a descriptor read back only with their definitions at hand
        classes = option_classes({**compiled, main: given})
        if classes is not None:
            source = files[main] = render(given, option_classes=classes)
            compiled = compile_files(files, main)
    fdp = compiled[main]
    classes = option_classes(compiled)
    canonical = render(fdp, option_classes=classes)
    if canonical != source:
        # compile what is stored, so it always compiles and its descriptor is the served one
        files[main] = canonical
        compiled = compile_files(files, main)
        fdp = compiled[main]
    deps = {name: d for name, d in compiled.items() if name != main}
    return ProtobufSchema(fdp, deps, canonical, {n: (files.get(n)) for n in deps}, classes)


# --------------------------------------------------------------------------- the schema

@dataclass(frozen=True, eq=False, repr=False)
class ProtobufSchema(ParsedSchema):
    """A compiled schema: its descriptor, its dependencies' descriptors (by import name) and
    its canonical text; ``ref_texts`` identifies which version of a reference each came from."""

    fdp: FDP
    deps: dict[str, FDP]
    canonical_text: str
    ref_texts: dict[str, str | None] = field(default_factory=dict)
    option_classes: dict | None = None
    schema_type: str = "PROTOBUF"

    def canonical(self) -> str:
        return self.canonical_text

    def normalized(self) -> str:
        return render(self.fdp, normalize=True, option_classes=self.option_classes)

    def formatted(self, fmt: str | None) -> str:
        """Confluent's ``formattedString``: ``serialized`` is the base64 FileDescriptorProto
        (what confluent-kafka's serializers ask for), anything else the canonical text."""
        if fmt == "serialized":
            fdp = FDP()
            fdp.CopyFrom(self.fdp)
            fdp.name = MAIN_NAME
            return base64.standard_b64encode(fdp.SerializeToString()).decode("ascii")
        return self.canonical_text

    def message_names(self) -> list[str]:
        """Full names of the top-level messages, in file order (message index order)."""
        prefix = self.fdp.package + "." if self.fdp.package else ""
        return [prefix + m.name for m in self.fdp.message_type]

    def record_name(self, message_indexes: list[int] | None = None) -> str | None:
        """The full name of the message the wire's message indexes point to (the first one by
        default): what RecordNameStrategy names the subject after."""
        indexes = message_indexes or [0]
        msgs, name = self.fdp.message_type, self.fdp.package
        for i in indexes:
            if not 0 <= i < len(msgs):
                return None
            name = f"{name}.{msgs[i].name}" if name else msgs[i].name
            msgs = msgs[i].nested_type
        return name

    def compatibility_errors(self, previous: "ProtobufSchema", direction: str, policy: str = "STRICT") -> list[str]:
        """Confluent's messages for what makes this schema incompatible with ``previous``:
        ``direction`` BACKWARD (this one reads data written with ``previous``), FORWARD
        (``previous`` reads this one's data) or FULL (both); ``_TRANSITIVE`` is the caller's."""
        if getattr(previous, "schema_type", None) != "PROTOBUF" or not isinstance(previous, ProtobufSchema):
            return ["Incompatible because of different schema type"]
        d = direction.upper().removesuffix("_TRANSITIVE")
        out: list[str] = []
        if d in ("FORWARD", "FULL"):
            out += [x.message("old", "new") for x in incompatible(schema_diff(self, previous))]
        if d in ("BACKWARD", "FULL"):
            out += [x.message("new", "old") for x in incompatible(schema_diff(previous, self))]
        return out


# --------------------------------------------------------------------------- compatibility

COMPATIBLE_CHANGES = frozenset({
    "MESSAGE_ADDED", "MESSAGE_MOVED", "ENUM_ADDED", "ENUM_REMOVED", "ENUM_CONST_ADDED",
    "ENUM_CONST_CHANGED", "ENUM_CONST_REMOVED", "FIELD_ADDED", "FIELD_REMOVED", "FIELD_NAME_CHANGED",
    "FIELD_STRING_OR_BYTES_LABEL_CHANGED", "ONEOF_ADDED", "ONEOF_REMOVED", "ONEOF_FIELD_ADDED",
    "ONEOF_FIELD_MOVED_TO_TOP_LEVEL",
})

# Confluent's Difference descriptions; the two %s are the reader's and the writer's prefix
_DESCRIPTIONS = {
    "PACKAGE_CHANGED": "The package at '{p}' in the %s schema does not match the package in the %s schema",
    "MESSAGE_REMOVED": "The %s schema is missing a MESSAGE type at path '{p}' in the %s schema",
    "FIELD_KIND_CHANGED": "The type of a field at path '{p}' in the %s schema does not match the %s schema",
    "FIELD_SCALAR_KIND_CHANGED": "The kind of a SCALAR field at path '{p}' in the %s schema does not match "
                                 "its kind in the %s schema",
    "FIELD_NAMED_TYPE_CHANGED": "The type of a MESSAGE field at path '{p}' in the %s schema does not match "
                                "its type in the %s schema",
    "FIELD_NUMERIC_LABEL_CHANGED": "The label for a NUMERIC field at path '{p}' in the %s schema does not "
                                   "match its label in the %s schema",
    "REQUIRED_FIELD_ADDED": "A required field  at path '{p}' in the %s schema is missing in the %s schema",
    "REQUIRED_FIELD_REMOVED": "The %s schema is missing a required field at path: '{p}' in the %s schema",
    "ONEOF_FIELD_REMOVED": "The %s schema is missing a oneof field at path '{p}' in the %s schema",
    "ONEOF_FIELD_MOVED_TO_TOP_LEVEL": "The oneof field at path '{p}' in the %s schema was moved out of its "
                                      "oneof to a top-level field in the %s schema",
    "MULTIPLE_FIELDS_MOVED_TO_ONEOF": "Multiple fields in the oneof at path '{p}' in the %s schema are "
                                      "outside a oneof in the %s schema",
    "FIELD_MOVED_TO_EXISTING_ONEOF": "A field in the oneof at path '{p}' in the %s schema is outside an "
                                     "existing oneof in the %s schema",
}


@dataclass(frozen=True)
class Difference:
    type: str
    path: str

    def message(self, reader: str, writer: str) -> str:
        desc = _DESCRIPTIONS.get(self.type, "")
        if desc:
            desc = desc.replace("{p}", self.path) % (reader, writer)
        return f'{{errorType:"{self.type}", description:"{desc}"}}'


def incompatible(diffs: list[Difference]) -> list[Difference]:
    return [d for d in diffs if d.type not in COMPATIBLE_CHANGES]


@dataclass
class _TypeInfo:
    package: str
    ref: tuple  # (import name, text) of the file it came from; ("", None) for the schema itself
    proto: object  # DescriptorProto or EnumDescriptorProto
    is_enum: bool
    is_map: bool


def _collect(schema: ProtobufSchema) -> dict[str, _TypeInfo]:
    types: dict[str, _TypeInfo] = {}

    def walk(msgs, enums, prefix, pkg, ref):
        for m in msgs:
            full = f"{prefix}.{m.name}" if prefix else m.name
            types[full] = _TypeInfo(pkg, ref, m, False, m.options.map_entry)
            walk(m.nested_type, m.enum_type, full, pkg, ref)
        for e in enums:
            full = f"{prefix}.{e.name}" if prefix else e.name
            types[full] = _TypeInfo(pkg, ref, e, True, False)

    for name, d in schema.deps.items():
        walk(d.message_type, d.enum_type, d.package, d.package, (name, schema.ref_texts.get(name)))
    walk(schema.fdp.message_type, schema.fdp.enum_type, schema.fdp.package, schema.fdp.package, ("", None))
    return types


_SCALAR_KIND = {
    F.TYPE_INT32: "GENERAL_NUMBER", F.TYPE_INT64: "GENERAL_NUMBER", F.TYPE_UINT32: "GENERAL_NUMBER",
    F.TYPE_UINT64: "GENERAL_NUMBER", F.TYPE_BOOL: "GENERAL_NUMBER", F.TYPE_ENUM: "GENERAL_NUMBER",
    F.TYPE_SINT32: "SIGNED_NUMBER", F.TYPE_SINT64: "SIGNED_NUMBER",
    F.TYPE_STRING: "STRING_OR_BYTES", F.TYPE_BYTES: "STRING_OR_BYTES",
    F.TYPE_FIXED32: "FIXED32", F.TYPE_SFIXED32: "FIXED32", F.TYPE_FIXED64: "FIXED64", F.TYPE_SFIXED64: "FIXED64",
    F.TYPE_FLOAT: "FLOAT", F.TYPE_DOUBLE: "DOUBLE",
}


class _Ctx:
    def __init__(self, old: dict[str, _TypeInfo], new: dict[str, _TypeInfo], old_syntax: str, new_syntax: str):
        self.old, self.new = old, new
        self.syntax = (old_syntax, new_syntax)
        self.path: list[str] = []
        self.diffs: list[Difference] = []
        self.comparing: set[int] = set()

    def add(self, kind: str, *extra: str):
        self.diffs.append(Difference(kind, "#/" + "/".join(self.path + list(extra))))


def _label(f, proto3: bool) -> str | None:
    """The label Confluent's parser sees: none for a plain proto3 field."""
    if f.proto3_optional:
        return "OPTIONAL"
    if f.label == F.LABEL_REPEATED:
        return "REPEATED"
    if proto3:
        return None
    return "REQUIRED" if f.label == F.LABEL_REQUIRED else "OPTIONAL"


def _field_kind(types: dict[str, _TypeInfo], type_, type_name: str) -> str:
    if type_ not in (F.TYPE_MESSAGE, F.TYPE_GROUP):
        return "SCALAR"
    info = types.get(type_name.lstrip("."))
    return "MAP" if info is not None and info.is_map else "MESSAGE"


def schema_diff(old: ProtobufSchema, new: ProtobufSchema) -> list[Difference]:
    """Confluent's SchemaDiff.compare(original, update): every difference, compatible or not."""
    ctx = _Ctx(_collect(old), _collect(new), old.fdp.syntax, new.fdp.syntax)
    if old.fdp.package != new.fdp.package:
        ctx.add("PACKAGE_CHANGED")
    _compare_types(ctx, old.fdp.message_type, old.fdp.enum_type, new.fdp.message_type, new.fdp.enum_type,
                   old.fdp.package, new.fdp.package)
    return ctx.diffs


def _compare_types(ctx: _Ctx, old_msgs, old_enums, new_msgs, new_enums, old_prefix, new_prefix):
    def index(msgs):
        by_name, idx, i = {}, {}, 0
        for m in msgs:
            by_name[m.name] = m
            idx[m.name] = i
            i += 1
        return by_name, idx
    om, oi = index(old_msgs)
    nm, ni = index(new_msgs)
    names = list(om) + [n for n in nm if n not in om]
    for name in names:
        o, n = om.get(name), nm.get(name)
        if (o is not None and o.options.map_entry) or (n is not None and n.options.map_entry):
            continue  # a map field's entry: compared as the map field (Confluent's parser has none)
        ctx.path.append(name)
        if n is None:
            ctx.add("MESSAGE_REMOVED")
        elif o is None:
            ctx.add("MESSAGE_ADDED")
        else:
            _compare_message(ctx, o, n, _join(old_prefix, name), _join(new_prefix, name))
            if oi[name] != ni[name]:
                ctx.add("MESSAGE_MOVED")
        ctx.path.pop()
    oe = {e.name: e for e in old_enums}
    ne = {e.name: e for e in new_enums}
    for name in list(oe) + [n for n in ne if n not in oe]:
        o, n = oe.get(name), ne.get(name)
        ctx.path.append(name)
        if n is None:
            ctx.add("ENUM_REMOVED")
        elif o is None:
            ctx.add("ENUM_ADDED")
        else:
            ob = {v.number: v for v in o.value}
            nb = {v.number: v for v in n.value}
            for tag in sorted(set(ob) | set(nb)):
                if tag not in nb:
                    ctx.add("ENUM_CONST_REMOVED", str(tag))
                elif tag not in ob:
                    ctx.add("ENUM_CONST_ADDED", str(tag))
                elif ob[tag].name != nb[tag].name:
                    ctx.add("ENUM_CONST_CHANGED", str(tag))
        ctx.path.pop()


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _fields(m):
    """(field by number, number -> its real oneof's name, oneof name -> member numbers)."""
    by_tag = {f.number: f for f in m.field}
    synthetic = {f.oneof_index for f in m.field if f.proto3_optional and f.HasField("oneof_index")}
    tag_oneof, oneofs = {}, {}
    for i, o in enumerate(m.oneof_decl):
        if i in synthetic:
            continue
        oneofs[o.name] = [f.number for f in m.field if f.HasField("oneof_index") and f.oneof_index == i]
        for t in oneofs[o.name]:
            tag_oneof[t] = o.name
    return by_tag, tag_oneof, oneofs


def _compare_message(ctx: _Ctx, old, new, old_full: str, new_full: str):
    key = id(old)
    if key not in ctx.comparing:
        ctx.comparing.add(key)
        try:
            _compare_fields(ctx, old, new)
        finally:
            ctx.comparing.discard(key)
    _compare_types(ctx, old.nested_type, old.enum_type, new.nested_type, new.enum_type, old_full, new_full)


def _compare_fields(ctx: _Ctx, old, new):
    ob, otag_oneof, oone = _fields(old)
    nb, ntag_oneof, none_ = _fields(new)
    fully_deleted = {name for name, tags in oone.items()
                     if name not in none_ and not any(t in nb for t in tags)}
    for name, tags in none_.items():
        origins, moved_in = set(), 0
        for t in tags:
            if t in otag_oneof:
                origins.add("oneof:" + otag_oneof[t])
            elif t in ob:
                origins.add(f"field:{t}")
                moved_in += 1
        if len(origins) > 1:
            ctx.add("MULTIPLE_FIELDS_MOVED_TO_ONEOF" if moved_in > 1 else "FIELD_MOVED_TO_EXISTING_ONEOF", name)
    for name in sorted(set(oone) | set(none_)):
        if name not in none_:
            ctx.add("ONEOF_REMOVED", name)
        elif name not in oone:
            ctx.add("ONEOF_ADDED", name)
    for tag in sorted(set(ob) | set(nb)):
        of, nf = ob.get(tag), nb.get(tag)
        o1, n1 = otag_oneof.get(tag), ntag_oneof.get(tag)
        if nf is None:
            if o1 is not None:
                if o1 not in fully_deleted:
                    ctx.add("ONEOF_FIELD_REMOVED", o1, str(tag))
            else:
                ctx.add("REQUIRED_FIELD_REMOVED" if of.label == F.LABEL_REQUIRED else "FIELD_REMOVED", str(tag))
        elif of is None:
            if n1 is not None:
                ctx.add("ONEOF_FIELD_ADDED", n1, str(tag))
            else:
                ctx.add("REQUIRED_FIELD_ADDED" if nf.label == F.LABEL_REQUIRED else "FIELD_ADDED", str(tag))
        else:
            if o1 is not None and n1 is None:
                ctx.add("ONEOF_FIELD_MOVED_TO_TOP_LEVEL", str(tag))
            where = [n1, str(tag)] if n1 is not None else [str(tag)]
            ctx.path.extend(where)
            _compare_field(ctx, of, nf)
            del ctx.path[-len(where):]


def _compare_field(ctx: _Ctx, of, nf):
    if of.name != nf.name:
        ctx.add("FIELD_NAME_CHANGED")
    _compare_labels_and_types(ctx, _label(of, ctx.syntax[0] == "proto3"), _label(nf, ctx.syntax[1] == "proto3"),
                              of.type, of.type_name, nf.type, nf.type_name)


def _compare_labels_and_types(ctx: _Ctx, olabel, nlabel, otype, otn, ntype, ntn):
    ok = _field_kind(ctx.old, otype, otn)
    nk = _field_kind(ctx.new, ntype, ntn)
    if ok != nk:
        ctx.add("FIELD_KIND_CHANGED")
        return
    if ok == "SCALAR":
        osk, nsk = _SCALAR_KIND[otype], _SCALAR_KIND[ntype]
        if osk != nsk:
            ctx.add("FIELD_SCALAR_KIND_CHANGED")
        elif olabel is not None and nlabel is not None and olabel != nlabel:
            ctx.add("FIELD_STRING_OR_BYTES_LABEL_CHANGED" if osk == "STRING_OR_BYTES"
                    else "FIELD_NUMERIC_LABEL_CHANGED")
    elif ok == "MESSAGE":
        _compare_message_types(ctx, otn, ntn)
    else:  # MAP: key and value, without labels
        oe = ctx.old[otn.lstrip(".")].proto
        ne = ctx.new[ntn.lstrip(".")].proto
        for i in (0, 1):
            _compare_labels_and_types(ctx, None, None, oe.field[i].type, oe.field[i].type_name,
                                      ne.field[i].type, ne.field[i].type_name)


def _compare_message_types(ctx: _Ctx, otn: str, ntn: str):
    ofull, nfull = otn.lstrip("."), ntn.lstrip(".")
    oi, ni = ctx.old.get(ofull), ctx.new.get(nfull)
    if oi is None or ni is None:
        if ofull != nfull:
            ctx.add("FIELD_NAMED_TYPE_CHANGED")
        return
    olocal = ofull[len(oi.package) + 1:] if oi.package and ofull.startswith(oi.package + ".") else ofull
    nlocal = nfull[len(ni.package) + 1:] if ni.package and nfull.startswith(ni.package + ".") else nfull
    if olocal != nlocal:
        ctx.add("FIELD_NAMED_TYPE_CHANGED")
        return
    if oi.ref == ni.ref:
        return  # both in the schema itself (compared there) or the same referenced file
    sub = _Ctx(ctx.old, ctx.new, *ctx.syntax)
    sub.comparing = set(ctx.comparing)
    sub.path = olocal.split(".")
    _compare_message(sub, oi.proto, ni.proto, ofull, nfull)
    ctx.diffs.extend(sub.diffs)
    if incompatible(sub.diffs):
        ctx.add("FIELD_NAMED_TYPE_CHANGED")


__all__ = ["parse", "ProtobufSchema", "SchemaError", "render", "schema_diff", "Difference",
           "COMPATIBLE_CHANGES", "compile_files"]
