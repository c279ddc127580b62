"""The schema compiler's own rules (Kafka's message README), on small declared messages."""
import pytest
from hypothesis import given, settings, strategies as st

from protocol.codec import CompiledMessage
from protocol.errors import DecodeError, EncodeError
from protocol.header import RequestHeader, decode_request_header, encode_request_header
from protocol.schema import F, MessageSpec

SPEC = MessageSpec("Demo", 999, "request", "0-3", "2+", [
    F("id", "int32"),
    F("name", "string", nullable="1+"),
    F("added_in_1", "int64", "1+", default=-1),
    F("gone_after_1", "int16", "0-1"),
    F("soft", "int16", "0-0", ignorable=True),
    F("items", "[]Item", fields=[
        F("key", "string"),
        F("values", "[]int32"),
        F("blob", "bytes", nullable="0+"),
    ]),
    F("hint", "string", "2+", tag=0, tagged_versions="2+", nullable="2+", default=None),
    F("extra", "int32", "3+", tag=5, tagged_versions="3+"),
])
M = CompiledMessage(SPEC)
Demo = M.cls


def test_absent_field_decodes_to_default_and_rejects_non_default_on_encode():
    m = Demo(id=1, name="a", added_in_1=7, items=[])
    b0 = M.encode(Demo(id=1, name="a", items=[]), 0)
    assert M.decode(b0, 0)[0].added_in_1 == -1
    with pytest.raises(EncodeError):
        M.encode(m, 0)  # added_in_1 is not in v0 and not ignorable
    with pytest.raises(EncodeError):
        M.encode(Demo(id=1, name="a", gone_after_1=3), 2)
    # an ignorable field is silently dropped
    assert M.decode(M.encode(Demo(id=1, name="a", soft=9), 1), 1)[0].soft == 0


def test_nullability_follows_versions():
    with pytest.raises(EncodeError):
        M.encode(Demo(id=1, name=None), 0)
    assert M.decode(M.encode(Demo(id=1, name=None), 1), 1)[0].name is None


def test_flexible_versions_use_compact_forms_and_tag_buffers():
    m = Demo(id=1, name="ab", items=[Demo.Item(key="k", values=[1, 2], blob=None)])
    b1 = M.encode(m, 1)
    b2 = M.encode(m, 2)
    assert len(b2) < len(b1)  # compact lengths
    assert b2.endswith(b"\x00")  # empty top-level tag buffer
    assert M.decode(b2, 2)[0] == m


def test_tagged_fields_written_only_when_not_default_and_unknown_tags_kept():
    plain = M.encode(Demo(id=1, name="x"), 3)
    tagged = M.encode(Demo(id=1, name="x", hint="h", extra=4), 3)
    assert len(tagged) > len(plain)
    d, _ = M.decode(tagged, 3)
    assert (d.hint, d.extra) == ("h", 4)
    # a tag we do not declare survives a decode/encode round trip
    raw = bytearray(plain)
    assert raw[-1] == 0
    raw[-1:] = bytes([1, 9, 2, 0xAB, 0xCD])
    d, _ = M.decode(bytes(raw), 3)
    assert d._unknown_tags == [(9, b"\xab\xcd")]
    assert M.encode(d, 3) == bytes(raw)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64), st.integers(0, 3))
def test_garbage_only_raises_decode_error(data, version):
    try:
        M.decode(data, version)
    except DecodeError:
        pass


def test_huge_lengths_are_rejected_before_allocation():
    # id, then a string length of 32767 with 2 bytes behind it
    with pytest.raises(DecodeError):
        M.decode(b"\x00\x00\x00\x01\x7f\xff" + b"ab", 0)
    # array count of 2^31-1
    with pytest.raises(DecodeError):
        M.decode(b"\x00\x00\x00\x01\x00\x01a\x00\x00\x7f\xff\xff\xff", 0)


def test_request_header_client_id_is_never_compact():
    h = RequestHeader(request_api_key=3, request_api_version=12, correlation_id=7, client_id="cli")
    b = encode_request_header(h, 2)
    assert b == b"\x00\x03\x00\x0c\x00\x00\x00\x07\x00\x03cli\x00"
    assert decode_request_header(b, 2)[0] == h
