"""The client side of SASL, for Hourglass's own wire client (``hourglass`` tools, probes, tests),
configured with a Java client's properties (``--command-config client.properties``).

- PLAIN and SCRAM-SHA-256/512: ``username`` / ``password`` of the PlainLoginModule or
  ScramLoginModule in ``sasl.jaas.config``; SCRAM through ``scramp``'s client. The
  ScramLoginModule option ``tokenauth="true"`` logs in with a delegation token (user name: the
  token id, password: its base64 HMAC), sent as the client-first extension ``tokenauth=true``.
- OAUTHBEARER: a token from ``sasl.oauthbearer.token.endpoint.url`` when it is a ``file:`` URL
  (Kafka 4's file token retriever), else Kafka's unsecured login: an ``alg: none`` JWS built
  from the OAuthBearerLoginModule's ``unsecuredLoginStringClaim_sub``,
  ``unsecuredLoginLifetimeSeconds`` (default 3600) and ``unsecuredLoginListClaim_scope``.

A client here is a plain state machine: ``first()`` is the initial token, ``step(server)``
the answer to each server token (None: nothing more to send).
"""
from __future__ import annotations

import base64
import json
import time
from typing import Callable
from urllib.parse import urlparse
from urllib.request import url2pathname

from broker.security import jaas

Lookup = Callable[[str], "str | None"]


class SaslClientError(ValueError):
    pass


def unsecured_token(principal: str, lifetime_s: int = 3600, scope: list[str] | None = None,
                    now_s: float | None = None) -> str:
    now_s = time.time() if now_s is None else now_s
    enc = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).decode().rstrip("=")  # noqa: E731
    claims = {"sub": principal, "iat": int(now_s), "exp": int(now_s) + lifetime_s}
    if scope:
        claims["scope"] = scope
    return f"{enc({'alg': 'none'})}.{enc(claims)}."


class SaslClient:
    def __init__(self, mechanism: str, first: bytes, step=None):
        self.mechanism = mechanism
        self._first = first
        self._step = step

    def first(self) -> bytes:
        return self._first

    def step(self, server: bytes) -> bytes | None:
        return None if self._step is None else self._step(server)


def _options(get: Lookup) -> dict[str, str]:
    text = get("sasl.jaas.config")
    if not text:
        return {}
    try:
        return jaas.single_module(text).options
    except jaas.JaasError as exc:
        raise SaslClientError(f"sasl.jaas.config: {exc}") from None


def sasl_client(get: Lookup) -> SaslClient | None:
    """The SASL client a ``security.protocol`` of SASL_* asks for (None for PLAINTEXT/SSL)."""
    protocol = (get("security.protocol") or "PLAINTEXT").upper()
    if not protocol.startswith("SASL_"):
        return None
    mech = (get("sasl.mechanism") or "GSSAPI").upper()
    opts = _options(get)
    if mech == "PLAIN":
        return SaslClient(mech, f"\0{opts.get('username', '')}\0{opts.get('password', '')}".encode())
    if mech in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        from broker.security.scram import scramp_module
        c = scramp_module().ScramClient([mech], opts.get("username", ""), opts.get("password", ""))
        first = c.get_client_first()
        if opts.get("tokenauth", "").lower() == "true":
            # Kafka's ScramSaslClient appends its extensions to the client-first message, which the
            # proof then signs (scramp keeps the bare message it signs in client_first_bare)
            first += ",tokenauth=true"
            c.client_first_bare += ",tokenauth=true"
        state = {"n": 0}

        def step(server: bytes):
            state["n"] += 1
            if state["n"] == 1:
                c.set_server_first(server.decode())
                return c.get_client_final().encode()
            c.set_server_final(server.decode())  # raises when the server's signature is wrong
            return None
        return SaslClient(mech, first.encode(), step)
    if mech == "OAUTHBEARER":
        url = get("sasl.oauthbearer.token.endpoint.url")
        if url and urlparse(url).scheme == "file":
            with open(url2pathname(urlparse(url).path)) as f:
                token = f.read().strip()
        else:
            sub = opts.get("unsecuredLoginStringClaim_sub")
            if not sub:
                raise SaslClientError("OAUTHBEARER needs unsecuredLoginStringClaim_sub in sasl.jaas.config, or a "
                                      "file: sasl.oauthbearer.token.endpoint.url holding a token")
            scope_text = opts.get("unsecuredLoginListClaim_scope", "")
            scope = [s for s in scope_text[1:].split(scope_text[0]) if s] if scope_text else None
            token = unsecured_token(sub, int(opts.get("unsecuredLoginLifetimeSeconds", "3600")), scope)

        def answer(server: bytes):
            return b"\x01" if server else None  # acknowledge an error challenge; the server then fails
        return SaslClient(mech, f"n,,\x01auth=Bearer {token}\x01\x01".encode(), answer)
    raise SaslClientError(f"sasl.mechanism {mech} is not supported by the hourglass tools")
