"""Streams groups (KIP-1071): StreamsGroupHeartbeat and StreamsGroupDescribe against Kafka 4.4.

A member joins with a topology (source topic, a repartition topic, a changelog), first while
its source topic is missing (MISSING_SOURCE_TOPICS), then with it there: the coordinator
creates the internal topics (MISSING_INTERNAL_TOPICS meanwhile) and, once they exist, assigns
the tasks. StreamsGroupDescribe shows the group; the request checks answer Kafka's errors."""
from __future__ import annotations

import time
import uuid

import pytest

from tests.differential.framework import req
from tests.differential.wire import group_coordinator

pytestmark = pytest.mark.xdist_group("differential")

PROCESS = "11111111-2222-3333-4444-555555555555"


def _group(ex, tag):
    return f"g-{ex.topic_name(tag)}"


def _topology(source: str, app: str, epoch: int = 0, changelog_partitions: int = 0, regex=None):
    repart = f"{app}-by-key-repartition"
    changelog = f"{app}-store-changelog"
    return {"epoch": epoch, "subtopologies": [
        {"subtopology_id": "0", "source_topics": [source], "source_topic_regex": regex or [],
         "state_changelog_topics": [], "repartition_sink_topics": [repart], "repartition_source_topics": [],
         "copartition_groups": []},
        {"subtopology_id": "1", "source_topics": [], "source_topic_regex": [],
         "state_changelog_topics": [{"name": changelog, "partitions": changelog_partitions, "replication_factor": 0,
                                     "topic_configs": [{"key": "cleanup.policy", "value": "compact"}]}],
         "repartition_sink_topics": [],
         "repartition_source_topics": [{"name": repart, "partitions": 0, "replication_factor": 0, "topic_configs": [
             {"key": "cleanup.policy", "value": "delete"}, {"key": "retention.ms", "value": "-1"}]}],
         "copartition_groups": []},
    ]}


def _hb(group, v, member, epoch, topology=None, tasks=None, rebalance=30000, **kw):
    lists = None if tasks is None else [{"subtopology_id": s, "partitions": ps} for s, ps in tasks]
    fields = dict(group_id=group, member_id=member, member_epoch=epoch, endpoint_information_epoch=0,
                  instance_id=None, rack_id=None, rebalance_timeout_ms=rebalance if epoch == 0 else -1,
                  topology=topology, active_tasks=lists, standby_tasks=None if lists is None else [],
                  warmup_tasks=None if lists is None else [], process_id=PROCESS if epoch == 0 else None,
                  user_endpoint=None, client_tags=[] if epoch == 0 else None, task_offsets=None,
                  task_end_offsets=None, shutdown_application=False)
    fields.update(kw)
    return req(88, v, **fields)


def test_streams_group_heartbeat_errors(ex):
    for v in ex.versions(88):
        group = _group(ex, f"sg{v}")
        group_coordinator(ex, group)
        mid = uuid.uuid4().hex[:22]
        topo = _topology("src", "app")
        ex.send(88, v, _hb("", v, mid, 0, topo, []), scenario="empty group id")
        ex.send(88, v, _hb(group, v, "", 0, topo, []), scenario="empty member id")
        ex.send(88, v, _hb(group, v, mid, 0, None, []), scenario="joining without a topology")
        ex.send(88, v, _hb(group, v, mid, 0, topo, [], rebalance=-1), scenario="joining without a rebalance timeout")
        ex.send(88, v, _hb(group, v, mid, 0, topo, [("0", [0])]), scenario="joining with active tasks")
        ex.send(88, v, _hb(group, v, mid, 0, topo, [], standby_tasks=None), scenario="one task list null")
        ex.send(88, v, _hb(group, v, mid, -3, None), scenario="member epoch -3")
        ex.send(88, v, _hb(group, v, mid, -2, None), scenario="static leave without an instance id")
        ex.send(88, v, _hb(group, v, mid, 3, topo), scenario="a topology outside a join")
        ex.send(88, v, _hb(group, v, mid, 0, _topology("src", "app", changelog_partitions=3), []),
                scenario="a changelog topic with a partition count")
        ex.send(88, v, _hb(group, v, mid, 0, _topology("src", "app", regex=["s.*"]), []),
                scenario="a source topic regex")
        ex.send(88, v, _hb(group, v, mid, 5, None), scenario="unknown group, epoch 5")
        ex.send(88, v, _hb(group, v, mid, 0, topo, [], instance_id=""), scenario="empty instance id")


def _until_assigned(ex, v, group, mid):
    """Heartbeat on each side until the member holds its tasks (the internal topics are being
    created meanwhile); returns the last answers, compared."""
    answers = {}
    for s in ex.sides:
        epoch = s.state["epoch"]
        deadline = time.monotonic() + 30
        while True:
            r = s.request(88, v, _hb(group, v, mid, epoch))
            assert r.error_code == 0, (s.name, r)
            epoch = r.member_epoch
            if r.active_tasks:
                break
            assert time.monotonic() < deadline, f"{s.name}: no tasks: {r}"
            time.sleep(0.2)
        s.state["epoch"] = epoch
        answers[s.name] = r
    return answers


def test_streams_group_join_topology_and_describe(ex):
    v = max(ex.versions(88))
    app = ex.topic_name("app")
    source = ex.topic_name("src")
    group = app
    group_coordinator(ex, group)
    mid = uuid.uuid4().hex[:22]
    k, h = ex.send(88, v, _hb(group, v, mid, 0, _topology(source, app), []), scenario="join, source topic missing")
    assert 1 in [st.status_code for st in k.status], k
    ex.send(88, v, lambda s: _hb(group, v, mid, k.member_epoch if s.name == "kafka" else h.member_epoch),
            scenario="heartbeat, source topic still missing")
    ex.create_topic(source, partitions=3)
    k, h = ex.send(88, v, lambda s: _hb(group, v, mid, k.member_epoch if s.name == "kafka" else h.member_epoch),
                   scenario="heartbeat, source topic created: internal topics missing")
    for s, r in zip(ex.sides, (k, h)):
        s.state["epoch"] = r.member_epoch
    ex.wait_leaders(f"{app}-by-key-repartition", 3)
    ex.wait_leaders(f"{app}-store-changelog", 3)
    got = _until_assigned(ex, v, group, mid)
    ex.compare(88, v, got["kafka"], got["hourglass"], scenario="tasks assigned once the internal topics exist")
    # the internal topics as the topology asked for them
    for name in (f"{app}-by-key-repartition", f"{app}-store-changelog"):
        ex.send(32, 4, req(32, 4, resources=[{"resource_type": 2, "resource_name": name,
                                               "configuration_keys": ["cleanup.policy", "retention.ms"]}],
                           include_synonyms=False, include_documentation=False),
                scenario=f"configs of the created internal topic {name.rsplit('-', 2)[-2]}")
    for dv in ex.versions(89):
        ex.send(89, dv, req(89, dv, group_ids=[group, _group(ex, "none")], include_authorized_operations=False),
                scenario="describe the group and an unknown one")
    # the member's offsets: OffsetCommit checks its epoch (v9+), OffsetFetch too
    vc = max(ex.versions(8, lo=9))
    ex.send(8, vc, lambda s: _commit(group, source, vc, s.state["epoch"], mid), scenario="commit at the member epoch")
    ex.send(8, vc, lambda s: _commit(group, source, vc, s.state["epoch"] - 1, mid),
            scenario="commit at an older member epoch")
    ex.send(8, vc, lambda s: _commit(group, source, vc, s.state["epoch"], "nobody"), scenario="commit, unknown member")
    ex.send(8, vc, _commit(group, source, vc, -1, ""), scenario="admin commit to a non-empty streams group")
    vf = max(ex.versions(9, lo=9))
    for tag, member, delta in (("the member epoch", mid, 0), ("a stale member epoch", mid, -1),
                               ("an unknown member", "nobody", 0)):
        ex.send(9, vf, lambda s: req(9, vf, groups=[{"group_id": group, "member_id": member,
                                                     "member_epoch": s.state["epoch"] + delta,
                                                     "topics": [{"name": source, "partition_indexes": [0, 1],
                                                                 "topic_id": s.state["topic_ids"][source]}]}],
                                     require_stable=False), scenario=f"fetch offsets with {tag}")
    for dv in ex.versions(15, lo=5):
        ex.send(15, dv, req(15, dv, groups=[group], include_authorized_operations=False),
                scenario="DescribeGroups of a streams group")
    ex.send(42, max(ex.versions(42)), req(42, max(ex.versions(42)), groups_names=[group]),
            scenario="DeleteGroups of a non-empty streams group")
    other = uuid.uuid4().hex[:22]
    ex.send(88, v, _hb(group, v, other, 0, _topology(source, app, epoch=1), []),
            scenario="a second member with another topology")
    ex.send(88, v, lambda s: _hb(group, v, mid, s.state["epoch"] + 5), scenario="a member epoch ahead")
    ex.send(88, v, lambda s: _hb(group, v, mid, -1), scenario="leave")
    ex.send(88, v, _hb(group, v, mid, 2), scenario="heartbeat after leaving")
    dv = max(ex.versions(89))
    ex.send(89, dv, req(89, dv, group_ids=[group], include_authorized_operations=False),
            scenario="describe the empty group")
    ex.send(42, max(ex.versions(42)), req(42, max(ex.versions(42)), groups_names=[group]),
            scenario="DeleteGroups of the empty streams group")
    ex.send(89, dv, req(89, dv, group_ids=[group], include_authorized_operations=False),
            scenario="describe the deleted group")


def _commit(group, topic, v, epoch, member):
    return req(8, v, group_id=group, generation_id_or_member_epoch=epoch, member_id=member,
               group_instance_id=None, retention_time_ms=-1,
               topics=[{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 0,
                                                        "committed_leader_epoch": -1, "commit_timestamp": -1,
                                                        "committed_metadata": "m"}]}])
