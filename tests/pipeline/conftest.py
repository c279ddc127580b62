"""One SparkSession for the pipeline tests, with Spark's own Kafka connector on its classpath.

``SPARK_KAFKA_JARS`` is set from the jars ``make jvm`` resolved (tests/jvm/spark-kafka:
spark-sql-kafka-0-10 and what PySpark does not ship) unless the environment names others; a
missing cache fails with the command to run. Spark starts once per test process (its JVM
start-up is most of a test's time on two cores): the modules that use it mark themselves
``xdist_group(SPARK_GROUP)``, so they share one worker and one session.
"""
from __future__ import annotations

import os
import time

import pytest

from pipeline import job
from tests.helpers import jvm

SPARK_GROUP = "spark"


def spark_kafka_libs() -> str:
    return str(jvm.libs(f"spark-kafka-{jvm.version('spark')}"))


# A hang guard for tests on the shared session, not a time limit: the first one also pays for
# Spark's start (over a minute on a busy two-core host), and a test stopped by pytest-timeout
# mid-call leaves py4j's connection out of step for every later test on the session.
SPARK_TEST_TIMEOUT_S = 600


def pytest_collection_modifyitems(config, items):
    # (the modules using the session mark themselves xdist_group(SPARK_GROUP): a mark added here
    # comes too late for xdist's worker, which names the groups first)
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.path).startswith(here) and "spark" in getattr(item, "fixturenames", ()):
            if item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(SPARK_TEST_TIMEOUT_S))


@pytest.fixture(scope="session")
def spark_kafka_jars() -> str:
    """The connector's jars folder, exported as ``SPARK_KAFKA_JARS`` for job.session() too."""
    try:
        libs = spark_kafka_libs()
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
    os.environ.setdefault("SPARK_KAFKA_JARS", libs)
    return os.environ["SPARK_KAFKA_JARS"]


@pytest.fixture(scope="session")
def spark(spark_kafka_jars):
    # the driver on loopback, whatever interfaces this machine has (the tests' brokers are there)
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    job.local_spark_env()
    from pyspark.sql import SparkSession
    t0 = time.monotonic()
    s = (SparkSession.builder.master("local[2]").appName("hourglass-tests")
         .config("spark.jars", ",".join(job.kafka_jars(spark_kafka_jars)))
         .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
         .config("spark.sql.session.timeZone", "UTC").config("spark.driver.host", "127.0.0.1")
         .getOrCreate())
    s.sparkContext.setLogLevel("ERROR")
    assert job.kafka_connector_present(s), f"Spark does not find its kafka source in {spark_kafka_jars}"
    print(f"SparkSession with the kafka connector started in {time.monotonic() - t0:.1f} s")
    yield s
    s.stop()
