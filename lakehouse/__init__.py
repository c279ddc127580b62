"""Lakehouse tables: a topic also written as an Apache Iceberg table (issue 41).

A room beside the Kafka core, wired in by the composition root (``hourglass.app``); ``broker/``
names none of it. See docs/iceberg-design.md.

- ``translate``: the pure decisions (which records a read_committed reader sees, record -> row,
  what a commit records per partition, where translation resumes from the table);
- ``tables``: the table side, Parquet and Iceberg metadata by pyarrow and pyiceberg (worker thread);
- ``service``: the translation loop beside the broker (reads the log on the event loop in short
  bounded reads, writes in one worker thread);
- ``rest``: the Iceberg REST catalog's read routes over the same catalog;
- ``warehouse``: where the files go (the data dir, or an S3-compatible store), the broker keys as
  pyiceberg FileIO properties, what a reader is handed, and a failing store's line;
- ``metrics``: each table's figures in the broker's ``/metrics``.
"""
