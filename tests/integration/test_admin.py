"""Topic administration as users meet it: the Java Admin client (kafka-clients 3.9.1),
kafka-python's and confluent-kafka's admin clients, and the ``hourglass topics`` CLI against a
real broker on port 0.

Covers: create with configs then describe them back (full default set, sources, synonyms);
invalid configs and names refused with the right error; a live switch to LogAppendTime seen
on the next produced record; a shorter retention.ms deleting old segments at the next check;
a shorter segment.ms rolling at the next append; DeleteRecords then ListOffsets earliest and
OFFSET_OUT_OF_RANGE below it; DeleteTopics by name and id with Kafka's ``-delete`` dirs;
CreatePartitions grow-only; and all of it still true after a restart.
"""
from __future__ import annotations

import subprocess
import sys
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition as CTP
from confluent_kafka.admin import (
    AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions, NewTopic,
)
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource as KPConfigResource, ConfigResourceType, KafkaAdminClient
from kafka.errors import InvalidConfigurationError, InvalidPartitionsError

from protocol.messages.create_topics import CreateTopicsRequest as CT
from protocol.messages.delete_topics import DeleteTopicsRequest as DT
from protocol.messages.fetch import FetchRequest
from protocol.messages.metadata import MetadataRequest
from protocol.errors import ErrorCode as E
from tests.helpers.clients import wait_until
from tests.helpers.java import run_java
from tests.helpers.raw import RawClient

REPO = __import__("pathlib").Path(__file__).resolve().parents[2]


_ADMINS: dict[str, AdminClient] = {}


def admin(b) -> AdminClient:
    """One AdminClient per broker address, kept alive: librdkafka fails the futures of a
    client that is garbage-collected before they resolve."""
    if b.bootstrap not in _ADMINS:
        _ADMINS[b.bootstrap] = AdminClient({"bootstrap.servers": b.bootstrap})
    return _ADMINS[b.bootstrap]


@pytest.fixture(autouse=True)
def _close_admins():
    yield
    _ADMINS.clear()  # drop this test's clients (their broker is gone)


def create(b, *topics: NewTopic) -> dict:
    """{topic: None or KafkaError} for a confluent create_topics call."""
    out = {}
    for name, fut in admin(b).create_topics(list(topics), operation_timeout=10).items():
        try:
            fut.result(10)
            out[name] = None
        except KafkaException as exc:
            out[name] = exc.args[0]
    return out


def java_configs(b, topic: str) -> dict:
    lines = run_java(["admin-describe-configs", "--bootstrap", b.bootstrap, "--topic", topic])
    return {l["name"]: l for l in lines}


def earliest(b, topic: str, partition: int = 0) -> int:
    c = KafkaConsumer(bootstrap_servers=b.bootstrap)
    try:
        tp = TopicPartition(topic, partition)
        return c.beginning_offsets([tp])[tp]
    finally:
        c.close()


def consume(b, topic: str, n: int, timeout: float = 10.0):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "admin-test", "enable.auto.commit": False})
    c.assign([CTP(topic, 0, 0)])
    out, deadline = [], time.time() + timeout
    while len(out) < n and time.time() < deadline:
        m = c.poll(0.3)
        if m is not None and not m.error():
            out.append(m)
    c.close()
    return out


def segment_files(b, topic: str, partition: int = 0) -> list[str]:
    d = b.data_dir / f"{topic}-{partition}"
    return sorted(p.name for p in d.iterdir() if p.name.endswith(".log"))


def incremental(b, topic: str, *ops: tuple[str, AlterConfigOpType, str | None]) -> None:
    res = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=op) for k, op, v in ops])
    for fut in admin(b).incremental_alter_configs([res]).values():
        fut.result(10)


# ---- create + describe -----------------------------------------------------------------------

def test_create_with_configs_then_describe_back_full_set(broker):
    errs = create(broker, NewTopic("cfgd", 3, 1, config={
        "retention.ms": "3600000", "cleanup.policy": "compact,delete", "max.message.bytes": "2000000"}))
    assert errs == {"cfgd": None}
    cfg = java_configs(broker, "cfgd")
    # the whole Kafka 4.4 default set, not only the overrides (librdkafka's 0081 and Kafka's
    # kafka-configs --describe --all expect it), plus Confluent Server's four schema-validation
    # configs (confluent.{key,value}.schema.validation, confluent.{key,value}.subject.name.strategy)
    # and the topic's Iceberg table (iceberg.mode, iceberg.target.lag.ms, iceberg.partition.spec, iceberg.upsert,
    # and its
    # own retention: iceberg.history.expire.{max-snapshot-age-ms,min-snapshots-to-keep}, iceberg.retention.ms)
    assert len(cfg) == 37 + 4 + 7 and {"segment.bytes", "message.timestamp.type", "min.insync.replicas",
                               "remote.storage.enable", "message.timestamp.after.max.ms"} <= set(cfg)
    r = cfg["retention.ms"]
    assert (r["value"], r["source"], r["isDefault"]) == ("3600000", "DYNAMIC_TOPIC_CONFIG", False)
    assert r["synonyms"] == [{"name": "retention.ms", "value": "3600000", "source": "DYNAMIC_TOPIC_CONFIG"}]
    assert cfg["cleanup.policy"]["value"] == "compact,delete"
    m = cfg["max.message.bytes"]
    assert m["synonyms"][1] == {"name": "message.max.bytes", "value": "1048588", "source": "DEFAULT_CONFIG"}
    s = cfg["segment.bytes"]
    assert (s["value"], s["source"], s["isDefault"], s["isReadOnly"], s["isSensitive"]) == (
        "1073741824", "DEFAULT_CONFIG", True, False, False)
    assert s["synonyms"] == [{"name": "log.segment.bytes", "value": "1073741824", "source": "DEFAULT_CONFIG"}]
    # the same answer through librdkafka and kafka-python
    res = ConfigResource("topic", "cfgd")
    entries = admin(broker).describe_configs([res])[res].result(10)
    assert len(entries) == 37 + 4 + 7 and entries["retention.ms"].value == "3600000"
    # Kafka 4.1+ (KIP-966): from the cluster-level record, not a plain default
    from confluent_kafka.admin import ConfigSource
    mir = entries["min.insync.replicas"]
    assert (mir.value, mir.source, mir.is_default) == ("1", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value, False)
    assert cfg["min.insync.replicas"]["source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"
    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        res = KPConfigResource(ConfigResourceType.TOPIC, "cfgd")
        every = kp.describe_configs([res], config_filter="all")["topic"]["cfgd"]
        modified = kp.describe_configs([res])["topic"]["cfgd"]
    finally:
        kp.close()
    assert len(every) == 37 + 4 + 7 and every["segment.ms"]["config_source"] == "DEFAULT_CONFIG"
    assert set(modified) == {"retention.ms", "cleanup.policy", "max.message.bytes"}


def test_describe_reports_static_broker_defaults_as_kafka(broker_factory):
    b = broker_factory({"log.segment.bytes": 2097152, "log.retention.hours": 48})
    assert create(b, NewTopic("st", 1, 1)) == {"st": None}
    cfg = java_configs(b, "st")
    s = cfg["segment.bytes"]
    assert (s["value"], s["source"]) == ("2097152", "STATIC_BROKER_CONFIG")
    assert s["synonyms"] == [{"name": "log.segment.bytes", "value": "2097152", "source": "STATIC_BROKER_CONFIG"},
                             {"name": "log.segment.bytes", "value": "1073741824", "source": "DEFAULT_CONFIG"}]
    # Kafka's ConfigHelper keeps only synonyms from log.retention.ms on: none here
    r = cfg["retention.ms"]
    assert (r["value"], r["source"], r["synonyms"]) == ("172800000", "DEFAULT_CONFIG", [])
    broker_cfg = {l["name"]: l for l in run_java(["admin-describe-configs", "--bootstrap", b.bootstrap,
                                                   "--broker", "1"])}
    h = broker_cfg["log.retention.hours"]
    assert (h["value"], h["source"], h["isReadOnly"]) == ("48", "STATIC_BROKER_CONFIG", True)
    assert broker_cfg["num.partitions"]["source"] == "DEFAULT_CONFIG"


def test_java_create_returns_topic_id_partitions_and_replication(broker):
    (line,) = run_java(["admin-create", "--bootstrap", broker.bootstrap, "--topic", "jc", "--partitions", "4",
                        "--config", "retention.ms=60000"])
    assert line["created"] is True and line["partitions"] == 4 and line["replicationFactor"] == 1
    assert line["topicId"] and line["topicId"] != "AAAAAAAAAAAAAAAAAAAAAA"
    assert java_configs(broker, "jc")["retention.ms"]["value"] == "60000"
    # the id is the one Metadata and partition.metadata carry
    assert f"topic_id: {line['topicId']}" in (broker.data_dir / "jc-0" / "partition.metadata").read_text()


def test_invalid_configs_names_and_counts_are_refused(broker):
    errs = create(broker,
                  NewTopic("bad-value", 1, 1, config={"retention.ms": "abc"}),
                  NewTopic("bad-key", 1, 1, config={"no.such.key": "1"}),
                  NewTopic("bad-range", 1, 1, config={"min.cleanable.dirty.ratio": "2"}),
                  NewTopic("bad-enum", 1, 1, config={"message.timestamp.type": "WallClock"}),
                  NewTopic("bad name", 1, 1),
                  NewTopic("x" * 250, 1, 1),
                  NewTopic("rf3", 1, 3))
    assert errs["bad-value"].name() == "INVALID_CONFIG" and "retention.ms" in errs["bad-value"].str()
    assert errs["bad-key"].name() == "INVALID_CONFIG" and "no.such.key" in errs["bad-key"].str()
    assert errs["bad-range"].name() == "INVALID_CONFIG" and "min.cleanable.dirty.ratio" in errs["bad-range"].str()
    assert errs["bad-enum"].name() == "INVALID_CONFIG" and "message.timestamp.type" in errs["bad-enum"].str()
    assert errs["bad name"].name() == "TOPIC_EXCEPTION"
    assert errs["x" * 250].name() == "TOPIC_EXCEPTION"
    assert errs["rf3"].name() == "INVALID_REPLICATION_FACTOR"
    # "." and ".." and a zero partition count, as a raw request (clients check some locally)
    raw = RawClient(broker.bootstrap)
    try:
        resp = raw.request(19, 7, CT(topics=[CT.CreatableTopic(name=n, num_partitions=p, replication_factor=1)
                                             for n, p in ((".", 1), ("..", 1), ("zero", 0))], timeout_ms=5000))
        assert {t.name: t.error_code for t in resp.topics} == {
            ".": E.INVALID_TOPIC_EXCEPTION, "..": E.INVALID_TOPIC_EXCEPTION, "zero": E.INVALID_PARTITIONS}
    finally:
        raw.close()
    assert create(broker, NewTopic("dup", 1, 1)) == {"dup": None}
    assert create(broker, NewTopic("dup", 1, 1))["dup"].name() == "TOPIC_ALREADY_EXISTS"
    # Java sees the typed exception
    lines = run_java(["admin-create", "--bootstrap", broker.bootstrap, "--topic", "jbad", "--partitions", "1",
                      "--config", "segment.bytes=1"], check=False)
    assert any(l.get("error") == "InvalidConfigurationException" and "segment.bytes" in l.get("message", "")
               for l in lines)
    # kafka-python too
    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        with pytest.raises(InvalidConfigurationError):
            kp.create_topics({"kpbad": {"num_partitions": 1, "replication_factor": 1,
                                        "configs": {"flush.messages": "0"}}})
    finally:
        kp.close()
    names = set(admin(broker).list_topics(timeout=10).topics)
    assert names == {"dup"}


def test_validate_only_creates_nothing(broker):
    a = admin(broker)
    a.create_topics([NewTopic("vo", 2, 1, config={"retention.ms": "1000"})], validate_only=True)["vo"].result(10)
    assert "vo" not in a.list_topics(timeout=10).topics
    assert not (broker.data_dir / "vo-0").exists()


# ---- live config changes ----------------------------------------------------------------------

def test_alter_to_log_append_time_applies_to_next_produce(broker):
    assert create(broker, NewTopic("lat", 1, 1)) == {"lat": None}
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    p.produce("lat", value=b"before", timestamp=1000)
    p.flush(10)
    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:  # kafka-python's alter_configs (SET)
        kp.alter_configs([KPConfigResource(ConfigResourceType.TOPIC, "lat",
                                           configs={"message.timestamp.type": "LogAppendTime"})])
    finally:
        kp.close()
    t0 = int(time.time() * 1000)
    p.produce("lat", value=b"after", timestamp=1000)
    p.flush(10)
    t1 = int(time.time() * 1000)
    before, after = consume(broker, "lat", 2)
    assert before.timestamp() == (1, 1000)  # CreateTime, the producer's
    ts_type, ts = after.timestamp()
    assert ts_type == 2 and t0 <= ts <= t1  # LogAppendTime, the broker's
    assert java_configs(broker, "lat")["message.timestamp.type"]["value"] == "LogAppendTime"


def test_shorter_retention_deletes_old_segments_at_next_check(broker_factory):
    b = broker_factory({"log.retention.check.interval.ms": 200})
    assert create(b, NewTopic("ret", 1, 1, config={"segment.bytes": "1024", "file.delete.delay.ms": "0"})) == {"ret": None}
    old = int(time.time() * 1000) - 2 * 3600_000
    p = KafkaProducer(bootstrap_servers=b.bootstrap, linger_ms=0)
    for i in range(20):
        p.send("ret", value=b"x" * 200, timestamp_ms=old + i).get(10)
    p.close()
    n_before = len(segment_files(b, "ret"))
    assert n_before >= 4
    time.sleep(0.6)  # a few retention checks under the 7-day default: nothing goes
    assert earliest(b, "ret") == 0 and len(segment_files(b, "ret")) == n_before
    incremental(b, "ret", ("retention.ms", AlterConfigOpType.SET, "3600000"))
    wait_until(lambda: earliest(b, "ret") == 20, timeout=10, what="log start offset at 20 after retention")
    wait_until(lambda: len(segment_files(b, "ret")) == 1, timeout=10, what="old segment files removed")
    assert segment_files(b, "ret") == [f"{20:020d}.log"]


def test_shorter_segment_ms_rolls_at_next_append(broker):
    assert create(broker, NewTopic("roll", 1, 1)) == {"roll": None}
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    p.produce("roll", value=b"a")
    p.flush(10)
    assert len(segment_files(broker, "roll")) == 1
    incremental(broker, "roll", ("segment.ms", AlterConfigOpType.SET, "50"))
    time.sleep(0.2)
    p.produce("roll", value=b"b")
    p.flush(10)
    assert segment_files(broker, "roll") == [f"{0:020d}.log", f"{1:020d}.log"]


def test_incremental_append_subtract_and_delete(broker):
    assert create(broker, NewTopic("inc", 1, 1, config={"retention.ms": "1000"})) == {"inc": None}
    incremental(broker, "inc", ("cleanup.policy", AlterConfigOpType.APPEND, "compact"),
                ("retention.ms", AlterConfigOpType.DELETE, None))
    cfg = java_configs(broker, "inc")
    assert cfg["cleanup.policy"]["value"] == "delete,compact"
    assert (cfg["retention.ms"]["value"], cfg["retention.ms"]["source"]) == ("604800000", "DEFAULT_CONFIG")
    incremental(broker, "inc", ("cleanup.policy", AlterConfigOpType.SUBTRACT, "delete"))
    assert java_configs(broker, "inc")["cleanup.policy"]["value"] == "compact"
    with pytest.raises(KafkaException) as ei:
        incremental(broker, "inc", ("retention.ms", AlterConfigOpType.APPEND, "5"))
    assert ei.value.args[0].name() == "INVALID_CONFIG" and "not LIST" in ei.value.args[0].str()
    # a broker key Kafka does not mark dynamic is refused with Kafka's message
    res = ConfigResource("broker", "1", incremental_configs=[
        ConfigEntry("log.retention.hours", "1", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException) as ei:
        admin(broker).incremental_alter_configs([res])[res].result(10)
    assert ei.value.args[0].name() == "INVALID_REQUEST"
    assert ei.value.args[0].str() == "Cannot update these configs dynamically: [log.retention.hours]"


# ---- DeleteRecords ----------------------------------------------------------------------------

def test_delete_records_then_list_offsets_earliest_and_restart(broker):
    assert create(broker, NewTopic("dr", 1, 1, config={"segment.bytes": "300"})) == {"dr": None}
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0)
    for i in range(10):
        p.send("dr", value=b"v" * 100).get(10)
    p.close()
    files_before = segment_files(broker, "dr")
    (fut,) = admin(broker).delete_records([CTP("dr", 0, 6)]).values()
    assert fut.result(10).low_watermark == 6
    assert earliest(broker, "dr") == 6
    # segments wholly below 6 are gone at once; the one holding offset 6 stays
    files_after = segment_files(broker, "dr")
    assert len(files_after) < len(files_before)
    assert int(files_after[0][:20]) <= 6
    # a fetch below the low watermark is out of range; like Kafka's, the answer's offsets are
    # all unknown (-1): the client finds the log start through ListOffsets
    raw = RawClient(broker.bootstrap)
    try:
        req = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                           topics=[FetchRequest.FetchTopic(topic="dr", partitions=[
                               FetchRequest.FetchPartition(partition=0, fetch_offset=2, log_start_offset=-1,
                                                           partition_max_bytes=1 << 20)])])
        (pd,) = raw.request(1, 11, req).responses[0].partitions
        assert (pd.error_code, pd.log_start_offset, pd.high_watermark) == (E.OFFSET_OUT_OF_RANGE, -1, -1)
    finally:
        raw.close()
    # beyond the high watermark: OFFSET_OUT_OF_RANGE
    (fut,) = admin(broker).delete_records([CTP("dr", 0, 50)]).values()
    with pytest.raises(KafkaException) as ei:
        fut.result(10)
    assert ei.value.args[0].name() == "OFFSET_OUT_OF_RANGE"
    broker.restart()
    assert earliest(broker, "dr") == 6


def test_consumer_below_the_low_watermark_resets_to_it(broker):
    """librdkafka positioned below the log start offset gets OFFSET_OUT_OF_RANGE and, with
    auto.offset.reset=earliest, continues from the low watermark."""
    assert create(broker, NewTopic("drc", 1, 1)) == {"drc": None}
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0)
    for i in range(10):
        p.send("drc", value=b"v%d" % i).get(10)
    p.close()
    (fut,) = admin(broker).delete_records([CTP("drc", 0, 6)]).values()
    assert fut.result(10).low_watermark == 6
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "drc", "auto.offset.reset": "earliest"})
    c.assign([CTP("drc", 0, 0)])
    got = []
    deadline = time.time() + 10
    while len(got) < 4 and time.time() < deadline:
        m = c.poll(0.3)
        if m is not None and not m.error():
            got.append(m.offset())
    c.close()
    assert got == [6, 7, 8, 9]


# ---- DeleteTopics / CreatePartitions ---------------------------------------------------------------

def test_delete_topic_by_name_and_id(broker_factory):
    b = broker_factory({"log.segment.delete.delay.ms": 500, "auto.create.topics.enable": False})
    assert create(b, NewTopic("gone", 2, 1), NewTopic("gone2", 1, 1)) == {"gone": None, "gone2": None}
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0})
    p.produce("gone", value=b"x", partition=0)
    p.flush(10)
    for fut in admin(b).delete_topics(["gone"], operation_timeout=10).values():
        fut.result(10)
    names = [d.name for d in b.data_dir.iterdir()]
    assert "gone-0" not in names and "gone-1" not in names
    assert any(n.startswith("gone-0.") and n.endswith("-delete") for n in names)
    wait_until(lambda: not any(d.name.startswith("gone-") for d in b.data_dir.iterdir()), timeout=10,
               what="deleted dirs removed after file.delete.delay.ms")
    # produce and fetch to it fail cleanly
    errors = []
    p2 = Producer({"bootstrap.servers": b.bootstrap, "message.timeout.ms": 2000})
    p2.produce("gone", value=b"y", on_delivery=lambda e, m: errors.append(e))
    p2.flush(10)
    assert errors and errors[0] is not None
    raw = RawClient(b.bootstrap)
    try:
        md = raw.request(3, 12, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="gone2")],
                                                allow_auto_topic_creation=False))
        tid = md.topics[0].topic_id
        resp = raw.request(20, 6, DT(topics=[DT.DeleteTopicState(name=None, topic_id=tid),
                                             DT.DeleteTopicState(name=None, topic_id=uuid.uuid4().bytes)],
                                     timeout_ms=5000))
        got = {r.topic_id: (r.name, r.error_code) for r in resp.responses}
        assert got[tid] == ("gone2", 0)
        assert [c for n, c in got.values() if n is None] == [E.UNKNOWN_TOPIC_ID]
        req = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                           topics=[FetchRequest.FetchTopic(topic="gone", partitions=[
                               FetchRequest.FetchPartition(partition=0, fetch_offset=0, log_start_offset=-1,
                                                           partition_max_bytes=1 << 20)])])
        (pd,) = raw.request(1, 11, req).responses[0].partitions
        assert pd.error_code == E.UNKNOWN_TOPIC_OR_PARTITION
    finally:
        raw.close()
    assert set(admin(b).list_topics(timeout=10).topics) == set()
    b.restart()
    assert set(admin(b).list_topics(timeout=10).topics) == set()


def test_create_partitions_grow_only_and_survive_restart(broker):
    assert create(broker, NewTopic("cp", 2, 1, config={"retention.ms": "86400000"})) == {"cp": None}
    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        kp.create_partitions({"cp": 5})
        with pytest.raises(InvalidPartitionsError):
            kp.create_partitions({"cp": 3})
    finally:
        kp.close()
    fut = admin(broker).create_partitions([NewPartitions("cp", 5)])["cp"]
    with pytest.raises(KafkaException) as ei:
        fut.result(10)
    assert ei.value.args[0].name() == "INVALID_PARTITIONS"
    broker.restart()
    md = admin(broker).list_topics(timeout=10)
    assert len(md.topics["cp"].partitions) == 5
    assert java_configs(broker, "cp")["retention.ms"]["value"] == "86400000"
    p = KafkaProducer(bootstrap_servers=broker.bootstrap)
    assert p.send("cp", value=b"z", partition=4).get(10).offset == 0
    p.close()


def test_describe_cluster(broker):
    (line,) = run_java(["admin-describe-cluster", "--bootstrap", broker.bootstrap])
    assert line["controller"]["id"] == 1 and [n["id"] for n in line["nodes"]] == [1] and line["clusterId"]


# ---- CLI ----------------------------------------------------------------------------------

def cli(b, *args, timeout=60):
    return subprocess.run([sys.executable, "-m", "hourglass.cli.topics", "topics", "--bootstrap-server", b.bootstrap,
                           *args], capture_output=True, text=True, cwd=REPO, timeout=timeout)


def test_cli_create_list_describe_alter_delete(broker):
    r = cli(broker, "create", "orders", "--partitions", "2", "--config", "retention.ms=86400000")
    assert (r.returncode, r.stdout.strip()) == (0, "Created topic orders.")
    r = cli(broker, "create", "orders")
    assert r.returncode == 1 and "already exists" in r.stderr
    assert cli(broker, "create", "orders", "--if-not-exists").returncode == 0
    r = cli(broker, "create", "bad", "--config", "retention.ms=soon")
    assert r.returncode == 1 and "retention.ms" in r.stderr and "INVALID_CONFIG" in r.stderr
    r = cli(broker, "list")
    assert (r.returncode, r.stdout.split()) == (0, ["orders"])
    r = cli(broker, "alter", "orders", "--partitions", "3", "--config", "message.timestamp.type=LogAppendTime",
            "--delete-config", "retention.ms")
    assert r.returncode == 0, r.stderr
    r = cli(broker, "describe", "orders")
    assert r.returncode == 0
    first, *parts = r.stdout.strip().splitlines()
    assert "PartitionCount: 3" in first and "Configs: message.timestamp.type=LogAppendTime" in first
    assert len(parts) == 3 and "Leader: 1" in parts[2]
    r = cli(broker, "describe", "orders", "--all-configs")
    assert "segment.bytes=1073741824\t(DEFAULT_CONFIG" in r.stdout
    r = cli(broker, "alter", "orders", "--partitions", "1")
    assert r.returncode == 1 and "would not be an increase" in r.stderr
    assert cli(broker, "alter", "orders").returncode == 1
    r = cli(broker, "delete", "orders")
    assert (r.returncode, r.stdout.strip()) == (0, "Deleted topic orders.")
    r = cli(broker, "delete", "orders")
    assert r.returncode == 1
    assert cli(broker, "delete", "orders", "--if-exists").returncode == 0
    assert cli(broker, "describe", "orders").returncode == 1
    r = cli(broker, "list", "--bogus")
    assert r.returncode == 2


def test_cli_unreachable_broker_exits_1(broker):
    r = subprocess.run([sys.executable, "-m", "hourglass.cli.topics", "topics", "-b", "127.0.0.1:1", "--timeout", "2",
                        "list"], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert r.returncode == 1 and "cannot reach a broker at 127.0.0.1:1" in r.stderr
