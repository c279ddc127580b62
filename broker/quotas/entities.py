"""Quota entities, keys and the precedence between them: Kafka's rules as plain functions.

An entity is a tuple of (entity type, name) pairs sorted by type, a name of None being the
type's ``<default>``: ``(("user", "alice"),)``, ``(("client-id", None), ("user", "alice"))``,
``(("ip", "10.0.0.1"),)``. Quotas are ``{entity: {key: value}}``.

Validation and messages follow Kafka 4.x's ``ClientQuotaControlManager`` (every refusal is
INVALID_REQUEST); the DescribeClientQuotas filter follows ``ClientQuotasImage.describe``;
the precedence follows ``ClientQuotaManager``'s default callback:

  1 /config/users/<user>/clients/<client-id>   5 /config/users/<default>/clients/<default>
  2 /config/users/<user>/clients/<default>     6 /config/users/<default>
  3 /config/users/<user>                       7 /config/clients/<client-id>
  4 /config/users/<default>/clients/<client-id> 8 /config/clients/<default>
"""
from __future__ import annotations

import ipaddress
import math
import socket
from typing import Iterable, NamedTuple

USER, CLIENT_ID, IP = "user", "client-id", "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"

# Kafka's QuotaConfig types: LONG and INT keys take whole numbers only.
USER_CLIENT_KEYS = {PRODUCER_BYTE_RATE: "LONG", CONSUMER_BYTE_RATE: "LONG",
                    REQUEST_PERCENTAGE: "DOUBLE", CONTROLLER_MUTATION_RATE: "DOUBLE"}
IP_KEYS = {CONNECTION_CREATION_RATE: "INT"}

MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

Entity = tuple  # tuple[tuple[str, str | None], ...], sorted by type


class QuotaError(ValueError):
    """Kafka's INVALID_REQUEST (or, with ``unsupported``, UNSUPPORTED_VERSION) with its message."""

    def __init__(self, message: str, unsupported: bool = False):
        super().__init__(message)
        self.unsupported = unsupported


def entity_str(entity: Entity) -> str:
    """Kafka's ``ClientQuotaEntity.toString`` shape, for messages."""
    return "ClientQuotaEntity(entries=" + "{" + ", ".join(f"{t}={n}" for t, n in entity) + "})"


def make_entity(pairs: Iterable[tuple[str, str | None]]) -> Entity:
    """The entity of a request's (type, name) list; a type named twice keeps the last name
    (Kafka builds a map from the list)."""
    d: dict[str, str | None] = {}
    for t, n in pairs:
        d[t] = n
    return tuple(sorted(d.items()))


def _valid_ip(name: str | None) -> bool:
    if name is None:
        return True
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    try:  # Kafka accepts a resolvable host name (InetAddress.getByName)
        socket.getaddrinfo(name, None)
        return True
    except (OSError, UnicodeError):
        return False


def keys_for(entity: Entity) -> dict[str, str]:
    """The quota keys an entity may hold (and their types); raises QuotaError for a bad
    entity, with Kafka's message."""
    if not entity:
        raise QuotaError("Invalid empty client quota entity")
    types = dict(entity)
    for t, n in entity:
        if t not in ENTITY_TYPES:
            raise QuotaError(f"Unhandled client quota entity type: {t}")
        if n is not None and n == "":
            raise QuotaError(f"Empty {t} not supported")
    if IP in types:
        if USER in types or CLIENT_ID in types:
            # sic: Kafka's message lacks the space
            raise QuotaError("Invalid quota entity combination, IP entity should"
                             "not be combined with User or ClientId")
        if not _valid_ip(types[IP]):
            raise QuotaError(f"{types[IP]} is not a valid IP or resolvable host.")
        return IP_KEYS
    return USER_CLIENT_KEYS


_LIMITS = {"INT": (2**31 - 1, "an INT"), "LONG": (2**63 - 1, "a LONG")}


def check_value(keys: dict[str, str], key: str, value: float) -> None:
    """Kafka's ``validateQuotaKeyValue``."""
    kind = keys.get(key)
    if kind is None:
        raise QuotaError(f"Invalid configuration key {key}")
    if not value > 0.0:  # NaN is refused too
        raise QuotaError(f"Quota {key} must be greater than 0")
    if kind == "DOUBLE":
        if math.isinf(value):
            raise QuotaError(f"Quota {key} must be a finite number")
        return
    limit, name = _LIMITS[kind]
    if value > limit:
        raise QuotaError(f"Proposed value for {key} is too large for {name}.")
    if abs(math.fmod(value, 1.0)) > 1e-6:
        raise QuotaError(f"{key} cannot be a fractional value.")


class Alteration(NamedTuple):
    entity: Entity
    ops: list  # [(key, value or None to remove)]


def plan_alterations(current: dict, alterations: list[Alteration]) -> tuple[dict, dict]:
    """Kafka's ``ClientQuotaControlManager.alterClientQuotas``, without side effects.

    Returns (results, changes): ``results`` maps each entity (in request order) to None or a
    QuotaError; ``changes`` maps each accepted entity to {key: value or None (remove)}, only
    the keys whose value changes."""
    results: dict = {}
    changes: dict = {}
    for alt in alterations:
        ops: dict[str, float | None] = {}
        dup = None
        for key, value in alt.ops:
            if key in ops:
                dup = QuotaError(f"Duplicate quota key {key} not updating quota for this entity "
                                 f"{entity_str(alt.entity)}")
            else:
                ops[key] = value
        if dup is not None:
            results[alt.entity] = dup
        if alt.entity in results:
            changes.pop(alt.entity, None)
            results[alt.entity] = QuotaError(f"Ignoring duplicate entity {entity_str(alt.entity)}")
            continue
        try:
            keys = keys_for(alt.entity)
            have = current.get(alt.entity, {})
            change = {}
            for key, value in ops.items():
                if value is None:
                    if key in have:
                        change[key] = None
                else:
                    check_value(keys, key, value)
                    if have.get(key) != value:
                        change[key] = value
        except QuotaError as exc:
            results[alt.entity] = exc
            continue
        results[alt.entity] = None
        if change:
            changes[alt.entity] = change
    return results, changes


def parse_filter(components: Iterable[tuple[str, int, str | None]]) -> tuple[dict, set]:
    """A DescribeClientQuotas filter as (exact matches {type: name or None}, types that must
    be present); raises QuotaError with Kafka's message."""
    exact: dict[str, str | None] = {}
    typed: set[str] = set()
    for etype, match_type, match in components:
        if etype == "":
            raise QuotaError("Invalid empty entity type.")
        if etype in exact or etype in typed:
            raise QuotaError(f"Entity type {etype} cannot appear more than once in the filter.")
        if etype not in ENTITY_TYPES:
            raise QuotaError(f"Unsupported entity type {etype}", unsupported=True)
        if match_type == MATCH_EXACT:
            if match is None:
                raise QuotaError("Request specified MATCH_TYPE_EXACT, but set match string to null.")
            exact[etype] = match
        elif match_type == MATCH_DEFAULT:
            if match is not None:
                raise QuotaError("Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
            exact[etype] = None
        elif match_type == MATCH_SPECIFIED:
            if match is not None:
                raise QuotaError("Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
            typed.add(etype)
        else:
            raise QuotaError(f"Unknown match type {match_type}")
    if (IP in exact or IP in typed) and (USER in exact or USER in typed or CLIENT_ID in exact or CLIENT_ID in typed):
        raise QuotaError("Invalid entity filter component combination. IP filter component should not be "
                         "used with user or clientId filter component.")
    return exact, typed


def matches(entity: Entity, exact: dict, typed: set, strict: bool) -> bool:
    """Kafka's ``ClientQuotasImage.matches``."""
    d = dict(entity)
    if strict and len(d) != len(exact) + len(typed):
        return False
    for t, n in exact.items():
        if t not in d or d[t] != n:
            return False
    return all(t in d for t in typed)


# ---- precedence ------------------------------------------------------------------------------

def _e(user=..., client=...) -> Entity:
    pairs = []
    if client is not ...:
        pairs.append((CLIENT_ID, client))
    if user is not ...:
        pairs.append((USER, user))
    return tuple(pairs)


def metric_tags(has, user: str, client_id: str) -> tuple[str, str]:
    """Which (user, client-id) a client's usage is counted under, given ``has(entity)`` (does
    this entity carry the quota key): the walk of Kafka's ``quotaMetricTags``. Clients that
    share the tags share one rate (a user quota is shared by all that user's clients)."""
    if has(_e(user, client_id)) or has(_e(user, None)):
        return user, client_id
    if has(_e(user)):
        return user, ""
    if has(_e(None, client_id)) or has(_e(None, None)):
        return user, client_id
    if has(_e(None)):
        return user, ""
    return "", client_id


def quota_limit(get, user_tag: str, client_tag: str) -> float | None:
    """The bound for a rate counted under these tags, given ``get(entity)`` (the key's value
    on that entity, or None): Kafka's default callback ``quotaLimit``."""
    if user_tag and client_tag:
        chain = (_e(user_tag, client_tag), _e(user_tag, None), _e(None, client_tag), _e(None, None))
    elif user_tag:
        chain = (_e(user_tag), _e(None))
    elif client_tag:
        chain = (_e(client=client_tag), _e(client=None))
    else:
        return None
    for ent in chain:
        v = get(ent)
        if v is not None:
            return v
    return None


def resolve(quotas: dict, key: str, user: str, client_id: str) -> tuple[tuple[str, str], float | None]:
    """(metric tags, bound) of ``key`` for a client: the precedence above over ``quotas``."""
    def get(ent):
        q = quotas.get(ent)
        return None if q is None else q.get(key)
    tags = metric_tags(lambda ent: get(ent) is not None, user, client_id)
    return tags, quota_limit(get, *tags)
