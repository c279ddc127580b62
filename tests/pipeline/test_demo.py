"""The demo producer writes JSON events whose CreateTime is their event time, some late."""
import json
import subprocess
import sys
import time


def test_demo_produces_events_with_out_of_order_event_times(broker):
    from confluent_kafka import Consumer, TopicPartition
    r = subprocess.run([sys.executable, "-m", "pipeline.demo", "produce", "--bootstrap", broker.bootstrap,
                        "--topic", "demo", "--rate", "0", "--count", "200", "--skew", "30", "--seed", "7"],
                       capture_output=True, timeout=60)
    assert r.returncode == 0 and b"produced 200 event(s)" in r.stdout, r.stderr
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "demo-check"})
    c.assign([TopicPartition("demo", 0, 0)])
    got, deadline = [], time.monotonic() + 20
    while len(got) < 200 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m)
    c.close()
    assert len(got) == 200
    evs = [json.loads(m.value()) for m in got]
    assert [m.timestamp()[1] for m in got] == [e["ts"] for e in evs]
    late = sum(1 for a, b in zip(evs, evs[1:]) if b["ts"] < a["ts"])
    assert 5 <= late <= 60 and {e["kind"] for e in evs} <= {"click", "view", "buy"}
