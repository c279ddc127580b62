"""Dynamic broker configs (Kafka 4.x) with the Java Admin client: a cluster-default
log.retention.ms deletes old segments of a topic without an override, at once and again
after a restart, while a topic with its own retention.ms keeps its data; DescribeConfigs
shows each layer's source; keys Kafka does not mark dynamic, unprefixed security keys and
per-broker keys at the cluster default are refused with Kafka's messages."""
from __future__ import annotations

import time

import confluent_kafka as ck

from tests.helpers.clients import wait_until
from tests.helpers.java import run_java

HOUR_MS = 3_600_000
FAST = {"log.retention.check.interval.ms": 200, "log.segment.bytes": 1024, "log.segment.delete.delay.ms": 0}


def segments(b, topic):
    d = b.data_dir / f"{topic}-0"
    return sorted(p.name for p in d.iterdir() if p.name.endswith(".log"))


def produce_old(b, topic, n=30, **topic_configs):
    """n records of 200 B stamped two hours ago (several 1 KiB segments)."""
    if topic_configs:
        from confluent_kafka.admin import AdminClient, NewTopic
        a = AdminClient({"bootstrap.servers": b.bootstrap})
        a.create_topics([NewTopic(topic, 1, 1, config=topic_configs)])[topic].result(10)
    p = ck.Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0, "batch.num.messages": 1})
    old = int(time.time() * 1000) - 2 * HOUR_MS
    for i in range(n):
        p.produce(topic, b"v" * 200, timestamp=old + i)
        p.poll(0)
    p.flush(10)


def alter(b, broker_id, set_=None, delete=None, legacy=False):
    args = ["admin-alter-broker-configs", "--bootstrap", b.bootstrap, "--broker", broker_id]
    if set_:
        args += ["--set", ",".join(f"{k}={v}" for k, v in set_.items())]
    if delete:
        args += ["--delete", ",".join(delete)]
    if legacy:
        args += ["--legacy", "true"]
    (line,) = run_java(args)
    return line


def broker_configs(b, broker_id="1"):
    return {l["name"]: l for l in run_java(["admin-describe-configs", "--bootstrap", b.bootstrap, "--broker", broker_id])}


def test_dynamic_retention_default_reaches_topics_without_override_and_survives_restart(broker_factory):
    b = broker_factory(FAST)
    produce_old(b, "plain")
    produce_old(b, "keeps", **{"retention.ms": "-1"})
    assert len(segments(b, "plain")) > 3 and len(segments(b, "keeps")) > 3
    kept = segments(b, "keeps")
    assert alter(b, "", {"log.retention.ms": HOUR_MS}) == {"ok": True}
    wait_until(lambda: len(segments(b, "plain")) == 1, timeout=10, what="old segments deleted by the new default")
    assert segments(b, "keeps") == kept  # its own retention.ms wins over any broker default
    cfg = broker_configs(b)
    assert (cfg["log.retention.ms"]["value"], cfg["log.retention.ms"]["source"]) == (str(HOUR_MS),
                                                                                    "DYNAMIC_DEFAULT_BROKER_CONFIG")
    assert cfg["log.retention.ms"]["isReadOnly"] is False and cfg["log.retention.hours"]["isReadOnly"] is True
    topic_cfg = {l["name"]: l for l in run_java(["admin-describe-configs", "--bootstrap", b.bootstrap,
                                                 "--topic", "plain"])}
    assert (topic_cfg["retention.ms"]["value"], topic_cfg["retention.ms"]["source"]) == (
        str(HOUR_MS), "DYNAMIC_DEFAULT_BROKER_CONFIG")
    # the cluster default resource lists what is set there (and KIP-966's min.insync.replicas)
    assert {n: l["source"] for n, l in broker_configs(b, "").items()} == {
        "log.retention.ms": "DYNAMIC_DEFAULT_BROKER_CONFIG", "min.insync.replicas": "DYNAMIC_DEFAULT_BROKER_CONFIG"}
    # a per-broker value wins over the cluster default
    assert alter(b, "1", {"log.retention.ms": 2 * HOUR_MS + HOUR_MS}) == {"ok": True}
    cfg = broker_configs(b)
    assert cfg["log.retention.ms"]["source"] == "DYNAMIC_BROKER_CONFIG"
    assert [(s["value"], s["source"]) for s in cfg["log.retention.ms"]["synonyms"]][:2] == [
        (str(3 * HOUR_MS), "DYNAMIC_BROKER_CONFIG"), (str(HOUR_MS), "DYNAMIC_DEFAULT_BROKER_CONFIG")]
    assert alter(b, "1", delete=["log.retention.ms"]) == {"ok": True}
    b.kill()
    b.start()  # kill -9, then the same data dir: the cluster default is still there and applied
    produce_old(b, "plain", n=20)
    wait_until(lambda: len(segments(b, "plain")) == 1, timeout=10, what="retention after restart")
    assert broker_configs(b)["log.retention.ms"]["source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"
    # removing it: back to the static/default 7 days, nothing more is deleted
    assert alter(b, "", delete=["log.retention.ms"]) == {"ok": True}
    produce_old(b, "plain", n=20)
    time.sleep(1)
    assert len(segments(b, "plain")) > 3
    assert broker_configs(b)["log.retention.ms"]["source"] == "DEFAULT_CONFIG"


def test_refusals_with_kafkas_messages(broker):
    b = broker
    r = alter(b, "1", {"num.partitions": 3})
    assert (r["error"], r["message"]) == ("InvalidRequestException",
                                          "Cannot update these configs dynamically: [num.partitions]")
    r = alter(b, "", {"ssl.keystore.location": "/tmp/x.p12"})
    assert r["message"] == ("These security configs can be dynamically updated only per-listener using the "
                            "listener prefix: [ssl.keystore.location]")
    r = alter(b, "", {"listener.name.plaintext.ssl.keystore.type": "PEM"})
    assert r["message"] == ("Cannot update these configs at default cluster level, broker id must be specified: "
                            "[listener.name.plaintext.ssl.keystore.type]")
    r = alter(b, "", {"log.retention.ms": "soon"})
    assert r["error"] == "InvalidRequestException" and "Invalid value soon for configuration log.retention.ms" in \
        r["message"]
    # nothing was stored (the cluster-level min.insync.replicas of KIP-966 is always there);
    # a good change in the legacy API replaces the whole set
    assert list(broker_configs(b, "")) == ["min.insync.replicas"]
    assert alter(b, "", {"max.connections": 500, "message.max.bytes": 2048}, legacy=True) == {"ok": True}
    assert alter(b, "", {"message.max.bytes": 4096}, legacy=True) == {"ok": True}
    assert {n: l["value"] for n, l in broker_configs(b, "").items()} == {"message.max.bytes": "4096",
                                                                         "min.insync.replicas": "1"}


def test_connection_limits_apply_without_restart(broker):
    from tests.helpers.raw import RawClient
    from protocol.messages.metadata import MetadataRequest as MD
    md = MD(topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    assert alter(broker, "", {"max.connections.per.ip": 2}) == {"ok": True}
    first, second = RawClient(broker.bootstrap), RawClient(broker.bootstrap)
    try:
        first.request(3, 12, md)
        second.request(3, 12, md)
        third = RawClient(broker.bootstrap, timeout=3)
        assert third.is_closed_by_peer()
        third.close()
    finally:
        first.close()
        second.close()
    wait_until(lambda: _connects(broker.bootstrap, md), timeout=5, what="connections let in again")
    assert alter(broker, "", delete=["max.connections.per.ip"]) == {"ok": True}


def _connects(bootstrap, md) -> bool:
    from tests.helpers.raw import RawClient
    c = RawClient(bootstrap, timeout=3)
    try:
        c.request(3, 12, md)
        return True
    except (ConnectionError, OSError):
        return False
    finally:
        c.close()


def test_dynamic_message_max_bytes_reaches_topics(broker):
    """message.max.bytes set at the cluster default bounds produce to a topic without its own
    max.message.bytes (MESSAGE_TOO_LARGE), at once."""
    p = ck.Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0, "message.max.bytes": 100_000})
    p.produce("mm", b"x" * 5000)
    p.flush(10)
    assert alter(broker, "", {"message.max.bytes": 2048}) == {"ok": True}
    errors = []
    p.produce("mm", b"x" * 5000, on_delivery=lambda err, _m: errors.append(err))
    p.flush(10)
    assert errors and errors[0] is not None and errors[0].name() == "MSG_SIZE_TOO_LARGE"
    topic_cfg = {l["name"]: l for l in run_java(["admin-describe-configs", "--bootstrap", broker.bootstrap,
                                                 "--topic", "mm"])}
    assert (topic_cfg["max.message.bytes"]["value"], topic_cfg["max.message.bytes"]["source"]) == (
        "2048", "DYNAMIC_DEFAULT_BROKER_CONFIG")
