"""Request frames captured from real clients decode and re-encode byte-for-byte.

``tests/protocol/golden/<client>/<api>_request_v<N>.bin`` hold frames (request header + body,
without the 4-byte size prefix) that kafka-python, confluent-kafka (librdkafka), aiokafka and
kcat sent to ``capture_server.py``; ``golden/README.md`` lists them. For each frame:
- the header decodes at the header version the API version implies (v2 when flexible, else
  v1) and agrees with ``peek_api``;
- the body decodes with ``APIS[key].request`` and consumes the frame exactly;
- header + body re-encode to the identical bytes (our codec reads and writes every field,
  tag buffer and compact length the clients use).
Produce frames additionally carry the one record the capture scenario sent ("golden value"),
as a magic-2 batch or as a legacy message set (kafka-python forced to api_version 0.9/0.10).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from protocol.api_keys import APIS
from protocol.header import decode_request_header, encode_request_header, peek_api
from protocol.records import decode_batch, decode_message_set, iter_batch_positions, peek_magic

GOLDEN = Path(__file__).parent / "golden"
FRAMES = sorted(GOLDEN.glob("*/*.bin"))
CASES = [pytest.param(p, id=f"{p.parent.name}/{p.stem}") for p in FRAMES]


def _decode(frame: bytes):
    key, version, corr = peek_api(frame)
    assert key in APIS, f"API key {key} has no declaration in protocol/messages"
    api = APIS[key]
    hv = 2 if api.flexible(version) else 1
    hdr, pos = decode_request_header(frame, hv)
    assert (hdr.request_api_key, hdr.request_api_version, hdr.correlation_id) == (key, version, corr)
    body, end = api.request.decode(frame, version, pos)
    assert end == len(frame), f"{len(frame) - end} bytes left after the body"
    return api, hv, hdr, body


def test_golden_set_covers_the_clients_and_apis():
    """At least two clients for each API the capture was asked to cover."""
    by_api: dict[str, set[str]] = {}
    for p in FRAMES:
        api = p.stem.rsplit("_request_v", 1)[0]
        by_api.setdefault(api, set()).add(p.parent.name.split("-api")[0])
    for api in ("api_versions", "metadata", "produce", "list_offsets", "fetch", "create_topics",
                "describe_configs", "find_coordinator", "join_group"):
        assert len(by_api.get(api, ())) >= 2, (api, by_api.get(api))
    names = {p.name for p in FRAMES}
    assert {"api_versions_request_v0.bin", "api_versions_request_v3.bin"} <= names


@pytest.mark.parametrize("path", CASES)
def test_frame_round_trips(path: Path):
    frame = path.read_bytes()
    api, hv, hdr, body = _decode(frame)
    assert path.name == f"{_snake(api.name)}_request_v{hdr.request_api_version}.bin"
    assert hdr.client_id  # every client names itself
    again = encode_request_header(hdr, hv) + api.request.encode(body, hdr.request_api_version)
    assert again == frame


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


PRODUCE = [pytest.param(p, id=f"{p.parent.name}/{p.stem}") for p in FRAMES
           if p.name.startswith("produce_request_")]


@pytest.mark.parametrize("path", PRODUCE)
def test_produce_frames_carry_the_sent_record(path: Path):
    _api, _hv, hdr, body = _decode(path.read_bytes())
    [topic] = body.topic_data
    assert topic.name == "golden"
    [part] = topic.partition_data
    records = bytes(part.records)
    if hdr.request_api_version >= 3:
        assert peek_magic(records) == 2
        values = []
        for pos, _h in iter_batch_positions(records):
            _header, recs = decode_batch(records, pos)
            values += [r.value for r in recs]
    else:
        msgs = decode_message_set(records)
        assert {m.magic for m in msgs} == {0 if hdr.request_api_version < 2 else 1}
        values = [m.value for m in msgs]
    assert values == [b"golden value"]
