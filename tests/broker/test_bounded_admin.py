"""No admin request stalls the broker (issue 44): one request may ask for at most what Kafka
4.4's controller allows (``broker.controller_limits``), and the large work it does allow --
thousands of partitions created, grown, deleted -- runs off the event loop, so every other
listener keeps answering meanwhile.

Proven with the broker's own loop-lag probe and a client per listener timing its answers
(``tests.helpers.loop_watch``) while the requests run, through the Kafka API and REST v3 alike.
Before this, growing a topic to 5,000 partitions held every listener for 6.7 s and a
partitions_count of 2^31-1 on ``__consumer_offsets`` never finished.
"""
from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request

import pytest

from hourglass.embedded import EmbeddedBroker
from protocol.errors import ErrorCode as E
from protocol.messages.create_partitions import CreatePartitionsRequest as CP
from protocol.messages.create_topics import CreateTopicsRequest as CT
from protocol.messages.delete_topics import DeleteTopicsRequest as DT
from protocol.messages.find_coordinator import FindCoordinatorRequest
from protocol.messages.metadata import MetadataRequest
from protocol.schema import ZERO_UUID
from tests.helpers.loop_watch import LoopWatch
from tests.helpers.raw import RawClient

pytestmark = pytest.mark.xdist_group("bounded_admin")

ABSURD = [2**31 - 1, 1_000_000, 20_000]  # each more than 10,000 partitions above what any topic here has
INTERNAL = ["__consumer_offsets", "__transaction_state"]


@pytest.fixture(scope="module")
def broker():
    with EmbeddedBroker({"offsets.topic.num.partitions": 3, "transaction.state.log.num.partitions": 2,
                         "log.segment.delete.delay.ms": 1000}, console=True) as b:
        c = RawClient(b.bootstrap_servers, timeout=60)
        for key_type, key in ((0, "g"), (1, "tx")):  # the internal topics exist
            deadline = time.monotonic() + 60
            while c.request(10, 4, FindCoordinatorRequest(key_type=key_type, coordinator_keys=[key])
                            ).coordinators[0].error_code and time.monotonic() < deadline:
                time.sleep(0.05)
        c.close()
        yield b


def _watch(b) -> LoopWatch:
    return LoopWatch(b.broker.loop_lag, kafka=[b.bootstrap_servers],
                     http=[f"{b.console_url}/v3/clusters/{b.broker.cluster_id}"])


def _create(c, topics, validate_only=False):
    r = c.request(19, 7, CT(topics=[CT.CreatableTopic(name=n, num_partitions=p, replication_factor=1, assignments=[],
                                                      configs=[]) for n, p in topics],
                            timeout_ms=60000, validate_only=validate_only))
    return [(t.name, t.error_code, t.error_message) for t in r.topics]


def _grow(c, topics, validate_only=False):
    r = c.request(37, 3, CP(topics=[CP.CreatePartitionsTopic(name=n, count=k, assignments=None) for n, k in topics],
                            timeout_ms=60000, validate_only=validate_only))
    return [(t.name, t.error_code, t.error_message) for t in r.results]


def _delete(c, names):
    r = c.request(20, 6, DT(topics=[DT.DeleteTopicState(name=n, topic_id=ZERO_UUID) for n in names], timeout_ms=60000))
    return [(t.name, t.error_code, t.error_message) for t in r.responses]


def _partitions(c, name) -> int:
    md = c.request(3, 12, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name, topic_id=ZERO_UUID)],
                                          allow_auto_topic_creation=False))
    return len(md.topics[0].partitions)


def _rest(b, method, path, body):
    req = urllib.request.Request(f"{b.console_url}/v3/clusters/{b.broker.cluster_id}{path}", method=method,
                                 data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_absurd_counts_are_refused_at_once_on_user_and_internal_topics(broker):
    b = broker
    c = RawClient(b.bootstrap_servers, timeout=60)
    assert _create(c, [("bounded-user", 1)]) == [("bounded-user", 0, None)]
    before = {n: _partitions(c, n) for n in ["bounded-user", *INTERNAL]}
    with _watch(b) as w:
        for count in ABSURD:
            for validate_only in (True, False):
                for name in ["bounded-user", *INTERNAL]:
                    assert _grow(c, [(name, count)], validate_only) == [
                        (name, E.POLICY_VIOLATION, "Excessively large number of additional partitions per request.")]
                assert _create(c, [("bounded-new", count)], validate_only) == [
                    ("bounded-new", E.POLICY_VIOLATION, "Excessively large number of partitions per request.")]
            # REST v3 answers the same refusal (Confluent's 400 for a policy violation)
            for name in ["bounded-user", *INTERNAL]:
                assert _rest(b, "PATCH", f"/topics/{name}", {"partitions_count": count}) == (400, {
                    "error_code": 40002, "message": "Excessively large number of additional partitions per request."})
            assert _rest(b, "POST", "/topics", {"topic_name": "bounded-new", "partitions_count": count}) == (400, {
                "error_code": 40002, "message": "Excessively large number of partitions per request."})
        # the bound counts records too: one topic of 10,000 partitions is 10,001 records
        assert _create(c, [("bounded-new", 10_000)], True) == [
            ("bounded-new", E.POLICY_VIOLATION, "Unable to perform excessively large batch operation.")]
        assert _create(c, [("bounded-a", 5000), ("bounded-b", 5001)], True) == [
            (n, E.POLICY_VIOLATION, "Excessively large number of partitions per request.") for n in ("bounded-a", "bounded-b")]
    w.assert_no_stall()
    assert {n: _partitions(c, n) for n in before} == before, "nothing was created"
    c.close()


def test_thousands_of_partitions_are_made_and_deleted_off_the_event_loop(broker):
    """Create 2,500 partitions, grow a topic by 2,500, delete both: a client per listener is
    answered within the bound throughout, and the loop is never held up by the work."""
    b = broker
    c = RawClient(b.bootstrap_servers, timeout=120)
    data = b.data_dir
    with _watch(b) as w:
        t0 = time.perf_counter()
        assert _create(c, [("bounded-big", 2500), ("bounded-grown", 1)]) == [("bounded-big", 0, None),
                                                                             ("bounded-grown", 0, None)]
        created = time.perf_counter() - t0
        assert _rest(b, "PATCH", "/topics/bounded-grown", {"partitions_count": 2501})[0] == 200
        grown = time.perf_counter() - t0 - created
        assert _partitions(c, "bounded-big") == 2500 and _partitions(c, "bounded-grown") == 2501
        assert _delete(c, ["bounded-big", "bounded-grown"]) == [("bounded-big", 0, None), ("bounded-grown", 0, None)]
        deleted = time.perf_counter() - t0 - created - grown
    print(f"created 2500 in {created:.2f} s, grew by 2500 in {grown:.2f} s, deleted 5001 in {deleted:.2f} s; "
          f"{w.summary()}")
    w.assert_no_stall()
    live = [d for d in os.listdir(data) if d.startswith("bounded-big-") and not d.endswith("-delete")]
    assert live == [], live[:5]
    # a new topic of the same name starts empty, after the old dirs were renamed
    assert _create(c, [("bounded-big", 3)]) == [("bounded-big", 0, None)]
    assert _partitions(c, "bounded-big") == 3
    c.close()
