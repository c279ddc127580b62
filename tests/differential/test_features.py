"""Finalized features: ApiVersions' supported and finalized features, UpdateFeatures at every
version (validate-only, upgrades, safe and unsafe downgrades, unknown features, levels out of
range, metadata.version and kraft.version rules, Kafka's HashMap order when several fail), and
what a level changes: at group.version / share.version / streams.version 0 the group types'
heartbeats and describes answer UNSUPPORTED_VERSION while ApiVersions still lists them.

A pair of its own: the levels these tests change would change the shared pair's answers."""
from __future__ import annotations

import uuid

import pytest

from tests.differential.conftest import start_pair, stop_pair
from tests.differential.framework import req
from tests.differential.test_groups_txn import _cgh
from tests.differential.test_streams_groups import _hb

pytestmark = pytest.mark.xdist_group("differential")

UPGRADE, SAFE, UNSAFE = 1, 2, 3


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    p = start_pair(tmp_path_factory, name="features-pair")
    yield p
    stop_pair(p)


def _uf(v, updates, validate_only=False):
    return req(57, v, timeout_ms=60000, validate_only=validate_only and v >= 1,
               feature_updates=[dict(feature=f, max_version_level=lvl, upgrade_type=t if v >= 1 else UPGRADE,
                                     allow_downgrade=(t != UPGRADE and v == 0)) for f, lvl, t in updates])


def _api_versions(ex, scenario):
    for v in ex.versions(18, lo=3):
        k, h = ex.send(18, v, req(18, v, client_software_name="differential", client_software_version="1.0"),
                       compare_=False)
        for r in (k, h):  # the key ranges are compared as a map in test_api_versions
            r.api_keys = []
        ex.compare(18, v, k, h, scenario=f"{scenario}: features")


def _set(ex, updates):
    """A change both sides must accept (setup, still compared)."""
    k, h = ex.send(57, 1, _uf(1, updates), scenario=f"set {updates}")
    assert k.error_code == 0 and h.error_code == 0, (k, h)


def test_new_data_dir_features(ex):
    _api_versions(ex, "a new data dir")


def test_update_features_refusals(ex):
    """Each request refused (or validated only) alike at every version; nothing changes."""
    scenarios = [
        ("a downgrade typed upgrade", [("transaction.version", 1, UPGRADE)], False),
        ("validate-only safe downgrade", [("transaction.version", 1, SAFE)], True),
        ("validate-only unsafe downgrade", [("share.version", 0, UNSAFE)], True),
        ("an unknown feature", [("nope.version", 1, UPGRADE)], False),
        ("a non-production feature", [("test.feature.version", 1, UPGRADE)], True),
        ("above the supported range", [("transaction.version", 5, UPGRADE)], False),
        ("below 0", [("transaction.version", -1, SAFE)], False),
        ("a downgrade to a newer level", [("transaction.version", 3, SAFE)], False),
        ("group.version 2", [("group.version", 2, UPGRADE)], False),
        ("metadata.version safe downgrade", [("metadata.version", 30, SAFE)], False),
        ("metadata.version unsafe downgrade", [("metadata.version", 22, UNSAFE)], False),
        ("metadata.version below the minimum", [("metadata.version", 3, SAFE)], False),
        ("metadata.version above the latest", [("metadata.version", 40, UPGRADE)], False),
        ("metadata.version at its level", [("metadata.version", 33, UPGRADE)], True),
        ("kraft.version downgrade", [("kraft.version", 0, SAFE)], True),
        ("upgrade type 0", [("transaction.version", 1, 0)], False),
        ("upgrade type 4", [("transaction.version", 1, 4)], False),
        ("two features, both refused", [("share.version", 7, UPGRADE), ("group.version", 0, UPGRADE)], False),
        ("two features, both refused (other order)", [("group.version", 0, UPGRADE), ("share.version", 7, UPGRADE)],
         False),
        ("three features, the last refused", [("eligible.leader.replicas.version", 0, SAFE),
                                              ("group.version", 0, SAFE), ("streams.version", 9, SAFE)], False),
        ("validate-only, several", [("eligible.leader.replicas.version", 0, SAFE), ("group.version", 0, SAFE)], True),
        ("the same level", [("transaction.version", 2, UPGRADE)], False),
        ("the same level, downgrade type", [("transaction.version", 2, SAFE)], False),
        ("no update", [], False),
    ]
    for v in ex.versions(57):
        for scenario, updates, validate_only in scenarios:
            ex.send(57, v, _uf(v, updates, validate_only), scenario=scenario)
    _api_versions(ex, "after refusals and validations")


def test_update_features_changes(ex):
    """Downgrades and upgrades applied alike, each seen in ApiVersions."""
    for v in ex.versions(57, lo=1):
        ex.send(57, v, _uf(v, [("transaction.version", 1, SAFE)]), scenario="transaction.version to 1")
        _api_versions(ex, f"v{v}: transaction.version 1")
        ex.send(57, v, _uf(v, [("transaction.version", 0, UNSAFE), ("eligible.leader.replicas.version", 0, SAFE)]),
                scenario="transaction.version to 0, ELR off")
        _api_versions(ex, f"v{v}: transaction.version 0, ELR 0")
        ex.send(57, v, _uf(v, [("transaction.version", 2, UPGRADE), ("eligible.leader.replicas.version", 1, UPGRADE)]),
                scenario="back to the defaults")
        _api_versions(ex, f"v{v}: defaults again")
    # v0 upgrades only
    _set(ex, [("transaction.version", 1, SAFE)])
    ex.send(57, 0, _uf(0, [("transaction.version", 2, UPGRADE)]), scenario="v0 upgrade")
    _api_versions(ex, "after a v0 upgrade")


def _group_answers(ex, tag):
    mid = uuid.uuid4().hex[:22]
    g = f"g-{ex.topic_name(tag)}"
    for v in ex.versions(68):
        ex.send(68, v, _cgh(g, v, mid, 0), scenario=f"{tag}: ConsumerGroupHeartbeat join")
    for v in ex.versions(69):
        ex.send(69, v, req(69, v, group_ids=[g], include_authorized_operations=False),
                scenario=f"{tag}: ConsumerGroupDescribe")
    for v in ex.versions(76):
        ex.send(76, v, req(76, v, group_id=g + "s", member_id=mid, member_epoch=0, rack_id=None,
                           subscribed_topic_names=["t"]), scenario=f"{tag}: ShareGroupHeartbeat join")
    for v in ex.versions(77):
        ex.send(77, v, req(77, v, group_ids=[g + "s"], include_authorized_operations=False),
                scenario=f"{tag}: ShareGroupDescribe")
    for v in ex.versions(88):
        ex.send(88, v, _hb(g + "st", v, mid, 0, topology={"epoch": 0, "subtopologies": []}, tasks=[]),
                scenario=f"{tag}: StreamsGroupHeartbeat join")
    for v in ex.versions(89):
        ex.send(89, v, req(89, v, group_ids=[g + "st"], include_authorized_operations=False),
                scenario=f"{tag}: StreamsGroupDescribe")


def test_group_types_off_at_level_0(ex, request):
    _set(ex, [("group.version", 0, SAFE), ("share.version", 0, SAFE), ("streams.version", 0, SAFE)])
    try:
        _api_versions(ex, "group, share and streams versions 0")
        k, h = ex.pair.kafka_ranges, ex.pair.hourglass_ranges
        assert all(key in k and key in h for key in (68, 69, 76, 77, 88, 89))
        _group_answers(ex, "level 0")
    finally:
        _set(ex, [("group.version", 1, UPGRADE), ("share.version", 2, UPGRADE), ("streams.version", 1, UPGRADE)])
    _api_versions(ex, "group, share and streams versions back")


def test_kraft_version_upgrade(ex):
    """kraft.version 0 -> 1 (a one-way step: this module's last test)."""
    ex.send(57, 2, _uf(2, [("kraft.version", 1, UPGRADE)]), scenario="kraft.version 1")
    _api_versions(ex, "kraft.version 1")
    ex.send(57, 2, _uf(2, [("kraft.version", 0, SAFE)]), scenario="kraft.version back to 0")
