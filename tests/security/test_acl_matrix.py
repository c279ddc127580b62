"""The ACL matrix against a running broker: for each served API, one principal allowed and one
denied, with the exact error code and where Kafka puts it.

One broker (subprocess) with a SASL_PLAINTEXT PLAIN listener and ``StandardAuthorizer``:
``User:admin`` is a super user; ``User:alice`` gets ALL on the topics, groups and transactional
ids whose names start with ``t-``, ``g-``, ``tx-`` (PREFIXED ACLs, created by admin with
CreateAcls), ``User:bob`` gets nothing. Requests go over the wire with Hourglass's own client
(``hourglass.cli.wire``) authenticated as each of them. Also here: DENY over ALLOW, LITERAL vs
PREFIXED, ``allow.everyone.if.no.acl.found`` both ways, and ACLs and SCRAM users surviving a
clean restart and a kill -9.
"""
from __future__ import annotations

import pytest

from hourglass.cli.wire import WireClient, WireError
from protocol.api_keys import APIS
from protocol.errors import ErrorCode as E
from protocol.records.record import build_batch
from tests.helpers.broker import BrokerProcess

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
        + " ".join(f'user_{u}="{p}"' for u, p in USERS.items()) + ";")
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
TOPIC, GROUP, TXN = "t-orders", "g-1", "tx-1"
ALL, ALLOW, DENY, LITERAL, PREFIXED = 2, 3, 2, 3, 4


def broker_overrides(**extra):
    return {"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS, "authorizer.class.name": AUTHORIZER,
            "super.users": "User:admin", "group.initial.rebalance.delay.ms": "0",
            "connection.failed.authentication.delay.ms": "0", **extra}


def make(api_key: int, version: int, **kw):
    """A request of API ``api_key`` from plain values; nested lists of dicts become the sub-structs."""
    return _build(APIS[api_key].request.cls, APIS[api_key].request.spec.fields, kw)


def _build(cls, fields, values: dict):
    by_name = {f.name: f for f in fields}
    out = {}
    for k, v in values.items():
        f = by_name[k]
        if f.is_struct and v is not None:
            sub = getattr(cls, f.elem)
            v = [_build(sub, f.fields, x) for x in v] if f.is_array else _build(sub, f.fields, v)
        out[k] = v
    return cls(**out)


def client(b: BrokerProcess, user: str, mechanism: str = "PLAIN", password: str | None = None) -> WireClient:
    module = "plain.PlainLoginModule" if mechanism == "PLAIN" else "scram.ScramLoginModule"
    return WireClient(b.bootstrap, f"{user}-client", props={
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
        "sasl.jaas.config": f'org.apache.kafka.common.security.{module} required username="{user}" '
                            f'password="{password or USERS[user]}";'})


def acl(rt, name, pt, principal, op=ALL, perm=ALLOW, host="*"):
    return dict(resource_type=rt, resource_name=name, resource_pattern_type=pt, principal=principal, host=host,
                operation=op, permission_type=perm)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = BrokerProcess(tmp_path_factory.mktemp("acl") / "data", broker_overrides()).start()
    with client(b, "admin") as admin:
        r = admin.request(30, 3, make(30, 3, creations=[
            acl(2, "t-", PREFIXED, "User:alice"), acl(3, "g-", PREFIXED, "User:alice"),
            acl(5, "tx-", PREFIXED, "User:alice")]))
        assert [x.error_code for x in r.results] == [0, 0, 0]
        r = admin.request(19, 7, make(19, 7, timeout_ms=5000, topics=[
            dict(name=n, num_partitions=1, replication_factor=1) for n in (TOPIC, "t-doomed", "t-records")]))
        assert [t.error_code for t in r.topics] == [0, 0, 0]
        batch = build_batch([(b"k", b"v", 1000)])
        admin.request(0, 9, make(0, 9, acks=-1, timeout_ms=5000, topic_data=[
            dict(name=TOPIC, partition_data=[dict(index=0, records=batch)])]))
    yield b
    b.stop()


@pytest.fixture(scope="module")
def alice(broker):
    with client(broker, "alice") as c:
        yield c


@pytest.fixture(scope="module")
def bob(broker):
    with client(broker, "bob") as c:
        yield c


def both(alice, bob, key, version, extract, **kw):
    """(what alice gets, what bob gets) for the same request."""
    req = make(key, version, **kw)
    return extract(alice.request(key, version, req)), extract(bob.request(key, version, req))


def p0(r):  # the first partition's error of a topics/partitions response
    t = r.responses[0] if hasattr(r, "responses") else r.topics[0]
    parts = getattr(t, "partition_responses", None) or getattr(t, "partitions", None)
    return parts[0].error_code


BATCH = build_batch([(b"k", b"v", 2000)])

CASES = [
    ("Produce", 0, 9, p0, dict(acks=-1, timeout_ms=5000, topic_data=[dict(name=TOPIC, partition_data=[
        dict(index=0, records=BATCH)])]), (0, E.TOPIC_AUTHORIZATION_FAILED)),
    ("Produce to an unknown topic hides it", 0, 9, p0, dict(acks=-1, timeout_ms=5000, topic_data=[dict(
        name="t-nope", partition_data=[dict(index=0, records=BATCH)])]),
     (E.UNKNOWN_TOPIC_OR_PARTITION, E.TOPIC_AUTHORIZATION_FAILED)),
    ("Fetch", 1, 12, p0, dict(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, topics=[
        dict(topic=TOPIC, partitions=[dict(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])]),
     (0, E.TOPIC_AUTHORIZATION_FAILED)),
    ("ListOffsets", 2, 7, p0, dict(replica_id=-1, topics=[dict(name=TOPIC, partitions=[
        dict(partition_index=0, timestamp=-1)])]), (0, E.TOPIC_AUTHORIZATION_FAILED)),
    ("Metadata", 3, 12, lambda r: r.topics[0].error_code, dict(topics=[dict(name=TOPIC)],
                                                               allow_auto_topic_creation=False),
     (0, E.TOPIC_AUTHORIZATION_FAILED)),
    ("Metadata auto-create", 3, 12, lambda r: r.topics[0].error_code,
     dict(topics=[dict(name="t-auto")], allow_auto_topic_creation=True), (0, E.TOPIC_AUTHORIZATION_FAILED)),
    ("OffsetCommit", 8, 8, p0, dict(group_id=GROUP, generation_id_or_member_epoch=-1, member_id="", topics=[
        dict(name=TOPIC, partitions=[dict(partition_index=0, committed_offset=1)])]),
     (0, E.GROUP_AUTHORIZATION_FAILED)),
    ("OffsetFetch v7", 9, 7, lambda r: r.error_code, dict(group_id=GROUP, topics=[
        dict(name=TOPIC, partition_indexes=[0])]), (0, E.GROUP_AUTHORIZATION_FAILED)),
    ("OffsetFetch v8", 9, 8, lambda r: r.groups[0].error_code, dict(groups=[dict(group_id=GROUP, topics=None)]),
     (0, E.GROUP_AUTHORIZATION_FAILED)),
    ("FindCoordinator group", 10, 4, lambda r: r.coordinators[0].error_code, dict(key_type=0, coordinator_keys=[GROUP]),
     (0, E.GROUP_AUTHORIZATION_FAILED)),
    ("FindCoordinator v3 transaction", 10, 3, lambda r: r.error_code, dict(key_type=1, key=TXN),
     (0, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)),
    ("JoinGroup", 11, 7, lambda r: r.error_code, dict(group_id="g-join", session_timeout_ms=10000,
                                                       rebalance_timeout_ms=10000, member_id="", protocol_type="consumer",
                                                       protocols=[dict(name="range", metadata=b"")]),
     (E.MEMBER_ID_REQUIRED, E.GROUP_AUTHORIZATION_FAILED)),
    ("Heartbeat", 12, 4, lambda r: r.error_code, dict(group_id=GROUP, generation_id=1, member_id="m"),
     (E.UNKNOWN_MEMBER_ID, E.GROUP_AUTHORIZATION_FAILED)),
    ("LeaveGroup", 13, 4, lambda r: r.error_code, dict(group_id=GROUP, members=[dict(member_id="m")]),
     (0, E.GROUP_AUTHORIZATION_FAILED)),
    ("SyncGroup", 14, 5, lambda r: r.error_code, dict(group_id=GROUP, generation_id=1, member_id="m",
                                                       protocol_type="consumer", protocol_name="range", assignments=[]),
     (E.UNKNOWN_MEMBER_ID, E.GROUP_AUTHORIZATION_FAILED)),
    ("DescribeGroups", 15, 5, lambda r: r.groups[0].error_code, dict(groups=[GROUP]), (0, E.GROUP_AUTHORIZATION_FAILED)),
    ("CreateTopics", 19, 7, lambda r: r.topics[0].error_code, dict(timeout_ms=5000, topics=[
        dict(name="t-created", num_partitions=1, replication_factor=1)]), (0, E.TOPIC_AUTHORIZATION_FAILED)),
    ("DeleteRecords", 21, 2, p0, dict(timeout_ms=5000, topics=[dict(name="t-records", partitions=[
        dict(partition_index=0, offset=0)])]), (0, E.TOPIC_AUTHORIZATION_FAILED)),
    ("InitProducerId idempotent", 22, 4, lambda r: r.error_code, dict(transactional_id=None, transaction_timeout_ms=-1,
                                                                        producer_id=-1, producer_epoch=-1),
     (0, E.CLUSTER_AUTHORIZATION_FAILED)),
    ("OffsetForLeaderEpoch", 23, 4, p0, dict(replica_id=-1, topics=[dict(topic=TOPIC, partitions=[
        dict(partition=0, current_leader_epoch=-1, leader_epoch=0)])]), (0, E.TOPIC_AUTHORIZATION_FAILED)),
    ("AddPartitionsToTxn v3", 24, 3, lambda r: r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code,
     dict(v3_and_below_transactional_id=TXN, v3_and_below_producer_id=1, v3_and_below_producer_epoch=0,
          v3_and_below_topics=[dict(name=TOPIC, partitions=[0])]),
     (E.INVALID_PRODUCER_ID_MAPPING, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)),
    ("AddOffsetsToTxn", 25, 3, lambda r: r.error_code, dict(transactional_id=TXN, producer_id=1, producer_epoch=0,
                                                            group_id=GROUP),
     (E.INVALID_PRODUCER_ID_MAPPING, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)),
    ("EndTxn", 26, 3, lambda r: r.error_code, dict(transactional_id=TXN, producer_id=1, producer_epoch=0, committed=True),
     (E.INVALID_PRODUCER_ID_MAPPING, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)),
    ("TxnOffsetCommit", 28, 3, p0, dict(transactional_id=TXN, group_id=GROUP, producer_id=1, producer_epoch=0,
                                        generation_id=-1, member_id="", topics=[dict(name=TOPIC, partitions=[
                                            dict(partition_index=0, committed_offset=0)])]),
     (E.INVALID_PRODUCER_ID_MAPPING, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)),
    ("DescribeConfigs topic", 32, 4, lambda r: r.results[0].error_code, dict(resources=[
        dict(resource_type=2, resource_name=TOPIC, configuration_keys=None)]), (0, E.TOPIC_AUTHORIZATION_FAILED)),
    ("DescribeConfigs broker", 32, 4, lambda r: r.results[0].error_code, dict(resources=[
        dict(resource_type=4, resource_name="1", configuration_keys=None)]),
     (E.CLUSTER_AUTHORIZATION_FAILED, E.CLUSTER_AUTHORIZATION_FAILED)),
    ("AlterConfigs", 33, 2, lambda r: r.responses[0].error_code, dict(validate_only=True, resources=[
        dict(resource_type=2, resource_name=TOPIC, configs=[dict(name="retention.ms", value="1000")])]),
     (0, E.TOPIC_AUTHORIZATION_FAILED)),
    ("IncrementalAlterConfigs", 44, 1, lambda r: r.responses[0].error_code, dict(validate_only=True, resources=[
        dict(resource_type=2, resource_name=TOPIC, configs=[dict(name="retention.ms", config_operation=0,
                                                                 value="1000")])]),
     (0, E.TOPIC_AUTHORIZATION_FAILED)),
    ("CreatePartitions", 37, 3, lambda r: r.results[0].error_code, dict(timeout_ms=5000, validate_only=True, topics=[
        dict(name=TOPIC, count=2, assignments=None)]), (0, E.TOPIC_AUTHORIZATION_FAILED)),
    ("DeleteGroups", 42, 2, lambda r: r.results[0].error_code, dict(groups_names=["g-none"]),
     (E.GROUP_ID_NOT_FOUND, E.GROUP_AUTHORIZATION_FAILED)),
    ("OffsetDelete", 47, 0, lambda r: r.error_code, dict(group_id="g-none", topics=[
        dict(name=TOPIC, partitions=[dict(partition_index=0)])]), (E.GROUP_ID_NOT_FOUND, E.GROUP_AUTHORIZATION_FAILED)),
    ("DescribeProducers", 61, 0, p0, dict(topics=[dict(name=TOPIC, partition_indexes=[0])]),
     (0, E.TOPIC_AUTHORIZATION_FAILED)),
    ("DescribeTransactions", 65, 0, lambda r: r.transaction_states[0].error_code, dict(transactional_ids=[TXN]),
     (E.TRANSACTIONAL_ID_NOT_FOUND, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)),
    ("DescribeTopicPartitions", 75, 0, lambda r: r.topics[0].error_code, dict(
        topics=[dict(name=TOPIC)], response_partition_limit=100, cursor=None), (0, E.TOPIC_AUTHORIZATION_FAILED)),
    ("ConsumerGroupHeartbeat", 68, 1, lambda r: r.error_code, dict(
        group_id="g-cg", member_id="m-matrix", member_epoch=0, rebalance_timeout_ms=10000,
        subscribed_topic_names=[TOPIC], topic_partitions=[]), (0, E.GROUP_AUTHORIZATION_FAILED)),
    ("ConsumerGroupHeartbeat undescribable topic", 68, 1, lambda r: r.error_code, dict(
        group_id="g-cg2", member_id="m-matrix2", member_epoch=0, rebalance_timeout_ms=10000,
        subscribed_topic_names=[TOPIC, "u-hidden"], topic_partitions=[]),
     (E.TOPIC_AUTHORIZATION_FAILED, E.GROUP_AUTHORIZATION_FAILED)),
    ("ConsumerGroupDescribe", 69, 1, lambda r: r.groups[0].error_code, dict(group_ids=["g-none"]),
     (E.GROUP_ID_NOT_FOUND, E.GROUP_AUTHORIZATION_FAILED)),
    ("DescribeConfigs group", 32, 4, lambda r: r.results[0].error_code, dict(resources=[
        dict(resource_type=32, resource_name=GROUP, configuration_keys=None)]), (0, E.GROUP_AUTHORIZATION_FAILED)),
    ("IncrementalAlterConfigs group", 44, 1, lambda r: r.responses[0].error_code, dict(validate_only=True, resources=[
        dict(resource_type=32, resource_name=GROUP, configs=[dict(name="share.auto.offset.reset", config_operation=0,
                                                                  value="earliest")])]),
     (0, E.GROUP_AUTHORIZATION_FAILED)),
    ("ShareGroupHeartbeat", 76, 1, lambda r: r.error_code, dict(
        group_id="g-share", member_id="m-share-matrix", member_epoch=0, subscribed_topic_names=[TOPIC]),
     (0, E.GROUP_AUTHORIZATION_FAILED)),
    ("ShareGroupHeartbeat undescribable topic", 76, 1, lambda r: r.error_code, dict(
        group_id="g-share2", member_id="m-share-matrix2", member_epoch=0, subscribed_topic_names=[TOPIC, "u-hidden"]),
     (E.TOPIC_AUTHORIZATION_FAILED, E.GROUP_AUTHORIZATION_FAILED)),
    ("ShareGroupDescribe", 77, 1, lambda r: r.groups[0].error_code, dict(group_ids=["g-none"]),
     (E.GROUP_ID_NOT_FOUND, E.GROUP_AUTHORIZATION_FAILED)),
    ("ShareFetch", 78, 1, lambda r: r.error_code, dict(
        group_id="g-none", member_id="m-none", share_session_epoch=1, max_wait_ms=0, min_bytes=0, max_records=10,
        batch_size=10, topics=[], forgotten_topics_data=[]), (E.SHARE_SESSION_NOT_FOUND, E.GROUP_AUTHORIZATION_FAILED)),
    ("ShareAcknowledge", 79, 1, lambda r: r.error_code, dict(
        group_id="g-none", member_id="m-none", share_session_epoch=1, topics=[]),
     (E.SHARE_SESSION_NOT_FOUND, E.GROUP_AUTHORIZATION_FAILED)),
    ("DescribeShareGroupOffsets", 90, 0, lambda r: r.groups[0].error_code, dict(
        groups=[dict(group_id="g-none", topics=None)]), (0, E.GROUP_AUTHORIZATION_FAILED)),  # unknown: empty
    ("AlterShareGroupOffsets", 91, 0, lambda r: r.responses[0].partitions[0].error_code, dict(
        group_id="g-none-alter", topics=[dict(topic_name=TOPIC, partitions=[dict(partition_index=0, start_offset=0)])]),
     (0, E.GROUP_AUTHORIZATION_FAILED)),
    ("DeleteShareGroupOffsets", 92, 0, lambda r: r.error_code, dict(group_id="g-none-delete", topics=[
        dict(topic_name=TOPIC)]), (0, E.GROUP_AUTHORIZATION_FAILED)),
    ("DeleteTopics", 20, 6, lambda r: r.responses[0].error_code, dict(timeout_ms=5000, topics=[
        dict(name="t-doomed")]), (0, E.TOPIC_AUTHORIZATION_FAILED)),
]


@pytest.mark.parametrize("name,key,version,extract,kw,want", CASES, ids=[c[0] for c in CASES])
def test_allowed_and_denied(broker, alice, bob, name, key, version, extract, kw, want):
    # bob first, so the allowed call of a destructive API (DeleteTopics) cannot change bob's answer
    got_bob = extract(bob.request(key, version, make(key, version, **kw)))
    got_alice = extract(alice.request(key, version, make(key, version, **kw)))
    assert (got_alice, got_bob) == want


@pytest.mark.parametrize("key,version,kw,extract", [
    (29, 3, dict(resource_type_filter=1, pattern_type_filter=1, operation=1, permission_type=1), lambda r: r.error_code),
    (30, 3, dict(creations=[acl(2, "x", LITERAL, "User:bob")]), lambda r: r.results[0].error_code),
    (31, 3, dict(filters=[dict(resource_type_filter=2, resource_name_filter="x", pattern_type_filter=3, operation=1,
                               permission_type=1)]), lambda r: r.filter_results[0].error_code),
    (50, 0, dict(users=None), lambda r: r.error_code),
    (51, 0, dict(deletions=[], upsertions=[]), lambda r: 0),
])
def test_security_admin_apis_need_cluster_rights(broker, alice, key, version, kw, extract):
    with client(broker, "admin") as admin:
        assert extract(admin.request(key, version, make(key, version, **kw))) == 0
    assert extract(alice.request(key, version, make(key, version, **kw))) in (0, E.CLUSTER_AUTHORIZATION_FAILED)
    if key != 51:
        assert extract(alice.request(key, version, make(key, version, **kw))) == E.CLUSTER_AUTHORIZATION_FAILED


def test_listing_filters_silently(broker, alice, bob):
    alice.request(8, 8, make(8, 8, group_id=GROUP, generation_id_or_member_epoch=-1, member_id="", topics=[
        dict(name=TOPIC, partitions=[dict(partition_index=0, committed_offset=1)])]))  # the group exists
    md = lambda c: sorted(t.name for t in c.request(3, 12, make(3, 12, topics=None)).topics)  # noqa: E731
    assert TOPIC in md(alice) and md(bob) == []
    assert [g.group_id for g in bob.request(16, 4, make(16, 4, states_filter=[])).groups] == []
    assert GROUP in [g.group_id for g in alice.request(16, 4, make(16, 4, states_filter=[])).groups]
    lt = bob.request(66, 0, make(66, 0, state_filters=[], producer_id_filters=[]))
    assert lt.error_code == 0 and lt.transaction_states == []


def test_authorized_operations(broker, alice):
    r = alice.request(3, 10, make(3, 10, topics=[dict(name=TOPIC)], include_cluster_authorized_operations=True,
                                  include_topic_authorized_operations=True, allow_auto_topic_creation=False))
    topic_ops = {3, 4, 5, 6, 7, 8, 10, 11}  # ALL on the topic: every supported topic operation
    assert {i for i in range(32) if r.topics[0].topic_authorized_operations >> i & 1} == topic_ops
    assert r.cluster_authorized_operations == 0
    with client(broker, "admin") as admin:
        dc = admin.request(60, 1, make(60, 1, include_cluster_authorized_operations=True, endpoint_type=1))
        assert {i for i in range(32) if dc.cluster_authorized_operations >> i & 1} == {5, 7, 8, 9, 10, 11, 12}
    g = alice.request(15, 5, make(15, 5, groups=[GROUP], include_authorized_operations=True))
    assert {i for i in range(32) if g.groups[0].authorized_operations >> i & 1} == {3, 6, 8}


def test_consumer_group_regex_and_describe_keep_to_describable_topics(broker, alice, bob):
    """A regex resolution keeps the topics the heartbeat's caller may describe; describing a
    group whose assignments name a topic the caller may not describe answers 29, no members."""
    hb = lambda c, epoch: c.request(68, 1, make(68, 1, group_id="shared-g", member_id="m-regex",  # noqa: E731
                                                member_epoch=epoch, rebalance_timeout_ms=10000,
                                                subscribed_topic_regex="t-orders|u-hidden", topic_partitions=[]))
    with client(broker, "admin") as admin:
        admin.request(19, 7, make(19, 7, timeout_ms=5000, topics=[
            dict(name="u-hidden", num_partitions=1, replication_factor=1)]))
        r = admin.request(30, 3, make(30, 3, creations=[
            acl(3, "shared-g", LITERAL, "User:alice", op=3), acl(3, "shared-g", LITERAL, "User:bob", op=8)]))
        assert [x.error_code for x in r.results] == [0, 0]
        r = hb(alice, 0)
        assert r.error_code == 0
        r = hb(alice, r.member_epoch)
        assert r.error_code == 0
        d = admin.request(69, 1, make(69, 1, group_ids=["shared-g"], include_authorized_operations=True)).groups[0]
        assert d.error_code == 0
        assert {tp.topic_name for m in d.members for tp in m.target_assignment.topic_partitions} == {TOPIC}
    d = bob.request(69, 1, make(69, 1, group_ids=["shared-g"], include_authorized_operations=True)).groups[0]
    assert (d.error_code, d.members) == (E.TOPIC_AUTHORIZATION_FAILED, [])
    d = alice.request(69, 1, make(69, 1, group_ids=["shared-g"], include_authorized_operations=True)).groups[0]
    assert d.error_code == 0 and {i for i in range(32) if d.authorized_operations >> i & 1} == {3, 8}  # READ implies DESCRIBE


def test_share_group_keeps_to_readable_and_describable_topics(broker, alice, bob):
    """A share-group member may subscribe to a topic it can describe, but ShareFetch answers
    TOPIC_AUTHORIZATION_FAILED for its partitions without READ; a describer who may not
    describe the assigned topic gets the group as 29 with no members."""
    gid, mid = "g-share-fetch", "m-share-fetch"
    with client(broker, "admin") as admin:
        r = admin.request(19, 7, make(19, 7, timeout_ms=5000, topics=[
            dict(name="u-desc", num_partitions=1, replication_factor=1)]))
        tid = r.topics[0].topic_id
        r = admin.request(30, 3, make(30, 3, creations=[
            acl(2, "u-desc", LITERAL, "User:alice", op=8), acl(3, gid, LITERAL, "User:bob", op=8)]))
        assert [x.error_code for x in r.results] == [0, 0]
        # each change assigned at once (Kafka 4.4 waits share.assignment.interval.ms between two)
        r = admin.request(44, 1, make(44, 1, validate_only=False, resources=[dict(
            resource_type=32, resource_name=gid, configs=[dict(name="share.assignment.interval.ms",
                                                               config_operation=0, value="0")])]))
        assert [x.error_code for x in r.responses] == [0]
        epoch = 0
        for _ in range(3):  # join, then heartbeat until the assignment names the topic
            r = alice.request(76, 1, make(76, 1, group_id=gid, member_id=mid, member_epoch=epoch,
                                          subscribed_topic_names=["u-desc"] if epoch == 0 else None))
            assert r.error_code == 0
            epoch = r.member_epoch
            d = admin.request(77, 1, make(77, 1, group_ids=[gid], include_authorized_operations=False)).groups[0]
            if any(m.assignment.topic_partitions for m in d.members):
                break
        assert {tp.topic_name for m in d.members for tp in m.assignment.topic_partitions} == {"u-desc"}
    f = alice.request(78, 1, make(78, 1, group_id=gid, member_id=mid, share_session_epoch=0, max_wait_ms=0,
                                  min_bytes=0, max_records=10, batch_size=10, forgotten_topics_data=[],
                                  topics=[dict(topic_id=tid, partitions=[dict(partition_index=0,
                                                                              acknowledgement_batches=[])])]))
    assert f.error_code == 0
    assert [(t.topic_id, p.error_code) for t in f.responses for p in t.partitions] == \
        [(tid, E.TOPIC_AUTHORIZATION_FAILED)]
    d = bob.request(77, 1, make(77, 1, group_ids=[gid], include_authorized_operations=True)).groups[0]
    assert (d.error_code, d.members) == (E.TOPIC_AUTHORIZATION_FAILED, [])


def test_deny_wins_and_literal_vs_prefixed(broker, alice):
    with client(broker, "admin") as admin:
        admin.request(30, 3, make(30, 3, creations=[
            acl(2, "t-secret", LITERAL, "User:alice", op=3, perm=DENY),      # READ denied on one topic
            acl(2, "t-secret", LITERAL, "User:alice", op=4, perm=ALLOW)]))   # WRITE explicitly allowed too
        admin.request(19, 7, make(19, 7, timeout_ms=5000, topics=[dict(name="t-secret", num_partitions=1,
                                                                        replication_factor=1),
                                                                   dict(name="t-secret2", num_partitions=1,
                                                                        replication_factor=1)]))
    fetch = lambda t: p0(alice.request(1, 12, make(1, 12, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1000,  # noqa: E731
                                                    topics=[dict(topic=t, partitions=[dict(partition=0, fetch_offset=0,
                                                                                           partition_max_bytes=1000)])])))
    assert fetch("t-secret") == E.TOPIC_AUTHORIZATION_FAILED   # DENY READ beats the PREFIXED ALLOW ALL
    assert fetch("t-secret2") == 0                             # the LITERAL DENY is for that name only
    produce = alice.request(0, 9, make(0, 9, acks=-1, timeout_ms=5000, topic_data=[
        dict(name="t-secret", partition_data=[dict(index=0, records=BATCH)])]))
    assert p0(produce) == 0                                    # WRITE is still allowed
    # DESCRIBE is implied by the ALLOWs; the DENY on READ does not deny it (Kafka)
    assert alice.request(3, 12, make(3, 12, topics=[dict(name="t-secret")])).topics[0].error_code == 0


def test_allow_everyone_if_no_acl_found_both_ways(tmp_path):
    for allow, want in (("true", 0), ("false", E.TOPIC_AUTHORIZATION_FAILED)):
        b = BrokerProcess(tmp_path / allow, broker_overrides(**{"allow.everyone.if.no.acl.found": allow})).start()
        try:
            with client(b, "admin") as admin:
                admin.request(30, 3, make(30, 3, creations=[acl(2, "guarded", LITERAL, "User:alice", op=ALL)]))
                admin.request(19, 7, make(19, 7, timeout_ms=5000, topics=[
                    dict(name=n, num_partitions=1, replication_factor=1) for n in ("open", "guarded")]))
            with client(b, "bob") as bob:
                md = bob.request(3, 12, make(3, 12, topics=[dict(name="open"), dict(name="guarded")]))
                assert [t.error_code for t in md.topics] == [want, E.TOPIC_AUTHORIZATION_FAILED]
        finally:
            b.stop()


def test_acls_and_scram_users_survive_restart_and_kill_9(tmp_path):
    import hashlib
    b = BrokerProcess(tmp_path / "data", broker_overrides(
        **{"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config":
           "org.apache.kafka.common.security.scram.ScramLoginModule required;"})).start()
    try:
        salt = b"carol-salt-0123456789"
        with client(b, "admin") as admin:
            admin.request(30, 3, make(30, 3, creations=[acl(2, "c-", PREFIXED, "User:carol", op=ALL)]))
            r = admin.request(51, 0, make(51, 0, deletions=[], upsertions=[dict(
                name="carol", mechanism=1, iterations=4096, salt=salt,
                salted_password=hashlib.pbkdf2_hmac("sha256", b"carol-secret", salt, 4096))]))
            assert r.results[0].error_code == 0
        for how in ("restart", "kill -9"):
            b.restart(crash=how == "kill -9")
            with client(b, "carol", "SCRAM-SHA-256", "carol-secret") as carol:
                md = carol.request(3, 12, make(3, 12, topics=[dict(name="c-topic")], allow_auto_topic_creation=True))
                assert md.topics[0].error_code == 0, how  # CREATE and DESCRIBE from the prefixed ACL
                md = carol.request(3, 12, make(3, 12, topics=[dict(name="other")], allow_auto_topic_creation=True))
                assert md.topics[0].error_code == E.TOPIC_AUTHORIZATION_FAILED
            with pytest.raises(WireError, match="Authentication failed"):
                client(b, "carol", "SCRAM-SHA-256", "wrong")
    finally:
        b.stop()


def _elected(r) -> int:
    """ElectLeaders' verdict on the one partition asked: 0 when allowed (no election needed)."""
    e = r.replica_election_results[0].partition_result[0].error_code
    return 0 if e == E.ELECTION_NOT_NEEDED else e


def test_operator_apis_need_cluster_rights(broker, alice, bob):
    """DescribeLogDirs, AlterReplicaLogDirs, ElectLeaders, the reassignments and DescribeQuorum
    need DESCRIBE or ALTER on the cluster (Kafka's checks, each error where Kafka puts it);
    StreamsGroupTopologyDescriptionUpdate needs READ on the group."""
    cases = [
        (35, 4, dict(topics=None), lambda r: r.error_code),
        (35, 1, dict(topics=None), lambda r: 0 if r.results else E.CLUSTER_AUTHORIZATION_FAILED),
        (34, 2, dict(dirs=[dict(path=str(broker.data_dir), topics=[dict(name=TOPIC, partitions=[0])])]),
         lambda r: r.results[0].partitions[0].error_code),
        (43, 2, dict(election_type=0, timeout_ms=5000, topic_partitions=[dict(topic=TOPIC, partitions=[0])]), _elected),
        (43, 0, dict(timeout_ms=5000, topic_partitions=[dict(topic=TOPIC, partitions=[0])]), _elected),
        (45, 1, dict(timeout_ms=5000, topics=[dict(name=TOPIC, partitions=[dict(partition_index=0, replicas=[1])])]),
         lambda r: r.error_code or r.responses[0].partitions[0].error_code),
        (46, 0, dict(timeout_ms=5000, topics=None), lambda r: r.error_code),
        (55, 2, dict(topics=[dict(topic_name="__cluster_metadata", partitions=[dict(partition_index=0)])]),
         lambda r: r.error_code),
    ]
    with client(broker, "admin") as admin:
        for key, version, kw, extract in cases:
            assert extract(admin.request(key, version, make(key, version, **kw))) == 0, (key, version)
            assert extract(alice.request(key, version, make(key, version, **kw))) == E.CLUSTER_AUTHORIZATION_FAILED, (
                key, version)
    kw = dict(group_id=GROUP, member_id="m", topology_epoch=1, topology_description=dict(subtopologies=[],
                                                                                          global_stores=[]))
    assert both(alice, bob, 93, 0, lambda r: r.error_code, **kw) == (E.UNSUPPORTED_VERSION, E.GROUP_AUTHORIZATION_FAILED)
