"""StandardAuthorizer decisions, ACL filters and the durable ACL store.

Hand cases follow Kafka's ``StandardAuthorizerTest``, ``AuthorizerInterfaceDefaultTest`` and
``ResourcePatternFilterTest``; a property test checks every decision against a brute-force
reading of the rules (every binding tested against the resource one by one).
"""
from __future__ import annotations

import json
import os

from hypothesis import given, settings, strategies as st

from broker.security.acl import (
    AccessControlEntry as Ace, AccessControlEntryFilter as AceF, AclBinding, AclBindingFilter, AclError,
    AclOperation as Op, AclPermissionType as Perm, PatternType as PT, ResourcePattern as RP,
    ResourcePatternFilter as RPF, ResourceType as RT, binding, binding_filter,
)
from broker.security.authorizer import AclStore, StandardAuthorizer, ace_matches, parse_super_users
from tests.helpers.crash import acked_before_kill_9

ALICE, BOB = "User:alice", "User:bob"
HOST = "192.0.2.1"


def acl(rt, name, pt, principal, op, perm, host="*"):
    return AclBinding(RP(rt, name, pt), Ace(principal, host, op, perm))


def authz(*bindings, **kw):
    a = StandardAuthorizer(**kw)
    assert a.create_acls(list(bindings)) == [None] * len(bindings)
    return a


def test_literal_prefixed_and_wildcard_patterns():
    a = authz(acl(RT.TOPIC, "orders", PT.LITERAL, ALICE, Op.READ, Perm.ALLOW),
              acl(RT.TOPIC, "pay", PT.PREFIXED, ALICE, Op.WRITE, Perm.ALLOW),
              acl(RT.TOPIC, "*", PT.LITERAL, BOB, Op.READ, Perm.ALLOW))
    assert a.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "orders")
    assert not a.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "orders2")  # literal is exact
    assert not a.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "order")
    assert a.authorize(ALICE, HOST, Op.WRITE, RT.TOPIC, "pay")
    assert a.authorize(ALICE, HOST, Op.WRITE, RT.TOPIC, "payments")
    assert not a.authorize(ALICE, HOST, Op.WRITE, RT.TOPIC, "pa")
    assert a.authorize(BOB, HOST, Op.READ, RT.TOPIC, "anything")
    assert not a.authorize(BOB, HOST, Op.READ, RT.GROUP, "anything")  # other resource type


def test_deny_wins_over_allow_wherever_it_comes_from():
    a = authz(acl(RT.TOPIC, "*", PT.LITERAL, "User:*", Op.ALL, Perm.ALLOW),
              acl(RT.TOPIC, "secret", PT.PREFIXED, ALICE, Op.READ, Perm.DENY))
    assert a.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "public")
    assert not a.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "secret-plans")
    assert a.authorize(ALICE, HOST, Op.WRITE, RT.TOPIC, "secret-plans")
    assert a.authorize(BOB, HOST, Op.READ, RT.TOPIC, "secret-plans")


def test_deny_all_denies_every_operation():
    a = authz(acl(RT.TOPIC, "t", PT.LITERAL, ALICE, Op.READ, Perm.ALLOW),
              acl(RT.TOPIC, "t", PT.LITERAL, ALICE, Op.ALL, Perm.DENY))
    for op in (Op.READ, Op.WRITE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS):
        assert not a.authorize(ALICE, HOST, op, RT.TOPIC, "t")


def test_implied_operations_only_for_allow():
    for granted in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.DESCRIBE):
        assert authz(acl(RT.TOPIC, "t", PT.LITERAL, ALICE, granted, Perm.ALLOW)).authorize(
            ALICE, HOST, Op.DESCRIBE, RT.TOPIC, "t"), granted
    for granted in (Op.CREATE, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS, Op.CLUSTER_ACTION):
        if granted in (Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS):
            continue
        assert not authz(acl(RT.TOPIC, "t", PT.LITERAL, ALICE, granted, Perm.ALLOW)).authorize(
            ALICE, HOST, Op.DESCRIBE, RT.TOPIC, "t"), granted
    assert authz(acl(RT.TOPIC, "t", PT.LITERAL, ALICE, Op.ALTER_CONFIGS, Perm.ALLOW)).authorize(
        ALICE, HOST, Op.DESCRIBE_CONFIGS, RT.TOPIC, "t")
    assert not authz(acl(RT.TOPIC, "t", PT.LITERAL, ALICE, Op.DESCRIBE_CONFIGS, Perm.ALLOW)).authorize(
        ALICE, HOST, Op.ALTER_CONFIGS, RT.TOPIC, "t")
    # READ does not imply WRITE, nor DESCRIBE imply READ
    a = authz(acl(RT.TOPIC, "t", PT.LITERAL, ALICE, Op.READ, Perm.ALLOW))
    assert not a.authorize(ALICE, HOST, Op.WRITE, RT.TOPIC, "t")
    # a DENY on READ does not deny DESCRIBE (Kafka: implication is for ALLOW only)
    a = authz(acl(RT.TOPIC, "t", PT.LITERAL, ALICE, Op.DESCRIBE, Perm.ALLOW),
              acl(RT.TOPIC, "t", PT.LITERAL, ALICE, Op.READ, Perm.DENY))
    assert a.authorize(ALICE, HOST, Op.DESCRIBE, RT.TOPIC, "t")
    assert not a.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "t")


def test_hosts():
    a = authz(acl(RT.GROUP, "g", PT.LITERAL, ALICE, Op.READ, Perm.ALLOW, host="192.0.2.1"),
              acl(RT.GROUP, "g", PT.LITERAL, ALICE, Op.READ, Perm.DENY, host="192.0.2.66"))
    assert a.authorize(ALICE, "192.0.2.1", Op.READ, RT.GROUP, "g")
    assert not a.authorize(ALICE, "192.0.2.2", Op.READ, RT.GROUP, "g")
    assert not a.authorize(ALICE, "192.0.2.66", Op.READ, RT.GROUP, "g")


def test_super_users_and_allow_everyone_if_no_acl_found():
    assert parse_super_users(" User:admin ; User:CN=ops,O=acme ;") == {"User:admin", "User:CN=ops,O=acme"}
    a = authz(acl(RT.TOPIC, "t", PT.LITERAL, ALICE, Op.ALL, Perm.DENY), super_users={"User:admin"})
    assert a.authorize("User:admin", HOST, Op.ALTER, RT.CLUSTER, "kafka-cluster")
    assert a.authorize("User:admin", HOST, Op.READ, RT.TOPIC, "t")  # super users ignore DENY
    # default: no ACL -> denied
    assert not a.authorize(BOB, HOST, Op.READ, RT.TOPIC, "other")
    b = authz(acl(RT.TOPIC, "t", PT.LITERAL, ALICE, Op.READ, Perm.ALLOW), allow_everyone_if_no_acl_found=True)
    assert b.authorize(BOB, HOST, Op.READ, RT.TOPIC, "other")       # no ACL on "other": allowed
    assert not b.authorize(BOB, HOST, Op.READ, RT.TOPIC, "t")       # "t" has ACLs, none for bob
    assert b.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "t")
    # a prefixed ACL for someone else also counts as "an ACL was found"
    c = authz(acl(RT.TOPIC, "te", PT.PREFIXED, ALICE, Op.WRITE, Perm.ALLOW), allow_everyone_if_no_acl_found=True)
    assert not c.authorize(BOB, HOST, Op.READ, RT.TOPIC, "test")
    assert c.authorize(BOB, HOST, Op.READ, RT.TOPIC, "other")


def test_wildcard_principal_and_principal_types():
    a = authz(acl(RT.TOPIC, "t", PT.LITERAL, "User:*", Op.READ, Perm.ALLOW))
    assert a.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "t")
    assert a.authorize("User:ANONYMOUS", HOST, Op.READ, RT.TOPIC, "t")
    # Kafka matches an ACL's "User:*" against any session principal, whatever its type
    assert a.authorize("Group:ops", HOST, Op.READ, RT.TOPIC, "t")
    # but "Group:*" is no wildcard: only "User:*" is
    b = authz(acl(RT.TOPIC, "t", PT.LITERAL, "Group:*", Op.READ, Perm.ALLOW))
    assert not b.authorize("Group:ops", HOST, Op.READ, RT.TOPIC, "t")


def test_authorized_operations_bits():
    a = authz(acl(RT.TOPIC, "t", PT.LITERAL, ALICE, Op.WRITE, Perm.ALLOW),
              acl(RT.TOPIC, "t", PT.LITERAL, ALICE, Op.ALTER_CONFIGS, Perm.ALLOW))
    bits = a.authorized_operations(ALICE, HOST, RT.TOPIC, "t")
    assert bits == (1 << Op.WRITE) | (1 << Op.DESCRIBE) | (1 << Op.ALTER_CONFIGS) | (1 << Op.DESCRIBE_CONFIGS)
    full = authz(super_users={ALICE}).authorized_operations(ALICE, HOST, RT.GROUP, "g")
    assert full == (1 << Op.READ) | (1 << Op.DESCRIBE) | (1 << Op.DELETE)


def test_authorize_by_resource_type():
    """Kafka's AuthorizerInterfaceDefaultTest cases."""
    def by_type(*bindings, **kw):
        return authz(*bindings, **kw).authorize_by_resource_type(ALICE, HOST, Op.WRITE, RT.TOPIC)
    assert not by_type()
    assert by_type(acl(RT.TOPIC, "t", PT.LITERAL, ALICE, Op.WRITE, Perm.ALLOW))
    assert by_type(acl(RT.TOPIC, "t", PT.PREFIXED, ALICE, Op.ALL, Perm.ALLOW))
    assert not by_type(acl(RT.TOPIC, "t", PT.LITERAL, ALICE, Op.WRITE, Perm.ALLOW),
                       acl(RT.TOPIC, "t", PT.LITERAL, ALICE, Op.WRITE, Perm.DENY))
    # a prefixed DENY dominates allows under it, not beside it
    assert not by_type(acl(RT.TOPIC, "abc", PT.LITERAL, ALICE, Op.WRITE, Perm.ALLOW),
                       acl(RT.TOPIC, "ab", PT.PREFIXED, ALICE, Op.WRITE, Perm.DENY))
    assert by_type(acl(RT.TOPIC, "abc", PT.LITERAL, ALICE, Op.WRITE, Perm.ALLOW),
                   acl(RT.TOPIC, "abd", PT.PREFIXED, ALICE, Op.WRITE, Perm.DENY))
    assert not by_type(acl(RT.TOPIC, "*", PT.LITERAL, ALICE, Op.WRITE, Perm.ALLOW),
                       acl(RT.TOPIC, "*", PT.LITERAL, ALICE, Op.WRITE, Perm.DENY))
    assert by_type(super_users={ALICE})
    assert by_type(allow_everyone_if_no_acl_found=True)
    assert not by_type(acl(RT.TOPIC, "t", PT.LITERAL, BOB, Op.WRITE, Perm.ALLOW))
    assert not by_type(acl(RT.TOPIC, "t", PT.LITERAL, ALICE, Op.WRITE, Perm.ALLOW, host="192.0.2.9"))


def test_binding_validation_messages():
    a = StandardAuthorizer()
    bad = [
        (binding(1, "t", 3, ALICE, "*", 3, 3), "Invalid resourceType ANY"),
        (binding(99, "t", 3, ALICE, "*", 3, 3), "Invalid resourceType UNKNOWN"),
        (binding(2, "t", 2, ALICE, "*", 3, 3), "Invalid patternType MATCH"),
        (binding(2, "t", 3, ALICE, "*", 1, 3), "Invalid operation ANY"),
        (binding(2, "t", 3, ALICE, "*", 3, 1), "Invalid permissionType ANY"),
        (binding(2, "", 3, ALICE, "*", 3, 3), "Invalid empty resource name"),
        (binding(4, "my-cluster", 3, ALICE, "*", 7, 3), "The only valid name for the CLUSTER resource is kafka-cluster"),
        (binding(2, "t", 3, "alice", "*", 3, 3), "Could not parse principal from `alice` (no colon is present separating the principal type from the principal name)"),
    ]
    results = a.create_acls([b for b, _ in bad] + [binding(2, "t", 3, ALICE, "*", 3, 3)])
    assert [str(r) if r else None for r in results] == [m for _, m in bad] + [None]
    assert len(a) == 1
    assert a.create_acls([binding(2, "t", 3, ALICE, "*", 3, 3)]) == [None]  # already there: success
    assert len(a) == 1


def test_pattern_filter_matches_like_kafka():
    lit, pre, wild = RP(RT.TOPIC, "Name", PT.LITERAL), RP(RT.TOPIC, "Na", PT.PREFIXED), RP(RT.TOPIC, "*", PT.LITERAL)
    assert RPF(RT.ANY, None, PT.ANY).matches(lit)
    assert not RPF(RT.GROUP, None, PT.ANY).matches(lit)
    assert RPF(RT.TOPIC, "Name", PT.LITERAL).matches(lit)
    assert not RPF(RT.TOPIC, "Name", PT.PREFIXED).matches(lit)
    assert RPF(RT.TOPIC, "Na", PT.ANY).matches(pre)
    assert not RPF(RT.TOPIC, "Name", PT.ANY).matches(pre)        # ANY compares names exactly
    assert RPF(RT.TOPIC, "Name", PT.MATCH).matches(lit)
    assert RPF(RT.TOPIC, "Name", PT.MATCH).matches(pre)          # MATCH: patterns applying to Name
    assert RPF(RT.TOPIC, "Name", PT.MATCH).matches(wild)
    assert not RPF(RT.TOPIC, "Nam", PT.MATCH).matches(lit)
    assert not RPF(RT.TOPIC, "N", PT.MATCH).matches(pre)
    assert RPF(RT.TOPIC, "*", PT.LITERAL).matches(wild)
    assert not RPF(RT.TOPIC, "*", PT.LITERAL).matches(lit)       # a filter's "*" is the literal name


def test_describe_and_delete_with_filters():
    bs = [acl(RT.TOPIC, "a", PT.LITERAL, ALICE, Op.READ, Perm.ALLOW),
          acl(RT.TOPIC, "a", PT.PREFIXED, BOB, Op.WRITE, Perm.DENY),
          acl(RT.GROUP, "g", PT.LITERAL, ALICE, Op.READ, Perm.ALLOW)]
    a = authz(*bs)
    assert a.acls(AclBindingFilter()) == bs
    assert a.acls(AclBindingFilter(entry=AceF(principal=ALICE))) == [bs[0], bs[2]]
    assert a.acls(AclBindingFilter(RPF(RT.TOPIC, "abc", PT.MATCH))) == [bs[1]]
    assert a.acls(binding_filter(2, "a", 1, None, None, 1, 2)) == [bs[1]]
    res = a.delete_acls([AclBindingFilter(RPF(RT.TOPIC)), binding_filter(2, None, 0, None, None, 1, 1),
                         AclBindingFilter(RPF(RT.TOPIC, "a", PT.LITERAL))])
    assert res[0] == bs[:2]
    assert isinstance(res[1], AclError) and str(res[1]) == "Unknown patternFilter."
    assert res[2] == [bs[0]]  # a filter reports what it matched, even if another filter also did
    assert a.acls(AclBindingFilter()) == [bs[2]]
    assert not a.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "a")  # decision cache was dropped


def test_store_survives_restart_and_keeps_order(tmp_path):
    bs = [acl(RT.TOPIC, "a", PT.LITERAL, ALICE, Op.READ, Perm.ALLOW),
          acl(RT.TRANSACTIONAL_ID, "tx-", PT.PREFIXED, BOB, Op.WRITE, Perm.DENY, host="10.0.0.1")]
    a = StandardAuthorizer(store=AclStore(tmp_path))
    a.create_acls(bs)
    doc = json.loads((tmp_path / "acls.json").read_text())
    assert doc["version"] == 1 and doc["acls"][1]["resource_type"] == "TRANSACTIONAL_ID"
    b = StandardAuthorizer(store=AclStore(tmp_path))
    assert b.acls(AclBindingFilter()) == bs
    assert b.authorize(ALICE, HOST, Op.DESCRIBE, RT.TOPIC, "a")
    b.delete_acls([AclBindingFilter(RPF(RT.TOPIC))])
    assert StandardAuthorizer(store=AclStore(tmp_path)).acls(AclBindingFilter()) == [bs[1]]
    assert sorted(os.listdir(tmp_path)) == ["acls.json"]  # no temp file left behind


def test_store_survives_kill_9_mid_run(tmp_path):
    """A process adding ACLs one request at a time is killed; what it acknowledged is there and
    the file is never torn."""
    code = f"""
from broker.security.authorizer import AclStore, StandardAuthorizer
from broker.security.acl import binding
a = StandardAuthorizer(store=AclStore({str(tmp_path)!r}))
for i in range(100000):
    a.create_acls([binding(2, "t%d" % i, 3, "User:u", "*", 3, 3)])
    print(i, flush=True)
"""
    acked = acked_before_kill_9(code)
    names = {b.pattern.name for b in StandardAuthorizer(store=AclStore(tmp_path)).acls(AclBindingFilter())}
    assert {f"t{i}" for i in range(acked + 1)} <= names


# ---- against a brute-force model ------------------------------------------------------------------
_NAMES = st.sampled_from(["a", "ab", "abc", "b", "*", "ab*"])
_BINDINGS = st.builds(
    lambda rt, name, pt, pr, host, op, perm: acl(rt, name, pt, pr, op, perm, host=host),
    st.sampled_from([RT.TOPIC, RT.GROUP]), _NAMES, st.sampled_from([PT.LITERAL, PT.PREFIXED]),
    st.sampled_from([ALICE, BOB, "User:*"]), st.sampled_from(["*", HOST, "10.0.0.1"]),
    st.sampled_from([Op.ALL, Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS]),
    st.sampled_from([Perm.ALLOW, Perm.DENY]))


def model(bindings, principal, host, op, rt, name, allow_if_none):
    applies = [b for b in bindings if b.pattern.resource_type == rt and (
        (b.pattern.pattern_type == PT.LITERAL and b.pattern.name in (name, "*"))
        or (b.pattern.pattern_type == PT.PREFIXED and name.startswith(b.pattern.name)))]
    hits = [b for b in applies if ace_matches(b.entry, principal, host, op)]
    if any(b.entry.permission == Perm.DENY for b in hits):
        return False
    if hits:
        return True
    return allow_if_none and not applies


@settings(max_examples=200, deadline=None)
@given(st.lists(_BINDINGS, max_size=8), st.sampled_from([ALICE, BOB]), st.sampled_from([HOST, "10.0.0.1"]),
       st.sampled_from([Op.READ, Op.WRITE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS]),
       st.sampled_from([RT.TOPIC, RT.GROUP]), st.sampled_from(["a", "ab", "abc", "abd", "b", "c"]), st.booleans())
def test_decisions_match_brute_force(bindings, principal, host, op, rt, name, allow_if_none):
    a = StandardAuthorizer(allow_everyone_if_no_acl_found=allow_if_none)
    a.create_acls(bindings)
    want = model(bindings, principal, host, op, rt, name, allow_if_none)
    assert a.authorize(principal, host, op, rt, name, log_denied=False) == want
    assert a.authorize(principal, host, op, rt, name, log_denied=False) == want  # cached
