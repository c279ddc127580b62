"""The broker's security state: the authorizer (when ACLs are on), the SCRAM credentials and
the delegation tokens.

They live in ``<first log dir>/.hourglass/`` (``acls.json``, ``scram-credentials.json``,
``delegation-tokens.json``), beside the topic metadata, so a data dir carries its users, ACLs
and tokens across restarts.

Broker keys (Kafka's): ``authorizer.class.name`` (StandardAuthorizer / AclAuthorizer names turn
ACLs on; empty: off), ``super.users``, ``allow.everyone.if.no.acl.found`` (default false).
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable

from broker.security.authorizer import AUTHORIZER_CLASSES, AclStore, StandardAuthorizer, parse_super_users
from broker.security.delegation import DelegationTokenStore, TokenSettings
from broker.security.sasl import SecurityConfigError
from broker.security.scram import ScramCredentialStore

log = logging.getLogger(__name__)

Lookup = Callable[[str], "str | None"]


def security_dir(log_dirs: list[Path]) -> Path:
    return Path(log_dirs[0]) / ".hourglass"


class BrokerSecurity:
    def __init__(self, authorizer: StandardAuthorizer | None, scram: ScramCredentialStore,
                 tokens: DelegationTokenStore | None = None):
        self.authorizer = authorizer
        self.scram = scram
        self.tokens = tokens if tokens is not None else DelegationTokenStore(None, TokenSettings(None))

    @classmethod
    def from_config(cls, get: Lookup, directory: Path | None,
                    token_settings: TokenSettings | None = None) -> "BrokerSecurity":
        name = (get("authorizer.class.name") or "").strip()
        authorizer = None
        if name:
            if name not in AUTHORIZER_CLASSES:
                raise SecurityConfigError(f"authorizer.class.name: unsupported authorizer {name!r} (supported: "
                                          f"{', '.join(sorted(AUTHORIZER_CLASSES))})")
            allow = (get("allow.everyone.if.no.acl.found") or "false").strip().lower()
            if allow not in ("true", "false"):
                raise SecurityConfigError(f"allow.everyone.if.no.acl.found: invalid value {allow!r}")
            authorizer = StandardAuthorizer(super_users=parse_super_users(get("super.users")),
                                            allow_everyone_if_no_acl_found=allow == "true",
                                            store=None if directory is None else AclStore(directory))
            log.info("ACL authorization on (%s): %d ACL binding(s), %d super user(s), "
                     "allow.everyone.if.no.acl.found=%s", name.rsplit(".", 1)[-1], len(authorizer),
                     len(authorizer.super_users), allow)
        settings = token_settings or TokenSettings(None)
        tokens = DelegationTokenStore(directory, settings)
        if settings.enabled:
            log.info("Delegation tokens on: %d token(s) stored", len(tokens.tokens))
        return cls(authorizer, ScramCredentialStore(directory), tokens)
