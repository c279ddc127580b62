"""Fetch the Java client jars the tests use (idempotent).

The jars come from PyPI: the ``shigawire-apache-flink-libraries`` wheel ships Apache Kafka's
``kafka-clients`` 3.9.1 with its runtime dependencies (slf4j-api, lz4-java, snappy-java,
zstd-jni, and the jackson jars the client's OAUTHBEARER login and SASL code load) under
``pyflink/lib/``. We ``pip download --no-deps`` that one wheel and extract the jars into the jar dir: ``$HOURGLASS_JARS`` if set, else ``~/.cache/hourglass/jars``.

Prints the jar dir. Does nothing (no network) when all jars are present and kafka-clients
reports the expected version.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

WHEEL = "shigawire-apache-flink-libraries==2.0.0.post1"
JARS = ["kafka-clients.jar", "slf4j-api.jar", "lz4-java.jar", "snappy-java.jar", "zstd-jni.jar",
        "jackson-databind.jar", "jackson-core.jar", "jackson-annotations.jar"]
KAFKA_CLIENTS_VERSION = "3.9.1"


def jar_dir() -> Path:
    env = os.environ.get("HOURGLASS_JARS")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "hourglass" / "jars"


def kafka_clients_version(jar: Path) -> str | None:
    try:
        with zipfile.ZipFile(jar) as z:
            props = z.read("kafka/kafka-version.properties").decode()
    except (OSError, KeyError, zipfile.BadZipFile):
        return None
    for line in props.splitlines():
        if line.startswith("version="):
            return line.split("=", 1)[1].strip()
    return None


def complete(d: Path) -> bool:
    return all((d / j).is_file() for j in JARS) and \
        kafka_clients_version(d / "kafka-clients.jar") == KAFKA_CLIENTS_VERSION


def main() -> int:
    d = jar_dir()
    if complete(d):
        print(d)
        return 0
    d.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", tmp, WHEEL],
                       check=True)
        wheel = next(Path(tmp).glob("*.whl"))
        with zipfile.ZipFile(wheel) as z:
            for j in JARS:
                part = d / (j + ".part")
                with z.open(f"pyflink/lib/{j}") as src, open(part, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                os.replace(part, d / j)  # atomic: a concurrent reader never sees half a jar
    if not complete(d):
        print(f"fetch_jars: {d} is incomplete or kafka-clients is not {KAFKA_CLIENTS_VERSION}", file=sys.stderr)
        return 1
    print(d)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
