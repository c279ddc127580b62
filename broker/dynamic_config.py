"""Dynamic broker configs, as Kafka 4.x's DynamicBrokerConfig serves them.

Two layers over the static ``server.properties``: per broker (resource name = this node's id,
DYNAMIC_BROKER_CONFIG) and cluster-wide default (resource name ``""``,
DYNAMIC_DEFAULT_BROKER_CONFIG). A key's value is per-broker > cluster default > static >
Kafka's default; a topic config without an override follows the effective broker default.

Which keys may change (Kafka's ``AllDynamicConfigs``): the broker synonym of every topic config
(``log.retention.ms``, ``log.segment.bytes``, ``message.max.bytes``, ...), the cleaner's (threads,
buffers, I/O rate, backoff), the connection limits, the thread counts, ``producer.id.expiration.ms``,
``transaction.partition.verification.enable``, ``metric.reporters``, and per listener
(``listener.name.<l>.ssl.*``, ``listener.name.<l>.sasl.*``, ``listener.name.<l>.max.connections``).
Refusals are Kafka 4.4's (``ConfigAdminManager`` answers INVALID_REQUEST, KAFKA-13609; key sets
printed as Java prints them, in request order):

- a known key that is not dynamic: ``Cannot update these configs dynamically: [num.partitions]``;
- a security key without a listener prefix: ``These security configs can be dynamically
  updated only per-listener using the listener prefix: [ssl.keystore.location]``;
- a per-broker key (listener security) at the cluster default: ``Cannot update these configs
  at default cluster level, broker id must be specified: [...]``;
- a bad value: ``Invalid value X for configuration K: <reason>`` (type and validator, every key
  Kafka marks dynamic: ``broker.config.check_value``), then ``KafkaConfig``'s parsing of
  ``listeners``, ``listener.security.protocol.map`` and ``max.connections.per.ip.overrides`` and
  its ``require`` rules (:func:`requirement_failures`), then the reconfigurables' checks against
  the running values, wrapped as Kafka wraps them (:func:`reconfiguration_failures`): thread
  counts at most doubled or halved, ``max.connections`` not 0, local retention within
  retention, listeners bound at start kept as they are;
- ``min.insync.replicas`` per broker (Kafka 4.1+, KIP-966: it is a cluster-level config).

Applied at once: the log defaults, the connection limits (``max.connections``, per IP, per
listener), ``producer.id.expiration.ms``, ``transaction.partition.verification.enable``,
``log.cleaner.backoff.ms`` and listener keystores. Thread counts and the cleaner's threads and
buffers are kept and shown, and take effect at the next start (one event loop; Kafka resizes
its pools). Keys Kafka does not know are kept, as Kafka keeps custom properties. Both layers live in
``<first log dir>/.hourglass/dynamic-broker-configs.json`` (atomic write, 0600: it may hold
keystore passwords) and are applied at start and at once on every change.
"""
from __future__ import annotations

import asyncio

import json
import logging
import re
from pathlib import Path

from storage import log_config as lc

log = logging.getLogger(__name__)

# Kafka's SslConfigs.RECONFIGURABLE_CONFIGS / DynamicListenerConfig security keys (the ones a
# listener prefix makes dynamic; without it they are refused)
SECURITY_KEYS = frozenset({
    "ssl.protocol", "ssl.provider", "ssl.cipher.suites", "ssl.enabled.protocols", "ssl.keystore.type",
    "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password", "ssl.keystore.key",
    "ssl.keystore.certificate.chain", "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.truststore.certificates", "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm",
    "ssl.endpoint.identification.algorithm", "ssl.secure.random.implementation", "ssl.client.auth",
    "ssl.engine.factory.class", "ssl.principal.mapping.rules",
})
LISTENER_KEYS = frozenset({
    "listeners", "listener.security.protocol.map", "principal.builder.class",
    "sasl.mechanism.inter.broker.protocol", "sasl.jaas.config", "sasl.enabled.mechanisms",
    "sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd", "sasl.kerberos.ticket.renew.window.factor",
    "sasl.kerberos.ticket.renew.jitter", "sasl.kerberos.min.time.before.relogin",
    "sasl.kerberos.principal.to.local.rules", "sasl.login.refresh.window.factor",
    "sasl.login.refresh.window.jitter", "sasl.login.refresh.min.period.seconds", "sasl.login.refresh.buffer.seconds",
    "max.connections", "max.connection.creation.rate", "num.network.threads",
}) | SECURITY_KEYS
CLUSTER_LEVEL_LISTENER_KEYS = frozenset({"max.connections", "max.connection.creation.rate", "num.network.threads"})
# Kafka's PerBrokerConfigs: set only for one broker, never at the cluster default
PER_BROKER_KEYS = (LISTENER_KEYS - CLUSTER_LEVEL_LISTENER_KEYS) | {"cordoned.log.dirs"}
# Kafka's DynamicThreadPool / SocketServer thread counts: a change may at most double or halve them
THREAD_COUNT_KEYS = ("num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir",
                     "background.threads", "num.network.threads")
# Kafka's defaults of the keys Hourglass only types (compat_keys.NO_EFFECT), for the checks above
KAFKA_DEFAULTS = {"background.threads": "10", "num.replica.fetchers": "1"}
CLEANER_KEYS = frozenset({"log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.load.factor",
                          "log.cleaner.io.buffer.size", "message.max.bytes", "log.cleaner.io.max.bytes.per.second",
                          "log.cleaner.backoff.ms"})
OTHER_KEYS = frozenset({
    "num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir", "background.threads",
    "max.connections.per.ip", "max.connections.per.ip.overrides", "max.connections", "max.connection.creation.rate",
    "producer.id.expiration.ms", "transaction.partition.verification.enable", "metric.reporters",
    "leader.replication.throttled.rate", "follower.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second",
    # Kafka 4.4's other dynamic keys (kept and shown; no effect here: broker.compat_keys)
    "config.providers", "cordoned.log.dirs", "errors.deadletterqueue.auto.create.topics.enable",
    "errors.deadletterqueue.topic.name.prefix", "follower.fetch.last.tiered.offset.enable",
    "group.consumer.assignment.interval.ms", "group.share.assignment.interval.ms", "group.streams.assignment.interval.ms",
    "group.coordinator.cached.buffer.max.bytes", "share.coordinator.cached.buffer.max.bytes",
    "remote.fetch.max.wait.ms", "remote.list.offsets.request.timeout.ms", "remote.log.index.file.cache.total.size.bytes",
    "remote.log.manager.copier.thread.pool.size", "remote.log.manager.copy.max.bytes.per.second",
    "remote.log.manager.expiration.thread.pool.size", "remote.log.manager.fetch.max.bytes.per.second",
    "remote.log.manager.follower.thread.pool.size", "remote.log.reader.threads",
})
# the broker synonym of each topic config (Kafka's ServerTopicConfigSynonyms)
LOG_KEYS = frozenset(d.broker_synonym for d in lc.TOPIC_CONFIGS.values() if d.broker_synonym)
DYNAMIC_KEYS = LOG_KEYS | CLEANER_KEYS | OTHER_KEYS | (LISTENER_KEYS - SECURITY_KEYS)
PASSWORD_KEYS = ("ssl.keystore.password", "ssl.key.password", "ssl.truststore.password", "sasl.jaas.config",
                 "ssl.keystore.key")

_LISTENER_RE = re.compile(r"listener\.name\.[^.]*\.(.*)")


class DynamicConfigError(ValueError):
    """Refused: answered INVALID_REQUEST with this message."""


def base_name(key: str) -> str:
    m = _LISTENER_RE.fullmatch(key)
    if m is None:
        return key
    base = m.group(1)
    # listener.name.<l>.<mechanism>.sasl.jaas.config
    for mech_key in ("sasl.jaas.config", "sasl.server.callback.handler.class", "connections.max.reauth.ms"):
        if base.endswith(mech_key):
            return mech_key
    return base


def is_listener_key(key: str) -> bool:
    return _LISTENER_RE.fullmatch(key) is not None


def is_dynamic(key: str) -> bool:
    if is_listener_key(key):
        return base_name(key) in LISTENER_KEYS
    return key in DYNAMIC_KEYS


def is_sensitive(key: str) -> bool:
    return any(key.endswith(p) for p in PASSWORD_KEYS)


def _java_set(names) -> str:
    """A set of names as Kafka 4.x's (Java) ConfigAdminManager prints it: in request order."""
    return "[" + ", ".join(dict.fromkeys(names)) + "]"


def _reconfiguration_error(reason: str) -> DynamicConfigError:
    """A reconfigurable's refusal, as Kafka wraps it (``new ConfigException("Invalid dynamic
    configuration", e)``)."""
    return DynamicConfigError(f"Invalid value org.apache.kafka.common.config.ConfigException: {reason} "
                              "for configuration Invalid dynamic configuration")


def _known_to_kafka(key: str) -> bool:
    from broker.config import REMOVED, UNKNOWN, key_status
    return key_status(key) not in (UNKNOWN, REMOVED) or key in DYNAMIC_KEYS


def check_value(key: str, value: str) -> None:
    """Kafka's type and validator check of one value (``broker.config.check_value``: the
    broker keys, the log defaults and the keys kept for compatibility, each with Kafka's
    validator); raises DynamicConfigError."""
    from broker.config import ConfigError
    from broker.config import check_value as check_broker
    from storage.errors import InvalidConfigError
    name = base_name(key)
    try:
        check_broker(name, value)
    except (ConfigError, ValueError, InvalidConfigError) as exc:
        text = str(exc)
        if not text.startswith(("Invalid value", "Configuration '")):  # Kafka's ValidList words stand alone
            text = f"Invalid value {value} for configuration {key}: {text}"
        raise DynamicConfigError(text) from None


def validate(props: dict[str, str], per_broker: bool) -> None:
    """Kafka's ``DynamicBrokerConfig.validateConfigs`` (which keys may change where) and the
    type and validator check of every value; the rules between values are
    :func:`validate_effective`'s."""
    non_dynamic = [k for k in props if not is_listener_key(k) and _known_to_kafka(k) and not is_dynamic(k)
                   and k not in SECURITY_KEYS]
    if non_dynamic:
        raise DynamicConfigError(f"Cannot update these configs dynamically: {_java_set(non_dynamic)}")
    unprefixed = [k for k in props if k in SECURITY_KEYS]
    if unprefixed:
        raise DynamicConfigError("These security configs can be dynamically updated only per-listener using the "
                                 f"listener prefix: {_java_set(unprefixed)}")
    for k, v in props.items():  # Kafka 4.4 parses the values before it looks at the level
        check_value(k, v)
    if not per_broker:
        per = [k for k in props if k in PER_BROKER_KEYS
               or (is_listener_key(k) and base_name(k) not in CLUSTER_LEVEL_LISTENER_KEYS)]
        if per:
            raise DynamicConfigError("Cannot update these configs at default cluster level, broker id must be "
                                     f"specified: {_java_set(per)}")
    if per_broker and "min.insync.replicas" in props:
        # Kafka 4.1+ (KIP-966, ELR on): min.insync.replicas lives at the cluster level only
        raise DynamicConfigError("Broker-level min.insync.replicas cannot be altered while ELR is enabled.")


def validate_effective(before: dict[str, str], after: dict[str, str], listeners=None) -> None:
    """The rest of Kafka's checks, over the effective broker configs (static < cluster default <
    per broker) before and after a change: ``new KafkaConfig(...)``'s parsing of listeners and
    maps and its ``require`` rules, then the reconfigurables' checks against the running
    values. ``listeners``: the running ``broker.listeners.Listener`` list, whose names,
    addresses and protocols cannot change."""
    for reason in requirement_failures(after):
        raise DynamicConfigError(reason)
    for reason in reconfiguration_failures(before, after, listeners):
        raise _reconfiguration_error(reason)


def _typed(merged: dict[str, str], key: str):
    """The effective typed value of a broker key (Kafka's default when unset)."""
    from broker.config import BROKER_KEYS
    from broker.config import check_value as check_broker
    text = merged.get(key)
    if text is None:
        d = BROKER_KEYS.get(key)
        text = d.default if d is not None else KAFKA_DEFAULTS.get(key)
        if text is None and key in lc.BROKER_LOG_DEFAULTS:
            return lc.BROKER_LOG_DEFAULTS[key].default
    return None if text is None else check_broker(key, text)


def requirement_failures(merged: dict[str, str]):
    """The ``require(...)`` rules of Kafka's ``KafkaConfig`` over effective broker configs
    (each value already valid on its own): yields Kafka's message of each rule broken, first
    first. Pure."""
    from broker.listeners import java_int, kafka_listener_failures, parse_csv_map
    yield from kafka_listener_failures(merged.get("listeners"), merged.get("listener.security.protocol.map"),
                                       _typed(merged, "controller.listener.names") or [])
    try:
        for count in parse_csv_map("max.connections.per.ip.overrides",
                                   merged.get("max.connections.per.ip.overrides") or "").values():
            java_int(count)
    except ValueError as exc:
        yield str(exc)
    cordoned = [d.strip() for d in (merged.get("cordoned.log.dirs") or "").split(",") if d.strip()]
    dirs = _typed(merged, "log.dirs") or _typed(merged, "log.dir")
    missing = [d for d in cordoned if d != "*" and d not in dirs]
    if missing:
        yield ("requirement failed: All entries in cordoned.log.dirs must be present in log.dirs or log.dir. "
               f"Missing entries : {', '.join(missing)}")
    topic = lc.resolve_broker_log_defaults(merged)
    if topic["retention.ms"] == 0:
        yield "requirement failed: log.retention.ms must be unlimited (-1) or, greater than or equal to 1"
    if topic["segment.ms"] < 1:
        yield "requirement failed: log.roll.ms must be greater than or equal to 1"
    if topic["segment.jitter.ms"] < 0:
        yield "requirement failed: log.roll.jitter.ms must be greater than or equal to 0"
    # (log.cleaner.threads is at least 1 here: Kafka's 0 fails dividing by it, "/ by zero")
    if _typed(merged, "log.cleaner.dedupe.buffer.size") // _typed(merged, "log.cleaner.threads") <= 1024 * 1024:
        yield "requirement failed: log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread."
    if _typed(merged, "max.connections.per.ip") == 0 and not parse_csv_map(
            "max.connections.per.ip.overrides", merged.get("max.connections.per.ip.overrides") or ""):
        yield ("requirement failed: max.connections.per.ip can be set to zero only if "
               "max.connections.per.ip.overrides property is set.")


def reconfiguration_failures(before: dict[str, str], after: dict[str, str], listeners=None):
    """Kafka's reconfigurables' ``validateReconfiguration`` (thread pools, connection quotas,
    the log defaults' remote retention rules, listeners): yields the reason of each refusal.
    Pure."""
    for key in THREAD_COUNT_KEYS:
        old, new = _typed(before, key), _typed(after, key)
        if new != old:
            what = f"Dynamic thread count update validation failed for {key}={after[key]}"
            if new < old // 2:  # (below 1 is the key's validator's refusal, earlier)
                yield f"{what}, value should be at least half the current value {old}"
            elif new > old * 2:
                yield f"{what}, value should not be greater than double the current value {old}"
    for key in ("max.connections", "max.connection.creation.rate"):
        if key in after and _typed(after, key) == 0:
            yield f"Invalid {key} {after[key]}"
    topic = lc.resolve_broker_log_defaults(after)
    for kind, unset in (("ms", -1), ("bytes", -1)):
        retention, local = topic[f"retention.{kind}"], topic[f"local.retention.{kind}"]
        if retention != unset and local != -2:
            if local == -1:
                yield (f"Invalid value -1 for configuration log.local.retention.{kind}: Value must not be -1 as "
                       f"log.retention.{kind} value is set as {retention}.")
            elif local > retention:
                yield (f"Invalid value {local} for configuration log.local.retention.{kind}: Value must not be "
                       f"more than log.retention.{kind} property value: {retention}")
    if listeners is not None:
        yield from listener_failures(before, after, listeners)


def listener_failures(before: dict[str, str], after: dict[str, str], listeners):
    """A change of ``listeners`` or ``listener.security.protocol.map``: Hourglass binds its
    listeners at start, so their names, addresses and protocols stay as they are (Kafka in KRaft
    mode refuses changing the advertised listeners, which follow ``listeners`` here, and any
    existing listener's protocol). Pure over plain data."""
    from broker.listeners import ListenerError, resolve
    if all(before.get(k) == after.get(k) for k in ("listeners", "listener.security.protocol.map")):
        return
    try:
        setup = resolve(_typed(after, "listeners"), _typed(after, "advertised.listeners"),
                        after.get("listener.security.protocol.map"), _typed(after, "controller.listener.names") or [])
    except ListenerError as exc:
        yield str(exc)
        return
    running = {l.name: l for l in listeners}
    new = {l.name: l for l in setup.broker}
    for name, lst in new.items():
        if name in running and running[name].security_protocol != lst.security_protocol:
            yield f"Security protocol cannot be updated for existing listener ListenerName({name})"
            return
    # port 0 (a free port, chosen at bind) matches any port
    if set(new) != set(running) or any(
            (new[n].host or "") != (running[n].host or "") or running[n].port not in (0, new[n].port) for n in new):
        yield "Advertised listeners cannot be altered when using a Raft-based metadata quorum."


def effective(static: dict[str, str], default: dict[str, str], broker: dict[str, str]) -> dict[str, str]:
    """The broker's properties as Kafka merges them: static < cluster default < per broker."""
    out = dict(static)
    out.update(default)
    out.update(broker)
    return out


class DynamicBrokerConfigs:
    """The two dynamic layers, durable."""

    FILE = "dynamic-broker-configs.json"

    def __init__(self, directory: Path | None):
        self.path = None if directory is None else Path(directory) / self.FILE
        self.default: dict[str, str] = {}
        self.broker: dict[str, str] = {}
        if self.path is not None:
            try:
                doc = json.loads(self.path.read_text())
            except FileNotFoundError:
                doc = {}
            self.default = dict(doc.get("default", {}))
            self.broker = dict(doc.get("broker", {}))

    def layer(self, per_broker: bool) -> dict[str, str]:
        return self.broker if per_broker else self.default

    def replace(self, per_broker: bool, props: dict[str, str]) -> None:
        if per_broker:
            self.broker = dict(props)
        else:
            self.default = dict(props)
        self.save()

    def save(self) -> None:
        if self.path is None:
            return
        from broker.cluster import write_private_json
        write_private_json(self.path, {"version": 1, "default": dict(sorted(self.default.items())),
                                       "broker": dict(sorted(self.broker.items()))})  # may hold keystore passwords


def refresh_per_ip_limits(b) -> None:
    """Apply ``max.connections.per.ip.overrides`` anew. Its host names are resolved (Kafka's
    ``InetAddress.getByName``) by blocking DNS calls, so on a running event loop a value naming a
    host is applied from a worker thread once resolved (the previous limits until then; a newer
    change meanwhile wins): a slow or unreachable name server never holds up the loop. A value of
    addresses only applies at once."""
    from broker.security.listener import names_hosts, per_ip_limits
    value = b.cfg["max.connections.per.ip.overrides"]
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # at start, before anything is served
        loop = None
    if loop is None or not names_hosts(value):  # addresses only: no look-up, applied at once
        b.per_ip_limits = per_ip_limits(value, strict=False)
        return

    async def resolve() -> None:
        limits = await loop.run_in_executor(None, per_ip_limits, value, False)
        if b.cfg["max.connections.per.ip.overrides"] == value:
            b.per_ip_limits = limits
    b.per_ip_limits_resolving = loop.create_task(resolve())  # (held: a task nobody holds may vanish)


def apply(b, changed: set[str] | None = None) -> None:
    """Make the broker run with its effective configs: log defaults reach every topic without
    an override, broker keys take their new values, a changed listener keystore is loaded
    into the listener's TLS context (new connections get the new certificate)."""
    from broker.config import BROKER_KEYS, TOPIC_DEFAULT, key_status
    from broker.config import check_value as check_broker
    dyn = b.dynamic_configs
    static = b.cfg.raw
    merged = effective(static, dyn.default, dyn.broker)
    topic_defaults = {k: v for k, v in merged.items() if key_status(k) == TOPIC_DEFAULT}
    if topic_defaults != b.logs.broker_defaults:
        b.logs.update_broker_defaults(topic_defaults)
        b.topics.broker_defaults = dict(topic_defaults)
    b.effective_topic_defaults = topic_defaults
    for name in DYNAMIC_KEYS & BROKER_KEYS.keys():
        text = merged.get(name, BROKER_KEYS[name].default)
        b.cfg.values[name] = None if text is None else check_broker(name, text)
    if changed is None or "max.connections.per.ip.overrides" in changed:
        refresh_per_ip_limits(b)
    cleaner = getattr(b, "cleaner", None)
    if cleaner is not None and hasattr(cleaner, "backoff_ms"):
        # the cleaner's backoff applies at its next idle round; threads and buffers at the next start
        cleaner.backoff_ms = b.cfg["log.cleaner.backoff.ms"]
    txn = getattr(b, "txn", None)
    if txn is not None and txn.config.verification_enabled != b.cfg["transaction.partition.verification.enable"]:
        import dataclasses
        txn.config = dataclasses.replace(txn.config,
                                         verification_enabled=b.cfg["transaction.partition.verification.enable"])
    keys = set(changed) if changed is not None else set(dyn.default) | set(dyn.broker)
    for lst in b.cfg.listeners:
        prefix = f"listener.name.{lst.name.lower()}."
        sec = b.listener_security.get(lst.name)
        if sec is not None:  # listener.name.<l>.max.connections, dynamic or static
            limit = merged.get(prefix + "max.connections", lst.overrides.get("max.connections"))
            try:
                sec.max_connections = int(limit) if limit is not None else None
            except ValueError:
                pass
        if not any(k.startswith(prefix) and base_name(k) in SECURITY_KEYS for k in keys):
            continue
        sec = b.listener_security.get(lst.name)
        if sec is None or sec.ssl_context is None:
            continue
        reload_keystore(sec.ssl_context, listener_lookup(lst, merged))
        log.info("listener %s: keystore reloaded (dynamic config)", lst.name)


def listener_lookup(lst, merged: dict[str, str]):
    """A listener's ``get(key)``: its dynamic or static ``listener.name.<l>.`` value, else the
    broker-wide static value."""
    prefix = f"listener.name.{lst.name.lower()}."

    def get(key: str):
        v = merged.get(prefix + key)
        if v is None:
            v = lst.overrides.get(key)
        return v if v is not None else merged.get(key)
    return get


def reload_keystore(ctx, get) -> None:
    """Load the keystore ``get`` names into an existing server context: connections accepted
    from now on present the new certificate (OpenSSL reads the context at each handshake)."""
    from broker.security.tls import keystore, load_key_and_chain
    load_key_and_chain(ctx, *keystore(get))


def check_listener_keystores(b, merged: dict[str, str], props: dict[str, str]) -> None:
    """Before accepting a listener keystore change: the new keystore must load (else the
    change is refused with the loader's message)."""
    import ssl

    from broker.security.tls import TlsConfigError, keystore, load_key_and_chain
    for lst in b.cfg.listeners:
        prefix = f"listener.name.{lst.name.lower()}."
        if not any(k.startswith(prefix) and base_name(k) in SECURITY_KEYS for k in props):
            continue
        sec = b.listener_security.get(lst.name)
        if sec is None or sec.ssl_context is None:
            continue
        try:
            load_key_and_chain(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER), *keystore(listener_lookup(lst, merged)))
        except (TlsConfigError, OSError, ValueError) as exc:
            raise DynamicConfigError(f"Validation of dynamic config update of SSLFactory failed: {exc}") from None
