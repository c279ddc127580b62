"""Delegation tokens (KIP-48): the rules as pure functions, and the broker's durable token store.

A token is Kafka's ``TokenInformation``: a UUID token id, the owner, the requester, the
renewers, and three times (issued, expires, max). Its HMAC is HMAC-SHA512 of the token id
under ``delegation.token.secret.key`` (Kafka's ``DelegationTokenManager.createHmac``), so it is
recomputed, never stored. A client logs in over SCRAM with the token id as user name, the
base64 HMAC as password and the SCRAM extension ``tokenauth=true``; the principal is then the
owner, marked token-authenticated (Kafka's ``ScramSaslServer``).

The rules (Kafka 4.4's broker ``KafkaApis`` checks, then its controller's
``DelegationTokenControlManager``):
- a token request (create, renew, expire, describe) is refused on PLAINTEXT, on SSL without a
  client certificate and on a token-authenticated connection (``allow_token_requests``);
- expiry = min(max, now + ``delegation.token.expiry.time.ms``), max = now + min(requested max
  lifetime when > 0, ``delegation.token.max.lifetime.ms``); a renewal moves the expiry to
  min(max, now + min(period when > 0, expiry.time.ms)); only the owner or a renewer may renew
  or expire; an expiry period < 0 removes the token at once;
- a token is expired once max < now or expiry < now; expired tokens are swept every
  ``delegation.token.expiry.check.interval.ms`` and cannot be renewed or expired.

Store (``delegation-tokens.json`` beside the SCRAM credentials)::

    {"version": 1, "tokens": [{"token_id": "...", "owner": "User:alice", "requester": "User:alice",
                               "renewers": ["User:bob"], "issue_ms": 1, "expiry_ms": 2, "max_ms": 3}]}

It holds no secret (the HMACs follow from the key), and every change rewrites it atomically
(temp file, fsync, rename, directory fsync): after a crash it holds the old set or the new one.
"""
from __future__ import annotations

import base64
import hashlib
import hmac as _hmac
import logging
from pathlib import Path
from typing import Callable, NamedTuple

from broker.security.scram import ScramCredential, ScramMechanism, credential_from_password
from protocol.errors import ErrorCode as E

log = logging.getLogger(__name__)

USER_TYPE = "User"
LONG_MAX = 2**63 - 1
TOKEN_ITERATIONS = 4096  # Kafka prepares token credentials with each mechanism's minimum


class TokenSettings(NamedTuple):
    """``delegation.token.*`` broker keys; a None or empty secret key turns tokens off."""
    secret_key: str | None
    max_lifetime_ms: int = 604_800_000
    expiry_time_ms: int = 86_400_000

    @property
    def enabled(self) -> bool:
        return bool(self.secret_key)


class TokenInformation(NamedTuple):
    token_id: str
    owner: str            # "User:alice"
    requester: str
    renewers: tuple[str, ...]
    issue_ms: int
    expiry_ms: int
    max_ms: int

    def owner_or_renewer(self, principal: str) -> bool:
        return principal == self.owner or principal in self.renewers

    def expired(self, now_ms: int) -> bool:
        return self.max_ms < now_ms or self.expiry_ms < now_ms


def principal_parts(principal: str) -> tuple[str, str]:
    """``"User:alice"`` -> ("User", "alice") (Kafka's ``SecurityUtils.parseKafkaPrincipal``)."""
    typ, _, name = principal.partition(":")
    return typ, name


def new_token_id() -> str:
    """A random Kafka ``Uuid`` as Kafka prints it (``new_uuid`` never starts with '-')."""
    from broker.cluster import new_uuid, uuid_to_base64
    return uuid_to_base64(new_uuid())


def create_hmac(secret_key: str, token_id: str) -> bytes:
    return _hmac.new(secret_key.encode("utf-8"), token_id.encode("utf-8"), hashlib.sha512).digest()


def _sum(now: int, duration: int) -> int:
    return LONG_MAX if now > LONG_MAX - duration else now + duration


def allow_token_requests(security_protocol: str, principal: str, token_authenticated: bool) -> bool:
    """Kafka's ``KafkaApis.allowTokenRequests``: tokens are for authenticated, non-token
    connections only."""
    if token_authenticated or security_protocol == "PLAINTEXT":
        return False
    return not (security_protocol == "SSL" and principal == "User:ANONYMOUS")


def refusal(security_protocol: str, principal: str, token_authenticated: bool,
            settings: TokenSettings) -> tuple[int, int] | None:
    """(error code, expiry) when Kafka 4.4 refuses a renewal or an expiration before looking at
    the token: -1 from its broker (a connection that may not ask), 0 from its controller
    (tokens off); None when the token decides."""
    if not allow_token_requests(security_protocol, principal, token_authenticated):
        return E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, -1
    if not settings.enabled:
        return E.DELEGATION_TOKEN_AUTH_DISABLED, 0
    return None


def new_token(settings: TokenSettings, now_ms: int, owner: str, requester: str, renewers: list[str],
              max_lifetime_ms: int, token_id: str | None = None) -> TokenInformation:
    """The token a valid CreateDelegationToken makes (the caller checked the refusals)."""
    max_life = settings.max_lifetime_ms
    if max_lifetime_ms > 0:
        max_life = min(max_life, max_lifetime_ms)
    max_ms = _sum(now_ms, max_life)
    expiry = min(max_ms, _sum(now_ms, settings.expiry_time_ms))
    return TokenInformation(token_id or new_token_id(), owner, requester, tuple(renewers), now_ms, expiry, max_ms)


def renewal(settings: TokenSettings, token: TokenInformation | None, principal: str, period_ms: int,
            now_ms: int) -> tuple[int, int]:
    """(error code, new expiry) of a RenewDelegationToken (0 as the expiry of a refusal, as
    Kafka's controller answers)."""
    if token is None:
        return E.DELEGATION_TOKEN_NOT_FOUND, 0
    if token.expired(now_ms):
        return E.DELEGATION_TOKEN_EXPIRED, 0
    if not token.owner_or_renewer(principal):
        return E.DELEGATION_TOKEN_OWNER_MISMATCH, 0
    life = settings.expiry_time_ms
    if period_ms > 0:
        life = min(life, period_ms)
    return 0, min(token.max_ms, now_ms + life)


def expiration(token: TokenInformation | None, principal: str, period_ms: int,
               now_ms: int) -> tuple[int, int, bool]:
    """(error code, new expiry, remove now) of an ExpireDelegationToken. Kafka checks the
    owner before the expiry here, and a negative period removes even an expired token."""
    if token is None:
        return E.DELEGATION_TOKEN_NOT_FOUND, 0, False
    if not token.owner_or_renewer(principal):
        return E.DELEGATION_TOKEN_OWNER_MISMATCH, 0, False
    if period_ms < 0:
        return 0, now_ms, True
    if token.expired(now_ms):
        return E.DELEGATION_TOKEN_EXPIRED, 0, False
    return 0, min(token.max_ms, _sum(now_ms, period_ms)), False


def visible(token: TokenInformation, requester: str, owners: list[str] | None,
            may_describe_token: Callable[[str], bool], may_describe_owner: Callable[[str], bool]) -> bool:
    """Kafka's ``DelegationTokenManager.filterToken``: asked for (owners None: all), then the
    caller's own or renewable token, or DESCRIBE on the token, or DESCRIBE_TOKENS on its owner."""
    if owners is not None and not any(token.owner_or_renewer(o) for o in owners):
        return False
    if token.owner_or_renewer(requester):
        return True
    return may_describe_token(token.token_id) or may_describe_owner(token.owner)


class DelegationTokenStore:
    """token id -> TokenInformation, loaded at start and saved after every change; the SCRAM
    credentials a token logs in with are derived from its HMAC when first needed."""

    FILE = "delegation-tokens.json"

    def __init__(self, directory: Path | None, settings: TokenSettings):
        self.settings = settings
        self.path = None if directory is None else Path(directory) / self.FILE
        self.tokens: dict[str, TokenInformation] = {}
        self._by_hmac: dict[bytes, str] = {}
        self._credentials: dict[tuple[str, ScramMechanism], ScramCredential] = {}
        if self.path is not None:
            self._load()

    def _load(self) -> None:
        from broker.cluster import read_json
        for t in (read_json(self.path) or {}).get("tokens", []):
            self._index(TokenInformation(t["token_id"], t["owner"], t["requester"], tuple(t["renewers"]),
                                         int(t["issue_ms"]), int(t["expiry_ms"]), int(t["max_ms"])))

    def _index(self, token: TokenInformation) -> None:
        self.tokens[token.token_id] = token
        if self.settings.enabled:
            self._by_hmac[self.hmac(token.token_id)] = token.token_id

    def hmac(self, token_id: str) -> bytes:
        return create_hmac(self.settings.secret_key, token_id)

    def by_hmac(self, mac: bytes) -> TokenInformation | None:
        tid = self._by_hmac.get(bytes(mac))
        return None if tid is None else self.tokens.get(tid)

    def put(self, token: TokenInformation) -> None:
        self._index(token)
        self.save()

    def remove(self, token_ids: list[str]) -> None:
        for tid in token_ids:
            self.tokens.pop(tid, None)
            self._by_hmac = {m: t for m, t in self._by_hmac.items() if t != tid}
            for mech in ScramMechanism:
                self._credentials.pop((tid, mech), None)
        self.save()

    def sweep(self, now_ms: int) -> list[TokenInformation]:
        """Remove every expired token (Kafka's ``sweepExpiredDelegationTokens``)."""
        gone = [t for t in self.tokens.values() if t.expired(now_ms)]
        for t in gone:
            log.info("Delegation token expired for token: %s for owner: %s", t.token_id, t.owner)
        if gone:
            self.remove([t.token_id for t in gone])
        return gone

    def credential(self, token_id: str, mech: ScramMechanism) -> tuple[ScramCredential, TokenInformation] | None:
        """The SCRAM credential of a token login: password = base64(HMAC), 4096 iterations."""
        token = self.tokens.get(token_id)
        if token is None or not self.settings.enabled:
            return None
        cred = self._credentials.get((token_id, mech))
        if cred is None:
            password = base64.b64encode(self.hmac(token_id)).decode()
            cred = self._credentials[(token_id, mech)] = credential_from_password(mech, password, TOKEN_ITERATIONS)
        return cred, token

    def save(self) -> None:
        if self.path is None:
            return
        from broker.cluster import write_private_json
        write_private_json(self.path, {"version": 1, "tokens": [
            {"token_id": t.token_id, "owner": t.owner, "requester": t.requester, "renewers": list(t.renewers),
             "issue_ms": t.issue_ms, "expiry_ms": t.expiry_ms, "max_ms": t.max_ms}
            for t in sorted(self.tokens.values(), key=lambda t: (t.issue_ms, t.token_id))]})
