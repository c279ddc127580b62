"""The broker as a user meets it: real clients against a real broker on port 0.

Covers the issue-3 bar that is not per-client smoke: LogAppendTime, INVALID_TIMESTAMP with
nothing appended, restart and kill -9 survival, bad frames that close one connection only,
ApiVersions for an unknown version, idempotent duplicates, and long-poll wake-up.
"""
from __future__ import annotations

import socket
import struct
import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition as CTP
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import InvalidTimestampError as KPInvalidTimestamp

from protocol.messages.api_versions import ApiVersionsRequest
from protocol.messages.metadata import MetadataRequest
from protocol.messages.produce import ProduceRequest
from protocol.records.record import build_batch, decode_batch
from tests.helpers.raw import RawClient


def _end_offset(bootstrap: str, topic: str, partition: int = 0) -> int:
    c = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        return c.end_offsets([TopicPartition(topic, partition)])[TopicPartition(topic, partition)]
    finally:
        c.close()


def _consume_all(bootstrap: str, topic: str, n: int, partition: int = 0, timeout: float = 10.0):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "t", "enable.auto.commit": False})
    c.assign([CTP(topic, partition, 0)])
    out = []
    deadline = time.time() + timeout
    while len(out) < n and time.time() < deadline:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        out.append(m)
    c.close()
    return out


def test_log_append_time_topic_returns_broker_time_in_response_and_records(broker_factory):
    b = broker_factory({"log.message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    p = KafkaProducer(bootstrap_servers=b.bootstrap)
    md = p.send("lat", value=b"x", timestamp_ms=1234).get(10)
    p.close()
    after = int(time.time() * 1000)
    # the produce response carries the log append time, and the client reports it
    assert before <= md.timestamp <= after
    msgs = _consume_all(b.bootstrap, "lat", 1)
    ts_type, ts = msgs[0].timestamp()
    assert ts_type == 2  # TIMESTAMP_LOG_APPEND_TIME
    assert before <= ts <= after and ts == md.timestamp


def test_create_time_outside_difference_max_is_rejected_and_nothing_appended(broker_factory):
    b = broker_factory({"log.message.timestamp.difference.max.ms": "3600000"})
    now = int(time.time() * 1000)
    p = KafkaProducer(bootstrap_servers=b.bootstrap, retries=0)
    assert p.send("ts", value=b"ok", timestamp_ms=now).get(10).offset == 0
    with pytest.raises(KPInvalidTimestamp):
        p.send("ts", value=b"old", timestamp_ms=now - 2 * 3600_000).get(10)
    p.close()
    # librdkafka sees the same error code
    errors = []
    cp = Producer({"bootstrap.servers": b.bootstrap, "retries": 0})
    cp.produce("ts", value=b"future", timestamp=now + 2 * 3600_000,
               on_delivery=lambda e, m: errors.append(e))
    cp.flush(10)
    assert errors and errors[0] is not None and errors[0].code() == KafkaError.INVALID_TIMESTAMP
    assert _end_offset(b.bootstrap, "ts") == 1  # nothing from the rejected batches


def test_data_and_offsets_survive_clean_restart_and_kill_9(broker_factory):
    b = broker_factory({})
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(500):
        p.produce("dur", key=b"%d" % i, value=b"v%d" % i, timestamp=1_000_000 + i)
    p.flush(10)
    b.restart()
    assert _end_offset(b.bootstrap, "dur") == 500
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all"})
    for i in range(500, 700):
        p.produce("dur", key=b"%d" % i, value=b"v%d" % i, timestamp=1_000_000 + i)
    assert p.flush(10) == 0
    b.kill()
    b.start()
    msgs = _consume_all(b.bootstrap, "dur", 700)
    assert [m.offset() for m in msgs] == list(range(700))
    assert [m.value() for m in msgs] == [b"v%d" % i for i in range(700)]
    assert [m.timestamp()[1] for m in msgs] == [1_000_000 + i for i in range(700)]


def test_malformed_frame_closes_only_that_connection(broker):
    # a healthy client holds a session open
    good = KafkaProducer(bootstrap_servers=broker.bootstrap)
    assert good.send("mal", value=b"a").get(10).offset == 0
    bad = RawClient(broker.bootstrap)
    bad.send_frame(b"\x00\x03\x00\x0c\x00\x00\x00\x01\x00\x02ab\xff\xff\xff")  # Metadata v12, garbage body
    assert bad.is_closed_by_peer()
    unknown = RawClient(broker.bootstrap)
    unknown.send_frame(struct.pack(">hhi", 999, 0, 1) + b"\x00\x00")
    assert unknown.is_closed_by_peer()
    huge = socket.create_connection(tuple(broker.bootstrap.rsplit(":", 1)))
    huge.sendall(struct.pack(">i", 2**31 - 1))  # over socket.request.max.bytes: closed before any read
    huge.settimeout(5)
    assert huge.recv(1) == b""
    # the healthy session is undisturbed
    assert good.send("mal", value=b"b").get(10).offset == 1
    good.close()


def test_api_versions_unknown_version_answers_unsupported_with_our_range(broker):
    c = RawClient(broker.bootstrap)
    body = ApiVersionsRequest(client_software_name="x", client_software_version="1")
    # version 99: the broker cannot parse it, and answers a v0 body with error 35
    c.send_frame(struct.pack(">hhi", 18, 99, 7) + b"\x00\x01x" + b"\x00")
    frame = c.recv_frame()
    assert struct.unpack_from(">i", frame, 0)[0] == 7
    from protocol.messages.api_versions import API  # noqa: F401
    from protocol.api_keys import APIS
    resp, _ = APIS[18].response.decode(memoryview(frame), 0, 4)
    assert resp.error_code == 35
    assert [(k.api_key, k.min_version, k.max_version) for k in resp.api_keys] == [(18, 0, 5)]
    # and the connection stays usable
    resp = c.request(18, 3, body)
    assert resp.error_code == 0
    keys = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert keys[0] == (0, 13) and keys[1] == (0, 18) and keys[2] == (0, 11) and keys[3] == (0, 13)
    c.close()


def test_duplicate_idempotent_batch_gets_original_offsets(broker):
    c = RawClient(broker.bootstrap)
    c.request(3, 9, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="idem")],
                                    allow_auto_topic_creation=True))
    init = c.request(22, 4, __import__("protocol.messages.init_producer_id", fromlist=["x"]).InitProducerIdRequest(
        transactional_id=None, transaction_timeout_ms=60000))
    assert init.error_code == 0 and init.producer_id >= 0

    def produce(seq, values):
        batch = build_batch([(None, v, 1000) for v in values], producer_id=init.producer_id,
                            producer_epoch=init.producer_epoch, base_sequence=seq)
        req = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
            ProduceRequest.TopicProduceData(name="idem", partition_data=[
                ProduceRequest.PartitionProduceData(index=0, records=batch)])])
        return c.request(0, 9, req).responses[0].partition_responses[0]

    r1 = produce(0, [b"a", b"b"])
    r2 = produce(2, [b"c"])
    dup = produce(0, [b"a", b"b"])
    gap = produce(7, [b"z"])
    assert (r1.error_code, r1.base_offset) == (0, 0)
    assert (r2.error_code, r2.base_offset) == (0, 2)
    assert (dup.error_code, dup.base_offset) == (0, 0)
    assert gap.error_code == 45  # OUT_OF_ORDER_SEQUENCE_NUMBER
    assert _end_offset(broker.bootstrap, "idem") == 3
    c.close()


def test_idempotent_producer_state_survives_clean_restart_via_snapshot_and_kill_via_replay(broker_factory):
    """A clean restart reads the producer state snapshot it wrote (Kafka's <offset>.snapshot);
    after kill -9 the state is replayed from the log. Either way a retried batch gets its
    original offsets, the next sequence is accepted and a gap is refused."""
    b = broker_factory({})
    from protocol.messages.init_producer_id import InitProducerIdRequest
    c = RawClient(b.bootstrap)
    c.request(3, 9, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="idem")],
                                    allow_auto_topic_creation=True))
    init = c.request(22, 4, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000))
    c.close()

    def produce(seq, values):
        cl = RawClient(b.bootstrap)
        batch = build_batch([(None, v, 1000) for v in values], producer_id=init.producer_id,
                            producer_epoch=init.producer_epoch, base_sequence=seq)
        req = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
            ProduceRequest.TopicProduceData(name="idem", partition_data=[
                ProduceRequest.PartitionProduceData(index=0, records=batch)])])
        r = cl.request(0, 9, req).responses[0].partition_responses[0]
        cl.close()
        return r.error_code, r.base_offset

    assert produce(0, [b"a", b"b"]) == (0, 0)
    assert produce(2, [b"c"]) == (0, 2)
    b.restart()
    assert sorted(p.name for p in (b.data_dir / "idem-0").glob("*.snapshot")) == [f"{3:020d}.snapshot"]
    assert produce(2, [b"c"]) == (0, 2)          # the retried last batch: original offset
    assert produce(3, [b"d"]) == (0, 3)
    assert produce(9, [b"z"])[0] == 45           # OUT_OF_ORDER_SEQUENCE_NUMBER
    b.kill()
    b.start()
    assert produce(3, [b"d"]) == (0, 3)
    assert produce(4, [b"e"]) == (0, 4)
    assert _end_offset(b.bootstrap, "idem") == 5


def test_parked_fetch_is_woken_by_an_append(broker):
    p = KafkaProducer(bootstrap_servers=broker.bootstrap)
    p.send("wake", value=b"first").get(10)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "w", "fetch.wait.max.ms": 5000,
                  "enable.auto.commit": False})
    c.assign([CTP("wake", 0, 1)])
    c.poll(0.5)  # warm up: connection and first (empty) fetch parked

    def later():
        time.sleep(0.3)
        p.send("wake", value=b"second").get(10)

    t = threading.Thread(target=later)
    t0 = time.time()
    t.start()
    msg = None
    while msg is None and time.time() - t0 < 4:
        m = c.poll(0.2)
        if m is not None and not m.error():
            msg = m
    t.join()
    c.close()
    p.close()
    assert msg is not None and msg.value() == b"second"
    # woken by the append, far sooner than fetch.wait.max.ms
    assert time.time() - t0 < 3.0


def test_fetch_returns_stored_batches_byte_for_byte(broker):
    """Fetch moves stored record batches as bytes (no re-encoding)."""
    from protocol.messages.fetch import FetchRequest
    p = Producer({"bootstrap.servers": broker.bootstrap, "compression.type": "gzip", "linger.ms": 20})
    now = int(time.time() * 1000)  # recent: 1970 timestamps would be due for retention at once
    for i in range(50):
        p.produce("raw", value=b"value-%d" % i, timestamp=now + i)
    p.flush(10)
    c = RawClient(broker.bootstrap)
    req = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0, topics=[
        FetchRequest.FetchTopic(topic="raw", partitions=[FetchRequest.FetchPartition(
            partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])])
    resp = c.request(1, 11, req)
    records = bytes(resp.responses[0].partitions[0].records)
    seg = (broker.data_dir / "raw-0" / "00000000000000000000.log").read_bytes()
    assert records == seg
    hdr, recs = decode_batch(records)
    assert hdr.compression == 1 and recs[0].value == b"value-0"
    c.close()


def test_idle_producer_ids_expire_and_their_next_batch_is_accepted_at_any_sequence(broker_factory):
    """producer.id.expiration.ms (checked every producer.id.expiration.check.interval.ms):
    a producer whose last batch is older than that is forgotten, as Kafka's
    removeExpiredProducers does; its next batch is then a new producer's (any sequence)."""
    b = broker_factory({"producer.id.expiration.ms": "1000",
                        "producer.id.expiration.check.interval.ms": "100"})
    from protocol.messages.init_producer_id import InitProducerIdRequest
    c = RawClient(b.bootstrap)
    c.request(3, 9, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="idem")],
                                    allow_auto_topic_creation=True))
    init = c.request(22, 4, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000))

    def produce(seq, values, ts):
        batch = build_batch([(None, v, ts) for v in values], producer_id=init.producer_id,
                            producer_epoch=init.producer_epoch, base_sequence=seq)
        req = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
            ProduceRequest.TopicProduceData(name="idem", partition_data=[
                ProduceRequest.PartitionProduceData(index=0, records=batch)])])
        r = c.request(0, 9, req).responses[0].partition_responses[0]
        return r.error_code, r.base_offset

    now = int(time.time() * 1000)
    assert produce(0, [b"a"], now) == (0, 0)
    assert produce(5, [b"gap"], now)[0] == 45     # still known: a gap is refused
    time.sleep(1.5)                                # idle past the expiration (by record time)
    assert produce(5, [b"b"], int(time.time() * 1000)) == (0, 1)   # forgotten: accepted
    c.close()
