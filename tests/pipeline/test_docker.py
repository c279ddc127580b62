"""What can be checked of docker/ on the host, without a container (tests/container runs the
image itself under podman): the entrypoint run as a script starts a broker whose ready file the
healthcheck probe follows, whatever listeners the environment names; the probe's plan over a
ready file; and the image and compose files' contents."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from hourglass.cli import probe as P
from tests.helpers.kafka_oracle import free_port

ROOT = Path(__file__).resolve().parents[2]
PROBE_CMD = ["hourglass", "probe", "--ready-file", "/tmp/hourglass.ready", "--config", "/etc/hourglass/server.properties"]


class Entrypoint:
    """docker/entrypoint.py as the image runs it, with the image's paths moved under tmp."""

    def __init__(self, tmp: Path, **kafka_env):
        self.tmp, self.ready = tmp, tmp / "ready"
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT),
                    "HOURGLASS_FINAL_CONFIG_DIR": str(tmp / "etc"), "HOURGLASS_MOUNTED_CONFIG_DIR": str(tmp / "mnt"),
                    "HOURGLASS_READY_FILE": str(self.ready), "KAFKA_LOG_DIRS": str(tmp / "data"),
                    # the image's HTTP services on free loopback ports here (the image: 8081, 8080)
                    "KAFKA_SCHEMA_REGISTRY_LISTENERS": "http://127.0.0.1:0", "KAFKA_CONSOLE_LISTENERS": "http://127.0.0.1:0", **kafka_env}

    def __enter__(self):
        # no --ready-file argument: the entrypoint adds its own, as in the image
        self.proc = subprocess.Popen([sys.executable, str(ROOT / "docker" / "entrypoint.py")], cwd=ROOT, env=self.env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while not (self.ready.exists() and self.ready.read_text().strip()):
            assert self.proc.poll() is None, self.proc.stderr.read().decode()[-3000:]
            assert time.monotonic() < deadline, "no ready file"
            time.sleep(0.05)
        return self

    def probe(self, *extra) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "broker", "probe", "--ready-file", str(self.ready),
                               "--config", str(self.tmp / "etc" / "server.properties"), *extra],
                              capture_output=True, text=True, cwd=ROOT, timeout=30)

    def __exit__(self, *exc):
        self.proc.terminate()
        assert self.proc.wait(20) == 0


def test_entrypoint_script_starts_a_broker_that_passes_the_probe(tmp_path):
    # The environment-to-keys mapping itself is tested in tests/everyday/test_config_dropin.py.
    with Entrypoint(tmp_path, KAFKA_LISTENERS="PLAINTEXT://127.0.0.1:0",
                    KAFKA_ADVERTISED_LISTENERS="PLAINTEXT://127.0.0.1:0") as ep:
        bootstrap = ep.ready.read_text().split()[0]  # first line: the first listener
        r = subprocess.run([sys.executable, "-m", "broker", "probe", "-b", bootstrap], capture_output=True, cwd=ROOT)
        assert r.returncode == 0 and b"answers" in r.stdout, r.stderr
        r = ep.probe()
        assert r.returncode == 0 and "PLAINTEXT 127.0.0.1:" in r.stdout, r.stderr
    assert oct((tmp_path / "etc" / "server.properties").stat().st_mode & 0o777) == "0o600"
    r = subprocess.run([sys.executable, "-m", "broker", "probe", "-b", bootstrap, "--timeout", "1"],
                       capture_output=True, cwd=ROOT)
    assert r.returncode == 1 and b"cannot reach" in r.stderr
    r = ep.probe("--timeout", "1")  # the ready file of a stopped broker: nothing answers
    assert r.returncode == 1 and "cannot reach" in r.stderr


def test_probe_follows_listeners_of_the_users_choosing(tmp_path):
    # a compose file's own listeners: not 9092, a custom name, bound to 0.0.0.0 and to loopback
    port, other = free_port(), free_port()
    with Entrypoint(tmp_path, KAFKA_LISTENERS=f"INTERNAL://0.0.0.0:{port},EXTERNAL://127.0.0.1:{other}",
                    KAFKA_ADVERTISED_LISTENERS=f"INTERNAL://broker:{port},EXTERNAL://localhost:{other}",
                    KAFKA_LISTENER_SECURITY_PROTOCOL_MAP="INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
                    KAFKA_INTER_BROKER_LISTENER_NAME="INTERNAL") as ep:
        r = ep.probe()
        assert r.returncode == 0 and f"INTERNAL 127.0.0.1:{port} answers" in r.stdout, r.stderr
    r = ep.probe("--timeout", "1")
    assert r.returncode == 1 and f"INTERNAL 127.0.0.1:{port}: cannot reach" in r.stderr, r.stderr


def test_probe_of_a_tls_only_broker(tmp_path):
    # SSL and SASL_SSL only: a TLS handshake that checks no certificate, then ApiVersions, which
    # Kafka answers before SASL authentication
    subprocess.run([sys.executable, "-m", "broker", "certs", str(tmp_path / "secrets")], check=True, cwd=ROOT,
                   capture_output=True)
    port, other = free_port(), free_port()
    with Entrypoint(tmp_path, KAFKA_LISTENERS=f"SASL_SSL://127.0.0.1:{port},SECURE://127.0.0.1:{other}",
                    KAFKA_LISTENER_SECURITY_PROTOCOL_MAP="SASL_SSL:SASL_SSL,SECURE:SSL",
                    KAFKA_INTER_BROKER_LISTENER_NAME="SECURE",
                    KAFKA_SASL_ENABLED_MECHANISMS="SCRAM-SHA-512",
                    KAFKA_SSL_KEYSTORE_TYPE="PEM",
                    KAFKA_SSL_KEYSTORE_LOCATION=str(tmp_path / "secrets" / "broker.pem")) as ep:
        r = ep.probe()
        assert r.returncode == 0 and f"SECURE 127.0.0.1:{other} answers" in r.stdout, r.stderr + r.stdout
        ep.ready.write_text(f"127.0.0.1:{port}\nSASL_SSL://127.0.0.1:{port}\n")
        r = ep.probe()
        assert r.returncode == 0 and f"SASL_SSL 127.0.0.1:{port} answers" in r.stdout, r.stderr + r.stdout


def test_probe_plan():
    # (bound_listeners itself: tests/everyday/test_probe.py)
    ready = ("0.0.0.0:9092\nPLAINTEXT_HOST://0.0.0.0:9092\nSSL://[::]:9093\nCONTROLLER://localhost:29093\n"
             "PLAINTEXT://127.0.0.2:29092\nservice console http://127.0.0.1:8080\n")
    # no config: the standard names are their protocol, others unknown (plaintext, then TLS)
    assert P.plan(ready) == [("PLAINTEXT", "127.0.0.2", 29092, "PLAINTEXT"),
                             ("PLAINTEXT_HOST", "127.0.0.1", 9092, None),
                             ("CONTROLLER", "localhost", 29093, None), ("SSL", "::1", 9093, "SSL")]
    cfg = "listener.security.protocol.map=X:SSL\n# comment\nlistener.security.protocol.map = controller:PLAINTEXT, " \
          "PLAINTEXT_HOST:PLAINTEXT,SSL:SSL,PLAINTEXT:SASL_PLAINTEXT\n"
    assert P.plan(ready, cfg) == [("PLAINTEXT_HOST", "127.0.0.1", 9092, "PLAINTEXT"),
                                  ("CONTROLLER", "localhost", 29093, "PLAINTEXT"),
                                  ("PLAINTEXT", "127.0.0.2", 29092, "SASL_PLAINTEXT"),
                                  ("SSL", "::1", 9093, "SSL")]
    assert P.plan("127.0.0.1:9092\n") == [("", "127.0.0.1", 9092, None)]  # an older single-line file


@pytest.mark.parametrize("ready", [None, "", "127.0.0.1:1\n"])
def test_probe_without_a_usable_ready_file_is_unhealthy(tmp_path, ready):
    f = tmp_path / "ready"
    if ready is not None:
        f.write_text(ready)
    r = subprocess.run([sys.executable, "-m", "broker", "probe", "--ready-file", str(f), "--timeout", "1"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 1, r.stdout
    assert any(w in r.stderr for w in ("not serving yet", "no listener in the ready file", "cannot reach")), r.stderr


def test_image_and_compose_files():
    df = (ROOT / "docker" / "Dockerfile").read_text()
    assert df.startswith("#") and "FROM python:3.11-slim AS base" in df and "USER hourglass" in df
    assert 'VOLUME ["/var/lib/hourglass"]' in df and "AS pipeline" in df
    assert df.rstrip().splitlines()[-1] == "FROM broker"  # the default target is the broker
    assert "CMD " + str(PROBE_CMD).replace("'", '"') in df
    for line in df.splitlines():  # everything the image copies from the context exists
        if line.startswith("COPY ") and "--from=" not in line:
            for src in line.split()[1:-1]:
                assert (ROOT / src).exists(), src
    # ... and .dockerignore lets in what it copies from tests/ (the Maven poms of the connector)
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    for src in ("tests/jvm/pom.xml", "tests/jvm/spark-kafka/pom.xml"):
        assert f"COPY {src} " in df and f"!{src}" in ignore, src
    # the pipeline image carries Spark's kafka connector and names it for the job
    assert "COPY --from=spark-kafka /opt/spark-kafka/libs /opt/spark-kafka/libs" in df
    assert "SPARK_KAFKA_JARS=/opt/spark-kafka/libs" in df
    compose = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())
    svc = compose["services"]
    assert set(svc) == {"broker", "demo-producer", "spark-job"}
    assert svc["broker"]["ports"] == ["${HOURGLASS_PORT:-9092}:9092", "${HOURGLASS_REGISTRY_PORT:-8081}:8081",
                                      "${HOURGLASS_CONSOLE_PORT:-8080}:8080"]
    assert "EXPOSE 9092 8081 8080" in df
    assert svc["broker"]["healthcheck"]["test"][1:] == PROBE_CMD
    assert svc["demo-producer"]["depends_on"]["broker"]["condition"] == "service_healthy"
    assert svc["spark-job"]["build"]["target"] == "pipeline"
    job = svc["spark-job"]["command"]
    assert job[job.index("--bootstrap") + 1] == "broker:29092" and "--stream" in job
    assert job[job.index("--source") + 1] == "kafka"  # Spark's own kafka source, the image's connector
    sasl = yaml.safe_load((ROOT / "docker" / "sasl-ssl" / "compose.yaml").read_text())
    assert sasl["services"]["broker"]["healthcheck"]["test"][1:] == PROBE_CMD
