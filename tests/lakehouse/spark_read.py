"""A Spark job (run by tests/helpers/spark_iceberg.py under PySpark with Iceberg's runtime):
reads a topic's table through the broker's Iceberg REST catalog, now and ``TIMESTAMP AS OF``
each given time, and prints the rows as JSON (bytes as base64)."""
import base64
import datetime as dt
import json
import sys

from pyspark.sql import SparkSession

ANSWER = "SPARK-ICEBERG-ANSWER "


def b64(v):
    return None if v is None else base64.b64encode(bytes(v)).decode()


def main() -> None:
    args = json.loads(sys.argv[1])
    spark = (SparkSession.builder.master("local[1]").appName("hourglass-iceberg")
             .config("spark.jars", args["jar"])
             .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
             .config("spark.sql.catalog.hourglass", "org.apache.iceberg.spark.SparkCatalog")
             .config("spark.sql.catalog.hourglass.type", "rest")
             .config("spark.sql.catalog.hourglass.uri", args["catalog"])
             .config("spark.sql.session.timeZone", "UTC").config("spark.ui.enabled", "false")
             .config("spark.driver.host", "127.0.0.1").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    table = f"hourglass.redpanda.`{args['table']}`"

    def rows(as_of_ms=None):
        clause = ""
        if as_of_ms is not None:
            t = dt.datetime.fromtimestamp(as_of_ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")
            clause = f" TIMESTAMP AS OF '{t}'"
        q = (f"SELECT redpanda.partition, redpanda.offset, unix_millis(redpanda.timestamp), "
             f"redpanda.timestamp_type, redpanda.key, value, redpanda.headers FROM {table}{clause}")
        return [[r[0], r[1], r[2], r[3], b64(r[4]), b64(r[5]), [[h["key"], b64(h["value"])] for h in r[6]]]
                for r in spark.sql(q).collect()]
    answer = {"now": rows(), "as_of": {str(t): rows(t) for t in args.get("as_of", [])},
              "tables": [r[1] for r in spark.sql("SHOW TABLES IN hourglass.redpanda").collect()]}
    print(ANSWER + json.dumps(answer), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
