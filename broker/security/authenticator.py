"""The per-connection SASL state machine (Kafka's ``SaslServerAuthenticator``), sans-IO.

The connection asks ``admit(api_key, now_ms)`` for every request frame before decoding it,
and hands SaslHandshake / SaslAuthenticate requests to ``handshake`` / ``authenticate``; each
answer is a ``Step``: a response to send (or none), whether to send it only after
``connection.failed.authentication.delay.ms``, whether to close afterwards, and a reason to log.

States (Kafka's names)::

    HANDSHAKE_OR_VERSIONS_REQUEST --ApiVersions--> HANDSHAKE_REQUEST
    HANDSHAKE_OR_VERSIONS_REQUEST / HANDSHAKE_REQUEST --SaslHandshake v1--> AUTHENTICATE
        --SaslAuthenticate...--> COMPLETE        (SaslHandshake v0: raw tokens, no headers)
    COMPLETE --SaslHandshake (client sent SaslAuthenticate v1+)--> AUTHENTICATE (re-auth, KIP-368)

- Before authentication only ApiVersions (once, first) and SaslHandshake may come; anything
  else closes the connection without an answer, as Kafka does ("Unexpected Kafka request of
  type X during SASL handshake"). During the exchange only SaslAuthenticate may come.
- An unsupported mechanism answers UNSUPPORTED_SASL_MECHANISM and a failed exchange
  SASL_AUTHENTICATION_FAILED, both after the failure delay, then the connection closes.
- The session lifetime (KIP-368) is the smaller of ``connections.max.reauth.ms`` (0: none)
  and the time to the credential's expiry (OAUTHBEARER token ``exp``); it is sent in
  SaslAuthenticate v1+. A request on an expired session closes the connection; a client that
  re-authenticates keeps its connection, with the same mechanism and principal only.
- Until authenticated, a frame may be at most ``sasl.server.max.receive.size`` bytes.
"""
from __future__ import annotations

import enum
import logging
from typing import Any, NamedTuple

from broker.security.sasl import AuthenticationFailed, SaslFailure, SaslServer, SaslServerFactory
from protocol.errors import ErrorCode
from protocol.messages.sasl_authenticate import SaslAuthenticateResponse
from protocol.messages.sasl_handshake import SaslHandshakeResponse

log = logging.getLogger(__name__)

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
ANONYMOUS = "User:ANONYMOUS"
DEFAULT_MAX_RECEIVE_SIZE = 524288  # Kafka's sasl.server.max.receive.size


class State(enum.Enum):
    HANDSHAKE_OR_VERSIONS_REQUEST = 1
    HANDSHAKE_REQUEST = 2
    AUTHENTICATE = 3
    COMPLETE = 4
    FAILED = 5
    REAUTH_BAD_MECHANISM = 6


class Step(NamedTuple):
    response: Any = None          # response object for the request, or raw token bytes (v0)
    delayed: bool = False         # send only after connection.failed.authentication.delay.ms
    close: bool = False           # close the connection after sending
    reason: str | None = None     # why it closes (logged by the connection)


PASS = Step()


def illegal_sasl_state(api_key: int) -> Any:
    """What an authenticated connection (or a non-SASL listener) answers to SaslHandshake or
    SaslAuthenticate (Kafka's ``KafkaApis``)."""
    if api_key == SASL_HANDSHAKE:
        return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
    return SaslAuthenticateResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE,
                                    error_message="SaslAuthenticate request received after successful authentication")


class SaslAuthenticator:
    def __init__(self, factory: SaslServerFactory, *, max_reauth_ms: int | dict[str, int] = 0,
                 max_receive_size: int = DEFAULT_MAX_RECEIVE_SIZE):
        self.factory = factory
        self.max_reauth_ms = max_reauth_ms
        self.max_receive_size = max_receive_size
        self.state = State.HANDSHAKE_OR_VERSIONS_REQUEST
        self.principal: str | None = None
        self.token_authenticated = False  # logged in with a delegation token (Kafka's tokenAuthenticated)
        self.mechanism: str | None = None
        self.raw_tokens = False           # SaslHandshake v0: tokens come without Kafka headers
        self._bad_mechanism = ""
        self.session_expiry_ms: int | None = None
        self.client_supports_reauth = False
        self.reauthenticating = False
        self._server: SaslServer | None = None
        self._seen_request = False

    @property
    def authenticated(self) -> bool:
        """Requests other than the SASL ones may be served (also during a re-authentication's
        handshake, which only SaslAuthenticate may follow)."""
        return self.state == State.COMPLETE

    @property
    def frame_limit(self) -> int | None:
        return None if self.principal is not None else self.max_receive_size

    def _verb(self) -> str:
        return "re-authentication" if self.reauthenticating else "authentication"

    # ---- admission -----------------------------------------------------------------------------
    def admit(self, api_key: int, now_ms: int) -> Step:
        """Whether a request with this key may be decoded and handled now."""
        first = not self._seen_request
        self._seen_request = True
        st = self.state
        if st == State.COMPLETE:
            if self.session_expiry_ms is not None and now_ms >= self.session_expiry_ms:
                return Step(close=True, reason="expired SASL session (connections.max.reauth.ms or credential "
                                                 "expiry reached without re-authentication)")
            return PASS
        if st in (State.HANDSHAKE_OR_VERSIONS_REQUEST, State.HANDSHAKE_REQUEST):
            if api_key == SASL_HANDSHAKE or (api_key == API_VERSIONS and st == State.HANDSHAKE_OR_VERSIONS_REQUEST):
                return PASS
            if api_key == API_VERSIONS:
                return Step(close=True, reason="Unexpected ApiVersions request received during SASL "
                                               "authentication state HANDSHAKE_REQUEST")
            reason = f"Unexpected Kafka request of type {_name(api_key)} during SASL handshake."
            if first:
                reason = ("Invalid request, potential reasons: kafka client configured with the wrong security "
                          f"protocol, it does not support KIP-43 or it is not a kafka client. ({reason})")
            return Step(close=True, reason=reason)
        if st == State.AUTHENTICATE and api_key == SASL_AUTHENTICATE and not self.raw_tokens:
            return PASS
        if st == State.REAUTH_BAD_MECHANISM:
            return Step(close=True, reason=self._bad_mechanism)
        return Step(close=True, reason=f"Unexpected Kafka request of type {_name(api_key)} during SASL "
                                       f"{self._verb()}.")

    def api_versions_answered(self) -> None:
        if self.state == State.HANDSHAKE_OR_VERSIONS_REQUEST:
            self.state = State.HANDSHAKE_REQUEST

    # ---- SaslHandshake ---------------------------------------------------------------------------
    def handshake(self, version: int, mechanism: str, now_ms: int) -> Step:
        enabled = self.factory.mechanisms
        if self.state == State.COMPLETE:
            if not self.client_supports_reauth:
                return Step(illegal_sasl_state(SASL_HANDSHAKE))
            self.reauthenticating = True
        if mechanism not in enabled:
            self.state = State.FAILED
            return Step(SaslHandshakeResponse(error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled),
                        delayed=True, close=True, reason=f"Unsupported SASL mechanism {mechanism}")
        response = SaslHandshakeResponse(error_code=0, mechanisms=enabled)
        if self.reauthenticating and mechanism != self.mechanism:
            self._bad_mechanism = (f"SASL mechanism '{mechanism}' requested by client is not supported for "
                                   f"re-authentication of mechanism '{self.mechanism}'")
            self.state = State.REAUTH_BAD_MECHANISM
            return Step(response)
        self.mechanism = mechanism
        self._server = self.factory.create(mechanism)
        self.state = State.AUTHENTICATE
        self.raw_tokens = version == 0
        return Step(response)

    # ---- SaslAuthenticate / raw tokens ---------------------------------------------------------
    def authenticate(self, version: int, auth_bytes: bytes, now_ms: int) -> Step:
        if self.state != State.AUTHENTICATE or self.raw_tokens:
            return Step(illegal_sasl_state(SASL_AUTHENTICATE))
        if version > 0:
            self.client_supports_reauth = True
        out = self._evaluate(auth_bytes, now_ms)
        if isinstance(out, Step):
            return out
        token, lifetime = out
        r = SaslAuthenticateResponse(error_code=0, auth_bytes=token)
        if version >= 1:
            r.session_lifetime_ms = lifetime
        return Step(r)

    def raw_token(self, token: bytes, now_ms: int) -> Step:
        """A SaslHandshake v0 exchange: the answer is raw bytes (sent size-prefixed); a failure
        closes the connection without an answer, as there is no header to carry it."""
        out = self._evaluate(token, now_ms)
        if isinstance(out, Step):
            return Step(close=True, delayed=True, reason=out.reason)
        if self.state == State.COMPLETE:
            self.raw_tokens = False
        return Step(out[0])

    def _evaluate(self, token: bytes, now_ms: int):
        server = self._server
        assert server is not None
        try:
            challenge = server.evaluate(bytes(token), now_ms)
            if server.complete and self.reauthenticating and self.principal != "User:" + server.authorization_id:
                new = "User:" + server.authorization_id
                raise AuthenticationFailed(f"Cannot change principals during re-authentication from "
                                           f"{self.principal.replace(':', '.', 1)}: {new.replace(':', '.', 1)}")
        except AuthenticationFailed as exc:
            return self._failed(str(exc), str(exc))
        except SaslFailure as exc:
            generic = (f"Authentication failed during {self._verb()} due to invalid credentials with SASL "
                       f"mechanism {self.mechanism}")
            return self._failed(generic, f"{generic} ({exc})")
        if getattr(server, "failure_detail", None):
            log.info("OAUTHBEARER token refused on listener %s: %s", self.factory.listener, server.failure_detail)
            server.failure_detail = None
        if not server.complete:
            return challenge, 0
        self.principal = "User:" + server.authorization_id
        self.token_authenticated = server.token_authenticated
        self.state = State.COMPLETE
        self.reauthenticating = False
        self._server = None
        return challenge, self._session_lifetime(server, now_ms)

    def _failed(self, client_message: str, log_reason: str) -> Step:
        self.state = State.FAILED
        self._server = None
        return Step(SaslAuthenticateResponse(error_code=ErrorCode.SASL_AUTHENTICATION_FAILED,
                                             error_message=client_message),
                    delayed=True, close=True, reason=log_reason)

    def _session_lifetime(self, server: SaslServer, now_ms: int) -> int:
        expiry = server.credential_expiry_ms
        mr = self.max_reauth_ms
        if isinstance(mr, dict):  # per mechanism (listener.name.<l>.<mechanism>.connections.max.reauth.ms)
            mr = mr.get(self.mechanism, 0)
        max_reauth = mr if mr and mr > 0 else None
        if expiry is None and max_reauth is None:
            self.session_expiry_ms = None
            return 0
        if expiry is None:
            lifetime = max_reauth
        elif max_reauth is None:
            lifetime = max(0, expiry - now_ms)
        else:
            lifetime = max(0, min(expiry - now_ms, max_reauth))
        self.session_expiry_ms = now_ms + lifetime
        return lifetime


def _name(api_key: int) -> str:
    from protocol.api_keys import APIS
    a = APIS.get(api_key)
    if a is None:
        return str(api_key)
    # Kafka prints ApiKeys enum names: METADATA, SASL_HANDSHAKE, ...
    out = []
    for i, ch in enumerate(a.name):
        if ch.isupper() and i and not a.name[i - 1].isupper():
            out.append("_")
        out.append(ch.upper())
    return "".join(out)
