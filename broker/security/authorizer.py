"""Kafka's StandardAuthorizer (KRaft; AclAuthorizer decides the same way), over a durable store.

Decision for (principal, client host, operation, resource type, resource name):
1. a super user (``super.users``, ``User:a;User:b``) is allowed everything;
2. the ACLs that apply to the resource are the LITERAL ones on its exact name, the LITERAL
   ones on ``*`` and the PREFIXED ones on any prefix of its name;
3. of those, an ACL matches when its principal is the caller's or ``User:*``, its host is the
   caller's address or ``*``, and its operation is ALL, the asked one, or, for ALLOW ACLs
   only, one that implies it (READ, WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS
   implies DESCRIBE_CONFIGS);
4. any matching DENY denies; else any matching ALLOW allows; else, if no ACL applies to the
   resource at all, ``allow.everyone.if.no.acl.found`` decides; else denied.

Store (``acls.json`` in the broker's metadata dir): ``{"version": 1, "acls": [binding, ...]}``
with enum names (``"TOPIC"``, ``"PREFIXED"``, ``"READ"``, ``"ALLOW"``); every change rewrites
it atomically (temp file, fsync, rename, directory fsync), so a crash or kill -9 leaves the
old set or the new one, never a mix. One change (one CreateAcls or DeleteAcls request) is
one write, atomic as Kafka's controller applies it.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Iterable

from broker.security.acl import (
    WILDCARD, WILDCARD_PRINCIPAL, SUPPORTED_OPERATIONS, AccessControlEntry, AclBinding, AclBindingFilter,
    AclError, AclOperation as Op, AclPermissionType as Perm, PatternType, ResourcePattern, ResourceType,
)

log = logging.getLogger(__name__)
audit = logging.getLogger("kafka.authorizer.logger")  # Kafka's audit logger name

# Accepted values of ``authorizer.class.name`` that turn ACLs on (Kafka's names).
AUTHORIZER_CLASSES = frozenset({
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "kafka.security.authorizer.AclAuthorizer",
    "kafka.security.auth.SimpleAclAuthorizer",
})

_IMPLIES_DESCRIBE = frozenset({Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER})
_IMPLIES_DESCRIBE_CONFIGS = frozenset({Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS})
_CACHE_MAX = 100_000


def parse_super_users(value: str | None) -> frozenset[str]:
    """``super.users`` is a semicolon-separated list of principals."""
    return frozenset(p.strip() for p in (value or "").split(";") if p.strip())


def ace_matches(ace: AccessControlEntry, principal: str, host: str, op: Op) -> bool:
    """Whether one entry applies to the caller and operation (Kafka's ``findResult``)."""
    if ace.principal != principal and ace.principal != WILDCARD_PRINCIPAL:
        return False
    if ace.host != WILDCARD and ace.host != host:
        return False
    if ace.operation == Op.ALL or ace.operation == op:
        return True
    if ace.permission != Perm.ALLOW:
        return False  # a DENY for READ does not deny DESCRIBE
    if op == Op.DESCRIBE:
        return ace.operation in _IMPLIES_DESCRIBE
    if op == Op.DESCRIBE_CONFIGS:
        return ace.operation in _IMPLIES_DESCRIBE_CONFIGS
    return False


class AclStore:
    """The ACL set on disk; ``load`` at start, ``save`` after every change."""

    FILE = "acls.json"

    def __init__(self, directory: Path):
        self.path = Path(directory) / self.FILE

    def load(self) -> list[AclBinding]:
        try:
            doc = json.loads(self.path.read_text())
        except FileNotFoundError:
            return []
        out = []
        for d in doc.get("acls", []):
            out.append(AclBinding(
                ResourcePattern(ResourceType[d["resource_type"]], d["name"], PatternType[d["pattern_type"]]),
                AccessControlEntry(d["principal"], d["host"], Op[d["operation"]], Perm[d["permission"]])))
        return out

    def save(self, bindings: Iterable[AclBinding]) -> None:
        from broker.cluster import atomic_write
        acls = [{"resource_type": b.pattern.resource_type.name, "name": b.pattern.name,
                 "pattern_type": b.pattern.pattern_type.name, "principal": b.entry.principal,
                 "host": b.entry.host, "operation": b.entry.operation.name,
                 "permission": b.entry.permission.name} for b in bindings]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, json.dumps({"version": 1, "acls": acls}, indent=1).encode())


class StandardAuthorizer:
    """ACL decisions and ACL administration. ``store`` None keeps ACLs in memory only."""

    def __init__(self, *, super_users: Iterable[str] = (), allow_everyone_if_no_acl_found: bool = False,
                 store: AclStore | None = None):
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_everyone_if_no_acl_found
        self.store = store
        # (resource type, pattern type) -> resource name -> entries, in insertion order
        self._index: dict[tuple[ResourceType, PatternType], dict[str, list[AccessControlEntry]]] = {}
        self._bindings: dict[AclBinding, None] = {}  # insertion-ordered set
        self._cache: dict[tuple, bool] = {}
        if store is not None:
            for b in store.load():
                self._add(b)
            if self._bindings:
                log.info("loaded %d ACL binding(s) from %s", len(self._bindings), store.path)

    # ---- decisions --------------------------------------------------------------------------
    def authorize(self, principal: str, host: str, op: Op, resource_type: ResourceType, name: str,
                  *, log_denied: bool = True) -> bool:
        key = (principal, host, op, resource_type, name)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._decide(principal, host, op, resource_type, name)
            if len(self._cache) >= _CACHE_MAX:
                self._cache.clear()
            self._cache[key] = hit
        if not hit and log_denied:
            audit.info("Principal = %s is Denied operation = %s from host = %s on resource = %s:LITERAL:%s",
                       principal, op.name, host, resource_type.title, name)
        return hit

    def _decide(self, principal: str, host: str, op: Op, rt: ResourceType, name: str) -> bool:
        if principal in self.super_users:
            return True
        allowed = False
        any_acl = False
        for entries in self._applicable(rt, name):
            any_acl = True
            for ace in entries:
                if ace_matches(ace, principal, host, op):
                    if ace.permission == Perm.DENY:
                        return False
                    allowed = True
        if allowed:
            return True
        return self.allow_if_no_acl and not any_acl

    def _applicable(self, rt: ResourceType, name: str):
        """The entry lists of every pattern that applies to resource ``name``."""
        literal = self._index.get((rt, PatternType.LITERAL))
        if literal:
            hit = literal.get(name)
            if hit:
                yield hit
            if name != WILDCARD:
                hit = literal.get(WILDCARD)
                if hit:
                    yield hit
        prefixed = self._index.get((rt, PatternType.PREFIXED))
        if prefixed:
            for i in range(1, len(name) + 1):
                hit = prefixed.get(name[:i])
                if hit:
                    yield hit

    def authorize_by_resource_type(self, principal: str, host: str, op: Op, rt: ResourceType) -> bool:
        """Allowed ``op`` on at least one resource of type ``rt`` (Kafka's default
        ``Authorizer.authorizeByResourceType``, used e.g. by InitProducerId without a
        transactional id: IDEMPOTENT_WRITE on the cluster or WRITE on any topic)."""
        # a made-up name: super users and allow-everyone decide as for any single resource
        if self.authorize(principal, host, op, rt, "hardcode", log_denied=False):
            return True
        deny = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        allow = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        wildcard_allow = False
        for b in self._bindings:
            p, e = b.pattern, b.entry
            if p.resource_type != rt:
                continue
            if e.host != host and e.host != WILDCARD:
                continue
            if e.principal != principal and e.principal != WILDCARD_PRINCIPAL:
                continue
            if e.operation != op and e.operation != Op.ALL:
                continue
            if e.permission == Perm.DENY:
                if p.pattern_type == PatternType.LITERAL and p.name == WILDCARD:
                    return False
                deny[p.pattern_type].add(p.name)
            elif p.pattern_type == PatternType.LITERAL and p.name == WILDCARD:
                wildcard_allow = True
            else:
                allow[p.pattern_type].add(p.name)
        if wildcard_allow:
            return True
        for pt, names in allow.items():
            for n in names:
                if pt == PatternType.LITERAL and n in deny[PatternType.LITERAL]:
                    continue
                if not any(n[:i] in deny[PatternType.PREFIXED] for i in range(1, len(n) + 1)):
                    return True
        return False

    def authorized_operations(self, principal: str, host: str, rt: ResourceType, name: str) -> int:
        """The ``*_authorized_operations`` bit field: bit ``op.code`` set for every supported
        operation allowed on the resource."""
        bits = 0
        for op in SUPPORTED_OPERATIONS[rt]:
            if self.authorize(principal, host, op, rt, name, log_denied=False):
                bits |= 1 << op
        return bits

    # ---- administration ---------------------------------------------------------------------
    def acls(self, flt: AclBindingFilter) -> list[AclBinding]:
        return [b for b in self._bindings if flt.matches(b)]

    def new_acls(self, bindings: list[AclBinding]) -> int:
        """How many distinct valid bindings of ``bindings`` are not stored yet (the records a
        CreateAcls would write: Kafka bounds them per request)."""
        fresh = set()
        for b in bindings:
            try:
                b.validate()
            except AclError:
                continue
            if b not in self._bindings:
                fresh.add(b)
        return len(fresh)

    def matching_acls(self, filters: list[AclBindingFilter]) -> int:
        """How many distinct stored bindings ``filters`` (the valid ones) would delete."""
        hit: set = set()
        for f in filters:
            try:
                f.validate()
            except AclError:
                continue
            hit.update(b for b in self._candidates(f) if f.matches(b))
        return len(hit)

    def create_acls(self, bindings: list[AclBinding]) -> list[AclError | None]:
        """One result per binding (None: created or already present); one durable write."""
        results: list[AclError | None] = []
        changed = False
        for b in bindings:
            try:
                b.validate()
            except AclError as exc:
                results.append(exc)
                continue
            if b not in self._bindings:
                self._add(b)
                changed = True
            results.append(None)
        if changed:
            self._changed()
        return results

    def delete_acls(self, filters: list[AclBindingFilter]) -> list[list[AclBinding] | AclError]:
        """Per filter, the bindings it matched (and removed), or why the filter was refused."""
        results: list[list[AclBinding] | AclError] = []
        gone: dict[AclBinding, None] = {}
        for f in filters:
            try:
                f.validate()
            except AclError as exc:
                results.append(exc)
                continue
            hit = [b for b in self._candidates(f) if f.matches(b)]
            gone.update(dict.fromkeys(hit))
            results.append(hit)
        for b in gone:
            self._remove(b)
        if gone:
            self._changed()
        return results

    def __len__(self) -> int:
        return len(self._bindings)

    def _candidates(self, f: AclBindingFilter):
        """The bindings ``f`` may match: for a filter naming one resource exactly (a concrete
        type, LITERAL or PREFIXED, a name) only that resource's, from the index (a DeleteAcls
        of thousands of such filters over thousands of ACLs was their product on the loop,
        seconds); every binding otherwise."""
        p = f.pattern
        if (p.name is not None and p.resource_type != ResourceType.ANY
                and p.pattern_type in (PatternType.LITERAL, PatternType.PREFIXED)):
            pattern = ResourcePattern(p.resource_type, p.name, p.pattern_type)
            return [AclBinding(pattern, e) for e in self._index.get((p.resource_type, p.pattern_type), {}).get(p.name, ())]
        return self._bindings

    def _add(self, b: AclBinding) -> None:
        self._bindings[b] = None
        self._index.setdefault((b.pattern.resource_type, b.pattern.pattern_type), {}) \
            .setdefault(b.pattern.name, []).append(b.entry)

    def _remove(self, b: AclBinding) -> None:
        del self._bindings[b]
        by_name = self._index[(b.pattern.resource_type, b.pattern.pattern_type)]
        entries = by_name[b.pattern.name]
        entries.remove(b.entry)
        if not entries:
            del by_name[b.pattern.name]

    def _changed(self) -> None:
        self._cache.clear()
        if self.store is not None:
            self.store.save(self._bindings)
