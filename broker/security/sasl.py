"""SASL mechanisms as sans-IO servers: token in, token out, no sockets.

- PLAIN (RFC 4616): ``[authzid] NUL authcid NUL passwd``; users are the ``user_<name>="pw"``
  options of ``listener.name.<l>.plain.sasl.jaas.config`` (Kafka's PlainLoginModule syntax).
- SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802 / 7677) through ``scramp``, against the credential
  store (AlterUserScramCredentials / ``hourglass users``); with the client-first extension
  ``tokenauth=true`` the user name is a delegation token id and the password its base64 HMAC
  (Kafka's token login): the principal is the token's owner, marked token-authenticated, and
  the session lasts until the token's expiry.
- OAUTHBEARER (RFC 7628): the client's GS2 initial response carries ``auth=Bearer <token>``;
  the token is validated by ``oauth`` (unsecured JWS by default, signed JWT against a JWKS
  when configured). A failed validation answers Kafka's JSON error challenge; the client
  acknowledges with ``\\x01`` and then fails.
- GSSAPI (Kerberos) is refused by name when the broker starts.

Two kinds of failure, as in Kafka: ``AuthenticationFailed`` carries a message the client may
see (Kafka's SaslAuthenticationException); ``SaslFailure`` is logged and the client gets
Kafka's generic "Authentication failed during authentication due to invalid credentials with
SASL mechanism X" (Kafka's SaslException), so a client cannot probe which users exist.
"""
from __future__ import annotations

import hmac
import re
from typing import Callable

from broker.security import jaas
from broker.security.oauth import (
    VALIDATOR_CALLBACK_HANDLERS, JwksValidator, TokenValidationError, UnsecuredJwsValidator,
)
from broker.security.scram import MIN_ITERATIONS, ScramCredentialStore, ScramMechanism, scramp_module

PLAIN, SCRAM_SHA_256, SCRAM_SHA_512, OAUTHBEARER, GSSAPI = (
    "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI")
SUPPORTED = (PLAIN, SCRAM_SHA_256, SCRAM_SHA_512, OAUTHBEARER)
GSSAPI_REFUSED = ("SASL mechanism GSSAPI (Kerberos) is not supported by Hourglass; enable PLAIN, "
                  "SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER in sasl.enabled.mechanisms")


class SecurityConfigError(ValueError):
    """A security setting that stops the broker from starting; the message names the key."""


class AuthenticationFailed(Exception):
    """The exchange failed; the message is sent to the client."""


class SaslFailure(Exception):
    """The exchange failed; the message is for the log, the client gets the generic one."""


class SaslServer:
    mechanism = ""

    def __init__(self) -> None:
        self.complete = False
        self.authorization_id: str | None = None
        self.credential_expiry_ms: int | None = None  # OAUTHBEARER / delegation token: when it expires
        self.token_authenticated = False  # logged in with a delegation token

    def evaluate(self, token: bytes, now_ms: int) -> bytes:
        raise NotImplementedError


# ---- PLAIN --------------------------------------------------------------------------------------
class PlainServer(SaslServer):
    mechanism = PLAIN

    def __init__(self, users: dict[str, str]):
        super().__init__()
        self._users = users

    def evaluate(self, token: bytes, now_ms: int) -> bytes:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslFailure("Invalid SASL/PLAIN response: not UTF-8") from None
        parts = (text.split("\0", 2) + ["", ""])[:3]
        if text.count("\0") != 2:
            raise SaslFailure(f"Invalid SASL/PLAIN response: expected 3 tokens, got {text.count(chr(0)) + 1}")
        authzid, username, password = parts
        if not username:
            raise SaslFailure("Authentication failed: username not specified")
        if not password:
            raise SaslFailure("Authentication failed: password not specified")
        expected = self._users.get(username)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise AuthenticationFailed("Authentication failed: Client requested an authorization id that is "
                                       "different from username")
        self.authorization_id = username
        self.complete = True
        return b""


# ---- SCRAM --------------------------------------------------------------------------------------
class ScramServer(SaslServer):
    def __init__(self, mech: ScramMechanism, store: ScramCredentialStore, tokens=None):
        super().__init__()
        self._scramp = scramp_module()
        self.mechanism = mech.mechanism_name
        self._mech = mech
        self._store = store
        self._tokens = tokens  # broker.security.delegation.DelegationTokenStore
        self._server = None
        self._client_nonce = ""
        self._lookup_failure: SaslFailure | None = None  # scramp wraps what the lookup raises

    def _credential(self, username: str):
        if self.token_authenticated:
            return self._token_credential(username)
        cred = self._store.get(username, self._mech)
        if cred is None:
            self._lookup_failure = SaslFailure("Authentication failed: Invalid user credentials")
        elif cred.iterations < MIN_ITERATIONS:
            self._lookup_failure = SaslFailure(f"Iterations {cred.iterations} is less than the minimum "
                                               f"{MIN_ITERATIONS} for {self.mechanism}")
        if self._lookup_failure is not None:
            raise self._lookup_failure
        self.authorization_id = username
        return cred.salt, cred.stored_key, cred.server_key, cred.iterations

    def _token_credential(self, token_id: str):
        found = None if self._tokens is None else self._tokens.credential(token_id, self._mech)
        if found is None:
            self._lookup_failure = SaslFailure(f"Token Authentication failed: Invalid tokenId : {token_id}")
            raise self._lookup_failure
        cred, token = found
        self.authorization_id = token.owner.partition(":")[2]
        self.credential_expiry_ms = token.expiry_ms
        return cred.salt, cred.stored_key, cred.server_key, cred.iterations

    def evaluate(self, token: bytes, now_ms: int) -> bytes:
        ScramException = self._scramp.ScramException
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslFailure("SCRAM message is not UTF-8") from None
        if self._server is None:
            # Kafka accepts an authzid equal to the user name; scramp accepts none at all, so such
            # a client gets the generic failure (no stock client sends one)
            m = re.match(r"^[nyp][^,]*,a=([^,]*),n=([^,]*),", text)
            if m and _saslname(m.group(1)) != _saslname(m.group(2)):
                raise AuthenticationFailed("Authentication failed: Client requested an authorization id that is "
                                           "different from username")
            r = re.search(r",r=([^,]*)", text)
            self._client_nonce = r.group(1) if r else ""
            bare, extensions = _split_extensions(text)
            self.token_authenticated = extensions.get("tokenauth", "").lower() == "true"
            self._server = _SCRAMP_MECHS[self.mechanism].make_server(self._credential)
            try:
                self._server.set_client_first(bare)
            except ScramException as exc:
                if self._lookup_failure is not None:
                    raise self._lookup_failure from None
                raise SaslFailure(f"invalid SCRAM client-first message: {exc}") from None
            if extensions:
                # the proof signs the message as sent, extensions included (scramp parses
                # one-letter attributes only, so it was given the message without them)
                self._server.client_first_bare = text[text.index(",", text.index(",") + 1) + 1:]
            return self._server.get_server_first().encode()
        if self.complete:
            raise SaslFailure("Unexpected challenge in Sasl server state COMPLETE")
        m = re.search(r"(?:^|,)r=([^,]*)", text)
        nonce = self._server.nonce  # scramp's Nonce (str() is its text)
        if m and m.group(1) == self._client_nonce + str(nonce):
            # librdkafka before 2.6.1 (Debian 12's kcat has 2.0.2) sends its own nonce again in
            # front of the server's; Kafka 3.8.1-3.9 accept that (the nonce must end with the
            # server's), Kafka 4 no longer does. Accepted here, so those clients can log in: the
            # proof is still checked over exactly what the client signed.
            self._server.nonce = type(nonce)(m.group(1))
        try:
            self._server.set_client_final(text)
            final = self._server.get_server_final()
        except ScramException:
            raise SaslFailure("Invalid client credentials") from None
        self.complete = True
        self._server = None  # drop the credential with the exchange
        return final.encode()


# Kafka's ScramMessages.ClientFirstMessage: "n=<saslname>,r=<nonce>" then ",key=value" extensions
_EXTENSION = re.compile(r",([A-Za-z]+)=([\x01-\x2b\x2d-\x7f]+)")


def _split_extensions(text: str) -> tuple[str, dict[str, str]]:
    """(the client-first message without its extensions, the extensions); unknown extensions
    are ignored, as Kafka ignores them."""
    m = re.match(r"^([^,]*,[^,]*,n=[^,]*,r=[^,]*)((?:,[A-Za-z]+=[^,]+)*)$", text)
    if m is None or not m.group(2):
        return text, {}
    return m.group(1), {k: v for k, v in _EXTENSION.findall(m.group(2))}


def _saslname(s: str) -> str:
    return s.replace("=2C", ",").replace("=3D", "=")


class _LazyScramp(dict):
    def __missing__(self, name: str):
        self[name] = scramp_module().ScramMechanism(name)
        return self[name]


_SCRAMP_MECHS = _LazyScramp()


# ---- OAUTHBEARER --------------------------------------------------------------------------------
_SEP = "\x01"
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"   # \x01-\x7F except '=' and ','
_KVPAIRS = r"(?:[A-Za-z]+=[\x21-\x7E \t\r\n]+\x01)*"
_CLIENT_FIRST = re.compile(rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,\x01(?P<kvpairs>{_KVPAIRS})\x01", re.S)
_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_.a-zA-Z0-9]+)")


class OAuthBearerServer(SaslServer):
    mechanism = OAUTHBEARER

    def __init__(self, validator):
        super().__init__()
        self._validator = validator
        self._error: str | None = None
        self.failure_detail: str | None = None  # why the last token was refused (for the log)

    def evaluate(self, token: bytes, now_ms: int) -> bytes:
        if token == b"\x01" and self._error is not None:
            raise AuthenticationFailed(self._error)
        self._error = None
        m = _CLIENT_FIRST.fullmatch(token.decode("utf-8", "replace"))
        if not m:
            raise SaslFailure("Invalid OAUTHBEARER client first message")
        pairs = dict(kv.split("=", 1) for kv in m.group("kvpairs").split(_SEP) if kv)
        auth = pairs.pop("auth", None)
        if auth is None:
            raise SaslFailure("Invalid OAUTHBEARER client first message: 'auth' not specified")
        a = _AUTH.fullmatch(auth)
        if not a:
            raise SaslFailure("Invalid OAUTHBEARER client first message: invalid 'auth' format")
        if a.group("scheme").lower() != "bearer":
            raise SaslFailure(f"Invalid scheme in OAUTHBEARER client first message: {a.group('scheme')}")
        try:
            tok = self._validator.validate(a.group("token"), now_ms)
        except TokenValidationError as exc:
            self.failure_detail = str(exc)
            err = f'{{"status":"{exc.status}"'
            if exc.scope is not None:
                err += f', "scope":"{exc.scope}"'
            self._error = err + "}"
            return self._error.encode()
        authzid = _saslname(m.group("authzid") or "")
        if authzid and authzid != tok.principal_name:
            raise AuthenticationFailed(
                f"Authentication failed: Client requested an authorization id ({authzid}) that is different "
                f"from the token's principal name ({tok.principal_name})")
        self.authorization_id = tok.principal_name
        self.credential_expiry_ms = tok.lifetime_ms
        self.complete = True
        return b""


# ---- per-listener configuration -------------------------------------------------------------------
Lookup = Callable[[str], "str | None"]


def enabled_mechanisms(value: str | None) -> list[str]:
    """``sasl.enabled.mechanisms`` (Kafka's default: GSSAPI, which we refuse by name)."""
    mechs = [m.strip() for m in (value if value is not None else GSSAPI).split(",") if m.strip()]
    if not mechs:
        raise SecurityConfigError("sasl.enabled.mechanisms: no SASL mechanisms are enabled")
    if GSSAPI in mechs:
        raise SecurityConfigError(GSSAPI_REFUSED)
    for m in mechs:
        if m not in SUPPORTED:
            raise SecurityConfigError(f"sasl.enabled.mechanisms: unsupported SASL mechanism {m!r} "
                                      f"(supported: {', '.join(SUPPORTED)})")
    return list(dict.fromkeys(mechs))


def _jaas_options(lookup: Lookup, listener: str, mech: str, required: bool) -> dict[str, str]:
    key = f"{mech.lower()}.sasl.jaas.config"
    text = lookup(key)
    if text is None:
        if required:
            raise SecurityConfigError(
                f"listener.name.{listener.lower()}.{key} is required for SASL mechanism {mech} on listener "
                f"{listener} (e.g. org.apache.kafka.common.security.plain.PlainLoginModule required "
                f'user_alice="alice-secret";)')
        return {}
    try:
        return jaas.single_module(text).options
    except jaas.JaasError as exc:
        raise SecurityConfigError(f"listener.name.{listener.lower()}.{key}: {exc}") from None


def oauth_validator(lookup: Lookup, listener: str):
    """Unsecured JWS unless the listener names Kafka's signed-JWT validator callback handler."""
    handler = lookup("oauthbearer.sasl.server.callback.handler.class")
    options = _jaas_options(lookup, listener, OAUTHBEARER, required=False)
    if handler is None:
        return UnsecuredJwsValidator(options)
    if handler.strip() not in VALIDATOR_CALLBACK_HANDLERS:
        raise SecurityConfigError(f"listener.name.{listener.lower()}.oauthbearer.sasl.server.callback.handler.class:"
                                  f" unsupported class {handler.strip()!r} (supported: "
                                  f"{', '.join(sorted(VALIDATOR_CALLBACK_HANDLERS))})")
    url = lookup("sasl.oauthbearer.jwks.endpoint.url")
    if not url:
        raise SecurityConfigError("sasl.oauthbearer.jwks.endpoint.url is required with "
                                  "OAuthBearerValidatorCallbackHandler")
    try:
        skew = int(lookup("sasl.oauthbearer.clock.skew.seconds") or "30")
        aud = [a.strip() for a in (lookup("sasl.oauthbearer.expected.audience") or "").split(",") if a.strip()]
        return JwksValidator(url, expected_audience=aud, expected_issuer=lookup("sasl.oauthbearer.expected.issuer"),
                             sub_claim=lookup("sasl.oauthbearer.sub.claim.name") or "sub",
                             scope_claim=lookup("sasl.oauthbearer.scope.claim.name") or "scope",
                             clock_skew_s=skew)
    except (OSError, ValueError) as exc:
        raise SecurityConfigError(f"sasl.oauthbearer.jwks.endpoint.url: {exc}") from None


class SaslServerFactory:
    """The SASL mechanisms of one listener: ``create(mechanism)`` starts one exchange."""

    def __init__(self, listener: str, lookup: Lookup, scram_store: ScramCredentialStore, tokens=None):
        self.listener = listener
        self.mechanisms = enabled_mechanisms(lookup("sasl.enabled.mechanisms"))
        self._make: dict[str, Callable[[], SaslServer]] = {}
        self.plain_users: dict[str, str] = {}  # PLAIN's user_<name>="pw" (also checked by HTTP basic auth)
        for mech in self.mechanisms:
            if mech == PLAIN:
                opts = _jaas_options(lookup, listener, PLAIN, required=True)
                users = self.plain_users = {k[5:]: v for k, v in opts.items() if k.startswith("user_")}
                self._make[mech] = lambda users=users: PlainServer(users)
            elif mech in (SCRAM_SHA_256, SCRAM_SHA_512):
                _jaas_options(lookup, listener, mech, required=False)  # validated when given
                sm = ScramMechanism.from_name(mech)
                self._make[mech] = lambda sm=sm: ScramServer(sm, scram_store, tokens)
            elif mech == OAUTHBEARER:
                validator = oauth_validator(lookup, listener)
                self._make[mech] = lambda v=validator: OAuthBearerServer(v)

    def create(self, mechanism: str) -> SaslServer:
        return self._make[mechanism]()
