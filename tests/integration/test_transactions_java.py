"""Transactions (issue 17) with the Java client (kafka-clients 3.9.1) through the harness:
commit/abort and open transactions as read_committed and read_uncommitted consumers see them
(Java's endOffsets answer the LSO under read_committed; positions step over the markers),
fencing (ProducerFencedException on the first producer's commit), a producer that goes
silent inside a transaction (aborted after transaction.timeout.ms), and a
consume-transform-produce copy (sendOffsetsToTransaction with groupMetadata(), KIP-447)
run by two JVMs, the second joining mid-way.
"""
from __future__ import annotations

import time

import pytest

from tests.helpers.java import popen_java, run_java
from tests.helpers.txn import (READ_COMMITTED, create_topic, ctp_topics, group_committed,  # noqa: F401
                               tbroker, unique)


def consume_to_end(bootstrap: str, topic: str, isolation: str, partitions="0"):
    lines = run_java(["consume-to-end", "--bootstrap", bootstrap, "--topic", topic, "--partitions", partitions,
                      "--isolation", isolation])
    recs = [l for l in lines if "value" in l]
    tail = lines[-1]
    return recs, {int(k): v for k, v in tail["positions"].items()}, {int(k): v for k, v in tail["endOffsets"].items()}


def test_java_commit_abort_and_open_transactions(tbroker, client_tools):
    """Transactions commit:2, abort:2, commit:1 over partitions 0 and 1, then one left open
    by a JVM that halts: read_committed sees exactly the committed values (endOffsets = the
    LSO, stuck at the open transaction's first offset), read_uncommitted all of them."""
    bs, topic = tbroker.bootstrap, unique("jtx")
    create_topic(bs, topic, 2)
    lines = run_java(["txn-produce", "--bootstrap", bs, "--topic", topic, "--txn-id", unique("tid"),
                      "--txns", "commit:4,abort:4,commit:2", "--partitions", "0,1"])
    sent = [l for l in lines if "offset" in l]
    assert [l["outcome"] for l in lines if "outcome" in l] == ["commit", "abort", "commit"]
    committed = {p: [l["value"] for l in sent if l["partition"] == p and l["txn"] != 1] for p in (0, 1)}
    every = {p: [l["value"] for l in sent if l["partition"] == p] for p in (0, 1)}
    # partition 0: txn0 at 0-1 + marker 2, txn1 3-4 + marker 5, txn2 at 6 + marker 7
    assert [l["offset"] for l in sent if l["partition"] == 0] == [0, 1, 3, 4, 6]
    ends = {0: 8, 1: 8}
    recs, pos, end = consume_to_end(bs, topic, READ_COMMITTED, "0,1")
    assert {p: [r["value"] for r in recs if r["partition"] == p] for p in (0, 1)} == committed
    assert pos == end == ends
    recs, pos, end = consume_to_end(bs, topic, "read_uncommitted", "0,1")
    assert {p: [r["value"] for r in recs if r["partition"] == p] for p in (0, 1)} == every
    assert pos == end == ends

    run_java(["txn-produce", "--bootstrap", bs, "--topic", topic, "--txn-id", unique("tid"), "--txns", "open:2",
              "--partitions", "0", "--value-prefix", "open"])
    recs, pos, end = consume_to_end(bs, topic, READ_COMMITTED, "0")
    assert end == {0: 8} and pos == {0: 8} and [r["value"] for r in recs] == committed[0]
    lo = run_java(["list-offsets", "--bootstrap", bs, "--topic", topic, "--spec", "latest", "--partition", "0",
                   "--isolation", READ_COMMITTED])
    assert lo[0]["offset"] == 8          # Admin.listOffsets READ_COMMITTED: the LSO
    recs, pos, end = consume_to_end(bs, topic, "read_uncommitted", "0")
    assert end == pos == {0: 10} and [r["value"] for r in recs][-2:] == ["open0-0", "open0-1"]


def test_java_second_producer_fences_the_first(tbroker, client_tools):
    bs, topic = tbroker.bootstrap, unique("jfence")
    create_topic(bs, topic, 1)
    lines = run_java(["txn-fence", "--bootstrap", bs, "--topic", topic, "--txn-id", unique("tid")])
    by = {k: l[k] for l in lines for k in l}
    assert by["first_sent"] == [0, 1, 2]
    assert by["first_commit"] != "ok" and by["first_commit"]["error"] == "ProducerFencedException", by
    assert by["first_send"] != "ok", by        # a fenced producer cannot send either
    assert by["second_committed"] == [4, 5]    # after p1's ABORT marker at 3
    recs, pos, end = consume_to_end(bs, topic, READ_COMMITTED)
    assert [r["value"] for r in recs] == ["fence-b-0", "fence-b-1"] and pos == end == {0: 7}
    recs, _, _ = consume_to_end(bs, topic, "read_uncommitted")
    assert [r["value"] for r in recs] == ["fence-a-0", "fence-a-1", "fence-a-2", "fence-b-0", "fence-b-1"]


def test_java_silent_producer_transaction_times_out(tbroker, client_tools):
    """A JVM opens a transaction (transaction.timeout.ms=2000), writes 3 records and halts.
    A read_committed Java consumer started right away reaches the end once the coordinator
    has aborted it, and sees none of its records."""
    bs, topic = tbroker.bootstrap, unique("jtimeout")
    create_topic(bs, topic, 1)
    t0 = time.monotonic()
    run_java(["txn-produce", "--bootstrap", bs, "--topic", topic, "--txn-id", unique("tid"), "--txns", "open:3",
              "--props", "transaction.timeout.ms=2000"])
    lines = run_java(["list-offsets", "--bootstrap", bs, "--topic", topic, "--spec", "latest", "--partition", "0",
                      "--isolation", READ_COMMITTED])
    if time.monotonic() - t0 < 1.8:       # still inside the timeout: the LSO is held at 0
        assert lines[0]["offset"] == 0
    deadline = time.monotonic() + 15
    while True:
        lo = run_java(["list-offsets", "--bootstrap", bs, "--topic", topic, "--spec", "latest", "--partition", "0",
                       "--isolation", READ_COMMITTED])
        if lo[0]["offset"] == 4:
            break
        assert time.monotonic() < deadline, f"LSO still {lo[0]['offset']}"
        time.sleep(0.3)
    recs, pos, end = consume_to_end(bs, topic, READ_COMMITTED)
    assert recs == [] and pos == end == {0: 4}


def test_java_consume_transform_produce_two_jvms(tbroker, client_tools):
    """txn-copy of 4 x 30 input records (5 per transaction, paced); a second JVM is started
    as soon as the first has its partitions, so it joins while the first is copying. Every
    input appears exactly once in the output for read_committed, and the group's committed
    offsets equal the input end offsets."""
    bs = tbroker.bootstrap
    src, dst, group = ctp_topics(bs, "jctp", 30)

    common = ["txn-copy", "--bootstrap", bs, "--input", src, "--output", dst, "--group", group,
              # paced (24 polls x 300 ms): the second JVM must start and join while the first
              # still copies, even on a loaded host where a JVM takes seconds to start
              "--max-poll-records", 5, "--sleep-ms", 300, "--timeout-ms", 45000,
              "--props", "session.timeout.ms=6000,heartbeat.interval.ms=500"]
    a = popen_java([*common, "--txn-id", unique("copy-a")])
    b = None
    try:
        first = a.wait_for(lambda l: "assigned" in l, timeout=30)
        assert first is not None, a.lines
        b = popen_java([*common, "--txn-id", unique("copy-b")])
        out_a, out_b = a.finish(60), b.finish(60)
    finally:
        a.kill()
        if b is not None:
            b.kill()
    done_a, done_b = out_a[-1], out_b[-1]
    assert done_a.get("done") and done_b.get("done"), (out_a[-3:], out_b[-3:])
    assert done_a["records"] > 0 and done_b["records"] > 0, "one JVM never copied anything"
    assert any("revoked" in l for l in out_a), "no rebalance seen by the first JVM"
    assert group_committed(bs, group, src, range(4)) == {p: 30 for p in range(4)}
    recs, _, _ = consume_to_end(bs, dst, READ_COMMITTED, "0,1,2,3")
    for p in range(4):
        mine = [r for r in recs if r["partition"] == p]
        assert sorted(r["value"] for r in mine) == sorted(f"out-in-{p}-{i}" for i in range(30)), p
        assert sorted(r["key"] for r in mine) == sorted(f"{p}:{i}" for i in range(30)), p
