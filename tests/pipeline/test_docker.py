"""What can be checked of docker/ without Docker (it cannot run on these machines): the
entrypoint run as a script starts a broker, the healthcheck probe against it, and the image
and compose files' contents."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_entrypoint_script_starts_a_broker_that_passes_the_probe(tmp_path):
    # The environment-to-keys mapping itself is tested in tests/everyday/test_config_dropin.py.
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT),
           "HOURGLASS_FINAL_CONFIG_DIR": str(tmp_path / "etc"),
           "HOURGLASS_MOUNTED_CONFIG_DIR": str(tmp_path / "mnt"),
           "KAFKA_LOG_DIRS": str(tmp_path / "data"),
           "KAFKA_LISTENERS": "PLAINTEXT://127.0.0.1:0",
           "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://127.0.0.1:0"}
    ready = tmp_path / "ready"
    cmd = [sys.executable, str(ROOT / "docker" / "entrypoint.py"), "--ready-file", str(ready)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT, env=env)
    try:
        deadline = time.monotonic() + 20
        while not (ready.exists() and ready.read_text().strip()) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read().decode()
            time.sleep(0.05)
        bootstrap = ready.read_text().split()[0]  # first line: the first listener
        r = subprocess.run([sys.executable, "-m", "broker", "probe", "-b", bootstrap], capture_output=True, cwd=ROOT)
        assert r.returncode == 0 and b"answers" in r.stdout, r.stderr
    finally:
        proc.terminate()
        assert proc.wait(20) == 0
    assert oct((tmp_path / "etc" / "server.properties").stat().st_mode & 0o777) == "0o600"
    r = subprocess.run([sys.executable, "-m", "broker", "probe", "-b", bootstrap, "--timeout", "1"],
                       capture_output=True, cwd=ROOT)
    assert r.returncode == 1 and b"cannot reach" in r.stderr


def test_image_and_compose_files():
    df = (ROOT / "docker" / "Dockerfile").read_text()
    assert "FROM python:3.11-slim" in df and "USER hourglass" in df and 'VOLUME ["/var/lib/hourglass"]' in df
    assert 'CMD ["hourglass", "probe", "-b", "127.0.0.1:9092"]' in df
    for line in df.splitlines():  # everything the image copies exists
        if line.startswith("COPY "):
            for src in line.split()[1:-1]:
                assert (ROOT / src).exists(), src
    compose = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())
    svc = compose["services"]
    assert set(svc) == {"broker", "demo-producer", "spark-job"}
    assert svc["broker"]["ports"] == ["9092:9092"]
    assert svc["broker"]["healthcheck"]["test"][1:3] == ["hourglass", "probe"]
    assert svc["demo-producer"]["depends_on"]["broker"]["condition"] == "service_healthy"
    job = svc["spark-job"]["command"]
    assert "spark-submit" in job[0] and any(a.startswith("org.apache.spark:spark-sql-kafka-0-10_2.13:") for a in job)
    assert job[job.index("--source") + 1] == "kafka" and "/app/pipeline/job.py" in job
