"""Container start to first record through each Testcontainers Kafka module, and the container's
memory, for the Hourglass image and for Apache Kafka 4.4 built from its own jars
(bench/kafka_image), interleaved rounds, medians.

A round runs, for each module, one start on each image (the order alternates between rounds):
- ``java``: Testcontainers for Java's ``KafkaContainer`` (tests/jvm/testcontainers FirstRecord);
- ``go``: testcontainers-go's ``kafka.Run`` (``go test -run TestFirstRecord`` in tests/go/testcontainers);
- ``python``: testcontainers-python's ``KafkaContainer`` in its default mode. Hourglass only: that
  mode is a Confluent 7 broker in ZooKeeper mode, which Kafka 4 (no ZooKeeper) cannot run, and
  its ``with_kraft()`` accepts only image tags that read as Confluent Platform 7.0+.

"first record" is the time from the module's start call (the container is created then) to a
record produced and read back, as the module's user waits for it before a first assertion; the
client's own start is inside it for both images. "memory" is the container's peak memory while
it runs (``podman stats``, sampled every 0.25 s), the broker with what its image starts beside it
(Hourglass's registry and console included).

    .venv/bin/python bench/testcontainers_start.py [--rounds 3] [--modules java,go,python]

Needs ``make jvm`` and ``make go-modules`` (the modules' jars and Go modules) and podman.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.container import podman as P  # noqa: E402
from tests.helpers import jvm  # noqa: E402
from tests.helpers.kafka_oracle import kafka_libs  # noqa: E402

KAFKA_IMAGE = f"localhost/kafka-jars:{jvm.version('kafka')}"
FIRST = re.compile(r"first record after (\d+) ms")


def build_kafka_image() -> None:
    """bench/kafka_image with the oracle's jars and docker/entrypoint.py's KAFKA_* mapping."""
    with tempfile.TemporaryDirectory() as ctx:
        ctx = Path(ctx)
        shutil.copytree(ROOT / "bench" / "kafka_image", ctx, dirs_exist_ok=True)
        shutil.copytree(kafka_libs(), ctx / "libs")
        shutil.copy(ROOT / "docker" / "entrypoint.py", ctx / "entrypoint.py")
        P.podman("build", "--format", "docker", "--network", "host", "--from", P.base_image(), "-t", KAFKA_IMAGE,
                 ctx, timeout=1800)


class MemorySampler(threading.Thread):
    """Peak memory (bytes) of the containers Testcontainers started, until ``stop()``."""

    def __init__(self):
        super().__init__(daemon=True)
        self.peak = 0
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            ids = P.podman("ps", "-q", "--filter", f"label={P.TESTCONTAINERS_LABEL}", check=False).stdout.split()
            if ids:
                r = P.podman("stats", "--no-stream", "--format", "json", *ids, check=False)
                try:
                    for s in json.loads(r.stdout or "[]"):
                        self.peak = max(self.peak, _bytes(s["mem_usage"].split("/")[0]))
                except (ValueError, KeyError):
                    pass
            self._done.wait(0.25)

    def stop(self) -> int:
        self._done.set()
        self.join()
        return self.peak


def _bytes(text: str) -> int:
    m = re.match(r"\s*([\d.]+)\s*([kKMGT]?i?B)", text)
    if not m:
        raise ValueError(text)
    unit = {"B": 1, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3}
    return int(float(m.group(1)) * unit[m.group(2)])


def java(api: P.DockerApi, image: str) -> float:
    libs = jvm.libs(f"testcontainers-kafka-{jvm.version('testcontainers')}")
    cp = os.pathsep.join(str(j) for j in sorted(libs.glob("*.jar")))
    r = subprocess.run([jvm.java(), f"-Dhourglass.image={image}", "-cp", cp, "dev.hourglass.tc.FirstRecord"],
                       capture_output=True, text=True, env=api.env, timeout=300)
    return _first(r)


def go(api: P.DockerApi, image: str) -> float:
    r = subprocess.run([shutil.which("go") or "/usr/local/go/bin/go", "test", "-count=1", "-v",
                        "-run", "^TestFirstRecord$", "./..."], cwd=ROOT / "tests" / "go" / "testcontainers",
                       capture_output=True, text=True, env={**api.env, "HOURGLASS_IMAGE": image}, timeout=300)
    return _first(r)


def python(api: P.DockerApi, image: str) -> float:
    os.environ.update(api.env)
    from confluent_kafka import Consumer, Producer
    from testcontainers.community.kafka import KafkaContainer
    began = time.monotonic()
    with KafkaContainer(image) as kafka:
        bootstrap = kafka.get_bootstrap_server()
        p = Producer({"bootstrap.servers": bootstrap})
        p.produce("first", b"hello")
        assert p.flush(60) == 0
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "first-reader", "auto.offset.reset": "earliest"})
        c.subscribe(["first"])
        while (m := c.poll(0.2)) is None or m.error():
            assert time.monotonic() - began < 120, "the record did not come back"
        c.close()
        return time.monotonic() - began


def _first(r: subprocess.CompletedProcess) -> float:
    m = FIRST.search(r.stdout + r.stderr)
    if r.returncode != 0 or not m:
        raise RuntimeError(f"exit {r.returncode}:\n{(r.stdout + r.stderr)[-3000:]}")
    return int(m.group(1)) / 1000


MODULES = {"java": (java, True), "go": (go, True), "python": (python, False)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--modules", default="java,go,python")
    args = ap.parse_args()
    modules = args.modules.split(",")
    print(f"building the images (load {os.getloadavg()[0]:.1f})", flush=True)
    P.build(P.IMAGE)
    if any(MODULES[m][1] for m in modules):
        build_kafka_image()
    images = {"hourglass": P.IMAGE, "kafka": KAFKA_IMAGE}
    results: dict[tuple[str, str], list[tuple[float, int]]] = {}
    with tempfile.TemporaryDirectory() as tmp, P.DockerApi(Path(tmp)) as api:
        for rnd in range(args.rounds):
            order = ["hourglass", "kafka"] if rnd % 2 == 0 else ["kafka", "hourglass"]
            for module in modules:
                run, with_kafka = MODULES[module]
                for name in order:
                    if name == "kafka" and not with_kafka:
                        continue
                    sampler = MemorySampler()
                    sampler.start()
                    try:
                        seconds = run(api, images[name])
                    finally:
                        peak = sampler.stop()
                        api.reap()
                    results.setdefault((module, name), []).append((seconds, peak))
                    print(f"round {rnd + 1} {module:6} {name:9} first record {seconds:6.2f} s  "
                          f"peak memory {peak / 1e6:7.1f} MB  (load {os.getloadavg()[0]:.1f})", flush=True)
    print(f"\nmedians of {args.rounds} rounds (load average now {os.getloadavg()[0]:.1f}):")
    print(f"{'module':8} {'image':10} {'first record s':>15} {'peak memory MB':>15}")
    out = {}
    for (module, name), rows in results.items():
        s = statistics.median(r[0] for r in rows)
        mb = statistics.median(r[1] for r in rows) / 1e6
        out[f"{module}_{name}"] = {"first_record_s": s, "peak_memory_mb": mb}
        print(f"{module:8} {name:10} {s:15.2f} {mb:15.1f}")
    dest = ROOT / "bench" / "results" / "testcontainers_start.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps({"at": time.time(), "rounds": args.rounds, "figures": out}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
