"""HTTP basic auth against the broker's own users: SASL/PLAIN users of any listener's JAAS
config and the SCRAM credentials the broker stores (AlterUserScramCredentials, ``hourglass
users``). A request authenticated as ``alice`` acts as principal ``User:alice``, so the broker's
ACLs apply to it exactly as on the Kafka listener.

Authentication is required as soon as any Kafka listener authenticates with PLAIN or SCRAM (a
broker that secures its Kafka port does not leave an open HTTP door beside it); otherwise every
request is ``User:ANONYMOUS``.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time

from broker.security.principal import ANONYMOUS
from broker.security.sasl import PLAIN
from broker.security.scram import ScramMechanism, credential_from_salted_password, salted_password

# A SCRAM check costs a PBKDF2 (4096+ iterations); a verified password is remembered this long
# for the same stored credential, so a browser's burst of requests does not pay it each time.
_CACHE_SECONDS = 60.0


class BasicAuthError(Exception):
    """Missing or malformed ``Authorization`` header, or wrong user/password."""


def parse_basic(header: str | None) -> tuple[str, str]:
    """``Basic base64(user:password)`` -> (user, password); raises BasicAuthError."""
    if not header:
        raise BasicAuthError("Unauthorized: no credentials were given")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "basic" or not token.strip():
        raise BasicAuthError("Unauthorized: only HTTP basic authentication is accepted")
    try:
        text = base64.b64decode(token.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise BasicAuthError("Unauthorized: malformed basic credentials") from None
    user, sep, password = text.partition(":")
    if not sep or not user:
        raise BasicAuthError("Unauthorized: malformed basic credentials")
    return user, password


class BrokerUsers:
    """The broker's users as seen by its HTTP services."""

    def __init__(self, broker):
        self.broker = broker
        self._verified: dict[tuple[str, bytes], tuple[object, float]] = {}

    def _sasl_factories(self):
        return [s.sasl for s in self.broker.listener_security.values() if s.sasl is not None]

    @property
    def required(self) -> bool:
        """True when a Kafka listener authenticates users with PLAIN or SCRAM."""
        return any(m == PLAIN or m.startswith("SCRAM-")
                   for f in self._sasl_factories() for m in f.mechanisms)

    def principal(self, user: str, password: str) -> str | None:
        """``User:<user>`` when the password is right for a PLAIN or SCRAM user, else None."""
        for f in self._sasl_factories():
            expected = f.plain_users.get(user)
            if expected is not None and hmac.compare_digest(expected.encode(), password.encode()):
                return f"User:{user}"
        store = self.broker.security.scram if self.broker.security is not None else None
        if store is None:
            return None
        key = (user, hashlib.sha256(password.encode()).digest())
        for mech in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512):
            cred = store.get(user, mech)
            if cred is None:
                continue
            hit = self._verified.get(key)
            if hit is not None and hit[0] is cred and hit[1] > time.monotonic():
                return f"User:{user}"
            derived = credential_from_salted_password(
                mech, cred.salt, salted_password(mech, password, cred.salt, cred.iterations), cred.iterations)
            if hmac.compare_digest(derived.stored_key, cred.stored_key):
                self._verified[key] = (cred, time.monotonic() + _CACHE_SECONDS)
                return f"User:{user}"
        return None

    def authenticate(self, header: str | None, *, required: bool | None = None) -> str:
        """The request's principal; ``User:ANONYMOUS`` when auth is not required (``required``:
        the service's own choice, None: ``self.required``)."""
        if not (self.required if required is None else required):
            return ANONYMOUS
        user, password = parse_basic(header)
        principal = self.principal(user, password)
        if principal is None:
            raise BasicAuthError("Unauthorized: wrong user name or password")
        return principal
