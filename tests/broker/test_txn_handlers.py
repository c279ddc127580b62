"""The transaction APIs over the wire, with exact requests (tests/helpers/raw.py) against a
broker process: every bad input of issue 17 gets Kafka's error code for the request version
and writes nothing (the data partition, ``__transaction_state`` and ``__consumer_offsets``
keep their end offsets), and the happy path leaves what Kafka leaves.

Versions matter here: PRODUCER_FENCED is INVALID_PRODUCER_EPOCH for older requests, and a
transactional batch to a partition never added is INVALID_TXN_STATE up to Produce v10 and
TRANSACTION_ABORTABLE at v11 (Kafka 4's AddPartitionsToTxnManager).
"""
from __future__ import annotations

import time

import pytest

from broker.groups.internal_topics import partition_for
from protocol.errors import ErrorCode as E
from protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest
from protocol.messages.add_partitions_to_txn import AddPartitionsToTxnRequest as APT
from protocol.messages.api_versions import ApiVersionsRequest
from protocol.messages.create_topics import CreateTopicsRequest as CT
from protocol.messages.describe_producers import DescribeProducersRequest
from protocol.messages.describe_transactions import DescribeTransactionsRequest
from protocol.messages.end_txn import EndTxnRequest
from protocol.messages.find_coordinator import FindCoordinatorRequest
from protocol.messages.init_producer_id import InitProducerIdRequest
from protocol.messages.join_group import JoinGroupRequest
from protocol.messages.list_offsets import ListOffsetsRequest as LO
from protocol.messages.list_transactions import ListTransactionsRequest
from protocol.messages.offset_fetch import OffsetFetchRequest
from protocol.messages.produce import ProduceRequest
from protocol.messages.sync_group import SyncGroupRequest
from protocol.messages.txn_offset_commit import TxnOffsetCommitRequest as TOC
from protocol.messages.write_txn_markers import WriteTxnMarkersRequest as WTM
from protocol.records.record import build_batch
from tests.helpers.raw import RawClient

TOPIC = "txn-wire"
STATE = "__transaction_state"
OFFSETS = "__consumer_offsets"
OVERRIDES = {"transaction.state.log.num.partitions": 3, "offsets.topic.num.partitions": 3,
             "group.initial.rebalance.delay.ms": 0}


@pytest.fixture
def client(broker_factory):
    b = broker_factory(OVERRIDES)
    c = RawClient(b.bootstrap)
    r = c.request(19, 4, CT(topics=[CT.CreatableTopic(name=TOPIC, num_partitions=2, replication_factor=1)],
                            timeout_ms=5000))
    assert r.topics[0].error_code == 0
    yield c
    c.close()


def end_offsets(c, topic, partitions) -> list[int]:
    r = c.request(2, 2, LO(replica_id=-1, isolation_level=0, topics=[LO.ListOffsetsTopic(name=topic, partitions=[
        LO.ListOffsetsTopic.ListOffsetsPartition(partition_index=p, timestamp=-1) for p in partitions])]))
    return [p.offset if p.error_code == 0 else None for p in r.topics[0].partitions]


def written(c) -> tuple:
    """End offsets of everything a transaction could write to."""
    return (tuple(end_offsets(c, TOPIC, [0, 1])), tuple(end_offsets(c, STATE, range(3))),
            tuple(end_offsets(c, OFFSETS, range(3))))


def init(c, tid, timeout=60000, version=4, pid=-1, epoch=-1):
    body = InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=timeout)
    if version >= 3:
        body.producer_id, body.producer_epoch = pid, epoch
    return c.request(22, version, body)


def add(c, tid, pid, epoch, partitions, version=3):
    topics = {}
    for t, p in partitions:
        topics.setdefault(t, []).append(p)
    r = c.request(24, version, APT(v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid,
                                   v3_and_below_producer_epoch=epoch, v3_and_below_topics=[
                                       APT.AddPartitionsToTxnTopic(name=t, partitions=ps) for t, ps in topics.items()]))
    return {(t.name, p.partition_index): p.partition_error_code
            for t in r.results_by_topic_v3_and_below for p in t.results_by_partition}


def end(c, tid, pid, epoch, commit, version=3):
    return c.request(26, version, EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                                committed=commit))


def produce(c, partition, pid, epoch, seq, version=9, tid="tx", transactional=True):
    batch = build_batch([(None, b"v", int(time.time() * 1000))], producer_id=pid, producer_epoch=epoch,
                        base_sequence=seq, is_transactional=transactional)
    r = c.request(0, version, ProduceRequest(transactional_id=tid, acks=-1, timeout_ms=5000, topic_data=[
        ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=partition, records=batch)])]))
    return r.responses[0].partition_responses[0]


def describe(c, tid):
    return c.request(65, 0, DescribeTransactionsRequest(transactional_ids=[tid])).transaction_states[0]


def find_txn_coordinator(c, tid):
    r = c.request(10, 3, FindCoordinatorRequest(key=tid, key_type=1))
    assert r.error_code == 0, r


# ---- versions and discovery --------------------------------------------------------------------------

def test_api_versions_advertise_the_transaction_apis(client):
    r = client.request(18, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    ranges = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
    assert {k: ranges[k] for k in (10, 22, 24, 25, 26, 27, 28, 61, 65, 66)} == {
        10: (0, 6), 22: (0, 5), 24: (0, 5), 25: (0, 4), 26: (0, 5), 27: (1, 2), 28: (0, 6), 61: (0, 0),
        65: (0, 0), 66: (0, 2)}


@pytest.mark.parametrize("version", range(1, 7))
def test_find_coordinator_for_a_transactional_id(client, version):
    if version >= 4:
        r = client.request(10, version, FindCoordinatorRequest(key_type=1, coordinator_keys=["a", "b"]))
        assert [(x.key, x.error_code, x.node_id) for x in r.coordinators] == [("a", 0, 1), ("b", 0, 1)]
        assert all(x.port > 0 for x in r.coordinators)
    else:
        r = client.request(10, version, FindCoordinatorRequest(key="a", key_type=1))
        assert (r.error_code, r.node_id) == (0, 1) and r.port > 0
    assert end_offsets(client, STATE, [0, 1, 2]) == [0, 0, 0]  # created on first use, empty


def test_find_coordinator_unknown_key_type(client):
    r = client.request(10, 4, FindCoordinatorRequest(key_type=3, coordinator_keys=["a"]))
    assert r.coordinators[0].error_code == E.INVALID_REQUEST


# ---- bad input: Kafka's error, nothing written -------------------------------------------------------------

@pytest.mark.parametrize("version", range(0, 6))
def test_a_timeout_above_the_maximum(client, version):
    find_txn_coordinator(client, "tx")
    before = written(client)
    r = init(client, "tx", timeout=900_001, version=version)
    assert (r.error_code, r.producer_id, r.producer_epoch) == (E.INVALID_TRANSACTION_TIMEOUT, -1, -1)
    assert written(client) == before
    assert describe(client, "tx").error_code == E.TRANSACTIONAL_ID_NOT_FOUND


@pytest.mark.parametrize("version,code", [(0, E.INVALID_PRODUCER_EPOCH), (1, E.INVALID_PRODUCER_EPOCH),
                                          (2, E.PRODUCER_FENCED), (3, E.PRODUCER_FENCED)])
def test_add_partitions_with_a_stale_epoch(client, version, code):
    r = init(client, "tx")
    init(client, "tx")  # a second incarnation: epoch 1
    before = written(client)
    assert add(client, "tx", r.producer_id, r.producer_epoch, [(TOPIC, 0)], version=version) == {(TOPIC, 0): code}
    assert written(client) == before
    d = describe(client, "tx")
    assert (d.transaction_state, d.producer_epoch, d.topics) == ("Empty", 1, [])


def test_add_partitions_unknown_and_internal_partitions_fail_the_whole_request(client):
    r = init(client, "tx")
    before = written(client)
    assert add(client, "tx", r.producer_id, 0, [(TOPIC, 0), (TOPIC, 7), ("nope", 0)]) == {
        (TOPIC, 0): E.OPERATION_NOT_ATTEMPTED, (TOPIC, 7): E.UNKNOWN_TOPIC_OR_PARTITION,
        ("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
    assert add(client, "tx", r.producer_id, 0, [(TOPIC, 0), (OFFSETS, 0)]) == {
        (TOPIC, 0): E.OPERATION_NOT_ATTEMPTED, (OFFSETS, 0): E.TOPIC_AUTHORIZATION_FAILED}
    assert add(client, "nope", r.producer_id, 0, [(TOPIC, 0)]) == {(TOPIC, 0): E.INVALID_PRODUCER_ID_MAPPING}
    assert written(client) == before


@pytest.mark.parametrize("version", range(0, 6))
def test_end_txn_with_no_transaction(client, version):
    r = init(client, "tx")
    before = written(client)
    for commit in (True, False):
        e = end(client, "tx", r.producer_id, r.producer_epoch, commit, version=version)
        if version < 5 or commit:
            assert e.error_code == E.INVALID_TXN_STATE
        else:  # transaction version 2 may abort with nothing open (and bumps the epoch)
            assert (e.error_code, e.producer_id, e.producer_epoch) == (0, r.producer_id, r.producer_epoch + 1)
    if version < 5:
        assert written(client) == before and describe(client, "tx").transaction_state == "Empty"


@pytest.mark.parametrize("version,code", [(3, E.INVALID_TXN_STATE), (10, E.INVALID_TXN_STATE),
                                          (11, E.TRANSACTION_ABORTABLE)])
def test_a_transactional_batch_to_a_partition_never_added(client, version, code):
    r = init(client, "tx")
    assert add(client, "tx", r.producer_id, 0, [(TOPIC, 0)]) == {(TOPIC, 0): 0}
    before = written(client)
    p = produce(client, 1, r.producer_id, 0, 0, version=version)
    assert p.error_code == code and p.base_offset == -1
    assert written(client) == before
    assert produce(client, 0, r.producer_id, 0, 0, version=version).error_code == 0  # the added one is fine


def test_a_zombie_batch_after_fencing(client):
    r = init(client, "tx")
    add(client, "tx", r.producer_id, 0, [(TOPIC, 0)])
    assert produce(client, 0, r.producer_id, 0, 0).error_code == 0
    assert init(client, "tx").error_code == E.CONCURRENT_TRANSACTIONS  # fences: aborts the open one
    assert init(client, "tx").producer_epoch == 2
    before = written(client)
    assert produce(client, 0, r.producer_id, 0, 1).error_code == E.INVALID_PRODUCER_EPOCH
    assert produce(client, 1, r.producer_id, 0, 0).error_code == E.INVALID_PRODUCER_EPOCH
    assert end(client, "tx", r.producer_id, 0, True).error_code == E.PRODUCER_FENCED
    assert end(client, "tx", r.producer_id, 0, True, version=1).error_code == E.INVALID_PRODUCER_EPOCH
    assert written(client) == before


def _join_static(c, group, instance):
    j = c.request(11, 5, JoinGroupRequest(group_id=group, session_timeout_ms=30000, rebalance_timeout_ms=30000,
                                          member_id="", group_instance_id=instance, protocol_type="consumer",
                                          protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range",
                                                                                               metadata=b"")]))
    assert j.error_code == 0, j
    s = c.request(14, 3, SyncGroupRequest(group_id=group, generation_id=j.generation_id, member_id=j.member_id,
                                          group_instance_id=instance, assignments=[
                                              SyncGroupRequest.SyncGroupRequestAssignment(member_id=j.member_id,
                                                                                          assignment=b"")]))
    assert s.error_code == 0, s
    return j.member_id, j.generation_id


def txn_commit(c, tid, pid, epoch, group, version=3, offset=5, **member):
    body = TOC(transactional_id=tid, group_id=group, producer_id=pid, producer_epoch=epoch, topics=[
        TOC.TxnOffsetCommitRequestTopic(name=TOPIC, partitions=[
            TOC.TxnOffsetCommitRequestTopic.TxnOffsetCommitRequestPartition(
                partition_index=0, committed_offset=offset, committed_metadata="m")])])
    if version >= 3:
        body.member_id = member.get("member_id", "")
        body.generation_id = member.get("generation", -1)
        body.group_instance_id = member.get("instance")
    return c.request(28, version, body).topics[0].partitions[0].error_code


def committed(c, group) -> int:
    r = c.request(9, 7, OffsetFetchRequest(group_id=group, require_stable=True, topics=[
        OffsetFetchRequest.OffsetFetchRequestTopic(name=TOPIC, partition_indexes=[0])]))
    p = r.topics[0].partitions[0]
    return p.committed_offset if p.error_code == 0 else -p.error_code


def test_txn_offset_commit_from_a_fenced_member(client):
    member, gen = _join_static(client, "g", "inst-1")
    r = init(client, "tx")
    assert client.request(25, 3, AddOffsetsToTxnRequest(transactional_id="tx", producer_id=r.producer_id,
                                                        producer_epoch=0, group_id="g")).error_code == 0
    before = written(client)
    assert txn_commit(client, "tx", r.producer_id, 0, "g", member_id=member, generation=gen + 1,
                      instance="inst-1") == E.ILLEGAL_GENERATION
    assert txn_commit(client, "tx", r.producer_id, 0, "g", member_id="stranger", generation=gen) == E.UNKNOWN_MEMBER_ID
    assert txn_commit(client, "tx", r.producer_id, 0, "g", member_id="old-id", generation=gen,
                      instance="inst-1") == E.FENCED_INSTANCE_ID
    assert written(client) == before and committed(client, "g") == -1
    # the member itself: pending until the commit marker
    assert txn_commit(client, "tx", r.producer_id, 0, "g", member_id=member, generation=gen, instance="inst-1") == 0
    assert committed(client, "g") == -E.UNSTABLE_OFFSET_COMMIT
    assert end(client, "tx", r.producer_id, 0, True).error_code == 0
    assert committed(client, "g") == 5


@pytest.mark.parametrize("version,code", [(0, E.INVALID_TXN_STATE), (3, E.INVALID_TXN_STATE),
                                          (4, E.TRANSACTION_ABORTABLE)])
def test_txn_offset_commit_without_add_offsets(client, version, code):
    r = init(client, "tx")
    add(client, "tx", r.producer_id, 0, [(TOPIC, 0)])
    client.request(10, 3, FindCoordinatorRequest(key="g", key_type=0))
    before = written(client)
    assert txn_commit(client, "tx", r.producer_id, 0, "g", version=version) == code
    assert written(client) == before


def test_txn_offset_commit_v5_adds_the_partition_itself(client):
    r = init(client, "tx")
    client.request(10, 3, FindCoordinatorRequest(key="g", key_type=0))
    assert txn_commit(client, "tx", r.producer_id, 0, "g", version=5) == 0
    d = describe(client, "tx")
    assert d.transaction_state == "Ongoing"
    assert [(t.topic, t.partitions) for t in d.topics] == [(OFFSETS, [partition_for("g", 3)])]


# ---- the happy path and the admin APIs ----------------------------------------------------------------------

def test_commit_and_abort_leave_markers_and_admin_views(client):
    r = init(client, "tx")
    pid = r.producer_id
    assert add(client, "tx", pid, 0, [(TOPIC, 0), (TOPIC, 1)]) == {(TOPIC, 0): 0, (TOPIC, 1): 0}
    assert produce(client, 0, pid, 0, 0).error_code == 0
    assert produce(client, 0, pid, 0, 1).error_code == 0
    d = describe(client, "tx")
    assert (d.error_code, d.transaction_state, d.producer_id, d.producer_epoch, d.transaction_timeout_ms) == (
        0, "Ongoing", pid, 0, 60000)
    assert [(t.topic, sorted(t.partitions)) for t in d.topics] == [(TOPIC, [0, 1])]
    [prod] = client.request(61, 0, DescribeProducersRequest(topics=[DescribeProducersRequest.TopicRequest(
        name=TOPIC, partition_indexes=[0])])).topics[0].partitions[0].active_producers
    assert (prod.producer_id, prod.producer_epoch, prod.last_sequence, prod.current_txn_start_offset) == (pid, 0, 1, 0)
    lt = client.request(66, 1, ListTransactionsRequest(state_filters=["Ongoing", "Weird"], duration_filter=-1))
    assert lt.unknown_state_filters == ["Weird"]
    assert [(t.transactional_id, t.producer_id, t.transaction_state) for t in lt.transaction_states] == [
        ("tx", pid, "Ongoing")]
    assert end(client, "tx", pid, 0, True).error_code == 0
    assert end_offsets(client, TOPIC, [0, 1]) == [3, 1]  # two records + marker, marker
    assert describe(client, "tx").transaction_state == "CompleteCommit"
    assert end(client, "tx", pid, 0, True).error_code == 0  # a retry: success, nothing more written
    assert end_offsets(client, TOPIC, [0, 1]) == [3, 1]
    # next transaction, aborted
    add(client, "tx", pid, 0, [(TOPIC, 1)])
    assert produce(client, 1, pid, 0, 0).error_code == 0
    assert end(client, "tx", pid, 0, False).error_code == 0
    assert end_offsets(client, TOPIC, [0, 1]) == [3, 3]
    assert describe(client, "tx").transaction_state == "CompleteAbort"
    assert client.request(66, 0, ListTransactionsRequest(producer_id_filters=[pid + 1])).transaction_states == []


def test_write_txn_markers_aborts_a_hanging_transaction(client):
    r = init(client, "tx")
    pid = r.producer_id
    add(client, "tx", pid, 0, [(TOPIC, 0)])
    assert produce(client, 0, pid, 0, 0).error_code == 0
    marker = WTM.WritableTxnMarker(producer_id=pid, producer_epoch=0, transaction_result=False, coordinator_epoch=0,
                                   topics=[WTM.WritableTxnMarker.WritableTxnMarkerTopic(name=TOPIC,
                                                                                        partition_indexes=[0, 9])])
    res = client.request(27, 1, WTM(markers=[marker])).markers[0]
    assert res.producer_id == pid
    assert [(p.partition_index, p.error_code) for p in res.topics[0].partitions] == [
        (0, 0), (9, E.UNKNOWN_TOPIC_OR_PARTITION)]
    [prod] = client.request(61, 0, DescribeProducersRequest(topics=[DescribeProducersRequest.TopicRequest(
        name=TOPIC, partition_indexes=[0])])).topics[0].partitions[0].active_producers
    assert prod.current_txn_start_offset == -1 and prod.coordinator_epoch == 0
    stale = WTM.WritableTxnMarker(producer_id=pid, producer_epoch=0, transaction_result=False, coordinator_epoch=-5,
                                  topics=[WTM.WritableTxnMarker.WritableTxnMarkerTopic(name=TOPIC, partition_indexes=[0])])
    res = client.request(27, 1, WTM(markers=[stale])).markers[0]
    assert res.topics[0].partitions[0].error_code == E.TRANSACTION_COORDINATOR_FENCED
