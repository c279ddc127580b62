"""Admin message declarations (group C) cross-checked against real clients' encoders.

APIs: CreateTopics (19), DeleteTopics (20), DeleteRecords (21), DescribeConfigs (32),
AlterConfigs (33), CreatePartitions (37), IncrementalAlterConfigs (44).

Three independent client codecs are used, each at every version it ships:
- aiokafka 0.14's hand-written ``aiokafka.protocol.admin`` structs (positional tuples);
- kafka-python 3.0.12's hand-written ``kafka.protocol.old.admin`` structs;
- kafka-python 3.0.12's JSON-driven ``kafka.protocol.admin`` messages (all versions).

For requests the client encodes, we decode, re-encode and must get the identical bytes, and
the decoded values must be the ones the client was given. For responses we encode and the
client decodes, then re-encodes: identical bytes, and the values it read are ours.
Sample messages fill every field a version has with a non-default value (nullable fields get
null in one array element and a value in the other), so a missing, extra or re-ordered field,
a wrong width or a wrong nullability shows up as different bytes.
"""
from __future__ import annotations

import uuid

import pytest

import aiokafka.protocol.admin as aio_admin
import kafka.protocol.admin as kp_admin
import kafka.protocol.old.admin as kp_old
from protocol.api_keys import APIS
from protocol.codec import Struct
from protocol.schema import Field

KEYS = {
    "CreateTopics": 19, "DeleteTopics": 20, "DeleteRecords": 21, "DescribeConfigs": 32,
    "AlterConfigs": 33, "CreatePartitions": 37, "IncrementalAlterConfigs": 44,
}
RANGES = {19: (0, 7, 5), 20: (0, 6, 4), 21: (0, 2, 2), 32: (0, 4, 4), 33: (0, 2, 2),
          37: (0, 3, 2), 44: (0, 1, 1)}


# ---- sample messages --------------------------------------------------------------------------
def _value(f: Field, v: int, i: int):
    """A deterministic non-default value for primitive field ``f`` in element ``i``."""
    if version_nullable(f, v) and i % 2 == 1:
        return None
    t = f.elem
    if t == "string":
        return f"{f.name}-{i}-\u00e9"
    if t == "bool":
        return True
    if t == "int8":
        return 3 + i
    if t == "int16":
        return 300 + i
    if t == "int32":
        return 70000 + i
    if t == "int64":
        return 2**40 + i
    if t == "uuid":
        return bytes(range(i, i + 16))
    if t in ("bytes", "records"):
        return bytes([i]) * 5
    raise AssertionError(t)


def version_nullable(f: Field, v: int) -> bool:
    return v in f.null_v


def sample(cls: type, fields: list[Field], v: int, i: int = 0) -> Struct:
    """``cls`` with every field present in version ``v`` set to a non-default value."""
    kw = {}
    for f in fields:
        if v not in f.v:
            continue
        sub = getattr(cls, f.elem, None) if f.is_struct else None
        if f.is_array:
            if version_nullable(f, v) and i % 2 == 1:
                kw[f.name] = None
            elif f.is_struct:
                kw[f.name] = [sample(sub, f.fields, v, j) for j in range(2)]
            else:
                kw[f.name] = [_value(Field(f.name, f.elem), v, j) for j in range(3)]
        elif f.is_struct:
            kw[f.name] = sample(sub, f.fields, v, i)
        else:
            kw[f.name] = _value(f, v, i)
    return cls(**kw)


def ours(key: int, kind: str):
    a = APIS[key]
    return a.request if kind == "request" else a.response


def our_sample(key: int, kind: str, v: int) -> Struct:
    m = ours(key, kind)
    return sample(m.cls, m.spec.fields, v)


# ---- conversion to the clients' shapes ----------------------------------------------------------
def as_tuple(obj, fields: list[Field], v: int, flexible: bool):
    """Our struct as the positional tuple a hand-written client struct takes (wire order)."""
    out = []
    for f in fields:
        if v not in f.v or (f.tag is not None and v in f.tag_v):
            continue
        val = getattr(obj, f.name)
        if f.is_struct and val is not None:
            if f.is_array:
                val = [as_tuple(x, f.fields, v, flexible) for x in val]
            else:
                val = as_tuple(val, f.fields, v, flexible)
        out.append(val)
    if flexible:
        out.append({})
    return tuple(out)


def as_kp(kcls, obj, fields: list[Field], v: int, top: bool = False):
    """Our struct as a kafka-python JSON-driven message (same snake_case field names)."""
    kw = {}
    for f in fields:
        if v not in f.v:
            continue
        val = getattr(obj, f.name)
        if f.is_struct and val is not None:
            sub = getattr(kcls, f.elem)
            val = ([as_kp(sub, x, f.fields, v) for x in val] if f.is_array
                   else as_kp(sub, val, f.fields, v))
        elif f.elem == "uuid":
            val = uuid.UUID(bytes=bytes(val))
        kw[f.name] = val
    return kcls(version=v, **kw)


def assert_same_values(kobj, obj, fields: list[Field], v: int, where: str = ""):
    """Every field our struct has in version ``v`` reads the same from the client's object."""
    for f in fields:
        if v not in f.v:
            continue
        mine, theirs = getattr(obj, f.name), getattr(kobj, f.name)
        path = f"{where}.{f.name}"
        if f.is_struct and mine is not None:
            if f.is_array:
                assert len(theirs) == len(mine), path
                for a, b in zip(theirs, mine):
                    assert_same_values(a, b, f.fields, v, path)
            else:
                assert_same_values(theirs, mine, f.fields, v, path)
        elif f.elem == "uuid":
            assert theirs == uuid.UUID(bytes=bytes(mine)), path
        else:
            assert theirs == mine, path


def _norm(x):
    """Tuples and lists compare alike (clients decode arrays as lists of tuples)."""
    if isinstance(x, (list, tuple)):
        return [_norm(y) for y in x]
    return x


# ---- hand-written clients: (library, api, version) -> (request cls, response cls) -------------
def _handwritten():
    cases = []
    for lib, mod in (("aiokafka", aio_admin), ("kafka-python-old", kp_old)):
        for name, key in KEYS.items():
            lo, hi, _ = RANGES[key]
            for v in range(lo, hi + 1):
                req = getattr(mod, f"{name}Request_v{v}", None)
                resp = getattr(mod, f"{name}Response_v{v}", None)
                if req is None:
                    continue
                cases.append(pytest.param(lib, key, v, req, resp, id=f"{lib}-{name}-v{v}"))
    return cases


HANDWRITTEN = _handwritten()


def _create_partitions_shape(t):
    """The hand-written CreatePartitions v0/v1 structs nest (count, assignment) in a
    sub-schema and write assignments as an array of int arrays: same wire bytes."""
    topics, timeout_ms, validate_only = t
    return ([(name, (count, None if a is None else [x[0] for x in a]))
             for name, count, a in topics], timeout_ms, validate_only)


# Per-API reshaping of our positional tuple into a hand-written struct's (requests only).
SHAPES = {37: _create_partitions_shape}


@pytest.mark.parametrize("lib,key,v,req_cls,resp_cls", HANDWRITTEN)
def test_request_from_handwritten_client(lib, key, v, req_cls, resp_cls):
    m = ours(key, "request")
    flexible = APIS[key].flexible(v)
    obj = our_sample(key, "request", v)
    args = as_tuple(obj, m.spec.fields, v, flexible)
    client_bytes = req_cls(*SHAPES.get(key, lambda t: t)(args)).encode()
    decoded, end = m.decode(client_bytes, v)
    assert end == len(client_bytes)
    assert decoded == obj
    assert m.encode(decoded, v) == client_bytes


@pytest.mark.parametrize("lib,key,v,req_cls,resp_cls", HANDWRITTEN)
def test_response_read_by_handwritten_client(lib, key, v, req_cls, resp_cls):
    m = ours(key, "response")
    flexible = APIS[key].flexible(v)
    obj = our_sample(key, "response", v)
    data = m.encode(obj, v)
    parsed = resp_cls.decode(data)
    assert parsed.encode() == data
    got = [getattr(parsed, n) for n in resp_cls.SCHEMA.names]
    assert _norm(got) == _norm(as_tuple(obj, m.spec.fields, v, flexible))


# ---- kafka-python's JSON-driven messages, every version ----------------------------------------
KP_CASES = [
    pytest.param(key, v, id=f"{name}-v{v}")
    for name, key in KEYS.items()
    for v in range(RANGES[key][0], RANGES[key][1] + 1)
]


def _kp(key: int, kind: str):
    name = APIS[key].name
    return getattr(kp_admin, name + ("Request" if kind == "request" else "Response"))


@pytest.mark.parametrize("key,v", KP_CASES)
def test_request_from_kafka_python(key, v):
    m = ours(key, "request")
    obj = our_sample(key, "request", v)
    client_bytes = bytes(as_kp(_kp(key, "request"), obj, m.spec.fields, v).encode(version=v))
    decoded, end = m.decode(client_bytes, v)
    assert end == len(client_bytes)
    assert decoded == obj
    assert m.encode(decoded, v) == client_bytes


@pytest.mark.parametrize("key,v", KP_CASES)
def test_response_read_by_kafka_python(key, v):
    m = ours(key, "response")
    kcls = _kp(key, "response")
    obj = our_sample(key, "response", v)
    data = m.encode(obj, v)
    parsed = kcls.decode(data, version=v)
    assert_same_values(parsed, obj, m.spec.fields, v)
    parsed._header = None  # kafka-python's decode leaves this slot unset; encode reads it
    assert bytes(parsed.encode(version=v)) == data


# ---- declarations -------------------------------------------------------------------------------
@pytest.mark.parametrize("name,key", KEYS.items())
def test_ranges_and_default_messages_encode(name, key):
    """Supported ranges as agreed; a default-constructed message encodes at every version."""
    a = APIS[key]
    lo, hi, flex = RANGES[key]
    assert (a.name, a.min_version, a.max_version) == (name, lo, hi)
    assert [v for v in range(lo, hi + 1) if a.flexible(v)] == list(range(flex, hi + 1))
    for v in range(lo, hi + 1):
        for m in (a.request, a.response):
            data = m.encode(m.cls(), v)
            assert m.decode(data, v) == (m.cls(), len(data))


def test_delete_topics_names_then_ids():
    """v0-5 carry ``topic_names``; v6 carries ``topics`` with a null name when deleting by id."""
    m = ours(20, "request")
    R = m.cls
    by_name = R(topic_names=["a", "b"], timeout_ms=5000)
    assert m.decode(m.encode(by_name, 5), 5)[0].topic_names == ["a", "b"]
    tid = uuid.uuid4().bytes
    by_id = R(topics=[R.DeleteTopicState(name=None, topic_id=tid)], timeout_ms=5000)
    back = m.decode(m.encode(by_id, 6), 6)[0]
    assert (back.topics[0].name, bytes(back.topics[0].topic_id)) == (None, tid)
    assert back.topic_names == []


def test_describe_configs_null_keys_means_all():
    """A null ``configuration_keys`` (all keys) stays distinct from an empty list (no keys)."""
    m = ours(32, "request")
    R = m.cls
    for v in range(0, 5):
        for keys in (None, [], ["retention.ms"]):
            req = R(resources=[R.DescribeConfigsResource(resource_type=2, resource_name="t",
                                                         configuration_keys=keys)])
            assert m.decode(m.encode(req, v), v)[0].resources[0].configuration_keys == keys


def test_create_topics_response_tagged_config_error_only_when_set():
    """``topic_config_error_code`` is a tagged field: absent from the bytes at its default."""
    m = ours(19, "response")
    R = m.cls
    plain = R(topics=[R.CreatableTopicResult(name="t", error_code=0)])
    tagged = R(topics=[R.CreatableTopicResult(name="t", error_code=0, topic_config_error_code=29)])
    a, b = m.encode(plain, 5), m.encode(tagged, 5)
    assert len(b) == len(a) + 4  # tag number, size, int16
    assert m.decode(b, 5)[0].topics[0].topic_config_error_code == 29
