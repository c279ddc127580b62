"""Client metrics subscriptions (KIP-714): the CLIENT_METRICS config resources (type 16).

A subscription is a named set of up to three keys, validated as Kafka 4.4's
``ClientMetricsConfigs.validate``:

- ``metrics``: a list of metric-name prefixes (``*`` or an empty prefix: every metric);
- ``interval.ms``: the push interval, an INT within 100..3600000 (INVALID_REQUEST outside);
- ``match``: a list of ``selector=regex`` items, each selector one of ``MATCH_SELECTORS`` and
  each regex a valid pattern, split as Java's ``String.split("=")`` splits (so ``a=b=c`` and
  ``a=`` are illegal); a bad item: INVALID_CONFIG "Illegal client matching pattern: <item>".

Lists parse as Kafka's ConfigDef LIST (trimmed, comma-separated, empty text = empty list) and
must hold no empty value (duplicates are accepted, as Kafka 4.4 accepts them). An unknown key: INVALID_REQUEST; an empty
subscription name: INVALID_REQUEST. A subscription whose keys are all deleted no longer exists.

Kept durably as JSON (``client-metrics.json`` in the first log dir, written atomically): Kafka
keeps them as ConfigRecords in its metadata log; one node has no metadata log, so its cluster
metadata files hold them, as group configs (``broker.groups.group_configs``).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from protocol.errors import ErrorCode

CONFIG_FILE = "client-metrics.json"
METRICS, INTERVAL_MS, MATCH = "metrics", "interval.ms", "match"
CONFIG_KEYS = (METRICS, INTERVAL_MS, MATCH)
CONFIG_TYPES = {METRICS: "list", INTERVAL_MS: "int", MATCH: "list"}
DEFAULTS = {METRICS: "", INTERVAL_MS: "300000", MATCH: ""}
DOCS = {METRICS: "Telemetry metric name prefix list", INTERVAL_MS: "Metrics push interval in milliseconds",
        MATCH: "Client match criteria"}
DEFAULT_INTERVAL_MS = 300_000
MIN_INTERVAL_MS, MAX_INTERVAL_MS = 100, 3_600_000
MATCH_SELECTORS = ("client_instance_id", "client_id", "client_software_name", "client_software_version",
                   "client_source_address", "client_source_port")
INT_MIN, INT_MAX = -(2 ** 31), 2 ** 31 - 1


class ClientMetricsError(Exception):
    """A refused subscription change: ``code`` and Kafka's ``message``."""

    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def java_split(text: str, sep: str) -> list[str]:
    """Java's ``String.split(sep)`` for a literal one-character separator: trailing empty
    strings are removed (``"a=".split("=")`` is ``["a"]``), but not a lone empty input."""
    if text == "":
        return [""]
    parts = text.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def parse_list(key: str, value: str) -> list[str]:
    """Kafka's ConfigDef LIST parse, refusing empty items. (Kafka 4.4 declares the keys with
    ``ValidList.anyNonDuplicateValues`` but accepts ``a,a``: so do we.)"""
    text = value.strip()
    items = [] if text == "" else re.split(r"\s*,\s*", text)
    if any(i == "" for i in items):
        raise ClientMetricsError(ErrorCode.INVALID_CONFIG, f"Configuration '{key}' values must not be empty.")
    return items


def parse_int(key: str, value: str) -> int:
    """Kafka's ConfigDef INT parse (trimmed decimal within a Java int)."""
    text = value.strip()
    if re.fullmatch(r"[+-]?\d+", text) and INT_MIN <= int(text) <= INT_MAX:
        return int(text)
    raise ClientMetricsError(ErrorCode.INVALID_CONFIG,
                             f"Invalid value {value} for configuration {key}: Not a number of type INT")


def compile_pattern(regex: str) -> re.Pattern:
    """A Java regex as Python compiles it (the common syntax of both)."""
    return re.compile(regex)


def parse_match(items: list[str]) -> dict[str, re.Pattern]:
    """``selector=regex`` items -> {selector: compiled regex}; a later item of the same
    selector wins (Kafka's HashMap.put)."""
    out: dict[str, re.Pattern] = {}
    for item in items:
        pair = java_split(item, "=")
        if len(pair) != 2 or pair[0].strip() not in MATCH_SELECTORS:
            raise ClientMetricsError(ErrorCode.INVALID_CONFIG, f"Illegal client matching pattern: {item}")
        try:
            out[pair[0].strip()] = compile_pattern(pair[1].strip())
        except re.error:
            raise ClientMetricsError(ErrorCode.INVALID_CONFIG, f"Illegal client matching pattern: {item}") from None
    return out


def validate(name: str | None, props: dict[str, str]) -> None:
    """Raise ClientMetricsError unless ``props`` is a valid subscription named ``name``."""
    if not name:
        raise ClientMetricsError(ErrorCode.INVALID_REQUEST, "Subscription name can't be empty")
    for key in props:
        if key not in CONFIG_KEYS:
            raise ClientMetricsError(ErrorCode.INVALID_REQUEST, f"Unknown client metrics configuration: {key}")
    parsed = {}
    for key in CONFIG_KEYS:   # ConfigDef.parse goes through its keys in definition order
        if key in props:
            parsed[key] = parse_int(key, props[key]) if CONFIG_TYPES[key] == "int" else parse_list(key, props[key])
    if INTERVAL_MS in parsed and not MIN_INTERVAL_MS <= parsed[INTERVAL_MS] <= MAX_INTERVAL_MS:
        raise ClientMetricsError(ErrorCode.INVALID_REQUEST,
                                 f"Invalid value {parsed[INTERVAL_MS]} for {INTERVAL_MS}, interval must be "
                                 f"between 100 and 3600000 (1 hour)")
    if MATCH in parsed:
        parse_match(parsed[MATCH])


def normalized(props: dict[str, str]) -> dict[str, str]:
    """``props`` as Kafka 4.4 keeps them: a list value as its items joined by ``,`` (no spaces)."""
    return {k: ",".join(parse_list(k, v)) if CONFIG_TYPES.get(k) == "list" else v for k, v in props.items()}


@dataclass(frozen=True)
class Subscription:
    """A subscription as the telemetry path uses it."""
    name: str
    metrics: tuple[str, ...]
    interval_ms: int
    match: tuple[tuple[str, str], ...]   # (selector, regex source)

    @classmethod
    def of(cls, name: str, props: dict[str, str]) -> "Subscription":
        metrics = tuple(parse_list(METRICS, props.get(METRICS, "")))
        interval = parse_int(INTERVAL_MS, props[INTERVAL_MS]) if INTERVAL_MS in props else DEFAULT_INTERVAL_MS
        match = {k: p.pattern for k, p in parse_match(parse_list(MATCH, props.get(MATCH, ""))).items()}
        return cls(name, metrics, interval, tuple(sorted(match.items())))


class ClientMetricsSubscriptions:
    """The CLIENT_METRICS resources of this cluster, durable; ``version`` grows at each change
    (the telemetry path re-evaluates its clients' subscriptions when it moves)."""

    def __init__(self, directory: Path | None = None):
        self.path = Path(directory) / CONFIG_FILE if directory is not None else None
        self.configs: dict[str, dict[str, str]] = {}
        self.version = 0
        if self.path is not None and self.path.exists():
            self.configs = json.loads(self.path.read_text()).get("subscriptions", {})

    def get(self, name: str) -> dict[str, str]:
        return dict(self.configs.get(name, {}))

    def names(self) -> list[str]:
        """In creation order (kept across restarts): Kafka lists them from a hash map, whose
        order within a bucket is that order."""
        return list(self.configs)

    def set(self, name: str, new: dict[str, str], *, validate_only: bool = False) -> None:
        """Replace subscription ``name`` by ``new`` (validated as a whole; empty: removed)."""
        validate(name, new)
        new = normalized(new)
        if validate_only or new == self.configs.get(name, {}):
            return
        if new:
            self.configs[name] = dict(new)
        else:
            self.configs.pop(name, None)
        self.version += 1
        self._save()

    def subscriptions(self) -> list[Subscription]:
        return [Subscription.of(n, c) for n, c in sorted(self.configs.items())]

    def _save(self) -> None:
        if self.path is None:
            return
        from broker.cluster import atomic_write
        atomic_write(self.path, json.dumps({"version": 1, "subscriptions": self.configs}).encode())
