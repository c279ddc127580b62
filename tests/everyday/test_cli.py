"""The ``hourglass`` command line end to end against a live broker (run as a user would)."""
from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from datetime import datetime, timezone

from tests.helpers.clients import wait_until

BASE = (int(time.time()) - 3600) * 1000  # an hour ago: inside the default retention


def hg(*args, input: bytes | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "broker", *map(str, args)], input=input,
                          capture_output=True, timeout=timeout)


def _topic(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def test_produce_then_consume_with_formats(broker):
    topic = _topic("cli")
    lines = b"".join(b"%d|k%d:v%d\n" % (BASE + 1000 * i, i, i) for i in range(5))
    r = hg("produce", topic, "-b", broker.bootstrap, "-p", 0, "-T", "|", "-K", ":", "-H", "src=cli", input=lines)
    assert r.returncode == 0, r.stderr.decode()
    r = hg("consume", topic, "-b", broker.bootstrap, "--from-beginning", "-e", "-f", "%p %o %T %k=%v %h\\n")
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode().splitlines() == [f"0 {i} {BASE + 1000 * i} k{i}=v{i} src=cli" for i in range(5)]
    # -c stops after N records; --at starts at the first record with timestamp >= the time
    r = hg("consume", topic, "-b", broker.bootstrap, "--at", BASE + 2500, "-c", 1, "-f", "%o\\n")
    assert r.stdout == b"3\n", r.stderr.decode()


def test_offsets_at_time_iso_and_epoch(broker):
    topic = _topic("offsets")
    lines = b"".join(b"%d|v%d\n" % (BASE + 1000 * i, i) for i in range(10))
    assert hg("produce", topic, "-b", broker.bootstrap, "-p", 0, "-T", "|", input=lines).returncode == 0
    iso = datetime.fromtimestamp((BASE + 4500) / 1000, timezone.utc).isoformat().replace("+00:00", "Z")
    for at, want in [(iso, 5), (BASE, 0), (BASE + 9000, 9), (BASE + 9001, -1), ("earliest", 0), ("latest", 10)]:
        r = hg("offsets", topic, "-b", broker.bootstrap, "--at", at, "--json")
        assert r.returncode == 0, r.stderr.decode()
        assert json.loads(r.stdout)["offsets"] == {"0": want}, at
    r = hg("offsets", topic, "-b", broker.bootstrap, "--at", BASE + 9001)
    assert "no record at or after this time" in r.stdout.decode()
    r = hg("offsets", topic, "-b", broker.bootstrap, "--at", "yesterday-ish")
    assert r.returncode == 2 and b"ISO-8601" in r.stderr


def test_unknown_topic_and_unreachable_broker_exit_1(broker):
    r = hg("offsets", "no-such-topic", "-b", broker.bootstrap, "--at", "latest", "--timeout", 3)
    assert r.returncode == 1 and b"not found" in r.stderr
    r = hg("consume", "t", "-b", "127.0.0.1:1", "--timeout", 2, "-e", timeout=60)
    assert r.returncode == 1


def test_topics_commands_are_wired(broker):
    topic = _topic("admin")
    r = hg("topics", "create", topic, "--partitions", 2, "--config", "retention.ms=60000",
           "--bootstrap-server", broker.bootstrap)
    assert r.returncode == 0, r.stderr.decode()
    r = hg("topics", "list", "--bootstrap-server", broker.bootstrap)
    assert topic in r.stdout.decode().split()


def _produce_segments(broker, topic, n_batches=12):
    """Small segments; one out-of-order CreateTime record in the middle."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    stamps = []
    for i in range(n_batches):
        ts = BASE + 1000 * i if i != 6 else BASE + 500  # offset 6 goes back in time
        stamps.append(ts)
        p.produce(topic, value=b"x" * 300, key=b"k%d" % i, partition=0, timestamp=ts)
        p.flush(10)
    return stamps


def test_inspect_lists_segments_with_counts_and_time_ranges(broker_factory):
    b = broker_factory({"log.segment.bytes": 1024, "log.index.interval.bytes": 1, "num.partitions": 1})
    topic = _topic("inspect")
    stamps = _produce_segments(b, topic)
    r = hg("inspect", topic, "--data-dir", b.data_dir, "--json")
    assert r.returncode == 0, r.stderr.decode()
    view = json.loads(r.stdout)
    (p,) = view["partitions"]
    assert (p["log_start_offset"], p["log_end_offset"]) == (0, len(stamps))
    segs = p["segments"]
    assert len(segs) > 2
    assert sum(s["records"] for s in segs) == len(stamps)
    for s in segs:
        mine = stamps[s["base_offset"]:s["next_offset"]]
        assert s["records"] == len(mine)
        if mine:
            assert (s["min_timestamp"], s["max_timestamp"]) == (min(mine), max(mine))
    assert [tuple(x) for s in segs for x in s["out_of_order"]] == [(6, BASE + 500)]
    assert all(s["time_index"] for s in segs if s["records"])
    text = hg("inspect", topic, "--data-dir", b.data_dir).stdout.decode()
    assert "log start offset 0, last stable offset 12, log end offset 12" in text and "retention: next time cut removes segment 0" in text


def test_inspect_plot_svg_has_one_box_per_segment_and_the_retention_horizon(broker_factory, tmp_path):
    b = broker_factory({"log.segment.bytes": 1024, "log.index.interval.bytes": 1, "num.partitions": 1})
    topic = _topic("plot")
    _produce_segments(b, topic)
    svg = tmp_path / "t.svg"
    r = hg("inspect", topic, "--data-dir", b.data_dir, "--plot", svg, "--json")
    assert r.returncode == 0, r.stderr.decode()
    segs = json.loads(r.stdout)["partitions"][0]["segments"]
    text = svg.read_text()
    for s in segs:
        if s["records"]:
            assert text.count(f'id="segment-0-{s["base_offset"]}"') == 1
    assert text.count('id="retention-horizon"') == 1
    assert 'id="out-of-order-0"' in text and 'id="timeindex-0"' in text
    html = tmp_path / "t.html"
    assert hg("inspect", topic, "--data-dir", b.data_dir, "--plot", html).returncode == 0
    assert html.read_text().startswith("<!doctype html>") and "<svg" in html.read_text()


def test_inspect_shows_last_stable_offset_and_open_transactions(broker):
    """inspect replays the transactional state from the files: one committed, one aborted and
    one open transaction leave the LSO at the open one's first offset."""
    from tests.helpers.txn import create_topic, txn_producer
    topic = _topic("inspect-txn")
    create_topic(broker.bootstrap, topic, 1)
    done = txn_producer(broker.bootstrap, f"{topic}-a")
    for commit in (True, False):
        done.begin_transaction()
        done.produce(topic, b"x", partition=0)
        done.produce(topic, b"y", partition=0)
        assert done.flush(10) == 0   # sent: an abort must not just purge them client-side
        (done.commit_transaction if commit else done.abort_transaction)(30)
    # offsets 0-1 committed, 2 COMMIT, 3-4 aborted, 5 ABORT; then an open one from offset 6
    hanging = txn_producer(broker.bootstrap, f"{topic}-b")
    hanging.begin_transaction()
    hanging.produce(topic, b"open", partition=0)
    assert hanging.flush(10) == 0
    r = hg("inspect", topic, "--data-dir", broker.data_dir, "--json")
    assert r.returncode == 0, r.stderr.decode()
    (p,) = json.loads(r.stdout)["partitions"]
    assert (p["last_stable_offset"], p["log_end_offset"], p["aborted_transactions"]) == (6, 7, 1)
    assert [first for _pid, first in p["open_transactions"]] == [6]
    text = hg("inspect", topic, "--data-dir", broker.data_dir).stdout.decode()
    assert "last stable offset 6" in text and "transactions: 1 open (producer " in text
    hanging.abort_transaction(30)


def test_logging_follows_stderr_after_an_in_process_main(monkeypatch, capsys):
    """``main`` run in-process (tests, embedding) sets up logging while stderr is a stand-in
    that is later closed; a broker thread logging afterwards must reach the stderr of that
    moment, not the closed stand-in ("Logging error: I/O operation on closed file")."""
    import io
    import logging
    from hourglass.cli.main import setup_logging
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", list(root.handlers))  # restored after the test
    monkeypatch.setattr(root, "level", root.level)
    monkeypatch.setattr(logging, "raiseExceptions", True)
    real = sys.stderr
    stand_in = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stand_in)
    setup_logging("INFO")
    logging.getLogger("hourglass.test").info("while the stand-in is stderr")
    assert "while the stand-in is stderr" in stand_in.getvalue()
    stand_in.close()
    monkeypatch.setattr(sys, "stderr", real)
    logging.getLogger("hourglass.test").warning("after the stand-in closed")
    err = capsys.readouterr().err
    assert "after the stand-in closed" in err and "Logging error" not in err
