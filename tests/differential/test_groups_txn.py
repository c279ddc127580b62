"""Groups and transactions: classic join/sync/heartbeat/leave error flows, offset commit and
fetch edge cases, ConsumerGroupHeartbeat and ShareGroupHeartbeat errors, InitProducerId,
AddPartitionsToTxn and EndTxn errors, DescribeTransactions and ListTransactions."""
from __future__ import annotations

import uuid

import pytest

from protocol.records.record import build_batch
from tests.differential.framework import req
from tests.differential.wire import batch, group_coordinator, init_producer, now_ms, produce, wait_ok

pytestmark = pytest.mark.xdist_group("differential")

PROTOCOLS = [{"name": "range", "metadata": b"\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00"}]


def _group(ex, tag):
    return f"g-{ex.topic_name(tag)}"


def _join(group, v, member_id="", session=10000, protocol_type="consumer", protocols=PROTOCOLS, instance=None):
    return req(11, v, group_id=group, session_timeout_ms=session, rebalance_timeout_ms=session, member_id=member_id,
               group_instance_id=instance, protocol_type=protocol_type, protocols=protocols, reason=None)


def _joined(ex, group, v):
    """Join on both (a v4+ first join is MEMBER_ID_REQUIRED, answered with the id to use):
    compared; each side keeps its member id and generation."""
    k, h = ex.send(11, v, _join(group, v), scenario="first join, no member id")
    for s, r in zip(ex.sides, (k, h)):
        s.state["member"] = r.member_id
    if v >= 4:
        k, h = ex.send(11, v, lambda s: _join(group, v, member_id=s.state["member"]),
                       scenario="join with the member id given")
    for s, r in zip(ex.sides, (k, h)):
        s.state["member"], s.state["generation"] = r.member_id, r.generation_id
    return k, h


def test_classic_group_error_flows(ex):
    for v in ex.versions(11):
        group = _group(ex, f"v{v}")
        group_coordinator(ex, group)
        ex.send(11, v, _join("", v), scenario="empty group id")
        ex.send(11, v, _join(group, v, session=1), scenario="session timeout below the minimum")
        ex.send(11, v, _join(group, v, session=10 ** 9), scenario="session timeout above the maximum")
        ex.send(11, v, _join(group, v, member_id="nobody"), scenario="unknown member id")
        ex.send(11, v, _join(group, v, protocols=[]), scenario="no protocols")
        _joined(ex, group, v)
        ex.send(11, v, _join(group, v, member_id="x", protocol_type="other"), scenario="another protocol type")
    v_sync, v_hb, v_leave = max(ex.versions(14)), max(ex.versions(12)), max(ex.versions(13))
    group = _group(ex, "flows")
    group_coordinator(ex, group)
    _joined(ex, group, max(ex.versions(11)))
    for vs in ex.versions(14):
        ex.send(14, vs, lambda s: req(14, vs, group_id=group, generation_id=s.state["generation"] + 5,
                                      member_id=s.state["member"], protocol_type="consumer", protocol_name="range",
                                      assignments=[]), scenario="sync: wrong generation")
        ex.send(14, vs, lambda s: req(14, vs, group_id=group, generation_id=s.state["generation"],
                                      member_id="nobody", protocol_type="consumer", protocol_name="range",
                                      assignments=[]), scenario="sync: unknown member")
        if vs >= 5:
            ex.send(14, vs, lambda s: req(14, vs, group_id=group, generation_id=s.state["generation"],
                                          member_id=s.state["member"], protocol_type="other", protocol_name="range",
                                          assignments=[]), scenario="sync: inconsistent protocol type")
    ex.send(14, v_sync, lambda s: req(14, v_sync, group_id=group, generation_id=s.state["generation"],
                                      member_id=s.state["member"], protocol_type="consumer", protocol_name="range",
                                      assignments=[{"member_id": s.state["member"], "assignment": b"\x00\x01"}]),
            scenario="sync: the leader's assignment")
    for vh in ex.versions(12):
        ex.send(12, vh, lambda s: req(12, vh, group_id=group, generation_id=s.state["generation"],
                                      member_id=s.state["member"]), scenario="heartbeat: stable")
        ex.send(12, vh, lambda s: req(12, vh, group_id=group, generation_id=s.state["generation"] + 1,
                                      member_id=s.state["member"]), scenario="heartbeat: wrong generation")
        ex.send(12, vh, lambda s: req(12, vh, group_id=group, generation_id=s.state["generation"],
                                      member_id="nobody"), scenario="heartbeat: unknown member")
        ex.send(12, vh, req(12, vh, group_id=_group(ex, "none"), generation_id=1, member_id="m"),
                scenario="heartbeat: unknown group")
    for vl in ex.versions(13):
        ex.send(13, vl, req(13, vl, group_id=group, member_id="nobody",
                            members=[{"member_id": "nobody", "group_instance_id": None}]),
                scenario="leave: unknown member")
    ex.send(13, v_leave, lambda s: req(13, v_leave, group_id=group, members=[
        {"member_id": s.state["member"], "group_instance_id": None, "reason": "done"}]), scenario="leave")
    ex.send(12, v_hb, lambda s: req(12, v_hb, group_id=group, generation_id=s.state["generation"],
                                    member_id=s.state["member"]), scenario="heartbeat after leaving")


def _topic_id(side, topic) -> bytes:
    """The side's id of ``topic`` (requests by topic id); a made-up one for a topic neither has."""
    return side.state.get("topic_ids", {}).get(topic, uuid.uuid5(uuid.NAMESPACE_URL, topic).bytes)


def _commit(group, topic, v, offsets, generation=-1, member=""):
    """An OffsetCommit; from v10 (topics by id) a ``side -> request`` function."""
    def body(topic_id=bytes(16)):
        return req(8, v, group_id=group, generation_id_or_member_epoch=generation, member_id=member,
                   group_instance_id=None, retention_time_ms=-1,
                   topics=[{"name": topic, "topic_id": topic_id, "partitions": [
                       {"partition_index": p, "committed_offset": o, "committed_leader_epoch": -1,
                        "commit_timestamp": -1, "committed_metadata": "m"} for p, o in offsets]}])
    return body() if v < 10 else lambda s: body(_topic_id(s, topic))


def _fetch_offsets(group, topics, v, require_stable=False):
    """``topics``: {name: [partitions]} or None for every committed offset; from v10 (topics by
    id) a ``side -> request`` function."""
    def body(side=None):
        t = None if topics is None else [{"name": n, "partition_indexes": ps,
                                          **({"topic_id": _topic_id(side, n)} if side else {})}
                                         for n, ps in topics.items()]
        if v >= 8:
            return req(9, v, groups=[{"group_id": group, "member_id": None, "member_epoch": -1, "topics": t}],
                       require_stable=require_stable)
        return req(9, v, group_id=group, topics=t, require_stable=require_stable)
    return body() if v < 10 else body


def test_offset_commit_and_fetch(ex):
    topic = ex.topic_name()
    ex.create_topic(topic, partitions=2)
    ex.send(0, 9, produce(topic, {0: batch([now_ms()] * 3)}, 9), scenario="setup")
    for v in ex.versions(8):
        group = _group(ex, f"c{v}")
        group_coordinator(ex, group)
        ex.send(8, v, _commit(group, topic, v, [(0, 2), (1, 0)]), scenario="simple commit (no generation)")
        ex.send(8, v, _commit(group, topic, v, [(5, 1)]), scenario="unknown partition")
        ex.send(8, v, _commit(group, ex.topic_name("nosuch"), v, [(0, 1)]), scenario="unknown topic")
        ex.send(8, v, _commit(group, topic, v, [(0, 1)], generation=3, member="nobody"),
                scenario="generation given, group has no members")
        ex.send(8, v, _commit("", topic, v, [(0, 1)]), scenario="empty group id")
    group = _group(ex, "fetch")
    group_coordinator(ex, group)
    ex.send(8, max(ex.versions(8)), _commit(group, topic, max(ex.versions(8)), [(0, 3)]), scenario="setup commit")
    for v in ex.versions(9):
        ex.send(9, v, _fetch_offsets(group, {topic: [0, 1, 7]}, v), scenario="committed, uncommitted, unknown")
        ex.send(9, v, _fetch_offsets(group, {ex.topic_name("nosuch"): [0], topic: [0]}, v),
                scenario="an unknown topic and a committed one")
        ex.send(9, v, _fetch_offsets(_group(ex, "none"), {topic: [0]}, v), scenario="unknown group")
        if v >= 2:
            ex.send(9, v, _fetch_offsets(group, None, v), scenario="every committed offset")
        if v >= 7:
            ex.send(9, v, _fetch_offsets(group, {topic: [0]}, v, require_stable=True), scenario="require_stable")


def test_delete_groups(ex):
    """DeleteGroups: an unknown group, an empty id, a group with a member, a group with only
    committed offsets (deleted), and the same group again (gone)."""
    topic = ex.topic_name()
    ex.create_topic(topic)
    for v in ex.versions(42):
        live, empty = _group(ex, f"live{v}"), _group(ex, f"empty{v}")
        for g in (live, empty):
            group_coordinator(ex, g)
        _joined(ex, live, max(ex.versions(11)))
        ex.send(8, max(ex.versions(8, hi=9)), _commit(empty, topic, max(ex.versions(8, hi=9)), [(0, 1)]),
                scenario="setup commit")
        ex.send(42, v, req(42, v, groups_names=[_group(ex, "none"), "", live, empty]),
                scenario="unknown, empty id, with a member, offsets only")
        ex.send(42, v, req(42, v, groups_names=[empty]), scenario="the deleted group again")


def _cgh(group, v, member_id, epoch, topics=("t",), regex=None, rebalance=30000, assignor=None, instance=None):
    return req(68, v, group_id=group, member_id=member_id, member_epoch=epoch, instance_id=instance, rack_id=None,
               rebalance_timeout_ms=rebalance, subscribed_topic_names=list(topics) if topics is not None else None,
               subscribed_topic_regex=regex, server_assignor=assignor, topic_partitions=[] if epoch == 0 else None)


def test_consumer_group_heartbeat_errors(ex):
    for v in ex.versions(68):
        group = _group(ex, f"cg{v}")
        group_coordinator(ex, group)
        mid = uuid.uuid4().hex[:22]
        ex.send(68, v, _cgh("", v, mid, 0), scenario="empty group id")
        ex.send(68, v, _cgh(group, v, "", 0), scenario="empty member id")
        ex.send(68, v, _cgh(group, v, mid, 0, topics=None), scenario="first heartbeat without a subscription")
        ex.send(68, v, _cgh(group, v, mid, 0, rebalance=-1), scenario="first heartbeat without a rebalance timeout")
        ex.send(68, v, _cgh(group, v, mid, 5), scenario="unknown member with epoch 5")
        ex.send(68, v, _cgh(group, v, mid, -3), scenario="member epoch -3")
        ex.send(68, v, _cgh(group, v, mid, 0, assignor="nosuch"), scenario="unknown server assignor")
        ex.send(68, v, _cgh(group, v, mid, 0, instance=""), scenario="empty instance id")
        if v >= 1:
            ex.send(68, v, _cgh(group, v, mid, 0, topics=None, regex="(unclosed"), scenario="invalid regex")
        classic = _group(ex, f"classic{v}")
        group_coordinator(ex, classic)
        ex.each(lambda s: s.request(11, 5, _join(classic, 5)))
        ex.send(68, v, _cgh(classic, v, mid, 0), scenario="a classic group's id")


def test_share_group_heartbeat_errors(ex):
    for v in ex.versions(76):
        group = _group(ex, f"sg{v}")
        group_coordinator(ex, group)
        mid = uuid.uuid4().hex[:22]
        base = dict(group_id=group, member_id=mid, member_epoch=0, rack_id=None, subscribed_topic_names=["t"])
        ex.send(76, v, req(76, v, **{**base, "group_id": ""}), scenario="empty group id")
        ex.send(76, v, req(76, v, **{**base, "member_id": ""}), scenario="empty member id")
        ex.send(76, v, req(76, v, **{**base, "subscribed_topic_names": None}), scenario="no subscription")
        ex.send(76, v, req(76, v, **{**base, "member_epoch": 5}), scenario="unknown member, epoch 5")
        ex.send(76, v, req(76, v, **{**base, "member_epoch": -2}), scenario="member epoch -2")


def test_transaction_errors(ex):
    topic = ex.topic_name()
    ex.create_topic(topic)
    txn = f"txn-{topic}"
    idem = req(22, 0, transactional_id=None, transaction_timeout_ms=60000)
    for s in ex.sides:  # Kafka answers a retriable error until its first producer id block arrives
        wait_ok(s, 22, 0, idem)
    for v in ex.versions(22):
        ex.send(22, v, req(22, v, transactional_id=txn, transaction_timeout_ms=10 ** 9, producer_id=-1,
                           producer_epoch=-1), scenario="transaction timeout above the maximum")
        ex.send(22, v, req(22, v, transactional_id=None, transaction_timeout_ms=60000, producer_id=-1,
                           producer_epoch=-1), scenario="idempotent (no transactional id)")
    init_producer(ex, txn)
    v_add = max(ex.versions(24, hi=3))
    nosuch = ex.topic_name("nosuch")
    for v in ex.versions(24, hi=3):
        ex.send(24, v, lambda s: req(24, v, v3_and_below_transactional_id=txn, v3_and_below_producer_id=s.state["pid"],
                                     v3_and_below_producer_epoch=s.state["epoch"] + 1,
                                     v3_and_below_topics=[{"name": topic, "partitions": [0]}]),
                scenario="add partitions: a newer epoch")
        ex.send(24, v, lambda s: req(24, v, v3_and_below_transactional_id=txn, v3_and_below_producer_id=s.state["pid"] + 77,
                                     v3_and_below_producer_epoch=s.state["epoch"],
                                     v3_and_below_topics=[{"name": topic, "partitions": [0]}]),
                scenario="add partitions: another producer id")
        ex.send(24, v, lambda s: req(24, v, v3_and_below_transactional_id=txn, v3_and_below_producer_id=s.state["pid"],
                                     v3_and_below_producer_epoch=s.state["epoch"],
                                     v3_and_below_topics=[{"name": nosuch, "partitions": [0]},
                                                          {"name": topic, "partitions": [0]}]),
                scenario="add partitions: an unknown topic among them")
        ex.send(24, v, lambda s: req(24, v, v3_and_below_transactional_id=f"unknown-{txn}", v3_and_below_producer_id=s.state["pid"],
                                     v3_and_below_producer_epoch=s.state["epoch"],
                                     v3_and_below_topics=[{"name": topic, "partitions": [0]}]),
                scenario="add partitions: unknown transactional id")
    for v in ex.versions(26, hi=4):
        ex.send(26, v, lambda s: req(26, v, transactional_id=txn, producer_id=s.state["pid"],
                                     producer_epoch=s.state["epoch"], committed=True),
                scenario="end: no transaction ongoing")
        ex.send(26, v, lambda s: req(26, v, transactional_id=txn, producer_id=s.state["pid"] + 77,
                                     producer_epoch=s.state["epoch"], committed=False),
                scenario="end: another producer id")
        ex.send(26, v, lambda s: req(26, v, transactional_id=f"unknown-{txn}", producer_id=s.state["pid"],
                                     producer_epoch=s.state["epoch"], committed=True),
                scenario="end: unknown transactional id")
    # one transaction left open, to be described and listed
    ex.send(24, v_add, lambda s: req(24, v_add, v3_and_below_transactional_id=txn,
                                     v3_and_below_producer_id=s.state["pid"],
                                     v3_and_below_producer_epoch=s.state["epoch"],
                                     v3_and_below_topics=[{"name": topic, "partitions": [0]}]),
            scenario="add partitions")
    for v in ex.versions(65):
        ex.send(65, v, req(65, v, transactional_ids=[txn, f"unknown-{txn}"]), scenario="describe: ongoing and unknown")
    for v in ex.versions(66):
        ex.send(66, v, lambda s: req(66, v, state_filters=["Ongoing"], producer_id_filters=[s.state["pid"]],
                                     duration_filter=-1), scenario="list: ongoing, this producer")
        ex.send(66, v, lambda s: req(66, v, state_filters=["NoSuchState"], producer_id_filters=[s.state["pid"]],
                                     duration_filter=-1), scenario="list: an unknown state")
        if v >= 1:
            ex.send(66, v, lambda s: req(66, v, state_filters=[], producer_id_filters=[s.state["pid"]],
                                         duration_filter=10 ** 12), scenario="list: running longer than 30 years")
        if v >= 2:
            for pattern, what in ((f"txn-{topic[:8]}.*", "a pattern matching the whole id"),
                                  (topic[2:10], "a pattern matching only part of the id"),
                                  ("", "an empty pattern (no filter)"),
                                  ("(unclosed", "an invalid pattern")):
                ex.send(66, v, lambda s: req(66, v, state_filters=[], producer_id_filters=[s.state["pid"]],
                                             duration_filter=-1, transactional_id_pattern=pattern),
                        scenario=f"list: {what}")
    ex.send(26, 3, lambda s: req(26, 3, transactional_id=txn, producer_id=s.state["pid"],
                                 producer_epoch=s.state["epoch"], committed=False), scenario="end: abort")


def test_share_group_offsets(ex):
    """Describe/Alter/DeleteShareGroupOffsets on an unknown group, a group with a member, and
    the same group once its member left (empty)."""
    topic = ex.topic_name()
    ex.create_topic(topic, partitions=2)
    ex.send(0, 9, produce(topic, {0: batch([now_ms()] * 3)}, 9), scenario="setup: records behind the start offset")
    group = _group(ex, "sgo")
    group_coordinator(ex, group)
    alter = lambda g, off=0: req(91, 0, group_id=g, topics=[  # noqa: E731
        {"topic_name": topic, "partitions": [{"partition_index": 0, "start_offset": off},
                                             {"partition_index": 5, "start_offset": 0}]},
        {"topic_name": f"{topic}-nosuch", "partitions": [{"partition_index": 0, "start_offset": 0}]}])
    delete = lambda g: req(92, 0, group_id=g, topics=[{"topic_name": topic},  # noqa: E731
                                                      {"topic_name": f"{topic}-nosuch"}])
    def describe_all(g, scenario):  # every version both serve (v1 adds each partition's lag)
        for v in ex.versions(90):
            ex.send(90, v, req(90, v, groups=[{"group_id": g, "topics": [{"topic_name": topic, "partitions": [0, 1]}]}]),
                    scenario=scenario)
    unknown = _group(ex, "none")
    ex.send(91, 0, alter(unknown), scenario="alter: unknown group")
    ex.send(92, 0, delete(unknown), scenario="delete: unknown group")
    describe_all(unknown, "describe: unknown group")
    mid = uuid.uuid4().hex[:22]
    hb = req(76, 1, group_id=group, member_id=mid, member_epoch=0, rack_id=None, subscribed_topic_names=[topic])
    for s in ex.sides:
        wait_ok(s, 76, 1, hb)
    ex.send(91, 0, alter(group), scenario="alter: a group with a member")
    ex.send(92, 0, delete(group), scenario="delete: a group with a member")
    for s in ex.sides:
        s.request(76, 1, req(76, 1, group_id=group, member_id=mid, member_epoch=-1, rack_id=None,
                             subscribed_topic_names=None))
    ex.send(91, 0, alter(group, off=0), scenario="alter: the empty group")
    describe_all(group, "describe: after alter")
    ex.send(92, 0, delete(group), scenario="delete: the empty group")
    describe_all(group, "describe: after delete")


def _txn_commit(txn, group, topic, v, offsets, generation=-1, member=""):
    """A TxnOffsetCommit of this side's producer; v6 names the topic by id."""
    return lambda s: req(28, v, transactional_id=txn, group_id=group, producer_id=s.state["pid"],
                         producer_epoch=s.state["epoch"], generation_id=generation, member_id=member,
                         group_instance_id=None, topics=[{"name": topic, "topic_id": _topic_id(s, topic), "partitions": [
                             {"partition_index": p, "committed_offset": o, "committed_leader_epoch": -1,
                              "committed_metadata": "m"} for p, o in offsets]}])


def test_txn_offset_commit(ex):
    """TxnOffsetCommit at every version: the group's partition never added to the transaction
    (refused up to v4, added by the commit itself from v5), then, once added, an unknown
    partition, an unknown topic, and a generation the group does not have."""
    topic = ex.topic_name()
    ex.create_topic(topic, partitions=2)
    for v in ex.versions(28):
        txn, group = f"txn-{topic}-v{v}", _group(ex, f"t{v}")
        group_coordinator(ex, group)
        init_producer(ex, txn)
        ex.send(28, v, _txn_commit(txn, group, topic, v, [(0, 1)]), scenario="the group's partition never added")
        ex.send(25, 3, lambda s: req(25, 3, transactional_id=txn, producer_id=s.state["pid"],
                                     producer_epoch=s.state["epoch"], group_id=group), scenario="AddOffsetsToTxn")
        ex.send(28, v, _txn_commit(txn, group, topic, v, [(0, 2), (1, 0)]), scenario="two partitions")
        ex.send(28, v, _txn_commit(txn, group, topic, v, [(9, 1)]), scenario="an unknown partition")
        ex.send(28, v, _txn_commit(txn, group, ex.topic_name("nosuch"), v, [(0, 1)]), scenario="an unknown topic")
        if v >= 3:
            ex.send(28, v, _txn_commit(txn, group, topic, v, [(0, 1)], generation=4, member="nobody"),
                    scenario="a generation the group does not have")
        ex.send(26, 3, lambda s: req(26, 3, transactional_id=txn, producer_id=s.state["pid"],
                                     producer_epoch=s.state["epoch"], committed=False), scenario="EndTxn abort")


def test_write_txn_markers(ex):
    """WriteTxnMarkers as ``kafka-transactions.sh abort`` sends it, at every version: an ABORT
    marker for an open transaction at the producer's epoch and at the next one, and from v2 with
    each transaction version (KIP-1228) the marker carries. A topic per case: a transaction
    left open is aborted by its coordinator after its timeout, a marker that would race the next
    case's offsets."""
    t = now_ms()
    cases = [(v, tv, bump) for v in ex.versions(27) for tv in ((0, 1, 2) if v >= 2 else (0,)) for bump in (0, 1)]
    for v, tv, bump in cases:
        topic = ex.topic_name(f"{v}-{tv}-{bump}")
        ex.create_topic(topic)
        txn = f"txn-{topic}"
        init_producer(ex, txn)
        ex.send(24, 3, lambda s: req(24, 3, v3_and_below_transactional_id=txn, v3_and_below_producer_id=s.state["pid"],
                                     v3_and_below_producer_epoch=s.state["epoch"],
                                     v3_and_below_topics=[{"name": topic, "partitions": [0]}]), scenario="setup: add")
        ex.send(0, 9, lambda s: produce(topic, {0: build_batch(
            [(b"k", b"v", t)], producer_id=s.state["pid"], producer_epoch=s.state["epoch"], base_sequence=0,
            is_transactional=True)}, 9, transactional_id=txn), scenario="setup: transactional produce")
        ex.send(27, v, lambda s: req(27, v, markers=[{
            "producer_id": s.state["pid"], "producer_epoch": s.state["epoch"] + bump, "transaction_result": False,
            "topics": [{"name": topic, "partition_indexes": [0]}], "coordinator_epoch": 0,
            "transaction_version": tv}]), scenario=f"abort marker, transaction version {tv}, epoch +{bump}")
