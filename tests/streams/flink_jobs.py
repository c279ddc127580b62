"""Flink jobs against a Kafka-compatible broker, run under PyFlink's own virtualenv.

    <pyflink venv>/bin/python tests/streams/flink_jobs.py <job> '<json args>'

prints its answer as one JSON line on stdout after ``FLINK-JOB-ANSWER ``. Flink SQL through PyFlink's Table API,
the Kafka tables through ``flink-sql-connector-kafka`` (``connector_jar``), a local mini-cluster
with parallelism 1. Not a test module: tests/streams/test_flink.py runs it (this interpreter has
PyFlink and none of the test venv's packages).

Jobs (``many`` runs several, ``{"jobs": [[name, args], ...]}``, in one process):
- ``read_from_timestamp``: a Flink SQL table over ``topic`` with ``scan.startup.mode =
  'timestamp'`` (bounded at the latest offsets), the record timestamp as the ``timestamp``
  metadata column and an event-time watermark on it; answers every row (partition, offset, key,
  value, timestamp ms, CURRENT_WATERMARK ms) and the counts of a 10 s tumbling event-time window
  over the same table.
- ``exactly_once_sink``: ``rows`` rows (``seq`` 1..rows, ``rows_per_second``) from Flink's
  datagen into a Kafka table with ``sink.delivery-guarantee = 'exactly-once'``, checkpointing
  every ``checkpoint_ms``: one Kafka transaction per checkpoint.
"""
from __future__ import annotations

import calendar
import datetime as dt
import json
import sys

from pyflink.table import EnvironmentSettings, TableEnvironment


def _env(connector_jar: str) -> TableEnvironment:
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    conf = env.get_config()
    conf.set("pipeline.jars", f"file://{connector_jar}")
    conf.set("parallelism.default", "1")
    conf.set("table.local-time-zone", "UTC")
    conf.set("rest.bind-port", "0")
    return env


def _ms(t) -> int | None:
    """A TIMESTAMP(3) in ms. TIMESTAMP_LTZ values are cast to TIMESTAMP(3) in SQL first (the
    session's zone is UTC, so the wall-clock time is UTC): PyFlink's bridge cannot hand an
    Instant over to Python."""
    if t is None:
        return None
    if isinstance(t, dt.datetime):
        if t.tzinfo is not None:
            t = t.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return calendar.timegm(t.timetuple()) * 1000 + t.microsecond // 1000
    raise TypeError(f"not a timestamp: {t!r}")


def _source_ddl(name: str, a: dict, startup: str) -> str:
    return f"""
        CREATE TABLE {name} (
          `k` STRING,
          `v` STRING,
          `ts` TIMESTAMP_LTZ(3) METADATA FROM 'timestamp',
          `part` INT METADATA FROM 'partition' VIRTUAL,
          `off` BIGINT METADATA FROM 'offset' VIRTUAL,
          WATERMARK FOR `ts` AS `ts` - INTERVAL '{int(a.get("watermark_delay_ms", 1000)) / 1000:.3f}' SECOND
        ) WITH (
          'connector' = 'kafka',
          'topic' = '{a["topic"]}',
          'properties.bootstrap.servers' = '{a["bootstrap"]}',
          'properties.group.id' = 'flink-{name}',
          {startup}
          'scan.bounded.mode' = 'latest-offset',
          'scan.watermark.emit.strategy' = 'on-event',
          'key.format' = 'raw',
          'key.fields' = 'k',
          'value.format' = 'raw',
          'value.fields-include' = 'EXCEPT_KEY'
        )"""


def read_from_timestamp(a: dict) -> dict:
    env = _env(a["connector_jar"])
    startup = f"'scan.startup.mode' = 'timestamp', 'scan.startup.timestamp-millis' = '{int(a['timestamp_ms'])}',"
    env.execute_sql(_source_ddl("src", a, startup))
    rows = []
    with env.execute_sql("SELECT part, off, k, v, CAST(ts AS TIMESTAMP(3)), "
                         "CAST(CURRENT_WATERMARK(ts) AS TIMESTAMP(3)) FROM src").collect() as results:
        for r in results:
            rows.append([r[0], r[1], r[2], r[3], _ms(r[4]), _ms(r[5])])
    windows = []
    q = """SELECT window_start, window_end, COUNT(*) FROM TABLE(
             TUMBLE(TABLE src, DESCRIPTOR(ts), INTERVAL '10' SECOND))
           GROUP BY window_start, window_end"""
    with env.execute_sql(q).collect() as results:
        for r in results:
            windows.append([_ms(r[0]), _ms(r[1]), r[2]])
    return {"rows": rows, "windows": windows}


def exactly_once_sink(a: dict) -> dict:
    env = _env(a["connector_jar"])
    conf = env.get_config()
    conf.set("execution.checkpointing.interval", f"{int(a.get('checkpoint_ms', 1000))} ms")
    env.execute_sql(f"""
        CREATE TABLE gen (seq BIGINT) WITH (
          'connector' = 'datagen',
          'rows-per-second' = '{int(a.get("rows_per_second", 500))}',
          'number-of-rows' = '{int(a["rows"])}',
          'fields.seq.kind' = 'sequence',
          'fields.seq.start' = '1',
          'fields.seq.end' = '{int(a["rows"])}'
        )""")
    env.execute_sql(f"""
        CREATE TABLE sink (`k` STRING, `v` STRING) WITH (
          'connector' = 'kafka',
          'topic' = '{a["topic"]}',
          'properties.bootstrap.servers' = '{a["bootstrap"]}',
          'properties.transaction.timeout.ms' = '60000',
          'sink.delivery-guarantee' = 'exactly-once',
          'sink.transactional-id-prefix' = '{a["transactional_id_prefix"]}',
          'key.format' = 'raw',
          'key.fields' = 'k',
          'value.format' = 'raw',
          'value.fields-include' = 'EXCEPT_KEY'
        )""")
    result = env.execute_sql("INSERT INTO sink SELECT CAST(seq % 7 AS STRING), CAST(seq AS STRING) FROM gen")
    result.wait()
    return {"status": "finished"}


ANSWER = "FLINK-JOB-ANSWER "
JOBS = {"read_from_timestamp": read_from_timestamp, "exactly_once_sink": exactly_once_sink}

def many(a: dict) -> dict:
    """Several jobs in one PyFlink process (its JVM's start is most of a small job's time)."""
    return {name: JOBS[name](args) for name, args in a["jobs"]}


if __name__ == "__main__":
    answer = many(json.loads(sys.argv[2])) if sys.argv[1] == "many" else JOBS[sys.argv[1]](json.loads(sys.argv[2]))
    sys.stdout.write("\n" + ANSWER + json.dumps(answer) + "\n")
    sys.stdout.flush()
