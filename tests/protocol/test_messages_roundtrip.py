"""Generic properties of every declared message, at every version of request and response.

The cases are discovered from ``protocol.api_keys.APIS``, so each new ``protocol/messages``
module is covered as soon as it lands. The hypothesis strategy for a message is built by
walking its schema at one version: ints in their type's range, strings with non-ASCII text
(and None where nullable at that version), bytes/records, uuids, arrays, nested and nullable
structs, tagged fields (sometimes left at their default, so not written) and, in flexible
versions, unknown tags in every struct's tag buffer. Fields the version lacks keep their
defaults, as a decoder fills them.

Properties (in the spirit of the round trips in Kafka's ``MessageTest``, over random
messages instead of hand-built ones):
- ``decode(encode(m)) == m`` at the same version, consuming the whole frame, unknown tags
  included;
- ``encode(decode(b)) == b`` (the codec is canonical for what it wrote);
- ``encode_slices`` (the generator form large answers are encoded with, between loop turns)
  gives the same bytes, also when it stops after every part and the parts are taken away;
- decoding arbitrary bytes, or a valid encoding with bytes flipped, cut, inserted or
  deleted, either succeeds or raises ``DecodeError``: no other exception, and quickly
  (each decode under a second; pytest-timeout stops a case that loops).
"""
from __future__ import annotations

import re
import time

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from protocol.api_keys import APIS
from protocol.codec import Struct
from protocol.errors import DecodeError
from protocol.schema import Field

# No shrink phase: with hundreds of parametrized cases, a codec bug fails many at once and
# shrinking each costs seconds; the drawn examples are small enough to read as they are.
SETTINGS = settings(max_examples=20, deadline=None, database=None,
                    phases=(Phase.explicit, Phase.reuse, Phase.generate),
                    suppress_health_check=list(HealthCheck))

CASES = [
    pytest.param(key, kind, v, id=f"{a.name}{kind.capitalize()}-v{v}")
    for key, a in sorted(APIS.items())
    for kind in ("request", "response")
    for v in range(a.min_version, a.max_version + 1)
]

_INT_RANGES = {
    "int8": (-2**7, 2**7 - 1), "int16": (-2**15, 2**15 - 1), "uint16": (0, 2**16 - 1),
    "int32": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1), "int64": (-2**63, 2**63 - 1),
}
# Text from anywhere in Unicode except lone surrogates (not encodable as UTF-8).
_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
_BYTES = st.binary(max_size=24)


def _primitive(t: str):
    if t in _INT_RANGES:
        lo, hi = _INT_RANGES[t]
        return st.integers(lo, hi)
    if t == "bool":
        return st.booleans()
    if t == "float64":
        return st.floats(allow_nan=False)
    if t == "string":
        return _TEXT
    if t in ("bytes", "records"):
        return _BYTES
    if t == "uuid":
        return st.binary(min_size=16, max_size=16)
    raise AssertionError(f"no strategy for type {t}")


def _field_strategy(f: Field, v: int, flexible: bool, parent_cls: type, unknown_tags: bool):
    tagged = flexible and v in f.tag_v
    if f.is_struct:
        elem = _struct_strategy(getattr(parent_cls, f.elem), f.fields, v, flexible, unknown_tags)
    else:
        elem = _primitive(f.elem)
    s = st.lists(elem, max_size=2) if f.is_array else elem
    nullable = v in f.null_v and (f.is_array or f.is_struct or f.elem in ("string", "bytes", "records"))
    # A tagged struct left at its default (None) is simply not written.
    if nullable or (tagged and f.is_struct and not f.is_array):
        s = st.none() | s
    if tagged:
        s = st.just(f.default_value()) | s
    return s


def _unknown_tags(fields: list[Field]):
    """Sorted, distinct tags no field of the struct declares, with arbitrary payloads."""
    declared = {f.tag for f in fields if f.tag is not None}
    tag = st.integers(0, 300).filter(lambda t: t not in declared)
    return st.none() | st.lists(st.tuples(tag, _BYTES), min_size=1, max_size=3,
                                unique_by=lambda t: t[0]).map(sorted)


def _struct_strategy(cls: type, fields: list[Field], v: int, flexible: bool, unknown_tags: bool):
    present = {f.name: _field_strategy(f, v, flexible, cls, unknown_tags) for f in fields if v in f.v}
    unknown = _unknown_tags(fields) if flexible and unknown_tags else st.none()

    def build(args):
        kw, tags = args
        obj = cls(**kw)
        obj._unknown_tags = tags
        return obj
    return st.tuples(st.fixed_dictionaries(present), unknown).map(build)


_STRATEGIES: dict = {}


def message_strategy(key: int, kind: str, v: int, unknown_tags: bool = True):
    """Random valid messages of ``APIS[key].<kind>`` at version ``v`` (cached).

    ``unknown_tags=False`` leaves every struct's unknown tags empty (for comparing with
    encoders that cannot carry them).
    """
    k = (key, kind, v, unknown_tags)
    if k not in _STRATEGIES:
        msg = getattr(APIS[key], kind)
        flexible = v in msg.spec.flex_v
        _STRATEGIES[k] = _struct_strategy(msg.cls, msg.spec.fields, v, flexible, unknown_tags)
    return _STRATEGIES[k]


def assert_same(a, b, path="m"):
    """Deep equality that also compares unknown tags and records content."""
    if isinstance(a, Struct):
        assert type(a) is type(b), path
        assert (a._unknown_tags or None) == (b._unknown_tags or None), f"{path}._unknown_tags"
        for name in a._fields:
            assert_same(getattr(a, name), getattr(b, name), f"{path}.{name}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{path}[{i}]")
    elif isinstance(a, (bytes, memoryview)):
        assert isinstance(b, (bytes, memoryview)) and bytes(a) == bytes(b), path
    else:
        assert a == b and type(a) is type(b), f"{path}: {a!r} != {b!r}"


def test_every_api_is_covered():
    """A module whose API declaration fails to register would silently drop out of CASES."""
    assert CASES
    for a in APIS.values():
        assert a.request.spec.valid_v == a.response.spec.valid_v
        assert a.request.cls.__name__ == a.name + "Request"
        assert a.response.cls.__name__ == a.name + "Response"


_NULLABLE_TYPES = ("string", "bytes", "records")


@pytest.mark.parametrize("key", sorted(APIS))
def test_schema_is_well_formed(key):
    """Declaration mistakes the codec would not catch itself (Kafka's generator rejects them).

    In particular two different structs sharing a name within one message: the codec keys
    generated classes and functions by struct name, so the second would silently use the
    first one's layout.
    """
    for msg in (APIS[key].request, APIS[key].response):
        spec = msg.spec
        structs: dict[str, tuple] = {}

        def check(fields: list[Field], where: str) -> None:
            names = [f.name for f in fields]
            assert len(set(names)) == len(names), f"{where}: duplicate field names"
            tags = [f.tag for f in fields if f.tag is not None]
            assert len(set(tags)) == len(tags), f"{where}: duplicate tags"
            for f in fields:
                at = f"{where}.{f.name}"
                assert re.fullmatch(r"[a-z][a-z0-9_]*", f.name), f"{at}: not snake_case"
                assert not f.v.empty and f.v.lo <= spec.max_version, f"{at}: in no valid version"
                if f.tag is not None:
                    assert not spec.flex_v.empty and f.tag_v.lo >= spec.flex_v.lo, f"{at}: tagged outside flexible versions"
                    assert f.tag_v.lo >= f.v.lo, f"{at}: tagged versions outside its versions"
                if not f.null_v.empty:
                    assert f.is_array or f.is_struct or f.elem in _NULLABLE_TYPES, f"{at}: type cannot be null"
                if f.is_struct:
                    layout = tuple((g.name, g.type, g.versions) for g in f.fields)
                    assert structs.setdefault(f.elem, layout) == layout, f"{at}: struct {f.elem} declared twice differently"
                    assert f.elem != spec.name, f"{at}: struct named like its message"
                    check(f.fields, at)

        check(spec.fields, spec.name)


@pytest.mark.parametrize("key,kind,version", CASES)
def test_default_message_round_trips(key, kind, version):
    msg = getattr(APIS[key], kind)
    b = msg.encode(msg.cls(), version)
    m, end = msg.decode(b, version)
    assert end == len(b)
    assert m == msg.cls()
    assert msg.encode(m, version) == b


def _mutate(data, b: bytes) -> bytes:
    b = bytearray(b)
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        op = data.draw(st.sampled_from(["flip", "cut", "insert", "delete", "big"]), label="op")
        i = data.draw(st.integers(0, len(b)), label="at")
        if op == "flip" and i < len(b):
            b[i] = data.draw(st.integers(0, 255), label="byte")
        elif op == "cut":
            del b[i:]
        elif op == "insert":
            b[i:i] = data.draw(st.binary(min_size=1, max_size=8), label="inserted")
        elif op == "delete":
            del b[i:i + data.draw(st.integers(1, 8), label="n")]
        elif op == "big":  # a huge length/count where a prefix may sit
            b[i:i + 4] = data.draw(st.sampled_from([b"\x7f\xff\xff\xff", b"\xff\xff\xff\xfe",
                                                    b"\xff\xff\xff\x0f", b"\x80\x80\x80\x80"]))
    return bytes(b)


def _decode_only_raises_decode_error(msg, b: bytes, version: int) -> None:
    t0 = time.perf_counter()
    try:
        obj, end = msg.decode(b, version)
    except DecodeError:
        pass
    else:
        assert 0 <= end <= len(b)
        assert isinstance(obj, msg.cls)
    assert time.perf_counter() - t0 < 1.0, "decode took too long"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("key,kind,version", CASES)
def test_round_trip_and_mutated_decode(key, kind, version, monkeypatch):
    """One drawn message serves every property, which divides the generation cost."""
    msg = getattr(APIS[key], kind)
    monkeypatch.setitem(msg._gen.ns, "_SLICE_PARTS", 1)  # stop at every chance

    def sliced(m) -> bytes:
        chunks, out = [], []
        for _ in msg.encode_slices(m, version, out):
            chunks.append(b"".join(out))
            out.clear()
        return b"".join(chunks) + b"".join(out)

    @SETTINGS
    @given(message_strategy(key, kind, version), st.data())
    def check(m, data):
        b = msg.encode(m, version)
        assert sliced(m) == b
        d, end = msg.decode(b, version)
        assert end == len(b)
        assert d == m
        assert_same(m, d)
        assert msg.encode(d, version) == b
        _decode_only_raises_decode_error(msg, _mutate(data, b), version)
    check()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("key,kind,version", CASES)
def test_random_bytes_decode_raises_only_decode_error(key, kind, version):
    msg = getattr(APIS[key], kind)

    @SETTINGS
    @given(st.binary(max_size=64))
    def check(b):
        _decode_only_raises_decode_error(msg, b, version)
    check()
