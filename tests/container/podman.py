"""Podman as the container tests drive it: Debian's podman with Debian's runc as its runtime and
explicit ulimits (containers.conf next to this file, given through CONTAINERS_CONF, so
podman-compose's own podman calls get them too), images built from a debootstrapped base
(scripts/container_base.sh) with ``--format docker`` so HEALTHCHECK is kept.

Podman runs no healthcheck timers without systemd: ``healthy()`` runs ``podman healthcheck run``
every half second, as the timer would, and that is what records the container's health status.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import subprocess
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

from tests.helpers.kafka_oracle import free_port

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("HOURGLASS_CONTAINER_CACHE", Path.home() / ".cache" / "hourglass" / "container"))
CONF = Path(__file__).with_name("containers.conf")
IMAGE = "localhost/hourglass:test"
PIPELINE_IMAGE = "localhost/hourglass-pipeline:test"
WHEELS = CACHE / "wheels"  # mounted at /opt/hourglass-wheels during builds (see container_base.sh)
# host pip paths a build may need (file:// indexes, find-links in the host's pip configuration)
_HOST_PIP_DIRS = ("/opt/wheels", "/opt/pypi", "/opt/pypi-more")
FIGURES: dict[str, float] = {}


def env() -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": str(CONF)}


def podman(*args, check: bool = True, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(["podman", *map(str, args)], capture_output=True, text=True, env=env(), timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise AssertionError(f"podman {' '.join(map(str, args))} exited {r.returncode}:\n{r.stdout[-3000:]}\n"
                             f"{r.stderr[-3000:]}")
    return r


@contextmanager
def _lock(name: str):
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / name, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # xdist workers build once, the others reuse the cache
        yield


def base_image() -> str:
    r = subprocess.run([str(ROOT / "scripts" / "container_base.sh")], capture_output=True, text=True, env=env(),
                       timeout=1200)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout.strip().splitlines()[-1]


def pipeline_wheels() -> None:
    """PySpark is a 450 MB sdist on PyPI: the host's pip makes wheels once (from its cache)."""
    import sys
    import tomllib
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["pipeline"]
    pinned = next((r.split("==", 1)[1] for r in extra if r.startswith("pyspark==")), "")
    with _lock(".wheels.lock"):
        if any(WHEELS.glob(f"pyspark-{pinned}*.whl")):  # the pinned release's wheel, not an older pin's
            return
        WHEELS.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "-w", str(WHEELS), *extra], check=True,
                       capture_output=True, timeout=1200)


def build(tag: str, target: str | None = None) -> float:
    """``podman build`` of docker/Dockerfile from the repository; returns the seconds it took."""
    base = base_image()
    mounts = []
    for d in _HOST_PIP_DIRS:
        if os.path.isdir(d):
            mounts += ["-v", f"{d}:{d}:ro"]
    if WHEELS.is_dir():
        mounts += ["-v", f"{WHEELS}:/opt/hourglass-wheels:ro"]
    with _lock(".build.lock"):
        t0 = time.monotonic()
        podman("build", "--format", "docker", "--network", "host", "--from", base, *mounts,
               *(["--target", target] if target else []), "-f", ROOT / "docker" / "Dockerfile", "-t", tag, ROOT,
               timeout=1800)
        return time.monotonic() - t0


def image_size_mb(tag: str) -> float:
    return int(podman("image", "inspect", tag, "--format", "{{.Size}}").stdout.strip()) / 1e6


class Container:
    """One ``podman run -d`` of the image; removed (with its anonymous volumes) on exit."""

    def __init__(self, *run_args, image: str = IMAGE, args=()):
        self.name = f"hgtest-{uuid.uuid4().hex[:10]}"
        self.run_args, self.image, self.args = list(run_args), image, list(args)

    def __enter__(self) -> "Container":
        self.started = time.monotonic()
        podman("run", "-d", "--name", self.name, *self.run_args, self.image, *self.args)
        return self

    def __exit__(self, *exc) -> None:
        podman("rm", "-f", "-v", "-t", "5", self.name, check=False)

    def exec(self, *cmd, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
        return podman("exec", self.name, *cmd, check=check, timeout=timeout)

    def inspect(self) -> dict:
        return json.loads(podman("inspect", self.name).stdout)[0]

    def logs(self) -> str:
        r = podman("logs", self.name, check=False)
        return r.stdout + r.stderr

    def healthy(self, timeout: float = 60) -> float:
        """Seconds from ``podman run`` to the first passing healthcheck."""
        deadline = time.monotonic() + timeout
        while True:
            r = podman("healthcheck", "run", self.name, check=False)
            if r.returncode == 0:
                return time.monotonic() - self.started
            state = self.inspect()["State"]
            assert state["Running"], f"container exited {state['ExitCode']}:\n{self.logs()[-3000:]}"
            assert time.monotonic() < deadline, f"not healthy after {timeout} s: {r.stdout} {r.stderr}\n" \
                                                f"{self.logs()[-3000:]}"
            time.sleep(0.5)

    def stop(self, timeout: int = 20) -> int:
        podman("stop", "-t", timeout, self.name, timeout=timeout + 30)
        return self.inspect()["State"]["ExitCode"]


def compose(project: str, compose_file: Path, *args, extra_env: dict | None = None, check: bool = True,
            timeout: float = 300) -> subprocess.CompletedProcess:
    r = subprocess.run(["podman-compose", "-p", project, "-f", str(compose_file), *args], capture_output=True,
                       text=True, env={**env(), **(extra_env or {})}, timeout=timeout, cwd=compose_file.parent)
    if check and r.returncode != 0:
        raise AssertionError(f"podman-compose {' '.join(args)} exited {r.returncode}:\n{r.stdout[-4000:]}\n"
                             f"{r.stderr[-4000:]}")
    return r


def have_tools() -> list[str]:
    return [t for t in ("podman", "runc", "debootstrap", "podman-compose") if shutil.which(t) is None]


# ---- a Docker-compatible API for Testcontainers -------------------------------------------------
TESTCONTAINERS_LABEL = "org.testcontainers=true"


class DockerApi:
    """``podman system service`` on a socket of its own: the Docker-compatible API that every
    Testcontainers library drives, rootful, with this folder's containers.conf.

    ``env`` is what a Testcontainers user on this machine sets:
    - ``DOCKER_HOST``: the socket, as Testcontainers documents for podman;
    - ``TESTCONTAINERS_RYUK_DISABLED=true``: Ryuk (the reaper) is an image of its own that
      Testcontainers pulls from a container registry, and no registry is reachable here; this
      class removes what the session's containers leave instead (``reap``);
    - ``TESTCONTAINERS_HOST_OVERRIDE=localhost`` and ``TESTCONTAINERS_CONNECTION_MODE=docker_host``:
      this machine has a ``/.dockerenv``, from which the libraries conclude they run inside a
      container and would look for the published ports at the default gateway; the runtime is on
      this very host, where podman publishes them.
    """

    def __init__(self, workdir: Path):
        self.sock = Path(workdir) / "podman.sock"
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> "DockerApi":
        self.reap()  # what a killed earlier run left
        self.proc = subprocess.Popen(["podman", "system", "service", "--time=0", f"unix://{self.sock}"],
                                     env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     start_new_session=True)
        deadline = time.monotonic() + 30
        while not self._answers():
            assert self.proc.poll() is None, f"podman system service exited: {self.proc.stderr.read()[-2000:]}"
            assert time.monotonic() < deadline, "podman system service did not answer /_ping in 30 s"
            time.sleep(0.1)
        return self

    def _answers(self) -> bool:
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(2)
                s.connect(str(self.sock))
                s.sendall(b"GET /_ping HTTP/1.0\r\n\r\n")
                return b"OK" in s.recv(4096)
        except OSError:
            return False

    @property
    def env(self) -> dict[str, str]:
        return {**env(), "DOCKER_HOST": f"unix://{self.sock}", "TESTCONTAINERS_RYUK_DISABLED": "true",
                "TESTCONTAINERS_HOST_OVERRIDE": "localhost", "TESTCONTAINERS_CONNECTION_MODE": "docker_host"}

    def reap(self) -> None:
        """Remove every container and network Testcontainers labelled (Ryuk's job)."""
        ids = podman("ps", "-aq", "--filter", f"label={TESTCONTAINERS_LABEL}", check=False).stdout.split()
        if ids:
            podman("rm", "-f", "-v", "-t", "2", *ids, check=False)
        nets = podman("network", "ls", "-q", "--filter", f"label={TESTCONTAINERS_LABEL}", check=False).stdout.split()
        if nets:
            podman("network", "rm", "-f", *nets, check=False)

    def __exit__(self, *exc) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.reap()
