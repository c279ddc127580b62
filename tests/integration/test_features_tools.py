"""``kafka-features`` (Kafka 4.4's own FeatureCommand, from the oracle's jars) against Hourglass
and against a single-node Apache Kafka 4.4 with the same inputs: describe, upgrade, downgrade
(and their dry runs and refusals); outputs compared line for line once the epochs (Kafka's is
its metadata log offset) are normalized. Then the levels survive a restart of Hourglass."""
from __future__ import annotations

import re
from tests.helpers.kafka_oracle import run_tool

STEPS = [
    ("describe",),
    ("downgrade", "--feature", "transaction.version=1", "--dry-run"),
    ("downgrade", "--feature", "transaction.version=1"),
    ("describe",),
    ("upgrade", "--feature", "transaction.version=2", "--dry-run"),
    ("upgrade", "--feature", "transaction.version=5"),
    ("downgrade", "--feature", "metadata.version=20"),
    ("downgrade", "--feature", "metadata.version=3.9-IV0", "--unsafe"),
    ("upgrade", "--feature", "nope.version=1"),
    ("downgrade", "--feature", "group.version=0", "--feature", "streams.version=0"),
    ("describe",),
    ("upgrade", "--release-version", "4.4-IV2"),
    ("upgrade", "--feature", "group.version=1", "--feature", "streams.version=1", "--feature", "transaction.version=2"),
    ("describe",),
]


def features_tool(bootstrap: str, *args: str) -> tuple[int, str]:
    r = run_tool("org.apache.kafka.tools.FeatureCommand", "--bootstrap-server", bootstrap, *args, check=False)
    return r.returncode, r.stdout + r.stderr


def _normal(out: str) -> str:
    out = re.sub(r"Epoch: \d+", "Epoch: <epoch>", out)
    return "\n".join(line.rstrip() for line in out.splitlines() if not line.startswith("SLF4J")).strip()


def test_kafka_features_same_on_both(broker_factory, kafka_factory):
    kafka, hourglass = kafka_factory(), broker_factory()
    for step in STEPS:
        k = features_tool(kafka.bootstrap, *step)
        h = features_tool(hourglass.bootstrap, *step)
        assert (h[0], _normal(h[1])) == (k[0], _normal(k[1])), f"kafka-features {' '.join(step)}"
    features_tool(hourglass.bootstrap, "downgrade", "--feature", "transaction.version=1")
    expected = _normal(features_tool(hourglass.bootstrap, "describe")[1])
    assert re.search(r"Feature: transaction.version\s.*FinalizedVersionLevel: 1\s", expected), expected
    hourglass.restart(crash=True)  # kill -9: the level was durable when the tool was answered
    assert _normal(features_tool(hourglass.bootstrap, "describe")[1]) == expected
