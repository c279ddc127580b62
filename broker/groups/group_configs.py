"""Per-group configs (KIP-848/KIP-932 dynamic group configs; Kafka 4.2's ``GroupConfig``),
read and changed with DescribeConfigs / IncrementalAlterConfigs on resource type GROUP (32).

Keys, their broker defaults and bounds (INVALID_CONFIG outside them, as Kafka's
``GroupConfig.validate``):

- ``consumer.session.timeout.ms`` / ``consumer.heartbeat.interval.ms``: within
  ``group.consumer.{min,max}.session.timeout.ms`` / ``...heartbeat.interval.ms``;
- ``share.session.timeout.ms`` / ``share.heartbeat.interval.ms``: within the
  ``group.share.*`` bounds; ``share.record.lock.duration.ms`` within
  ``group.share.{min,max}.record.lock.duration.ms``; ``share.assignment.interval.ms`` (Kafka
  4.4: least time between two target assignments) within
  ``group.share.{min,max}.assignment.interval.ms``;
- ``share.delivery.count.limit`` (2-10) and ``share.partition.max.record.locks`` (100-10000):
  Kafka 4.2 per-group overrides of the ``group.share.*`` keys;
- ``share.auto.offset.reset``: ``latest`` (default), ``earliest``, or
  ``by_duration:<ISO-8601 duration>`` (a non-negative ``PnDTnHnMnS``);
- ``share.isolation.level``: ``read_uncommitted`` (default) or ``read_committed``.

Stored durably as JSON (``group-configs.json`` in the first log dir, written atomically) --
Kafka keeps them as ConfigRecords in its metadata log; one node has no metadata log, so its
cluster metadata files hold them. Groups need not exist to carry configs.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Optional

CONFIG_FILE = "group-configs.json"

_INT_KEYS = {
    # key: (broker default key, min key or int, max key or int)
    "consumer.session.timeout.ms": ("group.consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms",
                                    "group.consumer.max.session.timeout.ms"),
    "consumer.heartbeat.interval.ms": ("group.consumer.heartbeat.interval.ms",
                                       "group.consumer.min.heartbeat.interval.ms",
                                       "group.consumer.max.heartbeat.interval.ms"),
    "share.session.timeout.ms": ("group.share.session.timeout.ms", "group.share.min.session.timeout.ms",
                                 "group.share.max.session.timeout.ms"),
    "share.heartbeat.interval.ms": ("group.share.heartbeat.interval.ms", "group.share.min.heartbeat.interval.ms",
                                    "group.share.max.heartbeat.interval.ms"),
    "share.record.lock.duration.ms": ("group.share.record.lock.duration.ms",
                                      "group.share.min.record.lock.duration.ms",
                                      "group.share.max.record.lock.duration.ms"),
    "share.assignment.interval.ms": ("group.share.assignment.interval.ms", "group.share.min.assignment.interval.ms",
                                     "group.share.max.assignment.interval.ms"),
    "share.delivery.count.limit": ("group.share.delivery.count.limit", 2, 10),
    "share.partition.max.record.locks": ("group.share.partition.max.record.locks", 100, 10000),
}
_STR_KEYS = {"share.auto.offset.reset": "latest", "share.isolation.level": "read_uncommitted"}
GROUP_CONFIG_KEYS = sorted(list(_INT_KEYS) + list(_STR_KEYS))

_DURATION = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$")


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
    raise GroupConfigError(f"Invalid value {value} for configuration share.auto.offset.reset: "
                           f"String must be one of: latest, earliest, by_duration:<ISO-8601 duration>")


class GroupConfigs:
    def __init__(self, cfg, directory: Optional[Path] = None):
        self.cfg = cfg  # BrokerConfig (for defaults and bounds)
        self.path = Path(directory) / CONFIG_FILE if directory is not None else None
        self.overrides: dict[str, dict[str, str]] = {}
        if self.path is not None and self.path.exists():
            self.overrides = json.loads(self.path.read_text())

    def _bound(self, b):
        return b if isinstance(b, int) else self.cfg[b]

    def validate(self, new: dict[str, str]) -> None:
        for key, value in new.items():
            if key in _INT_KEYS:
                _d, lo, hi = _INT_KEYS[key]
                try:
                    n = int(value)
                except (TypeError, ValueError):
                    raise GroupConfigError(f"Invalid value {value} for configuration {key}: "
                                           f"Not a number of type INT") from None
                lo, hi = self._bound(lo), self._bound(hi)
                if not lo <= n <= hi:
                    raise GroupConfigError(f"{key} must be greater than or equal to {lo} and less than or "
                                           f"equal to {hi}")
            elif key == "share.auto.offset.reset":
                parse_auto_offset_reset(value)
            elif key == "share.isolation.level":
                if value.lower() not in ("read_uncommitted", "read_committed"):
                    raise GroupConfigError(f"Invalid value {value} for configuration share.isolation.level: "
                                           f"String must be one of: read_committed, read_uncommitted")
            else:
                raise GroupConfigError(f"Unknown group config name: {key}")

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

    def get(self, group_id: str, key: str):
        """The effective value: the group's override, else the broker default; ints as int."""
        v = self.overrides.get(group_id, {}).get(key)
        if key in _INT_KEYS:
            return int(v) if v is not None else self.cfg[_INT_KEYS[key][0]]
        return v if v is not None else _STR_KEYS[key]

    def entries(self, group_id: str, names=None) -> list[tuple[str, str, bool, str]]:
        """[(name, value, is override, type)] for DescribeConfigs."""
        over = self.overrides.get(group_id, {})
        out = []
        for key in GROUP_CONFIG_KEYS:
            if names is not None and key not in names:
                continue
            out.append((key, str(self.get(group_id, key)), key in over, "int" if key in _INT_KEYS else "string"))
        return out
