"""``hourglass_iceberg``: a PySpark Python data source that reads a topic's Iceberg table (the
broker writes it when the topic's ``iceberg.mode`` is ``key_value``) with the options and the
schema of Spark's ``kafka`` source, so a job replays a topic from a time out of the table
instead of the log (rows the log's retention already deleted included).

    from pipeline.table_source import register
    register(spark)
    df = (spark.read.format("hourglass_iceberg")
          .option("catalog.uri", "http://localhost:8181").option("subscribe", "events")
          .option("kafka.bootstrap.servers", "localhost:9092")
          .option("startingTimestamp", "1763800000000").load())

The table is read through the broker's Iceberg REST catalog with pyiceberg (no JVM jars: Iceberg's
Spark runtime is not served for the Spark 4.2 the pipeline needs). The driver pins the table's
current snapshot and resolves each partition's start (``pipeline.offsets``); one Spark partition
per topic partition reads ``offset >= start`` at that snapshot. A start from a time is where
Spark's kafka source starts, the broker's offsets-for-times (ListOffsets), or earlier where only
the table still holds records at or after the time (``earliest_at_or_after``). The rows are what
a read_committed consumer reads from those offsets up to what the table holds (the table trails
the log by ``iceberg.target.lag.ms``). Batch reads only.
"""
from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from pipeline import offsets as O
from pipeline.source import SCHEMA, _client_config, _consumer

NAMESPACE = "redpanda"  # where the broker's tables are (Redpanda's namespace)


class TablePartition(InputPartition):
    def __init__(self, uri: str, table: str, snapshot_id: int, topic: str, partition: int, start: int):
        self.uri, self.table, self.snapshot_id = uri, table, snapshot_id
        self.topic, self.partition, self.start = topic, partition, start


def _load(uri: str, table: str):
    from pyiceberg.catalog.rest import RestCatalog
    return RestCatalog("hourglass", uri=uri).load_table((NAMESPACE, table))


def _first_at_or_after(tbl, snapshot_id: int, targets: dict[O.TP, int]) -> dict[O.TP, int]:
    """(topic, partition) -> the lowest offset the table holds whose timestamp is >= that partition's time (ms)."""
    import pyarrow.compute as pc
    out: dict[O.TP, int] = {}
    by_partition = {p: ms for (_, p), ms in targets.items()}
    topic = {p: t for t, p in targets}
    m = tbl.scan(snapshot_id=snapshot_id, selected_fields=("redpanda",),
                 row_filter=f"redpanda.timestamp >= {min(targets.values()) * 1000}").to_arrow().column("redpanda")
    for p, o, ts in zip(pc.struct_field(m, "partition").to_pylist(), pc.struct_field(m, "offset").to_pylist(),
                        pc.struct_field(m, "timestamp").cast("int64").to_pylist()):
        if p in by_partition and ts is not None and ts >= by_partition[p] * 1000:
            tp = (topic[p], p)
            out[tp] = min(out.get(tp, o), o)
    return out


class _Planner:
    """Driver side: the table's pinned snapshot, the starts, the broker's ListOffsets."""

    def __init__(self, options):
        self.options = options = O.normalize(options)
        self.uri = options.get("catalog.uri")
        if not self.uri:
            raise O.OffsetResolutionError("option catalog.uri (the broker's Iceberg REST catalog URL) is required")
        topics = [t.strip() for t in options.get("subscribe", "").split(",") if t.strip()]
        if len(topics) != 1:
            raise O.OffsetResolutionError("option subscribe names the one topic whose table is read")
        self.topic = topics[0]
        self.tbl = _load(self.uri, self.topic)
        snap = self.tbl.current_snapshot()
        self.snapshot_id = None if snap is None else snap.snapshot_id
        self.summary = {} if snap is None else dict(snap.summary.additional_properties)

    def starts(self) -> dict[O.TP, int]:
        from lakehouse.translate import last_offsets
        last = {(self.topic, p): o for p, o in last_offsets(self.summary).items()}
        targets = O.starting_targets(self.options, sorted(last), O.EARLIEST)

        def watermarks(tp: O.TP) -> tuple[int, int]:
            # the table's earliest: offset >= 0 selects every row it holds, with no scan to find the lowest
            return 0, last[tp] + 1

        def for_times(by_time: dict[O.TP, int]) -> dict[O.TP, int]:
            in_table = _first_at_or_after(self.tbl, self.snapshot_id, by_time)
            listed = self._list_offsets(by_time)
            return {tp: O.earliest_at_or_after(listed.get(tp, -1), in_table.get(tp, -1)) for tp in by_time}
        strategy = self.options.get("startingoffsetsbytimestampstrategy", "error")
        return O.resolve(targets, watermarks=watermarks, for_times=for_times, strategy=strategy)

    def _list_offsets(self, by_time: dict[O.TP, int]) -> dict[O.TP, int]:
        """The broker's offsets-for-times, where Spark's kafka source starts (none without
        ``kafka.bootstrap.servers``: then the table alone answers)."""
        if "kafka.bootstrap.servers" not in self.options:
            return {}
        from confluent_kafka import TopicPartition
        bootstrap, extra = _client_config(self.options)
        c = _consumer(bootstrap, {**extra, "isolation.level": "read_committed"})
        try:
            res = c.offsets_for_times([TopicPartition(t, p, ms) for (t, p), ms in by_time.items()], timeout=20)
        finally:
            c.close()
        for r in res:
            if r.error is not None:
                raise O.OffsetResolutionError(f"ListOffsets for {r.topic}:{r.partition} failed: {r.error}")
        return {(r.topic, r.partition): r.offset for r in res}


def read_partition(part: TablePartition):
    """Rows of one topic partition at offsets >= ``part.start`` in the pinned snapshot, in offset order."""
    tbl = _load(part.uri, part.table)
    arrow = tbl.scan(snapshot_id=part.snapshot_id,
                     row_filter=f"redpanda.partition == {part.partition} and redpanda.offset >= {part.start}").to_arrow()
    rows = sorted(arrow.to_pylist(), key=lambda r: r["redpanda"]["offset"])
    for r in rows:
        m = r["redpanda"]
        # no headers is null, not [], as in Spark's kafka source
        headers = [(h["key"], h["value"]) for h in m["headers"]] if m["headers"] else None
        yield (m["key"], r["value"], part.topic, m["partition"], m["offset"], m["timestamp"], m["timestamp_type"],
               headers)


class _BatchReader(DataSourceReader):
    def __init__(self, options):
        self.options = O.normalize(options)

    def partitions(self):
        pl = _Planner(self.options)
        if pl.snapshot_id is None:  # no commit yet: an empty table
            return [TablePartition(pl.uri, pl.topic, 0, pl.topic, 0, 0)]
        return [TablePartition(pl.uri, pl.topic, pl.snapshot_id, t, p, start)
                for (t, p), start in sorted(pl.starts().items())] or \
            [TablePartition(pl.uri, pl.topic, pl.snapshot_id, pl.topic, 0, 2**63 - 1)]

    def read(self, partition):
        if partition.snapshot_id == 0:
            return
        yield from read_partition(partition)


class HourglassIcebergSource(DataSource):
    @classmethod
    def name(cls):
        return "hourglass_iceberg"

    def schema(self):
        return SCHEMA

    def reader(self, schema):
        return _BatchReader(self.options)


def register(spark) -> None:
    spark.dataSource.register(HourglassIcebergSource)
