"""``max.connections.per.ip.overrides`` changed at run time (issue 44): its host names are
resolved by blocking DNS calls (Kafka's ``InetAddress.getByName``), so the broker resolves them
in a worker thread (``broker.dynamic_config.refresh_per_ip_limits``), never on the event loop,
and the new limit applies once resolved: a real host name (``localhost``) through
IncrementalAlterConfigs limits the connections from its address, deleting the key lifts it, and
a newer value is not undone by an older look-up finishing after it.
"""
from __future__ import annotations

import time

from hourglass.embedded import EmbeddedBroker
from tests.differential.framework import req
from tests.helpers.raw import RawClient


def _set(c: RawClient, value: str | None) -> None:
    op = 0 if value is not None else 1  # SET, DELETE
    r = c.request(44, 1, req(44, 1, resources=[{"resource_type": 4, "resource_name": "1", "configs": [
        {"name": "max.connections.per.ip.overrides", "config_operation": op, "value": value}]}], validate_only=False))
    assert [x.error_code for x in r.responses] == [0], r


def _until(cond, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_a_host_name_override_is_resolved_off_the_loop_and_applied():
    with EmbeddedBroker({}) as b:
        c = RawClient(b.bootstrap_servers)
        _set(c, "localhost:2")
        # resolved in a worker thread: applied once done (the answer did not wait for it)
        _until(lambda: b.broker.per_ip_limits == {"127.0.0.1": 2}, "localhost's override applied")
        second = RawClient(b.bootstrap_servers)
        third = RawClient(b.bootstrap_servers)  # c and second are the two allowed from 127.0.0.1
        assert third.is_closed_by_peer(10)
        assert not second.is_closed_by_peer(0.2)
        for x in (second, third):
            x.close()
        _set(c, None)
        _until(lambda: b.broker.per_ip_limits == {}, "the override removed")
        # a newer value wins over a look-up still under way for an older one
        _set(c, "localhost:2")
        _set(c, "127.0.0.2:7")  # addresses only: applied at once
        assert b.broker.per_ip_limits == {"127.0.0.2": 7}
        _until(lambda: b.broker.per_ip_limits_resolving.done(), "the look-up of localhost finished")
        assert b.broker.per_ip_limits == {"127.0.0.2": 7}
        _set(c, None)
        more = [RawClient(b.bootstrap_servers) for _ in range(3)]
        assert not any(x.is_closed_by_peer(0.2) for x in more)
        for x in [c, *more]:
            x.close()
