"""``hourglass groups`` end to end against a live broker (run as a user would): a KIP-848 group
of two confluent-kafka consumers is listed and described (epochs, assignments, committed
offsets and lag per partition); once it is empty its offsets are reset to a point in time
through the time index (dry run, then ``--execute``); a classic group is described too."""
from __future__ import annotations

import subprocess
import sys
import time
import uuid

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.helpers.clients import wait_until

T0 = 1_700_000_000_000  # record timestamps: T0 + i seconds


def hg(*args, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "broker", "groups", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


def sections(out: str) -> list[list[list[str]]]:
    """The tables of ``out`` (separated by blank lines), rows split on whitespace."""
    out_tables, cur = [], []
    for line in out.splitlines():
        if not line.strip():
            if cur:
                out_tables.append(cur)
            cur = []
        else:
            cur.append(line.split())
    if cur:
        out_tables.append(cur)
    return out_tables


def test_list_describe_and_reset_offsets_to_a_datetime(broker_factory):
    broker = broker_factory({"group.consumer.heartbeat.interval.ms": 200, "group.consumer.min.heartbeat.interval.ms": 100})
    bs = broker.bootstrap
    topic, group = f"cli-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(20)
    p = Producer({"bootstrap.servers": bs})
    for i in range(20):  # 10 records per partition, stamped T0 + i s
        p.produce(topic, value=b"v%d" % i, partition=i % 2, timestamp=T0 + i * 1000)
    p.flush(20)
    consumers = [Consumer({"bootstrap.servers": bs, "group.id": group, "group.protocol": "consumer",
                           "auto.offset.reset": "earliest", "enable.auto.commit": False}) for _ in range(2)]
    for c in consumers:
        c.subscribe([topic])
    got = 0
    deadline = time.time() + 30
    while time.time() < deadline and not (got == 20 and all(len(c.assignment()) == 1 for c in consumers)):
        for c in consumers:
            msgs = [m for m in c.consume(5, 0.1) if m.error() is None]
            got += len(msgs)
            if msgs:
                c.commit(asynchronous=False)
    assert got == 20 and all(len(c.assignment()) == 1 for c in consumers)
    for i in range(10):  # 5 more per partition, not consumed: a lag of 5
        p.produce(topic, value=b"w%d" % i, partition=i % 2, timestamp=T0 + (20 + i) * 1000)
    p.flush(20)
    b = ["-b", bs]

    r = hg("list", *b)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0].split() == ["GROUP", "TYPE", "PROTOCOL", "STATE"]
    assert [group, "consumer", "consumer", "Stable"] in [row for row in sections(r.stdout)[0]]
    r = hg("list", *b, "--type", "classic")
    assert group not in r.stdout

    wait_until(lambda: "Stable" in hg("describe", "--group", group, *b).stdout, timeout=10)
    r = hg("describe", "--group", group, *b)
    assert r.returncode == 0, r.stderr
    state, members, offsets = sections(r.stdout)
    assert state[0][:4] == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY"]
    # Kafka 4.4's epochs: the group starts at 1 and each of the two joins bumps it
    assert state[1][0] == group and state[1][3:] == ["uniform", "Stable", "3", "3", "2"]
    assert members[0][:6] == ["CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH"]
    assert sorted(row[-3] for row in members[1:]) == [f"{topic}:0", f"{topic}:1"]  # current assignments
    assert all(row[5] == "3" and row[-3] == row[-2] for row in members[1:])  # epoch 3, target reached
    assert offsets[0] == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID",
                          "HOST", "CLIENT-ID"]
    lag = {int(row[2]): (int(row[3]), int(row[4]), int(row[5])) for row in offsets[1:]}
    assert lag == {0: (10, 15, 5), 1: (10, 15, 5)}

    # reset: refused while members are in, then to T0 + 11 s (the first record of each
    # partition stamped at or after it: offset 6 in partition 0 (T0 + 12 s), 5 in partition 1)
    when = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime((T0 + 11_000) / 1000)) + ".000Z"
    r = hg("reset-offsets", "--group", group, "--topic", topic, "--to-datetime", when, "--execute", *b)
    assert r.returncode == 1 and "inactive" in r.stderr
    for c in consumers:
        c.close()
    r = hg("reset-offsets", "--group", group, "--topic", topic, "--to-datetime", when, *b)
    assert r.returncode == 0, r.stderr
    assert sections(r.stdout)[0][1:] == [[group, topic, "0", "6"], [group, topic, "1", "5"]]
    assert "dry run" in r.stderr
    r = hg("reset-offsets", "--group", group, "--topic", topic, "--to-datetime", when, "--execute", *b)
    assert r.returncode == 0, r.stderr
    r = hg("describe", "--group", group, *b)
    offsets = sections(r.stdout)[-1]
    assert {int(row[2]): int(row[3]) for row in offsets[1:]} == {0: 6, 1: 5}
    r = hg("reset-offsets", "--group", group, "--topic", topic, "--to-latest", "--execute", *b)
    assert r.returncode == 0 and sections(r.stdout)[0][1:] == [[group, topic, "0", "15"], [group, topic, "1", "15"]]

    r = hg("describe", "--group", "no-such-group", *b)
    assert r.returncode == 1 and "does not exist" in r.stderr

    # a classic group (DescribeGroups, assignments decoded from the consumer protocol)
    classic = Consumer({"bootstrap.servers": bs, "group.id": group + "-classic", "group.protocol": "classic",
                        "auto.offset.reset": "earliest", "enable.auto.commit": False,
                        "partition.assignment.strategy": "range"})
    classic.subscribe([topic])
    wait_until(lambda: classic.poll(0.1) is not None and len(classic.assignment()) == 2, timeout=30)
    classic.commit(asynchronous=False)
    r = hg("describe", "--group", group + "-classic", *b)
    assert r.returncode == 0, r.stderr
    state, members, offsets = sections(r.stdout)
    assert state[1][3:] == ["range", "Stable", "1"]
    assert members[1][-1] == f"{topic}:0,{topic}:1"
    classic.close()
