"""The periodic checkpoint (recovery points, log start offsets: four fsyncs) is written off the
event loop: while its file write is held, fetches and produces on other connections are served.

Structural, so it holds on a loaded machine: the broker runs in this process over a FileOps
whose atomic write of the recovery-point checkpoint waits for the test to open a gate.
"""
from __future__ import annotations

import threading

from protocol.messages.api_versions import ApiVersionsRequest
from storage.checkpoints import RECOVERY_POINT_CHECKPOINT
from storage.files import OsFileOps
from tests.helpers.raw import RawClient
from tests.reliability.inproc import InProcessBroker


class GatedCheckpoints(OsFileOps):
    def __init__(self) -> None:
        self.gate = threading.Event()
        self.reached = threading.Event()

    def write_atomic(self, path, data: bytes, durable: bool = True) -> None:
        if str(path).endswith(RECOVERY_POINT_CHECKPOINT) and not self.gate.is_set():
            self.reached.set()
            if not self.gate.wait(120):
                raise OSError("the test never opened the gate")
        super().write_atomic(path, data, durable)


def test_requests_are_served_while_the_periodic_checkpoint_is_written(tmp_path):
    ops = GatedCheckpoints()
    b = InProcessBroker(tmp_path / "data", {"log.flush.offset.checkpoint.interval.ms": 50,
                                            "log.flush.start.offset.checkpoint.interval.ms": 50},
                        file_ops=ops).start()
    try:
        assert ops.reached.wait(60), "no periodic checkpoint"
        c = RawClient(b.bootstrap, timeout=60)
        for _ in range(20):
            r = c.request(18, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1"))
            assert r.error_code == 0
        assert not ops.gate.is_set() and ops.reached.is_set()  # all answered while it was held
    finally:
        ops.gate.set()
        assert b.stop() is None
    assert (tmp_path / "data" / RECOVERY_POINT_CHECKPOINT).exists()
