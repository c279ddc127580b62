"""Delegation tokens (KIP-48): the rules as pure functions, then one secured broker over real
sockets: who may create, renew, expire and describe tokens, a SCRAM login with a token
(``tokenauth=true``), tokens surviving a restart and expired tokens swept away.

Mirrors Kafka's DelegationTokenEndToEndAuthorizationTest / DelegationTokenRequestsTest
(create over SASL, the token login, renew and expire by owner and renewer, describe by owner).
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import time

import pytest
from hypothesis import given, strategies as st

from broker.security.delegation import (
    TokenInformation, TokenSettings, allow_token_requests, expiration, new_token, renewal, visible,
)
from hourglass.cli.wire import WireClient, WireError
from protocol.api_keys import APIS
from protocol.errors import ErrorCode as E
from tests.helpers.broker import BrokerProcess

SECRET_KEY = "token-signing-key"
SETTINGS = TokenSettings(SECRET_KEY, max_lifetime_ms=10_000, expiry_time_ms=3_000)
USERS = {"alice": "alice-secret", "bob": "bob-secret", "carol": "carol-secret", "admin": "admin-secret"}


# ---- the rules -------------------------------------------------------------------------------------
def test_new_token_times():
    t = new_token(SETTINGS, 1000, "User:alice", "User:alice", [], -1)
    assert (t.issue_ms, t.expiry_ms, t.max_ms) == (1000, 4000, 11_000)
    t = new_token(SETTINGS, 1000, "User:alice", "User:alice", [], 2000)  # asks for less than the max
    assert (t.expiry_ms, t.max_ms) == (3000, 3000)
    t = new_token(SETTINGS, 1000, "User:alice", "User:alice", [], 50_000)  # asks for more: capped
    assert t.max_ms == 11_000
    big = TokenSettings("k", 2**63 - 1, 2**63 - 1)  # saturates as Kafka's sum does
    assert new_token(big, 5, "User:a", "User:a", [], -1).max_ms == 2**63 - 1


@given(now=st.integers(0, 10**12), period=st.integers(-10, 10**6), age=st.integers(0, 20_000))
def test_renewal_never_passes_the_max_and_only_owner_or_renewer(now, period, age):
    t = new_token(SETTINGS, now, "User:alice", "User:alice", ["User:bob"], -1)
    at = now + age
    for who in ("User:alice", "User:bob", "User:carol"):
        err, expiry = renewal(SETTINGS, t, who, period, at)
        if t.expired(at):
            assert (err, expiry) == (E.DELEGATION_TOKEN_EXPIRED, 0)
        elif who == "User:carol":
            assert (err, expiry) == (E.DELEGATION_TOKEN_OWNER_MISMATCH, 0)
        else:
            life = min(period, SETTINGS.expiry_time_ms) if period > 0 else SETTINGS.expiry_time_ms
            assert err == 0 and expiry == min(t.max_ms, at + life) <= t.max_ms


def test_expiration_rules():
    t = TokenInformation("id", "User:alice", "User:alice", ("User:bob",), 0, 100, 200)
    assert expiration(None, "User:alice", 5, 50) == (E.DELEGATION_TOKEN_NOT_FOUND, 0, False)
    assert expiration(t, "User:carol", -1, 50) == (E.DELEGATION_TOKEN_OWNER_MISMATCH, 0, False)
    assert expiration(t, "User:bob", -1, 500) == (0, 500, True)  # removed at once, even when expired
    assert expiration(t, "User:alice", 5, 500) == (E.DELEGATION_TOKEN_EXPIRED, 0, False)
    assert expiration(t, "User:alice", 500, 50) == (0, 200, False)  # never past the max
    assert expiration(t, "User:alice", 10, 50) == (0, 60, False)


def test_who_may_ask_for_tokens():
    assert not allow_token_requests("PLAINTEXT", "User:ANONYMOUS", False)
    assert not allow_token_requests("SSL", "User:ANONYMOUS", False)
    assert allow_token_requests("SSL", "User:CN=alice", False)
    assert allow_token_requests("SASL_PLAINTEXT", "User:alice", False)
    assert not allow_token_requests("SASL_SSL", "User:alice", True)


def test_visible():
    t = TokenInformation("id", "User:alice", "User:alice", ("User:bob",), 0, 100, 200)
    no = lambda _: False  # noqa: E731
    assert visible(t, "User:alice", None, no, no) and visible(t, "User:bob", None, no, no)
    assert not visible(t, "User:carol", None, no, no)
    assert visible(t, "User:carol", None, lambda tid: tid == "id", no)
    assert visible(t, "User:carol", None, no, lambda owner: owner == "User:alice")
    assert visible(t, "User:alice", ["User:bob"], no, no)  # bob renews it
    assert not visible(t, "User:alice", ["User:carol"], no, no)


# ---- one secured broker ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    from broker.security.scram import ScramCredentialStore, ScramMechanism, credential_from_password
    from broker.security.state import security_dir
    d = tmp_path_factory.mktemp("tokens")
    store = ScramCredentialStore(security_dir([d / "data"]))
    for m in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512):
        for user, pw in USERS.items():
            store.apply({user: (m, credential_from_password(m, pw))}, {})
    b = BrokerProcess(d / "data", {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
        "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin", "allow.everyone.if.no.acl.found": "true",
        "delegation.token.secret.key": SECRET_KEY,
        "delegation.token.expiry.check.interval.ms": "200"}).start()
    yield b
    b.stop()


def client(b, user: str, *, mechanism="SCRAM-SHA-512", password=None, token=False) -> WireClient:
    extra = ' tokenauth="true"' if token else ""
    return WireClient(b.listeners["SASL_PLAINTEXT"], props={
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
        "sasl.jaas.config": f'org.apache.kafka.common.security.scram.ScramLoginModule required '
                            f'username="{user}" password="{password or USERS[user]}"{extra};'})


def body(api: int, **fields):
    return APIS[api].request.cls(**fields)


def create(c, version=3, renewers=(), max_lifetime_ms=-1, owner=None):
    return c.request(38, version, body(
        38, owner_principal_type="User" if owner else None, owner_principal_name=owner,
        renewers=[APIS[38].request.cls.CreatableRenewers(principal_type=t, principal_name=n)
                  for t, n in (r.split(":") for r in renewers)],
        max_lifetime_ms=max_lifetime_ms))


def describe(c, owners=None, version=3):
    o = None if owners is None else [APIS[41].request.cls.DescribeDelegationTokenOwner(
        principal_type="User", principal_name=n) for n in owners]
    return c.request(41, version, body(41, owners=o))


def test_plaintext_may_not_ask(broker):
    with WireClient(broker.listeners["PLAINTEXT"]) as c:
        r = create(c)
        assert r.error_code == E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
        assert (r.principal_name, r.issue_timestamp_ms, r.token_id, r.hmac) == ("ANONYMOUS", -1, "", b"")
        assert c.request(39, 2, body(39, hmac=b"x", renew_period_ms=1)).error_code == \
            E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
        assert describe(c).error_code == E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED


def test_create_login_renew_expire(broker):
    with client(broker, "alice") as alice:
        r = create(alice, renewers=["User:bob"])
        assert r.error_code == 0 and (r.principal_name, r.token_requester_principal_name) == ("alice", "alice")
        assert r.hmac == hmac.new(SECRET_KEY.encode(), r.token_id.encode(), hashlib.sha512).digest()
        assert r.max_timestamp_ms - r.issue_timestamp_ms == 604_800_000  # the default max lifetime
        assert r.expiry_timestamp_ms - r.issue_timestamp_ms == 86_400_000
        assert create(alice, renewers=["Group:ops"]).error_code == E.INVALID_PRINCIPAL_TYPE
        seen = describe(alice)
        assert seen.error_code == 0 and r.token_id in [t.token_id for t in seen.tokens]
        tok = next(t for t in seen.tokens if t.token_id == r.token_id)
        assert [(x.principal_type, x.principal_name) for x in tok.renewers] == [("User", "bob")]
        assert tok.token_requester_principal_name == "alice" and tok.hmac == r.hmac
        assert describe(alice, owners=[]).tokens == []
        assert r.token_id in [t.token_id for t in describe(alice, owners=["bob"]).tokens]  # bob renews it
    password = base64.b64encode(r.hmac).decode()
    for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        with client(broker, r.token_id, mechanism=mech, password=password, token=True) as t:
            m = t.request(3, 12, body(3, topics=None, allow_auto_topic_creation=False,
                                      include_topic_authorized_operations=False))
            assert m.brokers  # logged in as alice with the token
            assert create(t).error_code == E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED  # no token from a token
            assert describe(t).error_code == E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    with pytest.raises(WireError):  # a wrong token password fails the login
        client(broker, r.token_id, password="bm90LXRoZS1obWFj", token=True).request(3, 12, body(3, topics=[]))
    with pytest.raises(WireError):  # the token id is no user name without tokenauth
        client(broker, r.token_id, password=password).request(3, 12, body(3, topics=[]))
    with client(broker, "bob") as bob:
        got = bob.request(39, 2, body(39, hmac=r.hmac, renew_period_ms=1000))
        assert got.error_code == 0 and got.expiry_timestamp_ms <= int(time.time() * 1000) + 1000
    with client(broker, "carol") as carol:
        assert carol.request(39, 2, body(39, hmac=r.hmac, renew_period_ms=1000)).error_code == \
            E.DELEGATION_TOKEN_OWNER_MISMATCH
        assert carol.request(40, 2, body(40, hmac=r.hmac, expiry_time_period_ms=-1)).error_code == \
            E.DELEGATION_TOKEN_OWNER_MISMATCH
        assert carol.request(39, 2, body(39, hmac=b"unknown", renew_period_ms=1)).error_code == \
            E.DELEGATION_TOKEN_NOT_FOUND
    with client(broker, "alice") as alice:
        got = alice.request(40, 2, body(40, hmac=r.hmac, expiry_time_period_ms=-1))
        assert got.error_code == 0
        assert r.token_id not in [t.token_id for t in describe(alice).tokens]
    with pytest.raises(WireError):  # the expired token no longer logs in
        client(broker, r.token_id, password=password, token=True).request(3, 12, body(3, topics=[]))


def test_acls_on_other_owners_and_describe(broker):
    from broker.security.acl import AclOperation as Op, AclPermissionType as P, ResourceType as RT
    with client(broker, "admin") as admin:
        # alice may not create tokens for bob once bob's USER resource has an ACL (admin only)
        acl = APIS[30].request.cls
        r = admin.request(30, 3, acl(creations=[acl.AclCreation(
            resource_type=int(RT.USER), resource_name="User:bob", resource_pattern_type=3,
            principal="User:admin", host="*", operation=int(Op.CREATE_TOKENS), permission_type=int(P.ALLOW)),
            acl.AclCreation(resource_type=int(RT.USER), resource_name="User:bob", resource_pattern_type=3,
                            principal="User:admin", host="*", operation=int(Op.DESCRIBE_TOKENS),
                            permission_type=int(P.ALLOW)),
            # every token now has an ACL (admin may describe them all), so the others see only their own
            acl.AclCreation(resource_type=int(RT.DELEGATION_TOKEN), resource_name="*", resource_pattern_type=3,
                            principal="User:admin", host="*", operation=int(Op.DESCRIBE),
                            permission_type=int(P.ALLOW))]))
        assert [x.error_code for x in r.results] == [0, 0, 0]
        mine = create(admin, owner="bob")
        assert mine.error_code == 0 and (mine.principal_name, mine.token_requester_principal_name) == ("bob", "admin")
    with client(broker, "alice") as alice:
        denied = create(alice, owner="bob")
        assert denied.error_code == E.DELEGATION_TOKEN_AUTHORIZATION_FAILED and denied.principal_name == "bob"
        assert mine.token_id not in [t.token_id for t in describe(alice).tokens]  # bob's token: hidden
    with client(broker, "bob") as bob:
        assert mine.token_id in [t.token_id for t in describe(bob).tokens]  # the owner sees it
    with client(broker, "admin") as admin:
        assert mine.token_id in [t.token_id for t in describe(admin, owners=["bob"]).tokens]


@pytest.mark.parametrize("crash", [False, True], ids=["clean", "kill-9"])
def test_tokens_survive_a_restart_and_expired_ones_are_swept(broker, crash):
    with client(broker, "alice") as alice:
        keep = create(alice)
        short = create(alice, max_lifetime_ms=300)
        assert keep.error_code == short.error_code == 0  # answered: stored durably
    broker.restart(crash=crash)
    with client(broker, "alice") as alice:
        ids = {t.token_id: t for t in describe(alice).tokens}
        assert keep.token_id in ids and ids[keep.token_id].hmac == keep.hmac
        deadline = time.monotonic() + 20
        while short.token_id in {t.token_id for t in describe(alice).tokens}:
            assert time.monotonic() < deadline, "the expired token was not swept"
            time.sleep(0.1)
    with client(broker, keep.token_id, password=base64.b64encode(keep.hmac).decode(), token=True) as t:
        assert t.request(3, 12, body(3, topics=[])).brokers


def test_tokens_off_without_a_secret_key():
    """No ``delegation.token.secret.key``: Kafka's controller answers DELEGATION_TOKEN_AUTH_DISABLED
    (times 0) and its broker the describe; the connection checks still come first."""
    from hourglass.embedded import EmbeddedBroker
    with EmbeddedBroker(security={"protocol": "SASL_PLAINTEXT", "mechanism": "SCRAM-SHA-512"}) as b:
        with WireClient(b.bootstrap_servers, props=b.java_properties) as c:
            r = create(c)
            assert r.error_code == E.DELEGATION_TOKEN_AUTH_DISABLED
            assert (r.issue_timestamp_ms, r.expiry_timestamp_ms, r.max_timestamp_ms, r.token_id) == (0, 0, 0, "")
            assert create(c, renewers=["Group:ops"]).error_code == E.INVALID_PRINCIPAL_TYPE  # the broker's check
            assert describe(c).error_code == E.DELEGATION_TOKEN_AUTH_DISABLED
            for api, f in ((39, "renew_period_ms"), (40, "expiry_time_period_ms")):
                got = c.request(api, 2, body(api, hmac=b"x", **{f: 1}))
                assert (got.error_code, got.expiry_timestamp_ms) == (E.DELEGATION_TOKEN_AUTH_DISABLED, 0)
