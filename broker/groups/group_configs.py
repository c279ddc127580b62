"""Per-group configs (KIP-848/KIP-932/KIP-1071 dynamic group configs; Kafka 4.4's ``GroupConfig``),
read and changed with DescribeConfigs / IncrementalAlterConfigs on resource type GROUP (32).

``KEYS`` lists every key of Kafka 4.4's ``GroupConfig.CONFIG_DEF`` in its order: its type, its
broker-level synonym (whose value is the group's default), the floor of its definition and the
broker bounds ``GroupConfig.validate`` checks, each refusal INVALID_CONFIG with Kafka's message:

1. an unknown name ("Unknown group config name: K");
2. duplicate ``streams.rack.aware.assignment.tags``;
3. parsing every key as its type (ConfigDef: "Invalid value V for configuration K: ...");
4. the broker bounds (``group.{consumer,share,streams}.{min,max}.*``), the registered Streams
   assignors, each session timeout above its heartbeat interval, no ``__`` DLQ topic.

Then Hourglass's own rule (a setting a user wrote down never silently stops working): a key
whose feature Hourglass does not have (``UNSERVED``) takes only its default value; any other
value is refused with INVALID_CONFIG naming the key and why.

Where Hourglass does not accept the broker key (the assignment intervals' bounds, the Streams
session/heartbeat bounds, ...), its Kafka 4.4 default is the bound, as on a Kafka broker that
leaves it unset.

Stored durably as JSON (``group-configs.json`` in the first log dir, written atomically) --
Kafka keeps them as ConfigRecords in its metadata log; one node has no metadata log, so its
cluster metadata files hold them. Groups need not exist to carry configs.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

CONFIG_FILE = "group-configs.json"

# Kafka 4.4's defaults of the broker keys Hourglass's BrokerConfig may not define
# (GroupCoordinatorConfig / ShareGroupConfig constants)
KAFKA_BROKER_DEFAULTS: dict[str, Any] = {
    "group.consumer.session.timeout.ms": 45000, "group.consumer.min.session.timeout.ms": 45000,
    "group.consumer.max.session.timeout.ms": 60000, "group.consumer.heartbeat.interval.ms": 5000,
    "group.consumer.min.heartbeat.interval.ms": 5000, "group.consumer.max.heartbeat.interval.ms": 15000,
    "group.consumer.assignment.interval.ms": 1000, "group.consumer.min.assignment.interval.ms": 0,
    "group.consumer.max.assignment.interval.ms": 15000, "group.consumer.assignor.offload.enable": True,
    "group.share.session.timeout.ms": 45000, "group.share.min.session.timeout.ms": 45000,
    "group.share.max.session.timeout.ms": 60000, "group.share.heartbeat.interval.ms": 5000,
    "group.share.min.heartbeat.interval.ms": 5000, "group.share.max.heartbeat.interval.ms": 15000,
    "group.share.assignment.interval.ms": 1000, "group.share.min.assignment.interval.ms": 0,
    "group.share.max.assignment.interval.ms": 15000, "group.share.assignor.offload.enable": True,
    "group.share.record.lock.duration.ms": 30000, "group.share.min.record.lock.duration.ms": 15000,
    "group.share.max.record.lock.duration.ms": 60000, "group.share.delivery.count.limit": 5,
    "group.share.min.delivery.count.limit": 2, "group.share.max.delivery.count.limit": 10,
    "group.share.partition.max.record.locks": 2000, "group.share.min.partition.max.record.locks": 100,
    "group.share.max.partition.max.record.locks": 4000,
    "group.streams.session.timeout.ms": 45000, "group.streams.min.session.timeout.ms": 45000,
    "group.streams.max.session.timeout.ms": 60000, "group.streams.heartbeat.interval.ms": 5000,
    "group.streams.min.heartbeat.interval.ms": 5000, "group.streams.max.heartbeat.interval.ms": 15000,
    "group.streams.num.standby.replicas": 0, "group.streams.max.standby.replicas": 2,
    "group.streams.initial.rebalance.delay.ms": 3000, "group.streams.assignment.interval.ms": 1000,
    "group.streams.min.assignment.interval.ms": 0, "group.streams.max.assignment.interval.ms": 15000,
    "group.streams.assignor.offload.enable": True, "group.streams.task.offset.interval.ms": 60000,
    "group.streams.min.task.offset.interval.ms": 15000, "group.streams.num.warmup.replicas": 2,
    "group.streams.max.warmup.replicas": 20, "group.streams.acceptable.recovery.lag": 10000,
    "group.streams.rack.aware.assignment.tags": [], "group.streams.assignors": ["sticky"],
}


@dataclass(frozen=True)
class GroupKey:
    name: str
    type: str                       # ConfigDef type: int, long, boolean, string, list
    synonym: Optional[str]          # the broker key whose value is the default (None: ``default``)
    default: Any = None             # the default of a key without a broker synonym
    floor: Optional[int] = None     # the definition's atLeast
    low: Optional[str] = None       # broker key of the validate() lower bound
    high: Optional[str] = None      # broker key of the validate() upper bound
    choices: tuple = ()             # a ValidString.in
    doc: str = ""


def _k(name, typ, synonym, **kw) -> GroupKey:
    return GroupKey(name, typ, synonym, **kw)


def _ranged(kind: str, rest: str, floor: int, doc: str) -> GroupKey:
    """An int key bounded by the broker's ``group.<kind>.{min,max}.<rest>``, defaulting to
    ``group.<kind>.<rest>``."""
    return GroupKey(f"{kind}.{rest}", "int", f"group.{kind}.{rest}", floor=floor, low=f"group.{kind}.min.{rest}",
                    high=f"group.{kind}.max.{rest}", doc=doc)


def _offload(kind: str) -> GroupKey:
    return GroupKey(f"{kind}.assignor.offload.enable", "boolean", f"group.{kind}.assignor.offload.enable",
                    doc=f"Whether this {kind} group's assignments are computed off the coordinator's thread.")


KEYS: list[GroupKey] = [
    _ranged("consumer", "session.timeout.ms", 1,
            doc="The timeout after which a silent member of this consumer group is removed."),
    _ranged("consumer", "heartbeat.interval.ms", 1,
            doc="The heartbeat interval given to the members of this consumer group."),
    _ranged("consumer", "assignment.interval.ms", 0,
            doc="The least time between two target assignments of this consumer group."),
    _offload("consumer"),
    _ranged("share", "session.timeout.ms", 1,
            doc="The timeout after which a silent member of this share group is removed."),
    _ranged("share", "heartbeat.interval.ms", 1,
            doc="The heartbeat interval given to the members of this share group."),
    _ranged("share", "record.lock.duration.ms", 1000,
            doc="How long a record delivered to this share group stays acquired by its consumer."),
    _ranged("share", "delivery.count.limit", 2,
            doc="How many times a record is delivered to this share group before it is archived."),
    _ranged("share", "partition.max.record.locks", 100,
            doc="The most records of one share-partition acquired at once."),
    _k("share.auto.offset.reset", "string", None, default="latest",
       doc="Where a new share-partition starts: latest, earliest or by_duration:<ISO-8601 duration>."),
    _k("share.isolation.level", "string", None, default="read_uncommitted",
       choices=("read_committed", "read_uncommitted"),
       doc="Whether this share group delivers only committed transactional records (read_committed)."),
    _k("share.renew.acknowledge.enable", "boolean", None, default=True,
       doc="Whether this share group's consumers may renew the lock of an acquired record."),
    _ranged("share", "assignment.interval.ms", 0,
            doc="The least time between two target assignments of this share group."),
    _offload("share"),
    _ranged("streams", "session.timeout.ms", 1,
            doc="The timeout after which a silent member of this Streams group is removed."),
    _ranged("streams", "heartbeat.interval.ms", 1,
            doc="The heartbeat interval given to the members of this Streams group."),
    _k("streams.num.standby.replicas", "int", "group.streams.num.standby.replicas", floor=0,
       high="group.streams.max.standby.replicas",
       doc="The standby replicas of each stateful task of this Streams group."),
    _k("streams.initial.rebalance.delay.ms", "int", "group.streams.initial.rebalance.delay.ms", floor=0,
       doc="How long a new Streams group waits for more members before its first task assignment."),
    _ranged("streams", "assignment.interval.ms", 0,
            doc="The least time between two target assignments of this Streams group."),
    _offload("streams"),
    _k("streams.task.offset.interval.ms", "int", "group.streams.task.offset.interval.ms", floor=1,
       low="group.streams.min.task.offset.interval.ms",
       doc="How often this Streams group's members report their warmup tasks' changelog offsets."),
    _k("streams.num.warmup.replicas", "int", "group.streams.num.warmup.replicas", floor=0,
       high="group.streams.max.warmup.replicas",
       doc="The most warmup replicas of this Streams group's tasks at once."),
    _k("streams.rack.aware.assignment.tags", "list", "group.streams.rack.aware.assignment.tags",
       doc="Client tag keys over which this Streams group's standby replicas are spread."),
    _k("streams.acceptable.recovery.lag", "long", "group.streams.acceptable.recovery.lag", floor=0,
       doc="The changelog lag under which a client is caught up enough to take a task active."),
    _k("streams.assignor.name", "string", "group.streams.assignors",
       doc="The task assignor of this Streams group, by name, from the broker's group.streams.assignors."),
    _k("errors.deadletterqueue.topic.name", "string", None, default="",
       doc="The dead-letter queue topic of this share group (blank: none)."),
    _k("errors.deadletterqueue.copy.record.enable", "boolean", None, default=False,
       doc="Whether a record sent to the dead-letter queue topic is copied whole, or only its context headers."),
]
BY_NAME = {k.name: k for k in KEYS}
GROUP_CONFIG_KEYS = [k.name for k in KEYS]
# Kafka 4.4 defines these with defineInternal (not listed by DescribeConfigs)
INTERNAL = {"consumer.assignor.offload.enable", "share.assignor.offload.enable", "streams.assignor.offload.enable",
            "streams.task.offset.interval.ms", "streams.num.warmup.replicas", "streams.acceptable.recovery.lag"}

_NO_OFFLOAD = "Hourglass computes assignments on its one event loop; it has no assignor thread to offload to"
_NO_INTERVAL = "Hourglass computes a group's target assignment at each change, with no interval between two"
# keys whose feature Hourglass does not have: only their default value is accepted
UNSERVED: dict[str, str] = {
    "consumer.assignment.interval.ms": _NO_INTERVAL,
    "consumer.assignor.offload.enable": _NO_OFFLOAD,
    "share.assignor.offload.enable": _NO_OFFLOAD,
    "streams.assignment.interval.ms": _NO_INTERVAL,
    "streams.assignor.offload.enable": _NO_OFFLOAD,
    "streams.task.offset.interval.ms": "Hourglass's Streams assignor assigns no warmup tasks, whose offsets "
                                       "this interval paces",
    "streams.num.warmup.replicas": "Hourglass's Streams assignor assigns no warmup tasks",
    "streams.acceptable.recovery.lag": "Hourglass's Streams assignor does not weigh changelog lag",
    "streams.rack.aware.assignment.tags": "Hourglass's Streams assignor does not spread standbys over client tags",
    "errors.deadletterqueue.topic.name": "Hourglass has no share-group dead-letter queues (KIP-1191)",
    "errors.deadletterqueue.copy.record.enable": "Hourglass has no share-group dead-letter queues (KIP-1191)",
}

_DURATION = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$")
_JAVA_INT = re.compile(r"^[+-]?\d+$")
INT_RANGE = (-2**31, 2**31 - 1)
LONG_RANGE = (-2**63, 2**63 - 1)


class GroupConfigError(ValueError):
    pass


def parse_duration_ms(text: str) -> int:
    """Java's ``Duration.parse`` for the forms Kafka accepts in ``by_duration`` (days, hours,
    minutes, seconds; no negative durations)."""
    m = _DURATION.match(text.strip().upper())
    if not m or text.strip().upper() in ("P", "PT"):
        raise GroupConfigError(f"Invalid duration {text}")
    d, h, mi, s = m.groups()
    return int(((int(d or 0) * 24 + int(h or 0)) * 60 + int(mi or 0)) * 60_000 + float(s or 0) * 1000)


def parse_auto_offset_reset(value: str) -> tuple[str, int]:
    """``("earliest"|"latest", 0)`` or ``("by_duration", ms)``."""
    v = value.strip().lower()
    if v in ("earliest", "latest"):
        return v, 0
    if v.startswith("by_duration:"):
        return "by_duration", parse_duration_ms(value.strip()[len("by_duration:"):])
    raise GroupConfigError(_reset_message(value))


def _reset_message(value: str) -> str:
    """Kafka's ``ShareGroupAutoOffsetResetStrategy.Validator`` refusal, inside ConfigDef's."""
    return (f"Invalid value {value} for configuration share.auto.offset.reset: Invalid value `{value}` for "
            f"configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the "
            f"format 'by_duration:<PnDTnHnMn.nS>'.")


def _invalid(key: GroupKey, value, why: str) -> GroupConfigError:
    return GroupConfigError(f"Invalid value {value} for configuration {key.name}: {why}")


def parse_value(key: GroupKey, value: Optional[str]):
    """ConfigDef's parse of one value as ``key``'s type, then its definition's validator."""
    if value is None:
        if key.type == "string" and key.synonym is not None:  # streams.assignor.name: no default
            return None
        raise _invalid(key, value, "Value must be non-null" if key.type != "list" else "Value must be non-null")
    t = value.strip()
    if key.type in ("int", "long"):
        lo, hi = INT_RANGE if key.type == "int" else LONG_RANGE
        if not _JAVA_INT.match(t) or not lo <= int(t) <= hi:
            raise _invalid(key, value, f"Not a number of type {key.type.upper()}")
        n = int(t)
        if key.floor is not None and n < key.floor:
            raise _invalid(key, n, f"Value must be at least {key.floor}")
        return n
    if key.type == "boolean":
        if t.lower() not in ("true", "false"):
            raise _invalid(key, value, "Expected value to be either true or false")
        return t.lower() == "true"
    if key.type == "list":
        return [] if not t else [x.strip() for x in t.split(",")]
    if key.name == "share.auto.offset.reset":
        try:
            parse_auto_offset_reset(t)
        except GroupConfigError:
            raise GroupConfigError(_reset_message(t)) from None
    elif key.choices and t not in key.choices:
        raise _invalid(key, t, f"String must be one of: {', '.join(key.choices)}")
    return t


def java_str(v) -> str:
    """A parsed value as Kafka prints it in DescribeConfigs."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(v)
    return "" if v is None else str(v)


class GroupConfigs:
    def __init__(self, cfg, directory: Optional[Path] = None):
        self.cfg = cfg  # BrokerConfig (for defaults and bounds)
        self.path = Path(directory) / CONFIG_FILE if directory is not None else None
        self.overrides: dict[str, dict[str, str]] = {}
        if self.path is not None and self.path.exists():
            self.overrides = json.loads(self.path.read_text())

    def broker_value(self, name: str):
        """A broker key's value: the broker's config where Hourglass has the key, else Kafka
        4.4's default of it."""
        try:
            v = self.cfg[name]
        except KeyError:
            v = None
        return KAFKA_BROKER_DEFAULTS.get(name) if v is None else v

    def default(self, name: str):
        key = BY_NAME[name]
        if key.synonym is None:
            return key.default
        if name == "streams.assignor.name":  # the first registered assignor
            return self.broker_value(key.synonym)[0]
        return self.broker_value(key.synonym)

    def validate(self, new: dict[str, str]) -> None:
        """Kafka 4.4's ``GroupConfig.validate`` of a group's whole new set of overrides, then
        Hourglass's refusal of a non-default value of a key it does not serve."""
        for name in new:
            if name not in BY_NAME:
                raise GroupConfigError(f"Unknown group config name: {name}")
        tags = new.get("streams.rack.aware.assignment.tags")
        if tags is not None and tags.strip():
            items = re.split(r"\s*,\s*", tags.strip())
            if len(set(items)) != len(items):
                raise GroupConfigError("streams.rack.aware.assignment.tags must not contain duplicate tag keys.")
        parsed = {k.name: parse_value(k, new[k.name]) for k in KEYS if k.name in new}
        for key in KEYS:
            if key.name not in parsed or key.type != "int" or (key.low is None and key.high is None):
                continue
            n = parsed[key.name]
            lo = self.broker_value(key.low) if key.low else None
            hi = self.broker_value(key.high) if key.high else None
            if lo is not None and hi is not None:
                if not lo <= n <= hi:
                    raise GroupConfigError(f"{key.name} must be in the range {lo} to {hi} inclusive.")
            elif hi is not None and n > hi:
                raise GroupConfigError(f"{key.name} must be less than or equal to {hi}")
            elif lo is not None and n < lo:
                raise GroupConfigError(f"{key.name} must be greater than or equal to {lo}")
        if "streams.assignor.name" in new:
            names = list(self.broker_value("group.streams.assignors"))
            if new["streams.assignor.name"] not in names:
                raise GroupConfigError(f"streams.assignor.name '{new['streams.assignor.name']}' is not a registered "
                                       f"task assignor. Registered assignors are: [{', '.join(names)}].")
        for kind in ("consumer", "share", "streams"):
            s, h = f"{kind}.session.timeout.ms", f"{kind}.heartbeat.interval.ms"
            if s in parsed or h in parsed:
                if parsed.get(s, self.default(s)) <= parsed.get(h, self.default(h)):
                    raise GroupConfigError(f"{s} must be greater than {h}")
        dlq = parsed.get("errors.deadletterqueue.topic.name")
        if dlq and dlq.startswith("__"):
            raise GroupConfigError("errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'")
        for name, value in parsed.items():
            if name in UNSERVED and value != self.default(name):
                raise GroupConfigError(f"{name}={java_str(value)} is not served by Hourglass: {UNSERVED[name]}; "
                                       f"only its default ({java_str(self.default(name))}) is accepted")

    def set(self, group_id: str, new: dict[str, str], *, validate_only: bool = False) -> None:
        """Replace the overrides of ``group_id`` by ``new`` (validated as a whole)."""
        self.validate(new)
        if validate_only:
            return
        if new:
            self.overrides[group_id] = dict(new)
        else:
            self.overrides.pop(group_id, None)
        self._save()

    def delete_group(self, group_id: str) -> None:
        if self.overrides.pop(group_id, None) is not None:
            self._save()

    def _save(self) -> None:
        if self.path is None:
            return
        from broker.cluster import atomic_write
        atomic_write(self.path, json.dumps(self.overrides, sort_keys=True).encode())

    def get(self, group_id: str, name: str):
        """The effective value: the group's override, else the default (its broker key's value)."""
        v = self.overrides.get(group_id, {}).get(name)
        return self.default(name) if v is None else parse_value(BY_NAME[name], v)

    def entries(self, group_id: str, names=None) -> list[tuple[str, str, bool, str, Optional[str], str]]:
        """[(name, value, is override, type, broker synonym, doc)] for DescribeConfigs: every
        key but Kafka's internal ones the group leaves at their default, in Kafka's (sorted) order."""
        over = self.overrides.get(group_id, {})
        out = []
        for name in sorted(GROUP_CONFIG_KEYS):
            # Kafka lists an internal key only where the group overrides it (even when named)
            if (name in INTERNAL and name not in over) or (names is not None and name not in names):
                continue
            key = BY_NAME[name]
            out.append((name, java_str(self.get(group_id, name)), name in over, key.type, key.synonym, key.doc))
        return out


def group_config_or(broker, group_id: str, name: str, default):
    """A coordinator's read of a group config: the group's override when the broker keeps
    group configs, else ``default`` (the coordinator's broker-level value)."""
    gc = getattr(broker, "group_configs", None)
    if gc is None or name not in gc.overrides.get(group_id, {}):
        return default
    return gc.get(group_id, name)
