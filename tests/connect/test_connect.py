"""Kafka Connect (distributed mode, connect-runtime from Maven Central) against Hourglass.

Each test starts its own Hourglass broker and real Connect workers (JVM subprocesses), creates
connectors through Connect's REST API as a user would with curl, and checks what landed in the
broker with a separate client. The FileStream connectors stand in for any connector: they keep
a source offset (the byte position in the file) that Connect stores in its offsets topic.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from tests.helpers.clients import topic_configs, wait_until
from tests.helpers.connect import read_topic, wait_for_records
from tests.helpers.txn import end_offsets

pytestmark = pytest.mark.timeout(600)

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"


def lines(start: int, stop: int, tag: str = "line") -> list[str]:
    return [f"{tag}-{i:06d}" for i in range(start, stop)]


def append(path, items: list[str]) -> None:
    with open(path, "a") as f:
        f.write("".join(i + "\n" for i in items))
        f.flush()
        os.fsync(f.fileno())


def values(records) -> list[str]:
    """FileStream source values through the JsonConverter (schemas off): JSON strings."""
    return [json.loads(m.value()) for m in records]


def source(path, topic: str, **extra) -> dict:
    # batch.size stays at its default: FileStreamSourceTask returns a full batch with more lines
    # left in its read buffer, and reads them only when more bytes arrive in the file
    return {"connector.class": FILE_SOURCE, "file": str(path), "topic": topic, "tasks.max": 1, **extra}


def partition_counts(bootstrap: str) -> dict[str, int]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    md = admin.list_topics(timeout=30)
    return {t: len(m.partitions) for t, m in md.topics.items()}


def broker_serves(bootstrap: str) -> None:
    """A produce and a read back on a fresh topic: the broker still answers clients."""
    topic = f"still-serving-{time.monotonic_ns()}"
    p = Producer({"bootstrap.servers": bootstrap})
    p.produce(topic, b"ok")
    assert p.flush(30) == 0
    got = read_topic(bootstrap, topic)
    assert [m.value() for m in got] == [b"ok"]


#: a worker's group session as short as the broker allows (group.min.session.timeout.ms), for
#: tests that kill or freeze a worker and wait for the group to notice
FAST_SESSION = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000}


def committed_position(worker, connector: str) -> int:
    """The source offset Connect has committed for a FileStream connector (its byte position)."""
    offs = worker.offsets(connector)["offsets"]
    return max((o["offset"]["position"] for o in offs), default=0)


# --------------------------------------------------------------------------- tests


def test_internal_topics_and_file_round_trip(broker_factory, connect_factory, tmp_path):
    """The worker creates its three compacted internal topics on Hourglass; a FileStream source
    feeds a topic and a sink writes it back out, line for line; the source's offset is stored."""
    b = broker_factory()
    w = connect_factory(b.bootstrap)

    counts = partition_counts(b.bootstrap)
    assert counts[w.config_topic] == 1  # Connect insists on one partition for its config log
    assert counts[w.offset_topic] == 5 and counts[w.status_topic] == 2
    for t in (w.config_topic, w.offset_topic, w.status_topic):
        assert topic_configs(b.bootstrap, t)["cleanup.policy"] == "compact", t

    src, out = tmp_path / "in.txt", tmp_path / "out.txt"
    want = lines(0, 500)
    append(src, want)
    w.create_connector("file-in", source(src, "lines"))
    w.create_connector("file-out", {"connector.class": FILE_SINK, "file": str(out), "topics": "lines", "tasks.max": 1})
    w.wait_running("file-in")
    w.wait_running("file-out")
    wait_until(lambda: out.exists() and len(out.read_text().splitlines()) >= len(want), 120,
               what="sink file complete", interval=0.3)
    assert out.read_text().splitlines() == want

    size = src.stat().st_size
    wait_until(lambda: committed_position(w, "file-in") == size, 60, what="source offset committed", interval=0.3)
    # the offsets topic holds it under Connect's key ["file-in", {"filename": ...}]
    stored = [m for m in read_topic(b.bootstrap, w.offset_topic, isolation="read_uncommitted") if m.value()]
    keys = [json.loads(m.key()) for m in stored]
    assert ["file-in", {"filename": str(src)}] in keys
    # the config log carries both connectors, the status log their states
    cfg_keys = {m.key().decode() for m in read_topic(b.bootstrap, w.config_topic, isolation="read_uncommitted")}
    assert {"connector-file-in", "connector-file-out"} <= cfg_keys
    status_keys = {m.key().decode() for m in read_topic(b.bootstrap, w.status_topic, isolation="read_uncommitted")}
    assert {"status-connector-file-in", "status-task-file-in-0"} <= status_keys


def test_worker_restart_resumes_from_stored_source_offsets(broker_factory, connect_factory, tmp_path):
    """Stopped and started again, the worker reads its source offsets back from Hourglass and
    carries on where it left off: every line on the topic exactly once, in order."""
    b = broker_factory()
    w = connect_factory(b.bootstrap)
    src = tmp_path / "in.txt"
    append(src, lines(0, 300))
    w.create_connector("file-in", source(src, "restart-lines"))
    w.wait_running("file-in")
    wait_for_records(b.bootstrap, "restart-lines", 300)
    wait_until(lambda: committed_position(w, "file-in") == src.stat().st_size, 60,
               what="offset committed", interval=0.3)

    w.stop()
    append(src, lines(300, 700))
    w.start()
    w.wait_running("file-in")
    got = wait_for_records(b.bootstrap, "restart-lines", 700)
    time.sleep(2)  # anything re-read from an older offset would land by now
    assert values(read_topic(b.bootstrap, "restart-lines")) == lines(0, 700)
    assert len(got) >= 700


def test_two_workers_share_and_rebalance_tasks(broker_factory, connect_factory, tmp_path):
    """Two workers in one group split the connectors and tasks between them; when one leaves,
    the other takes its share over (incremental cooperative rebalancing) and nothing is lost."""
    b = broker_factory()
    w1 = connect_factory(b.bootstrap)
    w2 = connect_factory(b.bootstrap)
    names = [f"file-{i}" for i in range(4)]
    for i, n in enumerate(names):
        append(tmp_path / f"{n}.txt", lines(0, 200, tag=n))
        w1.put_connector(n, source(tmp_path / f"{n}.txt", f"topic-{n}"))
    for n in names:
        w1.wait_running(n)

    def owners() -> set[str]:
        found = set()
        for n in names:
            st = w1.status(n)
            found.add(st["connector"]["worker_id"])
            found |= {t["worker_id"] for t in st["tasks"]}
        return found

    ids = {f"127.0.0.1:{w.port}" for w in (w1, w2)}
    assert wait_until(lambda: owners() == ids, 60, what="both workers own connectors or tasks", interval=0.3)
    for n in names:
        wait_for_records(b.bootstrap, f"topic-{n}", 200)

    w2.stop()
    for i, n in enumerate(names):
        append(tmp_path / f"{n}.txt", lines(200, 400, tag=n))
    # the departed worker's share moves once scheduled.rebalance.max.delay.ms (5 s) is over
    wait_until(lambda: owners() == {f"127.0.0.1:{w1.port}"}, 90, what="w1 owns everything", interval=0.3)
    for n in names:
        w1.wait_running(n)
        wait_for_records(b.bootstrap, f"topic-{n}", 400)
    time.sleep(2)
    for n in names:
        assert values(read_topic(b.bootstrap, f"topic-{n}")) == lines(0, 400, tag=n), n


def test_exactly_once_source_across_kill_9(broker_factory, connect_factory, tmp_path):
    """KIP-618: with ``exactly.once.source.support=enabled`` the task writes its records and its
    source offset in one transaction, and a restarted task fences its predecessor's producer.
    A worker SIGKILLed while the file grows, three times over, still leaves each line exactly
    once for a read_committed consumer."""
    b = broker_factory()
    # the killed worker's member stays in the group until its session times out, and the
    # restarted one's join waits for that: 6 s (the broker's minimum), not Connect's 10
    eos = {"exactly.once.source.support": "enabled", **FAST_SESSION}
    w = connect_factory(b.bootstrap, overrides=eos)
    src = tmp_path / "in.txt"
    append(src, lines(0, 1000))
    w.put_connector("eos-in", source(src, "eos-lines", **{"exactly.once.support": "required",
                                                          "transaction.boundary": "poll"}))
    w.wait_running("eos-in")

    stop = threading.Event()
    written = [1000]

    def grow():
        while not stop.is_set():
            n = written[0]
            append(src, lines(n, n + 100))
            written[0] = n + 100
            time.sleep(0.05)

    t = threading.Thread(target=grow, daemon=True)
    t.start()
    try:
        for _ in range(3):
            wait_until(lambda: len(read_topic(b.bootstrap, "eos-lines")) > 1000, 60,
                       what="records flowing", interval=0.3)
            time.sleep(1.5)
            w.kill()  # no graceful commit: an open transaction is left for the broker to abort
            w.start()
            w.wait_running("eos-in")
    finally:
        stop.set()
        t.join()
    total = written[0]
    wait_for_records(b.bootstrap, "eos-lines", total, timeout=180)
    time.sleep(2)
    got = values(read_topic(b.bootstrap, "eos-lines"))
    assert len(got) == len(set(got)), "a line delivered twice"
    assert got == lines(0, total)
    # the task's transactional producer is Connect's ${group}-${connector}-${task}
    listed = subprocess.run([sys.executable, "-c", "import sys; from hourglass.cli import main; sys.exit(main())", "transactions", "list", "-b", b.bootstrap],
                            capture_output=True, text=True, timeout=60)
    assert f"{w.group_id}-eos-in-0" in listed.stdout, listed.stdout + listed.stderr


def test_exactly_once_zombie_task_is_fenced(broker_factory, connect_factory, tmp_path):
    """A worker frozen (SIGSTOP) past its session timeout is a zombie: the other worker takes
    its task over and fences the old producer. Thawed, the zombie's transaction must fail, and
    the topic still holds each line once."""
    b = broker_factory()
    eos = {"exactly.once.source.support": "enabled", **FAST_SESSION}
    w1 = connect_factory(b.bootstrap, overrides=eos)
    src = tmp_path / "in.txt"
    append(src, lines(0, 500))
    w1.put_connector("zombie-in", source(src, "zombie-lines", **{"exactly.once.support": "required"}))
    w1.wait_running("zombie-in")
    wait_for_records(b.bootstrap, "zombie-lines", 500)
    w2 = connect_factory(b.bootstrap, overrides=eos)
    task_owner = lambda: w2.status("zombie-in")["tasks"][0]["worker_id"]  # noqa: E731
    zombie, survivor = (w1, w2) if task_owner() == f"127.0.0.1:{w1.port}" else (w2, w1)

    os.kill(zombie.proc.pid, signal.SIGSTOP)
    try:
        append(src, lines(500, 1000))
        wait_until(lambda: survivor.status("zombie-in")["tasks"][0]["worker_id"] == f"127.0.0.1:{survivor.port}",
                   120, what="survivor owns the task", interval=0.3)
        survivor.wait_running("zombie-in")
        wait_for_records(b.bootstrap, "zombie-lines", 1000)
    finally:
        os.kill(zombie.proc.pid, signal.SIGCONT)
    append(src, lines(1000, 1500))
    wait_for_records(b.bootstrap, "zombie-lines", 1500)
    time.sleep(5)  # the thawed zombie gets its chance to write
    got = values(read_topic(b.bootstrap, "zombie-lines"))
    assert got == lines(0, 1500)
    # the thawed task's producer learned from the broker that a newer one had fenced it
    log = zombie.log_text()
    # transaction.version 1: its AddPartitionsToTxn is refused PRODUCER_FENCED (ProducerFencedException);
    # 2 (Kafka 4.4's default): partitions are added by the Produce itself, and the leader's check with
    # the coordinator refuses the old epoch with INVALID_PRODUCER_EPOCH, as Kafka 4's broker answers a
    # produce (InvalidProducerEpochException "...attempted to produce with an old epoch")
    txn_id = f"{zombie.group_id}-zombie-in-0"
    # (the client names the transactional id when the error reaches its transaction manager
    # first; when the send's own callback sees it first, the task logs its failed send)
    fenced = ("ProducerFencedException" in log and f"transactionalId={txn_id}" in log) or \
        f"InvalidProducerEpochException: Producer with transactionalId '{txn_id}'" in log or \
        re.search(r"ExactlyOnceWorkerSourceTask\{id=zombie-in-0\} failed to send record to zombie-lines:.*\n"
                  r"org\.apache\.kafka\.common\.errors\.InvalidProducerEpochException", log) is not None
    assert fenced, zombie.log_tail(4000)


def test_wrong_connector_config_gets_connects_error_and_broker_keeps_serving(broker_factory, connect_factory,
                                                                             tmp_path):
    """Bad input through Connect: a missing required key and an unknown class are refused by
    the REST API with Connect's 400; a topic name Kafka refuses fails the task with the broker's
    error in its trace. The broker keeps serving throughout."""
    b = broker_factory()
    w = connect_factory(b.bootstrap)
    src = tmp_path / "in.txt"
    append(src, lines(0, 10))

    status, body = w.request("POST", "/connectors", {"name": "no-topic", "config": {
        "connector.class": FILE_SOURCE, "file": str(src)}})
    assert status == 400, body
    assert "topic" in body["message"] and "error" in body["message"], body

    status, body = w.request("POST", "/connectors", {"name": "no-class", "config": {
        "connector.class": "org.example.NoSuchConnector", "topic": "x"}})
    assert status in (400, 500) and "NoSuchConnector" in body["message"], body

    checked = w.call("PUT", "/connector-plugins/FileStreamSourceConnector/config/validate",
                     {"connector.class": FILE_SOURCE, "file": str(src), "topic": "x", "tasks.max": "two"})
    assert checked["error_count"] >= 1

    # "bad topic!" passes Connect's own checks; the broker refuses it (INVALID_TOPIC_EXCEPTION)
    w.put_connector("bad-topic", source(src, "bad topic!"))
    st = wait_until(lambda: (s := w.status("bad-topic")) and s["tasks"] and s["tasks"][0]["state"] == "FAILED" and s,
                    120, what="task FAILED", interval=0.3)
    assert "InvalidTopicException" in st["tasks"][0]["trace"], st["tasks"][0]["trace"][:2000]
    broker_serves(b.bootstrap)

    # the worker too: a good connector still runs beside the failed one
    w.put_connector("good", source(src, "good-lines"))
    w.wait_running("good")
    assert values(wait_for_records(b.bootstrap, "good-lines", 10)) == lines(0, 10)
    assert b.running


def test_worker_killed_during_rebalance_loses_no_committed_source_offset(broker_factory, connect_factory, tmp_path):
    """Rounds of: a second worker joins (a rebalance starts) and the worker that ran the task is
    SIGKILLed in the middle of it. The task resumes on the survivor from an offset at or past
    every offset committed before the kill: what the survivor writes holds no line up to that
    commit, and no line is lost. (Lines past the commit that the killed task had written are
    written again: at-least-once, as Connect promises without exactly-once support.)"""
    b = broker_factory()
    src = tmp_path / "in.txt"
    written = 0

    def grow(n: int) -> None:
        nonlocal written
        append(src, lines(written, written + n))
        written += n

    grow(300)
    # the killed worker's tasks move after its session timeout (6 s, not Connect's 10) and
    # scheduled.rebalance.max.delay.ms (5 s)
    workers = [connect_factory(b.bootstrap, overrides=FAST_SESSION)]
    workers[0].put_connector("rb-in", source(src, "rb-lines"))
    workers[0].wait_running("rb-in")
    for rnd in range(3):
        current = workers[-1]
        grow(300)
        wait_until(lambda: committed_position(current, "rb-in") > 0, 60, what="a commit", interval=0.3)
        before = committed_position(current, "rb-in")
        joining = connect_factory(b.bootstrap, overrides=FAST_SESSION)  # the join starts the rebalance
        time.sleep(0.2 * rnd)
        current.kill()
        # where the killed task's writes end: past this, every record is the survivor's
        dead_end = end_offsets(b.bootstrap, "rb-lines", range(partition_counts(b.bootstrap)["rb-lines"]),
                               "read_uncommitted")
        grow(300)
        joining.wait_running("rb-in", timeout=120)
        size = src.stat().st_size
        wait_until(lambda: committed_position(joining, "rb-in") == size, 120,
                   what=f"round {rnd}: caught up to {size} (at {joining.offsets('rb-in')})", interval=0.3)
        after = committed_position(joining, "rb-in")
        assert after >= before, f"round {rnd}: committed offset went back from {before} to {after}"
        workers.append(joining)
        records = wait_for_records(b.bootstrap, "rb-lines", written)
        want = lines(0, written)
        assert set(values(records)) == set(want), f"round {rnd}: lost {sorted(set(want) - set(values(records)))[:5]}"
        committed_lines = len(src.read_bytes()[:before].splitlines())
        prefix = set(want[:committed_lines])
        again = [v for v in values(m for m in records if m.offset() >= dead_end[m.partition()]) if v in prefix]
        assert not again, (f"round {rnd}: the survivor read again {len(again)} lines the commit before the "
                           f"kill covered (up to line {committed_lines - 1}), from {again[0]}")
