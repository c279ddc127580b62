"""The image inside the Testcontainers Kafka modules people already use, with only the image name
changed (issue 43): each module writes its own start script and environment and waits for its
own log line, and the image must honour them.

- Python: ``testcontainers.community.kafka.KafkaContainer`` (testcontainers 4.x, Confluent-style start:
  ``/etc/confluent/docker/{bash-config,configure,launch}``, waits for ``[KafkaServer id=N] started``
  in its default mode), driven here directly;
- Go: ``testcontainers-go/modules/kafka`` (``kafka.Run``; Confluent-style start with a
  ``kafka-storage format`` appended to ``configure``, waits for "Transitioning from RECOVERY to
  RUNNING"): ``go test`` in tests/go/testcontainers;
- Java: ``org.testcontainers.kafka.KafkaContainer`` (``asCompatibleSubstituteFor("apache/kafka")``,
  ``/etc/kafka/docker/run``) and ``ConfluentKafkaContainer`` (``/etc/confluent/docker/run``), and
  Spring Boot's ``@ServiceConnection`` on a ``KafkaContainer`` with a small Spring Kafka app:
  JUnit classes in tests/jvm/testcontainers, run with JUnit's console launcher.

Each runs produce, a consumer group that commits, a transaction (committed and aborted, read
read_committed) and the admin client. The container runtime is podman's Docker-compatible API
(``DockerApi``: how Testcontainers is pointed at it here is said there). The tests share one
xdist group: containers are reaped by label at the end, as Ryuk would."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.helpers import jvm

pytestmark = [pytest.mark.container, pytest.mark.timeout(1800), pytest.mark.xdist_group("testcontainers")]

ROOT = Path(__file__).resolve().parents[2]
GO_MODULE = ROOT / "tests" / "go" / "testcontainers"


def _consume(bootstrap: str, group: str, topic: str, n: int, *, read_committed: bool = False) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False,
                  "isolation.level": "read_committed" if read_committed else "read_uncommitted"})
    try:
        c.subscribe([topic])
        got: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            assert m.error() is None, m.error()
            got.append(m.value())
            c.commit(m, asynchronous=False)
        return got
    finally:
        c.close()


def test_python_module_kafka_container(docker_api, image, monkeypatch):
    """testcontainers-python's KafkaContainer, as its users write it, with our image's name."""
    for k, v in docker_api.env.items():
        monkeypatch.setenv(k, v)
    from testcontainers.community.kafka import KafkaContainer  # reads its configuration from the environment

    with KafkaContainer(image) as kafka:
        bootstrap = kafka.get_bootstrap_server()
        # produce, then a consumer group that reads and commits
        p = Producer({"bootstrap.servers": bootstrap})
        for i in range(10):
            p.produce("orders", key=b"key", value=f"value-{i}".encode())
        assert p.flush(30) == 0
        assert _consume(bootstrap, "readers", "orders", 10) == [f"value-{i}".encode() for i in range(10)]
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "readers"})
        try:
            assert c.committed([TopicPartition("orders", 0)], timeout=30)[0].offset == 10
        finally:
            c.close()

        # a transaction committed, one aborted, one committed: read_committed sees the two
        t = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tc-py-{uuid.uuid4().hex[:6]}"})
        t.init_transactions(30)
        for values, commit in (([b"committed-1", b"committed-2"], True), ([b"aborted"], False),
                               ([b"committed-3"], True)):
            t.begin_transaction()
            for v in values:
                t.produce("payments", value=v)
            t.flush(30)
            (t.commit_transaction if commit else t.abort_transaction)(30)
        assert _consume(bootstrap, "txn-readers", "payments", 3, read_committed=True) == \
            [b"committed-1", b"committed-2", b"committed-3"]

        # the admin client
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("inventory", 3, 1, config={"retention.ms": "3600000"})])["inventory"].result(30)
        with pytest.raises(KafkaException, match="TOPIC_ALREADY_EXISTS"):
            admin.create_topics([NewTopic("inventory", 3, 1)])["inventory"].result(30)
        md = admin.list_topics(timeout=30)
        assert len(md.topics["inventory"].partitions) == 3 and len(md.brokers) == 1
        # the module's own readiness: the broker said what a Confluent 7 broker in ZooKeeper mode says
        out, err = kafka.get_logs()
        assert re.search(rb"\[KafkaServer id=1\] started", out + err)


def test_go_module(docker_api, image):
    """testcontainers-go's modules/kafka: go test in tests/go/testcontainers."""
    go = shutil.which("go") or "/usr/local/go/bin/go"  # Go's own install path on these machines
    r = subprocess.run([go, "test", "-count=1", "-v", "./..."], cwd=GO_MODULE, capture_output=True, text=True,
                       env={**docker_api.env, "HOURGLASS_IMAGE": image}, timeout=900)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    for name in ("TestProduceAndConsumeWithAGroup", "TestTransaction", "TestAdmin", "TestFirstRecord"):
        assert f"--- PASS: {name}" in out, out[-6000:]


def _junit(docker_api, image: str, package: str) -> str:
    """Runs the JUnit classes of ``package`` with JUnit's console launcher; returns its output."""
    libs = jvm.libs(f"testcontainers-kafka-{jvm.version('testcontainers')}")
    cp = os.pathsep.join(str(j) for j in sorted(libs.glob("*.jar")))
    r = subprocess.run([jvm.java(), f"-Dhourglass.image={image}", "-cp", cp,
                        "org.junit.platform.console.ConsoleLauncher", "execute", "--disable-banner",
                        "--details=tree", f"--select-package={package}"],
                       capture_output=True, text=True, env=docker_api.env, timeout=900)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-8000:]
    return out


def _counts(out: str) -> dict[str, int]:
    return {m.group(2): int(m.group(1)) for m in re.finditer(r"\[\s*(\d+) tests (successful|failed|aborted)", out)}


def test_java_module(docker_api, image):
    """Testcontainers for Java: KafkaContainer (apache/kafka) and ConfluentKafkaContainer."""
    out = _junit(docker_api, image, "dev.hourglass.tc")
    assert _counts(out) == {"successful": 7, "failed": 0, "aborted": 0}, out[-4000:]


def test_spring_boot_service_connection(docker_api, image):
    """Spring Boot's @ServiceConnection on a KafkaContainer, with a Spring Kafka app."""
    out = _junit(docker_api, image, "dev.hourglass.spring")
    assert _counts(out) == {"successful": 1, "failed": 0, "aborted": 0}, out[-4000:]
