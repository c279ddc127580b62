"""The oracle itself: Apache Kafka starts from the Maven-resolved jars, answers on its port,
survives a restart with its data, and is the version tests/jvm/pom.xml names."""
from __future__ import annotations

from hourglass.cli.wire import WireClient
from protocol.api_keys import APIS
from tests.helpers import jvm


def _api_versions(bootstrap: str):
    with WireClient(bootstrap) as c:
        return c.request(18, 3, APIS[18].request.cls(client_software_name="hourglass-tests",
                                                     client_software_version="0"))


def test_kafka_oracle_starts_answers_and_restarts(kafka_factory):
    k = kafka_factory()
    r = _api_versions(k.bootstrap)
    assert r.error_code == 0
    keys = {a.api_key for a in r.api_keys}
    assert {0, 1, 3, 18, 68} <= keys  # Produce, Fetch, Metadata, ApiVersions, ConsumerGroupHeartbeat
    assert (k.data_dir / "meta.properties").read_text().count(f"cluster.id={k.cluster_id}") == 1
    version = jvm.version("kafka")
    assert (jvm.libs(f"kafka-{version}") / f"kafka_2.13-{version}.jar").is_file()
    port = k.port
    k.restart()
    assert k.port == port
    assert _api_versions(k.bootstrap).error_code == 0
