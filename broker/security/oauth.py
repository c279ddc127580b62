"""OAUTHBEARER token validation, as Kafka's two server-side callback handlers do it.

- Unsecured (Kafka's default, ``OAuthBearerUnsecuredValidatorCallbackHandler``): the token is
  an unsecured JWS (``alg: none``, empty signature) with an ``exp`` claim and a string
  principal claim (``sub`` unless ``unsecuredValidatorPrincipalClaimName``); ``iat`` if
  present must not be in the future; ``unsecuredValidatorRequiredScope`` (space-separated)
  must be within the scope claim; ``unsecuredValidatorAllowableClockSkewMs`` (default 0).
  For development and tests only, as in Kafka.
- Signed (``OAuthBearerValidatorCallbackHandler`` set as
  ``listener.name.<l>.oauthbearer.sasl.server.callback.handler.class``): the JWT's signature
  is checked against a key of the JWKS at ``sasl.oauthbearer.jwks.endpoint.url`` (a
  ``file:`` URL or path here; keys are re-read when the file changes), ``alg: none`` and
  symmetric algorithms refused; ``exp`` and ``iat`` required; ``sasl.oauthbearer.expected.
  audience`` / ``.expected.issuer`` enforced when set; ``sasl.oauthbearer.clock.skew.seconds``
  (default 30); principal from ``sasl.oauthbearer.sub.claim.name`` (default ``sub``).

A failed validation is a ``TokenValidationError`` whose ``status`` goes to the client in
Kafka's JSON error challenge (``{"status":"invalid_token"}``); the detail is for the log only
and never contains the token.
"""
from __future__ import annotations

import base64
import binascii
import json
import os
from typing import Any, NamedTuple
from urllib.parse import urlparse
from urllib.request import url2pathname

VALIDATOR_CALLBACK_HANDLERS = frozenset({
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler",
})


class OAuthBearerToken(NamedTuple):
    principal_name: str
    scope: frozenset[str]
    lifetime_ms: int               # the expiry, ms since the epoch
    start_time_ms: int | None


class TokenValidationError(Exception):
    def __init__(self, detail: str, status: str = "invalid_token", scope: str | None = None):
        super().__init__(detail)
        self.status = status
        self.scope = scope


def _b64url_json(part: str) -> dict:
    try:
        raw = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
        doc = json.loads(raw)
    except (binascii.Error, ValueError):
        raise TokenValidationError("malformed Base64 URL encoded value or JSON") from None
    if not isinstance(doc, dict):
        raise TokenValidationError("malformed JSON")
    return doc


def _number(claims: dict, name: str) -> float | None:
    v = claims.get(name)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TokenValidationError(f"The '{name}' claim was not of type Number")
    return float(v)


def _scope(claims: dict, name: str) -> frozenset[str]:
    v = claims.get(name)
    if isinstance(v, str):
        # Kafka's unsecured JWS reads a string scope claim as one scope; RFC 8693 tokens carry a
        # space-separated string, so split it (a one-word scope reads the same either way)
        return frozenset(s for s in v.split() if s)
    if isinstance(v, list):
        return frozenset(str(s).strip() for s in v if s is not None and str(s).strip())
    return frozenset()


class UnsecuredJwsValidator:
    def __init__(self, options: dict[str, str] | None = None):
        o = options or {}
        self.principal_claim = (o.get("unsecuredValidatorPrincipalClaimName") or "").strip() or "sub"
        self.scope_claim = (o.get("unsecuredValidatorScopeClaimName") or "").strip() or "scope"
        self.required_scope = (o.get("unsecuredValidatorRequiredScope") or "").split()
        skew = (o.get("unsecuredValidatorAllowableClockSkewMs") or "").strip()
        try:
            self.skew_ms = int(skew) if skew else 0
        except ValueError:
            raise ValueError(f"unsecuredValidatorAllowableClockSkewMs: not an integer: {skew!r}") from None
        if self.skew_ms < 0:
            raise ValueError(f"Allowable clock skew millis must not be negative: {skew}")

    def validate(self, token: str, now_ms: int) -> OAuthBearerToken:
        if ".." in token:
            raise TokenValidationError("Malformed compact serialization contains '..'")
        parts = token.split(".")
        if len(parts) != 3:
            raise TokenValidationError("Unsecured JWS compact serializations must have 3 dot-separated "
                                       "Base64URL-encoded values")
        header, claims = _b64url_json(parts[0]), _b64url_json(parts[1])
        if header.get("alg") != "none":
            raise TokenValidationError("Unsecured JWS must have 'none' for an algorithm")
        if parts[2]:
            raise TokenValidationError("Unsecured JWS must not contain a digital signature")
        exp = _number(claims, "exp")
        if exp is None:
            raise TokenValidationError("No expiration time in JWT")
        principal = claims.get(self.principal_claim)
        if not isinstance(principal, str) or not principal.strip():
            raise TokenValidationError(f"No principal name in JWT claim: {self.principal_claim}")
        iat = _number(claims, "iat")
        if iat is not None and 1000 * iat > now_ms + self.skew_ms:
            raise TokenValidationError(f"The Issued At value ({iat} seconds) was after the indicated time "
                                       f"({now_ms} ms) plus allowable clock skew ({self.skew_ms} ms)")
        if now_ms - self.skew_ms >= 1000 * exp:
            raise TokenValidationError(f"The indicated time ({now_ms} ms) minus allowable clock skew "
                                       f"({self.skew_ms} ms) was on or after the Expiration Time value ({exp} seconds)")
        if iat is not None and exp <= iat:
            raise TokenValidationError(f"The Expiration Time time ({exp} seconds) was not after the Issued "
                                       f"At time ({iat} seconds)")
        scope = _scope(claims, self.scope_claim)
        for s in self.required_scope:
            if s not in scope:
                raise TokenValidationError(f"The provided scope ({sorted(scope)}) was missing a required scope "
                                           f"({s}). All required scope elements: {self.required_scope}",
                                           "insufficient_scope", str(self.required_scope))
        return OAuthBearerToken(principal, scope, round(exp * 1000),
                                None if iat is None else round(iat * 1000))


_ASYMMETRIC = {"RSA": ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512"),
               "EC": ("ES256", "ES384", "ES512"), "OKP": ("EdDSA",)}


def jwks_path(url: str) -> str:
    """``file:///etc/kafka/jwks.json`` or a plain path -> the path; http(s) is refused here."""
    u = urlparse(url)
    if u.scheme in ("", "file"):
        return url2pathname(u.path) if u.scheme else url
    raise ValueError(f"sasl.oauthbearer.jwks.endpoint.url: only file: URLs are supported by Hourglass "
                     f"(got a {u.scheme}: URL); download the JWKS to a file and point at it")


class JwksValidator:
    """Signed JWTs against a JWKS file (Kafka's ``BrokerJwtValidator`` rules)."""

    def __init__(self, jwks_url: str, *, expected_audience: list[str] | None = None,
                 expected_issuer: str | None = None, sub_claim: str = "sub", scope_claim: str = "scope",
                 clock_skew_s: int = 30):
        import jwt  # PyJWT, with cryptography for RSA/EC/EdDSA
        self._jwt = jwt
        self.path = jwks_path(jwks_url)
        self.audience = [a for a in (expected_audience or []) if a]
        self.issuer = expected_issuer or None
        self.sub_claim = sub_claim or "sub"
        self.scope_claim = scope_claim or "scope"
        self.skew_s = clock_skew_s
        self._mtime: float | None = None
        self._keys: list[Any] = []
        self._reload()  # a missing or bad file fails at start, not at the first client

    def _reload(self) -> None:
        st = os.stat(self.path)
        if st.st_mtime == self._mtime:
            return
        with open(self.path) as f:
            doc = json.load(f)
        keys = []
        for k in doc.get("keys", []):
            if k.get("kty") not in _ASYMMETRIC or k.get("use", "sig") != "sig":
                continue
            keys.append((k, self._jwt.PyJWK(k)))
        if not keys:
            raise ValueError(f"JWKS {self.path}: no usable signing keys (RSA, EC or OKP with use=sig)")
        self._keys, self._mtime = keys, st.st_mtime

    def validate(self, token: str, now_ms: int) -> OAuthBearerToken:
        jwt = self._jwt
        try:
            self._reload()
        except (OSError, ValueError):
            pass  # keep the keys we have; the file may be mid-replacement
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise TokenValidationError(f"malformed JWT: {type(exc).__name__}") from None
        alg, kid = header.get("alg"), header.get("kid")
        candidates = [(d, k) for d, k in self._keys if kid is None or d.get("kid") == kid]
        candidates = [(d, k) for d, k in candidates
                      if alg in _ASYMMETRIC[d["kty"]] and d.get("alg", alg) == alg]
        if not candidates:
            raise TokenValidationError(f"no JWKS key for kid {kid!r} and alg {alg!r}")
        last: Exception | None = None
        for _, key in candidates:
            try:
                claims = jwt.decode(
                    token, key.key, algorithms=[alg], audience=self.audience or None, issuer=self.issuer,
                    leeway=self.skew_s,
                    options={"require": ["exp", "iat"], "verify_aud": bool(self.audience)})
                break
            except jwt.PyJWTError as exc:
                last = exc
        else:
            raise TokenValidationError(f"JWT rejected: {type(last).__name__}: {last}") from None
        # PyJWT checks exp against the wall clock; the caller's clock decides too
        if now_ms - 1000 * self.skew_s >= 1000 * float(claims["exp"]):
            raise TokenValidationError("JWT expired")
        principal = claims.get(self.sub_claim)
        if not isinstance(principal, str) or not principal.strip():
            raise TokenValidationError(f"No principal name in JWT claim: {self.sub_claim}")
        return OAuthBearerToken(principal, _scope(claims, self.scope_claim), round(float(claims["exp"]) * 1000),
                                round(float(claims["iat"]) * 1000))
