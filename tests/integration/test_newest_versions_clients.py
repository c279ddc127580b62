"""Stock clients against the newest versions Hourglass serves (the ones Kafka 4.4 serves too):
each client negotiates from the broker's ApiVersions answer, and the broker's per-(API,
version) request counters (the Prometheus endpoint) show which versions were actually used.

- The Java kafka-clients 4.4.0 (the Apache Kafka oracle's own jar) produces, consumes, commits
  and fetches offsets in a classic and in a KIP-848 consumer group, looks offsets up by time,
  describes the cluster and runs a transaction: it must use ApiVersions 5, Metadata 13,
  Produce 13 (topic ids) for its plain and its transactional producer (``transaction.version``
  2 is finalized, so the transaction runs KIP-890 part 2: EndTxn 5, no AddPartitionsToTxn),
  Fetch 18, ListOffsets 11 and OffsetCommit/OffsetFetch 10 (topic ids), and
  everything it reads back is what it wrote.
- librdkafka (confluent-kafka) negotiates its own, older maxima against the same ranges and
  still produces, consumes and commits.
"""
from __future__ import annotations

import re
import time
import urllib.request
import uuid

from prometheus_client.parser import text_string_to_metric_families

from tests.helpers.clients import wait_until
from tests.helpers.java import run_java
from tests.helpers.txn import create_topic

N = 20


def _versions_used(b) -> dict[str, set[int]]:
    """API name -> the versions the broker answered requests with."""
    wait_until(lambda: "metrics on http://" in b.log_text(), timeout=10, what="metrics endpoint log line")
    url = re.search(r"metrics on (http://\S+)/metrics", b.log_text()).group(1)
    text = urllib.request.urlopen(url + "/metrics", timeout=5).read().decode()
    out: dict[str, set[int]] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == "hourglass_requests_total" and s.value > 0:
                out.setdefault(s.labels["api"], set()).add(int(s.labels["version"]))
    return out


def test_java_4_4_client_negotiates_the_newest_versions(broker_factory):
    b = broker_factory({"metrics.port": 0, "group.initial.rebalance.delay.ms": 0})
    bs, topic = b.bootstrap, f"jv-{uuid.uuid4().hex[:8]}"
    create_topic(bs, topic, 2)
    args = ["--bootstrap", bs, "--topic", topic]
    t0 = int(time.time() * 1000) - 60_000
    stamps = ",".join(str(t0 + i) for i in range(N))
    produced = run_java(["produce", *args, "--partition", 0, "--count", N, "--acks", "all", "--key-prefix", "k",
                         "--timestamps", stamps], clients="4.4.0")
    assert [r["offset"] for r in produced] == list(range(N))
    consumed = run_java(["consume", *args, "--partition", 0, "--from-offset", 0, "--count", N], clients="4.4.0")
    assert [r["value"] for r in consumed] == [f"value-{i}" for i in range(N)]
    [found] = run_java(["list-offsets", *args, "--partition", 0, "--spec", f"ts:{t0 + 5}"], clients="4.4.0")
    assert (found["offset"], found["timestamp"]) == (5, t0 + 5)
    for protocol in ("classic", "consumer"):
        group = f"g-{protocol}-{uuid.uuid4().hex[:6]}"
        [out] = [l for l in run_java(["group-consume", *args, "--group", group, "--count", N,
                                      "--props", f"group.protocol={protocol}"], clients="4.4.0") if "committed" in l]
        assert out["committed"]["0"] == N, (protocol, out)
    [cluster] = run_java(["admin-describe-cluster", "--bootstrap", bs], clients="4.4.0")
    assert [f"{n['host']}:{n['port']}" for n in cluster["nodes"]] == [bs]
    lines = run_java(["txn-produce", *args, "--txn-id", f"tid-{uuid.uuid4().hex[:6]}", "--txns", "commit:3,abort:2"],
                     clients="4.4.0")
    assert [l["outcome"] for l in lines if "outcome" in l] == ["commit", "abort"]
    used = _versions_used(b)
    assert 5 in used["ApiVersions"]
    for api, version in (("Metadata", 13), ("Fetch", 18), ("ListOffsets", 11), ("OffsetCommit", 10),
                         ("OffsetFetch", 10), ("DescribeCluster", 2)):
        assert version in used[api], (api, used[api])
    # transaction.version 2 is finalized: the transactional producer writes with v13 too (KIP-890
    # part 2, no AddPartitionsToTxn before its writes) and ends its transactions with EndTxn v5
    assert used["Produce"] == {13}, used["Produce"]
    assert used["EndTxn"] == {5} and "AddPartitionsToTxn" not in used, used


def test_librdkafka_negotiates_within_the_newest_ranges(broker_factory):
    from confluent_kafka import Consumer, Producer, TopicPartition
    from protocol.api_keys import APIS
    b = broker_factory({"metrics.port": 0, "group.initial.rebalance.delay.ms": 0})
    topic = f"rd-{uuid.uuid4().hex[:8]}"
    create_topic(b.bootstrap, topic, 1)
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0, "enable.idempotence": True})
    for i in range(N):
        p.produce(topic, value=b"v%d" % i, key=b"k%d" % i, partition=0)
    assert p.flush(30) == 0
    group = f"g-{uuid.uuid4().hex[:6]}"
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    got = []
    deadline = time.monotonic() + 60
    while len(got) < N and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.value())
    assert got == [b"v%d" % i for i in range(N)]
    c.commit(asynchronous=False)
    [tp] = c.committed([TopicPartition(topic, 0)], timeout=30)
    assert tp.offset == N
    low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
    assert (low, high) == (0, N)
    c.close()
    used = _versions_used(b)
    by_name = {a.name: a for a in APIS.values()}
    for api, versions in used.items():
        assert max(versions) <= by_name[api].max_version, (api, versions)
    for api in ("Produce", "Fetch", "ListOffsets", "OffsetCommit", "OffsetFetch", "Metadata"):
        assert used.get(api), (api, used)
