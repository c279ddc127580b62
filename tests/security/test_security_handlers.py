"""The ACL and SCRAM admin handlers, called directly (no sockets), their responses encoded at
every version so a field a version cannot carry fails here."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from broker.handlers import (
    alter_user_scram_credentials, create_acls, delete_acls, describe_acls, describe_user_scram_credentials,
)
from broker.security.acl import AclOperation as Op, AclPermissionType as Perm, PatternType as PT, ResourceType as RT
from broker.security.api_acls import RequestAuthz
from broker.security.authorizer import AclStore, StandardAuthorizer
from broker.security.scram import ScramCredentialStore, ScramMechanism, salted_password
from broker.security.state import BrokerSecurity
from protocol.api_keys import APIS
from protocol.errors import ErrorCode as E
from protocol.messages.alter_user_scram_credentials import AlterUserScramCredentialsRequest as AU
from protocol.messages.create_acls import CreateAclsRequest as CA
from protocol.messages.delete_acls import DeleteAclsRequest as DA
from protocol.messages.describe_acls import DescribeAclsRequest as DE
from protocol.messages.describe_user_scram_credentials import DescribeUserScramCredentialsRequest as DU

ADMIN, ALICE = "User:admin", "User:alice"


def call(module, key, version, req, security, principal=ADMIN):
    ctx = SimpleNamespace(broker=SimpleNamespace(security=security),
                          authz=RequestAuthz(security.authorizer, principal, "127.0.0.1", key, version))
    resp = asyncio.run(module.handle(ctx, req))
    m = APIS[key].response
    return m.decode(m.encode(resp, version), version)[0]


@pytest.fixture
def sec(tmp_path):
    return BrokerSecurity(StandardAuthorizer(super_users={ADMIN}, store=AclStore(tmp_path)),
                          ScramCredentialStore(tmp_path))


def creation(rt=RT.TOPIC, name="t", pt=PT.LITERAL, principal=ALICE, op=Op.READ, perm=Perm.ALLOW, host="*"):
    return CA.AclCreation(resource_type=rt, resource_name=name, resource_pattern_type=pt, principal=principal,
                          host=host, operation=op, permission_type=perm)


def test_acl_admin_round_trip(sec, tmp_path):
    r = call(create_acls, 30, 3, CA(creations=[
        creation(), creation(name="pay", pt=PT.PREFIXED, op=Op.WRITE),
        creation(rt=RT.CLUSTER, name="other"), creation(principal="alice")]), sec)
    assert [x.error_code for x in r.results] == [0, 0, E.INVALID_REQUEST, E.INVALID_REQUEST]
    assert r.results[2].error_message == "The only valid name for the CLUSTER resource is kafka-cluster"
    d = call(describe_acls, 29, 3, DE(resource_type_filter=RT.ANY, pattern_type_filter=PT.ANY, operation=Op.ANY,
                                      permission_type=Perm.ANY), sec)
    assert d.error_code == 0
    assert [(x.resource_name, x.pattern_type, [a.operation for a in x.acls]) for x in d.resources] == \
        [("t", PT.LITERAL, [Op.READ]), ("pay", PT.PREFIXED, [Op.WRITE])]
    # v0: LITERAL only, on the wire and in the filter
    d0 = call(describe_acls, 29, 0, DE(resource_type_filter=RT.TOPIC, operation=Op.ANY, permission_type=Perm.ANY), sec)
    assert [x.resource_name for x in d0.resources] == ["t"]
    m = call(describe_acls, 29, 3, DE(resource_type_filter=RT.TOPIC, resource_name_filter="payments",
                                      pattern_type_filter=PT.MATCH, operation=Op.ANY, permission_type=Perm.ANY), sec)
    assert [x.resource_name for x in m.resources] == ["pay"]
    x = call(delete_acls, 31, 2, DA(filters=[
        DA.DeleteAclsFilter(resource_type_filter=RT.TOPIC, pattern_type_filter=PT.PREFIXED, operation=Op.ANY,
                            permission_type=Perm.ANY),
        DA.DeleteAclsFilter(resource_type_filter=RT.TOPIC, pattern_type_filter=0, operation=Op.ANY,
                            permission_type=Perm.ANY)]), sec)
    assert [a.resource_name for a in x.filter_results[0].matching_acls] == ["pay"]
    assert x.filter_results[1].error_code == E.INVALID_REQUEST
    assert [b.pattern.name for b in StandardAuthorizer(store=AclStore(tmp_path)).acls(
        __import__("broker.security.acl", fromlist=["ANY_FILTER"]).ANY_FILTER)] == ["t"]


def test_acl_admin_needs_cluster_alter_or_describe(sec):
    r = call(create_acls, 30, 1, CA(creations=[creation()]), sec, principal=ALICE)
    assert r.results[0].error_code == E.CLUSTER_AUTHORIZATION_FAILED
    d = call(describe_acls, 29, 1, DE(resource_type_filter=RT.ANY, pattern_type_filter=PT.ANY, operation=Op.ANY,
                                      permission_type=Perm.ANY), sec, principal=ALICE)
    assert d.error_code == E.CLUSTER_AUTHORIZATION_FAILED
    x = call(delete_acls, 31, 1, DA(filters=[DA.DeleteAclsFilter(resource_type_filter=RT.ANY, pattern_type_filter=1,
                                                                 operation=1, permission_type=1)]), sec,
             principal=ALICE)
    assert x.filter_results[0].error_code == E.CLUSTER_AUTHORIZATION_FAILED


def test_acl_admin_without_authorizer_is_security_disabled(tmp_path):
    off = BrokerSecurity(None, ScramCredentialStore(tmp_path))
    r = call(create_acls, 30, 3, CA(creations=[creation(), creation()]), off)
    assert [(x.error_code, x.error_message) for x in r.results] == [(E.SECURITY_DISABLED, "No Authorizer is configured.")] * 2
    assert call(describe_acls, 29, 3, DE(resource_type_filter=1, pattern_type_filter=1, operation=1,
                                         permission_type=1), off).error_code == E.SECURITY_DISABLED


def upsert(name, mech=1, iterations=4096, password="pw", salt=b"salt-salt-salt"):
    sp = salted_password(ScramMechanism.of(mech), password, salt, iterations) if mech in (1, 2) else b"x"
    return AU.ScramCredentialUpsertion(name=name, mechanism=mech, iterations=iterations, salt=salt, salted_password=sp)


def test_scram_admin_rules_and_messages(sec, tmp_path):
    r = call(alter_user_scram_credentials, 51, 0, AU(
        deletions=[AU.ScramCredentialDeletion(name="ghost", mechanism=1)],
        upsertions=[upsert("alice"), upsert("alice", 2), upsert("bob", 2, 8192), upsert("", 1),
                    upsert("carol", 0), upsert("dave", 1, 1000), upsert("erin", 1, 20000),
                    upsert("fay", 1, salt=b"short")]), sec)
    got = {x.user: (x.error_code, x.error_message) for x in r.results}
    assert got == {
        "bob": (0, None),
        "ghost": (E.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
        "alice": (E.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request"),
        "": (E.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        "carol": (E.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "dave": (E.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        "erin": (E.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        "fay": (0, None),  # a 5-byte salt: Kafka sets no minimum
    }
    assert [x.user for x in r.results][:2] == ["bob", "fay"]  # successes first
    assert sorted(ScramCredentialStore(tmp_path).users) == ["bob", "fay"]
    call(alter_user_scram_credentials, 51, 0, AU(upsertions=[upsert("alice", 1, 4096), upsert("zed", 2)]), sec)
    d = call(describe_user_scram_credentials, 50, 0, DU(users=None), sec)
    assert [(x.user, [(c.mechanism, c.iterations) for c in x.credential_infos]) for x in d.results] == \
        [("alice", [(1, 4096)]), ("bob", [(2, 8192)]), ("fay", [(1, 4096)]), ("zed", [(2, 4096)])]
    d = call(describe_user_scram_credentials, 50, 0, DU(users=[DU.UserName(name=n) for n in ("bob", "nobody", "bob")]),
             sec)
    assert [(x.user, x.error_code) for x in d.results] == [("bob", E.DUPLICATE_RESOURCE), ("nobody", E.RESOURCE_NOT_FOUND)]
    r = call(alter_user_scram_credentials, 51, 0, AU(deletions=[AU.ScramCredentialDeletion(name="bob", mechanism=2)]),
             sec)
    assert [(x.user, x.error_code) for x in r.results] == [("bob", 0)]
    assert sorted(ScramCredentialStore(tmp_path).users) == ["alice", "fay", "zed"]


def test_scram_admin_needs_cluster_rights(sec):
    r = call(alter_user_scram_credentials, 51, 0, AU(upsertions=[upsert("alice")]), sec, principal=ALICE)
    assert [(x.user, x.error_code) for x in r.results] == [("alice", E.CLUSTER_AUTHORIZATION_FAILED)]
    assert call(describe_user_scram_credentials, 50, 0, DU(), sec, principal=ALICE).error_code == \
        E.CLUSTER_AUTHORIZATION_FAILED
