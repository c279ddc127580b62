"""Kafka's own shipped broker configuration files, their active lines exactly as Kafka ships
them (comments dropped, keys in file order), and the apache/kafka image's documented
single-node environment. Tests start Hourglass on them with only ports and dirs changed
(:func:`with_ports_and_dir`).

Sources (apache/kafka): 3.9 ``config/kraft/server.properties``, ``config/kraft/broker.properties``
and ``config/kraft/controller.properties``; 4.x ``config/server.properties``,
``config/broker.properties`` and ``config/controller.properties`` (the ``kraft/`` directory is
gone in 4.0, the files moved up, gained ``share.coordinator.*`` and KIP-853's
``controller.quorum.bootstrap.servers``, and the combined file advertises its controller
listener); ``docker/resources/common-scripts/server.properties`` (the image's default). The
commented-out lines of those files (``log.flush.interval.messages``, ``log.flush.interval.ms``,
``log.retention.bytes``) are in ``COMMENTED_OUT``.
"""
from __future__ import annotations

import re

_SOCKET_SERVER_SETTINGS = """\
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
"""

KAFKA_3_9_KRAFT_SERVER = """\
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@localhost:9093
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
""" + _SOCKET_SERVER_SETTINGS + """\
log.dirs=/tmp/kraft-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
"""

KAFKA_3_9_KRAFT_BROKER = """\
process.roles=broker
node.id=2
controller.quorum.voters=1@localhost:9093
listeners=PLAINTEXT://localhost:9092
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
""" + _SOCKET_SERVER_SETTINGS + """\
log.dirs=/tmp/kraft-broker-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
"""

KAFKA_3_9_KRAFT_CONTROLLER = """\
process.roles=controller
node.id=1
controller.quorum.voters=1@localhost:9093
listeners=CONTROLLER://:9093
controller.listener.names=CONTROLLER
""" + _SOCKET_SERVER_SETTINGS + """\
log.dirs=/tmp/kraft-controller-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
"""

KAFKA_4_SERVER = """\
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=localhost:9093
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
""" + _SOCKET_SERVER_SETTINGS + """\
log.dirs=/tmp/kraft-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
"""

KAFKA_4_BROKER = """\
process.roles=broker
node.id=2
controller.quorum.bootstrap.servers=localhost:9093
listeners=PLAINTEXT://localhost:9092
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
""" + _SOCKET_SERVER_SETTINGS + """\
log.dirs=/tmp/kraft-broker-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
"""

KAFKA_4_CONTROLLER = """\
process.roles=controller
node.id=1
controller.quorum.bootstrap.servers=localhost:9093
listeners=CONTROLLER://:9093
advertised.listeners=CONTROLLER://localhost:9093
controller.listener.names=CONTROLLER
""" + _SOCKET_SERVER_SETTINGS + """\
log.dirs=/tmp/kraft-controller-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
"""

KAFKA_DOCKER_DEFAULT = """\
advertised.listeners=PLAINTEXT://localhost:29092,PLAINTEXT_HOST://localhost:9092
controller.listener.names=CONTROLLER
controller.quorum.voters=1@localhost:29093
group.initial.rebalance.delay.ms=0
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT
listeners=PLAINTEXT://localhost:29092,CONTROLLER://localhost:29093,PLAINTEXT_HOST://0.0.0.0:9092
log.dirs=/tmp/kraft-combined-logs
node.id=1
offsets.topic.replication.factor=1
process.roles=broker,controller
transaction.state.log.min.isr=1
transaction.state.log.replication.factor=1
"""

COMMENTED_OUT = """\
log.flush.interval.messages=10000
log.flush.interval.ms=1000
log.retention.bytes=1073741824
"""

SHIPPED = {
    "3.9 config/kraft/server.properties": KAFKA_3_9_KRAFT_SERVER,
    "3.9 config/kraft/broker.properties": KAFKA_3_9_KRAFT_BROKER,
    "3.9 config/kraft/controller.properties": KAFKA_3_9_KRAFT_CONTROLLER,
    "4.x config/server.properties": KAFKA_4_SERVER,
    "4.x config/broker.properties": KAFKA_4_BROKER,
    "4.x config/controller.properties": KAFKA_4_CONTROLLER,
    "apache/kafka image default server.properties": KAFKA_DOCKER_DEFAULT,
}

# The single-node environment of Kafka's Docker documentation (docker/README, "Overriding the
# default broker configuration"), for apache/kafka:latest.
KAFKA_DOCKER_DOCS_ENV = {
    "KAFKA_NODE_ID": "1",
    "KAFKA_PROCESS_ROLES": "broker,controller",
    "KAFKA_LISTENERS": "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093",
    "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://localhost:9092",
    "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
    "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
    "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9093",
    "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
    "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
    "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
    "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
    "KAFKA_NUM_PARTITIONS": "3",
}


def with_ports(text: str, ports: dict[int, int]) -> str:
    """``text`` with each shipped port replaced (``:9092`` -> ``:<free port>``)."""
    for old, new in ports.items():
        text = re.sub(rf":{old}\b", f":{new}", text)
    return text


def with_ports_and_dir(text: str, ports: dict[int, int], data_dir: str) -> str:
    """A shipped file with its ports replaced and every ``log.dirs`` line pointing at
    ``data_dir``; nothing else changes."""
    return re.sub(r"(?m)^log\.dirs=.*$", f"log.dirs={data_dir}", with_ports(text, ports))
