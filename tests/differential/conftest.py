"""Fixtures of the differential tests: one Apache Kafka node and one Hourglass broker shared
by the whole session (``pair``), a per-test ``ex`` (``framework.Exchange``) that sends each
request to both and compares, and the report ``test-output/differential.md``.

Every module here carries ``pytest.mark.xdist_group("differential")``: under ``-n 2 --dist
loadgroup`` they all run on one worker, so the pair starts once and one session writes the
whole report at its end. A test with a difference the allowlist (``kept.py``) does not name
fails in its call phase, listing every such difference with its path.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.differential.framework import Exchange, Pair, Report, UnexpectedDifferences, advertised
from tests.helpers.broker import BrokerProcess
from tests.helpers.kafka_oracle import KafkaProcess

REPORT_PATH = Path(__file__).resolve().parents[2] / "test-output" / "differential.md"

# Settings both brokers run with (the rest are each broker's defaults, themselves compared).
COMMON = {
    "group.initial.rebalance.delay.ms": 0,
    "offsets.topic.replication.factor": 1,        # the oracle's one-node settings, on both
    "transaction.state.log.replication.factor": 1,
    "num.partitions": 1,
    "auto.create.topics.enable": "true",
}

_REPORT = Report()


@pytest.fixture(scope="session")
def differential_report():
    yield _REPORT
    if _REPORT.entries:
        REPORT_PATH.parent.mkdir(parents=True, exist_ok=True)
        worker = os.environ.get("PYTEST_XDIST_WORKER")
        REPORT_PATH.write_text(_REPORT.markdown())
        if worker:  # one worker runs the group; say which, for whoever reads the file
            with REPORT_PATH.open("a") as f:
                f.write(f"\n(written by xdist worker {worker})\n")


def start_pair(tmp_path_factory, kafka_overrides=None, hourglass_overrides=None, *, name="pair"):
    base = tmp_path_factory.mktemp(name)
    kafka = KafkaProcess(base / "kafka" / "data", {**COMMON, **(kafka_overrides or {})})
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
