"""Quotas enforced on real clients: confluent-kafka and Java producers held to
producer_byte_rate, confluent-kafka and Java consumers to consumer_byte_rate, each within 20 % over
~10 s (all at once, on one broker), the throttle seen by confluent-kafka's throttle_cb and the
Java producer's produce-throttle-time-avg; an unthrottled client on the same broker keeps its
speed. Quotas are small (100 KB/s), so little data moves.

The brokers keep quota.window.num=3 samples of 1 s: with Kafka's default of 11, a fresh rate is
divided by 10 s whatever the elapsed time, so a new client's first ~10 s may carry a burst
of up to 10 s of quota (as in Kafka); 3 samples make that 2 s, which the warm-up covers."""
from __future__ import annotations

import threading
import time

import confluent_kafka as ck

from protocol.messages.alter_client_quotas import AlterClientQuotasRequest as AQ
from tests.helpers.java import run_java
from tests.helpers.raw import RawClient

QUOTA = 100_000.0  # bytes/s
SECONDS = 10.0
WARMUP = 3.0
WINDOWS = {"quota.window.num": 3, "quota.window.size.seconds": 1}


def set_quota(bootstrap, entity, key, value):
    c = RawClient(bootstrap)
    try:
        r = c.request(49, 1, AQ(entries=[AQ.EntryData(
            entity=[AQ.EntityData(entity_type=t, entity_name=n) for t, n in entity],
            ops=[AQ.OpData(key=key, value=0.0 if value is None else value, remove=value is None)])],
            validate_only=False))
    finally:
        c.close()
    assert r.entries[0].error_code == 0, r


def produce_for(bootstrap, client_id, topic, seconds, throttles=None, size=1000, warmup=0.0):
    """Produce as fast as the client may; the rate of bytes delivered in ``seconds`` after
    ``warmup``."""
    conf = {"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 5,
            "queue.buffering.max.messages": 50}
    if throttles is not None:
        conf["throttle_cb"] = throttles.append
    p = ck.Producer(conf)
    value = b"x" * size
    p.produce(topic, value)
    p.flush(10)
    delivered = [0]

    def done(err, _msg):
        if err is None:
            delivered[0] += size
    t0 = time.monotonic()
    start, end = t0 + warmup, t0 + warmup + seconds
    at_start = None
    while True:
        now = time.monotonic()
        if at_start is None and now >= start:
            at_start = delivered[0]
        if now >= end:
            break
        try:
            p.produce(topic, value, on_delivery=done)
        except BufferError:
            p.poll(0.005)
        p.poll(0)
    measured = delivered[0] - at_start
    p.flush(30)
    return measured / seconds


def consume_for(b, client_id, topic, seconds, throttles, warmup):
    """Consume from the start as fast as the client may; the rate of bytes received in
    ``seconds`` after ``warmup``. Fetches stay well under the quota window: Kafka answers a
    fetch that would go over the quota with no data at all (and takes its bytes back), so a
    consumer whose every fetch is as big as the window allows gets one fetch per two
    throttles, about half its quota (in Kafka too). librdkafka's fetch.error.backoff.ms is
    lowered from 500 ms: with it, the consumer's rate scattered down to 77 KB/s under load."""
    c = ck.Consumer({"bootstrap.servers": b, "client.id": client_id, "group.id": "g", "auto.offset.reset": "earliest",
                     "enable.auto.commit": False, "throttle_cb": throttles.append,
                     "max.partition.fetch.bytes": 16384, "fetch.max.bytes": 16384, "message.max.bytes": 16384,
                     "fetch.error.backoff.ms": 50})
    c.assign([ck.TopicPartition(topic, 0, 0)])
    got = 0
    t0 = time.monotonic()
    at_start = None
    while time.monotonic() - t0 < warmup + seconds:
        if at_start is None and time.monotonic() - t0 >= warmup:
            at_start = got
        for m in c.consume(100, 0.2):
            if m.error() is None:
                got += len(m.value())
    c.close()
    return (got - at_start) / seconds


def test_producers_and_a_consumer_held_to_their_quotas_a_free_client_is_not(broker_factory):
    """At once on one broker: a confluent-kafka producer (client-id quota), a Java producer
    (quota on <default> user + its client id: PLAINTEXT clients are User:ANONYMOUS), a
    confluent-kafka and a Java consumer (consumer_byte_rate), each within 20 % of 100 KB/s
    over 10 s; meanwhile a producer without a quota runs many times faster."""
    b = broker_factory(WINDOWS).bootstrap
    # small batches: a batch larger than the quota window holds (here 200 KB) could never be
    # fetched by a throttled consumer, in Kafka as here
    p = ck.Producer({"bootstrap.servers": b, "linger.ms": 5, "batch.size": 16384})
    for _ in range(3000):  # 3 MB, well over what the quota lets through in 10 s
        p.produce("cq", b"y" * 1000)
        p.poll(0)
    p.flush(30)
    set_quota(b, [("client-id", "slow")], "producer_byte_rate", QUOTA)
    set_quota(b, [("user", None), ("client-id", "java-slow")], "producer_byte_rate", QUOTA)
    set_quota(b, [("client-id", "slowc")], "consumer_byte_rate", QUOTA)
    set_quota(b, [("client-id", "java-slowc")], "consumer_byte_rate", QUOTA)
    throttles: list = []
    consumer_throttles: list = []
    result: dict = {}
    jobs = [
        threading.Thread(target=lambda: result.setdefault(
            "slow", produce_for(b, "slow", "q1", SECONDS, throttles, warmup=WARMUP))),
        threading.Thread(target=lambda: result.setdefault(
            "consumer", consume_for(b, "slowc", "cq", SECONDS, consumer_throttles, WARMUP))),
        threading.Thread(target=lambda: result.setdefault("java", run_java(
            ["throttled-produce", "--bootstrap", b, "--topic", "jq", "--seconds", str(SECONDS),
             "--warmup-seconds", str(WARMUP), "--client-id", "java-slow"], timeout=120)[0])),
        threading.Thread(target=lambda: result.setdefault("java_consumer", run_java(
            ["throttled-consume", "--bootstrap", b, "--topic", "cq", "--seconds", str(SECONDS),
             "--warmup-seconds", str(WARMUP), "--client-id", "java-slowc",
             "--props", "max.partition.fetch.bytes=32768,fetch.max.bytes=32768"], timeout=120)[0])),
    ]
    for j in jobs:
        j.start()
    time.sleep(WARMUP + 1)
    fast = produce_for(b, "fast", "q2", 3.0)
    for j in jobs:
        j.join()
    print("rates:", {k: (v if isinstance(v, float) else v["rate"]) for k, v in result.items()}, "fast:", fast)
    assert 0.8 * QUOTA <= result["slow"] <= 1.2 * QUOTA, result
    assert 0.8 * QUOTA <= result["consumer"] <= 1.2 * QUOTA, result
    java = result["java"]
    assert 0.8 * QUOTA <= java["rate"] <= 1.2 * QUOTA, java
    assert java["throttleAvg"] > 0 and java["throttleMax"] > 0, java  # produce-throttle-time-avg/max
    jc = result["java_consumer"]
    assert 0.8 * QUOTA <= jc["rate"] <= 1.2 * QUOTA, jc
    assert jc["throttleMax"] > 0, jc  # fetch-throttle-time-max
    assert fast > 5 * QUOTA, fast
    assert throttles and all(e.throttle_time >= 0 for e in throttles)
    assert max(e.throttle_time for e in throttles) > 0 and throttles[0].broker_id == 1
    assert max(e.throttle_time for e in consumer_throttles) > 0


def test_request_percentage_and_metrics_per_client(broker_factory):
    """A client over request_percentage is throttled on its request time (each response says
    so, the connection is muted), a client without a quota is not; both show in the
    per-client Prometheus metrics."""
    import re
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    from protocol.messages.metadata import MetadataRequest as MD
    from tests.helpers.clients import wait_until

    b = broker_factory({**WINDOWS, "metrics.port": 0})
    set_quota(b.bootstrap, [("client-id", "busy")], "request_percentage", 0.01)
    set_quota(b.bootstrap, [("client-id", "other")], "producer_byte_rate", 1e9)
    busy, other = RawClient(b.bootstrap, client_id="busy"), RawClient(b.bootstrap, client_id="other")
    try:
        # until its handling time passes 0.01 % of the windows (a fast host needs more than a few
        # Metadata requests: each one takes tens of microseconds)
        throttles = []
        while len(throttles) < 500 and not any(throttles):
            throttles.append(busy.request(3, 12, MD(topics=None, allow_auto_topic_creation=False,
                                                    include_topic_authorized_operations=False)).throttle_time_ms)
        assert max(throttles) > 0
        assert max(throttles) <= 1000  # Kafka bounds request-time throttles to one window
        free = [other.request(3, 12, MD(topics=None, allow_auto_topic_creation=False,
                                        include_topic_authorized_operations=False)).throttle_time_ms for _ in range(5)]
        assert free == [0] * 5
    finally:
        busy.close()
        other.close()
    wait_until(lambda: "metrics on http://" in b.log_text(), timeout=10, what="metrics endpoint")
    url = re.search(r"metrics on (http://\S+)/metrics", b.log_text()).group(1)
    text = urllib.request.urlopen(url + "/metrics", timeout=5).read().decode()
    samples = {(s.name, s.labels.get("quota"), s.labels.get("client_id")): s.value
               for fam in text_string_to_metric_families(text) for s in fam.samples}
    assert samples[("hourglass_client_quota_throttled_total", "Request", "busy")] > 0
    assert samples[("hourglass_client_quota_throttle_time_ms_total", "Request", "busy")] > 0
    assert samples[("hourglass_client_quota_limit", "Request", "busy")] == 0.01
    assert ("hourglass_client_quota_rate", "Produce", "other") not in samples  # no produce from it yet
