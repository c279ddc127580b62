"""Client telemetry (KIP-714): GetTelemetrySubscriptions (71) and PushTelemetry (72) as Kafka
4.4's ``ClientMetricsManager`` answers them.

A client instance (its id assigned by the broker at its first GetTelemetrySubscriptions, or
the one it names) gets the union of the metric prefixes of every subscription whose ``match``
selects it (``*`` alone when one of them subscribes everything), the lowest of their push
intervals (at most the 5-minute default), and a subscription id: CRC-32C of Java's
``HashSet.toString()`` of those prefixes followed by the interval, XOR the instance id's Java
hash. An instance is re-evaluated when the subscriptions change. Decisions:

- GetTelemetrySubscriptions sooner than one push interval after the instance's last request:
  THROTTLING_QUOTA_EXCEEDED;
- PushTelemetry with a zero or reserved instance id: INVALID_REQUEST; after a terminating push:
  INVALID_REQUEST; sooner than one push interval after the last push (unless it follows a
  GetTelemetrySubscriptions or is terminating): THROTTLING_QUOTA_EXCEEDED; another
  subscription id: UNKNOWN_SUBSCRIPTION_ID; a compression id Kafka does not know:
  UNSUPPORTED_COMPRESSION_TYPE; metrics over ``telemetry.max.bytes``: TELEMETRY_TOO_LARGE.

Instances expire after ``max(60 s, 3 push intervals)`` without a request, or when their
connection closes. Kafka hands accepted payloads to an exporter plugin (and drops them without
one); Hourglass keeps them: ``on_push`` (wired by the composition root) receives every accepted
payload.
"""
from __future__ import annotations

import logging
import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Callable

from broker.java_hash import java_hash_order
from protocol.errors import ErrorCode

log = logging.getLogger(__name__)

DEFAULT_INTERVAL_MS = 300_000
CACHE_EXPIRY_MS = 60_000
ALL = "*"
# Kafka 4.4's ClientMetricsManager.SUPPORTED_COMPRESSION_TYPES: zstd, lz4, gzip, snappy
ACCEPTED_COMPRESSION_TYPES = [4, 3, 1, 2]
KNOWN_COMPRESSION_IDS = frozenset({0, 1, 2, 3, 4})
ZERO_UUID = bytes(16)
RESERVED_UUIDS = frozenset({ZERO_UUID, (1).to_bytes(16, "big")})   # Uuid.ZERO_UUID, Uuid.ONE_UUID


def kafka_uuid_str(raw: bytes) -> str:
    """Kafka's ``Uuid.toString()``: URL-safe base64 without padding."""
    import base64
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def java_uuid_hash(raw: bytes) -> int:
    """Kafka's ``Uuid.hashCode()``: the two longs XORed, then its halves XORed (signed int)."""
    hilo = int.from_bytes(raw[:8], "big") ^ int.from_bytes(raw[8:], "big")
    h = ((hilo >> 32) ^ hilo) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


def subscription_id(metrics: list[str], interval_ms: int, instance_id: bytes) -> int:
    """Kafka's ``computeSubscriptionId``; ``metrics`` in the HashSet's iteration order."""
    from protocol.records.batch import crc32c
    text = "[" + ", ".join(metrics) + "]" + str(interval_ms)
    h = (crc32c(text.encode()) ^ java_uuid_hash(instance_id)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


def is_match(attributes: dict[str, str | None], patterns: dict[str, str]) -> bool:
    """Kafka's ``ClientMetricsInstanceMetadata.isMatch``: every selector's regex matches the
    whole attribute (a missing attribute never matches); no selectors: every client."""
    for selector, regex in patterns.items():
        value = attributes.get(selector)
        if value is None or re.fullmatch(regex, value) is None:
            return False
    return True


def resolve(subscriptions, attributes: dict[str, str | None]) -> tuple[list[str], int]:
    """(requested metric prefixes in Kafka's order, push interval) for a client with
    ``attributes``, from ``subscriptions`` (``client_metrics.Subscription``)."""
    interval = DEFAULT_INTERVAL_MS
    metrics: list[str] = []
    every = False
    for sub in subscriptions:
        if is_match(attributes, dict(sub.match)):
            every = every or ALL in sub.metrics
            metrics.extend(java_hash_order(sub.metrics))
            interval = min(interval, sub.interval_ms)
    return ([ALL] if every else java_hash_order(metrics)), interval


@dataclass
class ClientInstance:
    """One client instance as the broker tracks it (Kafka's ``ClientMetricsInstance``)."""
    instance_id: bytes
    attributes: dict
    subscription_id: int
    version: int
    metrics: list[str]
    interval_ms: int
    last_get_ms: int = 0
    last_push_ms: int = 0
    terminating: bool = False
    last_error: int = 0
    expires_ms: int = 0
    connections: set = field(default_factory=set)

    def may_get(self, now_ms: int) -> bool:
        """Kafka's ``maybeUpdateGetRequestTimestamp``."""
        if now_ms - max(self.last_get_ms, self.last_push_ms) >= self.interval_ms:
            self.last_get_ms = now_ms
            return True
        return False

    def may_push(self, now_ms: int) -> bool:
        """Kafka's ``maybeUpdatePushRequestTimestamp``: a push right after a
        GetTelemetrySubscriptions is accepted whatever the interval (clients add jitter)."""
        ok = self.last_get_ms > self.last_push_ms or now_ms - self.last_push_ms >= self.interval_ms
        if ok:
            self.last_push_ms = now_ms
        return ok


@dataclass
class GetAnswer:
    error: int
    message: str | None = None
    instance_id: bytes = ZERO_UUID
    subscription_id: int = 0
    compression_types: list = field(default_factory=list)
    interval_ms: int = 0
    max_bytes: int = 0
    delta_temporality: bool = False
    metrics: list = field(default_factory=list)


class ClientMetricsManager:
    """The client instances of this broker and the decisions of 71/72. ``subscriptions()``
    gives the current subscriptions and ``version()`` their change count."""

    def __init__(self, subscriptions: Callable, version: Callable[[], int], max_bytes: int,
                 clock: Callable[[], float] = time.time):
        self.subscriptions = subscriptions
        self.version = version
        self.max_bytes = max_bytes
        self.clock = clock
        self.instances: dict[bytes, ClientInstance] = {}
        self.on_push: list[Callable[[ClientInstance, int, bytes], None]] = []

    def _now(self) -> int:
        return int(self.clock() * 1000)

    def _instance(self, instance_id: bytes, attributes: dict, conn) -> ClientInstance:
        now = self._now()
        self.expire(now)
        inst = self.instances.get(instance_id)
        if inst is None or inst.version < self.version():
            attrs = inst.attributes if inst is not None else {**attributes,
                                                              "client_instance_id": kafka_uuid_str(instance_id)}
            metrics, interval = resolve(self.subscriptions(), attrs)
            new = ClientInstance(instance_id, attrs, subscription_id(metrics, interval, instance_id),
                                 self.version(), metrics, interval)
            if inst is not None:   # Kafka builds a new instance: its request times start again
                new.connections = inst.connections
            inst = self.instances[instance_id] = new
        inst.connections.add(conn)
        inst.expires_ms = now + max(CACHE_EXPIRY_MS, 3 * inst.interval_ms)
        return inst

    def get_subscriptions(self, instance_id: bytes, attributes: dict, conn=None) -> GetAnswer:
        if instance_id == ZERO_UUID:
            instance_id = uuid.uuid4().bytes
            while instance_id in self.instances or instance_id in RESERVED_UUIDS:
                instance_id = uuid.uuid4().bytes
        inst = self._instance(instance_id, attributes, conn)
        if not inst.may_get(self._now()):
            return GetAnswer(ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                             f"Request from the client [{kafka_uuid_str(instance_id)}] arrived before the next "
                             f"push interval time")
        inst.last_error = 0
        return GetAnswer(0, None, instance_id, inst.subscription_id, list(ACCEPTED_COMPRESSION_TYPES),
                         inst.interval_ms, self.max_bytes, True, list(inst.metrics))

    def push(self, instance_id: bytes | None, sub_id: int, terminating: bool, compression: int,
             metrics: bytes | None, attributes: dict, conn=None) -> tuple[int, str | None]:
        """(error code, message) of a PushTelemetry; accepted payloads go to ``on_push``."""
        if instance_id is None or instance_id in RESERVED_UUIDS:
            name = "null" if instance_id is None else kafka_uuid_str(instance_id)
            return ErrorCode.INVALID_REQUEST, f"Invalid request from the client [{name}], invalid client instance id"
        inst = self._instance(instance_id, attributes, conn)
        who = kafka_uuid_str(instance_id)
        try:
            if inst.terminating:
                err = (ErrorCode.INVALID_REQUEST, f"Client [{who}] sent the previous request with state terminating "
                                                  f"to TRUE, can not acceptany requests after that")
            elif not inst.may_push(self._now()) and not terminating:
                err = (ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                       f"Request from the client [{who}] arrived before the next push interval time")
            elif sub_id != inst.subscription_id:
                err = (ErrorCode.UNKNOWN_SUBSCRIPTION_ID, f"Unknown client subscription id for the client [{who}]")
            elif compression not in KNOWN_COMPRESSION_IDS:
                err = (ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                       f"Unknown compression type [{compression}] is received in telemetry request from [{who}]")
            elif metrics is not None and len(metrics) > self.max_bytes:
                err = (ErrorCode.TELEMETRY_TOO_LARGE,
                       f"Telemetry request from [{who}] is larger than the maximum allowed size [{self.max_bytes}]")
            else:
                err = None
        finally:
            inst.terminating = terminating
        if err is not None:
            inst.last_error = err[0]
            return err
        if metrics:
            for fn in self.on_push:
                try:
                    fn(inst, compression, bytes(metrics))
                except Exception as exc:  # Kafka: an exporter failure is INVALID_RECORD
                    log.warning("client %s: pushed metrics not readable (%s): INVALID_RECORD", who, exc)
                    inst.last_error = ErrorCode.INVALID_RECORD
                    return ErrorCode.INVALID_RECORD, None
        inst.last_error = 0
        return 0, None

    def expire(self, now_ms: int | None = None) -> None:
        now_ms = self._now() if now_ms is None else now_ms
        for iid, inst in list(self.instances.items()):
            if inst.expires_ms <= now_ms:
                del self.instances[iid]

    def connection_closed(self, conn) -> None:
        """Kafka's disconnect listener: an instance goes with its connection."""
        for iid, inst in list(self.instances.items()):
            if conn in inst.connections:
                del self.instances[iid]
