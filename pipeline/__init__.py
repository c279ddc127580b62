"""The Hourglass data pipeline: replay a topic from a point in time with PySpark.

- ``pipeline.source``: a PySpark Python data source (``format("hourglass_kafka")``) with the
  options and semantics of Spark's ``kafka`` source, over confluent-kafka (no JVM jars);
- ``pipeline.job``: the job (``hourglass-pipeline``): read from a time, parse JSON events,
  windowed counts by event time with a watermark, to console, parquet or memory;
- ``pipeline.demo``: a demo producer (``hourglass-demo produce``).
"""
