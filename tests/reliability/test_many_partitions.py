"""20,000 partitions under a 20,000-descriptor limit (issue 27): created, each given a record,
then a kill -9 and a clean restart, and every acknowledged record is still there. The broker
never holds more descriptors than its file cache allows (three quarters of the limit).

The heaviest test of the suite's storage part (about a minute on a quiet 2-core machine):
one run covers creation, recovery after kill -9 and a clean restart of the same data dir.
"""
from __future__ import annotations

import signal

import pytest

from tests.reliability.test_fd_limit import (
    LimitedBroker, create, expected, produce_one_each, topics_for, values_by_partition,
)

N = 20_000


@pytest.mark.timeout(900)
def test_20000_partitions_under_a_20000_limit_survive_kill_and_restart(tmp_path):
    b = LimitedBroker(tmp_path, N, N).start()
    topics = topics_for(N)
    try:
        c = b.client()
        for name, n in topics:
            assert create(c, name, n).error_code == 0
        produce_one_each(c, topics)
        assert b.open_fds() <= N * 3 // 4 + 64
        c.close()
        b.stop(signal.SIGKILL)
        b.start()
        c = b.client()
        assert values_by_partition(c, topics) == expected(topics, b"")
        produce_one_each(c, topics, b"+")
        c.close()
        b.stop()
        b.start()
        c = b.client()
        assert values_by_partition(c, topics) == expected(topics, b"", b"+")
        c.close()
    finally:
        b.stop()
