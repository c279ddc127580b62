"""MirrorMaker 2 between Hourglass and Apache Kafka (the oracle), both ways.

Hourglass -> Kafka is the way out when one machine is outgrown: topics, their configs, record
timestamps and consumer group positions move, and a group that consumed on Hourglass carries
on on Kafka with nothing lost and nothing read twice. The configuration is the one
``hourglass mirror-config`` writes; MirrorMaker 2 runs in its dedicated mode
(``org.apache.kafka.connect.mirror.MirrorMaker``, what ``connect-mirror-maker.sh`` starts).

Kafka -> Hourglass is the way in for debugging: a time window of a production topic copied
onto a local Hourglass with ``hourglass copy-window``.

One Kafka node serves the module (each test its own topics and groups); each test has its own
Hourglass broker.
"""
from __future__ import annotations

import subprocess
import sys
import time

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.helpers.clients import topic_configs, wait_until
from tests.helpers.connect import read_topic

pytestmark = [pytest.mark.timeout(600), pytest.mark.xdist_group("mirror-maker")]

# 2026-01-01T00:00:00Z: record timestamps in the past, 1 s apart. Topics holding them set a
# retention.ms of ten years: a shorter one lets retention delete them while the test runs.
T0 = 1_767_225_600_000


def hourglass_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "import sys; from hourglass.cli import main; sys.exit(main())", *args],
                          capture_output=True, text=True, timeout=120)


def create_topic(bootstrap: str, name: str, partitions: int, config: dict | None = None, client: dict | None = None):
    admin = AdminClient({"bootstrap.servers": bootstrap, **(client or {})})
    config = {"retention.ms": "315360000000", **(config or {})}  # T0's records stay (see T0)
    admin.create_topics([NewTopic(name, partitions, 1, config=config)])[name].result(30)


def produce(bootstrap: str, topic: str, start: int, stop: int, partitions: int, client: dict | None = None) -> None:
    """Records ``start..stop`` round-robin over partitions, key ``k<i>``, value ``v<i>``, header
    ``seq``, timestamp ``T0 + i s``."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **(client or {})})
    for i in range(start, stop):
        p.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % partitions,
                  timestamp=T0 + i * 1000, headers=[("seq", str(i).encode())])
        if i % 500 == 0:
            p.poll(0)
    assert p.flush(60) == 0


def end_offsets(bootstrap: str, topic: str, partitions: int, client: dict | None = None) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "hourglass-tests-watermarks", **(client or {})})
    try:
        return {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(partitions)}
    except KafkaException:  # not there (yet)
        return {}
    finally:
        c.close()


def group_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        got = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
        return {tp.partition: tp.offset for tp in got}
    finally:
        c.close()


def consume_some(bootstrap: str, group: str, topic: str, count: int | None, *, idle_s: float = 8.0) -> list[str]:
    """A group member that reads ``count`` records (or until ``idle_s`` without one), commits
    exactly what it read, and leaves."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "max.poll.interval.ms": 300000})
    c.subscribe([topic])
    got: list[str] = []
    last = time.monotonic()
    try:
        while (count is None or len(got) < count) and time.monotonic() - last < idle_s:
            m = c.poll(0.5)
            if m is None:
                continue
            assert not m.error(), m.error()
            got.append(m.value().decode())
            last = time.monotonic()
            c.commit(message=m, asynchronous=False)
    finally:
        c.close()
    return got


def offsets_for_times(bootstrap: str, topic: str, partitions: int, ts: int) -> list[int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "hourglass-tests-oft"})
    try:
        got = c.offsets_for_times([TopicPartition(topic, p, ts) for p in range(partitions)], timeout=30)
        return [tp.offset for tp in got]
    finally:
        c.close()


def write_mm2_config(path, source: str, target: str, *extra: str) -> None:
    r = hourglass_cli("mirror-config", "-b", source, "--target-bootstrap", target, "--replication-factor", "1",
                      "--sync-interval", "1", "-o", str(path), *extra)
    assert r.returncode == 0, r.stderr


# --------------------------------------------------------------------------- tests


def test_groups_move_from_hourglass_to_kafka_without_loss_or_repeats(broker_factory, kafka_node, mirror_factory,
                                                                      tmp_path):
    """The migration, counted record by record. Producers write on Hourglass while MirrorMaker 2
    copies, then cut over to Kafka. Group ``drained`` consumed Hourglass to the cut-over point:
    MirrorMaker's checkpoint translates its offsets exactly and it resumes on Kafka. Group
    ``paused`` stopped mid-stream: MirrorMaker's translation is never ahead of it (nothing
    lost) but may be behind (MirrorMaker rounds down to its last offset sync); the copy has
    Hourglass's offsets record for record, so the group is set to its Hourglass offsets
    (``kafka-consumer-groups --reset-offsets --from-file``) and resumes. Both read every record
    exactly once across the move."""
    hg = broker_factory()
    topic, ledger, parts = "mig-orders", "mig-ledger", 3
    drained, paused = "mig-drained", "mig-paused"
    create_topic(hg.bootstrap, topic, parts, {"retention.ms": "315360000000", "max.message.bytes": "2097152"})
    create_topic(hg.bootstrap, ledger, 1, {"cleanup.policy": "compact", "min.compaction.lag.ms": "60000"})
    produce(hg.bootstrap, topic, 0, 3000, parts)
    produce(hg.bootstrap, ledger, 0, 100, 1)
    paused_before = consume_some(hg.bootstrap, paused, topic, 1234)
    drained_before = consume_some(hg.bootstrap, drained, topic, 2000)
    assert len(paused_before) == 1234 and len(drained_before) == 2000

    config = tmp_path / "mm2.properties"
    write_mm2_config(config, hg.bootstrap, kafka_node.bootstrap, "--topics", "mig-.*", "--groups", "mig-.*")
    mm = mirror_factory(config)
    produce(hg.bootstrap, topic, 3000, 4000, parts)  # producers still on Hourglass during the copy
    drained_before += consume_some(hg.bootstrap, drained, topic, None)  # ... and consumers too
    assert len(drained_before) == 4000

    hg_ends = end_offsets(hg.bootstrap, topic, parts)
    wait_until(lambda: mm.running and end_offsets(kafka_node.bootstrap, topic, parts) == hg_ends, 240,
               what=lambda: f"copy complete: kafka {end_offsets(kafka_node.bootstrap, topic, parts)} vs {hg_ends}\n"
                            f"{mm.log_tail(4000)}", interval=1.0)
    # the copy holds Hourglass's records at Hourglass's offsets, timestamps and headers included
    on_kafka = read_topic(kafka_node.bootstrap, topic)
    on_hg = read_topic(hg.bootstrap, topic)
    assert [(m.partition(), m.offset(), m.key(), m.value(), m.timestamp(), m.headers()) for m in on_kafka] == \
           [(m.partition(), m.offset(), m.key(), m.value(), m.timestamp(), m.headers()) for m in on_hg]

    # timestamps came along: offsets-for-times answers the same on both clusters
    for i in (0, 1, 999, 1234, 2500, 3999, 4000):
        ts = T0 + i * 1000 - 1
        assert offsets_for_times(kafka_node.bootstrap, topic, parts, ts) == \
            offsets_for_times(hg.bootstrap, topic, parts, ts), i

    # drained group: MirrorMaker's checkpoint lands its exact position in Kafka's group
    hg_drained = group_offsets(hg.bootstrap, drained, topic, parts)
    assert hg_drained == hg_ends
    wait_until(lambda: group_offsets(kafka_node.bootstrap, drained, topic, parts) == hg_drained, 120,
               what=lambda: f"drained group synced: kafka {group_offsets(kafka_node.bootstrap, drained, topic, parts)}"
                            f" vs hourglass {hg_drained}\n{mm.log_tail(4000)}", interval=1.0)
    # paused group: a checkpoint arrives, never ahead of where the group stopped
    hg_paused = group_offsets(hg.bootstrap, paused, topic, parts)
    committed_parts = [p for p, o in hg_paused.items() if o >= 0]
    wait_until(lambda: all(group_offsets(kafka_node.bootstrap, paused, topic, parts)[p] >= 0 for p in committed_parts),
               120, interval=1.0,
               what=lambda: f"paused group checkpointed: {group_offsets(kafka_node.bootstrap, paused, topic, parts)}")
    translated = group_offsets(kafka_node.bootstrap, paused, topic, parts)
    assert all(translated[p] <= hg_paused[p] for p in committed_parts), (translated, hg_paused)
    mm.stop()

    # cut-over: producers move to Kafka; the paused group takes its Hourglass offsets along
    produce(kafka_node.bootstrap, topic, 4000, 5000, parts)
    admin = AdminClient({"bootstrap.servers": kafka_node.bootstrap})
    futures = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(
        paused, [TopicPartition(topic, p, o) for p, o in hg_paused.items() if o >= 0])])
    for f in futures.values():
        f.result(30)

    for group, before in ((drained, drained_before), (paused, paused_before)):
        after = consume_some(kafka_node.bootstrap, group, topic, None)
        consumed = before + after
        assert len(consumed) == 5000, f"{group}: {len(before)} on Hourglass + {len(after)} on Kafka"
        assert sorted(consumed, key=lambda v: int(v[1:])) == [f"v{i}" for i in range(5000)], group

    # configs came along (Kafka's names, Kafka's values)
    kcfg = topic_configs(kafka_node.bootstrap, topic)
    assert kcfg["retention.ms"] == "315360000000" and kcfg["max.message.bytes"] == "2097152"
    lcfg = topic_configs(kafka_node.bootstrap, ledger)
    assert lcfg["cleanup.policy"] == "compact" and lcfg["min.compaction.lag.ms"] == "60000"


def test_mirror_config_with_sasl_runs(broker_factory, kafka_node, mirror_factory, tmp_path):
    """``hourglass mirror-config`` with a SASL/PLAIN Hourglass: the client.properties given with
    ``--command-config`` lands under the source alias, and MirrorMaker 2 runs on the file as
    written."""
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_mover="mover-secret";'
    hg = broker_factory({"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN",
                         "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas})
    client = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
              "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                                  'username="mover" password="mover-secret";'}
    props = tmp_path / "hourglass-client.properties"
    props.write_text("".join(f"{k}={v}\n" for k, v in client.items()))
    rd = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN", "sasl.username": "mover",
          "sasl.password": "mover-secret"}
    create_topic(hg.bootstrap, "sasl-events", 2, client=rd)
    produce(hg.bootstrap, "sasl-events", 0, 500, 2, client=rd)

    config = tmp_path / "mm2.properties"
    write_mm2_config(config, hg.bootstrap, kafka_node.bootstrap, "--topics", "sasl-events", "--command-config",
                     str(props))
    text = config.read_text()
    assert "hourglass.security.protocol = SASL_PLAINTEXT" in text and "hourglass.sasl.mechanism = PLAIN" in text
    mm = mirror_factory(config)
    wait_until(lambda: end_offsets(kafka_node.bootstrap, "sasl-events", 2) == {0: 250, 1: 250}, 240,
               what=lambda: f"copied {end_offsets(kafka_node.bootstrap, 'sasl-events', 2)}\n{mm.log_tail(4000)}",
               interval=1.0)
    assert sorted(m.value() for m in read_topic(kafka_node.bootstrap, "sasl-events")) == \
        sorted(f"v{i}".encode() for i in range(500))


def test_mirror_config_refuses_bad_input(tmp_path):
    r = hourglass_cli("mirror-config", "--target-bootstrap", "k:9092", "--replication-factor", "0")
    assert r.returncode == 2 and "replication factor" in r.stderr
    r = hourglass_cli("mirror-config", "--target-bootstrap", "k:9092", "--command-config", str(tmp_path / "none"))
    assert r.returncode == 2 and "cannot read" in r.stderr


def test_time_window_of_a_kafka_topic_copied_onto_hourglass(broker_factory, kafka_node):
    """The way in: ``hourglass copy-window`` takes the records of a Kafka topic between two
    times (offsets-for-times on Kafka at each end) into the same partitions of a local
    Hourglass, keys, values, headers and timestamps unchanged; nothing outside the window."""
    topic, parts = "prod-clicks", 2
    create_topic(kafka_node.bootstrap, topic, parts)
    produce(kafka_node.bootstrap, topic, 0, 2000, parts)
    hg = broker_factory()
    since, until = T0 + 500_000, T0 + 800_000  # records 500..799
    r = hourglass_cli("copy-window", topic, "--from-bootstrap", kafka_node.bootstrap, "--since", str(since),
                      "--until", "2026-01-01T00:13:20Z", "-b", hg.bootstrap)
    assert r.returncode == 0, r.stderr
    assert "copied 300 records" in r.stdout, r.stdout
    want = [m for m in read_topic(kafka_node.bootstrap, topic) if since <= m.timestamp()[1] < until]
    got = read_topic(hg.bootstrap, topic)
    key = lambda m: (m.partition(), m.key(), m.value(), m.timestamp(), m.headers())  # noqa: E731
    assert [key(m) for m in got] == [key(m) for m in want]
    # offsets-for-times inside the window finds the same record on both
    for i in (500, 650, 799):
        ts = T0 + i * 1000
        k = offsets_for_times(kafka_node.bootstrap, topic, parts, ts)
        h = offsets_for_times(hg.bootstrap, topic, parts, ts)
        kafka_rec = {m.offset(): m.value() for m in read_topic(kafka_node.bootstrap, topic) if m.partition() == i % 2}
        hg_rec = {m.offset(): m.value() for m in got if m.partition() == i % 2}
        assert kafka_rec[k[i % 2]] == hg_rec[h[i % 2]] == f"v{i}".encode()
    # an unknown source topic is a runtime failure with Kafka's error
    r = hourglass_cli("copy-window", "no-such-topic", "--from-bootstrap", kafka_node.bootstrap, "--since", "0",
                      "-b", hg.bootstrap)
    assert r.returncode == 1 and "no-such-topic" in r.stderr


def test_mirror_maker_from_kafka_into_hourglass(broker_factory, kafka_node, mirror_factory, tmp_path):
    """MirrorMaker 2 the other way, Hourglass as the target: MirrorMaker's own topics (its
    Connect internal topics, offset syncs, checkpoints, heartbeats) live on Hourglass, topics
    are created there with their configs, records land at Kafka's offsets with their
    timestamps, and a drained group's offsets are synced into Hourglass's group."""
    topic, group, parts = "in-payments", "in-auditors", 2
    create_topic(kafka_node.bootstrap, topic, parts, {"retention.ms": "315360000001", "cleanup.policy": "delete"})
    produce(kafka_node.bootstrap, topic, 0, 1000, parts)
    assert len(consume_some(kafka_node.bootstrap, group, topic, None)) == 1000
    hg = broker_factory()
    config = tmp_path / "mm2.properties"
    r = hourglass_cli("mirror-config", "-b", kafka_node.bootstrap, "--target-bootstrap", hg.bootstrap,
                      "--source-alias", "prod", "--target-alias", "local", "--replication-factor", "1",
                      "--sync-interval", "1", "--topics", "in-.*", "--groups", "in-.*", "-o", str(config))
    assert r.returncode == 0, r.stderr
    mm = mirror_factory(config)
    ends = end_offsets(kafka_node.bootstrap, topic, parts)
    wait_until(lambda: end_offsets(hg.bootstrap, topic, parts) == ends, 240,
               what=lambda: f"copied {end_offsets(hg.bootstrap, topic, parts)} of {ends}\n{mm.log_tail(4000)}",
               interval=1.0)
    key = lambda m: (m.partition(), m.offset(), m.key(), m.value(), m.timestamp(), m.headers())  # noqa: E731
    assert [key(m) for m in read_topic(hg.bootstrap, topic)] == [key(m) for m in read_topic(kafka_node.bootstrap, topic)]
    assert topic_configs(hg.bootstrap, topic)["retention.ms"] == "315360000001"
    # within the sync interval and the worker's offset commit, which mirror-config sets to it:
    # with Connect's default commit (60 s) the group's position arrived a minute after the copy
    wait_until(lambda: group_offsets(hg.bootstrap, group, topic, parts) == ends, 40,
               what=lambda: f"group synced: {group_offsets(hg.bootstrap, group, topic, parts)} vs {ends}\n"
                            f"{mm.log_tail(4000)}", interval=1.0)
    # MirrorMaker's bookkeeping went to Hourglass, compacted where Connect wants it
    names = set(AdminClient({"bootstrap.servers": hg.bootstrap}).list_topics(timeout=30).topics)
    assert {"mm2-offset-syncs.prod.internal", "mm2-configs.prod.internal", "prod.checkpoints.internal", "heartbeats"} <= names, names
    assert topic_configs(hg.bootstrap, "prod.checkpoints.internal")["cleanup.policy"] == "compact"
