"""Streams group records (KIP-1071) in Hourglass's ``__consumer_offsets``, read by Kafka 4.4's
own ``DumpLogSegments --offsets-decoder``: every record type we write (group metadata, topology,
member metadata, target assignment and its epoch, current assignment) decodes without error and
shows the fields we wrote; a deleted group's records are tombstones."""
from __future__ import annotations

import json
import uuid

from hourglass.cli.wire import WireClient
from protocol.messages.delete_groups import DeleteGroupsRequest
from protocol.messages.streams_group_heartbeat import StreamsGroupHeartbeatRequest as HB
from tests.differential import kafka_dump as KD

OVERRIDES = {"group.streams.initial.rebalance.delay.ms": 0, "group.streams.session.timeout.ms": 45000,
             "group.streams.heartbeat.interval.ms": 500}


def _info(name, partitions=0, configs=()):
    return HB.Topology.Subtopology.TopicInfo(name=name, partitions=partitions, replication_factor=0, topic_configs=[
        HB.KeyValue(key=k, value=v) for k, v in configs])


def _topology(source, app):
    S = HB.Topology.Subtopology
    repart = f"{app}-by-key-repartition"
    return HB.Topology(epoch=0, subtopologies=[
        S(subtopology_id="0", source_topics=[source], source_topic_regex=[], state_changelog_topics=[],
          repartition_sink_topics=[repart], repartition_source_topics=[], copartition_groups=[]),
        S(subtopology_id="1", source_topics=[source], source_topic_regex=[],
          state_changelog_topics=[_info(f"{app}-store-changelog", 0, [("cleanup.policy", "compact")])],
          repartition_sink_topics=[], repartition_source_topics=[_info(repart, 0, [("retention.ms", "-1")])],
          copartition_groups=[S.CopartitionGroup(source_topics=[0], source_topic_regex=[],
                                                 repartition_source_topics=[0])]),
    ])


def _hb(w, group, member, epoch, topology=None, owned=None):
    lists = None if owned is None else [HB.TaskIds(subtopology_id=s, partitions=sorted(ps))
                                        for s, ps in sorted(owned.items()) if ps]
    return w.request(88, 1, HB(
        group_id=group, member_id=member, member_epoch=epoch, endpoint_information_epoch=0,
        instance_id=f"inst-{member}" if epoch == 0 else None, rack_id="rack-1" if epoch == 0 else None,
        rebalance_timeout_ms=30000 if epoch == 0 else -1, topology=topology, active_tasks=lists,
        standby_tasks=None if lists is None else [], warmup_tasks=None if lists is None else [],
        process_id=f"proc-{member}" if epoch == 0 else None,
        user_endpoint=HB.Endpoint(host="app.local", port=7070) if epoch == 0 else None,
        client_tags=[HB.KeyValue(key="zone", value="z1")] if epoch == 0 else None))


def _records(data_dir):
    logs = sorted(p for p in data_dir.glob("__consumer_offsets-*/*.log") if p.stat().st_size)
    d = KD.dump(logs, "--deep-iteration", "--offsets-decoder")
    assert d.returncode == 0 and d.complaints() == [], d.stderr
    assert "Error at offset" not in d.stdout and "Unknown record type" not in d.stdout, d.stdout[-3000:]
    return [r for fd in d.files.values() for b in fd.batches for r in b.records]


def test_dump_log_segments_decodes_streams_group_records(broker_factory):
    b = broker_factory(OVERRIDES)
    source, app = f"src-{uuid.uuid4().hex[:6]}", f"app-{uuid.uuid4().hex[:6]}"
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic(source, 2, 1)])[source].result(20)
    with WireClient(b.bootstrap) as w:
        r = _hb(w, app, "m1", 0, _topology(source, app), owned={})
        assert r.error_code == 0, r
        epoch, owned = r.member_epoch, {}
        for _ in range(20):  # until the internal topics exist and the tasks are assigned
            r = _hb(w, app, "m1", epoch, owned=owned)
            assert r.error_code == 0, r
            epoch = r.member_epoch
            if r.active_tasks is not None:
                owned = {t.subtopology_id: set(t.partitions) for t in r.active_tasks}
            if sum(len(p) for p in owned.values()) == 4:
                break
        assert owned == {"0": {0, 1}, "1": {0, 1}}, owned
    b.stop()
    records = _records(b.data_dir)
    by_type: dict = {}
    for r in records:
        key = json.loads(r.key)
        if key["data"].get("groupId") == app:
            by_type.setdefault(int(key["type"]), []).append((key, None if r.payload in (None, "<DELETE>") else
                                                             json.loads(r.payload)))
    assert {17, 19, 20, 21, 22, 23} <= set(by_type), sorted(by_type)
    meta = by_type[17][-1][1]
    assert meta["version"] == "0" and meta["data"]["epoch"] == epoch
    topo = by_type[23][-1][1]["data"]
    assert [s["subtopologyId"] for s in topo["subtopologies"]] == ["0", "1"]
    s1 = topo["subtopologies"][1]
    assert s1["stateChangelogTopics"] == [{"name": f"{app}-store-changelog", "partitions": 0,
                                          "replicationFactor": 0,
                                          "topicConfigs": [{"key": "cleanup.policy", "value": "compact"}]}]
    assert s1["repartitionSourceTopics"][0]["name"] == f"{app}-by-key-repartition"
    assert s1["copartitionGroups"] == [{"sourceTopics": [0], "sourceTopicRegex": [], "repartitionSourceTopics": [0]}]
    member = by_type[19][-1]
    assert member[0]["data"]["memberId"] == "m1"
    assert {k: member[1]["data"][k] for k in ("instanceId", "rackId", "processId", "userEndpoint", "clientTags",
                                              "rebalanceTimeoutMs", "topologyEpoch")} == {
        "instanceId": "inst-m1", "rackId": "rack-1", "processId": "proc-m1",
        "userEndpoint": {"host": "app.local", "port": 7070}, "clientTags": [{"key": "zone", "value": "z1"}],
        "rebalanceTimeoutMs": 30000, "topologyEpoch": 0}
    assert by_type[20][-1][1]["data"]["assignmentEpoch"] == epoch
    target = by_type[21][-1][1]["data"]
    assert [(t["subtopologyId"], t["partitions"]) for t in target["activeTasks"]] == [("0", [0, 1]), ("1", [0, 1])]
    current = by_type[22][-1][1]["data"]
    assert (current["memberEpoch"], current["state"]) == (epoch, 0)
    assert [(t["subtopologyId"], t["partitions"], t["assignmentEpochs"]) for t in current["activeTasks"]] == [
        ("0", [0, 1], [epoch, epoch]), ("1", [0, 1], [epoch, epoch])]

    # the member leaves and the group is deleted: its records end as tombstones
    b.start()
    with WireClient(b.bootstrap) as w:
        assert _hb(w, app, "m1", -1).error_code == 0
        r = w.request(42, 2, DeleteGroupsRequest(groups_names=[app]))
        assert [(x.group_id, x.error_code) for x in r.results] == [(app, 0)]
    b.stop()
    last: dict = {}
    for r in _records(b.data_dir):
        key = json.loads(r.key)
        if key["data"].get("groupId") == app and int(key["type"]) >= 17:
            last[(int(key["type"]), key["data"].get("memberId"))] = r.payload
    assert last and all(p in (None, "<DELETE>") for p in last.values()), last
