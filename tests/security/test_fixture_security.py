"""The pytest fixture's ``security=`` option: a secured round trip in a test is one fixture
argument, with each Python client (these are the README's examples)."""
from __future__ import annotations

import asyncio

import pytest


@pytest.mark.hourglass(security="SASL_SSL")
def test_confluent_kafka_over_sasl_ssl(hourglass_broker):
    from confluent_kafka import Consumer, Producer
    p = Producer(hourglass_broker.client_config)
    p.produce("orders", b"hello", timestamp=1_700_000_000_000)
    assert p.flush(10) == 0
    c = Consumer({**hourglass_broker.client_config, "group.id": "g", "auto.offset.reset": "earliest"})
    c.subscribe(["orders"])
    msg = None
    for _ in range(100):
        msg = c.poll(0.2)
        if msg is not None and msg.error() is None:
            break
    c.close()
    assert msg.value() == b"hello" and msg.timestamp()[1] == 1_700_000_000_000


@pytest.mark.hourglass(security="SSL")
def test_kafka_python_over_ssl_with_a_client_certificate(hourglass_broker):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    p = KafkaProducer(**hourglass_broker.kafka_python_config)
    p.send("events", b"e0", timestamp_ms=1000).get(timeout=10)
    p.send("events", b"e1", timestamp_ms=2000).get(timeout=10)
    c = KafkaConsumer(**hourglass_broker.kafka_python_config)
    tp = TopicPartition("events", 0)
    assert c.offsets_for_times({tp: 1500})[tp].offset == 1
    c.assign([tp])
    c.seek_to_beginning(tp)
    assert [r.value for r in c.poll(timeout_ms=5000)[tp]] == [b"e0", b"e1"]
    # the broker saw the certificate's CN as the principal
    conn = next(iter(hourglass_broker.broker.connections))
    assert conn.principal == "User:alice"


@pytest.mark.hourglass(security={"protocol": "SASL_PLAINTEXT", "mechanism": "SCRAM-SHA-256"})
def test_aiokafka_over_sasl_plaintext_scram(hourglass_broker):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def round_trip():
        p = AIOKafkaProducer(**hourglass_broker.aiokafka_config)
        await p.start()
        try:
            await p.send_and_wait("a-topic", b"x")
        finally:
            await p.stop()
        c = AIOKafkaConsumer("a-topic", auto_offset_reset="earliest", **hourglass_broker.aiokafka_config)
        await c.start()
        try:
            return (await c.getone()).value
        finally:
            await c.stop()
    assert asyncio.run(round_trip()) == b"x"


@pytest.mark.hourglass(security={"protocol": "SASL_SSL", "mechanism": "PLAIN", "acls": True})
def test_acls_with_the_fixture_user_as_super_user(hourglass_broker):
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, AdminClient, ResourcePatternType, \
        ResourceType
    admin = AdminClient(hourglass_broker.client_config)
    f = admin.create_acls([AclBinding(ResourceType.TOPIC, "t", ResourcePatternType.LITERAL, "User:bob", "*",
                                      AclOperation.READ, AclPermissionType.ALLOW)])
    for fut in f.values():
        fut.result(10)
    assert hourglass_broker.broker.security.authorizer is not None and len(hourglass_broker.broker.security.authorizer) == 1


@pytest.mark.hourglass(security={"protocol": "SASL_PLAINTEXT", "mechanism": "SCRAM-SHA-512"})
def test_a_scram_user_with_a_short_salt_is_created_and_logs_in(hourglass_broker):
    """A 4-byte salt (common in client examples) is accepted by AlterUserScramCredentials, as
    Kafka does, and the user logs in with it."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import (
        AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion,
    )
    admin = AdminClient(hourglass_broker.client_config)
    up = UserScramCredentialUpsertion("shorty", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
                                      b"secret", b"salt")
    admin.alter_user_scram_credentials([up])["shorty"].result()
    p = Producer({**hourglass_broker.client_config, "sasl.username": "shorty", "sasl.password": "secret"})
    p.produce("short-salt", b"in")
    assert p.flush(10) == 0
