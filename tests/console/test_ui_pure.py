"""The console pages' pure helpers: times, positions in links, how record bytes are shown."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from console.ui.reads import decode_positions, encode_positions, parse_time, render_bytes


@settings(deadline=None)  # a loaded CI host must not fail a pure test on time
@given(st.dictionaries(st.integers(0, 10_000), st.integers(0, 2 ** 63 - 1), max_size=50))
def test_positions_round_trip(pos):
    assert decode_positions(encode_positions(pos)) == pos


@pytest.mark.parametrize("bad", ["x", "0", "0:", ":5", "0:-1", "-1:0", "0:1,zz"])
def test_bad_positions_are_refused(bad):
    with pytest.raises(ValueError):
        decode_positions(bad)


@settings(deadline=None)
@given(st.integers(0, 253_402_300_799_999))
def test_times_as_epoch_ms_or_iso_agree(ms):
    from datetime import datetime, timedelta, timezone
    iso = (datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=ms)).isoformat(timespec="milliseconds")
    assert parse_time(str(ms)) == ms
    assert parse_time(iso) == ms
    assert parse_time(iso.replace("+00:00", "Z")) == ms
    assert parse_time(iso.replace("+00:00", "")) == ms  # a picker's local value is taken as UTC


def test_time_with_an_offset_and_empty():
    assert parse_time("2026-01-01T02:00:00+02:00") == 1_767_225_600_000
    assert parse_time("") is None and parse_time(None) is None
    with pytest.raises(ValueError):
        parse_time("yesterday")


@settings(deadline=None)
@given(st.binary(max_size=200))
def test_bytes_are_shown_without_loss(data):
    shown, fmt = render_bytes(data)
    if fmt == "hex":
        assert bytes.fromhex(shown) == data
    elif fmt == "json":
        assert json.loads(shown) == json.loads(data.decode())
    else:
        assert shown.encode() == data
    assert bytes.fromhex(render_bytes(data, "hex")[0]) == data


def test_render_formats():
    assert render_bytes(None) == ("null", "null")
    assert render_bytes(b'{"a":[1,2]}') == ('{\n  "a": [\n    1,\n    2\n  ]\n}', "json")
    assert render_bytes(b'{"a":1}', "utf8") == ('{"a":1}', "utf8")
    assert render_bytes(b"\xff\x00") == ("ff 00", "hex")
    assert render_bytes("héllo".encode()) == ("héllo", "utf8")


@pytest.mark.parametrize("raw, want", [
    (b"\x00rest", ([0], 1)),                 # a lone 0: the first message
    (b"\x02\x02", ([1], 2)),                 # one index: 1
    (b"\x04\x02\x06", ([1, 3], 3)),          # nested: message 1, its nested message 3
    (b"\x02\x80\x01", ([64], 3)),            # a varint over two bytes
])
def test_protobuf_message_indexes(raw, want):
    from console.ui.registry import message_indexes
    assert message_indexes(raw) == want


@pytest.mark.parametrize("raw", [b"", b"\x02", b"\x80", b"\x01\x00"])
def test_bad_protobuf_message_indexes(raw):
    from console.ui.registry import message_indexes
    with pytest.raises(ValueError):
        message_indexes(raw)


def test_login_sessions_expire_when_idle_or_old_and_end_on_logout():
    from console.ui.pages import Sessions
    now = [0.0]
    s = Sessions(clock=lambda: now[0])
    a = s.start("User:alice")
    assert s.principal(a) == "User:alice" and s.principal("forged") is None
    for _ in range(20):  # kept alive by use, up to the absolute limit
        now[0] += Sessions.IDLE_S - 1
        if now[0] > Sessions.MAX_S:
            break
        assert s.principal(a) == "User:alice"
    assert s.principal(a) is None  # past MAX_S
    b = s.start("User:bob")
    now[0] += Sessions.IDLE_S + 1
    assert s.principal(b) is None  # idle too long
    c = s.start("User:carol")
    assert c != b and s.principal(c) == "User:carol"
    s.end(c)
    assert s.principal(c) is None


@pytest.mark.parametrize("target, want", [
    ("/topics?q=a", "/topics?q=a"), (None, "/"), ("", "/"), ("https://evil.example/", "/"),
    ("//evil.example/x", "/"), ("/\\evil.example", "/"), ("topics", "/"),
])
def test_login_redirects_stay_on_the_console(target, want):
    from console.ui.pages import _local
    assert _local(target) == want
