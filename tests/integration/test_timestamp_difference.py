"""The seeds' timestamp-difference check (KIP-32): ``log.message.timestamp.difference.max.ms``
in server.properties and ``message.timestamp.difference.max.ms`` on a topic, honoured as Kafka
3.9 honoured them (Kafka 4 removed and ignores them): both sides bounded unless
``*.before.max.ms``/``*.after.max.ms`` is set, with a deprecation warning naming the Kafka 4
keys. A record stamped an hour ago is refused with INVALID_TIMESTAMP."""
from __future__ import annotations

import time

from hourglass.cli.wire import WireClient
from protocol.errors import ErrorCode as E
from tests.differential.framework import req
from tests.differential.wire import batch, produce
from tests.helpers.broker import BrokerProcess

HOUR = 3_600_000


def _create(c, name, configs=None):
    r = c.request(19, 7, req(19, topics=[{"name": name, "num_partitions": 1, "replication_factor": 1,
                                          "assignments": [], "configs": [{"name": k, "value": v}
                                                                         for k, v in (configs or {}).items()]}],
                             timeout_ms=30000))
    return r.topics[0]


def _produce(c, topic, ts) -> int:
    r = c.request(0, 9, produce(topic, {0: batch([ts])}, 9))
    return r.responses[0].partition_responses[0].error_code


def test_broker_key_bounds_both_sides_with_a_deprecation_warning(tmp_path):
    conf = tmp_path / "server.properties"
    conf.write_text("log.message.timestamp.difference.max.ms=60000\n")
    b = BrokerProcess(tmp_path / "data", config=conf).start()
    try:
        with WireClient(b.bootstrap) as c:
            assert _create(c, "t").error_code == 0
            now = int(time.time() * 1000)
            assert _produce(c, "t", now - HOUR) == E.INVALID_TIMESTAMP          # an hour old
            assert _produce(c, "t", now + 10 * 60_000) == E.INVALID_TIMESTAMP   # ten minutes ahead
            assert _produce(c, "t", now - 30_000) == 0
            # a topic's own after.max.ms takes that side back; the difference still bounds before
            assert _create(c, "a", {"message.timestamp.after.max.ms": str(2 * HOUR)}).error_code == 0
            assert _produce(c, "a", now + HOUR) == 0
            assert _produce(c, "a", now - HOUR) == E.INVALID_TIMESTAMP
        warn = [l for l in b.log_tail(20000).splitlines()
                if "WARNING" in l and "'log.message.timestamp.difference.max.ms'" in l]
        assert len(warn) == 1, b.log_tail()
        assert ("log.message.timestamp.before.max.ms" in warn[0]
                and "log.message.timestamp.after.max.ms" in warn[0] and "deprecated" in warn[0])
    finally:
        b.kill()


def test_topic_key_accepted_honoured_and_kept_across_a_restart(tmp_path):
    b = BrokerProcess(tmp_path / "data").start()
    try:
        with WireClient(b.bootstrap) as c:
            t = _create(c, "t", {"message.timestamp.difference.max.ms": "60000"})
            assert t.error_code == 0, t
            assert _create(c, "bad", {"message.timestamp.difference.max.ms": "-1"}).error_code == E.INVALID_CONFIG
            now = int(time.time() * 1000)
            assert _produce(c, "t", now - HOUR) == E.INVALID_TIMESTAMP
            assert _produce(c, "t", now - 1000) == 0
            r = c.request(32, 4, req(32, 4, resources=[{"resource_type": 2, "resource_name": "t",
                                                        "configuration_keys": None}],
                                     include_synonyms=False, include_documentation=False))
            shown = {x.name: x.value for x in r.results[0].configs}
            assert shown["message.timestamp.difference.max.ms"] == "60000"
        b.kill()
        b.start()
        with WireClient(b.bootstrap) as c:
            assert _produce(c, "t", int(time.time() * 1000) - HOUR) == E.INVALID_TIMESTAMP
        assert "topic t: The configuration 'message.timestamp.difference.max.ms' is deprecated" in b.log_tail(20000)
    finally:
        b.kill()
