"""The Hourglass pytest plugin (registered as the ``hourglass`` pytest11 entry point).

Fixtures:

- ``hourglass_broker``: a fresh broker per test (an ``EmbeddedBroker``; use
  ``.bootstrap_servers``), with config overrides from the marker
  ``@pytest.mark.hourglass(overrides={"log.message.timestamp.type": "LogAppendTime"})``
  and, optionally, ``mode="subprocess"``;
- ``hourglass_broker_session``: one broker shared by the whole session.

Both shut the broker down cleanly at teardown and remove its temporary data dir.
"""
from __future__ import annotations

import pytest

from hourglass.embedded import EmbeddedBroker


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "hourglass(overrides=None, mode='thread'): config overrides for the hourglass_broker fixture")


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
