"""The broker's long-lived state and the cyclic garbage collector (issue 44): a full collection
walks every tracked object, on the event loop when an allocation there sets it off, so a heap of
many partitions (~29 tracked objects each) made one request's allocations a stall of their own
(0.3-1.35 s seen on a busy machine). The state loaded at start is frozen (``gc.freeze``, moved out
of the collector's generations) -- leak-free only because partitions form no reference cycles,
which is what this checks: deleting topics frees their objects by reference counting alone."""
from __future__ import annotations

import gc
import time

from hourglass.embedded import EmbeddedBroker
from tests.differential.framework import req
from tests.helpers.raw import RawClient

TOPICS, PARTITIONS = 300, 4


def _create(c, names):
    r = c.request(19, 7, req(19, 7, topics=[{"name": n, "num_partitions": PARTITIONS, "replication_factor": 1,
                                             "assignments": [], "configs": []} for n in names],
                             timeout_ms=60000, validate_only=False))
    assert {t.error_code for t in r.topics} == {0}


def test_deleted_partitions_leave_no_cyclic_garbage():
    with EmbeddedBroker({"log.segment.delete.delay.ms": 0}) as b:
        c = RawClient(b.bootstrap_servers, timeout=120)
        names = [f"heap-{i}" for i in range(TOPICS)]
        _create(c, names)
        gc.collect()
        gc.disable()  # from here only reference counting frees anything
        try:
            r = c.request(20, 6, req(20, 6, topics=[{"name": n, "topic_id": bytes(16)} for n in names],
                                     timeout_ms=60000))
            assert {t.error_code for t in r.responses} == {0}
            deadline = time.monotonic() + 60
            while any(n in b.broker.topics.topics for n in names) and time.monotonic() < deadline:
                time.sleep(0.05)
            found = gc.collect()
        finally:
            gc.enable()
        # some garbage comes from the requests and the test itself, none per partition
        assert found < TOPICS * PARTITIONS, found
        c.close()


def test_state_loaded_at_start_is_out_of_the_collector(tmp_path):
    """A restart over 1,200 partitions moves at least 20 objects per loaded partition to the
    permanent generation (the freeze comes after the load, not before it)."""
    data = tmp_path / "data"
    with EmbeddedBroker({}, data_dir=data) as b:
        before = gc.get_freeze_count()
        c = RawClient(b.bootstrap_servers, timeout=120)
        _create(c, [f"loaded-{i}" for i in range(TOPICS)])
        c.close()
    with EmbeddedBroker({}, data_dir=data) as again:
        assert len(again.broker.logs._logs) >= TOPICS * PARTITIONS
        assert gc.get_freeze_count() - before >= TOPICS * PARTITIONS * 20, gc.get_freeze_count() - before
