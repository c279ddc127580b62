"""Admin APIs: CreateTopics validation, DescribeConfigs for topics and the broker,
(Incremental)AlterConfigs errors, DeleteRecords, client quotas."""
from __future__ import annotations

import pytest

from storage.log_config import TIMESTAMP_DIFFERENCE

from tests.differential.framework import req
from tests.differential.wire import batch, delete_records, now_ms, produce, wait_ok

pytestmark = pytest.mark.xdist_group("differential")

TOPIC, BROKER = 2, 4


def _create(name, partitions=1, rf=1, configs=None, assignments=None, validate_only=False, v=7):
    return req(19, v, topics=[{"name": name, "num_partitions": partitions, "replication_factor": rf,
                               "assignments": assignments or [],
                               "configs": [{"name": k, "value": val} for k, val in (configs or {}).items()]}],
               timeout_ms=30000, validate_only=validate_only)


def test_create_topics_validation(ex):
    base = ex.topic_name()
    existing = ex.topic_name("exists")
    ex.create_topic(existing)
    cases = [
        ("empty name", "", {}),
        ("dot", ".", {}),
        ("dot dot", "..", {}),
        ("249 characters", "a" * 249, {"partitions": 1}),
        ("250 characters", "b" * 250, {}),
        ("slash", "bad/name", {}),
        ("space", "with space", {}),
        ("existing topic", existing, {}),
        ("0 partitions", base + "-p0", {"partitions": 0}),
        ("-5 partitions", base + "-pm5", {"partitions": -5}),
        ("replication factor 2 on one node", base + "-rf2", {"rf": 2}),
        ("replication factor 0", base + "-rf0", {"rf": 0}),
        ("unknown config", base + "-cfg", {"configs": {"no.such.config": "1"}}),
        ("config value not a number", base + "-cfgv", {"configs": {"retention.ms": "abc"}}),
        ("cleanup.policy bogus", base + "-cp", {"configs": {"cleanup.policy": "bogus"}}),
        ("min.insync.replicas 2", base + "-isr", {"configs": {"min.insync.replicas": "2"}}),
        ("null config value", base + "-null", {"configs": {"retention.ms": None}}),
        # removed in Kafka 4.0 (KIP-724): refused as unknown names
        *[(f"removed config {k}", base + "-rm", {"configs": {k: val}}) for k, val in (
            ("message.format.version", "3.0"), ("message.downconversion.enable", "false"))],
        # removed in Kafka 4.0 (KIP-937), honoured by Hourglass as Kafka 3.9 did (kept.py)
        (f"removed config {TIMESTAMP_DIFFERENCE}, honoured", base + "-tsd", {"configs": {TIMESTAMP_DIFFERENCE: "1000"}}),
        # new in Kafka 4.x: their bounds
        ("max.decompressed.message.bytes 0", base + "-mdb", {"configs": {"max.decompressed.message.bytes": "0"}}),
        ("remote.copy.lag.ms -2", base + "-rcl", {"configs": {"remote.copy.lag.ms": "-2"}}),
        ("remote.copy.lag.bytes -2", base + "-rcb", {"configs": {"remote.copy.lag.bytes": "-2"}}),
        ("errors.deadletterqueue.group.enable yes", base + "-dlq",
         {"configs": {"errors.deadletterqueue.group.enable": "yes"}}),
        ("assignments with partitions", base + "-asg", {"partitions": 1, "rf": -1,
                                                         "assignments": [{"partition_index": 0, "broker_ids": [1]}]}),
    ]
    for v in ex.versions(19):
        for name, topic, kw in cases:
            p, rf = kw.get("partitions", 1), kw.get("rf", 1)
            body = _create(topic, p, rf, kw.get("configs"), kw.get("assignments"), validate_only=True, v=v)
            ex.send(19, v, body, scenario=f"validate_only: {name}")
    # for real, at the newest version both serve (names differ per version: topics are created)
    v = max(ex.versions(19))
    ex.send(19, v, _create(base + "-real", 3, 1, {"retention.ms": "123456", "cleanup.policy": "compact"}, v=v),
            scenario="create with configs")
    ex.send(19, v, _create(base + "-new4", 1, 1, {"max.decompressed.message.bytes": "5000", "remote.copy.lag.ms": "-1",
                                                  "remote.copy.lag.bytes": "1024",
                                                  "errors.deadletterqueue.group.enable": "true"}, v=v),
            scenario="create with the configs Kafka 4.x added")
    ex.send(19, v, _create(base + "-default", -1, -1, v=v), scenario="broker defaults (-1, -1)")
    ex.send(19, v, _create(base + "-real", 1, 1, v=v), scenario="create again")


def _describe(resources, v, synonyms=True, docs=True):
    return req(32, v, resources=[{"resource_type": t, "resource_name": n, "configuration_keys": keys}
                                 for t, n, keys in resources],
               include_synonyms=synonyms, include_documentation=docs)


def test_describe_configs_topic(ex):
    topic = ex.topic_name()
    ex.create_topic(topic, configs={"retention.ms": "3600000", "cleanup.policy": "compact,delete",
                                    "max.message.bytes": "2000"})
    for v in ex.versions(32):
        ex.send(32, v, _describe([(TOPIC, topic, None)], v), scenario="topic, every config")
        ex.send(32, v, _describe([(TOPIC, topic, ["retention.ms", "segment.bytes", "no.such.config"])], v),
                scenario="topic, named keys")
        ex.send(32, v, _describe([(TOPIC, ex.topic_name("nosuch"), None)], v), scenario="unknown topic")
        ex.send(32, v, _describe([(TOPIC, "", None)], v), scenario="empty topic name")
        ex.send(32, v, _describe([(9, "x", None)], v), scenario="unknown resource type")


def test_describe_configs_of_many_topics(ex):
    """One DescribeConfigs naming 150 topics with synonyms and documentation (issue 44: the
    entries of topics with the same overrides are built once and shared, and the ~1 MB answer
    is encoded between turns of the event loop): Kafka's answer, topic by topic, with three
    kinds of overrides interleaved so a shared entry list never lands on the wrong topic."""
    base = ex.topic_name("many")
    overrides = [{}, {"retention.ms": "3600000"}, {"retention.ms": "3600000", "cleanup.policy": "compact"}]
    names = [f"{base}-{i}" for i in range(150)]
    v = max(ex.versions(19))
    ex.send(19, v, req(19, v, topics=[{"name": n, "num_partitions": 1, "replication_factor": 1, "assignments": [],
                                       "configs": [{"name": k, "value": val} for k, val in overrides[i % 3].items()]}
                                      for i, n in enumerate(names)], timeout_ms=60000, validate_only=False),
            scenario="150 topics created")
    dv = max(ex.versions(32))
    every = [(TOPIC, n, None) for n in names]
    keyed = [(TOPIC, n, ["retention.ms", "cleanup.policy"]) for n in names[:6]]
    ex.send(32, dv, _describe(every + keyed + [(TOPIC, ex.topic_name("nosuch"), None)], dv),
            scenario="150 topics, every config, and named keys of 6 of them")


def test_describe_configs_broker(ex):
    keys = ["log.retention.hours", "num.partitions", "message.max.bytes", "log.segment.bytes",
            "auto.create.topics.enable", "log.message.timestamp.type", "log.message.timestamp.after.max.ms",
            "log.cleanup.policy", "offsets.topic.replication.factor", "group.initial.rebalance.delay.ms",
            "listeners", "sasl.jaas.config", "ssl.keystore.password"]
    for v in ex.versions(32):
        ex.send(32, v, _describe([(BROKER, "1", keys)], v), scenario="broker 1, named keys")
        ex.send(32, v, _describe([(BROKER, "", keys[:4])], v), scenario="cluster default (empty name)")
        ex.send(32, v, _describe([(BROKER, "7", keys[:2])], v), scenario="another broker id")
        ex.send(32, v, _describe([(BROKER, "x", keys[:2])], v), scenario="a broker id not a number")


def _incremental(resources, v, validate_only=False):
    return req(44, v, resources=[{"resource_type": t, "resource_name": n, "configs": [
        {"name": k, "config_operation": op, "value": val} for k, op, val in cfgs]} for t, n, cfgs in resources],
        validate_only=validate_only)


def _alter(resources, v, validate_only=False):
    return req(33, v, resources=[{"resource_type": t, "resource_name": n, "configs": [
        {"name": k, "value": val} for k, val in cfgs]} for t, n, cfgs in resources], validate_only=validate_only)


SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def test_incremental_alter_configs_errors(ex):
    topic = ex.topic_name()
    ex.create_topic(topic)
    cases = [
        ("set retention.ms", [("retention.ms", SET, "1000")]),
        ("unknown config", [("no.such.config", SET, "1")]),
        ("bad value", [("retention.ms", SET, "abc")]),
        ("append to a non-list", [("retention.ms", APPEND, "1")]),
        ("subtract from cleanup.policy", [("cleanup.policy", SUBTRACT, "delete")]),
        ("append to cleanup.policy", [("cleanup.policy", APPEND, "compact")]),
        ("delete retention.ms", [("retention.ms", DELETE, None)]),
        ("unknown operation 7", [("retention.ms", 7, "1")]),
        ("same key twice", [("retention.ms", SET, "1"), ("retention.ms", SET, "2")]),
        ("null value for SET", [("retention.ms", SET, None)]),
        ("set a config Kafka 4 removed", [("message.format.version", SET, "3.0")]),
        ("delete a config Kafka 4 removed", [("message.timestamp.difference.max.ms", DELETE, None)]),
        ("set max.decompressed.message.bytes", [("max.decompressed.message.bytes", SET, "1000")]),
    ]
    for v in ex.versions(44):
        for name, cfgs in cases:
            ex.send(44, v, _incremental([(TOPIC, topic, cfgs)], v, validate_only=True), scenario=f"validate_only: {name}")
        ex.send(44, v, _incremental([(TOPIC, ex.topic_name("nosuch"), [("retention.ms", SET, "1")])], v),
                scenario="unknown topic")
        ex.send(44, v, _incremental([(BROKER, "1", [("log.retention.ms", SET, "1000")])], v, validate_only=True),
                scenario="broker: a read-only config")
        ex.send(44, v, _incremental([(BROKER, "1", [("no.such.broker.config", SET, "1")])], v, validate_only=True),
                scenario="broker: unknown config")
        ex.send(44, v, _incremental([(BROKER, "x", [("log.cleaner.threads", SET, "2")])], v, validate_only=True),
                scenario="broker: id not a number")
        ex.send(44, v, _incremental([(TOPIC, topic, [("retention.ms", SET, "1000")]),
                                     (TOPIC, topic, [("retention.ms", SET, "2000")])], v, validate_only=True),
                scenario="the same resource twice")
    v = max(ex.versions(44))
    ex.send(44, v, _incremental([(TOPIC, topic, [("retention.ms", SET, "1000"), ("cleanup.policy", APPEND, "compact")])], v),
            scenario="set and append, for real")
    dv = max(ex.versions(32))
    for s in ex.sides:  # Kafka's broker learns the change from its controller a moment later
        wait_ok(s, 32, dv, _describe([(TOPIC, topic, ["retention.ms"])], dv),
                ok=lambda r: r.results[0].configs and r.results[0].configs[0].value == "1000")
    ex.send(32, dv, _describe([(TOPIC, topic, ["retention.ms", "cleanup.policy"])], dv),
            scenario="after incremental alter")


def test_alter_configs_errors(ex):
    topic = ex.topic_name()
    ex.create_topic(topic)
    for v in ex.versions(33):
        ex.send(33, v, _alter([(TOPIC, topic, [("retention.ms", "1000")])], v, validate_only=True), scenario="validate_only")
        ex.send(33, v, _alter([(TOPIC, topic, [("no.such.config", "1")])], v, validate_only=True), scenario="unknown config")
        ex.send(33, v, _alter([(TOPIC, topic, [("retention.ms", "abc")])], v, validate_only=True), scenario="bad value")
        ex.send(33, v, _alter([(TOPIC, topic, [("message.downconversion.enable", "true")])], v, validate_only=True),
                scenario="a config Kafka 4 removed")
        ex.send(33, v, _alter([(TOPIC, ex.topic_name("nosuch"), [("retention.ms", "1")])], v), scenario="unknown topic")
        ex.send(33, v, _alter([(BROKER, "1", [("log.retention.ms", "1000")])], v, validate_only=True),
                scenario="broker: a read-only config")
        ex.send(33, v, _alter([(BROKER, "x", [("log.cleaner.threads", "2")])], v, validate_only=True),
                scenario="broker: id not a number")
        # (not compared: the same resource twice makes Kafka 4.4's AlterConfigs handler throw
        # IllegalStateException "Duplicate key ConfigResource" and never answer)


def test_delete_records(ex):
    topic = ex.topic_name()
    ex.create_topic(topic, partitions=2)
    t = now_ms()
    ex.send(0, 9, produce(topic, {0: batch([t] * 5)}, 9), scenario="setup")
    for v in ex.versions(21):
        ex.send(21, v, delete_records(topic, {0: 1 + v}, v), scenario="to an offset inside the log")
        ex.send(21, v, delete_records(topic, {0: 0}, v), scenario="below the log start")
        ex.send(21, v, delete_records(topic, {0: 6}, v), scenario="past the high watermark")
        ex.send(21, v, delete_records(topic, {0: -1}, v), scenario="-1 (the high watermark)")
        ex.send(21, v, delete_records(topic, {0: -2}, v), scenario="-2")
        ex.send(21, v, delete_records(topic, {1: 0, 5: 0}, v), scenario="empty and unknown partitions")
        ex.send(21, v, delete_records(ex.topic_name("nosuch"), {0: 0}, v), scenario="unknown topic")


def test_client_quotas(ex):
    user = f"user-{ex.topic_name()}"
    for v in ex.versions(49):
        ent = [{"entity_type": "user", "entity_name": user}]
        ex.send(49, v, req(49, v, entries=[{"entity": ent, "ops": [
            {"key": "producer_byte_rate", "value": 1024.0, "remove": False}]}], validate_only=True),
            scenario="validate_only set")
        ex.send(49, v, req(49, v, entries=[{"entity": ent, "ops": [
            {"key": "no_such_quota", "value": 1.0, "remove": False}]}], validate_only=True),
            scenario="unknown quota key")
        ex.send(49, v, req(49, v, entries=[{"entity": [{"entity_type": "nosuch", "entity_name": "x"}], "ops": [
            {"key": "producer_byte_rate", "value": 1.0, "remove": False}]}], validate_only=True),
            scenario="unknown entity type")
        ex.send(49, v, req(49, v, entries=[{"entity": ent, "ops": [
            {"key": "producer_byte_rate", "value": -5.0, "remove": False}]}], validate_only=True),
            scenario="negative rate")
    v = max(ex.versions(49))
    ent = [{"entity_type": "user", "entity_name": user}]
    ex.send(49, v, req(49, v, entries=[{"entity": ent, "ops": [
        {"key": "producer_byte_rate", "value": 2048.0, "remove": False},
        {"key": "consumer_byte_rate", "value": 4096.0, "remove": False}]}], validate_only=False),
        scenario="set two quotas")
    for s in ex.sides:  # Kafka's broker learns the quotas from its controller a moment later
        wait_ok(s, 48, 0, req(48, 0, components=[{"entity_type": "user", "match_type": 0, "match": user}], strict=False),
                ok=lambda r: r.entries and len(r.entries[0].values) == 2)
    for dv in ex.versions(48):
        ex.send(48, dv, req(48, dv, components=[{"entity_type": "user", "match_type": 0, "match": user}], strict=False),
                scenario="describe exact user")
        ex.send(48, dv, req(48, dv, components=[{"entity_type": "user", "match_type": 2, "match": None}], strict=False),
                scenario="describe any user (specified)")
        ex.send(48, dv, req(48, dv, components=[{"entity_type": "bogus", "match_type": 0, "match": "x"}], strict=False),
                scenario="describe unknown entity type")
    ex.send(49, v, req(49, v, entries=[{"entity": ent, "ops": [
        {"key": "producer_byte_rate", "value": 0.0, "remove": True},
        {"key": "consumer_byte_rate", "value": 0.0, "remove": True}]}], validate_only=False),
        scenario="remove both")
