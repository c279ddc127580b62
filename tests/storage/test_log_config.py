"""Tests for storage.log_config: Kafka 4.4 topic config defaults, broker log.* default
resolution (KafkaConfig.extractLogConfigMap), KIP-937 timestamp bounds, validation, and
DescribeConfigs entries (ConfigHelper.createTopicConfigEntry). Mirrors the spirit of
core/src/test/scala/unit/kafka/log/LogConfigTest.scala and KafkaConfigTest's
log.roll / log.retention precedence tests."""
from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from storage.errors import InvalidConfigError
from storage.log_config import (
    BROKER_LOG_DEFAULTS,
    CONFIG_SOURCE_IDS,
    CONFIG_TYPE_IDS,
    LONG_MAX,
    CONFLUENT_TOPIC_CONFIGS,
    DEPRECATED_TOPIC_CONFIGS,
    REMOVED_TOPIC_CONFIGS,
    SOURCE_TOPIC,
    TIMESTAMP_DIFFERENCE,
    TOPIC_CONFIGS,
    LogConfig,
    describe,
    deprecation_warning,
    drop_removed,
    java_double_str,
    parse_value,
)

# Kafka 4.4's LogConfig.configNames, less internal.segment.bytes (internal: never described)
KAFKA_44_TOPIC_CONFIGS = {
    "cleanup.policy", "compression.gzip.level", "compression.lz4.level", "compression.type",
    "compression.zstd.level", "delete.retention.ms", "errors.deadletterqueue.group.enable",
    "file.delete.delay.ms", "flush.messages", "flush.ms", "follower.replication.throttled.replicas",
    "index.interval.bytes", "leader.replication.throttled.replicas", "local.retention.bytes",
    "local.retention.ms", "max.compaction.lag.ms", "max.decompressed.message.bytes",
    "max.message.bytes", "message.timestamp.after.max.ms", "message.timestamp.before.max.ms",
    "message.timestamp.type", "min.cleanable.dirty.ratio", "min.compaction.lag.ms",
    "min.insync.replicas", "preallocate", "remote.copy.lag.bytes", "remote.copy.lag.ms",
    "remote.log.copy.disable", "remote.log.delete.on.disable", "remote.storage.enable",
    "retention.bytes", "retention.ms", "segment.bytes", "segment.index.bytes", "segment.jitter.ms",
    "segment.ms", "unclean.leader.election.enable",
}
# ... and Confluent Server's schema ID validation configs, which Hourglass serves too
TOPIC_CONFIG_NAMES = KAFKA_44_TOPIC_CONFIGS | CONFLUENT_TOPIC_CONFIGS


def test_removed_topic_configs_are_unknown_names():
    """Kafka 4.0 removed these (KIP-724): a client setting one gets Kafka 4.4's answer for any
    unknown name; their broker keys feed nothing."""
    assert set(REMOVED_TOPIC_CONFIGS) == {"message.downconversion.enable", "message.format.version"}
    for name in REMOVED_TOPIC_CONFIGS:
        assert name not in TOPIC_CONFIGS
        with pytest.raises(InvalidConfigError, match=f"^Unknown topic config name: {name}$"):
            parse_value(name, "1")
        assert "log." + name not in BROKER_LOG_DEFAULTS
    # a server.properties of Kafka 3.x still resolves (the removed keys are ignored)
    c = LogConfig.from_props({"log.message.format.version": "2.8"}, {})
    assert (c.timestamp_before_max_ms, c.timestamp_after_max_ms) == (LONG_MAX, 3_600_000)
    assert drop_removed({"message.format.version": "2.8", "retention.ms": "5"}) == (
        {"retention.ms": "5"}, ["message.format.version"])


def _bounds(broker: dict, topic: dict) -> tuple[int, int]:
    c = LogConfig.from_props({k: str(v) for k, v in broker.items()}, {k: str(v) for k, v in topic.items()})
    return c.timestamp_before_max_ms, c.timestamp_after_max_ms


_SIDES = ("before", "after")


@given(st.dictionaries(st.sampled_from(["diff", "before", "after"]), st.integers(0, 10**9)),
       st.dictionaries(st.sampled_from(["diff", "before", "after"]), st.integers(0, 10**9)))
def test_timestamp_difference_bounds_as_kafka_39(broker, topic):
    """The deprecated message.timestamp.difference.max.ms (topic, else broker
    log.message.timestamp.difference.max.ms) bounds each side whose own key is set nowhere,
    against a brute-force statement of Kafka 3.9's rule with Kafka 4's defaults."""
    def key(k, layer):
        name = TIMESTAMP_DIFFERENCE if k == "diff" else f"message.timestamp.{k}.max.ms"
        return ("log." + name) if layer == "broker" else name
    got = _bounds({key(k, "broker"): v for k, v in broker.items()}, {key(k, "topic"): v for k, v in topic.items()})
    diff = topic.get("diff", broker.get("diff"))
    want = []
    for side, default in zip(_SIDES, (LONG_MAX, 3_600_000)):
        own = topic.get(side, broker.get(side))
        want.append(own if own is not None else (diff if diff is not None else default))
    assert got == tuple(want)


def test_timestamp_difference_is_a_deprecated_but_honoured_key():
    assert TIMESTAMP_DIFFERENCE not in TOPIC_CONFIGS and TIMESTAMP_DIFFERENCE in DEPRECATED_TOPIC_CONFIGS
    assert parse_value(TIMESTAMP_DIFFERENCE, "60000") == 60000
    with pytest.raises(InvalidConfigError):
        parse_value(TIMESTAMP_DIFFERENCE, "-1")
    with pytest.raises(InvalidConfigError):
        parse_value(TIMESTAMP_DIFFERENCE, "soon")
    warning = deprecation_warning("log." + TIMESTAMP_DIFFERENCE)
    assert "log.message.timestamp.before.max.ms" in warning and "log.message.timestamp.after.max.ms" in warning
    # DescribeConfigs shows it when the topic sets it, never otherwise
    assert TIMESTAMP_DIFFERENCE not in {d.name for d in describe({}, {})}
    shown = {d.name: d for d in describe({}, {TIMESTAMP_DIFFERENCE: "1000"})}
    assert shown[TIMESTAMP_DIFFERENCE].value == "1000" and shown[TIMESTAMP_DIFFERENCE].source == SOURCE_TOPIC


def test_topic_config_names_are_kafka_44s():
    assert set(TOPIC_CONFIGS) == TOPIC_CONFIG_NAMES
    assert list(TOPIC_CONFIGS) == sorted(TOPIC_CONFIGS)
    for d in TOPIC_CONFIGS.values():
        assert d.type in CONFIG_TYPE_IDS and d.documentation
        for s in d.broker_synonyms:
            assert s.name in BROKER_LOG_DEFAULTS, s.name


def test_defaults():
    c = LogConfig.default()
    assert c.segment_bytes == 1073741824
    assert c.segment_ms == 604800000
    assert c.segment_jitter_ms == 0
    assert c.segment_index_bytes == 10485760
    assert c.index_interval_bytes == 4096
    assert c.retention_ms == 604800000
    assert c.retention_bytes == -1
    assert c.cleanup_policy == ("delete",) and c.delete and not c.compact
    assert c.message_timestamp_type == "CreateTime"
    assert c.timestamp_before_max_ms == LONG_MAX
    assert c.timestamp_after_max_ms == 3_600_000  # Kafka 4's default (KIP-1030)
    assert c.max_message_bytes == 1048588
    assert c.flush_messages == c.flush_ms == LONG_MAX
    assert c.file_delete_delay_ms == 60000
    assert c.delete_retention_ms == 86400000
    assert c.min_compaction_lag_ms == 0 and c.max_compaction_lag_ms == LONG_MAX
    assert c.min_cleanable_dirty_ratio == 0.5
    assert c.compression_type == "producer"
    assert c.min_insync_replicas == 1
    assert c.unclean_leader_election_enable is False and c.preallocate is False
    assert c.max_decompressed_message_bytes == 2_147_483_639
    assert c.remote_copy_lag_ms == 0 and c.remote_copy_lag_bytes == -1
    assert c.errors_deadletterqueue_group_enable is False
    assert c.local_retention_ms == -2 and c.effective_local_retention_ms == 604800000
    assert c.max_segment_ms == 604800000 and c.init_file_size == 0


# ----------------------------------------------------------------- broker resolution

@pytest.mark.parametrize("broker,expected", [
    ({}, 168 * 3600_000),
    ({"log.roll.hours": "1"}, 3600_000),
    ({"log.roll.ms": "5000"}, 5000),
    ({"log.roll.ms": "5000", "log.roll.hours": "1"}, 5000),
])
def test_segment_ms_from_log_roll(broker, expected):
    assert LogConfig.from_props(broker, {}).segment_ms == expected
    assert LogConfig.from_props(broker, {"segment.ms": "77"}).segment_ms == 77


@pytest.mark.parametrize("broker,expected", [
    ({}, 168 * 3600_000),
    ({"log.retention.hours": "1"}, 3600_000),
    ({"log.retention.minutes": "30", "log.retention.hours": "1"}, 30 * 60_000),
    ({"log.retention.ms": "1234", "log.retention.minutes": "30", "log.retention.hours": "1"}, 1234),
    ({"log.retention.ms": "-1"}, -1),
    ({"log.retention.ms": "-5"}, -1),      # any negative means unlimited
    ({"log.retention.hours": "-1"}, -1),
])
def test_retention_ms_precedence(broker, expected):
    """Mirrors KafkaConfigTest.testLogRetentionTime*: ms > minutes > hours."""
    assert LogConfig.from_props(broker, {}).retention_ms == expected
    assert LogConfig.from_props(broker, {"retention.ms": "99"}).retention_ms == 99


@given(ms=st.one_of(st.none(), st.integers(-10, 10**9)),
       minutes=st.one_of(st.none(), st.integers(-10, 10**5)),
       hours=st.one_of(st.none(), st.integers(-10, 10**4)))
def test_property_retention_resolution(ms, minutes, hours):
    props = {}
    if ms is not None:
        props["log.retention.ms"] = str(ms)
    if minutes is not None:
        props["log.retention.minutes"] = str(minutes)
    if hours is not None:
        props["log.retention.hours"] = str(hours)
    expected = ms if ms is not None else (
        minutes * 60_000 if minutes is not None else (168 if hours is None else hours) * 3600_000)
    assert LogConfig.from_props(props, {}).retention_ms == (-1 if expected < 0 else expected)


def test_broker_log_keys_map_to_topic_configs():
    broker = {
        "log.segment.bytes": "2097152", "log.index.interval.bytes": "100",
        "log.index.size.max.bytes": "4096", "log.flush.interval.messages": "10",
        "log.flush.interval.ms": "2000", "log.message.timestamp.type": "LogAppendTime",
        "log.cleanup.policy": "compact,delete", "log.cleaner.delete.retention.ms": "11",
        "log.cleaner.min.cleanable.ratio": "0.25", "log.cleaner.min.compaction.lag.ms": "12",
        "log.cleaner.max.compaction.lag.ms": "13000", "message.max.bytes": "2000",
        "compression.type": "zstd", "log.preallocate": "true",
        "log.segment.delete.delay.ms": "14", "log.roll.jitter.ms": "15",
        "log.retention.bytes": "1000000",
    }
    c = LogConfig.from_props(broker, {})
    assert c.segment_bytes == 2097152 and c.index_interval_bytes == 100
    assert c.segment_index_bytes == 4096
    assert c.flush_messages == 10 and c.flush_ms == 2000
    assert c.message_timestamp_type == "LogAppendTime" and c.log_append_time
    assert c.cleanup_policy == ("compact", "delete") and c.compact and c.delete
    assert c.delete_retention_ms == 11 and c.min_cleanable_dirty_ratio == 0.25
    assert c.min_compaction_lag_ms == 12 and c.max_compaction_lag_ms == 13000
    assert c.max_message_bytes == 2000 and c.compression_type == "zstd"
    assert c.preallocate and c.init_file_size == 2097152
    assert c.file_delete_delay_ms == 14 and c.segment_jitter_ms == 15
    assert c.retention_bytes == 1000000
    # compacted topic also rolls by max.compaction.lag.ms
    assert c.max_segment_ms == 13000
    # topic overrides beat broker values
    t = LogConfig.from_props(broker, {"cleanup.policy": "compact", "max.message.bytes": "10"})
    assert t.compact and not t.delete and t.max_message_bytes == 10
    assert dict(t.overrides) == {"cleanup.policy": "compact", "max.message.bytes": "10"}


def test_flush_ms_falls_back_to_scheduler_interval():
    assert LogConfig.from_props({"log.flush.scheduler.interval.ms": "3000"}, {}).flush_ms == 3000
    assert LogConfig.from_props({"log.flush.scheduler.interval.ms": "3000",
                                 "log.flush.interval.ms": "10"}, {}).flush_ms == 10


# ----------------------------------------------------------------- timestamp bounds (KIP-937)

HOUR = 3_600_000  # Kafka 4's message.timestamp.after.max.ms default (KIP-1030)

@pytest.mark.parametrize("broker,topic,before,after", [
    ({}, {}, LONG_MAX, HOUR),
    ({"log.message.timestamp.before.max.ms": "500"}, {}, 500, HOUR),
    ({"log.message.timestamp.after.max.ms": str(LONG_MAX)}, {}, LONG_MAX, LONG_MAX),
    ({}, {"message.timestamp.before.max.ms": "100"}, 100, HOUR),
    ({"log.message.timestamp.before.max.ms": "500"}, {"message.timestamp.after.max.ms": "100"}, 500, 100),
    ({"log.message.timestamp.before.max.ms": "500"}, {"message.timestamp.before.max.ms": "7"}, 7, HOUR),
])
def test_timestamp_bounds_resolution(broker, topic, before, after):
    c = LogConfig.from_props(broker, topic)
    assert (c.timestamp_before_max_ms, c.timestamp_after_max_ms) == (before, after)


# ----------------------------------------------------------------- validation

@pytest.mark.parametrize("name,raw,fragment", [
    ("segment.bytes", "abc", "Not a number of type INT"),
    ("segment.bytes", "2147483648", "Not a number of type INT"),
    ("segment.bytes", "13", "at least 14"),
    ("segment.ms", "0", "at least 1"),
    ("retention.ms", "-2", "at least -1"),
    ("min.cleanable.dirty.ratio", "1.5", "no more than 1"),
    ("cleanup.policy", "compact,bogus", "String must be one of: compact, delete"),
    ("message.timestamp.type", "createtime", "String must be one of"),
    ("compression.type", "brotli", "String must be one of"),
    ("preallocate", "yes", "true or false"),
    ("compression.gzip.level", "10", "between 1 and 9"),
    ("leader.replication.throttled.replicas", "x:y", "format"),
    ("message.timestamp.before.max.ms", "-1", "at least 0"),
])
def test_parse_value_rejects(name, raw, fragment):
    with pytest.raises(InvalidConfigError) as ei:
        parse_value(name, raw)
    assert ei.value.key == name
    assert fragment in str(ei.value)
    assert str(ei.value).startswith(f"Invalid value {raw} for configuration {name}")


def test_parse_value_types():
    assert parse_value("segment.bytes", " 2048 ") == 2048
    assert parse_value("cleanup.policy", "compact, delete") == ["compact", "delete"]
    assert parse_value("cleanup.policy", "") == []
    assert parse_value("preallocate", "TRUE") is True
    assert parse_value("min.cleanable.dirty.ratio", "0.1") == 0.1
    assert parse_value("leader.replication.throttled.replicas", "*") == ["*"]
    assert parse_value("leader.replication.throttled.replicas", "0:1,1:2") == ["0:1", "1:2"]
    assert parse_value("compression.gzip.level", "-1") == -1


def test_unknown_topic_config_rejected():
    with pytest.raises(InvalidConfigError) as ei:
        LogConfig.from_props({}, {"segment.bites": "1"})
    assert ei.value.key == "segment.bites"


def test_bad_broker_value_names_the_broker_key():
    with pytest.raises(InvalidConfigError) as ei:
        LogConfig.from_props({"log.roll.hours": "0"}, {})
    assert ei.value.key == "log.roll.hours"


def test_min_compaction_lag_above_max_rejected():
    with pytest.raises(InvalidConfigError, match="min.compaction.lag.ms"):
        LogConfig.from_props({}, {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"})


def test_random_segment_jitter_bounds():
    import random
    rng = random.Random(1)
    assert LogConfig.default().random_segment_jitter(rng) == 0
    c = LogConfig.from_props({}, {"segment.jitter.ms": "1000", "segment.ms": "100"})
    assert all(0 <= c.random_segment_jitter(rng) < 100 for _ in range(200))


# ----------------------------------------------------------------- describe

def by_name(entries):
    return {e.name: e for e in entries}


def test_describe_defaults_lists_every_config():
    entries = describe({}, {})
    assert [e.name for e in entries] == sorted(TOPIC_CONFIG_NAMES)
    d = by_name(entries)
    for e in entries:
        assert e.source == "DEFAULT_CONFIG" and e.is_default and not e.read_only
        assert not e.sensitive and e.source in CONFIG_SOURCE_IDS
    assert d["segment.bytes"].value == "1073741824"
    assert d["retention.ms"].value == "604800000"
    assert d["retention.ms"].synonyms == [("log.retention.hours", "168", "DEFAULT_CONFIG")]
    assert d["segment.ms"].synonyms == [("log.roll.hours", "168", "DEFAULT_CONFIG")]
    assert d["max.message.bytes"].synonyms == [("message.max.bytes", "1048588", "DEFAULT_CONFIG")]
    assert d["cleanup.policy"].value == "delete" and d["cleanup.policy"].type == "list"
    assert d["min.cleanable.dirty.ratio"].value == "0.5"
    assert d["preallocate"].value == "false"
    assert d["flush.ms"].value == str(LONG_MAX)
    assert d["leader.replication.throttled.replicas"].value == ""
    assert d["remote.storage.enable"].synonyms == []
    assert d["message.timestamp.type"].value == "CreateTime"


def test_describe_topic_override_and_static_broker():
    entries = by_name(describe({"log.retention.ms": "1000", "log.retention.hours": "2",
                                "log.segment.bytes": "2097152"},
                               {"segment.bytes": "3145728", "cleanup.policy": "compact,delete"}))
    seg = entries["segment.bytes"]
    assert seg.value == "3145728" and seg.source == "TOPIC_CONFIG" and not seg.is_default
    assert seg.synonyms == [("segment.bytes", "3145728", "TOPIC_CONFIG"),
                            ("log.segment.bytes", "2097152", "STATIC_BROKER_CONFIG"),
                            ("log.segment.bytes", "1073741824", "DEFAULT_CONFIG")]
    ret = entries["retention.ms"]
    assert ret.value == "1000" and ret.source == "STATIC_BROKER_CONFIG"
    assert ret.synonyms == [("log.retention.ms", "1000", "STATIC_BROKER_CONFIG"),
                            ("log.retention.hours", "2", "STATIC_BROKER_CONFIG"),
                            ("log.retention.hours", "168", "DEFAULT_CONFIG")]
    assert entries["cleanup.policy"].value == "compact,delete"


def test_describe_dynamic_sources_order_and_names_filter():
    entries = describe({"log.retention.hours": "5"}, {},
                       dynamic_default_broker={"log.retention.ms": "700"},
                       dynamic_broker={"log.retention.minutes": "3"},
                       names=["retention.ms", "no.such.config"])
    assert [e.name for e in entries] == ["retention.ms"]
    e = entries[0]
    # ms beats minutes whatever the source (KafkaConfig precedence), sources grouped in order
    assert e.value == "700" and e.source == "DYNAMIC_BROKER_CONFIG"
    assert [s.source for s in e.synonyms] == ["DYNAMIC_BROKER_CONFIG",
                                              "DYNAMIC_DEFAULT_BROKER_CONFIG",
                                              "STATIC_BROKER_CONFIG", "DEFAULT_CONFIG"]


def test_java_double_strings():
    assert [java_double_str(v) for v in (0.5, 1.0, 0.0, 1e-5, 1.5e7, 0.001)] == \
        ["0.5", "1.0", "0.0", "1.0E-5", "1.5E7", "0.001"]
