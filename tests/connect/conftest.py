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


@pytest.fixture
def connect_factory(request, tmp_path_factory, client_tools):
    started: list = []
    request.node.stash[_JVMS] = started

    def make(bootstrap: str, **kwargs) -> ConnectWorker:
        w = ConnectWorker(tmp_path_factory.mktemp("connect"), bootstrap, **kwargs)
        started.append(w)
        return w.start()

    yield make
    for w in started:
        if w.running:
            w.stop()


@pytest.fixture
def mirror_factory(request, tmp_path_factory):
    started = request.node.stash.setdefault(_JVMS, [])

    def make(config, **kwargs) -> MirrorMakerProcess:
        m = MirrorMakerProcess(tmp_path_factory.mktemp("mm2"), config, **kwargs)
        started.append(m)
        return m.start()

    yield make
    for m in started:
        if m.running:
            m.stop()


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
