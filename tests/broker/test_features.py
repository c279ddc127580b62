"""broker.features: Kafka 4.4's UpdateFeatures decision as a pure function (against a
brute-force model of the per-feature rules), Java's HashMap order that picks which refusal is
reported, and the durable store (restart, a torn write, a file that cannot be read)."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from broker.features import (DEFAULTS, INVALID_UPDATE_VERSION, METADATA_CHANGED, SUPPORTED, FeatureStore, Update,
                             decide_update, metadata_changed)
from broker.java_hash import java_hash_order

NAMES = sorted(SUPPORTED) + ["nope.version", "test.feature.version"]


# What Java 8+ `new HashMap<String, Short>()` iterates, recorded from a JVM (tests run without one)
@pytest.mark.parametrize("names, java", [
    (["share.version", "group.version"], ["group.version", "share.version"]),
    (["eligible.leader.replicas.version", "group.version", "streams.version"],
     ["group.version", "streams.version", "eligible.leader.replicas.version"]),
    (["transaction.version", "metadata.version", "kraft.version", "nope.version", "share.version", "streams.version",
      "group.version", "eligible.leader.replicas.version"],
     ["group.version", "kraft.version", "metadata.version", "share.version", "streams.version", "transaction.version",
      "nope.version", "eligible.leader.replicas.version"]),
])
def test_java_hashmap_order(names, java):
    assert java_hash_order(names) == java


def test_kafka_44_answers():
    """A few answers recorded from Kafka 4.4 (the differential suite compares every one)."""
    d = decide_update(DEFAULTS, [Update("transaction.version", 1, 1)], 1)
    assert d == (INVALID_UPDATE_VERSION, "Invalid update version 1 for feature transaction.version. Can't downgrade "
                 "the version of this feature without setting the upgrade type to either safe or unsafe downgrade.",
                 DEFAULTS)
    assert decide_update(DEFAULTS, [Update("nope.version", 1, 1)], 1).message == (
        "Invalid update version 1 for feature nope.version. Local controller 1 does not support this feature.")
    assert decide_update(DEFAULTS, [Update("metadata.version", 30, 3)], 1).message == (
        "Unsupported metadata.version downgrade from 33 to 30. Unsafe metadata downgrade is not supported in this version.")
    ok = decide_update(DEFAULTS, [Update("group.version", 0, 2), Update("kraft.version", 1, 1)], 1)
    assert ok.error_code == 0 and "group.version" not in ok.levels and ok.levels["kraft.version"] == 1


def _alone_ok(u: Update, levels: dict) -> bool:
    """Brute-force model of one feature's rules (no production feature depends on another
    changeable one, and metadata.version only moves up here)."""
    name, level, kind = u
    have = levels.get(name, 0)
    lo, hi = SUPPORTED.get(name, (0, 0))
    if kind not in (1, 2, 3) or level < 0 or not lo <= level <= hi:
        return False
    if (level < have and kind == 1) or (level > have and kind != 1):
        return False
    if name == "metadata.version" and level < have:
        return not any(v in METADATA_CHANGED for v in range(level + 1, have + 1))
    if name == "kraft.version" and kind != 1 and level != have:
        return False
    return True


updates = st.lists(st.builds(Update, st.sampled_from(NAMES), st.integers(-2, 40), st.integers(0, 4)), max_size=4)
finalized = st.fixed_dictionaries({}, optional={n: st.integers(SUPPORTED[n][0], SUPPORTED[n][1]) for n in SUPPORTED})


@settings(max_examples=400, deadline=None)
@given(finalized, updates)
def test_decision_matches_the_model(levels, ups):
    levels = {**levels, "metadata.version": levels.get("metadata.version", 33)}
    d = decide_update(levels, ups, 1)
    last = {u.feature: u for u in ups}
    model_ok = all(_alone_ok(u, levels) for u in last.values())
    if any(u.feature == "eligible.leader.replicas.version" and u.level == 1 for u in last.values()):
        mv = last["metadata.version"].level if "metadata.version" in last else levels["metadata.version"]
        model_ok = model_ok and mv >= 23
    assert (d.error_code == 0) == model_ok, (levels, ups, d)
    if d.error_code:
        assert d.levels == levels and d.message
    else:
        for name, u in last.items():
            assert d.levels.get(name, 0) == u.level
        assert all(d.levels.get(n) == v for n, v in levels.items() if n not in last and v)
        assert 0 not in [v for n, v in d.levels.items() if n != "metadata.version"]


def test_metadata_changed():
    assert metadata_changed(33, 32) and metadata_changed(24, 22) and metadata_changed(22, 24)
    assert not metadata_changed(22, 20) and not metadata_changed(29, 27) and not metadata_changed(33, 33)


def test_store_defaults_restart_and_epoch(tmp_path):
    path = tmp_path / ".hourglass" / "features.json"
    s = FeatureStore(path)
    assert s.levels == DEFAULTS and s.epoch == 0 and path.exists()
    s.update([Update("transaction.version", 1, 2)], True, 1)      # validate only: nothing changes
    assert s.level("transaction.version") == 2 and s.epoch == 0
    s.update([Update("transaction.version", 1, 2), Update("share.version", 0, 3)], False, 1)
    again = FeatureStore(path)
    assert again.level("transaction.version") == 1 and again.level("share.version") == 0 and again.epoch == 1
    assert "share.version" not in json.loads(path.read_text())["levels"]


def test_store_ignores_a_torn_temp_file_and_refuses_an_unreadable_one(tmp_path):
    path = tmp_path / "features.json"
    FeatureStore(path).update([Update("group.version", 0, 2)], False, 1)
    (tmp_path / "features.json.tmp").write_text('{"epoch": 9, "lev')  # a crash before the rename
    assert FeatureStore(path).level("group.version") == 0
    path.write_text("{not json")
    with pytest.raises(RuntimeError, match="cannot read the finalized feature levels"):
        FeatureStore(path)
    path.write_text(json.dumps({"epoch": 1, "levels": {"transaction.version": 7}}))
    with pytest.raises(RuntimeError, match="does not support"):
        FeatureStore(path)
