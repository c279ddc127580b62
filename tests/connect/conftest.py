"""Fixtures for Kafka Connect, MirrorMaker 2 and Debezium against Hourglass.

- ``connect_factory(bootstrap, **kwargs)``: start a distributed Connect worker
  (``tests.helpers.connect.ConnectWorker``); every worker is stopped at teardown and its log
  attached to a failing test's report.
- ``mirror_factory(config)``: MirrorMaker 2 in dedicated mode, same teardown.
- ``kafka_node``: one Apache Kafka node (the oracle) shared by the tests of an xdist worker
  (session scope: pytest would restart a module-scoped one whenever another module's test ran
  in between); each test uses its own topics and groups on it.

JVM processes are expensive on two cores: modules that share a ``kafka_node`` or a PostgreSQL
cluster keep their tests on one xdist worker (``xdist_group``).
"""
from __future__ import annotations

import pytest

from tests.helpers.connect import ConnectWorker, MirrorMakerProcess
from tests.helpers.kafka_oracle import KafkaProcess

_JVMS = pytest.StashKey[list]()


def _jvm_factory(request, new):
    """``make(*args, **kwargs)``: ``new(*args, **kwargs)`` started; each one stopped at teardown
    and its log attached to a failing test's report."""
    reported = request.node.stash.setdefault(_JVMS, [])
    started: list = []

    def make(*args, **kwargs):
        p = new(*args, **kwargs)
        started.append(p)
        reported.append(p)
        return p.start()

    yield make
    for p in started:
        if p.running:
            p.stop()


@pytest.fixture
def connect_factory(request, tmp_path_factory, client_tools):
    yield from _jvm_factory(request, lambda bootstrap, **kwargs: ConnectWorker(
        tmp_path_factory.mktemp("connect"), bootstrap, **kwargs))


@pytest.fixture
def mirror_factory(request, tmp_path_factory):
    yield from _jvm_factory(request, lambda config, **kwargs: MirrorMakerProcess(
        tmp_path_factory.mktemp("mm2"), config, **kwargs))


@pytest.fixture(scope="session")
def kafka_node(tmp_path_factory):
    k = KafkaProcess(tmp_path_factory.mktemp("kafka") / "data")
    k.start()
    yield k
    k.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and report.when in ("call", "setup"):
        for i, p in enumerate(item.stash.get(_JVMS, [])):
            report.sections.append((f"{p.name} {i} log", p.log_tail(30000)))
        k = item.funcargs.get("kafka_node") if hasattr(item, "funcargs") else None
        if k is not None:
            report.sections.append(("kafka_node log", k.log_tail(10000)))
