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
from tests.differential.wire import batch, group_coordinator, init_producer, list_offsets, now_ms, produce, wait_ok

pytestmark = pytest.mark.xdist_group("differential")

UPGRADE, SAFE, UNSAFE = 1, 2, 3


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    # the oracle's one-partition internal topics (tests/helpers/kafka_oracle.DEFAULTS) on both, so
    # the partitions a transaction lists are the same
    one = {"offsets.topic.num.partitions": 1, "transaction.state.log.num.partitions": 1}
    p = start_pair(tmp_path_factory, hourglass_overrides=one, name="features-pair")
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
    topic = ex.topic_name(tag.replace(" ", "")[:6])
    ex.create_topic(topic)
    for v in ex.versions(78):
        ex.send(78, v, lambda s: req(78, v, group_id=g + "s", member_id=mid, share_session_epoch=0, max_wait_ms=0,
                                     min_bytes=1, max_bytes=1 << 20, max_records=100, batch_size=100,
                                     share_acquire_mode=0, topics=[{"topic_id": s.state["topic_ids"][topic],
                                                                    "partitions": [{"partition_index": 0,
                                                                                    "acknowledgement_batches": []}]}],
                                     forgotten_topics_data=[]), scenario=f"{tag}: ShareFetch")
    for v in ex.versions(79):
        ex.send(79, v, lambda s: req(79, v, group_id=g + "s", member_id=mid, share_session_epoch=1, is_renew_ack=False,
                                     topics=[{"topic_id": s.state["topic_ids"][topic], "partitions": [
                                         {"partition_index": 0, "acknowledgement_batches": [
                                             {"first_offset": 0, "last_offset": 0, "acknowledge_types": [1]}]}]}]),
                scenario=f"{tag}: ShareAcknowledge")
    for v in ex.versions(90):
        ex.send(90, v, req(90, v, groups=[{"group_id": g + "s", "topics": [{"topic_name": topic, "partitions": [0]}]}]),
                scenario=f"{tag}: DescribeShareGroupOffsets")
    for v in ex.versions(91):
        ex.send(91, v, req(91, v, group_id=g + "s", topics=[
            {"topic_name": topic, "partitions": [{"partition_index": 0, "start_offset": 0}]}]),
            scenario=f"{tag}: AlterShareGroupOffsets")
    for v in ex.versions(92):
        ex.send(92, v, req(92, v, group_id=g + "s", topics=[{"topic_name": topic}]),
                scenario=f"{tag}: DeleteShareGroupOffsets")
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


def _txn_batch(s, seq, n=2):
    return batch([now_ms()] * n, producer_id=s.state["pid"], producer_epoch=s.state["epoch"], base_sequence=seq,
                 is_transactional=True)


def _describe_txn(ex, txn, scenario):
    ex.send(65, 0, req(65, 0, transactional_ids=[txn]), scenario=scenario)


def _completed(ex, txn):
    """Setup: wait until each side's markers are written (Kafka writes them after answering)."""
    for s in ex.sides:
        wait_ok(s, 65, 0, req(65, 0, transactional_ids=[txn]),
                ok=lambda r: r.transaction_states[0].transaction_state.startswith("Complete"))


def _end(ex, txn, v, commit, scenario):
    k, h = ex.send(26, v, lambda s: req(26, v, transactional_id=txn, producer_id=s.state["pid"],
                                        producer_epoch=s.state["epoch"], committed=commit), scenario=scenario)
    for s, r in zip(ex.sides, (k, h)):
        if r.error_code == 0 and v >= 5:  # TV2: the answer carries the producer's new id and epoch
            s.state["pid"], s.state["epoch"] = r.producer_id, r.producer_epoch
    _completed(ex, txn)


@pytest.mark.parametrize("level", [2, 1])
def test_transaction_flows_at_each_level(ex, level):
    """Raw-wire transactions with transaction.version finalized at ``level``: the KIP-890 part 2
    flow (Produce v12 adding its partition, TxnOffsetCommit v5 adding the group, EndTxn v5
    bumping the epoch), the TV1 flow (AddPartitionsToTxn, AddOffsetsToTxn, EndTxn v4), and a
    new incarnation fencing an open transaction: the coordinator's own abort follows the
    finalized level."""
    _set(ex, [("transaction.version", level, UPGRADE if level == 2 else SAFE)])
    topic = ex.topic_name(f"tv{level}")
    ex.create_topic(topic, partitions=2)
    group = f"g-{topic}"
    group_coordinator(ex, group)
    txn = f"txn-{topic}"
    init_producer(ex, txn)
    # TV2 requests: partitions and offsets added by the writes themselves
    ex.send(0, 12, lambda s: produce(topic, {0: _txn_batch(s, 0)}, 12, transactional_id=txn),
            scenario="Produce v12 adds its partition")
    ex.send(28, 5, lambda s: req(28, 5, transactional_id=txn, group_id=group, producer_id=s.state["pid"],
                                 producer_epoch=s.state["epoch"], generation_id=-1, member_id="",
                                 group_instance_id=None, topics=[{"name": topic, "partitions": [
                                     {"partition_index": 0, "committed_offset": 2, "committed_leader_epoch": -1,
                                      "committed_metadata": ""}]}]), scenario="TxnOffsetCommit v5 adds the group")
    _describe_txn(ex, txn, "ongoing after the implicit additions")
    _end(ex, txn, 5, True, "EndTxn v5 commit")
    _describe_txn(ex, txn, "after EndTxn v5")
    _end(ex, txn, 5, True, "EndTxn v5 commit again (nothing ongoing)")
    # TV1 requests on the same transactional id
    ex.send(24, 3, lambda s: req(24, 3, v3_and_below_transactional_id=txn, v3_and_below_producer_id=s.state["pid"],
                                 v3_and_below_producer_epoch=s.state["epoch"],
                                 v3_and_below_topics=[{"name": topic, "partitions": [1]}]), scenario="AddPartitionsToTxn v3")
    ex.send(0, 11, lambda s: produce(topic, {1: _txn_batch(s, 0)}, 11, transactional_id=txn), scenario="Produce v11")
    _end(ex, txn, 4, False, "EndTxn v4 abort")
    _describe_txn(ex, txn, "after EndTxn v4")
    # an open transaction fenced by a new incarnation: the coordinator aborts it at the finalized level
    ex.send(24, 3, lambda s: req(24, 3, v3_and_below_transactional_id=txn, v3_and_below_producer_id=s.state["pid"],
                                 v3_and_below_producer_epoch=s.state["epoch"],
                                 v3_and_below_topics=[{"name": topic, "partitions": [0]}]), scenario="open again")
    ex.send(22, 5, req(22, 5, transactional_id=txn, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1),
            scenario="a new incarnation: the open transaction is aborted first")
    _completed(ex, txn)
    _describe_txn(ex, txn, "after the fencing abort")
    ex.send(22, 5, req(22, 5, transactional_id=txn, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1),
            scenario="the new incarnation's retry")
    _describe_txn(ex, txn, "the new incarnation")
    for p in (0, 1):
        ex.send(2, 2, list_offsets(topic, [(p, -1)], 2, isolation_level=1), scenario=f"read_committed end of {p}")
