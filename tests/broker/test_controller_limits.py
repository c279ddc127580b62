"""Kafka 4.4's per-request bounds (``broker.controller_limits``): the pure rules, against a
brute-force model and the answers the oracle gave (tests/differential/test_admin_limits.py)."""
from __future__ import annotations

from hypothesis import given, strategies as st

from broker.controller_limits import (MAX_PARTITIONS_PER_BATCH, batch_too_large, create_partitions_too_many,
                                      create_topics_too_many, requested_partitions, topic_records)

COUNTS = st.one_of(st.integers(-2**31, 2**31 - 1), st.sampled_from([-1, 0, 1, 4999, 5000, 5001, 9999, 10000, 10001]))


@given(st.lists(st.tuples(COUNTS, st.integers(0, 12000))), st.integers(1, 100))
def test_create_topics_bound_is_the_sum(topics, default):
    def model(n, a):  # Kafka's validateTotalNumberOfPartitions, read from its bytecode
        return a if a else (default if n == -1 else (n if n > 0 else 0))
    assert create_topics_too_many(topics, default) == (sum(model(n, a) for n, a in topics) > MAX_PARTITIONS_PER_BATCH)


@given(st.lists(st.tuples(st.sampled_from("abcd"), COUNTS)), st.dictionaries(st.sampled_from("abc"), st.integers(1, 20000)))
def test_create_partitions_bound_counts_only_growth_of_existing_topics(topics, current):
    added = sum(c - current[n] for n, c in topics if c >= 0 and n in current and c > current[n])
    assert create_partitions_too_many(topics, current.get) == (added > MAX_PARTITIONS_PER_BATCH)


def test_the_oracles_answers():
    assert create_topics_too_many([(10_001, 0)], 1) and not create_topics_too_many([(10_000, 0)], 1)
    assert create_topics_too_many([(5000, 0), (5001, 0)], 1)
    assert create_topics_too_many([(-5, 0), (0, 0), (10_001, 0)], 1)
    assert create_topics_too_many([(-1, 10_001)], 1)  # manual assignments count
    assert requested_partitions(-1, 0, 3) == 3
    # one topic of 10,000 partitions passes the first check and is 10,001 records
    assert batch_too_large(topic_records(10_000, 0)) and not batch_too_large(topic_records(9_997, 2))
    assert batch_too_large(topic_records(9_999, 1))
    assert not create_partitions_too_many([("u", 10_001)], {"u": 1}.get)
    assert create_partitions_too_many([("u", 10_002)], {"u": 1}.get)
    assert create_partitions_too_many([("x", 6001), ("y", 6001)], {"x": 1, "y": 1}.get)
    assert not create_partitions_too_many([("nope", 2**31 - 1)], {}.get)
