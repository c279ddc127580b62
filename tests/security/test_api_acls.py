"""The table of what each served API authorizes: complete, consistent with the request schemas,
and read the way handlers read it."""
from __future__ import annotations

import pytest

from broker.registry import load_handlers
from broker.security.acl import AccessControlEntry, AclBinding, AclOperation as Op, AclPermissionType as Perm, \
    PatternType, ResourcePattern, ResourceType as RT
from broker.security.api_acls import API_CHECKS, NO_CHECKS, Deny, RequestAuthz, checks_for
from broker.security.authorizer import StandardAuthorizer
from protocol.api_keys import APIS
from protocol.errors import ErrorCode as E
from protocol.schema import Versions


def test_every_served_api_has_a_row():
    served = set(load_handlers())
    missing = sorted(k for k in served if k not in API_CHECKS and k not in NO_CHECKS)
    assert not missing, f"served APIs without an authorization row: {[APIS[k].name for k in missing]}"
    for k in (29, 30, 31, 50, 51):  # the security admin APIs themselves
        assert k in API_CHECKS


def _field_exists(fields, path: str, version: int) -> bool:
    head, _, rest = path.partition(".")
    for f in fields:
        if f.name == head and version in f.v:
            return True if not rest else bool(f.fields) and _field_exists(f.fields, rest, version)
    return False


@pytest.mark.parametrize("key", sorted(k for k in API_CHECKS if k in APIS))
def test_fields_exist_in_the_versions_they_are_read(key):
    api = APIS[key]
    for c in API_CHECKS[key]:
        v = Versions.parse(c.versions)
        versions = [x for x in range(api.min_version, api.max_version + 1) if x in v]
        assert versions, (api.name, c)
        if c.field is None:
            assert c.resource in (RT.CLUSTER, RT.TOPIC, RT.GROUP, RT.TRANSACTIONAL_ID, RT.DELEGATION_TOKEN)
            continue
        for x in versions:
            assert _field_exists(api.request.spec.fields, c.field, x), (api.name, c.label, c.field, x)


def test_error_codes_follow_the_resource():
    want = {RT.TOPIC: E.TOPIC_AUTHORIZATION_FAILED, RT.GROUP: E.GROUP_AUTHORIZATION_FAILED,
            RT.CLUSTER: E.CLUSTER_AUTHORIZATION_FAILED, RT.TRANSACTIONAL_ID: E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            RT.USER: E.DELEGATION_TOKEN_AUTHORIZATION_FAILED, RT.DELEGATION_TOKEN: E.DELEGATION_TOKEN_AUTHORIZATION_FAILED}
    for key, rows in API_CHECKS.items():
        for c in rows:
            # creating or listing topics under a cluster-level check still answers a topic error,
            # as does InitProducerId's WRITE-on-any-topic fallback a cluster error
            if c.label in ("create_cluster", "write_any_topic") or (key, c.label) == (1, "follower"):
                continue
            assert c.error == want[c.resource], (key, c)


def test_rows_by_version():
    assert checks_for(9, 7)["group"].deny is Deny.REQUEST and checks_for(9, 8)["group"].deny is Deny.ITEM
    assert checks_for(1, 12)["topic"].field == "topics.topic" and checks_for(1, 13)["topic"].field == "topics.topic_id"
    assert "transactional_id" not in checks_for(0, 2) and "transactional_id" in checks_for(0, 3)
    assert checks_for(10, 0).keys() == {"group"}


def test_request_authz_with_and_without_authorizer():
    off = RequestAuthz(None, "User:alice", "10.0.0.1", 0, 9)
    assert off.allowed("topic", "t") and off.split("topic", ["a", "b"]) == ({"a", "b"}, set())
    assert off.operations(RT.TOPIC, "t") == sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
    a = StandardAuthorizer()
    a.create_acls([AclBinding(ResourcePattern(RT.TOPIC, "pay", PatternType.PREFIXED),
                              AccessControlEntry("User:alice", "*", Op.WRITE, Perm.ALLOW))])
    on = RequestAuthz(a, "User:alice", "10.0.0.1", 0, 9)
    assert on.split("topic", ["payments", "orders", "payments"]) == ({"payments"}, {"orders"})
    assert on.error("topic") == E.TOPIC_AUTHORIZATION_FAILED
    init = RequestAuthz(a, "User:alice", "10.0.0.1", 22, 4)
    assert not init.allowed("idempotent_write") and init.allowed_any("write_any_topic")
    assert RequestAuthz(a, "User:alice", "10.0.0.1", 3, 12).operations(RT.TOPIC, "payments") == \
        (1 << Op.WRITE) | (1 << Op.DESCRIBE)
