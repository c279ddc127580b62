"""docker/'s compose files under Debian's podman-compose (1.0.3), with the images built by the
session (HOURGLASS_IMAGE / HOURGLASS_PIPELINE_IMAGE name them, so podman-compose builds nothing):

- docker/compose.yaml: the broker, the demo producer and the PySpark job; the job's console
  output shows windowed counts read from the broker container with Spark's kafka source (the
  connector the pipeline image carries), and a host client reads the same topic through the
  host listener;
- docker/sasl-ssl/compose.yaml: certificates, the first SCRAM user, then the broker with a
  SASL_SSL listener and ACLs on; a host client logs in with docker/sasl-ssl/client.properties'
  settings, the healthcheck passes through the loopback PLAINTEXT listener.

podman-compose 1.0.3 starts services in ``depends_on`` order but ignores their conditions
(service_healthy, service_completed_successfully); where a condition matters the test waits for
it, as docker compose would."""
from __future__ import annotations

import re
import shutil
import time
import uuid
from pathlib import Path

import pytest

from tests.container import podman as P

pytestmark = [pytest.mark.container, pytest.mark.timeout(1800)]

ROOT = Path(__file__).resolve().parents[2]
ROW = re.compile(r"\|\s*(click|view|buy)\s*\|\s*(\d+)\s*\|")


def _wait_exit(name: str, timeout: float = 120) -> int:
    return int(P.podman("wait", name, timeout=timeout).stdout.strip().splitlines()[-1])


def test_compose_broker_demo_producer_and_spark_job(image, pipeline_image):
    project = f"hgc{uuid.uuid4().hex[:6]}"
    port = P.free_port()
    env = {"HOURGLASS_IMAGE": image, "HOURGLASS_PIPELINE_IMAGE": pipeline_image, "HOURGLASS_PORT": str(port),
           "HOURGLASS_REGISTRY_PORT": str(P.free_port()), "HOURGLASS_CONSOLE_PORT": str(P.free_port())}
    f = ROOT / "docker" / "compose.yaml"
    try:
        P.compose(project, f, "up", "-d", extra_env=env)
        broker = P.Container()
        broker.name, broker.started = f"{project}_broker_1", time.monotonic()
        broker.healthy(timeout=120)
        job = f"{project}_spark-job_1"
        deadline, rows = time.monotonic() + 600, []
        while not rows:
            r = P.podman("logs", job, check=False)
            out = r.stdout + r.stderr
            rows = [(k, int(n)) for k, n in ROW.findall(out) if int(n) > 0]
            state = P.podman("inspect", job, "--format", "{{.State.Running}} {{.State.ExitCode}}").stdout.split()
            assert rows or state[0] == "true", f"spark-job exited {state[1]}:\n{out[-4000:]}"
            assert rows or time.monotonic() < deadline, f"no counts from the spark job:\n{out[-4000:]}"
            time.sleep(2)
        assert {k for k, _ in rows} <= {"click", "view", "buy"}
        # ... read with Spark's own kafka source: the image's connector jars
        assert "hourglass-pipeline: reading events with Spark's kafka source (chosen with --source kafka)" in out, \
            out[-4000:]
        # the host listener: what the demo producer wrote, read from the host
        from confluent_kafka import Consumer, TopicPartition
        c = Consumer({"bootstrap.servers": f"localhost:{port}", "group.id": "ct"})
        try:
            md = c.list_topics("events", timeout=30)
            assert len(md.topics["events"].partitions) == 3  # KAFKA_NUM_PARTITIONS
            lo, hi = c.get_watermark_offsets(TopicPartition("events", 0), timeout=30)
            total = sum(c.get_watermark_offsets(TopicPartition("events", p), timeout=30)[1] for p in range(3))
            assert lo == 0 and total > 0
        finally:
            c.close()
        # a stop (SIGTERM to each container's PID 1, Python there) ends both cleanly, without
        # waiting for the runtime's kill (exit code 137)
        for name in (f"{project}_demo-producer_1", job):
            P.podman("stop", "-t", "60", name)
            code = P.podman("inspect", name, "--format", "{{.State.ExitCode}}").stdout.strip()
            assert code == "0", f"{name} exited {code} on stop:\n{P.podman('logs', name, check=False).stderr[-3000:]}"
        assert "produced " in P.podman("logs", f"{project}_demo-producer_1", check=False).stdout
    finally:
        P.compose(project, f, "down", "-v", extra_env=env, check=False)


def test_sasl_ssl_example(image, tmp_path):
    from confluent_kafka import Consumer, Producer, TopicPartition
    # a copy: the example writes its certificates next to its compose file
    d = tmp_path / "docker" / "sasl-ssl"
    d.mkdir(parents=True)
    shutil.copy(ROOT / "docker" / "sasl-ssl" / "compose.yaml", d)
    shutil.copy(ROOT / "docker" / "sasl-ssl" / "client.properties", d)
    project = f"hgs{uuid.uuid4().hex[:6]}"
    port = P.free_port()
    env = {"HOURGLASS_IMAGE": image, "HOURGLASS_SASL_PORT": str(port)}
    f = d / "compose.yaml"
    try:
        P.compose(project, f, "up", "--no-start", extra_env=env)
        # the conditions podman-compose ignores: certs and the first user complete, then the broker
        for one_shot in ("certs", "admin-user"):
            P.podman("start", f"{project}_{one_shot}_1")
            assert _wait_exit(f"{project}_{one_shot}_1") == 0, P.podman("logs", f"{project}_{one_shot}_1").stderr
        P.podman("start", f"{project}_broker_1")
        broker = P.Container()
        broker.name, broker.started = f"{project}_broker_1", time.monotonic()
        broker.healthy(timeout=120)
        props = dict(l.split("=", 1) for l in (d / "client.properties").read_text().splitlines()
                     if l.strip() and not l.startswith("#"))
        conf = {"bootstrap.servers": f"localhost:{port}", "security.protocol": props["security.protocol"],
                "sasl.mechanism": props["sasl.mechanism"], "sasl.username": "admin", "sasl.password": "admin-secret",
                "ssl.ca.location": str(d / "secrets" / "ca.pem")}
        p = Producer({**conf, "acks": "all"})
        for i in range(5):
            p.produce("secured", b"v%d" % i, partition=0, timestamp=1_763_800_000_000 + 1000 * i)
        assert p.flush(30) == 0
        c = Consumer({**conf, "group.id": "ct"})
        try:
            [r] = c.offsets_for_times([TopicPartition("secured", 0, 1_763_800_002_500)], timeout=30)
            assert r.offset == 3
        finally:
            c.close()
        # a wrong password is refused (SCRAM, with ACLs on)
        bad = Producer({**conf, "sasl.password": "wrong", "message.timeout.ms": 5000})
        errors = []
        bad.produce("secured", b"x", on_delivery=lambda e, m: errors.append(e))
        bad.flush(15)
        assert errors and errors[0] is not None
        del p, bad  # no client left retrying while the example goes down
    finally:
        P.compose(project, f, "down", "-v", extra_env=env, check=False)
