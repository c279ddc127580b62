"""Replacing Kafka in an existing setup, as a user would: Kafka's own shipped configuration files
and the apache/kafka image's documented environment start Hourglass with only ports and the
data dir changed, and every stock client produces and consumes at the advertised address.

Files (tests/helpers/kafka_configs.py): 3.9 KRaft combined (``config/kraft/server.properties``),
4.x combined (``config/server.properties``, which also advertises its controller listener) and
4.x broker-only (``config/broker.properties``, pointing at a controller quorum Hourglass never
contacts); the image's default file with its two named PLAINTEXT listeners. The controller
listener's port is never bound: a connection there is refused at once.
"""
from __future__ import annotations

import asyncio
import os
import socket
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.helpers.broker import BrokerProcess
from tests.helpers.clients import kcat_consume_json, kcat_produce
from tests.helpers.java import run_java
from tests.helpers.kafka_configs import (KAFKA_3_9_KRAFT_SERVER, KAFKA_4_BROKER, KAFKA_4_SERVER,
                                         KAFKA_DOCKER_DEFAULT, KAFKA_DOCKER_DOCS_ENV, with_ports,
                                         with_ports_and_dir)
from tests.helpers.kafka_oracle import free_port

ROOT = Path(__file__).resolve().parents[2]
N = 5


def free_ports(n: int) -> list[int]:
    return [free_port() for _ in range(n)]


class FileBroker(BrokerProcess):
    """``hourglass serve FILE`` with nothing else: the listeners are the file's."""

    def argv(self, port: int) -> list[str]:
        return [*self.cmd, "serve", self.config, "--ready-file", str(self.ready_path)]


class EntrypointBroker(BrokerProcess):
    """``docker/entrypoint.py`` run as a script, configured by the environment alone."""

    def argv(self, port: int) -> list[str]:
        return [sys.executable, str(ROOT / "docker" / "entrypoint.py"), "--ready-file", str(self.ready_path)]


def _start_from_file(tmp: Path, shipped: str) -> tuple[BrokerProcess, dict[int, int]]:
    client, controller, host_client = free_ports(3)
    ports = {9092: client, 9093: controller, 29092: host_client, 29093: controller}
    conf = tmp / "server.properties"
    conf.write_text(with_ports_and_dir(shipped, ports, str(tmp / "data")))
    return FileBroker(tmp / "data", config=conf).start(), ports


def _stop(b: BrokerProcess) -> None:
    rc = b.stop()
    assert rc == 0, b.log_tail()


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("localhost", port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


SHIPPED = {"3.9-kraft-combined": KAFKA_3_9_KRAFT_SERVER, "4.x-combined": KAFKA_4_SERVER,
           "4.x-broker-only": KAFKA_4_BROKER}


@pytest.fixture(scope="module", params=sorted(SHIPPED))
def shipped_broker(request, tmp_path_factory, client_tools):
    b, ports = _start_from_file(tmp_path_factory.mktemp(request.param), SHIPPED[request.param])
    yield request.param, b, f"localhost:{ports[9092]}", ports
    _stop(b)


def _topic(client: str) -> str:
    return f"dropin-{client}-{uuid.uuid4().hex[:8]}"


def test_start_notes_and_the_controller_port(shipped_broker):
    name, b, advertised, ports = shipped_broker
    log = b.log_text()
    [own] = [l for l in log.splitlines() if "INFO" in l and "Hourglass is its own controller" in l]
    assert ("not contacted" if "broker-only" in name else f"CONTROLLER://:{ports[9093]} (controller.listener.names) is not bound") in own
    [noop] = [l for l in log.splitlines() if "INFO" in l and "no effect on this one node" in l]
    assert "num.network.threads, num.io.threads, num.recovery.threads.per.data.dir (one event loop" in noop
    assert "offsets.topic.replication.factor" in noop and "controller.quorum." in noop
    assert "isn't a known config" not in log and "ERROR" not in log
    assert _refused(ports[9093])  # never bound: a clean refusal, not a hang


def test_kafka_python(shipped_broker):
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    _, _, bootstrap, _ = shipped_broker
    topic = _topic("kafka-python")
    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        offsets = [p.send(topic, key=b"k%d" % i, value=b"v%d" % i, partition=0).get(20).offset for i in range(N)]
    finally:
        p.close()
    assert offsets == list(range(N))
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek(tp, 0)
        got, deadline = [], time.monotonic() + 20
        while len(got) < N and time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=500).values():
                got += [r.value for r in recs]
    finally:
        c.close()
    assert got == [b"v%d" % i for i in range(N)]
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        brokers = admin.describe_cluster()["brokers"]
    finally:
        admin.close()
    assert [f"{x['host']}:{x['port']}" for x in brokers] == [bootstrap]


def _confluent_values(bootstrap: str, topic: str) -> list[bytes]:
    """The first N values of partition 0, read by librdkafka from offset 0."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "dropin", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        got, deadline = [], time.monotonic() + 20
        while len(got) < N and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None:
                assert m.error() is None, m.error()
                got.append(m.value())
        return got
    finally:
        c.close()


def test_confluent_kafka(shipped_broker):
    from confluent_kafka import Producer
    _, _, bootstrap, _ = shipped_broker
    topic = _topic("confluent")
    errors = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(N):
        p.produce(topic, key=b"k%d" % i, value=b"v%d" % i, partition=0, on_delivery=lambda e, m: errors.append(e))
    assert p.flush(20) == 0 and errors == [None] * N
    md = p.list_topics(timeout=10)
    assert [f"{x.host}:{x.port}" for x in md.brokers.values()] == [bootstrap]
    assert _confluent_values(bootstrap, topic) == [b"v%d" % i for i in range(N)]


def test_aiokafka(shipped_broker):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.structs import TopicPartition
    _, _, bootstrap, _ = shipped_broker
    topic = _topic("aiokafka")

    async def scenario():
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
        await p.start()
        try:
            for i in range(N):
                await p.send_and_wait(topic, value=b"v%d" % i, key=b"k%d" % i, partition=0)
        finally:
            await p.stop()
        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await c.start()
        try:
            tp = TopicPartition(topic, 0)
            c.assign([tp])
            c.seek(tp, 0)
            async with asyncio.timeout(20):
                return [(await c.getone()).value for _ in range(N)]
        finally:
            await c.stop()

    assert asyncio.run(scenario()) == [b"v%d" % i for i in range(N)]


def test_kcat(shipped_broker):
    _, _, bootstrap, _ = shipped_broker
    topic = _topic("kcat")
    kcat_produce(bootstrap, topic, [f"k{i}:v{i}" for i in range(N)])
    got = kcat_consume_json(bootstrap, topic, offset=0, count=N)
    assert [(m["offset"], m["payload"]) for m in got] == [(i, f"v{i}") for i in range(N)]


def test_java_client(shipped_broker):
    _, _, bootstrap, _ = shipped_broker
    topic = _topic("java")
    b = ["--bootstrap", bootstrap, "--topic", topic]
    produced = run_java(["produce", *b, "--partition", 0, "--count", N, "--acks", "all", "--key-prefix", "k"])
    assert [r["offset"] for r in produced] == list(range(N))
    consumed = run_java(["consume", *b, "--partition", 0, "--from-offset", 0, "--count", N])
    assert [r["value"] for r in consumed] == [f"value-{i}" for i in range(N)]
    [cluster] = run_java(["admin-describe-cluster", "--bootstrap", bootstrap])
    assert [f"{n['host']}:{n['port']}" for n in cluster["nodes"]] == [bootstrap]


def test_image_default_file_advertises_each_listener_its_own_address(tmp_path, client_tools):
    """Two named PLAINTEXT listeners (PLAINTEXT for other containers, PLAINTEXT_HOST for the
    host): a client is told the address of the listener it came in on."""
    from kafka import KafkaAdminClient
    b, ports = _start_from_file(tmp_path, KAFKA_DOCKER_DEFAULT)
    try:
        for port in (ports[9092], ports[29092]):
            admin = KafkaAdminClient(bootstrap_servers=f"localhost:{port}")
            try:
                brokers = admin.describe_cluster()["brokers"]
            finally:
                admin.close()
            assert [(x["host"], x["port"]) for x in brokers] == [("localhost", port)]
        assert _refused(ports[29093])
    finally:
        _stop(b)


@pytest.mark.parametrize("cluster_id", [None, "MkU3OEVBNTcwNTJENDM2Qk"])
def test_docker_entrypoint_with_the_documented_environment(tmp_path, client_tools, cluster_id):
    """Kafka's Docker documentation's single-node environment, ports and data dir changed, through
    docker/entrypoint.py as a script; CLUSTER_ID (or the image's default one) is the cluster id
    Metadata and DescribeCluster report."""
    from confluent_kafka import Producer
    client, controller = free_ports(2)
    env = {k: with_ports(v, {9092: client, 9093: controller}) for k, v in KAFKA_DOCKER_DOCS_ENV.items()}
    env.update({"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
                "KAFKA_LOG_DIRS": str(tmp_path / "data"),
                "HOURGLASS_FINAL_CONFIG_DIR": str(tmp_path / "etc"),
                "HOURGLASS_MOUNTED_CONFIG_DIR": str(tmp_path / "mnt"),
                # the image's HTTP services on free loopback ports here (the image: 8081, 8080)
                "KAFKA_SCHEMA_REGISTRY_LISTENERS": "http://127.0.0.1:0", "KAFKA_CONSOLE_LISTENERS": "http://127.0.0.1:0"})
    if cluster_id:
        env["CLUSTER_ID"] = cluster_id
    want_id = cluster_id or "5L6g3nShT-eMCtK--X86sw"
    b = EntrypointBroker(tmp_path / "data", env=env).start()
    bootstrap = f"localhost:{client}"
    try:
        assert _refused(controller)
        topic = _topic("docker")
        p = Producer({"bootstrap.servers": bootstrap})
        for i in range(N):
            p.produce(topic, value=b"v%d" % i, partition=0)
        assert p.flush(20) == 0
        md = p.list_topics(topic, timeout=10)  # Metadata
        assert md.cluster_id == want_id
        assert len(md.topics[topic].partitions) == 3  # KAFKA_NUM_PARTITIONS=3
        assert [f"{x.host}:{x.port}" for x in md.brokers.values()] == [bootstrap]
        assert _confluent_values(bootstrap, topic) == [b"v%d" % i for i in range(N)]
        [cluster] = run_java(["admin-describe-cluster", "--bootstrap", bootstrap])  # DescribeCluster
        assert cluster["clusterId"] == want_id
        assert "isn't a known config" not in b.log_text()
    finally:
        _stop(b)
