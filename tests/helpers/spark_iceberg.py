"""PySpark with Apache Iceberg's Spark runtime, to read topics' Iceberg tables (tests/lakehouse).

Maven Central serves Iceberg's Spark runtime for Spark 4.0 and 4.1 but not for the Spark 4.2
that pyproject.toml pins (the pipeline needs 4.2), and the 4.1 runtime does not load under
Spark 4.2 (``IncompatibleClassChangeError`` on ``SparkView``). So the Iceberg reads run PySpark
``iceberg.spark.version`` (tests/jvm/pom.xml) in its own venv in
``~/.cache/hourglass/pyspark-<version>`` (outside the checkout, made by ``make iceberg-spark``
or on first use), with the runtime jar ``make jvm`` copied into the cache.

Jobs run as ``tests/lakehouse/spark_read.py <json args>`` under that interpreter; the job
prints its answer as JSON on a line starting with ``ANSWER``.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.helpers import jvm

ANSWER = "SPARK-ICEBERG-ANSWER "
JOB = Path(__file__).resolve().parent.parent / "lakehouse" / "spark_read.py"


def spark_version() -> str:
    return jvm.version("iceberg.spark")


def runtime_jar() -> Path:
    libs = jvm.libs(f"iceberg-spark-{jvm.version('iceberg')}")
    return next(libs.glob("iceberg-spark-runtime-*.jar"))


def venv_dir() -> Path:
    return jvm.cache_dir() / f"pyspark-{spark_version()}"


def python() -> Path:
    """The venv's interpreter, made with ``pyspark==<version>`` first if missing (a half-made
    venv from an interrupted install has no stamp and is made again)."""
    return jvm.cached_venv(venv_dir(), f"pyspark=={spark_version()}")


def run(args: dict, timeout: float = 300) -> dict:
    """Run the Spark job with ``args``; its JSON answer."""
    env = {**os.environ, "JAVA_HOME": str(Path(jvm.java()).resolve().parents[1])}
    env.pop("PYTHONPATH", None)  # the job imports PySpark from its own venv only
    env.pop("SPARK_HOME", None)
    proc = subprocess.run([str(python()), str(JOB), json.dumps({**args, "jar": str(runtime_jar())})],
                          capture_output=True, text=True, timeout=timeout, env=env)
    for line in proc.stdout.splitlines():
        if line.startswith(ANSWER):
            return json.loads(line[len(ANSWER):])
    raise RuntimeError(f"the Spark job exited {proc.returncode} without an answer:\n{proc.stderr[-4000:]}")


if __name__ == "__main__":  # make iceberg-spark
    print(python())
