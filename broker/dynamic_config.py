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
Refusals are Kafka's (``ConfigAdminManager`` answers INVALID_REQUEST, KAFKA-13609):

- a known key that is not dynamic: ``Cannot update these configs dynamically: Set(num.partitions)``;
- a security key without a listener prefix: ``These security configs can be dynamically
  updated only per-listener using the listener prefix: Set(ssl.keystore.location)``;
- a per-broker key (listener security) at the cluster default: ``Cannot update these configs
  at default cluster level, broker id must be specified: Set(...)``;
- a bad value: ``Invalid value X for configuration K: <reason>``;
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
    "advertised.listeners", "listeners", "listener.security.protocol.map", "principal.builder.class",
    "sasl.mechanism.inter.broker.protocol", "sasl.jaas.config", "sasl.enabled.mechanisms",
    "sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd", "sasl.kerberos.ticket.renew.window.factor",
    "sasl.kerberos.ticket.renew.jitter", "sasl.kerberos.min.time.before.relogin",
    "sasl.kerberos.principal.to.local.rules", "sasl.login.refresh.window.factor",
    "sasl.login.refresh.window.jitter", "sasl.login.refresh.min.period.seconds", "sasl.login.refresh.buffer.seconds",
    "max.connections", "max.connection.creation.rate", "num.network.threads",
}) | SECURITY_KEYS
CLUSTER_LEVEL_LISTENER_KEYS = frozenset({"max.connections", "max.connection.creation.rate", "num.network.threads"})
CLEANER_KEYS = frozenset({"log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.load.factor",
                          "log.cleaner.io.buffer.size", "message.max.bytes", "log.cleaner.io.max.bytes.per.second",
                          "log.cleaner.backoff.ms"})
OTHER_KEYS = frozenset({
    "num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir", "background.threads",
    "max.connections.per.ip", "max.connections.per.ip.overrides", "max.connections", "max.connection.creation.rate",
    "producer.id.expiration.ms", "transaction.partition.verification.enable", "metric.reporters",
    "leader.replication.throttled.rate", "follower.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second",
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


def _scala_set(names) -> str:
    return "Set(" + ", ".join(sorted(names)) + ")"


def _known_to_kafka(key: str) -> bool:
    from broker.config import REMOVED, UNKNOWN, key_status
    return key_status(key) not in (UNKNOWN, REMOVED) or key in DYNAMIC_KEYS


def check_value(key: str, value: str) -> None:
    """Kafka's type check of one value; raises DynamicConfigError."""
    from broker.config import BROKER_KEYS, ConfigError
    from broker.config import check_value as check_broker
    from storage.errors import InvalidConfigError
    name = base_name(key)
    try:
        if name in lc.BROKER_LOG_DEFAULTS:
            lc.parse_broker_value(name, value)
        elif name in BROKER_KEYS:
            check_broker(name, value)
    except (ConfigError, ValueError, InvalidConfigError) as exc:
        text = str(exc)
        if not text.startswith("Invalid value"):
            text = f"Invalid value {value} for configuration {key}: {text}"
        raise DynamicConfigError(text) from None


def validate(props: dict[str, str], per_broker: bool) -> None:
    """Kafka's ``DynamicBrokerConfig.validateConfigs`` plus the type check of every value."""
    non_dynamic = [k for k in props if not is_listener_key(k) and _known_to_kafka(k) and not is_dynamic(k)
                   and k not in SECURITY_KEYS]
    if non_dynamic:
        raise DynamicConfigError(f"Cannot update these configs dynamically: {_scala_set(non_dynamic)}")
    unprefixed = [k for k in props if k in SECURITY_KEYS]
    if unprefixed:
        raise DynamicConfigError("These security configs can be dynamically updated only per-listener using the "
                                 f"listener prefix: {_scala_set(unprefixed)}")
    for k, v in props.items():
        check_value(k, v)
    if per_broker and "min.insync.replicas" in props:
        # Kafka 4.1+ (KIP-966, ELR on): min.insync.replicas lives at the cluster level only
        raise DynamicConfigError("Broker-level min.insync.replicas cannot be altered while ELR is enabled.")
    if not per_broker:
        per = [k for k in props if is_listener_key(k) and base_name(k) not in CLUSTER_LEVEL_LISTENER_KEYS]
        if per:
            raise DynamicConfigError("Cannot update these configs at default cluster level, broker id must be "
                                     f"specified: {_scala_set(per)}")


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
        from broker.security.listener import per_ip_limits
        b.per_ip_limits = per_ip_limits(b.cfg["max.connections.per.ip.overrides"])
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
