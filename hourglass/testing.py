"""The Hourglass pytest plugin (registered as the ``hourglass`` pytest11 entry point).

Fixtures:

- ``hourglass_broker``: a fresh broker per test (an ``EmbeddedBroker``; use
  ``.bootstrap_servers``), with config overrides from the marker
  ``@pytest.mark.hourglass(overrides={"log.message.timestamp.type": "LogAppendTime"})``
  and, optionally, ``mode="subprocess"``;
- ``hourglass_broker_session``: one broker shared by the whole session.

``@pytest.mark.hourglass(security="SASL_SSL")`` (or ``"SSL"`` for TLS with a client
certificate, ``"SASL_PLAINTEXT"``, or a dict such as ``{"protocol": "SASL_SSL", "mechanism":
"PLAIN", "acls": True}``) secures the broker with throwaway certificates and a user; the test
then takes ``hourglass_broker.client_config`` (confluent-kafka), ``.kafka_python_config`` or
``.aiokafka_config`` and is secured in one line.

``@pytest.mark.hourglass(schema_registry=True, console=True)`` also serves the Schema Registry
and the console on free ports (``hourglass_broker.schema_registry_url``, ``.console_url``).

Both shut the broker down cleanly at teardown and remove its temporary data dir.
"""
from __future__ import annotations

import pytest

from hourglass.embedded import EmbeddedBroker


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "hourglass(overrides=None, mode='thread', security=None, schema_registry=False, console=False): "
                   "config overrides, run mode, security protocol (SSL, SASL_SSL, SASL_PLAINTEXT) and HTTP services "
                   "(schema_registry_url, console_url) of the hourglass_broker fixture")


@pytest.fixture
def hourglass_broker(request):
    marker = request.node.get_closest_marker("hourglass")
    kwargs = dict(marker.kwargs) if marker is not None else {}
    with EmbeddedBroker(kwargs.pop("overrides", None), **kwargs) as b:
        yield b


@pytest.fixture(scope="session")
def hourglass_broker_session():
    with EmbeddedBroker() as b:
        yield b
