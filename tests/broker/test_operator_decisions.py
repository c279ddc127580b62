"""The pure decisions behind ElectLeaders (43) and AlterPartitionReassignments (45) on one
broker, stated case by case (the differential tests compare the same answers with Kafka 4.4)."""
from __future__ import annotations

from hypothesis import given, strategies as st

from broker.handlers.elect_leaders import NOT_NEEDED, election_results
from broker.handlers.partition_reassignments import reassignment_error
from protocol.errors import ErrorCode as E

TOPICS = {"a": 3, "b": 1}


def test_election_results():
    got = election_results(list(TOPICS), TOPICS.get, [("a", [0, 2, 3]), ("zz", [0])])
    assert [(r.topic, [(p.partition_id, p.error_code, p.error_message) for p in r.partition_result]) for r in got] == [
        ("a", [(0, E.ELECTION_NOT_NEEDED, NOT_NEEDED), (2, E.ELECTION_NOT_NEEDED, NOT_NEEDED),
               (3, E.UNKNOWN_TOPIC_OR_PARTITION, "No such partition as a-3")]),
        ("zz", [(0, E.UNKNOWN_TOPIC_OR_PARTITION, "No such topic as zz")])]
    # all partitions: every topic, none listed (none needs an election)
    assert [(r.topic, r.partition_result) for r in election_results(list(TOPICS), TOPICS.get, None)] == [
        ("a", []), ("b", [])]
    err = election_results(list(TOPICS), TOPICS.get, [("a", [0])], (E.INVALID_REQUEST, "Unknown election type 3"))
    assert [(p.error_code, p.error_message) for p in err[0].partition_result] == [(E.INVALID_REQUEST, "Unknown election type 3")]


@given(st.one_of(st.none(), st.lists(st.integers(-2, 4), max_size=4)), st.integers(-1, 4))
def test_reassignment_verdicts(replicas, partition):
    """Against a brute-force statement of Kafka's checks, in its order: topic, partition,
    cancel, empty, then the ids sorted, each registered and not repeated; else done at once."""
    code, msg = reassignment_error(3, "t", partition, replicas, {1})
    if not 0 <= partition < 3:
        assert (code, msg) == (E.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition t:{partition}.")
    elif replicas is None:
        assert (code, msg) == (E.NO_REASSIGNMENT_IN_PROGRESS, None)
    elif not replicas:
        assert code == E.INVALID_REPLICA_ASSIGNMENT and "empty replica list" in msg
    elif min(r for r in replicas) < 1 or (min(replicas) == 1 and replicas.count(1) == 1 and max(replicas) > 1):
        bad = sorted(set(replicas) - {1})[0]   # the smallest id not registered comes first
        assert (code, msg) == (E.INVALID_REPLICA_ASSIGNMENT,
                               f"The manual partition assignment includes broker {bad}, but no such broker is registered.")
    elif replicas.count(1) > 1:
        assert (code, msg) == (E.INVALID_REPLICA_ASSIGNMENT,
                               "The manual partition assignment includes the broker 1 more than once.")
    elif set(replicas) != {1}:
        bad = sorted(set(replicas) - {1})[0]
        assert (code, msg) == (E.INVALID_REPLICA_ASSIGNMENT,
                               f"The manual partition assignment includes broker {bad}, but no such broker is registered.")
    else:
        assert (code, msg) == (0, None)
    assert reassignment_error(None, "t", partition, replicas, {1}) == (
        E.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find a topic named t.")
