"""Security messages checked against real client encoders, byte for byte.

APIs: DescribeAcls (29), CreateAcls (30), DeleteAcls (31), SaslAuthenticate (36),
DescribeUserScramCredentials (50), AlterUserScramCredentials (51); SaslHandshake (17) is in
``test_messages_a``.

References, each written independently of ours:
- kafka-python 3.0.12's JSON-driven classes, generated from Kafka 4.x specs (the ACL APIs
  from v1, Kafka 4.0's baseline): random messages of ours must encode to the same bytes as
  the same message built with kafka-python, and each side must decode the other's bytes;
- kafka-python's hand-written classic classes (``kafka.protocol.old``): ACL v0 (dropped by
  Kafka 4.0, still served here) and v1, SaslAuthenticate v0-1. (Its DescribeAcls "v2"
  class keeps v1's non-compact layout, so it is not a reference for the flexible versions.)
"""
from __future__ import annotations

import pytest

import kafka.protocol.old.admin as old_admin
import kafka.protocol.old.sasl_authenticate as old_sasl_authenticate
from kafka.protocol.admin import acl as kp_acl
from kafka.protocol.admin import users as kp_users
from kafka.protocol import sasl as kp_sasl

from protocol.api_keys import APIS
from protocol.errors import EncodeError
from protocol.messages.create_acls import CreateAclsRequest
from protocol.messages.describe_acls import DescribeAclsRequest
from protocol.messages.sasl_authenticate import SaslAuthenticateResponse

try:  # pytest's default import mode puts this directory on sys.path
    import test_messages_a as a
except ImportError:  # tests/ made a package
    import tests.protocol.test_messages_a as a

KP = {
    29: (kp_acl.DescribeAclsRequest, kp_acl.DescribeAclsResponse),
    30: (kp_acl.CreateAclsRequest, kp_acl.CreateAclsResponse),
    31: (kp_acl.DeleteAclsRequest, kp_acl.DeleteAclsResponse),
    36: (kp_sasl.SaslAuthenticateRequest, kp_sasl.SaslAuthenticateResponse),
    50: (kp_users.DescribeUserScramCredentialsRequest, kp_users.DescribeUserScramCredentialsResponse),
    51: (kp_users.AlterUserScramCredentialsRequest, kp_users.AlterUserScramCredentialsResponse),
}
OLD = {
    29: (old_admin.DescribeAclsRequest, old_admin.DescribeAclsResponse),
    30: (old_admin.CreateAclsRequest, old_admin.CreateAclsResponse),
    31: (old_admin.DeleteAclsRequest, old_admin.DeleteAclsResponse),
    36: (old_sasl_authenticate.SaslAuthenticateRequest, old_sasl_authenticate.SaslAuthenticateResponse),
}
KINDS = a.KINDS
RANGES = {29: (0, 3, 2), 30: (0, 3, 2), 31: (0, 3, 2), 36: (0, 2, 2), 50: (0, 0, 0), 51: (0, 0, 0)}


def _cases(table, top):
    for key, classes in table.items():
        api = APIS[key]
        for i, kind in enumerate(KINDS):
            lo = max(api.min_version, getattr(classes[i], "min_version", 0))
            for v in range(lo, min(api.max_version, top(classes[i])) + 1):
                yield pytest.param(key, kind, v, id=f"{api.name}{kind.capitalize()}-v{v}")


KP_CASES = list(_cases(KP, lambda c: c.max_version))
OLD_CASES = list(_cases(OLD, lambda c: min(len(c) - 1, 1)))


def test_ranges():
    for key, (lo, hi, flex) in RANGES.items():
        api = APIS[key]
        assert (api.min_version, api.max_version) == (lo, hi)
        assert [v for v in range(lo, hi + 1) if api.flexible(v)] == list(range(flex, hi + 1))


def test_every_version_has_a_reference():
    covered = {tuple(p.values) for p in KP_CASES + OLD_CASES}
    for key in KP:
        api = APIS[key]
        for kind in KINDS:
            for v in range(api.min_version, api.max_version + 1):
                assert (key, kind, v) in covered, (api.name, kind, v)


@pytest.mark.parametrize("key,kind,version", KP_CASES)
def test_bytes_match_kafka_python(key, kind, version):
    msg = getattr(APIS[key], kind)
    kp_cls = KP[key][KINDS.index(kind)]
    flexible = version in msg.spec.flex_v

    @a.SETTINGS
    @a.given(a.message_strategy(key, kind, version, unknown_tags=False))
    def check(m):
        ours = msg.encode(m, version)
        theirs = bytes(a.to_kp(m, kp_cls, msg.spec.fields, version, flexible).encode(version=version))
        assert theirs == ours
        decoded, end = msg.decode(theirs, version)
        assert end == len(theirs) and decoded == m
        kp_decoded = kp_cls.decode(ours, version=version)
        assert a.from_kp(kp_decoded, msg.cls, msg.spec.fields, version, flexible) == m
    check()


@pytest.mark.parametrize("key,kind,version", OLD_CASES)
def test_bytes_match_kafka_python_classic(key, kind, version):
    msg = getattr(APIS[key], kind)
    old_cls = OLD[key][KINDS.index(kind)][version]
    flexible = version in msg.spec.flex_v

    @a.SETTINGS
    @a.given(a.message_strategy(key, kind, version, unknown_tags=False))
    def check(m):
        values = a.to_tuple(m, msg.spec.fields, version, flexible)
        ours = msg.encode(m, version)
        assert old_cls(*values).encode() == ours
        assert msg.decode(ours, version)[0] == m
        assert a._old_struct_values(old_cls.decode(ours)) == values
    check()


def test_v0_pattern_type_is_literal():
    """v0 has no pattern type on the wire: a v0 creation or filter reads as LITERAL (3)."""
    m = APIS[30].request
    req = CreateAclsRequest(creations=[CreateAclsRequest.AclCreation(
        resource_type=2, resource_name="t", principal="User:a", host="*", operation=3, permission_type=3)])
    assert m.decode(m.encode(req, 0), 0)[0].creations[0].resource_pattern_type == 3
    d = APIS[29].request
    f = DescribeAclsRequest(resource_type_filter=1, operation=1, permission_type=1)
    back = d.decode(d.encode(f, 0), 0)[0]
    assert (back.pattern_type_filter, back.resource_name_filter, back.principal_filter) == (3, None, None)


def test_session_lifetime_only_from_v1():
    m = APIS[36].response
    r = SaslAuthenticateResponse(auth_bytes=b"x", session_lifetime_ms=60000)
    with pytest.raises(EncodeError):  # a v0 client cannot be told; the handler must not try
        m.encode(r, 0)
    assert m.decode(m.encode(r, 1), 1)[0].session_lifetime_ms == 60000
