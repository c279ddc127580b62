"""Consumer groups keep their guarantees on a busy machine: the KIP-848 and classic churn
scenarios of test_consumer_protocol (join, leave, broker restart, kill -9, online upgrade and
downgrade) run again with two busy loops beside the broker (each takes a core of this 2-core
box, as two other test runs or a build would), with their assertions unchanged: exactly once,
only the partitions that must move, no new epoch across a restart.

The broker's event-loop lag (``/metrics``) over the run is reported, and a classic group keeps
its members' assignments across a restart and a kill -9 as the consumer group does.
"""
from __future__ import annotations

import re
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.integration import test_consumer_protocol as cp
from tests.helpers.clients import wait_until


@pytest.fixture
def busy_loops():
    """Two processes spinning on the CPU for the test's duration (stopped by their handles)."""
    procs = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(2)]
    yield procs
    for p in procs:
        p.kill()
        p.wait()


def _loop_lag(b) -> str:
    url = re.findall(r"metrics on (http://\S+)/metrics", b.log_text())[-1]  # a restart binds a new port
    body = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    return ", ".join(l for l in body.splitlines() if l.startswith("hourglass_event_loop_"))


# five scenarios of up to a few JVMs each, on a machine kept busy on purpose (the suite's
# 120 s per test is for one scenario)
@pytest.mark.timeout(900)
def test_consumer_group_churn_under_load(broker_factory, busy_loops, record_property):
    b = broker_factory({**cp.OVERRIDES, "metrics.port": 0})
    started = time.monotonic()
    cp.test_confluent_members_split_join_leave_exactly_once(b)
    cp.test_java_members_join_and_leave_moving_only_what_must_move(b)
    cp.test_classic_group_upgrades_and_downgrades_online_without_loss_or_duplicate(b)
    cp.test_broker_restart_and_kill9_keep_assignments(b)
    _classic_group_keeps_assignments_across_restart_and_kill9(b)
    record_property("loop_lag", _loop_lag(b))
    record_property("seconds", round(time.monotonic() - started))
    assert all(p.poll() is None for p in busy_loops), "the busy loops ran throughout"


def _classic_group_keeps_assignments_across_restart_and_kill9(kbroker):
    b = kbroker.bootstrap
    topic, group = cp._name("t"), cp._name("g")
    cp.create_topic(b, topic)
    members = [cp.JavaMember(b, group, topic, protocol="classic") for _ in range(2)]
    try:
        wait_until(lambda: cp.disjoint_cover(members, topic) and all(m.assigned() for m in members), timeout=60,
                   what="classic group balanced")
        owned = [m.assigned() for m in members]
        changes = [sum(1 for l in m.proc.lines if "assigned" in l) for m in members]
        for how in ("restart", "kill"):
            if how == "restart":
                kbroker.restart()
            else:
                kbroker.kill()
                kbroker.start()
            assert cp.group_type(kbroker.bootstrap, group) == "classic"
            time.sleep(3 * cp.HEARTBEAT_MS / 1000)  # members reconnect and heartbeat in their generation
            assert [m.assigned() for m in members] == owned
        # no member was asked to rejoin: no revocation or assignment callback ran
        assert [sum(1 for l in m.proc.lines if "assigned" in l) for m in members] == changes
    finally:
        for m in members:
            if m.proc.proc.poll() is None:
                m.stop()
