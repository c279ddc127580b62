"""The topic-administration handlers against an in-process broker (storage opened, no sockets).

Each request goes through the handler and its response is encoded in the asked version, so
a field that a version cannot carry fails here, not in a client. Error codes and messages are
Kafka's (ReplicationControlManager / ControllerApis / ConfigHelper); the Kafka tests mirrored
are named where a case comes from one.
"""
from __future__ import annotations

import asyncio

import pytest

from broker.config import BrokerConfig
from broker.connection import RequestContext
from broker.handlers import (
    alter_configs, create_partitions, create_topics, delete_records, delete_topics, describe_configs,
    incremental_alter_configs,
)
from broker.handlers.describe_configs import ResourceError
from broker.handlers.incremental_alter_configs import APPEND, DELETE, SET, SUBTRACT, apply_ops
from broker.server import Broker
from protocol.api_keys import APIS
from protocol.errors import ErrorCode as E
from protocol.messages.alter_configs import AlterConfigsRequest as AC
from protocol.messages.create_partitions import CreatePartitionsRequest as CP
from protocol.messages.create_topics import CreateTopicsRequest as CT
from protocol.messages.delete_records import DeleteRecordsRequest as DR
from protocol.messages.delete_topics import DeleteTopicsRequest as DT
from protocol.messages.describe_configs import DescribeConfigsRequest as DC
from protocol.messages.incremental_alter_configs import IncrementalAlterConfigsRequest as IAC
from protocol.records.record import build_batch
from protocol.schema import ZERO_UUID
from storage.clock import ManualClock
from storage.log_config import CONFLUENT_TOPIC_CONFIGS, TOPIC_CONFIGS

KEY = {create_topics: 19, delete_topics: 20, delete_records: 21, describe_configs: 32, alter_configs: 33,
       create_partitions: 37, incremental_alter_configs: 44}

# Kafka 4.4's topic configs, as DescribeConfigs lists them for a topic.
KAFKA_44_TOPIC_CONFIGS = {
    "cleanup.policy", "compression.gzip.level", "compression.lz4.level", "compression.type",
    "compression.zstd.level", "delete.retention.ms", "errors.deadletterqueue.group.enable", "file.delete.delay.ms",
    "flush.messages", "flush.ms", "follower.replication.throttled.replicas", "index.interval.bytes",
    "leader.replication.throttled.replicas", "local.retention.bytes", "local.retention.ms", "max.compaction.lag.ms",
    "max.decompressed.message.bytes", "max.message.bytes", "message.timestamp.after.max.ms",
    "message.timestamp.before.max.ms", "message.timestamp.type", "min.cleanable.dirty.ratio", "min.compaction.lag.ms",
    "min.insync.replicas", "preallocate", "remote.copy.lag.bytes", "remote.copy.lag.ms", "remote.log.copy.disable",
    "remote.log.delete.on.disable", "remote.storage.enable", "retention.bytes", "retention.ms", "segment.bytes",
    "segment.index.bytes", "segment.jitter.ms", "segment.ms", "unclean.leader.election.enable",
}
# ... and Confluent Server's schema ID validation configs, which Hourglass serves too
TOPIC_CONFIG_NAMES = KAFKA_44_TOPIC_CONFIGS | CONFLUENT_TOPIC_CONFIGS


@pytest.fixture
def make_broker(tmp_path):
    made = []

    def make(**overrides):
        raw = {"log.dirs": str(tmp_path / f"data{len(made)}"), "listeners": "PLAINTEXT://127.0.0.1:0"}
        raw.update({k: str(v) for k, v in overrides.items()})
        b = Broker(BrokerConfig(raw), clock=ManualClock(1_700_000_000_000))
        b.open_storage()
        made.append(b)
        return b

    yield make
    for b in made:
        b.logs.shutdown()


@pytest.fixture
def broker(make_broker):
    return make_broker()


def call(b, module, version, req):
    """Run a handler and encode its response in ``version`` (as the connection would)."""
    key = KEY[module]
    ctx = RequestContext(b, None, key, version, 1, "test", None)
    resp = asyncio.run(module.handle(ctx, req))
    APIS[key].response.encode(resp, version)
    return resp


def create(b, name, partitions=1, rf=-1, configs=None, version=7, validate_only=False, assignments=()):
    topic = CT.CreatableTopic(name=name, num_partitions=partitions, replication_factor=rf,
                              assignments=list(assignments),
                              configs=[CT.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()])
    resp = call(b, create_topics, version, CT(topics=[topic], timeout_ms=1000, validate_only=validate_only))
    (r,) = resp.topics
    return r


def describe(b, rtype, name, keys=None, version=4, synonyms=True):
    req = DC(resources=[DC.DescribeConfigsResource(resource_type=rtype, resource_name=name,
                                                   configuration_keys=keys)],
             include_synonyms=synonyms, include_documentation=True)
    (r,) = call(b, describe_configs, version, req).results
    return r


def by_name(result):
    return {c.name: c for c in result.configs}


# ---- CreateTopics ---------------------------------------------------------------------------

def test_create_topic_echoes_id_partitions_and_every_config(broker):
    r = create(broker, "orders", 3, configs={"retention.ms": "3600000", "cleanup.policy": "compact,delete"})
    assert (r.error_code, r.error_message) == (0, None)
    t = broker.topics.get("orders")
    assert r.topic_id == t.topic_id != ZERO_UUID
    assert (r.num_partitions, r.replication_factor) == (3, 1)
    cfg = {c.name: c for c in r.configs}
    assert set(cfg) == TOPIC_CONFIG_NAMES
    assert [c.name for c in r.configs] == sorted(cfg)
    assert (cfg["retention.ms"].value, cfg["retention.ms"].config_source) == ("3600000", 1)  # TOPIC_CONFIG
    assert (cfg["segment.bytes"].value, cfg["segment.bytes"].config_source) == ("1073741824", 5)
    for p in range(3):
        assert broker.topics.log("orders", p).config.retention_ms == 3_600_000


def test_create_topic_configs_echo_static_broker_source(make_broker):
    b = make_broker(**{"log.segment.bytes": 2097152, "log.retention.hours": 48})
    cfg = {c.name: c for c in create(b, "t").configs}
    assert (cfg["segment.bytes"].value, cfg["segment.bytes"].config_source) == ("2097152", 4)
    # the controller resolves retention.ms through log.retention.hours (static)
    assert (cfg["retention.ms"].value, cfg["retention.ms"].config_source) == ("172800000", 4)


def test_create_topics_v0_and_v4_carry_no_v5_fields(broker):
    for v, name in ((0, "a"), (4, "b")):
        r = create(broker, name, 2, version=v)
        assert r.error_code == 0 and broker.topics.get(name).partitions == 2


@pytest.mark.parametrize("name,message", [
    ("", "Topic name is invalid: the empty string is not allowed"),
    (".", "Topic name is invalid: '.' is not allowed"),
    ("..", "Topic name is invalid: '..' is not allowed"),
    ("x" * 250, "is longer than the max allowed length 249"),
    ("a b", "contains one or more characters other than ASCII alphanumerics"),
    ("a/b", "contains one or more characters other than ASCII alphanumerics"),
    ("ü", "contains one or more characters other than ASCII alphanumerics"),
])
def test_illegal_topic_names_are_refused(broker, name, message):
    """Kafka's TopicTest.testInvalidTopicNames / ReplicationControlManagerTest.testValidateNewTopicNames
    (Kafka 4's wording, compared with Kafka itself in tests/differential)."""
    r = create(broker, name)
    assert r.error_code == E.INVALID_TOPIC_EXCEPTION
    assert message in r.error_message
    assert broker.topics.get(name) is None


def test_names_with_dots_and_of_200_chars_are_legal(broker):
    assert create(broker, "x" * 200).error_code == 0
    assert create(broker, "a..b").error_code == 0


def test_a_249_char_name_is_legal(broker):
    """The longest legal name: its metadata file, partition dir and delete dir all fit NAME_MAX."""
    assert create(broker, "x" * 249).error_code == 0
    assert broker.topics.get("x" * 249) is not None


def test_topic_colliding_on_dot_and_underscore_is_refused(broker):
    """ReplicationControlManagerTest.testCreateTopicsWithCollisionChars (message as Kafka's)."""
    assert create(broker, "a.b").error_code == 0
    r = create(broker, "a_b")
    assert (r.error_code, r.error_message) == (E.INVALID_TOPIC_EXCEPTION, "Topic 'a_b' collides with existing topic: a.b")


def test_existing_topic_is_refused(broker):
    create(broker, "t")
    r = create(broker, "t")
    assert (r.error_code, r.error_message) == (E.TOPIC_ALREADY_EXISTS, "Topic 't' already exists.")


@pytest.mark.parametrize("configs,key", [
    ({"retention.ms": "abc"}, "retention.ms"),
    ({"retention.ms": "-2"}, "retention.ms"),
    ({"segment.bytes": "13"}, "segment.bytes"),
    ({"cleanup.policy": "bogus"}, "cleanup.policy"),
    ({"min.cleanable.dirty.ratio": "1.5"}, "min.cleanable.dirty.ratio"),
    ({"message.timestamp.type": "logappendtime"}, "message.timestamp.type"),
    ({"preallocate": "yes"}, "preallocate"),
    ({"no.such.config": "1"}, "no.such.config"),
    ({"retention.ms": None}, "retention.ms"),
])
def test_invalid_configs_are_refused_naming_the_key(broker, configs, key):
    r = create(broker, "t", configs=configs)
    assert r.error_code == E.INVALID_CONFIG
    assert key in r.error_message
    assert broker.topics.get("t") is None


def test_partition_and_replication_checks(broker):
    r = create(broker, "t", partitions=0)
    assert (r.error_code, r.error_message) == (E.INVALID_PARTITIONS,
                                               "Number of partitions was set to an invalid non-positive value.")
    r = create(broker, "t", rf=0)
    assert r.error_code == E.INVALID_REPLICATION_FACTOR
    r = create(broker, "t", rf=3)
    assert r.error_code == E.INVALID_REPLICATION_FACTOR and "3" in r.error_message
    assert broker.topics.get("t") is None
    r = create(broker, "t", partitions=-1, rf=1)
    assert r.error_code == 0 and r.num_partitions == 1  # num.partitions


def test_manual_assignments(broker):
    A = CT.CreatableReplicaAssignment
    r = create(broker, "t", partitions=-1, assignments=[A(partition_index=0, broker_ids=[1]),
                                                        A(partition_index=1, broker_ids=[1])])
    assert r.error_code == 0 and broker.topics.get("t").partitions == 2
    r = create(broker, "u", partitions=-1, assignments=[A(partition_index=0, broker_ids=[2])])
    assert r.error_code == E.INVALID_REPLICA_ASSIGNMENT
    r = create(broker, "u", partitions=-1, assignments=[A(partition_index=1, broker_ids=[1])])
    assert r.error_code == E.INVALID_REPLICA_ASSIGNMENT
    r = create(broker, "u", partitions=2, assignments=[A(partition_index=0, broker_ids=[1])])
    assert r.error_code == E.INVALID_REQUEST


def test_validate_only_creates_nothing(broker):
    r = create(broker, "t", 2, configs={"retention.ms": "1000"}, validate_only=True)
    assert r.error_code == 0 and r.num_partitions == 2
    assert broker.topics.get("t") is None and broker.topics.log("t", 0) is None
    assert create(broker, "t", configs={"retention.ms": "x"}, validate_only=True).error_code == E.INVALID_CONFIG


def test_duplicate_names_in_one_request_create_nothing(broker):
    """ControllerApisTest.testCreateTopics: one INVALID_REQUEST per duplicated name."""
    topics = [CT.CreatableTopic(name=n, num_partitions=1, replication_factor=1) for n in ("d", "d", "ok")]
    resp = call(broker, create_topics, 7, CT(topics=topics, timeout_ms=1000))
    got = {t.name: (t.error_code, t.error_message) for t in resp.topics}
    assert len(resp.topics) == 2
    assert got == {"d": (E.INVALID_REQUEST, "Duplicate topic name."), "ok": (0, None)}
    assert broker.topics.get("d") is None


# ---- DescribeConfigs ----------------------------------------------------------------------------

def test_describe_topic_lists_every_config_with_kafka_synonyms(make_broker):
    b = make_broker(**{"log.segment.bytes": 2097152, "log.retention.hours": 48})
    create(b, "t", configs={"max.message.bytes": "2000"})
    r = describe(b, 2, "t")
    assert r.error_code == 0
    cfg = by_name(r)
    assert set(cfg) == TOPIC_CONFIG_NAMES
    mm = cfg["max.message.bytes"]
    assert (mm.value, mm.config_source, mm.read_only, mm.is_sensitive) == ("2000", 1, False, False)
    assert [(s.name, s.value, s.source) for s in mm.synonyms] == [
        ("max.message.bytes", "2000", 1), ("message.max.bytes", "1048588", 5)]
    sb = cfg["segment.bytes"]
    assert (sb.value, sb.config_source) == ("2097152", 4)
    assert [(s.name, s.value, s.source) for s in sb.synonyms] == [
        ("log.segment.bytes", "2097152", 4), ("log.segment.bytes", "1073741824", 5)]
    # Kafka's ConfigHelper drops synonyms before the primary one (log.retention.ms): with only
    # log.retention.hours set, retention.ms has the resolved value, no synonyms, DEFAULT_CONFIG.
    rm = cfg["retention.ms"]
    assert (rm.value, rm.config_source, list(rm.synonyms)) == ("172800000", 5, [])
    assert sb.config_type == 3 and rm.config_type == 5 and cfg["cleanup.policy"].config_type == 7
    assert sb.documentation


def test_describe_topic_key_filter_version_0_and_no_synonyms(broker):
    create(broker, "t", configs={"retention.ms": "1000"})
    r = describe(broker, 2, "t", keys=["retention.ms", "segment.ms", "nope"])
    assert sorted(by_name(r)) == ["retention.ms", "segment.ms"]
    r0 = describe(broker, 2, "t", keys=["retention.ms", "segment.ms"], version=0)
    c = by_name(r0)
    assert c["retention.ms"].is_default is False and c["segment.ms"].is_default is True
    r1 = describe(broker, 2, "t", version=1, synonyms=False)
    assert all(not c.synonyms for c in r1.configs)
    assert len(describe(broker, 2, "t", keys=[]).configs) == len(TOPIC_CONFIG_NAMES)


def test_describe_unknown_and_illegal_topics(broker):
    r = describe(broker, 2, "nope")
    assert (r.error_code, r.error_message, list(r.configs)) == (E.UNKNOWN_TOPIC_OR_PARTITION, "", [])  # Kafka 4: ""
    assert describe(broker, 2, "a b").error_code == E.INVALID_TOPIC_EXCEPTION


def test_describe_broker_configs(make_broker):
    b = make_broker(**{"log.retention.hours": 48, "num.partitions": 3})
    cfg = by_name(describe(b, 4, "1"))
    assert (cfg["log.retention.hours"].value, cfg["log.retention.hours"].config_source) == ("48", 4)
    assert [(s.name, s.value, s.source) for s in cfg["log.retention.hours"].synonyms] == [
        ("log.retention.hours", "48", 4), ("log.retention.hours", "168", 5)]
    assert (cfg["log.retention.ms"].value, cfg["log.retention.ms"].config_source) == (None, 5)
    assert (cfg["num.partitions"].value, cfg["num.partitions"].config_source) == ("3", 4)
    assert (cfg["log.segment.bytes"].value, cfg["log.segment.bytes"].config_source) == ("1073741824", 5)
    # read-only unless Kafka marks the key dynamic (log.retention.hours is not; log.retention.ms is)
    assert cfg["num.partitions"].read_only and cfg["log.retention.hours"].read_only
    assert not cfg["log.retention.ms"].read_only and not cfg["log.segment.bytes"].read_only
    # Kafka 4.1+ (KIP-966): the cluster-level min.insync.replicas record is the only cluster-wide
    # dynamic default until one is set, valued as the static setting (here Kafka's default, 1)
    assert [(c.name, c.value, c.config_source, [(s.name, s.value, s.source) for s in c.synonyms])
            for c in describe(b, 4, "").configs] == [("min.insync.replicas", "1", 3, [("min.insync.replicas", "1", 3)])]
    assert (cfg["min.insync.replicas"].value, cfg["min.insync.replicas"].config_source) == ("1", 3)
    r = describe(b, 4, "2")
    assert r.error_code == E.INVALID_REQUEST and "expected 1 or empty string" in r.error_message
    assert describe(b, 4, "x").error_code == E.INVALID_REQUEST
    assert "root" in by_name(describe(b, 8, "1"))


# ---- AlterConfigs / IncrementalAlterConfigs -----------------------------------------------------

def alter(b, name, configs, validate_only=False, rtype=2):
    req = AC(resources=[AC.AlterConfigsResource(resource_type=rtype, resource_name=name, configs=[
        AC.AlterableConfig(name=k, value=v) for k, v in configs.items()])], validate_only=validate_only)
    (r,) = call(b, alter_configs, 2, req).responses
    return r


def ialter(b, name, ops, validate_only=False, rtype=2):
    req = IAC(resources=[IAC.AlterConfigsResource(resource_type=rtype, resource_name=name, configs=[
        IAC.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops])],
        validate_only=validate_only)
    (r,) = call(b, incremental_alter_configs, 1, req).responses
    return r


def test_legacy_alter_replaces_all_overrides_and_applies_live(broker):
    create(broker, "t", 2, configs={"retention.ms": "1000"})
    r = alter(broker, "t", {"message.timestamp.type": "LogAppendTime"})
    assert (r.error_code, r.error_message) == (0, None)
    assert broker.topics.get("t").configs == {"message.timestamp.type": "LogAppendTime"}
    for p in range(2):
        cfg = broker.topics.log("t", p).config
        assert cfg.message_timestamp_type == "LogAppendTime" and cfg.retention_ms == 604_800_000


def test_alter_refusals_change_nothing(broker):
    create(broker, "t", configs={"retention.ms": "1000"})
    r = alter(broker, "t", {"retention.ms": "-5"})
    assert r.error_code == E.INVALID_CONFIG and "retention.ms" in r.error_message
    r = alter(broker, "t", {"retention.ms": "5"}, validate_only=True)
    assert r.error_code == 0
    assert broker.topics.get("t").configs == {"retention.ms": "1000"}
    assert broker.topics.log("t", 0).config.retention_ms == 1000
    r = alter(broker, "nope", {"retention.ms": "5"})
    assert (r.error_code, r.error_message) == (E.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'nope' does not exist.")
    r = alter(broker, "1", {"log.retention.hours": "1"}, rtype=4)  # read-only in Kafka (log.retention.ms is not)
    assert (r.error_code, r.error_message) == (E.INVALID_REQUEST,
                                               "Cannot update these configs dynamically: Set(log.retention.hours)")
    assert alter(broker, "t", {}, rtype=99).error_code == E.UNSUPPORTED_VERSION


def test_incremental_ops(broker):
    create(broker, "t", configs={"retention.ms": "1000"})
    r = ialter(broker, "t", [("cleanup.policy", APPEND, "compact"), ("retention.ms", DELETE, None),
                             ("segment.ms", SET, "60000")])
    assert r.error_code == 0
    assert broker.topics.get("t").configs == {"cleanup.policy": "delete,compact", "segment.ms": "60000"}
    lc = broker.topics.log("t", 0).config
    assert lc.compact and lc.delete and lc.segment_ms == 60000 and lc.retention_ms == 604_800_000
    assert ialter(broker, "t", [("cleanup.policy", SUBTRACT, "delete")]).error_code == 0
    assert broker.topics.get("t").configs["cleanup.policy"] == "compact"
    r = ialter(broker, "t", [("retention.ms", APPEND, "5")])
    assert (r.error_code, r.error_message) == (E.INVALID_CONFIG,
                                               "Can't APPEND to key retention.ms because its type is not LIST.")
    assert ialter(broker, "t", [("retention.ms", 7, "5")]).error_code == E.INVALID_REQUEST
    assert ialter(broker, "t", [("retention.ms", SET, None)]).error_code == E.INVALID_REQUEST
    assert ialter(broker, "t", [("retention.ms", SET, "x")]).error_code == E.INVALID_CONFIG
    assert broker.topics.get("t").configs == {"cleanup.policy": "compact", "segment.ms": "60000"}


def test_apply_ops_is_pure_and_follows_kafka():
    """ConfigurationControlManagerTest.testIncrementalAlterConfigs (APPEND/SUBTRACT semantics)."""
    cur = {"leader.replication.throttled.replicas": "0:1"}
    new = apply_ops(cur, [("leader.replication.throttled.replicas", APPEND, "1:1,0:1")])
    assert new == {"leader.replication.throttled.replicas": "0:1,1:1"} and cur == {
        "leader.replication.throttled.replicas": "0:1"}
    assert apply_ops({}, [("cleanup.policy", SUBTRACT, "delete")]) == {"cleanup.policy": ""}
    assert apply_ops({}, [("x", DELETE, None)]) == {}
    with pytest.raises(ResourceError):
        apply_ops({}, [("segment.ms", SET, "1"), ("segment.ms", DELETE, None)])
    assert set(TOPIC_CONFIGS) == TOPIC_CONFIG_NAMES


# ---- CreatePartitions -----------------------------------------------------------------------------

def grow(b, name, count, assignments=None, validate_only=False, version=3):
    req = CP(topics=[CP.CreatePartitionsTopic(name=name, count=count, assignments=assignments)],
             timeout_ms=1000, validate_only=validate_only)
    (r,) = call(b, create_partitions, version, req).results
    return r.error_code, r.error_message


def test_create_partitions_grow_only(broker):
    """ReplicationControlManagerTest.testCreatePartitions (messages as Kafka's)."""
    create(broker, "t", 2)
    assert grow(broker, "t", 4) == (0, None)
    assert broker.topics.get("t").partitions == 4 and broker.topics.log("t", 3) is not None
    assert grow(broker, "t", 3) == (E.INVALID_PARTITIONS, "The topic t currently has 4 partition(s); 3 would not be an increase.")
    assert grow(broker, "t", 4) == (E.INVALID_PARTITIONS, "Topic already has 4 partition(s).")
    assert grow(broker, "nope", 4) == (E.UNKNOWN_TOPIC_OR_PARTITION, None)
    assert grow(broker, "t", 6, validate_only=True) == (0, None)
    assert broker.topics.get("t").partitions == 4
    A = CP.CreatePartitionsAssignment
    assert grow(broker, "t", 6, assignments=[A(broker_ids=[1])])[0] == E.INVALID_REPLICA_ASSIGNMENT
    assert grow(broker, "t", 5, assignments=[A(broker_ids=[2])])[0] == E.INVALID_REPLICA_ASSIGNMENT
    assert grow(broker, "t", 5, assignments=[A(broker_ids=[1])], version=0) == (0, None)


# ---- DeleteRecords ----------------------------------------------------------------------------

def produce(b, topic, n, partition=0):
    plog = b.topics.log(topic, partition)
    now = b.clock.now_ms()
    for i in range(n):
        plog.append(build_batch([(None, b"v%d" % i, now)], base_offset=0))


def delete_to(b, topic, offset, partition=0):
    req = DR(topics=[DR.DeleteRecordsTopic(name=topic, partitions=[
        DR.DeleteRecordsPartition(partition_index=partition, offset=offset)])], timeout_ms=1000)
    (t,) = call(b, delete_records, 2, req).topics
    (p,) = t.partitions
    return p.error_code, p.low_watermark


def test_delete_records_advances_log_start_and_drops_covered_segments(broker):
    """UnifiedLogTest.testLogDeletionAfterDeleteRecords, through the handler."""
    create(broker, "t", configs={"segment.bytes": "100"})
    produce(broker, "t", 10)
    plog = broker.topics.log("t", 0)
    before = plog.num_segments
    assert before > 3
    assert delete_to(broker, "t", 4) == (0, 4)
    assert plog.log_start_offset == 4
    assert plog.num_segments < before
    assert min(s["base_offset"] for s in plog.segments_info()) <= 4
    assert delete_to(broker, "t", 2) == (0, 4)  # never backwards
    assert delete_to(broker, "t", 11) == (E.OFFSET_OUT_OF_RANGE, -1)
    assert delete_to(broker, "t", -1) == (0, 10)  # -1: the high watermark
    assert delete_to(broker, "nope", 0) == (E.UNKNOWN_TOPIC_OR_PARTITION, -1)
    assert delete_to(broker, "t", 0, partition=5) == (E.UNKNOWN_TOPIC_OR_PARTITION, -1)


def test_delete_records_on_compacted_topic_is_a_policy_violation(broker):
    create(broker, "c", configs={"cleanup.policy": "compact"})
    assert delete_to(broker, "c", 0) == (E.POLICY_VIOLATION, -1)


# ---- DeleteTopics ----------------------------------------------------------------------------

def test_delete_topics_by_name_and_id(broker):
    create(broker, "a")
    create(broker, "b", 2)
    tid = broker.topics.get("b").topic_id
    resp = call(broker, delete_topics, 5, DT(topic_names=["a", "nope"], timeout_ms=1000))
    got = {r.name: r.error_code for r in resp.responses}
    assert got == {"a": 0, "nope": E.UNKNOWN_TOPIC_OR_PARTITION}
    assert broker.topics.get("a") is None and broker.topics.log("a", 0) is None
    S = DT.DeleteTopicState
    resp = call(broker, delete_topics, 6, DT(topics=[S(name=None, topic_id=tid),
                                                     S(name=None, topic_id=b"\x01" * 16),
                                                     S(name="x", topic_id=tid)], timeout_ms=1000))
    got = [(r.name, r.topic_id, r.error_code) for r in resp.responses]
    assert ("x", tid, E.INVALID_REQUEST) in got
    assert ("b", tid, 0) in got
    assert (None, b"\x01" * 16, E.UNKNOWN_TOPIC_ID) in got
    assert broker.topics.get("b") is None
    # data dirs renamed Kafka's way, waiting for file.delete.delay.ms
    names = [p.name for p in broker.cfg.log_dirs[0].iterdir()]
    assert any(n.startswith("b-1.") and n.endswith("-delete") for n in names)
    assert not any(n in ("a-0", "b-0", "b-1") for n in names)


def test_delete_topics_disabled_and_internal(make_broker):
    b = make_broker(**{"delete.topic.enable": "false"})
    create(b, "t")
    (r,) = call(b, delete_topics, 4, DT(topic_names=["t"], timeout_ms=1000)).responses
    assert r.error_code == E.TOPIC_DELETION_DISABLED and b.topics.get("t") is not None
    b2 = make_broker()
    b2.topics.create_topic("__consumer_offsets", 1)
    (r,) = call(b2, delete_topics, 6, DT(topics=[DT.DeleteTopicState(name="__consumer_offsets",
                                                                      topic_id=ZERO_UUID)])).responses
    assert r.error_code == E.INVALID_REQUEST and b2.topics.get("__consumer_offsets") is not None


# ---- persistence ------------------------------------------------------------------------------

def test_configs_and_partition_counts_survive_reopen(tmp_path):
    raw = {"log.dirs": str(tmp_path / "d"), "listeners": "PLAINTEXT://127.0.0.1:0"}
    b = Broker(BrokerConfig(raw), clock=ManualClock(1_700_000_000_000))
    b.open_storage()
    create(b, "t", 1, configs={"retention.ms": "1000"})
    grow(b, "t", 3)
    ialter(b, "t", [("message.timestamp.type", SET, "LogAppendTime")])
    produce(b, "t", 5)
    delete_to(b, "t", 3)
    b.logs.shutdown()
    b2 = Broker(BrokerConfig(raw), clock=ManualClock(1_700_000_000_000))
    b2.open_storage()
    try:
        t = b2.topics.get("t")
        assert t.partitions == 3
        assert t.configs == {"retention.ms": "1000", "message.timestamp.type": "LogAppendTime"}
        assert b2.topics.log("t", 2).config.message_timestamp_type == "LogAppendTime"
        assert b2.topics.log("t", 0).log_start_offset == 3
        assert by_name(describe(b2, 2, "t"))["retention.ms"].config_source == 1
    finally:
        b2.logs.shutdown()


def test_min_insync_replicas_comes_from_the_cluster_level_record(make_broker):
    """Kafka 4.1+ (KIP-966): a topic without an override reports min.insync.replicas from the
    cluster-level dynamic record (DYNAMIC_DEFAULT_BROKER_CONFIG), valued as the static
    setting; an override set with IncrementalAlterConfigs comes first, and deleting it goes back."""
    b = make_broker(**{"min.insync.replicas": 2})
    create(b, "t")

    def mir():
        c = by_name(describe(b, 2, "t"))["min.insync.replicas"]
        return c.value, c.config_source, [(s.value, s.source) for s in c.synonyms]
    assert mir() == ("2", 3, [("2", 3), ("2", 4), ("1", 5)])
    assert ialter(b, "t", [("min.insync.replicas", SET, "3")]).error_code == 0
    assert mir() == ("3", 1, [("3", 1), ("2", 3), ("2", 4), ("1", 5)])
    assert ialter(b, "t", [("min.insync.replicas", DELETE, None)]).error_code == 0
    assert mir() == ("2", 3, [("2", 3), ("2", 4), ("1", 5)])
    r = ialter(b, "1", [("min.insync.replicas", SET, "1")], rtype=4)  # no per-broker override
    assert r.error_code == E.INVALID_REQUEST


# ---- configs Kafka 4.0 removed --------------------------------------------------------------

def test_a_topic_stored_with_a_removed_config_loads_without_it(tmp_path):
    """A topic record an older Hourglass wrote (Kafka 3.9's config model) with
    message.format.version and message.timestamp.difference.max.ms: the broker opens the
    topic as Kafka 4 would have it, without message.format.version (its other overrides
    intact), rewrites the record, and DescribeConfigs does not list it; the timestamp
    difference, which Hourglass honours as Kafka 3.9 did, stays and is listed."""
    import json
    raw = {"log.dirs": str(tmp_path / "data"), "listeners": "PLAINTEXT://127.0.0.1:0"}
    b = Broker(BrokerConfig(raw), clock=ManualClock(1_700_000_000_000))
    b.open_storage()
    assert create(b, "old", configs={"retention.ms": "5000"}).error_code == 0
    b.logs.shutdown()
    (record,) = (tmp_path / "data" / ".hourglass" / "topics").glob("old*.json")
    d = json.loads(record.read_text())
    d["configs"].update({"message.format.version": "2.8", "message.timestamp.difference.max.ms": "1000"})
    record.write_text(json.dumps(d))
    b = Broker(BrokerConfig(raw), clock=ManualClock(1_700_000_000_000))
    b.open_storage()
    try:
        kept = {"retention.ms": "5000", "message.timestamp.difference.max.ms": "1000"}
        assert b.topics.get("old").configs == kept
        assert json.loads(record.read_text())["configs"] == kept
        listed = by_name(describe(b, 2, "old"))
        assert listed["retention.ms"].value == "5000"
        assert "message.format.version" not in listed
        assert listed["message.timestamp.difference.max.ms"].value == "1000"
        assert b.logs.config_for("old").timestamp_before_max_ms == 1000
    finally:
        b.logs.shutdown()
