"""Group B messages (groups, offsets, transactions) checked against real client encoders.

APIs: OffsetCommit (8), OffsetFetch (9), FindCoordinator (10), JoinGroup (11), Heartbeat (12),
LeaveGroup (13), SyncGroup (14), DescribeGroups (15), ListGroups (16), AddPartitionsToTxn (24),
AddOffsetsToTxn (25), EndTxn (26), WriteTxnMarkers (27), TxnOffsetCommit (28), DeleteGroups (42),
OffsetDelete (47), DescribeTransactions (65), ListTransactions (66),
and the consumer embedded protocol (``protocol.messages.consumer_protocol``).

References, each an encoder written independently of ours:
- kafka-python 3.0.12's JSON-driven classes (generated from Kafka 4.x specs, every version up
  to our maximum; Kafka 4.x only adds versions past ours or renames nothing we use): random
  messages of ours, tagged fields included, must encode to the same bytes as the same message
  built with kafka-python, and each side must decode the other's bytes to the same values;
- kafka-python's hand-written classic classes (``kafka.protocol.old``), at every version
  they declare;
- request frames real clients sent (``tests/protocol/golden``): the consumer subscriptions
  inside JoinGroup frames from librdkafka, aiokafka and kafka-python.
Hand-checked layouts and the version rules handlers rely on follow.
"""
from __future__ import annotations

import struct
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import kafka.protocol.old.add_offsets_to_txn as old_add_offsets_to_txn
import kafka.protocol.old.add_partitions_to_txn as old_add_partitions_to_txn
import kafka.protocol.old.admin as old_admin
import kafka.protocol.old.commit as old_commit
import kafka.protocol.old.consumer_protocol as old_consumer_protocol
import kafka.protocol.old.end_txn as old_end_txn
import kafka.protocol.old.find_coordinator as old_find_coordinator
import kafka.protocol.old.group as old_group
import kafka.protocol.old.txn_offset_commit as old_txn_offset_commit
from kafka.protocol.admin import groups as kp_admin_groups
from kafka.protocol.admin import transactions as kp_admin_txn
from kafka.protocol.consumer import group as kp_group
from kafka.protocol.consumer import metadata as kp_consumer_protocol
from kafka.protocol.metadata import find_coordinator as kp_find_coordinator
from kafka.protocol.producer import transaction as kp_txn

from protocol.api_keys import APIS
from protocol.errors import DecodeError, EncodeError
from protocol.header import decode_request_header, peek_api
from protocol.messages import consumer_protocol as cp
from protocol.messages.add_partitions_to_txn import AddPartitionsToTxnRequest, AddPartitionsToTxnResponse
from protocol.messages.describe_groups import DescribeGroupsResponse
from protocol.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from protocol.messages.join_group import JoinGroupRequest, JoinGroupResponse
from protocol.messages.leave_group import LeaveGroupRequest
from protocol.messages.list_groups import ListGroupsRequest
from protocol.messages.offset_commit import OffsetCommitRequest
from protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchResponse
from protocol.messages.sync_group import SyncGroupResponse
from protocol.messages.txn_offset_commit import TxnOffsetCommitRequest
from protocol.schema import Field

try:  # pytest's default (rootdir-relative, no package) import mode puts this directory on sys.path
    from test_messages_roundtrip import message_strategy
except ImportError:  # tests/ made a package
    from tests.protocol.test_messages_roundtrip import message_strategy

# No shrink phase: with hundreds of parametrized cases, a codec bug fails many at once and
# shrinking each costs seconds; the drawn examples are small enough to read as they are.
SETTINGS = settings(max_examples=15, deadline=None, database=None,
                    phases=(Phase.explicit, Phase.reuse, Phase.generate),
                    suppress_health_check=list(HealthCheck))

KINDS = ("request", "response")

# (our key) -> (kafka-python JSON-driven request class, response class)
KP = {
    8: (kp_group.OffsetCommitRequest, kp_group.OffsetCommitResponse),
    9: (kp_group.OffsetFetchRequest, kp_group.OffsetFetchResponse),
    10: (kp_find_coordinator.FindCoordinatorRequest, kp_find_coordinator.FindCoordinatorResponse),
    11: (kp_group.JoinGroupRequest, kp_group.JoinGroupResponse),
    12: (kp_group.HeartbeatRequest, kp_group.HeartbeatResponse),
    13: (kp_group.LeaveGroupRequest, kp_group.LeaveGroupResponse),
    14: (kp_group.SyncGroupRequest, kp_group.SyncGroupResponse),
    15: (kp_admin_groups.DescribeGroupsRequest, kp_admin_groups.DescribeGroupsResponse),
    16: (kp_admin_groups.ListGroupsRequest, kp_admin_groups.ListGroupsResponse),
    24: (kp_txn.AddPartitionsToTxnRequest, kp_txn.AddPartitionsToTxnResponse),
    25: (kp_txn.AddOffsetsToTxnRequest, kp_txn.AddOffsetsToTxnResponse),
    26: (kp_txn.EndTxnRequest, kp_txn.EndTxnResponse),
    27: (kp_txn.WriteTxnMarkersRequest, kp_txn.WriteTxnMarkersResponse),
    28: (kp_txn.TxnOffsetCommitRequest, kp_txn.TxnOffsetCommitResponse),
    42: (kp_admin_groups.DeleteGroupsRequest, kp_admin_groups.DeleteGroupsResponse),
    47: (kp_group.OffsetDeleteRequest, kp_group.OffsetDeleteResponse),
    65: (kp_admin_txn.DescribeTransactionsRequest, kp_admin_txn.DescribeTransactionsResponse),
    66: (kp_admin_txn.ListTransactionsRequest, kp_admin_txn.ListTransactionsResponse),
}

# (our key) -> (classic request classes by version, classic response classes by version)
OLD = {
    8: (old_commit.OffsetCommitRequest, old_commit.OffsetCommitResponse),
    9: (old_commit.OffsetFetchRequest, old_commit.OffsetFetchResponse),
    10: (old_find_coordinator.FindCoordinatorRequest, old_find_coordinator.FindCoordinatorResponse),
    11: (old_group.JoinGroupRequest, old_group.JoinGroupResponse),
    12: (old_group.HeartbeatRequest, old_group.HeartbeatResponse),
    13: (old_group.LeaveGroupRequest, old_group.LeaveGroupResponse),
    14: (old_group.SyncGroupRequest, old_group.SyncGroupResponse),
    15: (old_admin.DescribeGroupsRequest, old_admin.DescribeGroupsResponse),
    16: (old_admin.ListGroupsRequest, old_admin.ListGroupsResponse),
    24: (old_add_partitions_to_txn.AddPartitionsToTxnRequest, old_add_partitions_to_txn.AddPartitionsToTxnResponse),
    25: (old_add_offsets_to_txn.AddOffsetsToTxnRequest, old_add_offsets_to_txn.AddOffsetsToTxnResponse),
    26: (old_end_txn.EndTxnRequest, old_end_txn.EndTxnResponse),
    28: (old_txn_offset_commit.TxnOffsetCommitRequest, old_txn_offset_commit.TxnOffsetCommitResponse),
    42: (old_admin.DeleteGroupsRequest, old_admin.DeleteGroupsResponse),
}


def _kp_cases():
    for key, classes in KP.items():
        a = APIS[key]
        for i, kind in enumerate(KINDS):
            for v in range(a.min_version, min(a.max_version, classes[i].max_version) + 1):
                yield pytest.param(key, kind, v, id=f"{a.name}{kind.capitalize()}-v{v}")


def _old_cases():
    for key, classes in OLD.items():
        a = APIS[key]
        for i, kind in enumerate(KINDS):
            for v in range(a.min_version, min(a.max_version, len(classes[i]) - 1) + 1):
                yield pytest.param(key, kind, v, id=f"{a.name}{kind.capitalize()}-v{v}")


def test_declared_ranges():
    """The version ranges and flexible-from the broker advertises for these APIs."""
    want = {8: (0, 10, 8), 9: (0, 10, 6), 10: (0, 6, 3), 11: (0, 9, 6), 12: (0, 4, 4), 13: (0, 5, 4),
            14: (0, 5, 4), 15: (0, 6, 5), 16: (0, 5, 3), 24: (0, 5, 3), 25: (0, 4, 3), 26: (0, 5, 3),
            27: (0, 2, 1), 28: (0, 6, 3), 42: (0, 3, 2), 47: (0, 0, None), 65: (0, 0, 0), 66: (0, 2, 0)}
    for key, (lo, hi, flex) in want.items():
        a = APIS[key]
        assert (a.min_version, a.max_version) == (lo, hi), a.name
        assert [v for v in range(lo, hi + 1) if a.flexible(v)] == ([] if flex is None else list(range(flex, hi + 1)))


# Versions newer than kafka-python's classes: their reference is Kafka 4.4's own message spec
# (tests/differential/test_schemas.py compares every declared version with it).
NEWER_THAN_KAFKA_PYTHON = {28: {6}, 42: {3}}


def test_every_group_b_version_has_a_reference():
    """kafka-python's JSON classes reach every version we declare for these APIs (or the
    version is newer than kafka-python and compared with Kafka's spec instead)."""
    covered = {tuple(p.values) for p in _kp_cases()}
    for key in KP:
        a = APIS[key]
        for kind in KINDS:
            for v in range(a.min_version, a.max_version + 1):
                assert (key, kind, v) in covered or v in NEWER_THAN_KAFKA_PYTHON.get(key, ()), (a.name, kind, v)


# ---- conversions between our messages and kafka-python's --------------------------------------

def _tagged(f: Field, v: int, flexible: bool) -> bool:
    return flexible and v in f.tag_v


def _elem_of(f: Field) -> Field:
    """The element of an array field, as a field of its own."""
    return Field(f.name, f.elem, f.versions, fields=f.fields)


def _is_ops(f: Field) -> bool:
    """kafka-python holds DescribeGroups' int32 ``authorized_operations`` as a set of bits."""
    return f.type == "int32" and f.name == "authorized_operations"


def _ops_to_bits(x: int):
    bits = {i for i in range(32) if (x & 0xFFFFFFFF) >> i & 1}
    return None if bits == {31} else bits  # Kafka's -2^31 "not requested" is None there


def _bits_to_ops(bits) -> int:
    x = sum(1 << i for i in ({31} if bits is None else bits))
    return x - (1 << 32) if x >= 1 << 31 else x


def to_kp(obj, kp_cls, fields: list[Field], v: int, flexible: bool):
    """Our struct -> kafka-python's JSON-driven DataContainer (tagged fields only when set)."""
    kw = {}
    for f in fields:
        if v not in f.v:
            continue
        val = getattr(obj, f.name)
        if _tagged(f, v, flexible) and val == f.default_value():
            continue
        kw[f.name] = _ops_to_bits(val) if _is_ops(f) else _to_kp_value(val, f, kp_cls, v, flexible)
    return kp_cls(**kw)


def _to_kp_value(val, f: Field, kp_cls, v, flexible):
    if val is None:
        return None
    if f.is_array:
        return [_to_kp_value(x, _elem_of(f), kp_cls, v, flexible) for x in val]
    if f.is_struct:
        return to_kp(val, getattr(kp_cls, f.elem), f.fields, v, flexible)
    if f.elem == "uuid":
        return uuid.UUID(bytes=bytes(val))
    if f.elem in ("bytes", "records"):
        return bytes(val)
    return val


def from_kp(kp_obj, cls, fields: list[Field], v: int, flexible: bool):
    """kafka-python's decoded DataContainer -> our struct."""
    kw = {}
    for f in fields:
        if v not in f.v:
            continue
        if _tagged(f, v, flexible) and f.name not in (kp_obj.tags or ()):
            continue  # not on the wire: ours holds the default
        val = getattr(kp_obj, f.name)
        kw[f.name] = _bits_to_ops(val) if _is_ops(f) else _from_kp_value(val, f, cls, v, flexible)
    return cls(**kw)


def _from_kp_value(val, f: Field, cls, v, flexible):
    if val is None and f.elem == "uuid" and not f.is_array:
        return bytes(16)  # kafka-python decodes Kafka's zero uuid as None (a uuid is never null)
    if val is None:
        return None
    if f.is_array:
        return [_from_kp_value(x, _elem_of(f), cls, v, flexible) for x in val]
    if f.is_struct:
        return from_kp(val, getattr(cls, f.elem), f.fields, v, flexible)
    if f.elem == "uuid":
        return val.bytes if isinstance(val, uuid.UUID) else bytes(val)
    if f.elem in ("bytes", "records"):
        return bytes(val)
    return val


def to_tuple(obj, fields: list[Field], v: int, flexible: bool):
    """Our struct -> the nested tuples kafka-python's classic classes use (untagged fields)."""
    out = []
    for f in fields:
        if v not in f.v or _tagged(f, v, flexible):
            continue
        val = getattr(obj, f.name)
        out.append(_ops_to_bits(val) if _is_ops(f) else _tuple_value(val, f, v, flexible))
    return tuple(out)


def _tuple_value(val, f: Field, v, flexible):
    if val is None:
        return None
    if f.is_array:
        return [_tuple_value(x, _elem_of(f), v, flexible) for x in val]
    if f.is_struct:
        return to_tuple(val, f.fields, v, flexible)
    if f.elem in ("bytes", "records"):
        return bytes(val)
    return val


def _old_struct_values(x):
    """kafka-python classic decode result (Struct/tuples/lists) -> plain nested tuples."""
    if hasattr(x, "SCHEMA"):
        return tuple(_old_struct_values(getattr(x, n)) for n in x.SCHEMA.names if n != "tags")
    if isinstance(x, tuple):
        return tuple(_old_struct_values(y) for y in x)
    if isinstance(x, list):
        return [_old_struct_values(y) for y in x]
    return x


def _drop_tagged(obj, fields: list[Field], v: int, flexible: bool):
    """Set every tagged field (at any depth) back to its default, in place: the classic
    classes cannot write tagged fields."""
    for f in fields:
        if v not in f.v:
            continue
        if _tagged(f, v, flexible):
            setattr(obj, f.name, f.default_value())
            continue
        val = getattr(obj, f.name)
        if f.is_struct and val is not None:
            for x in (val if f.is_array else [val]):
                _drop_tagged(x, f.fields, v, flexible)
    return obj


# ---- kafka-python JSON-driven classes ------------------------------------------------------------

@pytest.mark.parametrize("key,kind,version", list(_kp_cases()))
def test_bytes_match_kafka_python(key, kind, version):
    """Ours and kafka-python encode the same message identically; each decodes the other."""
    msg = getattr(APIS[key], kind)
    kp_cls = KP[key][KINDS.index(kind)]
    flexible = version in msg.spec.flex_v

    @SETTINGS
    @given(message_strategy(key, kind, version, unknown_tags=False))
    def check(m):
        ours = msg.encode(m, version)
        theirs = bytes(to_kp(m, kp_cls, msg.spec.fields, version, flexible).encode(version=version))
        assert theirs == ours
        decoded, end = msg.decode(theirs, version)
        assert end == len(theirs) and decoded == m
        kp_decoded = kp_cls.decode(ours, version=version)
        assert from_kp(kp_decoded, msg.cls, msg.spec.fields, version, flexible) == m
        kp_decoded._header = None  # kafka-python's decoder skips the __init__ that sets it
        assert bytes(kp_decoded.encode(version=version)) == ours
    check()


# ---- kafka-python classic (hand-written) classes -------------------------------------------------

@pytest.mark.parametrize("key,kind,version", list(_old_cases()))
def test_bytes_match_kafka_python_classic(key, kind, version):
    msg = getattr(APIS[key], kind)
    old_cls = OLD[key][KINDS.index(kind)][version]
    flexible = version in msg.spec.flex_v

    @SETTINGS
    @given(message_strategy(key, kind, version, unknown_tags=False))
    def check(m):
        m = msg.decode(msg.encode(_drop_tagged(m, msg.spec.fields, version, flexible), version), version)[0]
        values = to_tuple(m, msg.spec.fields, version, flexible)
        ours = msg.encode(m, version)
        assert old_cls(*values).encode() == ours
        assert msg.decode(old_cls(*values).encode(), version)[0] == m
        assert _old_struct_values(old_cls.decode(ours)) == values
    check()


# ---- consumer embedded protocol ------------------------------------------------------------------

_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
_INT32 = st.integers(-2**31, 2**31 - 1)
_PARTS = st.lists(st.tuples(_TEXT, st.lists(_INT32, max_size=3)), max_size=3)


@st.composite
def _subscriptions(draw, version: int):
    return cp.subscription(
        draw(st.lists(_TEXT, max_size=3)), user_data=draw(st.none() | st.binary(max_size=8)),
        owned_partitions=dict(draw(_PARTS)) if version >= 1 else None,
        generation_id=draw(_INT32) if version >= 2 else -1,
        rack_id=draw(st.none() | _TEXT) if version >= 3 else None)


@st.composite
def _assignments(draw):
    return cp.assignment(dict(draw(_PARTS)), user_data=draw(st.none() | st.binary(max_size=8)))


def _kp_subscription(s, v):
    kw = dict(topics=s.topics, user_data=s.user_data)
    if v >= 1:
        kw["owned_partitions"] = [(tp.topic, tp.partitions) for tp in s.owned_partitions]
    if v >= 2:
        kw["generation_id"] = s.generation_id
    if v >= 3:
        kw["rack_id"] = s.rack_id
    return kp_consumer_protocol.ConsumerProtocolSubscription(version=v, **kw)


@pytest.mark.parametrize("version", range(4))
def test_subscription_matches_kafka_python(version):
    @SETTINGS
    @given(_subscriptions(version))
    def check(s):
        ours = cp.encode_subscription(s, version)
        assert bytes(_kp_subscription(s, version).encode(version=version)) == ours
        assert cp.decode_subscription(ours) == (version, s)
        theirs = kp_consumer_protocol.ConsumerProtocolSubscription.decode(ours)
        assert (theirs.version, list(theirs.topics), theirs.user_data) == (version, s.topics, s.user_data)
    check()


@pytest.mark.parametrize("version", range(4))
def test_assignment_matches_kafka_python(version):
    @SETTINGS
    @given(_assignments())
    def check(a):
        ours = cp.encode_assignment(a, version)
        kp = kp_consumer_protocol.ConsumerProtocolAssignment(
            version=version, assigned_partitions=[(tp.topic, tp.partitions) for tp in a.assigned_partitions],
            user_data=a.user_data)
        assert bytes(kp.encode(version=version)) == ours
        assert cp.decode_assignment(ours) == (version, a)
        theirs = kp_consumer_protocol.ConsumerProtocolAssignment.decode(ours)
        assert [(tp.topic, list(tp.partitions)) for tp in theirs.assigned_partitions] == \
            [(tp.topic, tp.partitions) for tp in a.assigned_partitions]
    check()


def test_v0_consumer_protocol_matches_kafka_python_classic():
    old = old_consumer_protocol.ConsumerProtocol_v0
    meta = old.METADATA(0, ["a", "b"], b"ud").encode()
    assert cp.decode_subscription(meta) == (0, cp.subscription(["a", "b"], user_data=b"ud"))
    assert cp.encode_subscription(cp.subscription(["a", "b"], user_data=b"ud"), 0) == meta
    asg = old.ASSIGNMENT(0, [("t", [0, 2])], b"").encode()
    assert cp.encode_assignment(cp.assignment({"t": [0, 2]}, user_data=b""), 0) == asg
    assert cp.assignment_partitions(asg) == {"t": [0, 2]}


def _golden_join_groups():
    for p in sorted((Path(__file__).parent / "golden").glob("*/join_group_request_v*.bin")):
        yield pytest.param(p, id=f"{p.parent.name}/{p.stem}")


@pytest.mark.parametrize("path", list(_golden_join_groups()))
def test_golden_join_group_subscriptions(path):
    """The subscriptions librdkafka, aiokafka and kafka-python really sent decode and
    re-encode to the same bytes."""
    frame = path.read_bytes()
    key, version, _ = peek_api(frame)
    api = APIS[key]
    _, pos = decode_request_header(frame, 2 if api.flexible(version) else 1)
    req, _ = api.request.decode(frame, version, pos)
    assert req.protocol_type == cp.PROTOCOL_TYPE and req.protocols
    for proto in req.protocols:
        v, sub = cp.decode_subscription(proto.metadata)
        assert sub.topics == ["golden"]
        assert cp.encode_subscription(sub, v) == proto.metadata
        assert cp.subscription_topics(proto.metadata) == {"golden"}


def test_newer_consumer_protocol_versions_read_with_the_v3_layout():
    """Kafka's ConsumerProtocol: later versions only append fields, so v4+ bytes are read
    as v3 and what follows is ignored; encoding above v3 writes v3."""
    s = cp.subscription(["t"], owned_partitions={"t": [1]}, generation_id=7, rack_id="r1")
    v3 = cp.encode_subscription(s, 3)
    v4 = struct.pack(">h", 4) + v3[2:] + b"\x00\x00\x00\x2a"
    assert cp.decode_subscription(v4) == (4, s)
    assert cp.encode_subscription(s, 9) == v3
    a = cp.assignment({"t": [3]})
    assert cp.decode_assignment(struct.pack(">h", 5) + cp.encode_assignment(a)[2:] + b"xyz") == (5, a)


def test_consumer_protocol_malformed_and_empty():
    with pytest.raises(DecodeError):
        cp.decode_subscription(b"\xff\xff" + cp.encode_subscription(cp.subscription(["t"]))[2:])
    with pytest.raises(DecodeError):
        cp.decode_subscription(b"\x00")
    with pytest.raises(DecodeError):
        cp.decode_assignment(cp.encode_assignment(cp.assignment({"t": [1, 2]}))[:-3])
    with pytest.raises(DecodeError):
        cp.decode_assignment(b"")
    assert cp.assignment_partitions(b"") == {}  # SyncGroup's answer to a member given nothing
    with pytest.raises(EncodeError):
        cp.encode_subscription(cp.subscription(["t"]), -1)


def test_older_subscription_versions_drop_newer_fields():
    """owned_partitions, generation_id and rack_id are ignorable: a v0 encoding drops them."""
    s = cp.subscription(["t"], owned_partitions={"t": [1]}, generation_id=7, rack_id="r1")
    assert cp.decode_subscription(cp.encode_subscription(s, 0)) == (0, cp.subscription(["t"]))
    _, d = cp.decode_subscription(cp.encode_subscription(s, 2))
    assert (d.generation_id, d.rack_id, d.owned_partitions[0].partitions) == (7, None, [1])


# ---- hand-checked layouts and version rules ----------------------------------------------------

def test_join_group_v0_layout():
    m = JoinGroupRequest(group_id="g", session_timeout_ms=10000, member_id="", protocol_type="consumer",
                         protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"M")])
    assert JoinGroupRequest._codec.encode(m, 0) == (
        b"\x00\x01g" b"\x00\x00\x27\x10" b"\x00\x00" b"\x00\x08consumer"
        b"\x00\x00\x00\x01" b"\x00\x05range" b"\x00\x00\x00\x01M")
    # v1 adds the rebalance timeout after the session timeout; v0 decodes it as -1.
    assert JoinGroupRequest._codec.encode(m, 1)[7:11] == b"\xff\xff\xff\xff"
    assert JoinGroupRequest._codec.decode(JoinGroupRequest._codec.encode(m, 0), 0)[0].rebalance_timeout_ms == -1


def test_join_group_response_protocol_name_nullable_from_v7():
    r = JoinGroupResponse._codec
    m = JoinGroupResponse(error_code=79, member_id="m-1", protocol_name=None)  # MEMBER_ID_REQUIRED
    assert r.decode(r.encode(m, 7), 7)[0] == m
    with pytest.raises(EncodeError):
        r.encode(m, 6)
    with pytest.raises(EncodeError):
        r.encode(JoinGroupResponse(skip_assignment=True), 8)


def test_offset_commit_version_specific_fields():
    c = OffsetCommitRequest._codec
    part = OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition
    v1 = OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=3, member_id="m", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
            part(partition_index=0, committed_offset=5, commit_timestamp=1000, committed_metadata=None)])])
    assert c.decode(c.encode(v1, 1), 1)[0] == v1
    with pytest.raises(EncodeError):  # commit_timestamp exists in v1 only and is not ignorable
        c.encode(v1, 2)
    v2 = OffsetCommitRequest(group_id="g", retention_time_ms=60000)
    assert c.decode(c.encode(v2, 4), 4)[0].retention_time_ms == 60000
    # retention is ignorable: v5+ drop it silently (broker config decides)
    assert c.decode(c.encode(v2, 5), 5)[0].retention_time_ms == -1
    # v0 has no generation/member: they decode to "not in a generation"
    d = c.decode(c.encode(OffsetCommitRequest(group_id="g"), 0), 0)[0]
    assert (d.generation_id_or_member_epoch, d.member_id, d.group_instance_id) == (-1, "", None)


def test_offset_fetch_all_topics_and_batching():
    c = OffsetFetchRequest._codec
    assert c.decode(c.encode(OffsetFetchRequest(group_id="g", topics=None), 2), 2)[0].topics is None
    with pytest.raises(EncodeError):
        c.encode(OffsetFetchRequest(group_id="g", topics=None), 1)
    batched = OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id="g", topics=None)],
                                 require_stable=True)
    d = c.decode(c.encode(batched, 8), 8)[0]
    assert d.groups[0].topics is None and d.groups[0].member_id is None and d.groups[0].member_epoch == -1
    with pytest.raises(EncodeError):
        c.encode(batched, 7)
    r = OffsetFetchResponse._codec
    part = OffsetFetchResponse.OffsetFetchResponseTopic.OffsetFetchResponsePartition
    m = OffsetFetchResponse(error_code=16, topics=[OffsetFetchResponse.OffsetFetchResponseTopic(
        name="t", partitions=[part(partition_index=0, committed_offset=-1, metadata="", error_code=0)])])
    assert r.decode(r.encode(m, 2), 2)[0] == m
    # v0-1 have no top-level error code; it is ignorable, so it is dropped there
    assert r.decode(r.encode(m, 1), 1)[0].error_code == 0


def test_find_coordinator_single_then_batched():
    c = FindCoordinatorRequest._codec
    assert c.encode(FindCoordinatorRequest(key="g"), 0) == b"\x00\x01g"
    assert c.encode(FindCoordinatorRequest(key="tx", key_type=1), 1) == b"\x00\x02tx\x01"
    d = c.decode(c.encode(FindCoordinatorRequest(key_type=0, coordinator_keys=["a", "b"]), 4), 4)[0]
    assert d.coordinator_keys == ["a", "b"] and d.key == ""
    with pytest.raises(EncodeError):
        c.encode(FindCoordinatorRequest(key="g"), 4)
    with pytest.raises(EncodeError):
        c.encode(FindCoordinatorRequest(key="tx", key_type=1), 0)
    r = FindCoordinatorResponse._codec
    one = FindCoordinatorResponse(error_code=0, error_message=None, node_id=1, host="h", port=9092)
    assert r.encode(one, 0) == b"\x00\x00" b"\x00\x00\x00\x01" b"\x00\x01h" b"\x00\x00\x23\x84"
    with pytest.raises(EncodeError):
        r.encode(one, 4)


def test_leave_group_single_member_until_v2_then_batched():
    c = LeaveGroupRequest._codec
    assert c.decode(c.encode(LeaveGroupRequest(group_id="g", member_id="m"), 2), 2)[0].member_id == "m"
    with pytest.raises(EncodeError):
        c.encode(LeaveGroupRequest(group_id="g", member_id="m"), 3)
    batch = LeaveGroupRequest(group_id="g", members=[LeaveGroupRequest.MemberIdentity(
        member_id="", group_instance_id="i-1", reason="admin")])
    assert c.decode(c.encode(batch, 5), 5)[0] == batch
    assert c.decode(c.encode(batch, 4), 4)[0].members[0].reason is None  # reason is ignorable


def test_sync_group_response_echoes_protocol_from_v5():
    r = SyncGroupResponse._codec
    m = SyncGroupResponse(protocol_type="consumer", protocol_name="range", assignment=b"A")
    assert r.decode(r.encode(m, 5), 5)[0] == m
    d = r.decode(r.encode(m, 4), 4)[0]  # ignorable before v5
    assert (d.protocol_type, d.protocol_name, d.assignment) == (None, None, b"A")


def test_describe_groups_authorized_operations():
    r = DescribeGroupsResponse._codec
    g = DescribeGroupsResponse.DescribedGroup(group_id="g", group_state="Dead")
    assert g.authorized_operations == -2**31
    assert r.decode(r.encode(DescribeGroupsResponse(groups=[g]), 0), 0)[0].groups[0] == g
    g.authorized_operations = 0b1000
    with pytest.raises(EncodeError):  # not ignorable: a v0-2 answer cannot carry it
        r.encode(DescribeGroupsResponse(groups=[g]), 2)
    assert r.decode(r.encode(DescribeGroupsResponse(groups=[g]), 3), 3)[0].groups[0].authorized_operations == 8


def test_list_groups_filters_need_their_versions():
    c = ListGroupsRequest._codec
    assert c.encode(ListGroupsRequest(), 3) == b"\x00"
    assert c.decode(c.encode(ListGroupsRequest(states_filter=["Stable"]), 4), 4)[0].states_filter == ["Stable"]
    with pytest.raises(EncodeError):
        c.encode(ListGroupsRequest(states_filter=["Stable"]), 3)
    with pytest.raises(EncodeError):
        c.encode(ListGroupsRequest(types_filter=["classic"]), 4)


def test_txn_offset_commit_group_metadata_needs_v3():
    c = TxnOffsetCommitRequest._codec
    m = TxnOffsetCommitRequest(transactional_id="tx", group_id="g", producer_id=1, producer_epoch=0,
                               generation_id=4, member_id="m")
    assert c.decode(c.encode(m, 3), 3)[0] == m
    with pytest.raises(EncodeError):
        c.encode(m, 2)
    d = c.decode(c.encode(TxnOffsetCommitRequest(transactional_id="tx", group_id="g"), 2), 2)[0]
    assert (d.generation_id, d.member_id, d.group_instance_id) == (-1, "", None)


@pytest.mark.parametrize("version", [3, 4])
def test_add_partitions_to_txn_common_structs_round_trip(version):
    """Kafka's common structs appear twice in these messages (old and batched shapes): a
    struct built from either place equals its decoded copy."""
    req, resp = AddPartitionsToTxnRequest, AddPartitionsToTxnResponse
    if version <= 3:
        m = req(v3_and_below_transactional_id="tx", v3_and_below_producer_id=5, v3_and_below_producer_epoch=1,
                v3_and_below_topics=[req.AddPartitionsToTxnTopic(name="t", partitions=[0, 1])])
        r = resp(results_by_topic_v3_and_below=[resp.AddPartitionsToTxnTopicResult(
            name="t", results_by_partition=[resp.AddPartitionsToTxnPartitionResult(partition_index=0)])])
    else:
        txn = req.AddPartitionsToTxnTransaction
        m = req(transactions=[txn(transactional_id="tx", producer_id=5, producer_epoch=1, verify_only=True,
                                  topics=[txn.AddPartitionsToTxnTopic(name="t", partitions=[0, 1])])])
        res = resp.AddPartitionsToTxnResult
        tr = res.AddPartitionsToTxnTopicResult
        r = resp(results_by_transaction=[res(transactional_id="tx", topic_results=[tr(
            name="t", results_by_partition=[tr.AddPartitionsToTxnPartitionResult(partition_index=0)])])])
    assert req._codec.decode(req._codec.encode(m, version), version)[0] == m
    assert resp._codec.decode(resp._codec.encode(r, version), version)[0] == r
