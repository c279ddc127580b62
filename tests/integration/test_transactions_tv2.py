"""KIP-890 part 2 end to end: a Kafka 4.4 Java producer (the harness over kafka-clients 4.4.0)
on Hourglass with ``transaction.version`` 2 finalized (a new data dir's level) runs exactly-once
(commit, abort, fencing by a new instance, a broker kill -9 in the middle of a transaction) and a
read_committed consumer sees each committed record once and no aborted one; then the same after
``kafka-features downgrade --feature transaction.version=1`` (Kafka 4.4's own tool).

Which protocol ran is read from the coordinator (DescribeTransactions): under TV2 every EndTxn
bumps the producer epoch (the 4.4 client reads the finalized level and sends EndTxn v5 and
Produce v12 without AddPartitionsToTxn), under TV1 the epoch stays where InitProducerId put it.
librdkafka, which speaks TV1 requests, runs its transactions on the TV2-finalized broker too."""
from __future__ import annotations

import pytest

from hourglass.cli.wire import WireClient
from tests.differential.framework import req
from tests.helpers.java import run_java
from tests.helpers.txn import READ_COMMITTED, TXN_BROKER_OVERRIDES, create_topic, txn_producer, unique
from tests.integration.test_features_tools import features_tool
from tests.integration.test_transactions_java import consume_to_end

CLIENTS = "4.4.0"


def _txn_state(bootstrap: str, tid: str):
    with WireClient(bootstrap) as c:
        (st,) = c.request(65, 0, req(65, 0, transactional_ids=[tid])).transaction_states
    return st


def _produce(bs, topic, tid, txns, prefix, partitions="0,1,2"):
    lines = run_java(["txn-produce", "--bootstrap", bs, "--topic", topic, "--txn-id", tid, "--txns", txns,
                      "--partitions", partitions, "--value-prefix", prefix], clients=CLIENTS)
    return [l for l in lines if "offset" in l], [l["outcome"] for l in lines if "outcome" in l]


def _committed_values(bs, topic):
    recs, pos, end = consume_to_end(bs, topic, READ_COMMITTED, "0,1,2")
    assert pos == end, (pos, end)
    return [r["value"] for r in recs]


@pytest.mark.parametrize("level", [2, 1])
def test_java_44_producer_exactly_once(broker_factory, client_tools, level):
    b = broker_factory(TXN_BROKER_OVERRIDES)
    bs = b.bootstrap
    if level == 1:
        rc, out = features_tool(bs, "downgrade", "--feature", "transaction.version=1")
        assert rc == 0 and "transaction.version was downgraded to 1." in out, out
    topic = unique(f"tv{level}")
    create_topic(bs, topic, 3)

    # commit, abort, commit: one producer, three transactions over three partitions
    tid = unique("tid")
    sent, outcomes = _produce(bs, topic, tid, "commit:6,abort:4,commit:5", "a")
    assert outcomes == ["commit", "abort", "commit"]
    st = _txn_state(bs, tid)
    assert st.transaction_state == "CompleteCommit"
    # TV2: InitProducerId gave epoch 0 and each of the three EndTxn bumped it; TV1: never
    assert st.producer_epoch == (3 if level == 2 else 0), st
    expected = [l["value"] for l in sent if l["txn"] != 1]

    # fencing: a second instance with the same transactional.id fences the first
    ftopic = unique(f"tv{level}-fence")
    create_topic(bs, ftopic, 1)
    lines = run_java(["txn-fence", "--bootstrap", bs, "--topic", ftopic, "--txn-id", unique("tid")], clients=CLIENTS)
    by = {k: l[k] for l in lines for k in l}
    assert by["first_commit"] != "ok" and by["first_commit"]["error"] == "ProducerFencedException", by
    assert by["first_send"] != "ok", by
    recs, pos, end = consume_to_end(bs, ftopic, READ_COMMITTED)
    assert [r["value"] for r in recs] == ["fence-b-0", "fence-b-1"] and pos == end

    # kill -9 in the middle of a transaction: the producer halts with it open, the broker dies
    tid2 = unique("tid")
    open_sent, outcomes = _produce(bs, topic, tid2, "commit:3,open:3", "k")
    assert outcomes == ["commit", "open"]
    expected += [l["value"] for l in open_sent if l["txn"] == 0]
    b.restart(crash=True)
    bs = b.bootstrap
    # a new instance: InitProducerId aborts the open transaction left in the log, then commits its own
    again, outcomes = _produce(bs, topic, tid2, "commit:4", "r")
    assert outcomes == ["commit"]
    expected += [l["value"] for l in again]
    got = _committed_values(bs, topic)
    assert sorted(got) == sorted(expected) and len(got) == len(set(got)), (got, expected)
    assert _txn_state(bs, tid2).transaction_state == "CompleteCommit"


def test_librdkafka_transactions_on_tv2(broker_factory):
    """confluent-kafka (librdkafka, TV1 requests) commits and aborts on a broker that finalizes
    transaction.version 2, and is fenced by a second instance."""
    from confluent_kafka import KafkaException
    b = broker_factory(TXN_BROKER_OVERRIDES)
    bs, topic, tid = b.bootstrap, unique("rdk-tv2"), unique("tid")
    create_topic(bs, topic, 3)
    p = txn_producer(bs, tid)
    values = {}
    for n, outcome in enumerate(["commit", "abort", "commit"]):
        p.begin_transaction()
        values[n] = [f"{outcome}{n}-{i}" for i in range(6)]
        for i, v in enumerate(values[n]):
            p.produce(topic, v.encode(), partition=i % 3)
        assert p.flush(20) == 0
        (p.commit_transaction if outcome == "commit" else p.abort_transaction)(20)
    p2 = txn_producer(bs, tid)
    p.begin_transaction()
    p.produce(topic, b"zombie", partition=0)
    with pytest.raises(KafkaException):
        p.flush(20)
        p.commit_transaction(20)
    p2.begin_transaction()
    p2.produce(topic, b"after-fence", partition=1)
    p2.commit_transaction(20)
    got = _committed_values(bs, topic)
    assert sorted(got) == sorted(values[0] + values[2] + ["after-fence"])
