"""ACLs: CreateAcls, DescribeAcls and DeleteAcls with the standard authorizer on both brokers
(``authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer``, the
PLAINTEXT principal ``User:ANONYMOUS`` a super user so every request is allowed), at every
version both serve: valid bindings, invalid ones (codes and messages) and filters."""
from __future__ import annotations

import pytest

from tests.differential.conftest import start_pair, stop_pair
from tests.differential.framework import req
from tests.differential.wire import wait_ok

pytestmark = pytest.mark.xdist_group("differential")

AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "super.users": "User:ANONYMOUS"}

# Kafka's AclOperation, AclPermissionType, ResourceType and PatternType codes
UNKNOWN, ANY = 0, 1
READ, WRITE, ALL, DESCRIBE = 3, 4, 2, 8
ALLOW, DENY = 3, 2
TOPIC, GROUP, CLUSTER, TXN_ID = 2, 3, 4, 5
MATCH, LITERAL, PREFIXED = 2, 3, 4


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    p = start_pair(tmp_path_factory, AUTHORIZER, AUTHORIZER, name="acl-pair")
    yield p
    stop_pair(p)


def _binding(rtype, name, pattern, principal="User:alice", host="*", op=READ, perm=ALLOW):
    return {"resource_type": rtype, "resource_name": name, "resource_pattern_type": pattern,
            "principal": principal, "host": host, "operation": op, "permission_type": perm}


def _filter(rtype=ANY, name=None, pattern=ANY, principal=None, host=None, op=ANY, perm=ANY):
    return {"resource_type_filter": rtype, "resource_name_filter": name, "pattern_type_filter": pattern,
            "principal_filter": principal, "host_filter": host, "operation": op, "permission_type": perm}


def test_acls(ex):
    p = ex.topic_name()
    good = [
        _binding(TOPIC, p + "-orders", LITERAL),
        _binding(TOPIC, p + "-pay", PREFIXED, op=WRITE),
        _binding(GROUP, p + "-g", LITERAL, principal="User:bob", perm=DENY),
        _binding(CLUSTER, "kafka-cluster", LITERAL, op=DESCRIBE),
        _binding(TXN_ID, p + "-tx", LITERAL, op=WRITE, host="10.0.0.1"),
    ]
    bad = [
        ("resource type ANY", _binding(ANY, p, LITERAL)),
        ("resource type UNKNOWN", _binding(UNKNOWN, p, LITERAL)),
        ("pattern MATCH", _binding(TOPIC, p, MATCH)),
        ("pattern ANY", _binding(TOPIC, p, ANY)),
        ("operation ANY", _binding(TOPIC, p, LITERAL, op=ANY)),
        ("permission ANY", _binding(TOPIC, p, LITERAL, perm=ANY)),
        ("principal without a type", _binding(TOPIC, p, LITERAL, principal="alice")),
        ("empty resource name", _binding(TOPIC, "", LITERAL)),
        ("cluster resource not named kafka-cluster", _binding(CLUSTER, "other", LITERAL)),
        ("wildcard topic, prefixed", _binding(TOPIC, "*", PREFIXED)),
        ("ALL on a cluster", _binding(CLUSTER, "kafka-cluster", LITERAL, op=ALL)),
    ]
    versions = ex.versions(30)
    for v in versions:
        for name, b in bad:
            ex.send(30, v, req(30, v, creations=[b]), scenario=f"create: {name}")
    v = max(versions)
    ex.send(30, v, req(30, v, creations=good), scenario="create five bindings")
    ex.send(30, v, req(30, v, creations=good[:1]), scenario="create one again")
    _settle(ex)
    for dv in ex.versions(29):
        for name, f in [("every topic binding", _filter(rtype=TOPIC)),
                        ("this literal topic", _filter(rtype=TOPIC, name=p + "-orders", pattern=LITERAL)),
                        ("MATCH a topic under the prefix", _filter(rtype=TOPIC, name=p + "-pay-eu", pattern=MATCH)),
                        ("by principal", _filter(principal="User:bob")),
                        ("by host", _filter(host="10.0.0.1")),
                        ("by operation WRITE", _filter(op=WRITE)),
                        ("DENY only", _filter(perm=DENY)),
                        ("resource type UNKNOWN", _filter(rtype=UNKNOWN)),
                        ("pattern UNKNOWN", _filter(pattern=UNKNOWN)),
                        ("every binding", _filter())]:
            ex.send(29, dv, req(29, dv, **f), scenario=f"describe: {name}")
    for dv in ex.versions(31):
        ex.send(31, dv, req(31, dv, filters=[_filter(rtype=TOPIC, name=p + "-nothing", pattern=LITERAL),
                                             _filter(rtype=UNKNOWN)]), scenario="delete: nothing matches, bad filter")
    dv = max(ex.versions(31))
    ex.send(31, dv, req(31, dv, filters=[_filter(rtype=TOPIC, name=p + "-pay-eu", pattern=MATCH),
                                         _filter(principal="User:bob")]), scenario="delete: MATCH and principal")
    _settle(ex)
    ex.send(29, max(ex.versions(29)), req(29, max(ex.versions(29)), **_filter()), scenario="describe: what is left")
    ex.send(31, dv, req(31, dv, filters=[_filter()]), scenario="delete: every binding")


def _settle(ex):
    """Setup: wait until Kafka's authorizer lists as many bindings as Hourglass's (Kafka's broker
    learns ACL changes from its controller's metadata log a moment after answering; Hourglass's
    are in place when it answers)."""
    v = max(ex.versions(29))
    body = req(29, v, **_filter())
    count = lambda r: sum(len(res.acls) for res in r.resources)  # noqa: E731
    n = count(ex.hourglass.request(29, v, body))
    wait_ok(ex.kafka, 29, v, body, ok=lambda r: count(r) == n)


def test_acl_requests_past_ten_thousand(ex):
    """Kafka 4.4's controller writes at most 10,000 ACL records per request: more new distinct
    valid bindings in one CreateAcls, or more matches in one DeleteAcls, and every entry answers
    POLICY_VIOLATION with nothing changed (``broker.controller_limits``); repeats and invalid
    bindings do not count."""
    p = ex.topic_name()
    cv, dv = max(ex.versions(30)), max(ex.versions(31))
    names = [f"{p}-{i}" for i in range(10_001)]
    ex.send(30, cv, req(30, cv, creations=[_binding(TOPIC, n, LITERAL) for n in names]),
            scenario="create: 10,001 new bindings")
    ex.send(30, cv, req(30, cv, creations=[_binding(TOPIC, names[0], LITERAL)] * 10_001),
            scenario="create: one binding 10,001 times")
    ex.send(30, cv, req(30, cv, creations=[_binding(TOPIC, n, LITERAL) for n in names[:10_000]]
                        + [_binding(TOPIC, "", LITERAL)]), scenario="create: 10,000 new and an invalid one")
    _settle(ex)
    ex.send(30, cv, req(30, cv, creations=[_binding(TOPIC, n, LITERAL) for n in names]),
            scenario="create: 10,000 existing and one new")
    _settle(ex)
    ex.send(31, dv, req(31, dv, filters=[_filter(TOPIC, n, LITERAL) for n in names]),
            scenario="delete: 10,001 matches")
    ex.send(31, dv, req(31, dv, filters=[_filter(TOPIC, n, LITERAL) for n in names[:5_000]]),
            scenario="delete: 5,000 matches")
    _settle(ex)
    ex.send(31, dv, req(31, dv, filters=[_filter()]), scenario="delete: every binding")
