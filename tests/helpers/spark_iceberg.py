"""PySpark with Apache Iceberg's Spark runtime, to read topics' Iceberg tables in Spark SQL.

Maven Central serves Iceberg's Spark runtime for Spark 4.0 and 4.1, none for the Spark 4.2 that
pyproject.toml pins (the pipeline's Python data sources need 4.2), and the 4.1 runtime does not
load under 4.2 (tests/jvm/pom.xml at ``iceberg.spark.version`` says how it fails). So Spark SQL
over the tables runs PySpark ``iceberg.spark.version`` in a venv of its own,
``~/.cache/hourglass/pyspark-<version>`` (outside the checkout, made by ``make iceberg-spark`` or
on first use), with the runtime jar ``make jvm`` copied into the cache.

A job is ``tests/lakehouse/spark_sql_job.py <json>`` under that interpreter: one Spark session
for the catalog URL, every named SQL query of the request run in it, the answer printed as JSON
on the line starting with ``ANSWER`` (one JVM per call: a test module makes one call).
"""
from __future__ import annotations

import base64
import json
import os
import subprocess
from pathlib import Path

from tests.helpers import jvm

ANSWER = "SPARK-SQL-ANSWER "
JOB = Path(__file__).resolve().parent.parent / "lakehouse" / "spark_sql_job.py"


def spark_version() -> str:
    return jvm.version("iceberg.spark")


def runtime_jar() -> Path:
    """The ``iceberg-spark-runtime`` jar ``make jvm`` copied into the cache."""
    return next(jvm.libs(f"iceberg-spark-{jvm.version('iceberg')}").glob("iceberg-spark-runtime-*.jar"))


def aws_bundle_jar() -> Path:
    """``iceberg-aws-bundle`` (S3FileIO and its AWS SDK), for tables in an S3 warehouse."""
    return next(jvm.libs(f"iceberg-spark-{jvm.version('iceberg')}").glob("iceberg-aws-bundle-*.jar"))


def venv_dir() -> Path:
    return jvm.cache_dir() / f"pyspark-{spark_version()}"


def python() -> Path:
    """The venv's interpreter (``jvm.cached_venv``)."""
    return jvm.cached_venv(venv_dir(), f"pyspark=={spark_version()}")


def unb64(v):
    return None if v is None else base64.b64decode(v)


def sql(catalog_url: str, queries: dict[str, str], timeout: float = 400.0,
        catalog_conf: dict[str, str] | None = None) -> dict[str, list[list]]:
    """Run ``queries`` (name -> SQL; the catalog is ``hourglass``) in one Spark session; name ->
    rows, each a list of values (binary values base64, timestamps as the SQL renders them); a
    query Spark refuses fails the call with its error (every query's). ``catalog_conf``: more
    properties of the catalog (``spark.sql.catalog.hourglass.<key>``); with any, the AWS bundle
    is on the classpath too (S3 warehouses)."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # the job imports PySpark from its own venv only
    env.pop("SPARK_HOME", None)
    env.setdefault("JAVA_HOME", str(Path(jvm.java()).resolve().parents[1]))
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    jars = [runtime_jar()] + ([aws_bundle_jar()] if catalog_conf is not None else [])
    req = {"catalog": catalog_url, "jar": ",".join(map(str, jars)), "queries": queries,
           "catalog_conf": catalog_conf or {}}
    p = subprocess.run([str(python()), str(JOB), json.dumps(req)], env=env, capture_output=True, text=True,
                       timeout=timeout)
    answers = [line for line in p.stdout.splitlines() if line.startswith(ANSWER)]
    if p.returncode != 0 or not answers:
        raise AssertionError(f"the Spark SQL job exited {p.returncode} without an answer:\n"
                             f"{p.stdout[-3000:]}\n{p.stderr[-6000:]}")
    answer = json.loads(answers[-1][len(ANSWER):])
    if answer.get("errors"):
        raise AssertionError(f"Spark SQL failed: {json.dumps(answer['errors'], indent=1)}")
    return answer


if __name__ == "__main__":  # make iceberg-spark
    print(python(), runtime_jar())
