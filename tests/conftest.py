"""Shared fixtures: a fresh broker per test, and the client tools integration tests rely on.

- ``broker``: a started ``BrokerProcess`` with default settings and its own temp data dir.
- ``broker_factory(overrides=None, **kwargs)``: start more brokers, or brokers with config
  overrides (``{"log.message.timestamp.type": "LogAppendTime"}``); kwargs go to
  ``BrokerProcess`` (``config=``, ``ready_timeout=``, ...).
- ``kafka_factory(overrides=None, **kwargs)``: start an Apache Kafka node (the oracle, from the
  jars ``make jvm`` resolved; ``tests/helpers/kafka_oracle.py``) with Kafka config overrides;
  stopped at teardown, its log attached to a failing test's report.
- ``client_tools``: kcat, java, javac and the kafka-clients jars are present and the Java harness
  compiles. Missing tools fail the tests that need them (run ``make deps jars``); they are never
  skipped.

Every broker a test started is SIGTERMed at teardown and must exit 0; a broker that died
on its own during the test fails it. When a test fails, the log of each of its brokers is
attached to the report.

``$HOURGLASS_TEST_BROKER_CMD`` replaces ``python -m broker`` as the command prefix (see
``tests/helpers/broker.py``).
"""
from __future__ import annotations

import shutil

import pytest

from tests.helpers.broker import BrokerProcess
from tests.helpers.java import ensure_compiled, missing_jars
from tests.helpers.kafka_oracle import KafkaProcess

_BROKERS = pytest.StashKey[list]()
_KAFKAS = pytest.StashKey[list]()


@pytest.fixture(scope="session")
def client_tools() -> None:
    problems = [f"`{t}` not on PATH" for t in ("kcat", "java", "javac") if shutil.which(t) is None]
    problems += [f"missing jar {j}" for j in missing_jars()]
    if problems:
        pytest.fail("integration test tools missing (run `make deps jars java-harness`): "
                    + "; ".join(problems), pytrace=False)
    try:
        ensure_compiled()
    except Exception as exc:  # a compile error must be seen, not skipped
        pytest.fail(f"Java harness does not compile: {exc}\n{getattr(exc, 'stderr', '')}", pytrace=False)


def _process_factory(request, tmp_path_factory, key, cls, clean_exits):
    """Yields ``make(overrides=None, **kwargs)`` starting ``cls`` processes on fresh data dirs;
    at teardown each is stopped, and one that died during the test or exited otherwise than in
    ``clean_exits`` on SIGTERM fails the test with its log."""
    started = []
    request.node.stash[key] = started

    def make(overrides=None, **kwargs):
        p = cls(tmp_path_factory.mktemp(cls.kind) / "data", overrides, **kwargs)
        started.append(p)
        return p.start()

    yield make

    problems = []
    for p in started:
        if p.proc is not None and p.proc.poll() is not None:
            rc = p.stop()
            problems.append(f"{p.kind} {p.data_dir} died during the test (exit {rc})\n{p.log_tail()}")
        elif p.running:
            rc = p.stop()
            if rc not in clean_exits:
                problems.append(f"{p.kind} {p.data_dir} exited {rc} on SIGTERM\n{p.log_tail()}")
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


@pytest.fixture
def broker_factory(request, tmp_path_factory, client_tools):
    yield from _process_factory(request, tmp_path_factory, _BROKERS, BrokerProcess, (0,))


@pytest.fixture
def broker(broker_factory) -> BrokerProcess:
    return broker_factory()


@pytest.fixture
def kafka_factory(request, tmp_path_factory):
    # 143: the JVM's exit status after its SIGTERM shutdown hooks ran
    yield from _process_factory(request, tmp_path_factory, _KAFKAS, KafkaProcess, (0, 143))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Modules that share one broker or Spark across their tests mark themselves
    ``xdist_group``; under ``--dist loadgroup`` xdist keeps each group on one worker by a suffix
    on the node id. A pytest that ignores it would split them silently: refuse to run instead."""
    if not config.pluginmanager.hasplugin("xdist") or not getattr(config.option, "loadgroup", False):
        return
    lost = [i.nodeid for i in items if i.get_closest_marker("xdist_group") and "@" not in i.nodeid]
    if lost:
        raise pytest.UsageError(f"xdist_group marks are being ignored (pytest {pytest.__version__} with this "
                                f"pytest-xdist), e.g. {lost[0]}: install the pinned versions (make venv)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and report.when in ("call", "setup"):
        for i, b in enumerate(item.stash.get(_BROKERS, [])):
            report.sections.append((f"broker {i} log", b.log_tail(20000)))
        for i, k in enumerate(item.stash.get(_KAFKAS, [])):
            report.sections.append((f"kafka {i} log", k.log_tail(20000)))


def pytest_sessionstart(session):
    from tests.differential.framework import clear_parts
    clear_parts(session.config)


def pytest_sessionfinish(session):
    # the differential report's parts (one per xdist worker) merged by the controlling process
    from tests.differential.framework import merge_parts
    merge_parts(session.config)
