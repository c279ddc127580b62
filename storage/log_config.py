"""Topic (log) configuration as Kafka 4.4 defines it.

Three layers, resolved exactly as Kafka does (``LogConfig.fromProps`` over
``KafkaConfig.extractLogConfigMap``):

1. a topic override (``overrides``: topic config name -> string),
2. else the broker's ``log.*`` setting for that config (``BROKER_LOG_DEFAULTS``), where some
   topic configs have several broker synonyms tried in Kafka's precedence order:
   ``segment.ms`` <- ``log.roll.ms``, ``log.roll.hours``;
   ``segment.jitter.ms`` <- ``log.roll.jitter.ms``, ``log.roll.jitter.hours``;
   ``retention.ms`` <- ``log.retention.ms``, ``log.retention.minutes``, ``log.retention.hours``
   (a negative result means -1, unlimited);
   ``flush.ms`` <- ``log.flush.interval.ms``, ``log.flush.scheduler.interval.ms``;
   the first synonym that is *set* wins, otherwise the last synonym's default applies,
3. else the built-in default.

Message timestamp bounds: ``message.timestamp.before.max.ms`` /
``message.timestamp.after.max.ms`` (KIP-937), ``after`` one hour by default (KIP-1030).
Kafka 4.0 removed ``message.format.version`` and ``message.downconversion.enable`` (KIP-724):
they are :data:`REMOVED_TOPIC_CONFIGS`, refused like any unknown name when a client sets one,
dropped with a log line from topic metadata written before, and their broker keys
(:data:`REMOVED_BROKER_LOG_KEYS`) are ignored with a warning, as Kafka 4 ignores them.
Kafka 4.0 also removed the symmetric ``message.timestamp.difference.max.ms`` (KIP-937); here it
is :data:`DEPRECATED_TOPIC_CONFIGS` instead, honoured as Kafka 3.9 honoured it, so a bound a
user wrote down keeps protecting them (a difference from Kafka 4.4, which ignores it): the
topic key (accepted where Kafka 3.9 accepted it: topic creation and config changes, shown by
DescribeConfigs when set) over the broker key ``log.message.timestamp.difference.max.ms``
bounds both sides, each side unless its own ``before``/``after`` key is set (topic or broker).
The broker logs a deprecation warning naming the Kafka 4 keys (:func:`deprecation_warning`).
:class:`LogConfig` exposes the bounds the validator applies as ``timestamp_before_max_ms`` /
``timestamp_after_max_ms`` (:func:`timestamp_bounds`).

Of the configs Kafka 4.x added, ``max.decompressed.message.bytes`` is served (produce
validation refuses a compressed batch holding a record whose body is larger, see
``storage.validator``); ``remote.copy.lag.ms``/``remote.copy.lag.bytes`` (tiered storage) and
``errors.deadletterqueue.group.enable`` (share-group dead-letter queues) are accepted, checked
and stored, with no effect on this node (no remote tier; no share-group DLQ writer).

:func:`describe` answers DescribeConfigs for a topic: every topic config Kafka 4.4 lists,
with value, source and synonyms computed the way Kafka's ``ConfigHelper`` does (topic
override first, then the broker synonyms from dynamic per-broker, dynamic cluster default,
static ``server.properties`` and finally Kafka's defaults for the broker keys).
"""
from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import field
from types import MappingProxyType
from typing import Any, Iterable, Mapping, NamedTuple

from protocol.deferred import dataclass
from storage.errors import InvalidConfigError

LONG_MAX = 2**63 - 1
#: Kafka's default (and largest value) of max.decompressed.message.bytes: the largest array the
#: JVM allocates, i.e. no limit of its own
MAX_DECOMPRESSED_DEFAULT = 2_147_483_639
HOUR_MS = 3_600_000  # Kafka 4 default of message.timestamp.after.max.ms (KIP-1030)
LONG_MIN = -(2**63)
INT_MAX = 2**31 - 1
INT_MIN = -(2**31)

MS_PER_MINUTE = 60_000
MS_PER_HOUR = 3_600_000

# DescribeConfigs ConfigSource names (DescribeConfigsResponse.ConfigSource).
SOURCE_TOPIC = "TOPIC_CONFIG"
SOURCE_DYNAMIC_BROKER = "DYNAMIC_BROKER_CONFIG"
SOURCE_DYNAMIC_DEFAULT_BROKER = "DYNAMIC_DEFAULT_BROKER_CONFIG"
SOURCE_STATIC_BROKER = "STATIC_BROKER_CONFIG"
SOURCE_DEFAULT = "DEFAULT_CONFIG"

#: Wire ids of DescribeConfigs ``config_source``.
CONFIG_SOURCE_IDS = {
    "UNKNOWN": 0, SOURCE_TOPIC: 1, SOURCE_DYNAMIC_BROKER: 2, SOURCE_DYNAMIC_DEFAULT_BROKER: 3,
    SOURCE_STATIC_BROKER: 4, SOURCE_DEFAULT: 5, "DYNAMIC_BROKER_LOGGER_CONFIG": 6,
    "CLIENT_METRICS_CONFIG": 7, "GROUP_CONFIG": 8,
}
#: Wire ids of DescribeConfigs ``config_type`` (v3+).
CONFIG_TYPE_IDS = {
    "unknown": 0, "boolean": 1, "string": 2, "int": 3, "short": 4, "long": 5, "double": 6,
    "list": 7, "class": 8, "password": 9,
}


# --------------------------------------------------------------------------- validators

class Range(NamedTuple):
    """Numeric bound, inclusive on both ends (Kafka ``ConfigDef.Range``)."""

    min: float | None = None
    max: float | None = None

    def check(self, name: str, value: Any, raw: str) -> None:
        # Kafka names the parsed value: a DOUBLE's -1 is shown as -1.0
        shown = java_double_str(value) if isinstance(value, float) else raw
        if self.min is not None and value < self.min:
            raise InvalidConfigError(name, _msg(name, shown, f"Value must be at least {_num(self.min)}"))
        if self.max is not None and value > self.max:
            raise InvalidConfigError(name, _msg(name, shown, f"Value must be no more than {_num(self.max)}"))

    def describe(self) -> str:
        if self.min is not None and self.max is not None:
            return f"[{_num(self.min)},...,{_num(self.max)}]"
        if self.min is not None:
            return f"[{_num(self.min)},...]"
        return f"[...,{_num(self.max)}]"


class OneOf(NamedTuple):
    """A string (or, for list configs, each list element) must be one of ``values``
    (Kafka ``ValidString.in`` / ``ValidList.in``); case-sensitive like Kafka."""

    values: tuple[str, ...]

    def check(self, name: str, value: Any, raw: str) -> None:
        items = value if isinstance(value, (list, tuple)) else [value]
        for item in items:
            if item not in self.values:  # a list names its first bad item, as Kafka's ValidList.in
                raise InvalidConfigError(name, _msg(name, item if isinstance(value, (list, tuple)) else raw,
                                                    "String must be one of: " + ", ".join(self.values)))

    def describe(self) -> str:
        return "[" + ", ".join(self.values) + "]"


class KnownClass(NamedTuple):
    """A class-typed config naming one of ``values``; anything else is, as the JVM says when
    it cannot load it, a class that could not be found."""

    values: tuple[str, ...]

    def check(self, name: str, value: Any, raw: str) -> None:
        if value not in self.values:
            raise InvalidConfigError(name, _msg(name, raw, f"Class {value} could not be found."))

    def describe(self) -> str:
        return "[" + ", ".join(self.values) + "]"


class DistinctList(NamedTuple):
    """Kafka 4.x's ``ConfigDef.ValidList`` on a list config: no empty item, no item twice and,
    unless ``allow_empty``, at least one item. Checks the raw text (the parsed list has
    already dropped empty items)."""

    allow_empty: bool = True

    def check(self, name: str, value: Any, raw: str) -> None:
        text = raw.strip() if isinstance(raw, str) else ",".join(value)
        items = [] if text == "" else [x.strip() for x in text.split(",")]
        if not items and not self.allow_empty:
            raise InvalidConfigError(name, f"Configuration '{name}' must not be empty. Valid values include: "
                                           "any non-empty value")
        if len(set(items)) != len(items):
            raise InvalidConfigError(name, f"Configuration '{name}' values must not be duplicated.")
        if "" in items:
            raise InvalidConfigError(name, f"Configuration '{name}' values must not be empty.")

    def describe(self) -> str:
        return "distinct, non-empty items"


class GzipLevel(NamedTuple):
    """gzip level: 1..9 or -1 (the codec default)."""

    def check(self, name: str, value: Any, raw: str) -> None:
        if value != -1 and not 1 <= value <= 9:
            raise InvalidConfigError(name, _msg(name, raw, "Value must be between 1 and 9 or equal to -1"))

    def describe(self) -> str:
        return "[1,...,9] or -1"


class ThrottledReplicas(NamedTuple):
    """``*`` or a list of ``partition:broker`` pairs."""

    def check(self, name: str, value: Any, raw: str) -> None:
        # Kafka's ThrottledReplicaListValidator: every item "p:b" or empty, or the items joined "*"
        items = [x.strip() for x in raw.split(",")] if isinstance(raw, str) else list(value)
        if "".join(items) == "*" or all(re.fullmatch(r"(\d+:\d+)?", item) for item in items):
            return
        raise InvalidConfigError(name, _msg(
            name, "[" + ", ".join(items) + "]", f"{name} must be the literal '*' or a list of replicas in the "
                                                "following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."))

    def describe(self) -> str:
        return "[partitionId]:[brokerId],[partitionId]:[brokerId],..."


_ICEBERG_SPEC_ITEM = re.compile(r"\s*(?:(identity|year|month|day|hour)\(\s*([\w.]+)\s*\)|([\w.]+))\s*")
#: the columns of the key_value table a partition spec may name, and the transforms each takes
ICEBERG_SPEC_COLUMNS = {"redpanda.timestamp": ("identity", "year", "month", "day", "hour"),
                        "redpanda.partition": ("identity",)}


def parse_iceberg_partition_spec(text: str) -> tuple[tuple[str, str], ...]:
    """``iceberg.partition.spec`` (Redpanda's ``redpanda.iceberg.partition.spec`` syntax:
    ``(hour(redpanda.timestamp), redpanda.partition)``; ``()`` unpartitioned) as
    ``((transform, column), ...)``; raises ValueError naming what is wrong."""
    t = text.strip()
    if not (t.startswith("(") and t.endswith(")")):
        raise ValueError("a partition spec is a parenthesized list, e.g. (day(redpanda.timestamp))")
    body = t[1:-1].strip()
    out: list[tuple[str, str]] = []
    for item in (body.split(",") if body else []):
        m = _ICEBERG_SPEC_ITEM.fullmatch(item)
        if m is None:
            raise ValueError(f"{item.strip()!r} is not a column or transform(column)")
        transform, column = (m.group(1), m.group(2)) if m.group(1) else ("identity", m.group(3))
        if transform not in ICEBERG_SPEC_COLUMNS.get(column, ()):
            raise ValueError(f"{transform}({column}) is not served: columns and transforms are "
                             + "; ".join(f"{c}: {', '.join(ts)}" for c, ts in ICEBERG_SPEC_COLUMNS.items()))
        if any(c == column for _, c in out):  # Iceberg refuses redundant partitions of a column
            raise ValueError(f"{column} is partitioned twice")
        out.append((transform, column))
    return tuple(out)


class IcebergPartitionSpec(NamedTuple):
    """``iceberg.partition.spec``: see :func:`parse_iceberg_partition_spec`."""

    def check(self, name: str, value: Any, raw: str) -> None:
        try:
            parse_iceberg_partition_spec(value)
        except ValueError as exc:
            raise InvalidConfigError(name, _msg(name, raw, str(exc))) from None

    def describe(self) -> str:
        return "(transform(column), ...)"


#: ``iceberg.mode`` values (Redpanda's ``redpanda.iceberg.mode``)
ICEBERG_MODES = ("disabled", "key_value", "value_schema_id_prefix", "value_schema_latest")
#: the options ``value_schema_latest:k=v,...`` takes (Redpanda's)
ICEBERG_LATEST_OPTIONS = ("subject", "protobuf_name")


def parse_iceberg_mode(text: str) -> tuple[str, dict[str, str]]:
    """``iceberg.mode`` as ``(mode, options)``: one of ``ICEBERG_MODES``, and for
    ``value_schema_latest`` Redpanda's optional ``:subject=<subject>,protobuf_name=<full name>``;
    raises ValueError naming what is wrong."""
    mode, sep, rest = text.strip().partition(":")
    if mode not in ICEBERG_MODES:
        raise ValueError("String must be one of: " + ", ".join(ICEBERG_MODES)
                         + " (value_schema_latest may take :subject=...,protobuf_name=...)")
    options: dict[str, str] = {}
    if sep:
        if mode != "value_schema_latest":
            raise ValueError(f"{mode} takes no options")
        for item in rest.split(","):
            k, eq, v = item.strip().partition("=")
            if not eq or not v.strip() or k.strip() not in ICEBERG_LATEST_OPTIONS or k.strip() in options:
                raise ValueError(f"{item.strip()!r} is not one of "
                                 + ", ".join(f"{o}=<value>" for o in ICEBERG_LATEST_OPTIONS) + " (each once)")
            options[k.strip()] = v.strip()
    return mode, options


class IcebergMode(NamedTuple):
    """``iceberg.mode``: see :func:`parse_iceberg_mode`."""

    def check(self, name: str, value: Any, raw: str) -> None:
        try:
            parse_iceberg_mode(value)
        except ValueError as exc:
            raise InvalidConfigError(name, _msg(name, raw, str(exc))) from None

    def describe(self) -> str:
        return "[" + ", ".join(ICEBERG_MODES) + "] (value_schema_latest[:subject=S,protobuf_name=N])"


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else java_double_str(v)


def _msg(name: str, raw: Any, reason: str) -> str:
    return f"Invalid value {raw} for configuration {name}: {reason}"


# --------------------------------------------------------------------------- definitions

class BrokerSynonym(NamedTuple):
    """A broker key that supplies a topic config's default; ``to_ms`` converts its unit."""

    name: str
    to_ms: int = 1   # 1, MS_PER_MINUTE or MS_PER_HOUR


class ConfigDef(NamedTuple):
    """One topic config: Kafka's type name, built-in default (typed), validator, our
    documentation, and the broker synonyms in Kafka's precedence order."""

    name: str
    type: str                       # int long double string boolean list class password
    default: Any
    validator: Any = None
    documentation: str = ""
    broker_synonyms: tuple[BrokerSynonym, ...] = ()
    read_only: bool = False
    sensitive: bool = False

    @property
    def broker_synonym(self) -> str | None:
        """The highest-priority broker key (Kafka's ``TOPIC_CONFIG_SYNONYMS``), or None."""
        return self.broker_synonyms[0].name if self.broker_synonyms else None

    @property
    def python_name(self) -> str:
        return self.name.replace(".", "_")


class BrokerConfigDef(NamedTuple):
    """A broker ``log.*``-style key: type, Kafka's default (None = unset), validator, and
    the topic config it feeds (None for broker-only keys)."""

    name: str
    type: str
    default: Any
    validator: Any = None
    topic_config: str | None = None
    documentation: str = ""


def _syn(*names: str | tuple[str, int]) -> tuple[BrokerSynonym, ...]:
    out = []
    for n in names:
        out.append(BrokerSynonym(n) if isinstance(n, str) else BrokerSynonym(*n))
    return tuple(out)


_COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

_TOPIC_DEFS: list[ConfigDef] = [
    ConfigDef("cleanup.policy", "list", ["delete"], OneOf(("compact", "delete")),
              "Retention policy for old segments: \"delete\" removes segments past the retention "
              "time or size limit, \"compact\" keeps the latest record per key; both may be given.",
              _syn("log.cleanup.policy")),
    ConfigDef("compression.gzip.level", "int", -1, GzipLevel(),
              "Level used when compression.type is gzip.", _syn("compression.gzip.level")),
    ConfigDef("compression.lz4.level", "int", 9, Range(1, 17),
              "Level used when compression.type is lz4.", _syn("compression.lz4.level")),
    ConfigDef("compression.type", "string", "producer", OneOf(_COMPRESSION_TYPES),
              "Final compression codec of the topic: a codec name, 'uncompressed', or 'producer' "
              "to keep the codec the producer used.", _syn("compression.type")),
    ConfigDef("compression.zstd.level", "int", 3, Range(-131072, 22),
              "Level used when compression.type is zstd.", _syn("compression.zstd.level")),
    ConfigDef("delete.retention.ms", "long", 86_400_000, Range(0),
              "How long delete tombstones are kept on compacted topics after the segment holding "
              "them was cleaned.", _syn("log.cleaner.delete.retention.ms")),
    ConfigDef("errors.deadletterqueue.group.enable", "boolean", False, None,
              "Whether share groups may write undeliverable records to this topic as their "
              "dead-letter queue."),
    ConfigDef("file.delete.delay.ms", "long", 60_000, Range(0),
              "Delay before a deleted segment's files are removed from the file system.",
              _syn("log.segment.delete.delay.ms")),
    ConfigDef("flush.messages", "long", LONG_MAX, Range(1),
              "Force an fsync of the log after this many messages.",
              _syn("log.flush.interval.messages")),
    ConfigDef("flush.ms", "long", LONG_MAX, Range(0),
              "Force an fsync of the log when this much time passed since the last flush.",
              _syn("log.flush.interval.ms", "log.flush.scheduler.interval.ms")),
    ConfigDef("follower.replication.throttled.replicas", "list", [], ThrottledReplicas(),
              "Replicas whose replication is throttled on the follower side, as "
              "[partitionId]:[brokerId] pairs or '*'."),
    ConfigDef("index.interval.bytes", "int", 4096, Range(0),
              "Log bytes between two offset index entries.", _syn("log.index.interval.bytes")),
    ConfigDef("leader.replication.throttled.replicas", "list", [], ThrottledReplicas(),
              "Replicas whose replication is throttled on the leader side, as "
              "[partitionId]:[brokerId] pairs or '*'."),
    ConfigDef("local.retention.bytes", "long", -2, Range(-2),
              "Local-tier size limit when tiered storage is on; -2 means retention.bytes.",
              _syn("log.local.retention.bytes")),
    ConfigDef("local.retention.ms", "long", -2, Range(-2),
              "Local-tier time limit when tiered storage is on; -2 means retention.ms.",
              _syn("log.local.retention.ms")),
    ConfigDef("max.compaction.lag.ms", "long", LONG_MAX, Range(1),
              "Longest time a record may stay ineligible for compaction.",
              _syn("log.cleaner.max.compaction.lag.ms")),
    ConfigDef("max.decompressed.message.bytes", "int", MAX_DECOMPRESSED_DEFAULT, Range(1, MAX_DECOMPRESSED_DEFAULT),
              "Largest decompressed record body a compressed produced batch may hold; a larger "
              "one refuses the batch with INVALID_RECORD (Kafka also checks it when compacting "
              "and looking up offsets by timestamp; Hourglass does not).",
              _syn("max.decompressed.message.bytes")),
    ConfigDef("max.message.bytes", "int", 1_048_588, Range(0),
              "Largest record batch the topic accepts (after compression).",
              _syn("message.max.bytes")),
    ConfigDef("message.timestamp.after.max.ms", "long", HOUR_MS, Range(0),
              "How far ahead of the broker clock a CreateTime record timestamp may be.",
              _syn("log.message.timestamp.after.max.ms")),
    ConfigDef("message.timestamp.before.max.ms", "long", LONG_MAX, Range(0),
              "How far behind the broker clock a CreateTime record timestamp may be.",
              _syn("log.message.timestamp.before.max.ms")),
    ConfigDef("message.timestamp.type", "string", "CreateTime", OneOf(("CreateTime", "LogAppendTime")),
              "Whether record timestamps are the producer's CreateTime or the broker's LogAppendTime.",
              _syn("log.message.timestamp.type")),
    ConfigDef("min.cleanable.dirty.ratio", "double", 0.5, Range(0, 1),
              "Dirty-to-total ratio above which the log cleaner compacts the log.",
              _syn(("log.cleaner.min.cleanable.ratio", 1))),
    ConfigDef("min.compaction.lag.ms", "long", 0, Range(0),
              "Shortest time a record stays uncompacted.", _syn("log.cleaner.min.compaction.lag.ms")),
    ConfigDef("min.insync.replicas", "int", 1, Range(1),
              "Replicas that must acknowledge an acks=all write.", _syn("min.insync.replicas")),
    ConfigDef("preallocate", "boolean", False, None,
              "Preallocate segment files on disk when creating a segment.", _syn("log.preallocate")),
    ConfigDef("remote.copy.lag.bytes", "long", -1, Range(-1),
              "Newer local bytes after which a segment may be copied to the remote tier.",
              _syn("log.remote.copy.lag.bytes")),
    ConfigDef("remote.copy.lag.ms", "long", 0, Range(-1),
              "Age after which a segment may be copied to the remote tier.", _syn("log.remote.copy.lag.ms")),
    ConfigDef("remote.log.copy.disable", "boolean", False, None,
              "Stop copying segments to the remote tier (tiered storage read-only)."),
    ConfigDef("remote.log.delete.on.disable", "boolean", False, None,
              "Delete remote-tier data when tiered storage is disabled on the topic."),
    ConfigDef("remote.storage.enable", "boolean", False, None,
              "Enable tiered storage for the topic."),
    ConfigDef("retention.bytes", "long", -1, None,
              "Largest size a partition may grow to before old segments are deleted under the "
              "delete policy; -1 means no size limit.", _syn("log.retention.bytes")),
    ConfigDef("retention.ms", "long", 604_800_000, Range(-1),
              "Longest time a segment is kept (by its largest record timestamp) under the delete "
              "policy; -1 means no time limit.",
              _syn("log.retention.ms", ("log.retention.minutes", MS_PER_MINUTE),
                   ("log.retention.hours", MS_PER_HOUR))),
    ConfigDef("segment.bytes", "int", 1_073_741_824, Range(14),
              "Size at which the active segment is rolled.", _syn("log.segment.bytes")),
    ConfigDef("segment.index.bytes", "int", 10_485_760, Range(4),
              "Preallocated size of a segment's offset and time indexes.",
              _syn("log.index.size.max.bytes")),
    ConfigDef("segment.jitter.ms", "long", 0, Range(0),
              "Largest random jitter subtracted from segment.ms when deciding to roll.",
              _syn("log.roll.jitter.ms", ("log.roll.jitter.hours", MS_PER_HOUR))),
    ConfigDef("segment.ms", "long", 604_800_000, Range(1),
              "Age (by the first record's timestamp) after which the active segment is rolled.",
              _syn("log.roll.ms", ("log.roll.hours", MS_PER_HOUR))),
    ConfigDef("unclean.leader.election.enable", "boolean", False, None,
              "Allow an out-of-sync replica to become leader as a last resort.",
              _syn("unclean.leader.election.enable")),
    # Confluent Server's broker-side schema ID validation (not in Apache Kafka): a produce whose
    # key/value lacks the wire format's magic byte and schema id, or names an id not registered
    # under the subject the strategy derives, is refused whole with INVALID_RECORD
    ConfigDef("confluent.key.schema.validation", "boolean", False, None,
              "Refuse records whose key does not carry a schema id registered in this broker's "
              "Schema Registry under the key subject (Confluent Server's schema ID validation)."),
    ConfigDef("confluent.value.schema.validation", "boolean", False, None,
              "Refuse records whose value does not carry a schema id registered in this broker's "
              "Schema Registry under the value subject (Confluent Server's schema ID validation)."),
    ConfigDef("confluent.key.subject.name.strategy", "class", "io.confluent.kafka.serializers.subject.TopicNameStrategy",
              None, "How the key subject is named for schema ID validation: TopicNameStrategy "
              "(<topic>-key), RecordNameStrategy (the record's full name) or TopicRecordNameStrategy "
              "(<topic>-<record name>), by Confluent's class names."),
    ConfigDef("confluent.value.subject.name.strategy", "class",
              "io.confluent.kafka.serializers.subject.TopicNameStrategy", None,
              "How the value subject is named for schema ID validation: TopicNameStrategy "
              "(<topic>-value), RecordNameStrategy or TopicRecordNameStrategy, by Confluent's class names."),
    # Hourglass's lakehouse tables (lakehouse/, not in Apache Kafka): the topic also written as an
    # Apache Iceberg table, with Redpanda's mode names (its redpanda.iceberg.mode)
    ConfigDef("iceberg.mode", "string", "disabled", IcebergMode(),
              "Hourglass: write the topic also as an Apache Iceberg table (namespace redpanda, named as "
              "the topic): disabled, key_value (the record's key, value bytes, partition, offset, "
              "timestamp, timestamp type and headers), value_schema_id_prefix (values in the Schema "
              "Registry's wire format decoded into typed columns by the registered schema of their id) or "
              "value_schema_latest[:subject=S,protobuf_name=N] (values without the prefix, decoded by the "
              "subject's latest schema; subject <topic>-value by default); values that do not decode go "
              "to the table <topic>~dlq. As Redpanda's redpanda.iceberg.mode."),
    ConfigDef("iceberg.partition.spec", "string", "(day(redpanda.timestamp))", IcebergPartitionSpec(),
              "Hourglass: the partitioning of the topic's Iceberg table, in Redpanda's syntax "
              "(its redpanda.iceberg.partition.spec): (day(redpanda.timestamp)) by default, "
              "year/month/day/hour of redpanda.timestamp and redpanda.partition, () for none; a change "
              "evolves the table's spec (files written before keep theirs)."),
    ConfigDef("iceberg.target.lag.ms", "long", 60_000, Range(1),
              "Hourglass: how far the topic's Iceberg table may trail the log: translation commits a "
              "snapshot about this often (Redpanda's redpanda.iceberg.target.lag.ms).",
              _syn("iceberg.target.lag.ms")),
]

#: Confluent's subject name strategies, by class name (the topic configs above take these).
SUBJECT_NAME_STRATEGIES = tuple(f"io.confluent.kafka.serializers.subject.{n}" for n in (
    "TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy"))
for _d in list(_TOPIC_DEFS):
    if _d.name.endswith(".subject.name.strategy"):
        _TOPIC_DEFS[_TOPIC_DEFS.index(_d)] = _d._replace(validator=KnownClass(SUBJECT_NAME_STRATEGIES))
#: The topic configs Confluent Server adds to Apache Kafka's.
CONFLUENT_TOPIC_CONFIGS = frozenset(d.name for d in _TOPIC_DEFS if d.name.startswith("confluent."))
#: Hourglass's own topic configs (lakehouse tables), with Redpanda's names less its prefix.
ICEBERG_TOPIC_CONFIGS = frozenset(d.name for d in _TOPIC_DEFS if d.name.startswith("iceberg."))

#: Every topic config of Kafka 4.4, by name (sorted as Kafka's ``LogConfig.configNames``).
TOPIC_CONFIGS: dict[str, ConfigDef] = {d.name: d for d in sorted(_TOPIC_DEFS, key=lambda d: d.name)}

_B = BrokerConfigDef
_BROKER_DEFS: list[BrokerConfigDef] = [
    _B("log.segment.bytes", "int", 1_073_741_824, Range(14), "segment.bytes"),
    _B("log.roll.ms", "long", None, None, "segment.ms"),
    _B("log.roll.hours", "int", 168, Range(1), "segment.ms"),
    _B("log.roll.jitter.ms", "long", None, None, "segment.jitter.ms"),
    _B("log.roll.jitter.hours", "int", 0, Range(0), "segment.jitter.ms"),
    _B("log.retention.ms", "long", None, None, "retention.ms"),
    _B("log.retention.minutes", "int", None, None, "retention.ms"),
    _B("log.retention.hours", "int", 168, None, "retention.ms"),
    _B("log.retention.bytes", "long", -1, None, "retention.bytes"),
    _B("log.cleanup.policy", "list", ["delete"], OneOf(("compact", "delete")), "cleanup.policy"),
    _B("log.index.size.max.bytes", "int", 10_485_760, Range(4), "segment.index.bytes"),
    _B("log.index.interval.bytes", "int", 4096, Range(0), "index.interval.bytes"),
    _B("log.flush.interval.messages", "long", LONG_MAX, Range(1), "flush.messages"),
    _B("log.flush.interval.ms", "long", None, None, "flush.ms"),
    _B("log.flush.scheduler.interval.ms", "long", LONG_MAX, None, "flush.ms"),
    _B("log.segment.delete.delay.ms", "long", 60_000, Range(0), "file.delete.delay.ms"),
    _B("log.cleaner.delete.retention.ms", "long", 86_400_000, Range(0), "delete.retention.ms"),
    _B("log.cleaner.min.compaction.lag.ms", "long", 0, Range(0), "min.compaction.lag.ms"),
    _B("log.cleaner.max.compaction.lag.ms", "long", LONG_MAX, Range(1), "max.compaction.lag.ms"),
    _B("log.cleaner.min.cleanable.ratio", "double", 0.5, Range(0, 1), "min.cleanable.dirty.ratio"),
    _B("message.max.bytes", "int", 1_048_588, Range(0), "max.message.bytes"),
    _B("compression.type", "string", "producer", OneOf(_COMPRESSION_TYPES), "compression.type"),
    _B("compression.gzip.level", "int", -1, GzipLevel(), "compression.gzip.level"),
    _B("compression.lz4.level", "int", 9, Range(1, 17), "compression.lz4.level"),
    _B("compression.zstd.level", "int", 3, Range(-131072, 22), "compression.zstd.level"),
    _B("log.preallocate", "boolean", False, None, "preallocate"),
    _B("log.message.timestamp.type", "string", "CreateTime", OneOf(("CreateTime", "LogAppendTime")),
       "message.timestamp.type"),
    _B("log.message.timestamp.before.max.ms", "long", LONG_MAX, Range(0), "message.timestamp.before.max.ms"),
    _B("log.message.timestamp.after.max.ms", "long", HOUR_MS, Range(0), "message.timestamp.after.max.ms"),
    # deprecated (Kafka 4 removed it), honoured as Kafka 3.9 did: see DEPRECATED_TOPIC_CONFIGS
    _B("log.message.timestamp.difference.max.ms", "long", None, Range(0), None,
       "Deprecated (Kafka 4.0 removed it); honoured as in Kafka 3.9: the largest difference between a "
       "record's CreateTime and the broker's clock, on each side whose log.message.timestamp.before.max.ms / "
       "log.message.timestamp.after.max.ms is not set."),
    _B("max.decompressed.message.bytes", "int", MAX_DECOMPRESSED_DEFAULT, Range(1, MAX_DECOMPRESSED_DEFAULT),
       "max.decompressed.message.bytes"),
    _B("log.remote.copy.lag.ms", "long", 0, Range(-1), "remote.copy.lag.ms"),
    _B("log.remote.copy.lag.bytes", "long", -1, Range(-1), "remote.copy.lag.bytes"),
    _B("log.local.retention.ms", "long", -2, Range(-2), "local.retention.ms"),
    _B("log.local.retention.bytes", "long", -2, Range(-2), "local.retention.bytes"),
    _B("min.insync.replicas", "int", 1, Range(1), "min.insync.replicas"),
    _B("unclean.leader.election.enable", "boolean", False, None, "unclean.leader.election.enable"),
    _B("iceberg.target.lag.ms", "long", 60_000, Range(1), "iceberg.target.lag.ms",
       "Hourglass: the default iceberg.target.lag.ms of topics (Redpanda's iceberg_target_lag_ms)."),
    # Broker-only log keys (no topic config) that the log manager / broker use.
    _B("log.dir", "string", "/tmp/kafka-logs"),
    _B("log.dirs", "string", None),
    _B("num.partitions", "int", 1, Range(1)),
    _B("auto.create.topics.enable", "boolean", True),
    _B("log.retention.check.interval.ms", "long", 300_000, Range(1)),
    _B("log.flush.offset.checkpoint.interval.ms", "int", 60_000, Range(0)),
    _B("log.flush.start.offset.checkpoint.interval.ms", "int", 60_000, Range(0)),
    _B("num.recovery.threads.per.data.dir", "int", 1, Range(1)),
    _B("log.initial.task.delay.ms", "long", 30_000, Range(0)),
    _B("log.cleaner.enable", "boolean", True),
    _B("log.cleaner.threads", "int", 1, Range(0)),
    _B("log.cleaner.backoff.ms", "long", 15_000, Range(0)),
    _B("log.cleaner.dedupe.buffer.size", "long", 134_217_728),
    _B("log.cleaner.io.buffer.size", "int", 524_288, Range(0)),
    _B("producer.id.expiration.ms", "int", 86_400_000, Range(1)),
    _B("producer.id.expiration.check.interval.ms", "int", 600_000, Range(1)),
]

#: Broker log keys with Kafka 4.4 defaults (None = unset) and the topic config each feeds.
BROKER_LOG_DEFAULTS: dict[str, BrokerConfigDef] = {d.name: d for d in _BROKER_DEFS}

_KIP_724 = "Kafka 4.0 removed it with message format v0/v1 (KIP-724)"
_KIP_937 = ("Kafka 4.0 removed it (KIP-937): message.timestamp.before.max.ms and "
            "message.timestamp.after.max.ms bound the two sides")
#: Topic configs Kafka 4.0 removed -> why. A client setting one gets Kafka 4's answer for any
#: unknown name (INVALID_CONFIG, "Unknown topic config name: ..."); one stored in topic
#: metadata written before is dropped when the topic is loaded (:func:`drop_removed`).
REMOVED_TOPIC_CONFIGS: dict[str, str] = {
    "message.downconversion.enable": _KIP_724 + ": batches are down-converted for Fetch v0-3 regardless",
    "message.format.version": _KIP_724,
}
#: Their broker keys: ignored with a warning, as Kafka 4 brokers ignore them (they start).
REMOVED_BROKER_LOG_KEYS: dict[str, str] = {"log." + k: v for k, v in REMOVED_TOPIC_CONFIGS.items()}

TIMESTAMP_DIFFERENCE = "message.timestamp.difference.max.ms"
#: Topic configs Kafka 4.0 removed that Hourglass still honours as Kafka 3.9 did -> the Kafka 4
#: keys that replace them (see the module docstring).
DEPRECATED_TOPIC_CONFIGS: dict[str, tuple[str, ...]] = {
    TIMESTAMP_DIFFERENCE: ("message.timestamp.before.max.ms", "message.timestamp.after.max.ms"),
}
DEPRECATED_BROKER_LOG_KEYS: dict[str, tuple[str, ...]] = {
    "log." + k: tuple("log." + x for x in v) for k, v in DEPRECATED_TOPIC_CONFIGS.items()}


def deprecation_warning(key: str) -> str:
    """The warning logged when a deprecated (topic or broker) key is set."""
    new = DEPRECATED_TOPIC_CONFIGS.get(key) or DEPRECATED_BROKER_LOG_KEYS[key]
    return (f"The configuration '{key}' is deprecated: Kafka 4.0 removed it (KIP-937) and ignores it. "
            f"Hourglass honours it as Kafka 3.9 did, as the bound of each side not set by {' / '.join(new)}; "
            f"set those instead.")


def timestamp_bounds(broker_props: Mapping[str, Any], overrides: Mapping[str, Any], before: int,
                     after: int) -> tuple[int, int]:
    """The (before, after) bounds the validator applies, Kafka 3.9's rule: the deprecated
    ``message.timestamp.difference.max.ms`` (topic override, else ``log.`` broker key) stands in
    for each side whose own key is set neither on the topic nor on the broker; ``before`` and
    ``after`` are those sides' resolved values (set or default)."""
    diff = overrides.get(TIMESTAMP_DIFFERENCE)
    if diff is None:
        diff = broker_props.get("log." + TIMESTAMP_DIFFERENCE)
    if diff is None:
        return before, after
    diff = _parse_typed(TIMESTAMP_DIFFERENCE, "long", diff)

    def is_set(side: str) -> bool:
        return (f"message.timestamp.{side}.max.ms" in overrides
                or broker_props.get(f"log.message.timestamp.{side}.max.ms") is not None)
    return (before if is_set("before") else diff), (after if is_set("after") else diff)


def drop_removed(overrides: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``overrides`` without the configs Kafka 4 removed, and the names dropped."""
    kept = {k: v for k, v in overrides.items() if k not in REMOVED_TOPIC_CONFIGS}
    return kept, [k for k in overrides if k in REMOVED_TOPIC_CONFIGS]


# --------------------------------------------------------------------------- parsing

def _parse_typed(name: str, typ: str, raw: Any) -> Any:
    """Parse ``raw`` (str, or an already-typed value) as Kafka's ``ConfigDef.parseType``."""
    if raw is None:
        return None
    try:
        if typ in ("int", "long", "short"):
            if isinstance(raw, bool):
                raise ValueError
            if isinstance(raw, int):
                v = raw
            else:
                s = str(raw).strip()
                if not re.fullmatch(r"[+-]?\d+", s):
                    raise ValueError
                v = int(s)
            lo, hi = {"int": (INT_MIN, INT_MAX), "short": (-32768, 32767)}.get(typ, (LONG_MIN, LONG_MAX))
            if not lo <= v <= hi:
                raise ValueError
            return v
        if typ == "double":
            if isinstance(raw, (int, float)) and not isinstance(raw, bool):
                v = float(raw)
            else:
                s = str(raw).strip()
                if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[dDfF]?", s):
                    raise ValueError
                v = float(s.rstrip("dDfF"))
            if math.isnan(v):
                raise ValueError
            return v
        if typ == "boolean":
            if isinstance(raw, bool):
                return raw
            s = str(raw).strip().lower()
            if s == "true":
                return True
            if s == "false":
                return False
            raise InvalidConfigError(name, _msg(name, raw, "Expected value to be either true or false"))
        if typ == "list":
            if isinstance(raw, (list, tuple)):
                return [str(x).strip() for x in raw]
            s = str(raw).strip()
            return [] if s == "" else [x.strip() for x in re.split(r"\s*,\s*", s)]
        # string, class, password
        return str(raw).strip()
    except ValueError:
        kind = {"int": "INT", "long": "LONG", "short": "SHORT", "double": "DOUBLE"}[typ]
        raise InvalidConfigError(name, _msg(name, raw, f"Not a number of type {kind}")) from None


def parse_value(name: str, raw: Any) -> Any:
    """Parse and validate one topic config value (string as sent by AdminClient).

    Raises :class:`InvalidConfigError` naming the key on an unknown name, a type error, or a
    range / one-of violation. Returns the typed value (list configs -> ``list[str]``).
    """
    d = TOPIC_CONFIGS.get(name)
    if d is None:
        if name in DEPRECATED_TOPIC_CONFIGS:   # accepted as Kafka 3.9 accepted it (module docstring)
            value = _parse_typed(name, "long", raw)
            if value is not None:
                Range(0).check(name, value, raw)
            return value
        raise InvalidConfigError(name, f"Unknown topic config name: {name}")
    value = _parse_typed(name, d.type, raw)
    if d.validator is not None and value is not None:
        d.validator.check(name, value, raw)
    return value


def parse_broker_value(name: str, raw: Any) -> Any:
    """Parse and validate one broker key of :data:`BROKER_LOG_DEFAULTS` (unknown keys: str)."""
    d = BROKER_LOG_DEFAULTS.get(name)
    if d is None:
        return raw
    value = _parse_typed(name, d.type, raw)
    if d.validator is not None and value is not None:
        d.validator.check(name, value, raw)
    return value


def validate_overrides(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Parse every override (CreateTopics / AlterConfigs validate_only); raises on the first
    bad one. The cross-field checks live in :meth:`LogConfig.from_props`."""
    return {k: parse_value(k, v) for k, v in overrides.items()}


def java_double_str(v: float) -> str:
    """Java's ``Double.toString`` (0.5 -> "0.5", 1 -> "1.0", 1e-05 -> "1.0E-5",
    1.5e7 -> "1.5E7"): plain notation for 1e-3 <= |v| < 1e7, else shortest-mantissa E form."""
    v = float(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0:
        return "-0.0" if math.copysign(1.0, v) < 0 else "0.0"
    if 1e-3 <= abs(v) < 1e7:
        s = repr(v)
        return s if "." in s else s + ".0"
    for prec in range(0, 17):
        cand = f"{v:.{prec}e}"
        if float(cand) == v:
            break
    mant, exp = cand.split("e")
    if "." in mant:
        mant = mant.rstrip("0")
        if mant.endswith("."):
            mant += "0"
    else:
        mant += ".0"
    return f"{mant}E{int(exp)}"


def value_to_string(typ: str, value: Any) -> str | None:
    """Kafka's ``ConfigDef.convertToString``: how DescribeConfigs renders a typed value."""
    if value is None:
        return None
    if typ == "boolean":
        return "true" if value else "false"
    if typ == "list":
        return ",".join(value)
    if typ == "double":
        return java_double_str(float(value))
    return str(value)


# --------------------------------------------------------------------------- resolution

def _broker_source_maps(broker_defaults: Mapping[str, Any] | None,
                        dynamic_default: Mapping[str, Any] | None,
                        dynamic_broker: Mapping[str, Any] | None) -> dict[str, Any]:
    """Merge broker sources into the effective broker property map (dynamic per-broker >
    dynamic cluster default > static), as KafkaConfig sees it."""
    merged: dict[str, Any] = {}
    for layer in (broker_defaults, dynamic_default, dynamic_broker):
        if layer:
            merged.update(layer)
    return merged


def resolve_broker_log_defaults(broker_props: Mapping[str, Any]) -> dict[str, Any]:
    """Kafka's ``KafkaConfig.extractLogConfigMap``: broker props -> typed topic defaults.

    For each topic config with broker synonyms, the first synonym present in
    ``broker_props`` wins (converted to ms); if none is present, the built-in default of
    the broker key applies (e.g. ``log.roll.hours`` = 168 -> ``segment.ms`` = 604800000).
    ``retention.ms`` below 0 means -1.
    """
    parsed = {k: parse_broker_value(k, v) for k, v in broker_props.items()
              if k in BROKER_LOG_DEFAULTS}
    out: dict[str, Any] = {}
    for d in TOPIC_CONFIGS.values():
        if not d.broker_synonyms:
            continue
        value = None
        for syn in d.broker_synonyms:
            if parsed.get(syn.name) is not None:
                value = parsed[syn.name] * syn.to_ms if syn.to_ms != 1 else parsed[syn.name]
                break
        if value is None:
            # The last synonym is the one carrying Kafka's default (e.g. log.retention.hours).
            for syn in reversed(d.broker_synonyms):
                bd = BROKER_LOG_DEFAULTS[syn.name].default
                if bd is not None:
                    value = bd * syn.to_ms if syn.to_ms != 1 else bd
                    break
        if value is None:
            value = d.default
        out[d.name] = value
    if out["retention.ms"] < 0:
        out["retention.ms"] = -1
    return out


@dataclass(frozen=True)
class LogConfig:
    """Resolved, typed configuration of one topic's logs (Kafka ``LogConfig``).

    Build with :meth:`from_props` (or :meth:`default`). ``overrides`` keeps the topic's own
    string overrides for DescribeConfigs; ``values`` maps every topic config name to its
    typed resolved value.
    """

    segment_bytes: int = 1_073_741_824
    segment_ms: int = 604_800_000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10_485_760
    index_interval_bytes: int = 4096
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    retention_bytes: int = -1
    retention_ms: int = 604_800_000
    max_message_bytes: int = 1_048_588
    file_delete_delay_ms: int = 60_000
    delete_retention_ms: int = 86_400_000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5
    cleanup_policy: tuple[str, ...] = ("delete",)
    unclean_leader_election_enable: bool = False
    min_insync_replicas: int = 1
    compression_type: str = "producer"
    compression_gzip_level: int = -1
    compression_lz4_level: int = 9
    compression_zstd_level: int = 3
    preallocate: bool = False
    message_timestamp_type: str = "CreateTime"
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_after_max_ms: int = HOUR_MS
    timestamp_before_max_ms: int = LONG_MAX     # the bounds the validator applies
    timestamp_after_max_ms: int = HOUR_MS
    max_decompressed_message_bytes: int = MAX_DECOMPRESSED_DEFAULT
    leader_replication_throttled_replicas: tuple[str, ...] = ()
    follower_replication_throttled_replicas: tuple[str, ...] = ()
    local_retention_bytes: int = -2
    local_retention_ms: int = -2
    remote_storage_enable: bool = False
    remote_log_copy_disable: bool = False
    remote_log_delete_on_disable: bool = False
    remote_copy_lag_ms: int = 0
    remote_copy_lag_bytes: int = -1
    errors_deadletterqueue_group_enable: bool = False
    confluent_key_schema_validation: bool = False
    confluent_value_schema_validation: bool = False
    confluent_key_subject_name_strategy: str = "io.confluent.kafka.serializers.subject.TopicNameStrategy"
    confluent_value_subject_name_strategy: str = "io.confluent.kafka.serializers.subject.TopicNameStrategy"
    schema_id_validation: bool = False          # either of the two above: one check per produce
    iceberg_mode: str = "disabled"
    iceberg_partition_spec: str = "(day(redpanda.timestamp))"
    iceberg_target_lag_ms: int = 60_000
    overrides: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)
    values: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)

    # ---- derived (Kafka LogConfig methods) ----
    @property
    def compact(self) -> bool:
        return "compact" in (p.lower() for p in self.cleanup_policy)

    @property
    def delete(self) -> bool:
        return "delete" in (p.lower() for p in self.cleanup_policy)

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @property
    def max_segment_ms(self) -> int:
        """Roll age bound: compacted topics also roll by max.compaction.lag.ms."""
        if self.compact and self.max_compaction_lag_ms > 0:
            return min(self.max_compaction_lag_ms, self.segment_ms)
        return self.segment_ms

    @property
    def init_file_size(self) -> int:
        return self.segment_bytes if self.preallocate else 0

    @property
    def effective_local_retention_ms(self) -> int:
        return self.retention_ms if self.local_retention_ms == -2 else self.local_retention_ms

    @property
    def effective_local_retention_bytes(self) -> int:
        return self.retention_bytes if self.local_retention_bytes == -2 else self.local_retention_bytes

    def random_segment_jitter(self, rng) -> int:
        """Per-segment roll jitter in [0, min(segment.jitter.ms, segment.ms))."""
        if self.segment_jitter_ms <= 0:  # the default; asked once per segment opened at start-up
            return 0
        from storage.roll import roll_jitter
        return roll_jitter(self.segment_jitter_ms, rng, segment_ms=self.segment_ms)

    # ---- construction ----
    @classmethod
    def from_props(cls, broker_defaults: Mapping[str, Any] | None = None,
                   overrides: Mapping[str, Any] | None = None) -> "LogConfig":
        """Resolve topic overrides over the broker's log.* defaults over built-in defaults.

        ``broker_defaults`` is the effective broker property map (static server.properties
        merged with any dynamic broker configs); ``overrides`` the topic's configs. Raises
        :class:`InvalidConfigError` on an unknown topic key or a bad value (naming the key),
        and when min.compaction.lag.ms > max.compaction.lag.ms.
        """
        overrides = dict(overrides or {})
        base = resolve_broker_log_defaults(broker_defaults or {})
        values: dict[str, Any] = {}
        for name, d in TOPIC_CONFIGS.items():
            values[name] = base.get(name, d.default)
        for k, v in overrides.items():
            values[k] = parse_value(k, v)
        bounds = timestamp_bounds(broker_defaults or {}, overrides, values["message.timestamp.before.max.ms"],
                                  values["message.timestamp.after.max.ms"])
        for k in DEPRECATED_TOPIC_CONFIGS:
            values.pop(k, None)
        if values["min.compaction.lag.ms"] > values["max.compaction.lag.ms"]:
            raise InvalidConfigError(
                "min.compaction.lag.ms",
                "conflict topic config setting min.compaction.lag.ms "
                f"({values['min.compaction.lag.ms']}) > max.compaction.lag.ms "
                f"({values['max.compaction.lag.ms']})")
        return cls._from_values(values, overrides, bounds)

    @classmethod
    def default(cls) -> "LogConfig":
        """Kafka's defaults with no broker settings and no overrides."""
        return cls.from_props({}, {})

    @classmethod
    def _from_values(cls, values: dict[str, Any], overrides: Mapping[str, Any],
                     bounds: tuple[int, int] | None = None) -> "LogConfig":
        kwargs: dict[str, Any] = {}
        names = {f.name for f in dataclasses.fields(cls)}
        for name, v in values.items():
            py = name.replace(".", "_")
            if py in names:
                kwargs[py] = tuple(v) if isinstance(v, list) else v
        kwargs["timestamp_before_max_ms"], kwargs["timestamp_after_max_ms"] = bounds or (
            values["message.timestamp.before.max.ms"], values["message.timestamp.after.max.ms"])
        kwargs["schema_id_validation"] = bool(values["confluent.key.schema.validation"]
                                              or values["confluent.value.schema.validation"])
        kwargs["overrides"] = MappingProxyType({k: str(v) for k, v in overrides.items()})
        kwargs["values"] = MappingProxyType(dict(values))
        return cls(**kwargs)

    def with_overrides(self, broker_defaults: Mapping[str, Any] | None,
                       overrides: Mapping[str, Any]) -> "LogConfig":
        """A new config for changed overrides (AlterConfigs / IncrementalAlterConfigs)."""
        return LogConfig.from_props(broker_defaults, overrides)


# --------------------------------------------------------------------------- describe

class ConfigSynonymEntry(NamedTuple):
    name: str
    value: str | None
    source: str


class DescribedConfig(NamedTuple):
    """One DescribeConfigs entry for a topic resource."""

    name: str
    value: str | None
    source: str
    is_default: bool
    read_only: bool
    sensitive: bool
    synonyms: list[ConfigSynonymEntry]
    type: str
    documentation: str


def _broker_default_string(d: BrokerConfigDef) -> str | None:
    return value_to_string(d.type, d.default)


def describe(broker_defaults: Mapping[str, Any] | None,
             overrides: Mapping[str, Any] | None,
             *,
             dynamic_default_broker: Mapping[str, Any] | None = None,
             dynamic_broker: Mapping[str, Any] | None = None,
             names: Iterable[str] | None = None) -> list[DescribedConfig]:
    """DescribeConfigs for a topic, as Kafka 4.4's ``ConfigHelper.createTopicConfigEntry``.

    Returns one entry per topic config (all of :data:`TOPIC_CONFIGS`, sorted by name, or
    just ``names`` when the request lists keys; unknown names are skipped). ``value`` is
    the resolved value; ``synonyms`` are: the topic override (TOPIC_CONFIG) if any, then for
    each broker synonym key in precedence order the values found in dynamic per-broker,
    then dynamic cluster-default, then static broker configs, then Kafka's default for that
    broker key (DEFAULT_CONFIG) - grouped by source in that order, as Kafka does. ``source``
    is the first synonym's source (DEFAULT_CONFIG when there is none); ``is_default`` is
    ``source == DEFAULT_CONFIG`` (DescribeConfigs v0's IsDefault).

    ``broker_defaults`` are the static broker properties (server.properties).
    """
    overrides = dict(overrides or {})
    static = dict(broker_defaults or {})
    dyn_default = dict(dynamic_default_broker or {})
    dyn_broker = dict(dynamic_broker or {})
    cfg = LogConfig.from_props(_broker_source_maps(static, dyn_default, dyn_broker), overrides)

    wanted = list(TOPIC_CONFIGS) if names is None else [n for n in names if n in TOPIC_CONFIGS]
    out: list[DescribedConfig] = []
    for name in wanted:
        d = TOPIC_CONFIGS[name]
        value_str = None if d.sensitive else value_to_string(d.type, cfg.values[name])
        synonyms: list[ConfigSynonymEntry] = []
        if name in overrides:
            synonyms.append(ConfigSynonymEntry(name, value_str, SOURCE_TOPIC))
        syn_names = [s.name for s in d.broker_synonyms]
        for source, layer in ((SOURCE_DYNAMIC_BROKER, dyn_broker),
                              (SOURCE_DYNAMIC_DEFAULT_BROKER, dyn_default),
                              (SOURCE_STATIC_BROKER, static)):
            for s in syn_names:
                if s in layer and layer[s] is not None:
                    synonyms.append(ConfigSynonymEntry(
                        s, None if d.sensitive else str(layer[s]), source))
        for s in syn_names:
            bd = BROKER_LOG_DEFAULTS.get(s)
            if bd is not None and bd.default is not None:
                synonyms.append(ConfigSynonymEntry(
                    s, None if d.sensitive else _broker_default_string(bd), SOURCE_DEFAULT))
        source = synonyms[0].source if synonyms else SOURCE_DEFAULT
        out.append(DescribedConfig(
            name=name, value=value_str, source=source, is_default=source == SOURCE_DEFAULT,
            read_only=d.read_only, sensitive=d.sensitive, synonyms=synonyms, type=d.type,
            documentation=d.documentation))
    for name in DEPRECATED_TOPIC_CONFIGS:   # shown when set on the topic, as Kafka 3.9 showed it
        if name in overrides and (names is None or name in names):
            v = str(overrides[name])
            out.append(DescribedConfig(
                name=name, value=v, source=SOURCE_TOPIC, is_default=False, read_only=False, sensitive=False,
                synonyms=[ConfigSynonymEntry(name, v, SOURCE_TOPIC)], type="long",
                documentation=deprecation_warning(name)))
            out.sort(key=lambda c: c.name)
    return out


__all__ = [
    "LONG_MAX", "INT_MAX", "ConfigDef", "BrokerConfigDef", "BrokerSynonym", "TOPIC_CONFIGS",
    "BROKER_LOG_DEFAULTS", "REMOVED_TOPIC_CONFIGS", "REMOVED_BROKER_LOG_KEYS", "drop_removed", "LogConfig",
    "DEPRECATED_TOPIC_CONFIGS", "DEPRECATED_BROKER_LOG_KEYS", "deprecation_warning", "timestamp_bounds",
    "parse_value", "parse_broker_value",
    "resolve_broker_log_defaults", "describe", "DescribedConfig", "ConfigSynonymEntry",
    "value_to_string", "java_double_str", "CONFIG_SOURCE_IDS", "CONFIG_TYPE_IDS",
    "Range", "OneOf", "SOURCE_TOPIC", "SOURCE_DYNAMIC_BROKER", "SOURCE_DYNAMIC_DEFAULT_BROKER",
    "SOURCE_STATIC_BROKER", "SOURCE_DEFAULT",
]
