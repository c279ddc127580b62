"""A Spark SQL job, run by tests/helpers/spark_iceberg.py under the PySpark that Iceberg's Spark
runtime is served for: one session whose catalog ``hourglass`` is the broker's Iceberg REST
catalog (Iceberg's SparkCatalog, type rest), every named query of the request run in it, the
rows printed as JSON (binary values base64) on one ``ANSWER`` line."""
import base64
import json
import sys

from pyspark.sql import SparkSession

ANSWER = "SPARK-SQL-ANSWER "


def plain(v):
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(bytes(v)).decode()
    if hasattr(v, "asDict"):  # a struct (a Row is a tuple too)
        return {k: plain(x) for k, x in v.asDict().items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return v if v is None or isinstance(v, (int, float, str, bool)) else str(v)


def main() -> None:
    req = json.loads(sys.argv[1])
    builder = SparkSession.builder
    for key, value in req.get("catalog_conf", {}).items():  # e.g. header.X-Iceberg-Access-Delegation
        builder = builder.config(f"spark.sql.catalog.hourglass.{key}", value)
    spark = (builder.master("local[1]").appName("hourglass-iceberg-sql")
             .config("spark.jars", req["jar"])
             .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
             .config("spark.sql.catalog.hourglass", "org.apache.iceberg.spark.SparkCatalog")
             .config("spark.sql.catalog.hourglass.type", "rest")
             .config("spark.sql.catalog.hourglass.uri", req["catalog"])
             .config("spark.sql.session.timeZone", "UTC").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "1").config("spark.driver.host", "127.0.0.1")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    answer, errors = {}, {}
    try:
        for name, q in req["queries"].items():
            try:
                answer[name] = [plain(list(r)) for r in spark.sql(q).collect()]
            except Exception as exc:  # noqa: BLE001 - reported per query, the others still run
                errors[name] = str(exc).split("\n\tat ", 1)[0][:3000]
    finally:
        spark.stop()
    if errors:
        answer["errors"] = errors
    print(ANSWER + json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
