"""Finalized features (KIP-584): the levels a single-node Kafka 4.4 finalizes, their updates
(UpdateFeatures, ``kafka-features upgrade/downgrade``) and their durable store.

Kafka keeps these in its KRaft metadata log (FeatureLevelRecord); Hourglass, its own
controller without a metadata log, keeps them in ``<first log dir>/.hourglass/features.json``,
rewritten whole and atomically (temp file, fsync, rename, directory fsync) at each change, so
a crash leaves the old or the new levels and never a mix. A missing file is a new data dir:
Kafka 4.4's defaults at its latest production metadata.version (4.4-IV2, level 33). A file that
cannot be read stops the start-up with the reason (levels are never silently reset).

The decision (``decide_update``) is a pure function of the finalized levels and the request,
following Kafka 4.4's FeatureControlManager check for check and message for message:
- an upgrade type other than 1 (upgrade), 2 (safe downgrade), 3 (unsafe downgrade);
- a level below 0; a level outside what this node supports ("Local controller N ...");
- a lower level with the upgrade type "upgrade"; a higher level with a downgrade type;
- metadata.version: a downgrade across a version that changed metadata is refused (safe:
  "might delete metadata information"; unsafe: "not supported in this version");
- kraft.version: never downgraded;
- the others: each level's dependencies (eligible.leader.replicas.version 1 needs
  metadata.version 23), checked against the levels the whole request proposes.
The first failing feature, in the order Kafka's ``HashMap`` visits the names, fails the whole
request with INVALID_UPDATE_VERSION; nothing is applied. ``validate_only`` decides, applies
nothing. A level set to 0 is removed from the finalized set (Kafka lists no level-0 feature).

The epoch (``finalized_features_epoch`` in ApiVersions) counts the changes made here; Kafka's is
its metadata log offset, which also moves with unrelated records, so only "grows on every
change" is comparable.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Mapping, NamedTuple

from broker.cluster import atomic_write
from broker.java_hash import java_hash_order

log = logging.getLogger(__name__)

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
TRANSACTION_VERSION = "transaction.version"
GROUP_VERSION = "group.version"
SHARE_VERSION = "share.version"
STREAMS_VERSION = "streams.version"
ELR_VERSION = "eligible.leader.replicas.version"


# What Kafka 4.4 supports (Feature.PRODUCTION_FEATURES and MetadataVersion 3.3-IV3 .. 4.4-IV2).
SUPPORTED: dict[str, tuple[int, int]] = {
    METADATA_VERSION: (7, 33),
    KRAFT_VERSION: (0, 1),
    TRANSACTION_VERSION: (0, 2),
    GROUP_VERSION: (0, 1),
    ELR_VERSION: (0, 1),
    SHARE_VERSION: (0, 2),
    STREAMS_VERSION: (0, 1),
}

# A new data dir: Kafka 4.4's defaults at metadata.version 33 (kraft.version stays 0, the
# level ``kafka-storage format`` gives a static single voter).
DEFAULTS: dict[str, int] = {
    METADATA_VERSION: 33,
    TRANSACTION_VERSION: 2,
    GROUP_VERSION: 1,
    ELR_VERSION: 1,
    SHARE_VERSION: 2,
    STREAMS_VERSION: 1,
}

# FeatureVersion.dependencies(), by (feature, level)
DEPENDENCIES: dict[tuple[str, int], dict[str, int]] = {
    (ELR_VERSION, 1): {METADATA_VERSION: 23},
}

# metadata.version levels whose MetadataVersion.didMetadataChange() is true (Kafka 4.4)
METADATA_CHANGED = frozenset({7, 8, 11, 13, 14, 15, 17, 23, 30, 32, 33})
# metadata.version 3.3-IV0 (level 4), the first with FeatureLevelRecord: any feature at 1+ needs it
MV_3_3_IV0 = 4
MV_NAMES = {7: "3.3-IV3", 8: "3.4-IV0", 9: "3.5-IV0", 10: "3.5-IV1", 11: "3.5-IV2", 12: "3.6-IV0", 13: "3.6-IV1",
            14: "3.6-IV2", 15: "3.7-IV0", 16: "3.7-IV1", 17: "3.7-IV2", 18: "3.7-IV3", 19: "3.7-IV4", 20: "3.8-IV0",
            21: "3.9-IV0", 22: "4.0-IV0", 23: "4.0-IV1", 24: "4.0-IV2", 25: "4.0-IV3", 26: "4.1-IV0", 27: "4.1-IV1",
            28: "4.2-IV0", 29: "4.2-IV1", 30: "4.3-IV0", 31: "4.4-IV0", 32: "4.4-IV1", 33: "4.4-IV2"}

UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3
INVALID_UPDATE_VERSION = 95


class Update(NamedTuple):
    feature: str
    level: int
    upgrade_type: int


class Decision(NamedTuple):
    error_code: int            # 0 or INVALID_UPDATE_VERSION
    message: str | None        # the failing feature's reason (Kafka's ApiError message)
    levels: dict[str, int]     # the finalized levels after the request (unchanged on error)


def metadata_changed(a: int, b: int) -> bool:
    """MetadataVersion.checkIfMetadataChanged: some version in (low, high] changed metadata."""
    lo, hi = min(a, b), max(a, b)
    return any(v in METADATA_CHANGED for v in range(lo + 1, hi + 1))


def _range(lo: int, hi: int) -> str:
    return f"{lo}-{hi}"


def _not_supported(feature: str, level: int, node_id: int) -> str | None:
    lo, hi = SUPPORTED.get(feature, (0, 0))
    if lo <= level <= hi:
        return None
    what = f"Local controller {node_id}"
    return f"{what} does not support this feature." if hi == 0 else f"{what} only supports versions {_range(lo, hi)}"


def _invalid(feature: str, level: int, reason: str) -> str:
    return f"Invalid update version {level} for feature {feature}. {reason}"


def _check_one(u: Update, current: Mapping[str, int], proposed: Mapping[str, int], node_id: int) -> str | None:
    """FeatureControlManager.updateFeature: the reason ``u`` is refused, or None."""
    name, level, kind = u
    if kind not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        return _invalid(name, level, "The controller does not support the given upgrade type.")
    have = current.get(name, 0)
    if level < 0:
        return _invalid(name, level, "A feature version cannot be less than 0.")
    reason = _not_supported(name, level, node_id)
    if reason:
        return _invalid(name, level, reason)
    if level < have and kind == UPGRADE:
        return _invalid(name, level, "Can't downgrade the version of this feature without setting the "
                                     "upgrade type to either safe or unsafe downgrade.")
    if level > have and kind != UPGRADE:
        return _invalid(name, level, "Can't downgrade to a newer version.")
    if name == METADATA_VERSION:
        if level < have and metadata_changed(have, level):
            why = ("Unsafe metadata downgrade is not supported in this version." if kind == UNSAFE_DOWNGRADE
                   else "Refusing to perform the requested downgrade because it might delete metadata information.")
            return f"Unsupported metadata.version downgrade from {have} to {level}. {why}"
        return None
    if name == KRAFT_VERSION:
        if kind != UPGRADE and level != have:
            return _invalid(name, level, "Can't downgrade the version of this feature.")
        return None
    mv = proposed.get(METADATA_VERSION)
    if level >= 1 and (mv is None or mv < MV_3_3_IV0):
        return _invalid(name, level, f"{name} could not be set to {level} because it depends on "
                                     f"metadata.version={MV_3_3_IV0} (3.3-IV0)")
    for dep, need in DEPENDENCIES.get((name, level), {}).items():
        if proposed.get(dep, 0) < need:
            return _invalid(name, level, f"{name} could not be set to {level} because it depends on "
                                         f"{dep} level {need}")
    return None


def decide_update(finalized: Mapping[str, int], updates: list[Update], node_id: int) -> Decision:
    """The whole request's verdict (see the module docstring); ``finalized`` is not changed."""
    by_name = {u.feature: u for u in updates}  # a later update of the same feature wins, as in Kafka's map
    proposed = {**finalized, **{u.feature: u.level for u in by_name.values()}}
    for name in java_hash_order(u.feature for u in updates):
        reason = _check_one(by_name[name], finalized, proposed, node_id)
        if reason:
            return Decision(INVALID_UPDATE_VERSION, reason, dict(finalized))
    after = {k: v for k, v in proposed.items() if v != 0 or k == METADATA_VERSION}
    return Decision(0, None, after)


class FeatureStore:
    """The finalized levels of this node and their epoch, durable in ``path``."""

    def __init__(self, path: Path):
        self.path = path
        self.levels: dict[str, int] = dict(DEFAULTS)
        self.epoch = 0
        if path.exists():
            try:
                doc = json.loads(path.read_text())
                levels = {str(k): int(v) for k, v in doc["levels"].items()}
                epoch = int(doc["epoch"])
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
                raise RuntimeError(f"cannot read the finalized feature levels in {path}: {e}") from e
            for name, level in levels.items():
                if _not_supported(name, level, 0):
                    raise RuntimeError(f"{path} finalizes {name}={level}, which this broker does not support "
                                       f"(supported: {SUPPORTED.get(name, 'none')})")
            self.levels, self.epoch = levels, epoch
        else:
            self._save()

    def level(self, name: str) -> int:
        return self.levels.get(name, 0)

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, json.dumps({"epoch": self.epoch, "levels": self.levels}, indent=1,
                                           sort_keys=True).encode())

    def update(self, updates: list[Update], validate_only: bool, node_id: int) -> Decision:
        d = decide_update(self.levels, updates, node_id)
        if d.error_code:
            log.warning("UpdateFeatures refused: %s", d.message)
        elif not validate_only and updates:
            before = self.levels
            self.levels, self.epoch = d.levels, self.epoch + 1
            self._save()
            for name in sorted(set(before) | set(self.levels)):
                if before.get(name, 0) != self.levels.get(name, 0):
                    log.warning("finalized feature %s changed from level %d to %d (epoch %d)", name,
                                before.get(name, 0), self.levels.get(name, 0), self.epoch)
        return d


def enabled(broker, feature: str) -> bool:
    """Is ``feature`` (group.version, share.version, streams.version) finalized at 1 or more?
    Kafka 4.4 serves each group type's heartbeat and describe only then (UNSUPPORTED_VERSION
    otherwise, while ApiVersions still lists them)."""
    return broker.features is None or broker.features.level(feature) >= 1
