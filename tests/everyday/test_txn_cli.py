"""``hourglass transactions`` end to end against a live broker, with a confluent-kafka
transactional producer leaving a transaction open (run as a user would)."""
from __future__ import annotations

import subprocess
import sys
import uuid

from confluent_kafka import Producer


def hg(*args, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "broker", "transactions", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


def rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines()[1:]]


def test_list_describe_and_abort_a_hanging_transaction(broker):
    topic, tid = f"cli-{uuid.uuid4().hex[:6]}", f"tx-{uuid.uuid4().hex[:6]}"
    b = ["-b", broker.bootstrap]
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": tid})
    p.init_transactions(20)
    p.begin_transaction()
    p.produce(topic, value=b"open", partition=0)
    p.flush(20)

    r = hg("list", *b, "--state", "Ongoing")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0].split() == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    [[listed_id, _node, pid, state]] = [row for row in rows(r.stdout) if row[0] == tid]
    assert (listed_id, state) == (tid, "Ongoing")

    r = hg("describe", "--transactional-id", tid, *b)
    assert r.returncode == 0, r.stderr
    [row] = rows(r.stdout)
    assert row[1:5] == [tid, pid, "0", "Ongoing"] and row[-1] == f"{topic}-0"

    r = hg("describe-producers", "--topic", topic, "--partition", 0, *b)
    assert r.returncode == 0, r.stderr
    assert [(x[0], x[-1]) for x in rows(r.stdout)] == [(pid, "0")]  # its transaction starts at offset 0

    r = hg("abort", "--topic", topic, "--partition", 0, "--start-offset", 0, *b)
    assert r.returncode == 0, r.stderr
    r = hg("describe-producers", "--topic", topic, "--partition", 0, *b)
    assert [(x[0], x[-1]) for x in rows(r.stdout)] == [(pid, "None")]
    # nothing left to abort there; an unknown id is an error
    assert hg("abort", "--topic", topic, "--partition", 0, "--start-offset", 0, *b).returncode == 1
    r = hg("describe", "--transactional-id", "no-such-id", *b)
    assert r.returncode == 1 and "TRANSACTIONAL_ID_NOT_FOUND" in r.stderr
    p.abort_transaction(20)
    r = hg("list", *b)
    assert [row[3] for row in rows(r.stdout) if row[0] == tid] == ["CompleteAbort"]


def test_abort_usage_errors(broker):
    r = hg("abort", "--topic", "t", "--partition", 0, "-b", broker.bootstrap)
    assert r.returncode == 1 and "--start-offset" in r.stderr
    r = hg("list", "-b", "127.0.0.1:1", "--timeout", 2)
    assert r.returncode == 1 and "cannot reach" in r.stderr
