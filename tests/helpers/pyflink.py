"""PyFlink (``apache-flink`` from PyPI) in its own virtualenv, and Flink's Kafka connector.

PyFlink pins its own numpy, pandas, pyarrow, protobuf and apache-beam, which the test venv's
packages (PySpark's among them) must not be bent to, so it lives in
``~/.cache/hourglass/pyflink-<flink.version>`` (outside the checkout, shared by checkouts),
installed by ``make flink`` or, on first use, by the test that needs it. The Flink release and
its Kafka connector (``flink-sql-connector-kafka``, resolved by ``make jvm``) are named once, in
``tests/jvm/pom.xml``.

Flink jobs run as ``tests/streams/flink_jobs.py <job> <json args>`` under that venv's Python
(a local mini-cluster in a JVM that PyFlink starts); the job prints its answer as JSON.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.helpers import jvm

ANSWER = "FLINK-JOB-ANSWER "  # the line flink_jobs.py prints its answer on (the JVM may print more)
JOBS = Path(__file__).resolve().parent.parent / "streams" / "flink_jobs.py"


def version() -> str:
    return jvm.version("flink")


def connector_version() -> str:
    return jvm.version("flink.kafka")


def connector_jar() -> Path:
    """The ``flink-sql-connector-kafka`` jar ``make jvm`` copied into the cache."""
    libs = jvm.libs(f"flink-kafka-{connector_version()}")
    return next(libs.glob("flink-sql-connector-kafka-*.jar"))


def venv_dir() -> Path:
    return jvm.cache_dir() / f"pyflink-{version()}"


def python() -> Path:
    """The venv's interpreter (``jvm.cached_venv``)."""
    return jvm.cached_venv(venv_dir(), f"apache-flink=={version()}")


def run_job(job: str, timeout: float = 300.0, **args) -> dict:
    """Run one job of ``flink_jobs.py`` with ``args`` (JSON); returns its JSON answer."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.setdefault("JAVA_HOME", str(Path(jvm.java()).resolve().parents[1]))
    args = {"connector_jar": str(connector_jar()), **args}
    if job == "many":
        args["jobs"] = [[name, {"connector_jar": str(connector_jar()), **a}] for name, a in args["jobs"]]
    p = subprocess.run([str(python()), str(JOBS), job, json.dumps(args)], env=env, capture_output=True,
                       text=True, timeout=timeout)
    if p.returncode != 0:
        raise AssertionError(f"flink job {job} failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-6000:]}")
    answers = [line for line in p.stdout.splitlines() if line.startswith(ANSWER)]
    if not answers:
        raise AssertionError(f"flink job {job} gave no answer:\n{p.stdout[-3000:]}\n{p.stderr[-6000:]}")
    return json.loads(answers[-1][len(ANSWER):])


if __name__ == "__main__":  # make flink
    print(python(), connector_jar())
