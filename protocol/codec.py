"""Compile message declarations (``protocol.schema``) into fast encode/decode functions.

For every struct of a message a plain Python class with ``__slots__`` is made once; for
every (struct, version) Python source is generated and ``exec``'d once, so encoding and
decoding are straight-line code: consecutive fixed-width fields share one
``struct.pack``/``unpack_from`` call and there is no per-field version check at run time.

Decoding reads a ``memoryview`` bounded to one frame: it never reads past it, and every
malformed input surfaces as ``DecodeError``. Encoding appends ``bytes``-like parts to a list,
so large ``records`` payloads are passed through without being copied. ``encode_slices`` is the
same encoder as a generator that stops between elements of arrays of structs, so a caller can
encode an answer of millions of parts a slice at a time (the broker does, between loop turns).

Rules followed (Kafka's message README): flexible versions use compact strings, bytes,
records and arrays (uvarint length + 1, 0 = null) and end every struct with a tag buffer;
tagged fields are written in ascending tag order, only when not at their default; unknown
tags are kept (``_unknown_tags``) and written back; a field absent from a version decodes to
its default, and encoding a non-default value of a non-ignorable field into a version that
lacks it raises ``EncodeError``.
"""
from __future__ import annotations

import struct
from typing import Any

from protocol import primitives as P
from protocol.errors import DecodeError, EncodeError
from protocol.schema import EMPTY_STRUCT, Api, Field, MessageSpec, ZERO_UUID

_FIXED = {
    "bool": "?", "int8": "b", "int16": "h", "uint16": "H",
    "int32": "i", "uint32": "I", "int64": "q", "float64": "d",
}

# ``encode_slices`` stops after at least this many parts (a few hundred microseconds of encoding)
SLICE_PARTS = 4096
SLICE_DEPTH = 1  # structs in the top message's arrays are generators too; deeper ones are not

# --------------------------------------------------------------------------------------------
# Run-time helpers referenced by generated code.  Each returns (value, pos).
_I16 = P.INT16.unpack_from
_I32 = P.INT32.unpack_from
_P16 = P.INT16.pack
_P32 = P.INT32.pack
_uvarint = P.uvarint
_r_uvarint = P.read_uvarint


def _check(end: int, buf) -> None:
    if end > len(buf):
        raise DecodeError("length runs past the end of the frame")


def _r_string(buf, pos):
    (n,) = _I16(buf, pos)
    pos += 2
    if n < 0:
        if n != -1:
            raise DecodeError(f"invalid string length {n}")
        return None, pos
    end = pos + n
    if end > len(buf):
        raise DecodeError("string runs past the end of the frame")
    return str(buf[pos:end], "utf-8"), end


def _r_cstring(buf, pos):
    n, pos = _r_uvarint(buf, pos)
    if n == 0:
        return None, pos
    end = pos + n - 1
    if end > len(buf):
        raise DecodeError("string runs past the end of the frame")
    return str(buf[pos:end], "utf-8"), end


def _r_bytes(buf, pos):
    (n,) = _I32(buf, pos)
    pos += 4
    if n < 0:
        if n != -1:
            raise DecodeError(f"invalid bytes length {n}")
        return None, pos
    end = pos + n
    if end > len(buf):
        raise DecodeError("bytes run past the end of the frame")
    return bytes(buf[pos:end]), end


def _r_cbytes(buf, pos):
    n, pos = _r_uvarint(buf, pos)
    if n == 0:
        return None, pos
    end = pos + n - 1
    if end > len(buf):
        raise DecodeError("bytes run past the end of the frame")
    return bytes(buf[pos:end]), end


def _r_records(buf, pos):
    """Records stay a zero-copy view into the frame; storage copies once when it appends."""
    (n,) = _I32(buf, pos)
    pos += 4
    if n < 0:
        if n != -1:
            raise DecodeError(f"invalid records length {n}")
        return None, pos
    end = pos + n
    if end > len(buf):
        raise DecodeError("records run past the end of the frame")
    return buf[pos:end], end


def _r_crecords(buf, pos):
    n, pos = _r_uvarint(buf, pos)
    if n == 0:
        return None, pos
    end = pos + n - 1
    if end > len(buf):
        raise DecodeError("records run past the end of the frame")
    return buf[pos:end], end


def _r_uuid(buf, pos):
    end = pos + 16
    if end > len(buf):
        raise DecodeError("uuid runs past the end of the frame")
    return bytes(buf[pos:end]), end


def _r_count(buf, pos):
    (n,) = _I32(buf, pos)
    pos += 4
    if n < -1:
        raise DecodeError(f"invalid array length {n}")
    if n > len(buf) - pos:
        raise DecodeError(f"array length {n} exceeds the frame")
    return n, pos


def _r_ccount(buf, pos):
    n, pos = _r_uvarint(buf, pos)
    n -= 1
    if n > len(buf) - pos:
        raise DecodeError(f"array length {n} exceeds the frame")
    return n, pos


def _w_string(out, s):
    if s is None:
        out.append(b"\xff\xff")
    else:
        b = s.encode("utf-8")
        out.append(_P16(len(b)))
        out.append(b)


def _w_cstring(out, s):
    if s is None:
        out.append(b"\x00")
    else:
        b = s.encode("utf-8")
        out.append(_uvarint(len(b) + 1))
        out.append(b)


def _w_bytes(out, b):
    if b is None:
        out.append(b"\xff\xff\xff\xff")
    else:
        out.append(_P32(len(b)))
        out.append(b)


def _w_cbytes(out, b):
    if b is None:
        out.append(b"\x00")
    else:
        out.append(_uvarint(len(b) + 1))
        out.append(b)


def _w_records(out, b):
    if b is None:
        out.append(b"\xff\xff\xff\xff")
    elif isinstance(b, (list, tuple)):  # several chunks of one records field (zero-copy fetch)
        out.append(_P32(sum(len(c) for c in b)))
        out.extend(b)
    else:
        out.append(_P32(len(b)))
        out.append(b)


def _w_crecords(out, b):
    if b is None:
        out.append(b"\x00")
    elif isinstance(b, (list, tuple)):
        out.append(_uvarint(sum(len(c) for c in b) + 1))
        out.extend(b)
    else:
        out.append(_uvarint(len(b) + 1))
        out.append(b)


def _w_uuid(out, u):
    if len(u) != 16:
        raise EncodeError("uuid must be 16 bytes")
    out.append(u)


def _w_tags(out, tags):
    """tags: list of (tag, bytes) in any order; written ascending."""
    if not tags:
        out.append(b"\x00")
        return
    tags.sort(key=lambda t: t[0])
    out.append(_uvarint(len(tags)))
    for tag, data in tags:
        out.append(_uvarint(tag))
        out.append(_uvarint(len(data)))
        out.append(data)


def _r_skip_tags(buf, pos):
    """Read a tag buffer where no tagged field is declared: keep what is there."""
    n, pos = _r_uvarint(buf, pos)
    if n == 0:
        return None, pos
    unknown = []
    for _ in range(n):
        tag, pos = _r_uvarint(buf, pos)
        size, pos = _r_uvarint(buf, pos)
        end = pos + size
        if end > len(buf):
            raise DecodeError("tagged field runs past the end of the frame")
        unknown.append((tag, bytes(buf[pos:end])))
        pos = end
    return unknown, pos


class Struct:
    """Base of generated message classes: keyword construction, equality, repr."""
    __slots__ = ()
    _fields: tuple = ()

    def __eq__(self, other: Any) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self._fields)

    def __repr__(self) -> str:
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({inner})"

    def to_dict(self) -> dict:
        def conv(v):
            if isinstance(v, Struct):
                return v.to_dict()
            if isinstance(v, list):
                return [conv(x) for x in v]
            if isinstance(v, memoryview):
                return bytes(v)
            return v
        return {f: conv(getattr(self, f)) for f in self._fields}


def _default_src(f: Field, consts: dict) -> str:
    """Source for a fresh default value of ``f`` (fresh lists each time)."""
    d = f.default_value()
    if isinstance(d, list):
        if d:
            raise ValueError("non-empty list default")
        return "[]"
    if d is None or isinstance(d, (bool, int, float)):
        return repr(d)
    name = f"_D{len(consts)}"
    consts[name] = d
    return name


def _compile_init(cls: type) -> None:
    """Install the generated keyword-only ``__init__`` of a struct class (fresh defaults per
    call, no per-field branching beyond ``is _UNSET``)."""
    fields = cls._spec_fields
    consts: dict[str, Any] = {}
    args = ", ".join(f"{f.name}=_UNSET" for f in fields)
    body = []
    for f in fields:
        if f.default is EMPTY_STRUCT:
            name = f"_S{len(consts)}"
            consts[name] = getattr(cls, f.elem)
            body.append(f"    self.{f.name} = {name}() if {f.name} is _UNSET else {f.name}")
            continue
        body.append(f"    self.{f.name} = {_default_src(f, consts)} if {f.name} is _UNSET else {f.name}")
    body.append("    self._unknown_tags = None")
    src = f"def __init__(self{', *, ' + args if args else ''}):\n" + ("\n".join(body) or "    pass")
    ns = dict(consts, _UNSET=_UNSET)
    exec(compile(src, f"<struct {cls.__name__}>", "exec"), ns)
    cls.__init__ = ns["__init__"]


def _deferred_init(self, **kwargs) -> None:
    # Compiling ~170 struct initialisers costs ~15 ms at import; most structs of most
    # messages are never built in a given process, so each is compiled on first use.
    cls = type(self)
    _compile_init(cls)
    cls.__init__(self, **kwargs)


class _Gen:
    """Generates the classes and per-version functions for one top-level message."""

    def __init__(self, spec: MessageSpec):
        self.spec = spec
        self.ns: dict[str, Any] = {
            "DecodeError": DecodeError, "EncodeError": EncodeError, "_check": _check,
            "_r_string": _r_string, "_r_cstring": _r_cstring, "_r_bytes": _r_bytes,
            "_r_cbytes": _r_cbytes, "_r_records": _r_records, "_r_crecords": _r_crecords,
            "_r_uuid": _r_uuid, "_r_count": _r_count, "_r_ccount": _r_ccount,
            "_r_uvarint": _r_uvarint, "_r_skip_tags": _r_skip_tags,
            "_w_string": _w_string, "_w_cstring": _w_cstring, "_w_bytes": _w_bytes,
            "_w_cbytes": _w_cbytes, "_w_records": _w_records, "_w_crecords": _w_crecords,
            "_w_uuid": _w_uuid, "_w_tags": _w_tags, "_uvarint": _uvarint,
            "_P32": _P32, "_struct": struct, "_SLICE_PARTS": SLICE_PARTS,
        }
        self.classes: dict[str, type] = {}
        self.counter = 0
        self._deep: dict[tuple[str, int], bool] = {}
        self.top = self._make_class(spec.name, spec.fields)
        # Struct names are unique within a message (as in Kafka's specs), so every nested
        # class is also reachable from the top: ``FetchResponse.PartitionData``.
        for cname, cls in self.classes.items():
            if cls is not self.top and not hasattr(self.top, cname):
                setattr(self.top, cname, cls)

    # ---- classes --------------------------------------------------------------------------
    def _make_class(self, name: str, fields: list[Field]) -> type:
        prev = self.classes.get(name)
        if prev is not None:
            # A struct type used in two places (e.g. a common struct) is one class.
            if prev._fields != tuple(f.name for f in fields):
                raise ValueError(f"struct {name} declared twice with different fields")
            return prev
        slots = tuple(f.name for f in fields) + ("_unknown_tags",)
        cls = type(name, (Struct,), {"__slots__": slots, "__init__": _deferred_init,
                                      "_fields": tuple(f.name for f in fields), "_spec_fields": fields})
        self.classes[name] = cls
        for f in fields:
            if f.is_struct:
                sub = self._make_class(f.elem, f.fields)
                setattr(cls, f.elem, sub)
        return cls

    # ---- per version functions ------------------------------------------------------------
    def fname(self, prefix: str, struct_name: str, version: int) -> str:
        return f"{prefix}_{struct_name}_v{version}"

    def compile(self, version: int):
        flexible = version in self.spec.flex_v
        lines: list[str] = []
        self._struct_fns(self.spec.name, self.spec.fields, version, flexible, lines, set())
        if self.is_deep(self.spec.name, self.spec.fields, version):
            self._sliced_fns(self.spec.name, self.spec.fields, version, flexible, lines, 0, set())
        src = "\n".join(lines)
        for cname, cls in self.classes.items():
            self.ns[f"C_{cname}"] = cls
        exec(compile(src, f"<codec {self.spec.name} v{version}>", "exec"), self.ns)
        return (self.ns[self.fname("d", self.spec.name, version)],
                self.ns[self.fname("e", self.spec.name, version)], src)

    def slicer(self, version: int):
        """The generator form of the top-level encoder (None when the message has no array of
        structs in ``version``: nothing to slice). Compiled after ``compile(version)``."""
        return self.ns.get(self.fname("s0", self.spec.name, version))

    def is_deep(self, name: str, fields, v: int) -> bool:
        """A struct holds, in version ``v`` and outside tagged fields, an array of structs at
        some depth: its encoding can be sliced between that array's elements."""
        key = (name, v)
        if key not in self._deep:
            self._deep[key] = False  # a struct never contains itself; guards recursion anyway
            self._deep[key] = any(
                f.is_struct and v in f.v and not (v in f.tag_v)
                and (f.is_array or self.is_deep(f.elem, f.fields, v)) for f in fields)
        return self._deep[key]

    def _struct_fns(self, name, fields, v, flex, lines, done):
        if name in done:
            return
        done.add(name)
        for f in fields:
            if f.is_struct and v in f.v:
                self._struct_fns(f.elem, f.fields, v, flex, lines, done)
        self._decoder(name, fields, v, flex, lines)
        self._encoder(name, fields, v, flex, lines)

    def _sliced_fns(self, name, fields, v, flex, lines, level, done):
        """The generator encoders ``s<level>_<struct>``: the top message (level 0) and the
        structs in its arrays (level 1) yield between the elements of their arrays of structs;
        deeper structs are encoded by the plain functions (one element, e.g. one topic's
        partitions or one resource's configs, is the finest slice: bounded by the generator
        count, not by every leaf)."""
        if (name, level) in done:
            return
        done.add((name, level))
        if level < SLICE_DEPTH:
            for f in fields:
                if f.is_struct and v in f.v and not (v in f.tag_v) and self.is_deep(f.elem, f.fields, v):
                    self._sliced_fns(f.elem, f.fields, v, flex, lines, level + 1, done)
        self._encoder(name, fields, v, flex, lines, sliced=level)

    def _flex_for(self, f: Field, flex: bool, v: int) -> bool:
        if f.flex_override is not None:
            return v in f.flex_override
        return flex

    def _const(self, value) -> str:
        self.counter += 1
        n = f"_K{self.counter}"
        self.ns[n] = value
        return n

    # decode ---------------------------------------------------------------------------------
    def _decoder(self, name, fields, v, flex, lines):
        L = [f"def {self.fname('d', name, v)}(buf, pos):", f"    o = C_{name}.__new__(C_{name})"]
        consts: dict[str, Any] = {}
        regular = [f for f in fields if v in f.v and not (flex and v in f.tag_v)]
        tagged = [f for f in fields if v in f.v and flex and v in f.tag_v]
        absent = [f for f in fields if v not in f.v]
        i = 0
        while i < len(regular):
            f = regular[i]
            if not f.is_array and f.elem in _FIXED:
                run = [f]
                j = i + 1
                while j < len(regular) and not regular[j].is_array and regular[j].elem in _FIXED:
                    run.append(regular[j])
                    j += 1
                fmt = ">" + "".join(_FIXED[r.elem] for r in run)
                st = struct.Struct(fmt)
                sn = self._const(st.unpack_from)
                targets = ", ".join(f"o.{r.name}" for r in run)
                L.append(f"    ({targets},) = {sn}(buf, pos); pos += {st.size}")
                i = j
                continue
            L.extend("    " + s for s in self._read_field(f, "o." + f.name, v, flex))
            i += 1
        for f in absent + tagged:
            d = f.default_value()
            # Non-scalar defaults (strings, bytes, UUIDs) go through the shared per-message
            # constant table under a unique name: nested structs share one namespace.
            if isinstance(d, list) or d is None or isinstance(d, (bool, int, float)):
                src = _default_src(f, consts)
            else:
                src = self._const(d)
            L.append(f"    o.{f.name} = {src}")
        if flex:
            if tagged:
                L.append("    o._unknown_tags = None")
                L.append("    n, pos = _r_uvarint(buf, pos)")
                L.append("    for _ in range(n):")
                L.append("        tag, pos = _r_uvarint(buf, pos)")
                L.append("        size, pos = _r_uvarint(buf, pos)")
                L.append("        end = pos + size; _check(end, buf)")
                L.append("        sub = buf[:end]")
                first = True
                for f in sorted(tagged, key=lambda t: t.tag):
                    kw = "if" if first else "elif"
                    first = False
                    L.append(f"        {kw} tag == {f.tag}:")
                    L.append("            p2 = pos")
                    L.extend("            " + s for s in self._read_field(f, "o." + f.name, v, True, posvar="p2", bufvar="sub"))
                    L.append("            if p2 != end: raise DecodeError('tagged field size mismatch')")
                L.append("        else:")
                L.append("            if o._unknown_tags is None: o._unknown_tags = []")
                L.append("            o._unknown_tags.append((tag, bytes(buf[pos:end])))")
                L.append("        pos = end")
            else:
                L.append("    o._unknown_tags, pos = _r_skip_tags(buf, pos)")
        else:
            L.append("    o._unknown_tags = None")
        L.append("    return o, pos")
        self.ns.update(consts)
        lines.extend(L)

    def _read_field(self, f: Field, target: str, v: int, flex: bool, posvar="pos", bufvar="buf") -> list[str]:
        fx = self._flex_for(f, flex, v)
        nullable = v in f.null_v
        out = []
        p, b = posvar, bufvar
        if f.is_array:
            cnt = "_r_ccount" if fx else "_r_count"
            out.append(f"n, {p} = {cnt}({b}, {p})")
            if f.is_struct:
                fn = self.fname("d", f.elem, v)
                out.append(f"if n < 0:")
                out.append(f"    {target} = None" if nullable else "    raise DecodeError('null array in non-nullable field " + f.name + "')")
                out.append("else:")
                out.append("    lst = []")
                out.append("    for _ in range(n):")
                out.append(f"        x, {p} = {fn}({b}, {p})")
                out.append("        lst.append(x)")
                out.append(f"    {target} = lst")
            else:
                out.append(f"if n < 0:")
                out.append(f"    {target} = None" if nullable else "    raise DecodeError('null array in non-nullable field " + f.name + "')")
                out.append("else:")
                if f.elem in _FIXED:
                    code = _FIXED[f.elem]
                    sz = struct.calcsize(">" + code)
                    out.append(f"    _check({p} + n * {sz}, {b})")
                    out.append(f"    {target} = list(_struct.unpack_from('>%d{code}' % n, {b}, {p})); {p} += n * {sz}")
                else:
                    rd = self._prim_reader(f.elem, fx)
                    out.append("    lst = []")
                    out.append("    for _ in range(n):")
                    out.append(f"        x, {p} = {rd}({b}, {p})")
                    out.append("        lst.append(x)")
                    out.append(f"    {target} = lst")
            return out
        if f.is_struct:
            fn = self.fname("d", f.elem, v)
            if nullable:
                # nullable struct: int8 marker (-1 null, 1 present)
                out.append(f"if {b}[{p}] == 0xff: {target} = None; {p} += 1")
                out.append(f"else: {p} += 1; {target}, {p} = {fn}({b}, {p})")
            else:
                out.append(f"{target}, {p} = {fn}({b}, {p})")
            return out
        if f.elem in _FIXED:
            st = struct.Struct(">" + _FIXED[f.elem])
            sn = self._const(st.unpack_from)
            out.append(f"({target},) = {sn}({b}, {p}); {p} += {st.size}")
            return out
        rd = self._prim_reader(f.elem, fx)
        out.append(f"{target}, {p} = {rd}({b}, {p})")
        if not nullable and f.elem in ("string", "bytes", "records"):
            out.append(f"if {target} is None: raise DecodeError('null in non-nullable field {f.name}')")
        return out

    @staticmethod
    def _prim_reader(t: str, fx: bool) -> str:
        return {
            "string": "_r_cstring" if fx else "_r_string",
            "bytes": "_r_cbytes" if fx else "_r_bytes",
            "records": "_r_crecords" if fx else "_r_records",
            "uuid": "_r_uuid",
        }[t]

    # encode ---------------------------------------------------------------------------------
    def _encoder(self, name, fields, v, flex, lines, sliced=None):
        """``sliced`` (a level): the generator form ``s<level>_<struct>``: the same bytes, but it yields between
        the elements of every array of structs once ``out`` holds ``_SLICE_PARTS`` parts (and
        takes a snapshot of such an array, so the count written matches the elements even if
        the caller changes the list while the encoder is suspended)."""
        L = [f"def {self.fname('e' if sliced is None else f's{sliced}', name, v)}(o, out):"]
        regular = [f for f in fields if v in f.v and not (flex and v in f.tag_v)]
        tagged = [f for f in fields if v in f.v and flex and v in f.tag_v]
        absent = [f for f in fields if v not in f.v and not f.ignorable]
        for f in absent:
            d = f.default_value()
            if isinstance(d, list):
                L.append(f"    if o.{f.name}: raise EncodeError('field {name}.{f.name} is not in version {v}')")
            else:
                dn = self._const(d)
                L.append(f"    if o.{f.name} != {dn}: raise EncodeError('field {name}.{f.name} is not in version {v}')")
        i = 0
        while i < len(regular):
            f = regular[i]
            if not f.is_array and f.elem in _FIXED:
                run = [f]
                j = i + 1
                while j < len(regular) and not regular[j].is_array and regular[j].elem in _FIXED:
                    run.append(regular[j])
                    j += 1
                st = struct.Struct(">" + "".join(_FIXED[r.elem] for r in run))
                sn = self._const(st.pack)
                args = ", ".join(f"o.{r.name}" for r in run)
                L.append(f"    out.append({sn}({args}))")
                i = j
                continue
            L.extend("    " + s for s in self._write_field(f, f"o.{f.name}", v, flex, "out", sliced))
            i += 1
        if flex:
            if tagged:
                L.append("    tags = list(o._unknown_tags) if o._unknown_tags else []")
                for f in tagged:
                    d = f.default_value()
                    if isinstance(d, list):
                        cond = f"o.{f.name}"
                    else:
                        cond = f"o.{f.name} != {self._const(d)}"
                    L.append(f"    if {cond}:")
                    L.append("        t = []")
                    L.extend("        " + s for s in self._write_field(f, f"o.{f.name}", v, True, "t"))
                    L.append(f"        tags.append(({f.tag}, b''.join(t)))")
                L.append("    _w_tags(out, tags)")
            else:
                L.append("    _w_tags(out, list(o._unknown_tags) if o._unknown_tags else None)")
        if len(L) == 1:
            L.append("    pass")
        lines.extend(L)

    def _write_field(self, f: Field, expr: str, v: int, flex: bool, out: str, sliced: int | None = None) -> list[str]:
        fx = self._flex_for(f, flex, v)
        nullable = v in f.null_v
        res = []
        inner = None if sliced is None else sliced + 1
        deep = f.is_struct and inner is not None and inner <= SLICE_DEPTH and self.is_deep(f.elem, f.fields, v)
        sliced = f.is_struct and sliced is not None
        if f.is_array:
            res.append(f"a = {expr}")
            if sliced:
                res.append("if a is not None: a = tuple(a)")
            res.append("if a is None:")
            if nullable:
                res.append(f"    {out}.append(b'\\x00')" if fx else f"    {out}.append(b'\\xff\\xff\\xff\\xff')")
            else:
                res.append(f"    raise EncodeError('null array in non-nullable field {f.name}')")
            res.append("else:")
            res.append(f"    {out}.append(_uvarint(len(a) + 1))" if fx else f"    {out}.append(_P32(len(a)))")
            if deep:
                res.append("    for x in a:")
                res.append(f"        yield from {self.fname(f's{inner}', f.elem, v)}(x, {out})")
                res.append(f"        if len({out}) >= _SLICE_PARTS: yield")
            elif sliced:
                res.append("    for x in a:")
                res.append(f"        {self.fname('e', f.elem, v)}(x, {out})")
                res.append(f"        if len({out}) >= _SLICE_PARTS: yield")
            elif f.is_struct:
                fn = self.fname("e", f.elem, v)
                res.append("    for x in a:")
                res.append(f"        {fn}(x, {out})")
            elif f.elem in _FIXED:
                code = _FIXED[f.elem]
                res.append(f"    if a: {out}.append(_struct.pack('>%d{code}' % len(a), *a))")
            else:
                w = self._prim_writer(f.elem, fx)
                res.append("    for x in a:")
                res.append(f"        {w}({out}, x)")
            return res
        if f.is_struct:
            fn = self.fname("e", f.elem, v)
            if deep:
                fn = "yield from " + self.fname(f"s{inner}", f.elem, v)
            if nullable:
                res.append(f"if {expr} is None: {out}.append(b'\\xff')")
                res.append(f"else: {out}.append(b'\\x01'); {fn}({expr}, {out})")
            else:
                res.append(f"{fn}({expr}, {out})")
            return res
        if f.elem in _FIXED:
            st = struct.Struct(">" + _FIXED[f.elem])
            res.append(f"{out}.append({self._const(st.pack)}({expr}))")
            return res
        if not nullable and f.elem in ("string", "bytes", "records"):
            res.append(f"if {expr} is None: raise EncodeError('null in non-nullable field {f.name}')")
        res.append(f"{self._prim_writer(f.elem, fx)}({out}, {expr})")
        return res

    @staticmethod
    def _prim_writer(t: str, fx: bool) -> str:
        return {
            "string": "_w_cstring" if fx else "_w_string",
            "bytes": "_w_cbytes" if fx else "_w_bytes",
            "records": "_w_crecords" if fx else "_w_records",
            "uuid": "_w_uuid",
        }[t]


class _Unset:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<unset>"


_UNSET = _Unset()


class CompiledMessage:
    """Encode/decode for every valid version of one message spec, compiled lazily once."""

    def __init__(self, spec: MessageSpec):
        self.spec = spec
        self._gen = _Gen(spec)
        self.cls = self._gen.top
        self.cls._codec = self
        self._decoders: dict[int, Any] = {}
        self._encoders: dict[int, Any] = {}
        self._slicers: dict[int, Any] = {}

    def _compile(self, version: int) -> None:
        if version not in self.spec.valid_v:
            raise EncodeError(f"{self.spec.name} has no version {version}")
        d, e, _src = self._gen.compile(version)
        self._decoders[version] = d
        self._encoders[version] = e
        self._slicers[version] = self._gen.slicer(version)

    def source(self, version: int) -> str:
        return self._gen.compile(version)[2]

    def decode(self, buf, version: int, pos: int = 0):
        """Decode one message from ``buf[pos:]``; returns ``(obj, end_pos)``."""
        fn = self._decoders.get(version)
        if fn is None:
            if version not in self.spec.valid_v:
                raise DecodeError(f"{self.spec.name} has no version {version}")
            self._compile(version)
            fn = self._decoders[version]
        if not isinstance(buf, memoryview):
            buf = memoryview(buf)
        try:
            return fn(buf, pos)
        except DecodeError:
            raise
        except (struct.error, IndexError, ValueError, UnicodeDecodeError, OverflowError,
                RecursionError, MemoryError, TypeError) as exc:
            raise DecodeError(f"{self.spec.name} v{version}: {type(exc).__name__}: {exc}") from None

    def encode_parts(self, obj, version: int, out: list | None = None) -> list:
        fn = self._encoders.get(version)
        if fn is None:
            self._compile(version)
            fn = self._encoders[version]
        if out is None:
            out = []
        try:
            fn(obj, out)
        except EncodeError:
            raise
        except (struct.error, AttributeError, TypeError, ValueError, OverflowError) as exc:
            raise EncodeError(f"{self.spec.name} v{version}: {type(exc).__name__}: {exc}") from None
        return out

    def encode_slices(self, obj, version: int, out: list):
        """``encode_parts`` as a generator, for answers that may be large: it appends the same
        parts to ``out`` but stops (yields) between two elements of an array of structs once
        ``out`` holds ``SLICE_PARTS`` parts, so the caller may take the parts away (join them,
        clear ``out``) and let other work run. The message is complete when it is exhausted.
        Arrays of structs are snapshotted when their count is written; the objects must not
        otherwise change while it is suspended."""
        if version not in self._encoders:
            self._compile(version)
        fn = self._slicers[version]
        if fn is None:  # no array of structs: nothing to slice
            self.encode_parts(obj, version, out)
            return
        try:
            yield from fn(obj, out)
        except EncodeError:
            raise
        except (struct.error, AttributeError, TypeError, ValueError, OverflowError) as exc:
            raise EncodeError(f"{self.spec.name} v{version}: {type(exc).__name__}: {exc}") from None

    def encode(self, obj, version: int) -> bytes:
        return b"".join(self.encode_parts(obj, version))


def compile_message(spec: MessageSpec) -> type:
    """Return the generated top-level class; ``cls._codec`` is its ``CompiledMessage``."""
    return CompiledMessage(spec).cls


def compile_api(a: Api) -> tuple[type, type]:
    return compile_message(a.request), compile_message(a.response)
