"""The operator's APIs of a single node, at every version both serve: DescribeLogDirs (35),
AlterReplicaLogDirs (34), ElectLeaders (43), AlterPartitionReassignments (45),
ListPartitionReassignments (46), DescribeQuorum (55) and StreamsGroupTopologyDescriptionUpdate
(93). Both brokers hold the same topic with the same records in their one log dir."""
from __future__ import annotations

import pytest

from tests.differential.framework import req
from tests.differential.wire import batch, now_ms, produce

pytestmark = pytest.mark.xdist_group("differential")


def _topic_with_records(ex, partitions=3):
    topic = ex.topic_name()
    ex.create_topic(topic, partitions=partitions)
    for p in range(partitions):
        ts = now_ms()
        ex.each(lambda s: s.request(0, 9, produce(topic, {p: batch([ts] * (p + 2), value=b"v" * 50)}, 9)))
    return topic


def _only(resp_topics, topic):
    return [t for t in resp_topics if t.name == topic]


def test_describe_log_dirs(ex):
    topic = _topic_with_records(ex)
    for v in ex.versions(35):
        ex.send(35, v, req(35, v, topics=[{"topic": topic, "partitions": [0, 1, 2]}]),
                scenario="a topic's partitions, with their sizes")
        ex.send(35, v, req(35, v, topics=[{"topic": topic, "partitions": [1, 9]},
                                          {"topic": ex.topic_name("nosuch"), "partitions": [0]}]),
                scenario="a known and an unknown partition, an unknown topic")
        ex.send(35, v, req(35, v, topics=[]), scenario="no topics")
        k, h = ex.send(35, v, req(35, v, topics=None), compare_=False)
        for r in (k, h):   # every topic: the shared pair's internal topics differ; compare ours
            for res in r.results:
                res.topics = _only(res.topics, topic)
        ex.compare(35, v, k, h, scenario="every topic (this test's compared)")


def test_alter_replica_log_dirs(ex):
    topic = _topic_with_records(ex, 2)
    own = {"kafka": str(ex.pair.kafka.data_dir), "hourglass": str(ex.pair.hourglass.data_dir)}
    for v in ex.versions(34):
        def body(path, names=((topic, [0, 1]),)):
            return lambda s: req(34, v, dirs=[{"path": path(s), "topics": [
                {"name": n, "partitions": ps} for n, ps in names]}])
        ex.send(34, v, body(lambda s: "/nonexistent/log/dir"), scenario="a dir that is not a log dir")
        ex.send(34, v, body(lambda s: "relative"), scenario="a relative path")
        ex.send(34, v, body(lambda s: own[s.name]), scenario="the dir the partitions are in already")
        ex.send(34, v, body(lambda s: own[s.name], ((topic, [7]), (ex.topic_name("nosuch"), [0]))),
                scenario="an unknown partition and topic")
        ex.send(34, v, body(lambda s: own[s.name], ()), scenario="no topics")
    ex.send(35, 4, req(35, 4, topics=[{"topic": topic, "partitions": [0, 1]}]),
            scenario="after the no-op moves: the partitions in place, no future log")


def test_elect_leaders(ex):
    topic = _topic_with_records(ex, 2)
    other = ex.topic_name("nosuch")
    for v in ex.versions(43):
        for etype in ((0, 1) if v >= 1 else (0,)):
            ex.send(43, v, req(43, v, election_type=etype, timeout_ms=10000, topic_partitions=[
                {"topic": topic, "partitions": [0, 1, 5]}, {"topic": other, "partitions": [0]}]),
                scenario=f"election type {etype}: the preferred leader leads already; unknown partitions")
        if v >= 1:
            ex.send(43, v, req(43, v, election_type=3, timeout_ms=10000,
                               topic_partitions=[{"topic": topic, "partitions": [0]}]),
                    scenario="an unknown election type")
        ex.send(43, v, req(43, v, election_type=0, timeout_ms=10000, topic_partitions=[]),
                scenario="no partitions")
        k, h = ex.send(43, v, req(43, v, election_type=0, timeout_ms=10000, topic_partitions=None), compare_=False)
        for r in (k, h):   # every topic is listed: compare this test's (the pair's internal topics differ)
            assert all(not t.partition_result for t in r.replica_election_results)
            r.replica_election_results = [t for t in r.replica_election_results if t.topic == topic]
        ex.compare(43, v, k, h, scenario="every partition: none needs an election, none is listed")


def test_partition_reassignments(ex):
    topic = _topic_with_records(ex, 3)
    other = ex.topic_name("nosuch")
    for v in ex.versions(45):
        for allow in ((True, False) if v >= 1 else (True,)):
            ex.send(45, v, req(45, v, timeout_ms=10000, allow_replication_factor_change=allow, topics=[
                {"name": topic, "partitions": [
                    {"partition_index": 0, "replicas": [1]},
                    {"partition_index": 1, "replicas": [2]},
                    {"partition_index": 2, "replicas": None},
                    {"partition_index": 9, "replicas": [1]}]},
                {"name": other, "partitions": [{"partition_index": 0, "replicas": [1]}]}]),
                scenario=f"onto the only broker, onto one that does not exist, a cancel, unknown ones "
                         f"(allow_replication_factor_change={allow})")
            ex.send(45, v, req(45, v, timeout_ms=10000, allow_replication_factor_change=allow, topics=[
                {"name": topic, "partitions": [
                    {"partition_index": 0, "replicas": [1, 1]},
                    {"partition_index": 1, "replicas": []},
                    {"partition_index": 2, "replicas": [-1]}]}]),
                scenario="a broker twice, an empty list, a negative id")
            ex.send(45, v, req(45, v, timeout_ms=10000, allow_replication_factor_change=allow, topics=[
                {"name": topic, "partitions": [
                    {"partition_index": 0, "replicas": [3, 2]},
                    {"partition_index": 1, "replicas": [2, 2]},
                    {"partition_index": 2, "replicas": [1, 2, 1]}]}]),
                scenario="which refusal comes first: ids checked in sorted order")
        ex.send(45, v, req(45, v, timeout_ms=10000, topics=[]), scenario="no topics")
    for v in ex.versions(46):
        ex.send(46, v, req(46, v, timeout_ms=10000, topics=None), scenario="every reassignment (none)")
        ex.send(46, v, req(46, v, timeout_ms=10000, topics=[
            {"name": topic, "partition_indexes": [0, 9]}, {"name": other, "partition_indexes": [0]}]),
            scenario="named partitions, known and unknown")


def test_describe_quorum(ex):
    for v in ex.versions(55):
        ex.send(55, v, req(55, v, topics=[{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]),
                scenario="the metadata partition: a single voter leading")
        ex.send(55, v, req(55, v, topics=[{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 1}]}]),
                scenario="another partition of the metadata topic")
        ex.send(55, v, req(55, v, topics=[{"topic_name": "other", "partitions": [{"partition_index": 0}]}]),
                scenario="another topic")
        ex.send(55, v, req(55, v, topics=[{"topic_name": "__cluster_metadata", "partitions": [
            {"partition_index": 0}, {"partition_index": 0}]}]), scenario="the metadata partition twice")
        ex.send(55, v, req(55, v, topics=[]), scenario="no topics")


def test_streams_group_topology_description_update(ex):
    node = {"name": "KSTREAM-SOURCE-0000000000", "node_type": 1, "source_topics": ["in"], "sink_topic": None,
            "stores": [], "successors": ["KSTREAM-SINK-0000000001"]}
    for v in ex.versions(93):
        ex.send(93, v, req(93, v, group_id="g-unknown", member_id="m", topology_epoch=1, topology_description={
            "subtopologies": [{"subtopology_id": "0", "nodes": [node]}], "global_stores": []}),
            scenario="an unknown group's member pushes a topology (no plugin configured)")
        ex.send(93, v, req(93, v, group_id="", member_id="", topology_epoch=0,
                           topology_description={"subtopologies": [], "global_stores": []}),
                scenario="empty ids")
