"""``hourglass_kafka``: a PySpark Python data source with the options and schema of Spark's
``kafka`` source, for hosts that cannot add JVM jars.

    from pipeline.source import register
    register(spark)
    df = (spark.read.format("hourglass_kafka")
          .option("kafka.bootstrap.servers", "localhost:9092").option("subscribe", "events")
          .option("startingTimestamp", "1763800000000").load())

Batch reads plan one Spark partition per topic partition over [start, end) resolved on the
driver (``pipeline.offsets``); streaming reads do the same per micro-batch, with
``maxOffsetsPerTrigger`` as the default read limit. Executors read with confluent-kafka by
manual assignment (no consumer group, nothing committed), so offsets are exactly Spark's.
Schema (as Spark's): key, value, topic, partition, offset, timestamp, timestampType, headers.
"""
from __future__ import annotations

import time
from datetime import datetime, timezone

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from pipeline import offsets as O

SCHEMA = ("key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
          "timestampType int, headers array<struct<key: string, value: binary>>")
# confluent-kafka timestamp types -> Spark's timestampType (0 CreateTime, 1 LogAppendTime)
_TS_TYPE = {1: 0, 2: 1}
POLL_TIMEOUT_S = 30.0  # a partition that stops answering fails the task instead of hanging


class OffsetRange(InputPartition):
    def __init__(self, topic: str, partition: int, start: int, end: int, bootstrap: str, extra: dict):
        self.topic, self.partition, self.start, self.end = topic, partition, start, end
        self.bootstrap, self.extra = bootstrap, extra


def _client_config(options) -> tuple[str, dict]:
    options = O.normalize(options)
    bootstrap = options.get("kafka.bootstrap.servers")
    if not bootstrap:
        raise O.OffsetResolutionError("option kafka.bootstrap.servers is required")
    extra = {k[len("kafka."):]: v for k, v in options.items()
             if k.startswith("kafka.") and k != "kafka.bootstrap.servers"}
    return bootstrap, extra


def _consumer(bootstrap: str, extra: dict, **more):
    from confluent_kafka import Consumer
    # Spark's kafka source reads with the Java consumer's default isolation, read_uncommitted;
    # librdkafka defaults to read_committed. kafka.isolation.level overrides either way.
    return Consumer({"bootstrap.servers": bootstrap, "group.id": "hourglass-spark", "enable.auto.commit": False,
                     "enable.partition.eof": True, "isolation.level": "read_uncommitted", **extra, **more})


class _Planner:
    """Driver-side lookups (Metadata, watermarks, ListOffsets by time)."""

    def __init__(self, options):
        self.options = options = O.normalize(options)
        self.bootstrap, self.extra = _client_config(options)
        topics = [t.strip() for t in options.get("subscribe", "").split(",") if t.strip()]
        if not topics:
            raise O.OffsetResolutionError("option subscribe (comma-separated topics) is required")
        self.topics = topics
        self.strategy = options.get("startingoffsetsbytimestampstrategy", "error")
        mo = options.get("maxoffsetspertrigger")
        self.max_offsets = int(mo) if mo else None

    def __enter__(self):
        self.c = _consumer(self.bootstrap, self.extra)
        return self

    def __exit__(self, *exc):
        self.c.close()

    def partitions(self) -> list[O.TP]:
        md = self.c.list_topics(timeout=20)
        out = []
        for t in self.topics:
            info = md.topics.get(t)
            if info is None or info.error is not None:
                md = self.c.list_topics(t, timeout=20)  # may auto-create, as Spark's consumer would
                info = md.topics.get(t)
            if info is None or info.error is not None:
                raise O.OffsetResolutionError(f"topic {t} not found")
            out += [(t, p) for p in sorted(info.partitions)]
        return out

    def watermarks(self, tp: O.TP) -> tuple[int, int]:
        from confluent_kafka import TopicPartition
        return self.c.get_watermark_offsets(TopicPartition(tp[0], tp[1]), timeout=20)

    def for_times(self, targets: dict[O.TP, int]) -> dict[O.TP, int]:
        from confluent_kafka import TopicPartition
        res = self.c.offsets_for_times([TopicPartition(t, p, ts) for (t, p), ts in targets.items()], timeout=20)
        for r in res:
            if r.error is not None:
                raise O.OffsetResolutionError(f"ListOffsets for {r.topic}:{r.partition} failed: {r.error}")
        return {(r.topic, r.partition): r.offset for r in res}

    def starting(self, default: int) -> dict[O.TP, int]:
        parts = self.partitions()
        targets = O.starting_targets(self.options, parts, default)
        return O.resolve(targets, watermarks=self.watermarks, for_times=self.for_times, strategy=self.strategy)

    def ranges(self, start: dict[O.TP, int], end: dict[O.TP, int]) -> list[OffsetRange]:
        return [OffsetRange(t, p, start.get((t, p), 0), e, self.bootstrap, self.extra)
                for (t, p), e in sorted(end.items()) if e > start.get((t, p), 0)]


def read_range(r: OffsetRange):
    """Rows of offsets [r.start, r.end) of one partition (compaction gaps allowed)."""
    from confluent_kafka import KafkaError, TopicPartition
    if r.end <= r.start:
        return
    c = _consumer(r.bootstrap, r.extra)
    try:
        c.assign([TopicPartition(r.topic, r.partition, r.start)])
        deadline = time.monotonic() + POLL_TIMEOUT_S
        while True:
            m = c.poll(1.0)
            if m is None:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no data from {r.topic}:{r.partition} for {POLL_TIMEOUT_S} s "
                                       f"while reading up to offset {r.end}")
                continue
            deadline = time.monotonic() + POLL_TIMEOUT_S
            if m.error() is not None:
                if m.error().code() == KafkaError._PARTITION_EOF:
                    if m.offset() >= r.end:
                        return
                    continue
                raise RuntimeError(f"reading {r.topic}:{r.partition}: {m.error()}")
            if m.offset() >= r.end:
                return
            ts_type, ts = m.timestamp()
            yield (m.key(), m.value(), m.topic(), m.partition(), m.offset(),
                   datetime.fromtimestamp(ts / 1000, timezone.utc), _TS_TYPE.get(ts_type, -1),
                   [(k, v) for k, v in (m.headers() or [])])
            if m.offset() >= r.end - 1:
                return
    finally:
        c.close()


class _BatchReader(DataSourceReader):
    def __init__(self, options):
        self.options = O.normalize(options)

    def partitions(self):
        with _Planner(self.options) as pl:
            start = pl.starting(O.EARLIEST)
            end = O.ending_offsets(self.options, list(start), pl.watermarks, pl.for_times)
            return pl.ranges(start, end) or [OffsetRange("", 0, 0, 0, pl.bootstrap, pl.extra)]

    def read(self, partition):
        yield from read_range(partition)


class _StreamReader(DataSourceStreamReader):
    def __init__(self, options):
        self.options = O.normalize(options)

    def initialOffset(self):
        with _Planner(self.options) as pl:
            return {O.key(tp): off for tp, off in pl.starting(O.LATEST).items()}

    def getDefaultReadLimit(self):
        mo = self.options.get("maxoffsetspertrigger")
        return ReadMaxRows(int(mo)) if mo else ReadAllAvailable()

    def latestOffset(self, start, limit):
        with _Planner(self.options) as pl:
            latest = {tp: pl.watermarks(tp)[1] for tp in pl.partitions()}
        begin = {O.unkey(k): v for k, v in start.items()}
        for tp in latest:  # partitions added since the start begin at their earliest
            begin.setdefault(tp, 0)
        cap = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        return {O.key(tp): off for tp, off in O.rate_limit(begin, latest, cap).items()}

    def partitions(self, start, end):
        bootstrap, extra = _client_config(self.options)
        return [OffsetRange(*O.unkey(k), start.get(k, 0), e, bootstrap, extra)
                for k, e in sorted(end.items()) if e > start.get(k, 0)]

    def read(self, partition):
        yield from read_range(partition)

    def commit(self, end):
        pass  # offsets live in Spark's checkpoint, as with Spark's kafka source


class HourglassKafkaSource(DataSource):
    @classmethod
    def name(cls):
        return "hourglass_kafka"

    def schema(self):
        return SCHEMA

    def reader(self, schema):
        return _BatchReader(self.options)

    def streamReader(self, schema):
        return _StreamReader(self.options)


def register(spark) -> None:
    spark.dataSource.register(HourglassKafkaSource)
