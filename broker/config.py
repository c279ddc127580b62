"""Broker configuration: Kafka's ``server.properties`` key names, types and defaults.

Resolution: built-in default < ``--config FILE`` < ``--override key=value`` (repeatable, in
order). Every key is checked at start: an unknown key or a value that does not parse fails
with ``ConfigError`` naming the key, so a typo never silently falls back to a default.

Topic-level defaults (``log.*``, ``message.max.bytes``, ``compression.type``, ...) are
declared by ``storage.log_config`` (their single home); this module accepts them and passes
them through as the broker defaults from which every topic's ``LogConfig`` is resolved.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, NamedTuple

from protocol.deferred import dataclass


class ConfigError(ValueError):
    """A configuration key is unknown or its value is invalid; the message names the key."""


def _int(v: str) -> int:
    return int(v.strip())


def _bool(v: str) -> bool:
    s = v.strip().lower()
    if s in ("true", "false"):
        return s == "true"
    raise ValueError("expected true or false")


def _str(v: str) -> str:
    return v.strip()


def _list(v: str) -> list[str]:
    return [p.strip() for p in v.split(",") if p.strip()]


def _float(v: str) -> float:
    return float(v.strip())


class BrokerKey(NamedTuple):
    name: str
    parse: Callable[[str], Any]
    default: str | None
    doc: str
    check: Callable[[Any], bool] | None = None
    check_doc: str = ""


def _k(name, parse, default, doc, check=None, check_doc=""):
    return BrokerKey(name, parse, default, doc, check, check_doc)


_pos = (lambda x: x > 0, "must be > 0")
_nonneg = (lambda x: x >= 0, "must be >= 0")

# The broker keys we honour (server-level). Topic defaults live in storage.log_config.
BROKER_KEYS: dict[str, BrokerKey] = {k.name: k for k in [
    _k("listeners", _list, "PLAINTEXT://:9092", "Listener URIs; PLAINTEXT only. Port 0 binds a free port."),
    _k("advertised.listeners", _list, None, "Listener URIs given to clients in Metadata (default: listeners, with the bound host/port)."),
    _k("listener.security.protocol.map", _str, "PLAINTEXT:PLAINTEXT", "Accepted for compatibility; only PLAINTEXT is served."),
    _k("inter.broker.listener.name", _str, None, "Accepted for compatibility (single node)."),
    _k("controller.listener.names", _str, None, "Accepted for compatibility (single node)."),
    _k("process.roles", _str, "broker,controller", "Accepted for compatibility: this node is broker and controller."),
    _k("controller.quorum.voters", _str, None, "Accepted for compatibility (single node)."),
    _k("log.dirs", _list, None, "Directories holding partition logs (first one also holds broker metadata)."),
    _k("log.dir", _list, "/tmp/hourglass-logs", "Used when log.dirs is not set."),
    _k("node.id", _int, "1", "This node's id.", *_nonneg),
    _k("broker.id", _int, None, "Synonym of node.id.", *_nonneg),
    _k("cluster.id", _str, None, "Cluster id used when meta.properties does not exist yet (default: random)."),
    _k("num.partitions", _int, "1", "Partitions of an auto-created topic.", *_pos),
    _k("default.replication.factor", _int, "1", "Replication factor of auto-created topics (only 1 on one node).", *_pos),
    _k("auto.create.topics.enable", _bool, "true", "Create a topic when a client asks for an unknown one in Metadata or Produce."),
    _k("delete.topic.enable", _bool, "true", "Allow DeleteTopics."),
    _k("socket.request.max.bytes", _int, "104857600", "Largest request frame accepted; larger frames close the connection before any read of the body.", *_pos),
    _k("socket.send.buffer.bytes", _int, "102400", "SO_SNDBUF for client sockets (-1: OS default)."),
    _k("socket.receive.buffer.bytes", _int, "102400", "SO_RCVBUF for client sockets (-1: OS default)."),
    _k("connections.max.idle.ms", _int, "600000", "Close connections idle for this long.", *_pos),
    _k("max.connections", _int, "2147483647", "Most connections accepted at once.", *_pos),
    _k("max.connections.per.ip", _int, "2147483647", "Most connections from one IP address.", *_pos),
    _k("request.read.timeout.ms", _int, "30000", "Hourglass: a started request frame must arrive whole within this time.", *_pos),
    _k("log.retention.check.interval.ms", _int, "300000", "How often retention runs.", *_pos),
    _k("log.flush.scheduler.interval.ms", _int, "9223372036854775807", "How often logs are checked for flush.ms.", *_pos),
    _k("log.flush.offset.checkpoint.interval.ms", _int, "60000", "How often the recovery-point checkpoint is written.", *_pos),
    _k("log.flush.start.offset.checkpoint.interval.ms", _int, "60000", "How often the log-start-offset checkpoint is written.", *_pos),
    _k("num.recovery.threads.per.data.dir", _int, "1", "Accepted for compatibility.", *_pos),
    _k("num.network.threads", _int, "3", "Accepted for compatibility (one event loop)."),
    _k("num.io.threads", _int, "8", "Accepted for compatibility (one event loop)."),
    _k("offsets.topic.replication.factor", _int, "1", "Accepted for compatibility."),
    _k("offsets.topic.num.partitions", _int, "50", "Partitions of the internal __consumer_offsets log.", *_pos),
    _k("offsets.retention.minutes", _int, "10080", "Committed offsets of empty groups expire after this.", *_pos),
    _k("offsets.retention.check.interval.ms", _int, "600000", "How often expired offsets are removed.", *_pos),
    _k("offset.metadata.max.bytes", _int, "4096", "Largest commit metadata string.", *_nonneg),
    _k("transaction.state.log.replication.factor", _int, "1", "Accepted for compatibility."),
    _k("transaction.state.log.min.isr", _int, "1", "Accepted for compatibility (stored as the transaction topic's min.insync.replicas)."),
    _k("transaction.state.log.num.partitions", _int, "50", "Partitions of the internal __transaction_state log (an existing topic keeps its count).", *_pos),
    _k("transaction.state.log.segment.bytes", _int, "104857600", "segment.bytes of __transaction_state (small segments compact and replay faster).", *_pos),
    _k("transaction.state.log.load.buffer.size", _int, "5242880", "Accepted for compatibility.", *_pos),
    _k("transaction.max.timeout.ms", _int, "900000", "Largest transaction.timeout.ms a producer may ask for (InitProducerId answers INVALID_TRANSACTION_TIMEOUT above it).", *_pos),
    _k("transaction.abort.timed.out.transaction.cleanup.interval.ms", _int, "10000", "How often open transactions past their timeout are aborted (with a producer epoch bump).", *_pos),
    _k("transaction.remove.expired.transaction.cleanup.interval.ms", _int, "3600000", "How often transactional ids past transactional.id.expiration.ms are removed.", *_pos),
    _k("transaction.partition.verification.enable", _bool, "true", "Refuse a transactional batch to a partition not added to the producer's transaction (KIP-890)."),
    _k("group.initial.rebalance.delay.ms", _int, "3000", "Delay of the first rebalance of an empty group.", *_nonneg),
    _k("group.min.session.timeout.ms", _int, "6000", "Smallest session timeout a member may ask for.", *_pos),
    _k("group.max.session.timeout.ms", _int, "1800000", "Largest session timeout a member may ask for.", *_pos),
    _k("group.max.size", _int, "2147483647", "Most members in one group.", *_pos),
    _k("producer.id.expiration.ms", _int, "86400000", "Idle producer state expires after this.", *_pos),
    _k("transactional.id.expiration.ms", _int, "604800000", "A transactional id without a transaction for this long is removed (its producer must InitProducerId again).", *_pos),
    _k("log.cleaner.enable", _bool, "true", "Run the log cleaner for compacted topics."),
    _k("log.cleaner.threads", _int, "1", "Cleaner concurrency.", *_pos),
    _k("log.cleaner.backoff.ms", _int, "15000", "Cleaner sleep when there is nothing to clean.", *_pos),
    _k("log.cleaner.dedupe.buffer.size", _int, "134217728", "Memory for the cleaner's offset map.", *_pos),
    _k("log.cleaner.io.buffer.size", _int, "524288", "Cleaner read/write buffer size.", *_pos),
    _k("log.cleaner.io.max.bytes.per.second", _float, "1.7976931348623157E308", "Cleaner I/O throttle."),
    _k("metrics.port", _int, "-1", "Prometheus metrics HTTP port (-1: off; 0: a free port)."),
    _k("metrics.host", _str, "127.0.0.1", "Prometheus metrics HTTP host."),
    _k("hourglass.clean.shutdown.skip.recovery", _bool, "true", "Skip the log scan after a clean shutdown (Kafka's behaviour)."),
]}


def _topic_default_keys() -> dict[str, Any]:
    """Broker-level topic defaults, declared once in storage.log_config."""
    from storage import log_config
    return log_config.BROKER_LOG_DEFAULTS


def parse_properties(text: str) -> dict[str, str]:
    """Java ``.properties`` syntax: ``k=v``, ``k: v`` or ``k v``; ``#``/``!`` comments;
    trailing backslash continues a line."""
    props: dict[str, str] = {}
    logical: list[str] = []
    buf = ""
    for raw in text.splitlines():
        line = raw.lstrip()
        if not buf and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            buf += line[:-1]
            continue
        logical.append(buf + line)
        buf = ""
    if buf:
        logical.append(buf)
    for line in logical:
        m = re.match(r"^((?:\\.|[^=:\s])+)\s*[=:\s]\s*(.*)$", line)
        if m:
            key, value = m.group(1), m.group(2)
        else:
            key, value = line.strip(), ""
        props[key.replace("\\", "")] = value.rstrip()
    return props


@dataclass
class Listener:
    name: str
    host: str
    port: int


def parse_listener(uri: str, key: str) -> Listener:
    m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)://(\[[^\]]*\]|[^:/]*):(\d+)$", uri.strip())
    if not m:
        raise ConfigError(f"{key}: cannot parse listener {uri!r} (expected NAME://host:port)")
    name, host, port = m.group(1), m.group(2).strip("[]"), int(m.group(3))
    if name.upper() not in ("PLAINTEXT",):
        raise ConfigError(f"{key}: listener {uri!r}: only PLAINTEXT is supported")
    return Listener(name, host, port)


class BrokerConfig:
    """Validated broker settings: ``cfg["key"]`` gives the typed value of a broker key;
    ``topic_defaults`` holds the raw strings of every topic-level broker default that was set."""

    def __init__(self, raw: dict[str, str] | None = None):
        raw = dict(raw or {})
        self.raw = raw
        self.values: dict[str, Any] = {}
        topic_keys = _topic_default_keys()
        self.topic_defaults: dict[str, str] = {}
        for key, value in raw.items():
            if key in BROKER_KEYS:
                continue
            if key in topic_keys:
                self.topic_defaults[key] = value
                continue
            raise ConfigError(f"unknown config key {key!r}")
        for name, spec in BROKER_KEYS.items():
            text = raw.get(name, spec.default)
            if text is None:
                self.values[name] = None
                continue
            try:
                val = spec.parse(text)
            except (ValueError, TypeError) as exc:
                raise ConfigError(f"{name}: invalid value {text!r}: {exc}") from None
            if spec.check is not None and not spec.check(val):
                raise ConfigError(f"{name}: invalid value {text!r}: {spec.check_doc}")
            self.values[name] = val
        # validate the topic-level defaults with the same rules topics use
        from storage.errors import InvalidConfigError
        from storage.log_config import parse_broker_value
        for key, value in self.topic_defaults.items():
            try:
                parse_broker_value(key, value)
            except InvalidConfigError as exc:  # the message names the key
                raise ConfigError(str(exc)) from None
        if raw.get("broker.id") is not None and raw.get("node.id") is None:
            self.values["node.id"] = self.values["broker.id"]
        self.listeners = [parse_listener(u, "listeners") for u in self.values["listeners"]]
        if not self.listeners:
            raise ConfigError("listeners: at least one listener is required")
        adv = self.values["advertised.listeners"]
        self.advertised = [parse_listener(u, "advertised.listeners") for u in adv] if adv else None

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    @property
    def log_dirs(self) -> list[Path]:
        dirs = self.values["log.dirs"] or self.values["log.dir"]
        return [Path(d) for d in dirs]

    @property
    def node_id(self) -> int:
        return self.values["node.id"]

    @classmethod
    def load(cls, config_file: str | None = None, overrides: list[str] | None = None) -> "BrokerConfig":
        raw: dict[str, str] = {}
        if config_file:
            path = Path(config_file)
            try:
                raw.update(parse_properties(path.read_text()))
            except OSError as exc:
                raise ConfigError(f"cannot read config file {config_file}: {exc}") from None
        for item in overrides or []:
            if "=" not in item:
                raise ConfigError(f"override {item!r}: expected key=value")
            k, v = item.split("=", 1)
            raw[k.strip()] = v.strip()
        return cls(raw)
