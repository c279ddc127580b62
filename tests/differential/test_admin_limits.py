"""How much one CreateTopics / CreatePartitions may ask for, and what internal topics allow
(issue 44): absurd counts (2^31-1, 1,000,000, just past 10,000) on user and internal topics,
asked of Kafka 4.4 and Hourglass alike and compared field by field.

Kafka 4.4's controller refuses the whole request with POLICY_VIOLATION on every entry past
10,000 partitions asked for ("Excessively large number of (additional) partitions per
request.") or past 10,000 metadata records for the valid topics ("Unable to perform
excessively large batch operation."), validate_only or not (``broker.controller_limits``).
Internal topics: ``__consumer_offsets`` and ``__transaction_state`` may be grown (only
validate_only here: growing them for real would move the shared pair's group and transaction
coordinators' partitions), ``__share_group_state`` and ``__remote_log_metadata`` are ordinary
names to the controller, ``__cluster_metadata`` may not be created. Deleting
``__consumer_offsets`` or ``__transaction_state``: Kafka 4.4 does it, Hourglass refuses (a
kept difference, kept.py, on a pair of its own). The counts below
10,000 are sent validate_only: the oracle would really create them otherwise.
"""
from __future__ import annotations

import pytest

from tests.differential.conftest import make_exchange, start_pair, stop_pair
from tests.differential.framework import req
from tests.differential.wire import group_coordinator, init_producer

pytestmark = pytest.mark.xdist_group("differential")

ABSURD = [2**31 - 1, 1_000_000, 20_000]
INTERNAL = ["__consumer_offsets", "__transaction_state"]


def _topic(name, partitions, rf=1, configs=None, assignments=None):
    return {"name": name, "num_partitions": partitions, "replication_factor": rf, "assignments": assignments or [],
            "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}


def _create(v, topics, validate_only):
    return req(19, v, topics=topics, timeout_ms=30000, validate_only=validate_only)


def _grow(v, topics, validate_only):
    return req(37, v, topics=[{"name": n, "count": c, "assignments": None} for n, c in topics], timeout_ms=30000,
               validate_only=validate_only)


def _partitions(side, name) -> int:
    md = side.request(3, 12, req(3, 12, topics=[{"name": name, "topic_id": bytes(16)}], allow_auto_topic_creation=False,
                                 include_topic_authorized_operations=False))
    return len(md.topics[0].partitions)


def test_create_topics_bounds(ex):
    base = ex.topic_name()
    cases = [(f"{n:,} partitions", [_topic(base + "-a", n)]) for n in ABSURD]
    cases += [
        ("10,000 partitions: 10,001 records", [_topic(base + "-b", 10_000)]),
        ("9,999 partitions and a config: 10,001 records", [_topic(base + "-c", 9_999, configs={"retention.ms": "1000"})]),
        ("9,997 partitions and two configs: 10,000 records", [_topic(base + "-d", 9_997, configs={
            "retention.ms": "1000", "segment.ms": "100000"})]),
        ("5,000 + 5,001 partitions", [_topic(base + "-e", 5_000), _topic(base + "-f", 5_001)]),
        ("5,000 + 5,000 partitions: 10,002 records", [_topic(base + "-g", 5_000), _topic(base + "-h", 5_000)]),
        ("9,998 + 1 partitions: 10,001 records", [_topic(base + "-i", 9_998), _topic(base + "-j", 1)]),
        ("9,998 and an invalid name: records of the valid one only", [_topic(base + "-k", 9_998),
                                                                      _topic("bad/name", 1)]),
        ("invalid name counted in the partitions", [_topic(base + "-l", 6_000), _topic("bad/name", 6_000)]),
        ("a refused replication factor: no records", [_topic(base + "-m", 9_997), _topic(base + "-n", 1),
                                                      _topic(base + "-o", 2, rf=5)]),
        ("-5 and 0 partitions count as none", [_topic(base + "-p", -5), _topic(base + "-q", 0),
                                               _topic(base + "-r", 10_001, rf=2)]),
        ("duplicates are not counted", [_topic(base + "-s", 6_000), _topic(base + "-s", 6_000)]),
        ("__cluster_metadata is not counted", [_topic("__cluster_metadata", 20_000)]),
        ("10,001 manual assignments", [_topic(base + "-t", -1, rf=-1, assignments=[
            {"partition_index": i, "broker_ids": [1]} for i in range(10_001)])]),
        ("internal topic names", [_topic(n, 3) for n in [*INTERNAL, "__share_group_state", "__remote_log_metadata"]]),
        ("internal topic names, absurd", [_topic(n, 50_000) for n in INTERNAL]),
    ]
    group_coordinator(ex, "limits-g")       # __consumer_offsets exists on both
    init_producer(ex, "limits-tx")          # __transaction_state too
    for v in ex.versions(19):
        for name, topics in cases:
            ex.send(19, v, _create(v, topics, True), scenario=f"validate_only: {name}")
    v = max(ex.versions(19))
    for n in ABSURD:  # for real: refused alike, nothing created
        ex.send(19, v, _create(v, [_topic(base + "-real", n)], False), scenario=f"{n:,} partitions, for real")
    ex.send(19, v, _create(v, [_topic(base + "-real", 5_000), _topic(base + "-real2", 5_000)], False),
            scenario="5,000 + 5,000 partitions, for real")


def test_create_partitions_bounds(ex):
    user = ex.topic_name("user")
    ex.create_topic(user, 1)
    group_coordinator(ex, "limits-g")
    init_producer(ex, "limits-tx")
    for v in ex.versions(37):
        for vo in (True, False):
            for n in ABSURD:
                for name in [user, *INTERNAL]:
                    ex.send(37, v, _grow(v, [(name, n)], vo), scenario=f"{name} to {n:,} (validate_only={vo})")
                ex.send(37, v, _grow(v, [("limits-unknown", n), (user, n)], vo),
                        scenario=f"an unknown topic and {n:,} (validate_only={vo})")
            ex.send(37, v, _grow(v, [("limits-unknown", 5)], vo), scenario=f"unknown topic (validate_only={vo})")
        ex.send(37, v, _grow(v, [(user, 10_001)], True), scenario="10,000 more: allowed (validate_only)")
        ex.send(37, v, _grow(v, [(user, 6_000), (user, 6_000)], True), scenario="duplicates are not counted")
        for name in INTERNAL:  # internal topics may be grown (Kafka 4.4 does not refuse it); each side by one
            ex.send(37, v, lambda s, name=name, v=v: _grow(v, [(name, _partitions(s, name) + 1)], True),
                    scenario=f"{name} grown (validate_only)")
        for name in ("__share_group_state", "__remote_log_metadata", "__cluster_metadata"):
            ex.send(37, v, _grow(v, [(name, 2)], True), scenario=f"{name} (absent)")


@pytest.fixture(scope="module")
def own_pair(tmp_path_factory):
    """A pair of its own: deleting the internal topics would break the shared pair's groups
    and transactions on the Kafka side."""
    p = start_pair(tmp_path_factory, name="internal-topics")
    yield p
    stop_pair(p)


def test_delete_internal_topics(request, own_pair, differential_report):
    """Kafka 4.4 deletes ``__consumer_offsets`` and ``__transaction_state`` when asked (its
    controller has no rule against it); Hourglass refuses (kept difference: its coordinators
    keep their state in those logs while they run). Absent internal names: unknown on both."""
    ex = make_exchange(request, own_pair, differential_report)
    try:
        group_coordinator(ex, "limits-g")
        init_producer(ex, "limits-tx")
        for name in ("__share_group_state", "__remote_log_metadata", "__cluster_metadata"):
            ex.send(20, 6, req(20, 6, topics=[{"name": name, "topic_id": bytes(16)}], timeout_ms=30000),
                    scenario=f"delete {name} (absent)")
        for name in INTERNAL:
            ex.send(20, 6, req(20, 6, topics=[{"name": name, "topic_id": bytes(16)}], timeout_ms=30000),
                    scenario=f"delete {name}")
    finally:
        ex.close()
    assert not ex.unexpected, "\n".join(ex.unexpected)  # the kept difference only (kept.py)
