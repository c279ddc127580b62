"""A user quota on an authenticated (SASL/SCRAM) user: the user's producer is throttled under
its own name, through the user entity, while the <default> user quota is not what applies."""
from __future__ import annotations

import time

import confluent_kafka as ck

from hourglass.cli.wire import WireClient
from hourglass.embedded import EmbeddedBroker
from protocol.messages.alter_client_quotas import AlterClientQuotasRequest as AQ


def test_sasl_user_quota_throttles_that_user():
    with EmbeddedBroker(security="SASL_PLAINTEXT") as b:
        bootstrap = b.client_config["bootstrap.servers"]
        with WireClient(bootstrap, props=b.java_properties) as c:
            r = c.request(49, 1, AQ(entries=[
                AQ.EntryData(entity=[AQ.EntityData(entity_type="user", entity_name="alice")],
                             ops=[AQ.OpData(key="producer_byte_rate", value=20_000.0, remove=False)]),
                AQ.EntryData(entity=[AQ.EntityData(entity_type="user", entity_name=None)],
                             ops=[AQ.OpData(key="producer_byte_rate", value=1e12, remove=False)])],
                validate_only=False))
            assert [e.error_code for e in r.entries] == [0, 0]
        throttles = []
        p = ck.Producer({**b.client_config, "linger.ms": 5, "throttle_cb": throttles.append})
        for _ in range(600):  # 600 KB against 20 KB/s over a padded 10 s window (200 KB)
            p.produce("uq", b"x" * 1000)
            p.poll(0)
        p.flush(30)
        deadline = time.monotonic() + 5
        while not throttles and time.monotonic() < deadline:
            p.poll(0.1)
        assert throttles and max(t.throttle_time for t in throttles) > 0
        sensors = b.broker.quotas.produce.sensors
        assert ("alice", "") in sensors and sensors[("alice", "")].bound == 20_000.0
        assert sensors[("alice", "")].throttle_count > 0
