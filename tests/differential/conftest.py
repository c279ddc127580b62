"""Fixtures of the differential tests: one Apache Kafka node and one Hourglass broker shared
by the whole session (``pair``), a per-test ``ex`` (``framework.Exchange``) that sends each
request to both and compares, and the report ``test-output/differential.md``.

Every module here carries ``pytest.mark.xdist_group("differential")``, meant to keep them on
one xdist worker so the pair starts once; should the scheduler split them anyway, each worker
starts its own pair and writes its own part of the report, and the controlling process merges
the parts. A test with a difference the allowlist (``kept.py``) does not name fails in its
call phase, listing every such difference with its path.
"""
from __future__ import annotations

import pytest

from tests.differential.framework import Exchange, Pair, Report, UnexpectedDifferences, advertised, write_part
from tests.helpers.broker import BrokerProcess
from tests.helpers.kafka_oracle import KafkaProcess

# Settings both brokers run with (the rest are each broker's defaults, themselves compared).
COMMON = {
    "group.initial.rebalance.delay.ms": 0,
    "offsets.topic.replication.factor": 1,        # the oracle's one-node settings, on both
    "transaction.state.log.replication.factor": 1,
    "num.partitions": 1,
    "auto.create.topics.enable": "true",
}


@pytest.fixture(scope="session")
def differential_report(request):
    """The session's report; at its end written as this process's part, which the controlling
    process merges into ``test-output/differential.md`` (``tests/conftest.py``'s
    ``pytest_sessionfinish``: the one conftest xdist's controller always loads)."""
    report = Report()
    yield report
    write_part(request.config, report)


def start_pair(tmp_path_factory, kafka_overrides=None, hourglass_overrides=None, *, name="pair",
               kafka_listeners=None, kafka_classpath=()):
    base = tmp_path_factory.mktemp(name)
    kafka = KafkaProcess(base / "kafka" / "data", {**COMMON, **(kafka_overrides or {})}, listeners=kafka_listeners,
                         extra_classpath=kafka_classpath)
    hourglass = BrokerProcess(base / "hourglass" / "data", {**COMMON, **(hourglass_overrides or {})})
    try:
        kafka.start()
        hourglass.start()
    except Exception:
        kafka.kill()
        hourglass.kill()
        raise
    return Pair(kafka, hourglass, advertised(kafka.bootstrap), advertised(hourglass.bootstrap))


def stop_pair(pair: Pair) -> None:
    problems = []
    rc = pair.hourglass.stop()
    if rc != 0:
        problems.append(f"hourglass exited {rc} on SIGTERM\n{pair.hourglass.log_tail()}")
    rc = pair.kafka.stop()
    if rc not in (0, 143):
        problems.append(f"kafka exited {rc} on SIGTERM\n{pair.kafka.log_tail()}")
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


@pytest.fixture(scope="session")
def pair(tmp_path_factory):
    p = start_pair(tmp_path_factory)
    yield p
    stop_pair(p)


def make_exchange(request, pair, report):
    ex = Exchange(pair, report, request.node.name)
    request.node.stash[_EX] = ex
    return ex


_EX = pytest.StashKey[Exchange]()


@pytest.fixture
def ex(request, pair, differential_report):
    e = make_exchange(request, pair, differential_report)
    yield e
    e.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    outcome = yield
    ex = item.stash.get(_EX, None)
    if ex is not None and ex.unexpected and outcome.excinfo is None:
        outcome.force_exception(UnexpectedDifferences(
            f"{len(ex.unexpected)} differences from Apache Kafka not in the allowlist "
            f"(tests/differential/kept.py):\n" + "\n".join(ex.unexpected)))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    ex = item.stash.get(_EX, None)
    if (report.failed and ex is not None and report.when == "call"
            and not (call.excinfo and call.excinfo.errisinstance(UnexpectedDifferences))):
        for name, proc in (("kafka", ex.pair.kafka), ("hourglass", ex.pair.hourglass)):
            report.sections.append((f"{name} log", proc.log_tail(4000)))
