"""``rbroker(overrides)``: a broker subprocess for the reliability tests (no client tools
needed: these tests speak the protocol through ``tests.reliability.wire``). Every broker
started is SIGTERMed at teardown and must exit 0, and must not have died on its own."""
from __future__ import annotations

import pytest

from tests.helpers.broker import BrokerProcess


@pytest.fixture
def rbroker(tmp_path_factory):
    started: list[BrokerProcess] = []

    def make(overrides=None) -> BrokerProcess:
        b = BrokerProcess(tmp_path_factory.mktemp("rbroker") / "data", overrides)
        started.append(b)
        return b.start()

    yield make
    problems = []
    for b in started:
        if b.proc is not None and b.proc.poll() is not None:
            problems.append(f"broker died during the test (exit {b.stop()})\n{b.log_tail()}")
        elif b.running and (rc := b.stop()) != 0:
            problems.append(f"broker exited {rc} on SIGTERM\n{b.log_tail()}")
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)
