"""The first FindCoordinator creates ``__consumer_offsets`` (offsets.topic.num.partitions, 50)
with its file work off the event loop: other connections are served while it runs.

Structural, so it holds on a loaded machine: the broker runs in this process over a FileOps
whose mkdir of an ``__consumer_offsets`` partition dir waits for the test to open a gate. While
the gate is shut the creation cannot finish, so whatever another connection gets answered then
was answered during the creation (before the fix, the mkdir ran on the event loop and every
connection waited behind it). The topic then appears whole, with its 50 partitions.
"""
from __future__ import annotations

import os
import select
import threading

from protocol.messages.api_versions import ApiVersionsRequest
from protocol.messages.find_coordinator import FindCoordinatorRequest
from protocol.messages.metadata import MetadataRequest
from storage.files import OsFileOps
from tests.helpers.raw import RawClient
from tests.reliability.inproc import InProcessBroker

OFFSETS = "__consumer_offsets"


class GatedFileOps(OsFileOps):
    """mkdir of an ``__consumer_offsets`` partition dir blocks until ``gate`` is set."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.reached = threading.Event()

    def mkdir(self, path, exist_ok: bool = True) -> None:
        if os.path.basename(str(path)).startswith(OFFSETS + "-"):
            self.reached.set()
            if not self.gate.wait(120):
                raise OSError("the test never opened the gate")
        super().mkdir(path, exist_ok)


def _topics(c: RawClient) -> dict[str, int]:
    md = c.request(3, 12, MetadataRequest(topics=None, allow_auto_topic_creation=False))
    return {t.name: len(t.partitions) for t in md.topics}


def test_other_connections_are_served_while_the_offsets_topic_is_created(tmp_path):
    ops = GatedFileOps()
    b = InProcessBroker(tmp_path / "data", file_ops=ops).start()
    try:
        first = RawClient(b.bootstrap, timeout=120)
        second = RawClient(b.bootstrap, timeout=120)
        other = RawClient(b.bootstrap, timeout=60)
        fc = FindCoordinatorRequest(key_type=0, coordinator_keys=["g1"])
        first.send_frame(first.encode(10, 4, fc))
        assert ops.reached.wait(60), "FindCoordinator did not start creating the offsets topic"
        # a second FindCoordinator meanwhile waits for the same creation (not a second one)
        second.send_frame(second.encode(10, 4, FindCoordinatorRequest(key_type=0, coordinator_keys=["g2"])))
        # the creation is parked at the gate: another connection is answered, many times over
        for _ in range(20):
            av = other.request(18, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1"))
            assert av.error_code == 0
            assert OFFSETS not in _topics(other), "the topic must appear whole, not while its files are made"
        # and nobody got a coordinator before the topic exists
        assert select.select([first.sock, second.sock], [], [], 0)[0] == []
        ops.gate.set()
        for c in (first, second):
            resp = c.recv_response(10, 4)
            assert [(x.error_code, x.node_id) for x in resp.coordinators] == [(0, b.broker.node_id)]
        assert _topics(other)[OFFSETS] == 50
        assert len([d for d in os.listdir(tmp_path / "data") if d.startswith(OFFSETS + "-")]) == 50
    finally:
        ops.gate.set()
        assert b.stop() is None
