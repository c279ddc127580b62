"""Per-client quota sensors and throttle decisions (Kafka's ClientQuotaManager family).

``ClientQuotas.produce`` / ``.fetch`` / ``.request`` each count one quantity per client
(bytes of a Produce request, bytes of a Fetch response, percent of a second spent handling
requests) under the metric tags the precedence gives (``entities.metric_tags``), and return
the throttle time when the client's rate is over its bound. A manager whose key no entity
holds is disabled and costs one attribute read per request (Kafka's ``quotasEnabled``).
"""
from __future__ import annotations

import time

from broker.quotas import entities as E
from broker.quotas.rate import Rate, TokenBucket, record_and_throttle, token_throttle_ms
from broker.quotas.store import QuotaStore

# Kafka's ClientQuotaManager.InactiveSensorExpirationTimeSeconds
SENSOR_EXPIRY_MS = 3600 * 1000


def user_of(principal: str | None) -> str:
    """Kafka's quota user is the principal's name (``User:alice`` -> ``alice``)."""
    if not principal:
        return ""
    return principal.split(":", 1)[1] if ":" in principal else principal


class ClientSensor:
    """One client's (or one shared tag pair's) usage rate and throttle-time record."""
    __slots__ = ("tags", "rate", "bound", "throttle_total_ms", "throttle_count", "last_ms")

    def __init__(self, tags, rate: Rate, bound):
        self.tags = tags
        self.rate = rate
        self.bound = bound
        self.throttle_total_ms = 0
        self.throttle_count = 0
        self.last_ms = 0


class QuotaManager:
    """One quota type (a key of the user/client-id entities)."""

    def __init__(self, name: str, key: str, store: QuotaStore, samples: int, window_ms: int,
                 max_throttle_ms: int | None = None):
        self.name = name
        self.key = key
        self.store = store
        self.samples = samples
        self.window_ms = window_ms
        self.max_throttle_ms = max_throttle_ms
        self.enabled = False
        self.sensors: dict[tuple[str, str], ClientSensor] = {}
        self._by_client: dict[tuple[str, str], ClientSensor] = {}
        self.refresh()

    def refresh(self) -> None:
        """Quotas changed: re-resolve every client's tags and bound (Kafka's
        ``updateQuotaMetricConfigs``); kept rates stay with their tags."""
        self.enabled = any(self.key in q for q in self.store.quotas.values())
        self._by_client.clear()
        for s in self.sensors.values():
            s.bound = E.quota_limit(self._get, *s.tags)

    def _get(self, ent):
        q = self.store.quotas.get(ent)
        return None if q is None else q.get(self.key)

    def _new_stat(self):
        return Rate(self.samples, self.window_ms)

    def sensor(self, user: str, client_id: str) -> ClientSensor:
        """The sensor this client's usage is counted in (shared by every client with the
        same metric tags), created on first use."""
        k = (user, client_id)
        s = self._by_client.get(k)
        if s is None:
            tags, bound = E.resolve(self.store.quotas, self.key, user, client_id)
            s = self.sensors.get(tags)
            if s is None:
                s = self.sensors[tags] = ClientSensor(tags, self._new_stat(), bound)
            self._by_client[k] = s
        return s

    def record(self, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Record and return the throttle time in ms (Kafka's ``recordAndGetThrottleTimeMs``)."""
        s = self.sensor(user, client_id)
        s.last_ms = now_ms
        return record_and_throttle(s.rate, s.bound, value, now_ms, self.max_throttle_ms)

    def unrecord(self, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Take back a recorded value (a throttled fetch sends no data: Kafka's ``unrecordQuotaSensor``)."""
        self.sensor(user, client_id).rate.record(-value, now_ms)

    def record_throttle(self, user: str, client_id: str, throttle_ms: int) -> None:
        s = self.sensor(user, client_id)
        s.throttle_total_ms += throttle_ms
        s.throttle_count += 1

    def max_value_in_window(self, user: str, client_id: str) -> float:
        """The most that can be taken at once without a sure throttle (Kafka's
        ``getMaxValueInQuotaWindow``): bound * (samples - 1) * window."""
        bound = self.sensor(user, client_id).bound
        if bound is None:
            return float("inf")
        return bound * (self.samples - 1) * self.window_ms / 1000.0

    def expire(self, now_ms: int) -> None:
        """Forget sensors idle for an hour (Kafka expires inactive quota sensors the same way)."""
        idle = [t for t, s in self.sensors.items() if now_ms - s.last_ms > SENSOR_EXPIRY_MS]
        if idle:
            for t in idle:
                del self.sensors[t]
            self._by_client.clear()


class ThrottlingQuotaExceeded(Exception):
    """A strict mutation quota is already exceeded: the topic gets THROTTLING_QUOTA_EXCEEDED."""
    MESSAGE = "The throttling quota has been exceeded."

    def __init__(self, throttle_ms: int):
        super().__init__(self.MESSAGE)
        self.throttle_ms = throttle_ms


class MutationQuota:
    """One CreateTopics / CreatePartitions / DeleteTopics request's view of its client's
    controller_mutation_rate bucket (Kafka's Strict/PermissiveControllerMutationQuota).

    Strict (CreateTopics v6+, DeleteTopics v5+, CreatePartitions v3+): a topic is refused
    while the bucket is negative, else its partitions are taken (the bucket may go negative).
    Permissive (older versions): always taken, and only the response is throttled."""

    def __init__(self, manager: "MutationQuotaManager", sensor: ClientSensor, strict: bool):
        self.m = manager
        self.sensor = sensor
        self.strict = strict
        self.last_throttle_ms = 0
        self.recorded_at = 0.0

    def record(self, permits: int) -> None:
        s, m = self.sensor, self.m
        now_ms = int(time.time() * 1000)
        s.last_ms = now_ms
        bucket: TokenBucket = s.rate
        burst = m.samples * m.window_ms / 1000.0 * s.bound
        if self.strict:
            tokens = bucket.measure(s.bound, burst, now_ms)
            if tokens < 0:
                self._throttled(token_throttle_ms(tokens, s.bound))
                raise ThrottlingQuotaExceeded(self.last_throttle_ms)
            bucket.record(permits, s.bound, burst, now_ms)
        else:
            bucket.record(permits, s.bound, burst, now_ms)
            if bucket.tokens < 0:
                self._throttled(token_throttle_ms(bucket.tokens, s.bound))

    def _throttled(self, ms: int) -> None:
        self.last_throttle_ms = ms
        self.recorded_at = time.monotonic()

    def throttle_time_ms(self) -> int:
        """The last throttle time less what has passed since it was computed."""
        if not self.last_throttle_ms:
            return 0
        return max(0, self.last_throttle_ms - int((time.monotonic() - self.recorded_at) * 1000))


class MutationQuotaManager(QuotaManager):
    """controller_mutation_rate: a token bucket per client tags (controller.quota.window.*)."""

    def _new_stat(self):
        return TokenBucket()

    def quota_for(self, user: str, client_id: str, strict: bool) -> MutationQuota | None:
        """None when the client has no mutation quota (Kafka's UnboundedControllerMutationQuota)."""
        if not self.enabled:
            return None
        s = self.sensor(user, client_id)
        if s.bound is None:
            return None
        return MutationQuota(self, s, strict)


# APIs the request-time quota does not count: the SASL exchange is answered before any
# quota applies (Kafka: exempt, like inter-broker requests).
REQUEST_EXEMPT = frozenset({17, 36})


class ClientQuotas:
    """The broker's quota managers over one store. ``active`` is False while no user/client-id
    quota exists, so the request path skips all accounting."""

    def __init__(self, store: QuotaStore, samples: int = 11, window_s: int = 1,
                 controller_samples: int = 11, controller_window_s: int = 1):
        self.store = store
        window_ms = window_s * 1000
        self.produce = QuotaManager("Produce", E.PRODUCER_BYTE_RATE, store, samples, window_ms)
        self.fetch = QuotaManager("Fetch", E.CONSUMER_BYTE_RATE, store, samples, window_ms)
        # Kafka bounds request-time throttles to one window (ClientRequestQuotaManager)
        self.request = QuotaManager("Request", E.REQUEST_PERCENTAGE, store, samples, window_ms,
                                    max_throttle_ms=window_ms)
        self.mutation = MutationQuotaManager("ControllerMutation", E.CONTROLLER_MUTATION_RATE, store,
                                             controller_samples, controller_window_s * 1000)
        self.managers = (self.produce, self.fetch, self.request, self.mutation)
        self.connections = ConnectionRateQuotas(store, samples, window_ms)
        self.active = False
        store.listeners.append(self.refresh)
        self.refresh()

    def refresh(self) -> None:
        for m in self.managers:
            m.refresh()
        self.active = any(m.enabled for m in self.managers)
        self.connections.refresh()

    def mutation_quota(self, ctx, strict: bool) -> MutationQuota | None:
        """The request's controller mutation quota, or None (no quota: nothing to count)."""
        if not self.mutation.enabled:
            return None
        return self.mutation.quota_for(user_of(getattr(ctx.conn, "principal", None)), ctx.client_id or "", strict)

    def after_request(self, user: str, client_id: str, api_key: int, request_bytes: int,
                      handling_s: float, response_throttle_ms: int, request_time_recorded: bool = False) -> int:
        """Account one handled request; returns the connection's throttle time in ms (the
        largest of the byte-rate and request-time throttles, Kafka's ``maxThrottleTimeMs``)."""
        now_ms = int(time.time() * 1000)
        throttle = response_throttle_ms
        if api_key == 0 and self.produce.enabled:
            t = self.produce.record(user, client_id, request_bytes, now_ms)
            if t > 0:
                self.produce.record_throttle(user, client_id, t)
                throttle = max(throttle, t)
        if self.request.enabled and api_key not in REQUEST_EXEMPT and not request_time_recorded:
            t = self.request.record(user, client_id, handling_s * 100.0, now_ms)
            if t > 0:
                self.request.record_throttle(user, client_id, t)
                throttle = max(throttle, t)
        return throttle

    def record_request_time(self, user: str, client_id: str, handling_s: float, now_ms: int) -> int:
        """Record request-handling time now (a handler that answers differently when throttled
        does this itself); the throttle time in ms."""
        t = self.request.record(user, client_id, handling_s * 100.0, now_ms)
        if t > 0:
            self.request.record_throttle(user, client_id, t)
        return t

    def expire(self, now_ms: int) -> None:
        for m in self.managers:
            m.expire(now_ms)
        self.connections.expire(now_ms)


def _address(name: str) -> str | None:
    """An ip entity's name as the address peers are seen with (a host name is resolved, as
    Kafka's InetAddress.getByName does)."""
    import ipaddress
    import socket
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        pass
    try:
        return socket.getaddrinfo(name, None)[0][4][0]
    except (OSError, UnicodeError, IndexError):
        return None


class ConnectionRateQuotas:
    """connection_creation_rate per IP (KIP-612, Kafka's ConnectionQuotas): each accepted
    connection is recorded in its IP's rate (quota.window.*); one that would take the IP over
    its quota (``ip=<addr>``, else ``ip=<default>``) is taken back out and refused, its socket
    closed after the throttle time (at most one window)."""

    def __init__(self, store: QuotaStore, samples: int, window_ms: int):
        self.store = store
        self.samples = samples
        self.window_ms = window_ms
        self.default: float | None = None
        self.per_ip: dict[str, float] = {}
        self.rates: dict[str, Rate] = {}
        self.last: dict[str, int] = {}
        self.enabled = False

    def refresh(self) -> None:
        self.default = None
        self.per_ip = {}
        for ent, q in self.store.quotas.items():
            v = q.get(E.CONNECTION_CREATION_RATE)
            if v is None or len(ent) != 1 or ent[0][0] != E.IP:
                continue
            if ent[0][1] is None:
                self.default = v
            else:
                addr = _address(ent[0][1])
                if addr is not None:
                    self.per_ip[addr] = v
        self.enabled = self.default is not None or bool(self.per_ip)

    def quota_for(self, ip: str) -> float | None:
        return self.per_ip.get(ip, self.default)

    def record(self, ip: str, now_ms: int) -> int:
        """Record a new connection from ``ip``; the throttle time in ms if it is refused."""
        bound = self.quota_for(ip)
        if bound is None:
            return 0
        r = self.rates.get(ip)
        if r is None:
            r = self.rates[ip] = Rate(self.samples, self.window_ms)
        self.last[ip] = now_ms
        t = record_and_throttle(r, bound, 1.0, now_ms, self.window_ms)
        if t > 0:
            r.record(-1.0, now_ms)
        return t

    def expire(self, now_ms: int) -> None:
        for ip in [ip for ip, t in self.last.items() if now_ms - t > SENSOR_EXPIRY_MS]:
            self.rates.pop(ip, None)
            self.last.pop(ip, None)
