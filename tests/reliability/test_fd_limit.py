"""Out of file descriptors (each partition keeps its segment and two index files open, as
Kafka does): creating a topic that does not fit fails with KAFKA_STORAGE_ERROR and a clear
message, leaves no half-created topic behind, and the broker keeps serving."""
from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path

from protocol.errors import ErrorCode
from protocol.messages.create_topics import CreateTopicsRequest as CT
from protocol.messages.metadata import MetadataRequest
from tests.helpers.raw import RawClient

ROOT = Path(__file__).resolve().parents[2]


def _create(c, name, n):
    r = c.request(19, 5, CT(topics=[CT.CreatableTopic(name=name, num_partitions=n, replication_factor=1,
                                                     assignments=[], configs=[])], timeout_ms=30000,
                            validate_only=False))
    return r.topics[0]


def test_create_topic_beyond_the_fd_limit_is_refused_cleanly(tmp_path):
    ready = tmp_path / "ready"
    proc = subprocess.Popen(
        [sys.executable, "-m", "broker", "serve", "--port", "0", "--data-dir", str(tmp_path / "data"),
         "--ready-file", str(ready)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256)))
    try:
        deadline = time.monotonic() + 20
        while not (ready.exists() and ready.read_text().strip()):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        c = RawClient(ready.read_text().split()[0])  # first line: the first listener
        t = _create(c, "too-big", 200)  # 600 files > 256
        assert t.error_code == ErrorCode.KAFKA_STORAGE_ERROR and "Too many open files" in t.error_message
        md = c.request(3, 12, MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                              include_topic_authorized_operations=False))
        assert "too-big" not in [x.name for x in md.topics]
        assert _create(c, "small", 4).error_code == 0  # still serving, fds were given back
        c.close()
    finally:
        proc.terminate()
        proc.wait(20)
