"""Cluster and topic APIs: Metadata (named, unknown, auto-created and invalid topics),
DescribeCluster, FindCoordinator, DescribeTopicPartitions, OffsetForLeaderEpoch,
DescribeProducers, ListGroups/DescribeGroups, CreatePartitions and DeleteTopics."""
from __future__ import annotations

import pytest

from protocol.records.record import build_batch
from tests.differential.framework import req
from tests.differential.wire import batch, group_coordinator, init_producer, now_ms, produce, wait_ok

pytestmark = pytest.mark.xdist_group("differential")


def _metadata(v, names, auto=False):
    topics = None if names is None else [{"name": n, "topic_id": bytes(16)} for n in names]
    return req(3, v, topics=topics, allow_auto_topic_creation=auto, include_cluster_authorized_operations=False,
               include_topic_authorized_operations=v >= 8)


def test_metadata(ex):
    topic = ex.topic_name()
    ex.create_topic(topic, partitions=3)
    for v in ex.versions(3):
        ex.send(3, v, _metadata(v, [topic]), scenario="a topic with three partitions")
        ex.send(3, v, _metadata(v, [ex.topic_name("nosuch")]), scenario="an unknown topic, no auto-creation")
        ex.send(3, v, _metadata(v, ["bad name!"]), scenario="an invalid name")
        ex.send(3, v, _metadata(v, [""]), scenario="an empty name")
        if v >= 1:  # (v0's empty list means every topic: the shared pair's topics differ by test order)
            ex.send(3, v, _metadata(v, []), scenario="no topics")
        if v >= 4:
            auto = ex.topic_name(f"auto{v}")
            ex.send(3, v, _metadata(v, [auto], auto=True), scenario="auto-creation (first answer)")
            ex.wait_leaders(auto, 1)
            for s in ex.sides:  # what the Fetch by id scenarios need, and to compare the id's presence
                s.state.setdefault("topic_ids", {})
            ex.send(3, v, _metadata(v, [auto]), scenario="the auto-created topic")


def test_cluster_and_coordinators(ex):
    for v in ex.versions(60):
        ex.send(60, v, req(60, v, include_cluster_authorized_operations=False, endpoint_type=1),
                scenario="brokers")
        if v >= 1:
            ex.send(60, v, req(60, v, include_cluster_authorized_operations=False, endpoint_type=2),
                    scenario="controllers (endpoint type 2)")
        if v >= 2:
            ex.send(60, v, req(60, v, include_cluster_authorized_operations=False, endpoint_type=1,
                               include_fenced_brokers=True), scenario="brokers, fenced ones included")
    group = f"g-{ex.topic_name()}"
    for s in ex.sides:  # setup: Kafka creates its internal topics on the first lookup, answering 15 meanwhile
        for key_type, key in ((0, group), (1, f"t-{group}")):
            wait_ok(s, 10, 4, req(10, 4, key_type=key_type, coordinator_keys=[key]),
                    ok=lambda r: r.coordinators[0].error_code == 0)
    for v in ex.versions(10):
        if v >= 4:
            ex.send(10, v, req(10, v, key_type=0, coordinator_keys=[group, ""]), scenario="groups")
            ex.send(10, v, req(10, v, key_type=7, coordinator_keys=[group]), scenario="an unknown key type")
        else:
            ex.send(10, v, req(10, v, key=group, key_type=0), scenario="a group")
            if v >= 1:
                ex.send(10, v, req(10, v, key="", key_type=1), scenario="an empty transactional id")


def test_describe_topic_partitions(ex):
    topic = ex.topic_name()
    ex.create_topic(topic, partitions=4)
    for v in ex.versions(75):
        ex.send(75, v, req(75, v, topics=[{"name": topic}, {"name": ex.topic_name("nosuch")}],
                           response_partition_limit=2000, cursor=None), scenario="a topic and an unknown one")
        ex.send(75, v, req(75, v, topics=[{"name": topic}], response_partition_limit=2, cursor=None),
                scenario="a partition limit of 2")
        ex.send(75, v, req(75, v, topics=[{"name": topic}], response_partition_limit=2000,
                           cursor={"topic_name": topic, "partition_index": 2}), scenario="from a cursor")


def test_offset_for_leader_epoch_and_producers(ex):
    topic = ex.topic_name()
    ex.create_topic(topic, partitions=2)
    ex.send(0, 9, produce(topic, {0: batch([now_ms()] * 3)}, 9), scenario="setup")
    for v in ex.versions(23):
        ex.send(23, v, req(23, v, replica_id=-1, topics=[{"topic": topic, "partitions": [
            {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0},
            {"partition": 1, "current_leader_epoch": -1, "leader_epoch": 0},
            {"partition": 7, "current_leader_epoch": -1, "leader_epoch": 0}]}]), scenario="epoch 0")
        ex.send(23, v, req(23, v, replica_id=-1, topics=[{"topic": topic, "partitions": [
            {"partition": 0, "current_leader_epoch": 5, "leader_epoch": 0}]}]), scenario="a future current epoch")
    init_producer(ex)
    t = now_ms()
    ex.send(0, 9, lambda s: produce(topic, {0: build_batch([(b"k", b"v", t)], producer_id=s.state["pid"],
                                                           producer_epoch=s.state["epoch"], base_sequence=0)}, 9),
            scenario="an idempotent batch")
    for v in ex.versions(61):
        ex.send(61, v, req(61, v, topics=[{"name": topic, "partition_indexes": [0, 1, 9]},
                                          {"name": ex.topic_name("nosuch"), "partition_indexes": [0]}]),
                scenario="producers of a partition, an empty one, unknowns", normalize=())


def test_groups_listing(ex):
    group = f"g-{ex.topic_name()}"
    group_coordinator(ex, group)
    for v in ex.versions(15):
        ex.send(15, v, req(15, v, groups=[group, ""], include_authorized_operations=False),
                scenario="an unknown group and an empty id")
    topic = ex.topic_name()
    ex.create_topic(topic)
    empty = f"g-{ex.topic_name('empty')}"
    group_coordinator(ex, empty)
    ex.send(8, 8, req(8, 8, group_id=empty, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                      topics=[{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 0,
                                                              "committed_leader_epoch": -1, "committed_metadata": ""}]}]),
            scenario="setup: an empty classic group")
    for v in ex.versions(15):
        ex.send(15, v, req(15, v, groups=[empty], include_authorized_operations=False),
                scenario="an empty classic group (offsets only)")
    for v in ex.versions(16):
        if v >= 4:
            ex.send(16, v, req(16, v, states_filter=["NoSuchState"], types_filter=[]),
                    scenario="an unknown state filter")
        if v >= 5:
            ex.send(16, v, req(16, v, states_filter=[], types_filter=["nosuchtype"]),
                    scenario="an unknown type filter")


def test_create_partitions_and_delete_topics(ex):
    topic = ex.topic_name()
    ex.create_topic(topic, partitions=2)
    for v in ex.versions(37):
        for name, count in (("fewer", 1), ("the same", 2), ("more", 5)):
            ex.send(37, v, req(37, v, topics=[{"name": topic, "count": count, "assignments": None}],
                               timeout_ms=30000, validate_only=True), scenario=f"{name} partitions, validate_only")
        ex.send(37, v, req(37, v, topics=[{"name": ex.topic_name("nosuch"), "count": 3, "assignments": None}],
                           timeout_ms=30000, validate_only=True), scenario="an unknown topic")
        ex.send(37, v, req(37, v, topics=[{"name": topic, "count": 3, "assignments": None},
                                          {"name": topic, "count": 4, "assignments": None}],
                           timeout_ms=30000, validate_only=True), scenario="the same topic twice")
    for v in ex.versions(20):
        gone = ex.topic_name(f"del{v}")
        ex.create_topic(gone)
        if v >= 6:
            ex.send(20, v, req(20, v, topics=[{"name": gone, "topic_id": bytes(16)},
                                              {"name": ex.topic_name("nosuch"), "topic_id": bytes(16)}],
                               timeout_ms=30000), scenario="a topic and an unknown one")
        else:
            ex.send(20, v, req(20, v, topic_names=[gone, ex.topic_name("nosuch")], timeout_ms=30000),
                    scenario="a topic and an unknown one")
