"""The Prometheus endpoint, scraped from a live broker and parsed with the Prometheus parser."""
from __future__ import annotations

import re
import socket
import struct
import time
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from tests.helpers.clients import wait_until


def _metrics_url(b) -> str:
    wait_until(lambda: "metrics on http://" in b.log_text(), timeout=10, what="metrics endpoint log line")
    return re.search(r"metrics on (http://\S+)/metrics", b.log_text()).group(1)


def _scrape(url) -> dict:
    text = urllib.request.urlopen(url + "/metrics", timeout=5).read().decode()
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_metrics_follow_what_clients_do(broker_factory):
    from confluent_kafka import Consumer, Producer, TopicPartition
    b = broker_factory({"metrics.port": 0, "log.segment.bytes": 2048})
    url = _metrics_url(b)
    assert urllib.request.urlopen(url + "/health", timeout=5).read() == b"ok\n"

    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0})
    for i in range(30):
        p.produce("m", value=b"v" * 100, key=b"k%d" % i, partition=0)
        p.flush(10)
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "metrics-g"})
    c.assign([TopicPartition("m", 0, 0)])
    got = 0
    deadline = time.monotonic() + 10
    while got < 30 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got += 1
    c.close()
    assert got == 30

    m = _scrape(url)
    t = (("topic", "m"),)
    assert m[("hourglass_topic_records_in_total", t)] == 30
    assert m[("hourglass_topic_records_out_total", t)] >= 30
    assert m[("hourglass_topic_bytes_in_total", t)] > 30 * 100
    tp = (("partition", "0"), ("topic", "m"))
    assert m[("hourglass_log_end_offset", tp)] == 30
    assert m[("hourglass_log_start_offset", tp)] == 0
    assert m[("hourglass_log_segments", tp)] > 1
    assert m[("hourglass_segments_rolled_total", ())] >= m[("hourglass_log_segments", tp)] - 1
    produce_requests = sum(v for (name, labels), v in m.items()
                           if name == "hourglass_requests_total" and dict(labels)["api"] == "Produce")
    assert produce_requests >= 30
    assert m[("hourglass_request_latency_seconds_count", (("api", "Produce"),))] >= 30
    assert m[("hourglass_connections_open", ())] >= 0
    try:
        urllib.request.urlopen(url + "/nope", timeout=5)
        raise AssertionError("expected 404")
    except urllib.error.HTTPError as e:
        assert e.code == 404


def test_rejected_requests_are_counted_and_logged_once(broker_factory):
    """Two connections sending an unknown API key: both closed, both counted, one log line."""
    b = broker_factory({"metrics.port": 0})
    url = _metrics_url(b)
    host, port = b.bootstrap.rsplit(":", 1)
    for _ in range(2):
        with socket.create_connection((host, int(port)), timeout=5) as s:
            body = struct.pack(">hhi", 999, 0, 7) + struct.pack(">h", 4) + b"evil"
            s.sendall(struct.pack(">i", len(body)) + body)
            assert s.recv(10) == b""  # closed, no answer
    wait_until(lambda: _scrape(url).get(("hourglass_rejected_connections_total", (("reason", "unknown_api"),))) == 2,
               timeout=10, what="two rejections counted")
    assert b.log_text().count("unknown API key 999") == 1


def test_event_loop_lag_shows_in_metrics_and_log(broker_factory):
    """A broker kept off the CPU for 2 s (SIGSTOP, as a starved container would be) reports an
    event loop at least that late in /metrics and says in its log that it was not our code."""
    import os
    import signal
    b = broker_factory({"metrics.port": 0})
    url = _metrics_url(b)
    wait_until(lambda: ("hourglass_event_loop_lag_max_seconds", ()) in _scrape(url), timeout=10,
               what="the loop lag gauge")
    os.kill(b.proc.pid, signal.SIGSTOP)
    try:
        time.sleep(2.0)
    finally:
        os.kill(b.proc.pid, signal.SIGCONT)
    m = _scrape(url)
    assert m[("hourglass_event_loop_lag_max_seconds", ())] >= 1.5
    assert m[("hourglass_event_loop_stalls_total", ())] >= 1
    assert m[("hourglass_event_loop_longest_callback_seconds", ())] >= 0
    wait_until(lambda: "event loop stalled" in b.log_text(), timeout=10, what="the stall logged")
    line = next(l for l in b.log_text().splitlines() if "event loop stalled" in l)
    assert "kept off the CPU" in line, line


def test_loop_lag_probe_keeps_the_last_minute():
    """The probe's window: per-second maxima of the last 60 s; a stall's cause is told by the
    CPU the loop thread used meanwhile."""
    from broker.loop_lag import LoopLagProbe
    p = LoopLagProbe(clock=lambda: 0.0)
    p.record(100.2, 0.01, 0.01)
    p.record(100.7, 2.5, 2.4)  # a callback of ours ran 2.4 s
    p.record(130.0, 0.05, 0.05)
    assert p.max_lag(130.0) == 2.5 and p.max_busy(130.0) == 2.4 and p.last_lag == 0.05
    assert p.max_lag(160.9) == 0.05  # the 2.5 s stall is over a minute old
    p.record(161.0, 0.0, 0.0)
    assert p.max_lag(161.0) == 0.05 and p.stalls == 1
