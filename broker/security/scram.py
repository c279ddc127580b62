"""SCRAM credentials (RFC 5802 / 7677) and their durable store.

A credential is what Kafka's controller keeps (``UserScramCredentialRecord``): salt,
StoredKey = H(HMAC(SaltedPassword, "Client Key")), ServerKey = HMAC(SaltedPassword, "Server
Key") and the iteration count. Neither the password nor the salted password is kept: both
are password-equivalent. Iterations are 4096..16384 (Kafka's ``ScramMechanism.minIterations``
and ``ScramControlManager.MAX_ITERATIONS``).

Store (``scram-credentials.json`` in the broker's metadata dir)::

    {"version": 1, "users": {"alice": {"SCRAM-SHA-256": {"salt": b64, "stored_key": b64,
                                                         "server_key": b64, "iterations": 8192}}}}

Every change (one AlterUserScramCredentials request, or one ``hourglass users`` command run
against a stopped broker's data dir) rewrites it atomically (temp file, fsync, rename,
directory fsync): after a crash or kill -9 the file holds the old set or the new one. The
file is created with mode 0600.
"""
from __future__ import annotations

import base64
import enum
import hashlib
import hmac
import os
from pathlib import Path
from typing import NamedTuple

MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
DEFAULT_ITERATIONS = 4096  # kafka-configs.sh / kafka-storage.sh when iterations= is not given


class ScramMechanism(enum.IntEnum):
    """Wire codes of the SCRAM admin APIs."""
    UNKNOWN = 0
    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @classmethod
    def of(cls, code: int) -> "ScramMechanism":
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN

    @classmethod
    def from_name(cls, name: str) -> "ScramMechanism":
        try:
            return cls[name.replace("-", "_").upper()]
        except KeyError:
            return cls.UNKNOWN

    @property
    def mechanism_name(self) -> str:
        return self.name.replace("_", "-")

    @property
    def hash_name(self) -> str:
        return {1: "sha256", 2: "sha512"}[self.value]


MECHANISM_NAMES = ("SCRAM-SHA-256", "SCRAM-SHA-512")


class ScramCredential(NamedTuple):
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:  # never print key material
        return f"ScramCredential(iterations={self.iterations}, salt=[hidden], keys=[hidden])"


def credential_from_salted_password(mech: ScramMechanism, salt: bytes, salted_password: bytes,
                                    iterations: int) -> ScramCredential:
    h = mech.hash_name
    client_key = hmac.new(salted_password, b"Client Key", h).digest()
    server_key = hmac.new(salted_password, b"Server Key", h).digest()
    return ScramCredential(bytes(salt), hashlib.new(h, client_key).digest(), server_key, iterations)


def salted_password(mech: ScramMechanism, password: str, salt: bytes, iterations: int) -> bytes:
    """Hi(password, salt, i): PBKDF2 over the password's UTF-8 bytes (Kafka's ScramFormatter
    does no SASLprep)."""
    return hashlib.pbkdf2_hmac(mech.hash_name, password.encode("utf-8"), salt, iterations)


def credential_from_password(mech: ScramMechanism, password: str, iterations: int = DEFAULT_ITERATIONS,
                             salt: bytes | None = None) -> ScramCredential:
    salt = os.urandom(32) if salt is None else salt
    return credential_from_salted_password(mech, salt, salted_password(mech, password, salt, iterations),
                                           iterations)


class ScramCredentialStore:
    """user -> mechanism -> credential, loaded at start and saved after every change."""

    FILE = "scram-credentials.json"

    def __init__(self, directory: Path | None):
        self.path = None if directory is None else Path(directory) / self.FILE
        self.users: dict[str, dict[ScramMechanism, ScramCredential]] = {}
        if self.path is not None:
            self._load()

    def _load(self) -> None:
        from broker.cluster import read_json
        b64 = base64.b64decode
        for user, creds in (read_json(self.path) or {}).get("users", {}).items():
            self.users[user] = {
                ScramMechanism.from_name(m): ScramCredential(b64(c["salt"]), b64(c["stored_key"]),
                                                             b64(c["server_key"]), int(c["iterations"]))
                for m, c in creds.items()}

    def get(self, user: str, mech: ScramMechanism) -> ScramCredential | None:
        return self.users.get(user, {}).get(mech)

    def apply(self, upserts: dict[str, tuple[ScramMechanism, ScramCredential]],
              deletions: dict[str, ScramMechanism]) -> None:
        """One atomic change: every upsert and deletion, then one durable write."""
        for user, mech in deletions.items():
            creds = self.users.get(user, {})
            creds.pop(mech, None)
            if not creds:
                self.users.pop(user, None)
        for user, (mech, cred) in upserts.items():
            self.users.setdefault(user, {})[mech] = cred
        self.save()

    def save(self) -> None:
        if self.path is None:
            return
        from broker.cluster import write_private_json
        b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
        doc = {"version": 1, "users": {
            user: {m.mechanism_name: {"salt": b64(c.salt), "stored_key": b64(c.stored_key),
                                      "server_key": b64(c.server_key), "iterations": c.iterations}
                   for m, c in sorted(creds.items())}
            for user, creds in sorted(self.users.items())}}
        write_private_json(self.path, doc)  # it holds key material


def scramp_module():
    """``scramp``, made to take salts of any length. Kafka sets no minimum (its
    ScramControlManager checks only the iterations; RFC 5802 names none either), and a 4-byte
    salt is common in client examples; scramp's own floor of 12 bytes would otherwise refuse
    to log in (server and client side) with a credential Kafka accepted."""
    import scramp
    import scramp.core
    scramp.core.Salt.MIN_LENGTH = 0
    return scramp
