"""The embedded broker and the pytest plugin, as a user's test suite would use them.

These tests use the plugin's fixtures exactly as documented in the README (they are also the
README's examples), so the plugin is exercised through its entry point.
"""
from __future__ import annotations

import time
import uuid

import pytest

from hourglass import EmbeddedBroker


def test_kafka_python_round_trip(hourglass_broker):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    topic = f"orders-{uuid.uuid4().hex[:6]}"
    p = KafkaProducer(bootstrap_servers=hourglass_broker.bootstrap_servers)
    p.send(topic, b"hello", timestamp_ms=1_700_000_000_000).get(timeout=10)
    p.close()
    c = KafkaConsumer(bootstrap_servers=hourglass_broker.bootstrap_servers)
    tp = TopicPartition(topic, 0)
    c.assign([tp])
    c.seek_to_beginning(tp)
    records = c.poll(timeout_ms=5000)[tp]
    assert [(r.value, r.timestamp) for r in records] == [(b"hello", 1_700_000_000_000)]
    c.close()


@pytest.mark.hourglass(overrides={"log.message.timestamp.type": "LogAppendTime"})
def test_confluent_kafka_with_overrides(hourglass_broker):
    from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, Producer, TopicPartition
    topic = f"events-{uuid.uuid4().hex[:6]}"
    p = Producer({"bootstrap.servers": hourglass_broker.bootstrap_servers})
    p.produce(topic, b"x", timestamp=1000)  # replaced by broker time: the override is live
    assert p.flush(10) == 0
    c = Consumer({"bootstrap.servers": hourglass_broker.bootstrap_servers, "group.id": "g"})
    c.assign([TopicPartition(topic, 0, 0)])
    m = None
    deadline = time.monotonic() + 10
    while m is None and time.monotonic() < deadline:
        m = c.poll(0.5)
    c.close()
    ts_type, ts = m.timestamp()
    assert ts_type == TIMESTAMP_LOG_APPEND_TIME and abs(ts - time.time() * 1000) < 60_000


def test_session_broker_is_shared(hourglass_broker_session, request):
    first = request.getfixturevalue("hourglass_broker_session")
    assert first is hourglass_broker_session and hourglass_broker_session.bootstrap_servers


@pytest.mark.parametrize("mode", ["thread", "subprocess"])
def test_context_manager_starts_and_stops_cleanly(mode, tmp_path):
    """Data written through the embedded broker is in Kafka's layout, and a clean stop leaves
    the clean-shutdown marker (so the next start skips recovery)."""
    from confluent_kafka import Producer
    data = tmp_path / "data"
    with EmbeddedBroker(data_dir=data, mode=mode) as b:
        host, port = b.bootstrap_servers.rsplit(":", 1)
        assert host == "127.0.0.1" and int(port) > 0
        p = Producer({"bootstrap.servers": b.bootstrap_servers})
        p.produce("t", b"v")
        assert p.flush(10) == 0
    assert (data / "t-0" / "00000000000000000000.log").stat().st_size > 0
    assert (data / ".kafka_cleanshutdown").exists()
    with EmbeddedBroker(data_dir=data, mode=mode) as b:  # restarts on the same data
        assert b.bootstrap_servers


def test_temporary_data_dir_is_removed():
    with EmbeddedBroker() as b:
        d = b.data_dir
        assert d.exists()
    assert not d.exists()


def test_bad_override_fails_at_start_naming_the_key():
    with pytest.raises(Exception, match="retention.ms"):
        EmbeddedBroker({"retention.ms": "soon"}).start()
