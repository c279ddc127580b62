"""``hourglass-pipeline``: replay a topic from a point in time and count events per
event-time window.

    spark-submit --packages org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0 -m pipeline.job \\
        --bootstrap localhost:9092 --topic events --from 2026-11-22T10:00:00Z \\
        --window "1 minute" --watermark "5 minutes" --sink console

Reads with Spark's own ``kafka`` source whenever its connector (spark-sql-kafka-0-10) is on the
classpath: ``--packages``, ``spark.jars``, or the jars named by ``SPARK_KAFKA_JARS`` (a folder, a
glob or a comma list). Without it the job reads with the Python data source ``hourglass_kafka``
(same options and schema, no JVM jars); ``--source kafka|python`` chooses explicitly, and one log
line says which source reads. ``--source iceberg --catalog URL`` reads the topic's Iceberg table
instead of the log (the topic's ``iceberg.mode`` on, the broker's ``iceberg.catalog.listeners``
URL; the Python data source ``hourglass_iceberg``, batch only): the same rows from ``--from`` as
Spark's kafka source with read_committed, and the rows the log's retention already deleted. Events are JSON ``{"id": ..., "ts": epoch_ms, "kind": "..."}``;
``ts`` is the event time (the record's timestamp when absent).
"""
from __future__ import annotations

import argparse
import glob
import json
import logging
import os
import signal
import sys

log = logging.getLogger("hourglass.pipeline")

EVENT_SCHEMA = "id string, ts long, kind string"
# the connector's coordinates for the PySpark pinned in pyproject.toml (tests/jvm/pom.xml's
# spark.version); the log line names them when the connector is missing
CONNECTOR = "org.apache.spark:spark-sql-kafka-0-10_2.13"


def parse_from(text: str | None) -> dict:
    """Reader options for ``--from``: a time (ISO-8601 or epoch ms) for every partition, or
    JSON per partition ``{"topic": {"0": ms}}``."""
    if text is None:
        return {"startingOffsets": "earliest"}
    t = text.strip()
    if t.startswith("{"):
        return {"startingOffsetsByTimestamp": t}
    from hourglass.cli.client import parse_time
    return {"startingTimestamp": str(parse_time(t))}


def parse_until(text: str) -> dict:
    """Reader options for ``--until`` (batch): a time for every partition
    (``endingTimestamp``) or JSON per partition ``{"topic": {"0": ms}}``
    (``endingOffsetsByTimestamp``); the read stops before the first offset at or after it."""
    t = text.strip()
    if t.startswith("{"):
        return {"endingOffsetsByTimestamp": t}
    from hourglass.cli.client import parse_time
    return {"endingTimestamp": str(parse_time(t))}


def reader_options(args, source: str = "kafka") -> dict:
    opts = {"kafka.bootstrap.servers": args.bootstrap, "subscribe": args.topic,
            "startingOffsetsByTimestampStrategy": args.strategy, **parse_from(args.start)}
    if args.ending_offsets and not args.stream:
        opts["endingOffsets"] = args.ending_offsets
    if args.until and not args.stream:
        opts.update(parse_until(args.until))
    if args.max_offsets_per_trigger:
        opts["maxOffsetsPerTrigger"] = str(args.max_offsets_per_trigger)
    if getattr(args, "isolation_level", None):
        # Spark's kafka source passes kafka.* to its consumers; so does hourglass_kafka
        opts["kafka.isolation.level"] = args.isolation_level
    if source == "kafka":
        opts["includeHeaders"] = "true"  # the Python data source always has them
    if source == "iceberg":
        opts["catalog.uri"] = args.catalog
    return opts


class SourceError(RuntimeError):
    """``--source kafka`` (or the kafka sink) without Spark's kafka connector on the classpath."""


def kafka_connector_present(spark) -> bool:
    """Whether Spark resolves ``format("kafka")``: Spark's own data source lookup, so the
    connector counts however it got there (``--packages``, ``spark.jars``, ``SPARK_KAFKA_JARS``,
    a cluster's jars folder)."""
    try:
        jvm = spark._jvm
        jvm.org.apache.spark.sql.execution.datasources.DataSource.lookupDataSource(
            "kafka", spark._jsparkSession.sessionState().conf())
        return True
    except AttributeError:  # Spark Connect: no JVM here, the server resolves the source
        return True
    except Exception:  # py4j's Java error: DATA_SOURCE_NOT_FOUND
        return False


def choose_source(requested: str, connector_present: bool, spark_version: str = "<spark version>") -> tuple[str, str]:
    """(source, why): ``auto`` is Spark's ``kafka`` source when the connector is there, else
    the Python data source; an explicit ``kafka`` without the connector is an error."""
    missing = (f"spark-sql-kafka-0-10 is not on the classpath (spark-submit --packages {CONNECTOR}:{spark_version}, "
               "spark.jars or SPARK_KAFKA_JARS)")
    if requested == "python":
        return "python", "chosen with --source python"
    if requested == "iceberg":
        return "iceberg", "chosen with --source iceberg"
    if requested == "kafka":
        if not connector_present:
            raise SourceError(f"--source kafka: {missing}")
        return "kafka", "chosen with --source kafka"
    if requested != "auto":
        raise ValueError(f"unknown source {requested!r}")
    if connector_present:
        return "kafka", "spark-sql-kafka-0-10 is on the classpath"
    return "python", missing


def resolve_source(spark, args) -> str:
    """The source ``args.source`` names on this session, logged once per read."""
    present = kafka_connector_present(spark) if args.source not in ("python", "iceberg") else False
    source, why = choose_source(args.source, present, spark.version)
    name = {"kafka": "Spark's kafka source", "python": "the Python data source hourglass_kafka",
            "iceberg": f"the Python data source hourglass_iceberg (its Iceberg table, catalog {args.catalog})"}[source]
    log.info("hourglass-pipeline: reading %s with %s (%s)", args.topic, name, why)
    return source


def read(spark, args):
    source = resolve_source(spark, args)
    fmt = {"python": "hourglass_kafka", "kafka": "kafka", "iceberg": "hourglass_iceberg"}[source]
    if source == "python":
        from pipeline.source import register
        register(spark)
    if source == "iceberg":
        refused = [flag for flag, on in (("--stream", args.stream), ("--until", args.until),
                                         ("--ending-offsets", args.ending_offsets)) if on]
        if refused:
            raise SourceError(f"--source iceberg reads the table once, up to what it holds: {', '.join(refused)} "
                              "not served")
        from pipeline.table_source import register
        register(spark)
    r = spark.readStream if args.stream else spark.read
    return r.format(fmt).options(**reader_options(args, source)).load()


def windowed_counts(df, window: str, watermark: str | None):
    """Counts per (event-time window, kind); event time from the JSON ``ts`` or the record."""
    from pyspark.sql import functions as F
    ev = df.select(F.from_json(F.col("value").cast("string"), EVENT_SCHEMA).alias("e"),
                   F.col("timestamp"), F.col("partition"), F.col("offset"))
    ev = ev.select(F.coalesce((F.col("e.ts") / 1000).cast("timestamp"), F.col("timestamp")).alias("event_time"),
                   F.coalesce(F.col("e.kind"), F.lit("unknown")).alias("kind"))
    if watermark:
        ev = ev.withWatermark("event_time", watermark)
    return (ev.groupBy(F.window("event_time", window).alias("window"), "kind").count()
            .select(F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"),
                    "kind", "count"))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hourglass-pipeline", description=__doc__.split("\n\n")[0])
    p.add_argument("--bootstrap", default="localhost:9092")
    p.add_argument("--topic", required=True, help="topic(s) to read, comma-separated")
    p.add_argument("--from", dest="start", metavar="TIME",
                   help="ISO-8601 or epoch ms, or JSON {\"topic\": {\"0\": ms}} per partition (default: earliest)")
    p.add_argument("--strategy", choices=["error", "latest"], default="error",
                   help="startingOffsetsByTimestampStrategy: when no record is at or after the time")
    p.add_argument("--ending-offsets", help="batch only: latest (default) or JSON per partition")
    p.add_argument("--until", metavar="TIME",
                   help="batch only: stop before this time (ISO-8601 or epoch ms), or JSON {\"topic\": {\"0\": ms}} "
                        "per partition (endingTimestamp / endingOffsetsByTimestamp)")
    p.add_argument("--max-offsets-per-trigger", type=int)
    p.add_argument("--isolation-level", choices=["read_committed", "read_uncommitted"],
                   help="kafka.isolation.level: read_committed reads only committed transactions, up to "
                        "the last stable offset")
    p.add_argument("--source", choices=["auto", "kafka", "python", "iceberg"],
                   default=os.environ.get("HOURGLASS_PIPELINE_SOURCE", "auto"),
                   help="auto (default): Spark's kafka source when spark-sql-kafka-0-10 is on the classpath, "
                        "else the Python data source hourglass_kafka; iceberg: the topic's Iceberg table "
                        "(iceberg.mode) through --catalog, batch only")
    p.add_argument("--catalog", default=os.environ.get("HOURGLASS_ICEBERG_CATALOG", "http://localhost:8181"),
                   help="--source iceberg: the broker's Iceberg REST catalog URL (iceberg.catalog.listeners)")
    p.add_argument("--stream", action="store_true", help="Structured Streaming instead of one batch")
    p.add_argument("--trigger", choices=["availableNow", "continuous-poll"], default="availableNow",
                   help="streaming: process what is there and stop, or keep polling every 5 s")
    p.add_argument("--checkpoint", help="streaming checkpoint dir (resume where the last run stopped)")
    p.add_argument("--window", default="1 minute")
    p.add_argument("--watermark", default="10 minutes")
    p.add_argument("--sink", choices=["console", "parquet", "memory", "kafka"], default="console")
    p.add_argument("--output", help="parquet directory (sink parquet) or topic (sink kafka: Spark's kafka sink, "
                                    "to the --bootstrap cluster)")
    p.add_argument("--query-name", default="hourglass_counts", help="memory sink table name")
    return p


class JarsError(ValueError):
    """``SPARK_KAFKA_JARS`` names something that holds no jar."""


_GLOB_CHARS = frozenset("*?[")


def kafka_jars(value: str) -> list[str]:
    """The jars ``SPARK_KAFKA_JARS`` names, for ``spark.jars``: a comma list whose items are each
    a folder (every ``*.jar`` in it, sorted), a glob (the jars it matches, sorted) or one jar (a path or
    a URL Spark fetches). ``~`` is expanded; an item that yields no jar is an error, since Spark
    would only say "Failed to find data source: kafka" much later."""
    out: list[str] = []
    for item in (i.strip() for i in value.split(",")):
        if not item:
            continue
        if "://" in item:  # file:, hdfs:, https: URLs go to Spark as they are
            out.append(item)
            continue
        path = os.path.expanduser(item)
        if os.path.isdir(path):
            found = sorted(glob.glob(os.path.join(glob.escape(path), "*.jar")))
            if not found:
                raise JarsError(f"SPARK_KAFKA_JARS: no *.jar in the folder {item}")
        elif _GLOB_CHARS & set(path):
            found = sorted(f for f in glob.glob(path) if os.path.isfile(f) and f.lower().endswith(".jar"))
            if not found:
                raise JarsError(f"SPARK_KAFKA_JARS: no jar matches {item}")
        elif os.path.isfile(path):
            found = [path]
        else:
            raise JarsError(f"SPARK_KAFKA_JARS: no such jar or folder: {item}")
        out += [os.path.abspath(f) for f in found if os.path.abspath(f) not in out]
    return out


def local_spark_env() -> None:
    """Environment for a Spark started by this process (local mode): Python workers run this
    interpreter (it has confluent-kafka and pyarrow), not whatever ``python3`` is first on PATH,
    and the driver binds to loopback rather than whichever interface Spark picks. Values
    already set win (a cluster deployment sets its own)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def session(app: str = "hourglass-pipeline"):
    from pyspark.sql import SparkSession
    local_spark_env()
    b = SparkSession.builder.appName(app)
    jars = os.environ.get("SPARK_KAFKA_JARS")
    if jars:
        b = b.config("spark.jars", ",".join(kafka_jars(jars)))
    return b.getOrCreate()


def as_kafka_records(counts, source_topic: str):
    """The counts as records for Spark's kafka sink: key ``<window start ms>/<kind>`` (a window's
    later updates replace earlier ones in a compacted topic), value JSON, a ``hourglass.source``
    header naming the topic read (Spark's sink has no timestamp column: the producer's time)."""
    from pyspark.sql import functions as F
    start_ms = (F.unix_micros(F.col("window_start")) / 1000).cast("long")
    value = F.to_json(F.struct(start_ms.alias("window_start"),
                               (F.unix_micros(F.col("window_end")) / 1000).cast("long").alias("window_end"),
                               "kind", "count"))
    return counts.select(F.concat_ws("/", start_ms.cast("string"), F.col("kind")).alias("key"),
                         value.alias("value"),
                         F.array(F.struct(F.lit("hourglass.source").alias("key"),
                                          F.lit(source_topic).cast("binary").alias("value"))).alias("headers"))


def run(spark, args):
    """Run the job; returns the batch result DataFrame or the finished streaming query."""
    if args.sink == "kafka" and not kafka_connector_present(spark):
        raise SourceError(f"--sink kafka is Spark's kafka sink: put {CONNECTOR}:{spark.version} on the classpath")
    counts = windowed_counts(read(spark, args), args.window, args.watermark)
    if args.sink == "kafka":
        counts = as_kafka_records(counts, args.topic)
    if not args.stream:
        if args.sink == "parquet":
            counts.write.mode("overwrite").parquet(args.output)
        elif args.sink == "memory":
            counts.createOrReplaceTempView(args.query_name)
        elif args.sink == "kafka":
            (counts.write.format("kafka").option("kafka.bootstrap.servers", args.bootstrap)
             .option("topic", args.output).save())
        else:
            counts.orderBy("window_start", "kind").show(truncate=False)
        return counts
    mode = {"console": "update", "memory": "complete", "parquet": "append", "kafka": "update"}[args.sink]
    w = counts.writeStream.outputMode(mode).format(args.sink).queryName(args.query_name)
    if args.checkpoint:
        w = w.option("checkpointLocation", args.checkpoint)
    if args.sink == "parquet":
        w = w.option("path", args.output)
    if args.sink == "kafka":
        w = w.option("kafka.bootstrap.servers", args.bootstrap).option("topic", args.output)
    w = w.trigger(availableNow=True) if args.trigger == "availableNow" else w.trigger(processingTime="5 seconds")
    q = w.start()
    if args.trigger == "availableNow":
        q.awaitTermination()
    return q


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    # a container's stop is a SIGTERM to PID 1, which Python leaves ignored there: stop the
    # query and Spark as on Ctrl-C rather than wait for the runtime's kill
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    if args.sink in ("parquet", "kafka") and not args.output:
        what = "DIR" if args.sink == "parquet" else "TOPIC"
        print(f"hourglass-pipeline: --sink {args.sink} needs --output {what}", file=sys.stderr)
        return 2
    if args.sink == "kafka" and args.stream and not args.checkpoint:
        print("hourglass-pipeline: --sink kafka --stream needs --checkpoint DIR", file=sys.stderr)
        return 2
    try:
        spark = session()
    except JarsError as exc:
        print(f"hourglass-pipeline: {exc}", file=sys.stderr)
        return 2
    try:
        try:
            q = run(spark, args)
        except SourceError as exc:
            print(f"hourglass-pipeline: {exc}", file=sys.stderr)
            return 2
        if args.stream and args.trigger != "availableNow":
            try:
                q.awaitTermination()
            except KeyboardInterrupt:
                from py4j.protocol import Py4JNetworkError
                try:
                    q.stop()
                except Py4JNetworkError:
                    # the JVM is already gone (its own shutdown hook stopped the query and Spark):
                    # the stop asked for has happened
                    print("hourglass-pipeline: Spark's JVM had already shut down", file=sys.stderr)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
