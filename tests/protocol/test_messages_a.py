"""Group A messages checked against real client encoders, byte for byte.

APIs: Produce (0), Fetch (1), ListOffsets (2), Metadata (3), SaslHandshake (17),
InitProducerId (22), OffsetForLeaderEpoch (23), DescribeCluster (60), DescribeProducers (61),
DescribeTopicPartitions (75).

Two independent encoders from kafka-python 3.0.12 serve as references:
- its JSON-driven classes (``kafka.protocol.producer`` etc., generated from Kafka 4.x specs,
  every version up to our maximum): random messages of ours (tagged fields included) must
  encode to the same bytes as the same message built with kafka-python, and each side must
  decode the other's bytes to the same values;
- its hand-written classic classes (``kafka.protocol.old``): the same checks at every version
  they declare.
A few hand-checked layouts and version rules handlers rely on follow.
"""
from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import kafka.protocol.old.fetch as old_fetch
import kafka.protocol.old.init_producer_id as old_init_producer_id
import kafka.protocol.old.list_offsets as old_list_offsets
import kafka.protocol.old.metadata as old_metadata
import kafka.protocol.old.offset_for_leader_epoch as old_offset_for_leader_epoch
import kafka.protocol.old.produce as old_produce
import kafka.protocol.old.sasl_handshake as old_sasl_handshake
from kafka.protocol.admin.cluster import DescribeClusterRequest as KpDescribeClusterRequest
from kafka.protocol.admin.cluster import DescribeClusterResponse as KpDescribeClusterResponse
from kafka.protocol.admin.topics import DescribeTopicPartitionsRequest as KpDTPRequest
from kafka.protocol.admin.topics import DescribeTopicPartitionsResponse as KpDTPResponse
from kafka.protocol.admin.transactions import DescribeProducersRequest as KpDescribeProducersRequest
from kafka.protocol.admin.transactions import DescribeProducersResponse as KpDescribeProducersResponse
from kafka.protocol.consumer.fetch import FetchRequest as KpFetchRequest
from kafka.protocol.consumer.fetch import FetchResponse as KpFetchResponse
from kafka.protocol.consumer.offsets import ListOffsetsRequest as KpListOffsetsRequest
from kafka.protocol.consumer.offsets import ListOffsetsResponse as KpListOffsetsResponse
from kafka.protocol.consumer.offsets import OffsetForLeaderEpochRequest as KpOFLERequest
from kafka.protocol.consumer.offsets import OffsetForLeaderEpochResponse as KpOFLEResponse
from kafka.protocol.metadata.metadata import MetadataRequest as KpMetadataRequest
from kafka.protocol.metadata.metadata import MetadataResponse as KpMetadataResponse
from kafka.protocol.producer.produce import ProduceRequest as KpProduceRequest
from kafka.protocol.producer.produce import ProduceResponse as KpProduceResponse
from kafka.protocol.producer.transaction import InitProducerIdRequest as KpInitProducerIdRequest
from kafka.protocol.producer.transaction import InitProducerIdResponse as KpInitProducerIdResponse
from kafka.protocol.sasl import SaslHandshakeRequest as KpSaslHandshakeRequest
from kafka.protocol.sasl import SaslHandshakeResponse as KpSaslHandshakeResponse

from protocol.api_keys import APIS
from protocol.errors import DecodeError, EncodeError
from protocol.messages.describe_topic_partitions import DescribeTopicPartitionsRequest
from protocol.messages.fetch import FetchRequest, FetchResponse
from protocol.messages.list_offsets import ListOffsetsRequest, ListOffsetsResponse
from protocol.messages.metadata import MetadataRequest, MetadataResponse
from protocol.messages.produce import ProduceRequest, ProduceResponse
from protocol.schema import ZERO_UUID, Field
try:  # pytest's default (rootdir-relative, no package) import mode puts this directory on sys.path
    from test_messages_roundtrip import message_strategy
except ImportError:  # tests/ made a package
    from tests.protocol.test_messages_roundtrip import message_strategy

# No shrink phase: with hundreds of parametrized cases, a codec bug fails many at once and
# shrinking each costs seconds; the drawn examples are small enough to read as they are.
SETTINGS = settings(max_examples=15, deadline=None, database=None,
                    phases=(Phase.explicit, Phase.reuse, Phase.generate),
                    suppress_health_check=list(HealthCheck))

# (our key) -> (kafka-python JSON-driven request class, response class)
KP = {
    0: (KpProduceRequest, KpProduceResponse),
    1: (KpFetchRequest, KpFetchResponse),
    2: (KpListOffsetsRequest, KpListOffsetsResponse),
    3: (KpMetadataRequest, KpMetadataResponse),
    17: (KpSaslHandshakeRequest, KpSaslHandshakeResponse),
    22: (KpInitProducerIdRequest, KpInitProducerIdResponse),
    23: (KpOFLERequest, KpOFLEResponse),
    60: (KpDescribeClusterRequest, KpDescribeClusterResponse),
    61: (KpDescribeProducersRequest, KpDescribeProducersResponse),
    75: (KpDTPRequest, KpDTPResponse),
}

# (our key) -> (classic request classes by version, classic response classes by version)
OLD = {
    0: (old_produce.ProduceRequest, old_produce.ProduceResponse),
    1: (old_fetch.FetchRequest, old_fetch.FetchResponse),
    2: (old_list_offsets.ListOffsetsRequest, old_list_offsets.ListOffsetsResponse),
    3: (old_metadata.MetadataRequest, old_metadata.MetadataResponse),
    17: (old_sasl_handshake.SaslHandshakeRequest, old_sasl_handshake.SaslHandshakeResponse),
    22: (old_init_producer_id.InitProducerIdRequest, old_init_producer_id.InitProducerIdResponse),
    23: (old_offset_for_leader_epoch.OffsetForLeaderEpochRequest,
         old_offset_for_leader_epoch.OffsetForLeaderEpochResponse),
}

KINDS = ("request", "response")


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


def test_every_group_a_version_has_a_reference():
    """kafka-python's JSON classes reach every version we declare for these APIs."""
    covered = {(p.values[0], p.values[1], p.values[2]) for p in _kp_cases()}
    for key in KP:
        a = APIS[key]
        for kind in KINDS:
            for v in range(a.min_version, a.max_version + 1):
                assert (key, kind, v) in covered


# ---- conversions between our messages and kafka-python's --------------------------------------

def _tagged(f: Field, v: int, flexible: bool) -> bool:
    return flexible and v in f.tag_v


def _kp_name(f: Field, kp_cls) -> str:
    """kafka-python renames some ``*_authorized_operations`` to ``authorized_operations``,
    a set of bit positions."""
    if f.name not in kp_cls.fields and _is_ops(f):
        return "authorized_operations"
    return f.name


def _ops_to_bits(x: int):
    """int32 authorized operations -> kafka-python's bit set (None for Kafka's -2^31 'unset')."""
    bits = {i for i in range(32) if (x & 0xFFFFFFFF) >> i & 1}
    return None if bits == {31} else bits


def _bits_to_ops(bits) -> int:
    x = sum(1 << i for i in ({31} if bits is None else bits))
    return x - (1 << 32) if x >= 1 << 31 else x


def _is_ops(f: Field) -> bool:
    return f.type == "int32" and f.name.endswith("authorized_operations")


def to_kp(obj, kp_cls, fields: list[Field], v: int, flexible: bool):
    """Our struct -> kafka-python's JSON-driven DataContainer (tagged fields only when set)."""
    kw = {}
    for f in fields:
        if v not in f.v:
            continue
        val = getattr(obj, f.name)
        if _tagged(f, v, flexible) and val == f.default_value():
            continue  # both encoders leave a default tagged field out
        name = _kp_name(f, kp_cls)
        kw[name] = _ops_to_bits(val) if name != f.name else _to_kp_value(val, f, kp_cls, v, flexible)
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
    if f.elem == "records":
        return bytes(val)
    return val


def _elem_of(f: Field) -> Field:
    """The element of an array field, as a field of its own."""
    return Field(f.name, f.elem, f.versions, fields=f.fields)


def from_kp(kp_obj, cls, fields: list[Field], v: int, flexible: bool):
    """kafka-python's decoded DataContainer -> our struct."""
    kw = {}
    for f in fields:
        if v not in f.v:
            continue
        if _tagged(f, v, flexible) and f.name not in (kp_obj.tags or ()):
            continue  # not on the wire: ours holds the default
        name = _kp_name(f, type(kp_obj))
        val = getattr(kp_obj, name)
        kw[f.name] = _bits_to_ops(val) if name != f.name else _from_kp_value(val, f, cls, v, flexible)
    return cls(**kw)


def _from_kp_value(val, f: Field, cls, v, flexible):
    if val is None and f.elem == "uuid" and not f.is_array:
        return ZERO_UUID  # kafka-python decodes the all-zero uuid as None
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


# Structs the classic classes declare as their single field's value (same wire layout).
_BARE_IN_CLASSIC = {"MetadataRequestTopic"}


def to_tuple(obj, fields: list[Field], v: int, flexible: bool):
    """Our struct -> the nested tuples kafka-python's classic classes use (untagged fields)."""
    out = []
    for f in fields:
        if v not in f.v or _tagged(f, v, flexible):
            continue
        val = getattr(obj, f.name)
        # The classic classes hold authorized operations as a set of bit positions.
        out.append(_ops_to_bits(val) if _is_ops(f) else _tuple_value(val, f, v, flexible))
    return tuple(out)


def _tuple_value(val, f: Field, v, flexible):
    if val is None:
        return None
    if f.is_array:
        return [_tuple_value(x, _elem_of(f), v, flexible) for x in val]
    if f.is_struct:
        if f.elem in _BARE_IN_CLASSIC:
            (only,) = to_tuple(val, f.fields, v, flexible)
            return only
        return to_tuple(val, f.fields, v, flexible)
    if f.elem in ("bytes", "records"):
        return bytes(val)
    return val


def _no_tagged_values(obj, fields: list[Field], v: int, flexible: bool) -> bool:
    """True when every tagged field (at any depth) holds its default: the classic classes
    cannot write tagged fields."""
    for f in fields:
        if v not in f.v:
            continue
        val = getattr(obj, f.name)
        if _tagged(f, v, flexible) and val != f.default_value():
            return False
        if f.is_struct and val is not None:
            items = val if f.is_array else [val]
            if not all(_no_tagged_values(x, f.fields, v, flexible) for x in items):
                return False
    return True


def _old_struct_values(x):
    """kafka-python classic decode result (Struct/tuples/lists) -> plain nested tuples."""
    if hasattr(x, "SCHEMA"):
        return tuple(_old_struct_values(getattr(x, n)) for n in x.SCHEMA.names if n != "tags")
    if isinstance(x, tuple):
        return tuple(_old_struct_values(y) for y in x)
    if isinstance(x, list):
        return [_old_struct_values(y) for y in x]
    return x


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
        # kafka-python's decoder skips ApiMessage.__init__, so its result lacks the header
        # slot that encode() consults.
        kp_decoded._header = None
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
        if not _no_tagged_values(m, msg.spec.fields, version, flexible):
            m = msg.decode(msg.encode(_drop_tagged(m, msg.spec.fields, version, flexible), version), version)[0]
        values = to_tuple(m, msg.spec.fields, version, flexible)
        ours = msg.encode(m, version)
        assert old_cls(*values).encode() == ours
        assert msg.decode(old_cls(*values).encode(), version)[0] == m
        assert _old_struct_values(old_cls.decode(ours)) == values
    check()


def _drop_tagged(obj, fields: list[Field], v: int, flexible: bool):
    """Set every tagged field (at any depth) back to its default, in place."""
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


# ---- hand-checked layouts and version rules ----------------------------------------------------

def test_produce_v3_layout():
    """ProduceRequest v3: nullable transactional id, then acks, timeout, topics, records."""
    m = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[
        ProduceRequest.TopicProduceData(name="t", partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=2, records=b"RB")])])
    assert ProduceRequest._codec.encode(m, 3) == (
        b"\xff\xff" b"\xff\xff" b"\x00\x00\x75\x30"
        b"\x00\x00\x00\x01" b"\x00\x01t" b"\x00\x00\x00\x01" b"\x00\x00\x00\x02" b"\x00\x00\x00\x02RB")
    # v9 is flexible: compact string (0 = null), compact arrays/records, tag buffers.
    assert ProduceRequest._codec.encode(m, 9) == (
        b"\x00" b"\xff\xff" b"\x00\x00\x75\x30"
        b"\x02" b"\x02t" b"\x02" b"\x00\x00\x00\x02" b"\x03RB" b"\x00" b"\x00" b"\x00")


def test_produce_transactional_id_needs_v3():
    codec = ProduceRequest._codec
    with pytest.raises(EncodeError):
        codec.encode(ProduceRequest(transactional_id="tx", acks=1), 2)
    assert codec.decode(codec.encode(ProduceRequest(acks=1), 2), 2)[0].transactional_id is None


def test_produce_response_current_leader_is_tagged_from_v10():
    r = ProduceResponse._codec
    part = ProduceResponse.TopicProduceResponse.PartitionProduceResponse
    leader = part.LeaderIdAndEpoch(leader_id=3, leader_epoch=7)
    m = ProduceResponse(responses=[ProduceResponse.TopicProduceResponse(
        name="t", partition_responses=[part(index=0, error_code=6, base_offset=-1, current_leader=leader)])])
    d = r.decode(r.encode(m, 10), 10)[0]
    assert d.responses[0].partition_responses[0].current_leader == leader
    # Older versions lack the field; it is not ignorable, so it cannot be silently dropped.
    with pytest.raises(EncodeError):
        r.encode(m, 9)
    m.responses[0].partition_responses[0].current_leader = None
    assert r.decode(r.encode(m, 9), 9)[0] == m


def test_fetch_topics_by_name_until_v12_then_by_id():
    codec = FetchRequest._codec
    tid = uuid.uuid4().bytes
    by_name = FetchRequest(max_wait_ms=500, min_bytes=1, topics=[FetchRequest.FetchTopic(topic="t")])
    assert codec.decode(codec.encode(by_name, 12), 12)[0].topics[0].topic == "t"
    by_id = FetchRequest(max_wait_ms=500, min_bytes=1, topics=[FetchRequest.FetchTopic(topic_id=tid)])
    d = codec.decode(codec.encode(by_id, 13), 13)[0]
    assert d.topics[0].topic_id == tid and d.topics[0].topic == ""
    # The name and the id are both ignorable: each is dropped where the version lacks it.
    assert codec.decode(codec.encode(by_name, 13), 13)[0].topics[0].topic == ""


def test_fetch_replica_id_moves_to_tagged_replica_state_in_v15():
    codec = FetchRequest._codec
    m = FetchRequest(replica_id=-1, max_wait_ms=1, min_bytes=1)
    assert codec.decode(codec.encode(m, 14), 14)[0].replica_id == -1
    follower = FetchRequest(replica_id=-1, replica_state=FetchRequest.ReplicaState(replica_id=4, replica_epoch=9))
    d = codec.decode(codec.encode(follower, 15), 15)[0]
    assert (d.replica_state.replica_id, d.replica_state.replica_epoch) == (4, 9)
    with pytest.raises(EncodeError):
        codec.encode(FetchRequest(replica_id=4), 15)  # replica_id is 0-14 and not ignorable


def test_fetch_response_records_decode_without_copy_and_encode_from_chunks():
    codec = FetchResponse._codec
    part = FetchResponse.FetchableTopicResponse.PartitionData
    m = FetchResponse(responses=[FetchResponse.FetchableTopicResponse(
        topic="t", partitions=[part(partition_index=0, high_watermark=10, records=[b"ab", b"cd"])])])
    b = codec.encode(m, 11)
    d = codec.decode(b, 11)[0]
    rec = d.responses[0].partitions[0].records
    assert isinstance(rec, memoryview) and bytes(rec) == b"abcd"
    assert d.responses[0].partitions[0].aborted_transactions == []
    assert codec.encode(d, 11) == b


def test_fetch_response_null_aborted_transactions():
    codec = FetchResponse._codec
    part = FetchResponse.FetchableTopicResponse.PartitionData
    m = FetchResponse(responses=[FetchResponse.FetchableTopicResponse(
        topic="t", partitions=[part(aborted_transactions=None, records=None)])])
    for v in (4, 12):
        assert codec.decode(codec.encode(m, v), v)[0].responses[0].partitions[0].aborted_transactions is None


def test_list_offsets_v0_old_style_offsets():
    req, resp = ListOffsetsRequest._codec, ListOffsetsResponse._codec
    p = ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(partition_index=0, timestamp=-1, max_num_offsets=1)
    m = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(name="t", partitions=[p])])
    assert req.decode(req.encode(m, 0), 0)[0] == m
    rp = ListOffsetsResponse.ListOffsetsTopicResponse.ListOffsetsPartitionResponse
    old = ListOffsetsResponse(topics=[ListOffsetsResponse.ListOffsetsTopicResponse(
        name="t", partitions=[rp(partition_index=0, old_style_offsets=[42])])])
    assert resp.decode(resp.encode(old, 0), 0)[0].topics[0].partitions[0].old_style_offsets == [42]
    with pytest.raises(EncodeError):
        resp.encode(old, 1)  # v1+ answer one offset + timestamp instead
    new = resp.decode(resp.encode(ListOffsetsResponse(topics=[ListOffsetsResponse.ListOffsetsTopicResponse(
        name="t", partitions=[rp(partition_index=0, timestamp=5, offset=42)])]), 1), 1)[0]
    assert (new.topics[0].partitions[0].timestamp, new.topics[0].partitions[0].offset) == (5, 42)


def test_metadata_all_topics_is_null_from_v1_and_empty_in_v0():
    codec = MetadataRequest._codec
    assert codec.encode(MetadataRequest(topics=[]), 0) == b"\x00\x00\x00\x00"
    assert codec.encode(MetadataRequest(topics=None), 1) == b"\xff\xff\xff\xff"
    with pytest.raises(EncodeError):
        codec.encode(MetadataRequest(topics=None), 0)
    with pytest.raises(DecodeError):
        codec.decode(b"\xff\xff\xff\xff", 0)
    assert codec.decode(b"\x00\x01\x00\x00\x00", 9)[0].topics is None  # compact null array, 3 bools, tags
    assert codec.decode(codec.encode(MetadataRequest(topics=None), 4), 4)[0].allow_auto_topic_creation is True


def test_metadata_response_topic_name_nullable_only_from_v12():
    codec = MetadataResponse._codec
    m = MetadataResponse(topics=[MetadataResponse.MetadataResponseTopic(name=None, topic_id=b"\x01" * 16)])
    d = codec.decode(codec.encode(m, 12), 12)[0]
    assert d.topics[0].name is None and d.topics[0].topic_id == b"\x01" * 16
    with pytest.raises(EncodeError):
        codec.encode(m, 11)


def test_describe_topic_partitions_cursor_is_a_nullable_struct():
    codec = DescribeTopicPartitionsRequest._codec
    plain = DescribeTopicPartitionsRequest(topics=[DescribeTopicPartitionsRequest.TopicRequest(name="a")])
    assert codec.encode(plain, 0).endswith(b"\xff\x00")  # null cursor marker, then the tag buffer
    cur = DescribeTopicPartitionsRequest.Cursor(topic_name="a", partition_index=3)
    m = DescribeTopicPartitionsRequest(topics=[], response_partition_limit=10, cursor=cur)
    assert codec.decode(codec.encode(m, 0), 0)[0].cursor == cur


def test_fields_absent_from_a_version_decode_to_their_own_defaults():
    """Fetch v0 lacks topic_id, replica_directory_id and rack_id: each decodes to its own
    default (two uuids, a string), not to another field's."""
    codec = FetchRequest._codec
    p = FetchRequest.FetchTopic.FetchPartition(partition=0, fetch_offset=5, partition_max_bytes=100)
    d = codec.decode(codec.encode(FetchRequest(topics=[FetchRequest.FetchTopic(topic="t", partitions=[p])]), 0), 0)[0]
    assert d.topics[0].topic_id == ZERO_UUID
    assert d.topics[0].partitions[0].replica_directory_id == ZERO_UUID
    assert d.rack_id == "" and d.max_bytes == 0x7FFFFFFF and d.session_epoch == -1
