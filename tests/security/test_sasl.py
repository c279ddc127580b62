"""SASL pieces without sockets: JAAS syntax, SCRAM credentials and store, the mechanisms
against independent client implementations (kafka-python's PLAIN/SCRAM/OAUTHBEARER clients,
``scramp``'s SCRAM client, PyJWT-signed tokens), and the per-connection authenticator.
"""
from __future__ import annotations

import base64
import json
import os
import time

import pytest

from broker.security import jaas
from broker.security.authenticator import (
    API_VERSIONS, SASL_AUTHENTICATE, SASL_HANDSHAKE, SaslAuthenticator, State,
)
from broker.security.oauth import JwksValidator, TokenValidationError, UnsecuredJwsValidator
from broker.security.sasl import (
    AuthenticationFailed, OAuthBearerServer, PlainServer, SaslFailure, SaslServerFactory, ScramServer,
    SecurityConfigError,
)
from broker.security.scram import (
    ScramCredentialStore, ScramMechanism, credential_from_password, credential_from_salted_password,
    salted_password,
)
from protocol.errors import ErrorCode as E
from tests.helpers.crash import acked_before_kill_9

NOW = 1_700_000_000_000
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')


# ---- JAAS ---------------------------------------------------------------------------------------
def test_jaas_parses_kafka_syntax():
    m = jaas.single_module(PLAIN_JAAS)
    assert m.class_name == "org.apache.kafka.common.security.plain.PlainLoginModule"
    assert m.flag == "REQUIRED"
    assert m.options == {"username": "admin", "password": "admin-secret", "user_admin": "admin-secret",
                         "user_alice": "alice-secret"}
    m = jaas.single_module("""
        // a comment
        org.apache.kafka.common.security.scram.ScramLoginModule Required /* inline */
          username=bob password='p\\"w;=x' ;""")
    assert (m.flag, m.options) == ("REQUIRED", {"username": "bob", "password": 'p"w;=x'})
    assert jaas.single_module("a.B optional;").options == {}


@pytest.mark.parametrize("text,message", [
    ("", "JAAS config property does not contain any login modules"),
    ("a.B required; c.D required;", "JAAS config property contains 2 login modules, should be 1 module"),
    ("a.B", "Login module control flag not specified in JAAS config"),
    ("a.B mandatory;", "Invalid login module control flag 'mandatory' in JAAS config"),
    ("a.B required user_x=;", "Value not specified for key 'user_x' in JAAS config"),
    ("a.B required user_x=123;", "Value not specified for key 'user_x' in JAAS config"),
    ('a.B required user_x="s3cret"', "JAAS config entry not terminated by semi-colon"),
])
def test_jaas_errors_like_kafka_and_never_echo_values(text, message):
    with pytest.raises(jaas.JaasError) as e:
        jaas.single_module(text)
    assert str(e.value) == message
    assert "s3cret" not in str(e.value)


# ---- PLAIN --------------------------------------------------------------------------------------
def kp_client(mech, **cfg):
    from kafka.net.sasl import get_sasl_mechanism
    return get_sasl_mechanism(mech)(sasl_mechanism=mech, security_protocol="SASL_SSL", **cfg)


def run_exchange(server, client):
    """Drive a kafka-python client mechanism against one of ours, as SaslAuthenticate would."""
    while not client.is_done():
        client.receive(server.evaluate(client.auth_bytes(), NOW))
    return client.is_authenticated()


def test_plain_with_kafka_python_client():
    users = jaas.single_module(PLAIN_JAAS).options
    users = {k[5:]: v for k, v in users.items() if k.startswith("user_")}
    s = PlainServer(users)
    assert run_exchange(s, kp_client("PLAIN", sasl_plain_username="alice", sasl_plain_password="alice-secret"))
    assert (s.complete, s.authorization_id) == (True, "alice")
    for user, pw in (("alice", "nope"), ("mallory", "alice-secret")):
        with pytest.raises(AuthenticationFailed, match="^Authentication failed: Invalid username or password$"):
            run_exchange(PlainServer(users), kp_client("PLAIN", sasl_plain_username=user, sasl_plain_password=pw))
    with pytest.raises(AuthenticationFailed, match="authorization id that is different"):
        PlainServer(users).evaluate(b"admin\0alice\0alice-secret", NOW)
    assert PlainServer(users).evaluate(b"\0alice\0alice-secret", NOW) == b""
    for bad in (b"alice\0alice-secret", b"\0\0pw", b"\0alice\0", b"\xff\0a\0b"):
        with pytest.raises(SaslFailure):
            PlainServer(users).evaluate(bad, NOW)


# ---- SCRAM --------------------------------------------------------------------------------------
@pytest.mark.parametrize("mech", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_with_two_independent_clients(mech, tmp_path):
    import scramp
    m = ScramMechanism.from_name(mech)
    store = ScramCredentialStore(tmp_path)
    store.apply({"alice": (m, credential_from_password(m, "alice-secret", 4096)),
                 "we,ird=name": (m, credential_from_password(m, "pw", 4096))}, {})
    s = ScramServer(m, store)
    assert run_exchange(s, kp_client(mech, sasl_plain_username="alice", sasl_plain_password="alice-secret"))
    assert (s.complete, s.authorization_id) == (True, "alice")
    # scramp's own client, with a user name that needs SCRAM's =2C / =3D escaping
    c = scramp.ScramClient([mech], "we,ird=name", "pw")
    s = ScramServer(m, store)
    c.set_server_first(s.evaluate(c.get_client_first().encode(), NOW).decode())
    c.set_server_final(s.evaluate(c.get_client_final().encode(), NOW).decode())
    assert s.authorization_id == "we,ird=name"
    with pytest.raises(SaslFailure, match="Invalid client credentials"):
        run_exchange(ScramServer(m, store), kp_client(mech, sasl_plain_username="alice", sasl_plain_password="x"))
    with pytest.raises(SaslFailure, match="Invalid user credentials"):
        run_exchange(ScramServer(m, store), kp_client(mech, sasl_plain_username="bob", sasl_plain_password="x"))
    other = ScramMechanism.SCRAM_SHA_512 if m == ScramMechanism.SCRAM_SHA_256 else ScramMechanism.SCRAM_SHA_256
    with pytest.raises(SaslFailure, match="Invalid user credentials"):  # no credential for this mechanism
        run_exchange(ScramServer(other, store), kp_client(other.mechanism_name, sasl_plain_username="alice",
                                                          sasl_plain_password="alice-secret"))


def test_scram_accepts_librdkafka_before_2_6_1_repeated_nonce():
    """librdkafka < 2.6.1 writes r=<client nonce><server nonce> (the server nonce already starts
    with the client's); Kafka 3.8.1-3.9 accept it, and so do we, checking the proof over what the
    client signed. A nonce that is neither form still fails."""
    import base64 as b64
    import hashlib
    import hmac as h
    m = ScramMechanism.SCRAM_SHA_256
    store = ScramCredentialStore(None)
    store.users["alice"] = {m: credential_from_password(m, "pw", 4096, b"0123456789abcdef")}

    def final(server_first: str, r: str) -> bytes:
        attrs = dict(x.split("=", 1) for x in server_first.split(","))
        salted = hashlib.pbkdf2_hmac("sha256", b"pw", b64.b64decode(attrs["s"]), int(attrs["i"]))
        client_key = h.new(salted, b"Client Key", "sha256").digest()
        without_proof = f"c=biws,r={r}"
        auth = f"n=alice,r=cnonce123,{server_first},{without_proof}".encode()
        sig = h.new(hashlib.sha256(client_key).digest(), auth, "sha256").digest()
        return f"{without_proof},p={b64.b64encode(bytes(a ^ b for a, b in zip(client_key, sig))).decode()}".encode()

    for repeat, ok in ((True, True), (False, True)):
        s = ScramServer(m, store)
        first = s.evaluate(b"n,,n=alice,r=cnonce123", NOW).decode()
        nonce = first.split(",")[0][2:]
        s.evaluate(final(first, ("cnonce123" if repeat else "") + nonce), NOW)
        assert s.complete == ok
    s = ScramServer(m, store)
    first = s.evaluate(b"n,,n=alice,r=cnonce123", NOW).decode()
    with pytest.raises(SaslFailure):
        s.evaluate(final(first, "other" + first.split(",")[0][2:]), NOW)


def test_scram_authzid_must_be_the_user(tmp_path):
    m = ScramMechanism.SCRAM_SHA_256
    store = ScramCredentialStore(None)
    store.users["alice"] = {m: credential_from_password(m, "pw", 4096)}
    with pytest.raises(AuthenticationFailed, match="authorization id that is different"):
        ScramServer(m, store).evaluate(b"n,a=bob,n=alice,r=abcdefgh", NOW)
    # Kafka would accept authzid == user; scramp refuses any authzid (no stock client sends one)
    with pytest.raises(SaslFailure):
        ScramServer(m, store).evaluate(b"n,a=alice,n=alice,r=abcdefgh", NOW)


def test_credential_matches_a_salted_password_from_a_client():
    """What AlterUserScramCredentials carries (the client's salted password) and what
    ``hourglass users add`` computes from the password give the same credential."""
    m = ScramMechanism.SCRAM_SHA_512
    salt = b"0123456789abcdef"
    sp = hashlib_pbkdf2("sha512", b"alice-secret", salt, 4096)
    assert credential_from_salted_password(m, salt, sp, 4096) == credential_from_password(m, "alice-secret", 4096, salt)
    assert salted_password(m, "alice-secret", salt, 4096) == sp
    assert "alice" not in repr(credential_from_password(m, "alice", 4096)) and "hidden" in repr(
        credential_from_password(m, "alice", 4096))


def hashlib_pbkdf2(h, pw, salt, n):
    import hashlib
    return hashlib.pbkdf2_hmac(h, pw, salt, n)


def test_store_is_durable_private_and_holds_no_password(tmp_path):
    m256, m512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512
    s = ScramCredentialStore(tmp_path)
    s.apply({"alice": (m256, credential_from_password(m256, "alice-secret", 8192))}, {})
    s.apply({"alice": (m512, credential_from_password(m512, "alice-secret", 4096)),
             "bob": (m256, credential_from_password(m256, "bob-secret", 4096))}, {})
    path = tmp_path / "scram-credentials.json"
    assert os.stat(path).st_mode & 0o777 == 0o600
    text = path.read_text()
    assert "secret" not in text
    again = ScramCredentialStore(tmp_path)
    assert again.get("alice", m256).iterations == 8192 and again.get("alice", m512).iterations == 4096
    assert again.get("alice", m256) == s.get("alice", m256)
    again.apply({}, {"alice": m256, "bob": m256})
    third = ScramCredentialStore(tmp_path)
    assert list(third.users) == ["alice"] and list(third.users["alice"]) == [m512]
    assert sorted(os.listdir(tmp_path)) == ["scram-credentials.json"]


def test_store_survives_kill_9(tmp_path):
    code = f"""
from broker.security.scram import ScramCredentialStore, ScramMechanism, ScramCredential
m = ScramMechanism.SCRAM_SHA_256
s = ScramCredentialStore({str(tmp_path)!r})
for i in range(100000):
    s.apply({{"u%d" % i: (m, ScramCredential(b"s", b"k" * 32, b"v" * 32, 4096))}}, {{}})
    print(i, flush=True)
"""
    acked = acked_before_kill_9(code)
    users = ScramCredentialStore(tmp_path).users
    assert {f"u{i}" for i in range(acked + 1)} <= set(users)


# ---- OAUTHBEARER --------------------------------------------------------------------------------
def unsecured(claims: dict, header=None) -> str:
    enc = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).decode().rstrip("=")  # noqa: E731
    return f"{enc(header or {'alg': 'none'})}.{enc(claims)}."


class Tokens:
    """A kafka-python token provider."""
    def __new__(cls, token, extensions=None):
        from kafka.net.sasl.oauth import AbstractTokenProvider

        class P(AbstractTokenProvider):
            def token(self):
                return token

            def extensions(self):
                return extensions or {}
        return P()


def test_oauth_unsecured_with_kafka_python_client():
    v = UnsecuredJwsValidator({})
    good = unsecured({"sub": "alice", "exp": NOW / 1000 + 60, "iat": NOW / 1000, "scope": ["a", "b"]})
    s = OAuthBearerServer(v)
    assert run_exchange(s, kp_client("OAUTHBEARER", sasl_oauth_token_provider=Tokens(good, {"traceId": "x1"})))
    assert (s.authorization_id, s.credential_expiry_ms) == ("alice", NOW + 60_000)
    # an expired token: the JSON error challenge, the client's \x01, then failure with it
    s = OAuthBearerServer(v)
    expired = unsecured({"sub": "alice", "exp": NOW / 1000 - 1})
    with pytest.raises(AuthenticationFailed, match='^{"status":"invalid_token"}$'):
        run_exchange(s, kp_client("OAUTHBEARER", sasl_oauth_token_provider=Tokens(expired)))
    assert "Expiration Time" in s.failure_detail
    with pytest.raises(SaslFailure, match="Invalid OAUTHBEARER client first message"):
        OAuthBearerServer(v).evaluate(b"n,,auth=Bearer x", NOW)
    with pytest.raises(AuthenticationFailed, match=r"authorization id \(bob\)"):
        OAuthBearerServer(v).evaluate(f"n,a=bob,\x01auth=Bearer {good}\x01\x01".encode(), NOW)


@pytest.mark.parametrize("claims,header,detail", [
    ({"sub": "a"}, None, "No expiration time in JWT"),
    ({"exp": NOW / 1000 + 9}, None, "No principal name in JWT claim: sub"),
    ({"sub": "a", "exp": NOW / 1000 + 9}, {"alg": "HS256"}, "must have 'none' for an algorithm"),
    ({"sub": "a", "exp": NOW / 1000 + 9, "iat": NOW / 1000 + 5}, None, "Issued At value"),
    ({"sub": "a", "exp": "soon"}, None, "'exp' claim was not of type Number"),
])
def test_unsecured_jws_rules(claims, header, detail):
    with pytest.raises(TokenValidationError, match=detail):
        UnsecuredJwsValidator({}).validate(unsecured(claims, header), NOW)


def test_unsecured_options_scope_and_skew():
    v = UnsecuredJwsValidator({"unsecuredValidatorRequiredScope": "kafka admin",
                               "unsecuredValidatorPrincipalClaimName": "client_id",
                               "unsecuredValidatorAllowableClockSkewMs": "5000"})
    ok = unsecured({"client_id": "svc", "exp": NOW / 1000 - 2, "scope": ["kafka", "admin", "x"]})
    assert v.validate(ok, NOW).principal_name == "svc"  # expired 2 s ago, within 5 s of skew
    with pytest.raises(TokenValidationError) as e:
        v.validate(unsecured({"client_id": "svc", "exp": NOW / 1000 + 9, "scope": "kafka"}), NOW)
    assert e.value.status == "insufficient_scope"
    s = OAuthBearerServer(v)
    bad = unsecured({"client_id": "svc", "exp": NOW / 1000 + 9, "scope": "kafka"})
    assert s.evaluate(f"n,,\x01auth=Bearer {bad}\x01\x01".encode(), NOW).startswith(
        b'{"status":"insufficient_scope", "scope":')


@pytest.fixture(scope="module")
def jwks(tmp_path_factory):
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    import jwt
    d = tmp_path_factory.mktemp("jwks")
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    keys = []
    for kid, k, alg in (("r1", rsa_key, "RS256"), ("e1", ec_key, "ES256")):
        j = json.loads(jwt.algorithms.get_default_algorithms()[alg].to_jwk(k.public_key()))
        keys.append({**j, "kid": kid, "use": "sig"})
    path = d / "jwks.json"
    path.write_text(json.dumps({"keys": keys}))
    return path, rsa_key, ec_key


def signed(key, alg, kid, **claims):
    import jwt
    now = int(time.time())
    return jwt.encode({"sub": "alice", "iat": now, "exp": now + 300, **claims}, key, algorithm=alg,
                      headers={"kid": kid})


def test_signed_jwt_against_jwks(jwks):
    path, rsa_key, ec_key = jwks
    now_ms = int(time.time() * 1000)
    v = JwksValidator(path.as_uri(), expected_audience=["kafka"], expected_issuer="https://idp")
    tok = v.validate(signed(rsa_key, "RS256", "r1", aud="kafka", iss="https://idp", scope="read write"), now_ms)
    assert (tok.principal_name, tok.scope) == ("alice", frozenset({"read", "write"}))
    assert v.validate(signed(ec_key, "ES256", "e1", aud=["x", "kafka"], iss="https://idp"), now_ms)
    from cryptography.hazmat.primitives.asymmetric import rsa
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    for bad in (signed(stranger, "RS256", "r1", aud="kafka", iss="https://idp"),     # wrong key
                signed(rsa_key, "RS256", "r1", aud="other", iss="https://idp"),      # audience
                signed(rsa_key, "RS256", "r1", aud="kafka", iss="https://evil"),     # issuer
                signed(rsa_key, "RS256", "zz", aud="kafka", iss="https://idp"),      # unknown kid
                signed(rsa_key, "RS256", "r1", aud="kafka", iss="https://idp", exp=int(time.time()) - 100),
                unsecured({"sub": "alice", "exp": time.time() + 60, "aud": "kafka", "iss": "https://idp"}),
                signed(b"k" * 32, "HS256", "r1", aud="kafka", iss="https://idp")):  # symmetric: refused
        with pytest.raises(TokenValidationError):
            v.validate(bad, now_ms)


def test_factory_configuration(jwks, tmp_path):
    store = ScramCredentialStore(None)
    cfg = {"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512,OAUTHBEARER", "plain.sasl.jaas.config": PLAIN_JAAS}
    f = SaslServerFactory("SASL_SSL", cfg.get, store)
    assert f.mechanisms == ["PLAIN", "SCRAM-SHA-512", "OAUTHBEARER"]
    assert isinstance(f.create("OAUTHBEARER")._validator, UnsecuredJwsValidator)
    with pytest.raises(SecurityConfigError, match="GSSAPI .*not supported by Hourglass"):
        SaslServerFactory("SASL_SSL", {}.get, store)  # Kafka's default mechanism list is GSSAPI
    with pytest.raises(SecurityConfigError, match=r"listener.name.sasl_ssl.plain.sasl.jaas.config is required"):
        SaslServerFactory("SASL_SSL", {"sasl.enabled.mechanisms": "PLAIN"}.get, store)
    with pytest.raises(SecurityConfigError, match="unsupported SASL mechanism 'DIGEST-MD5'"):
        SaslServerFactory("SASL_SSL", {"sasl.enabled.mechanisms": "DIGEST-MD5"}.get, store)
    signed_cfg = {"sasl.enabled.mechanisms": "OAUTHBEARER",
                  "oauthbearer.sasl.server.callback.handler.class":
                      "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
                  "sasl.oauthbearer.jwks.endpoint.url": jwks[0].as_uri()}
    assert isinstance(SaslServerFactory("L", signed_cfg.get, store).create("OAUTHBEARER")._validator, JwksValidator)
    with pytest.raises(SecurityConfigError, match="only file: URLs"):
        SaslServerFactory("L", {**signed_cfg, "sasl.oauthbearer.jwks.endpoint.url": "https://idp/jwks"}.get, store)
    with pytest.raises(SecurityConfigError, match="sasl.oauthbearer.jwks.endpoint.url"):
        SaslServerFactory("L", {**signed_cfg, "sasl.oauthbearer.jwks.endpoint.url": str(tmp_path / "nope")}.get,
                          store)


# ---- the per-connection authenticator --------------------------------------------------------------
def authenticator(max_reauth_ms=0):
    m = ScramMechanism.SCRAM_SHA_256
    store = ScramCredentialStore(None)
    store.users["alice"] = {m: credential_from_password(m, "alice-secret", 4096)}
    store.users["bob"] = {m: credential_from_password(m, "bob-secret", 4096)}
    cfg = {"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,OAUTHBEARER", "plain.sasl.jaas.config": PLAIN_JAAS}
    return SaslAuthenticator(SaslServerFactory("SASL_PLAINTEXT", cfg.get, store), max_reauth_ms=max_reauth_ms)


def sasl_login(a, mech, version=2, now=NOW, **creds):
    assert a.admit(SASL_HANDSHAKE, now).close is False
    step = a.handshake(1, mech, now)
    assert step.response.error_code == 0 and not step.close
    client = kp_client(mech, **creds)
    while not client.is_done():
        assert a.admit(SASL_AUTHENTICATE, now).close is False
        step = a.authenticate(version, client.auth_bytes(), now)
        if step.close:
            return step
        client.receive(step.response.auth_bytes)
    return step


def test_only_sasl_requests_before_authentication():
    a = authenticator()
    step = a.admit(3, NOW)  # Metadata first: wrong security protocol
    assert step.close and step.response is None and "wrong security protocol" in step.reason
    a = authenticator()
    assert not a.admit(API_VERSIONS, NOW).close
    a.api_versions_answered()
    assert a.state == State.HANDSHAKE_REQUEST
    assert a.admit(API_VERSIONS, NOW).close          # only once, as in Kafka
    a = authenticator()
    a.admit(API_VERSIONS, NOW)
    a.api_versions_answered()
    step = a.admit(0, NOW)
    assert step.close and step.reason == "Unexpected Kafka request of type PRODUCE during SASL handshake."
    a = authenticator()
    a.admit(SASL_HANDSHAKE, NOW)
    a.handshake(1, "PLAIN", NOW)
    step = a.admit(3, NOW)
    assert step.close and "Unexpected Kafka request of type METADATA during SASL authentication" in step.reason
    assert a.frame_limit == 524288


def test_handshake_unsupported_mechanism_is_delayed_and_closes():
    a = authenticator()
    step = a.handshake(1, "GSSAPI", NOW)
    assert step.response.error_code == E.UNSUPPORTED_SASL_MECHANISM
    assert step.response.mechanisms == ["PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"]
    assert step.delayed and step.close


def test_successful_login_then_everything_passes():
    a = authenticator()
    step = sasl_login(a, "SCRAM-SHA-256", sasl_plain_username="alice", sasl_plain_password="alice-secret")
    assert a.authenticated and a.principal == "User:alice" and a.frame_limit is None
    assert step.response.session_lifetime_ms == 0
    assert a.admit(0, NOW) == a.admit(3, NOW) == a.admit(SASL_HANDSHAKE, NOW) and not a.admit(0, NOW).close
    # SaslAuthenticate after success (no re-auth): ILLEGAL_SASL_STATE, as KafkaApis answers
    assert a.authenticate(2, b"x", NOW).response.error_code == E.ILLEGAL_SASL_STATE


@pytest.mark.parametrize("mech,creds,message", [
    ("PLAIN", {"sasl_plain_username": "alice", "sasl_plain_password": "bad"},
     "Authentication failed: Invalid username or password"),
    ("SCRAM-SHA-256", {"sasl_plain_username": "alice", "sasl_plain_password": "bad"},
     "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"),
    ("SCRAM-SHA-256", {"sasl_plain_username": "nobody", "sasl_plain_password": "bad"},
     "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"),
])
def test_failed_login_answers_kafka_error_after_delay_and_closes(mech, creds, message):
    a = authenticator()
    step = sasl_login(a, mech, **creds)
    assert step.response.error_code == E.SASL_AUTHENTICATION_FAILED
    assert step.response.error_message == message
    assert step.delayed and step.close and a.state == State.FAILED and a.principal is None
    assert "bad" not in step.response.error_message and "bad" not in (step.reason or "")


def test_session_lifetime_and_reauthentication():
    a = authenticator(max_reauth_ms=10_000)
    step = sasl_login(a, "PLAIN", sasl_plain_username="alice", sasl_plain_password="alice-secret")
    assert step.response.session_lifetime_ms == 10_000 and a.session_expiry_ms == NOW + 10_000
    assert not a.admit(3, NOW + 9_999).close
    # re-authenticate before expiry: same mechanism and principal, the connection stays
    step = sasl_login(a, "PLAIN", now=NOW + 9_000, sasl_plain_username="alice", sasl_plain_password="alice-secret")
    assert step.response.error_code == 0 and a.session_expiry_ms == NOW + 19_000
    assert not a.admit(3, NOW + 15_000).close
    assert a.admit(3, NOW + 19_000).close  # expired: any request closes
    # another principal on re-authentication is refused
    a = authenticator(max_reauth_ms=10_000)
    sasl_login(a, "PLAIN", sasl_plain_username="alice", sasl_plain_password="alice-secret")
    step = sasl_login(a, "PLAIN", sasl_plain_username="admin", sasl_plain_password="admin-secret")
    assert step.close and step.response.error_message == (
        "Cannot change principals during re-authentication from User.alice: User.admin")
    # another mechanism on re-authentication is refused
    a = authenticator(max_reauth_ms=10_000)
    sasl_login(a, "PLAIN", sasl_plain_username="alice", sasl_plain_password="alice-secret")
    assert a.handshake(1, "SCRAM-SHA-256", NOW).response.error_code == 0
    step = a.admit(SASL_AUTHENTICATE, NOW)
    assert step.close and "not supported for re-authentication of mechanism 'PLAIN'" in step.reason


def test_v0_clients_get_no_lifetime_and_cannot_reauthenticate():
    a = authenticator(max_reauth_ms=10_000)
    step = sasl_login(a, "PLAIN", version=0, sasl_plain_username="alice", sasl_plain_password="alice-secret")
    assert step.response.session_lifetime_ms == 0     # v0 has no such field: the default goes out
    assert a.session_expiry_ms == NOW + 10_000         # but the session still ends, as in Kafka
    assert a.handshake(1, "PLAIN", NOW).response.error_code == E.ILLEGAL_SASL_STATE


def test_oauth_token_expiry_bounds_the_session():
    a = authenticator(max_reauth_ms=3_600_000)
    tok = unsecured({"sub": "svc", "exp": NOW / 1000 + 60})
    step = sasl_login(a, "OAUTHBEARER", sasl_oauth_token_provider=Tokens(tok))
    assert a.principal == "User:svc" and step.response.session_lifetime_ms == 60_000


def test_handshake_v0_raw_tokens():
    a = authenticator()
    assert a.handshake(0, "PLAIN", NOW).response.error_code == 0 and a.raw_tokens
    assert a.admit(SASL_AUTHENTICATE, NOW).close  # v0 exchanges carry no Kafka headers
    a = authenticator()
    a.handshake(0, "PLAIN", NOW)
    assert a.raw_token(b"\0alice\0alice-secret", NOW).response == b""
    assert a.authenticated and not a.raw_tokens
    a = authenticator()
    a.handshake(0, "PLAIN", NOW)
    step = a.raw_token(b"\0alice\0wrong", NOW)
    assert step.close and step.response is None
