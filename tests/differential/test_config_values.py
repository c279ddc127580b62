"""Config values as Kafka validates them (issue 44, item 3): a generated set of bad values for
every config Kafka 4.4 marks dynamic on a broker (per broker and at the cluster default) and for
every topic config, sent to the oracle and to Hourglass through IncrementalAlterConfigs
(validate_only) and, for topic configs, CreateTopics (validate_only); the error codes and
messages must be the same, except for the keys ``kept.KEPT_CONFIG_VALUES`` names with its reason.

Which configs and their types come from the oracle's own DescribeConfigs (read-only false:
dynamic), so a config Kafka adds is covered the day the oracle has it.
"""
from __future__ import annotations

import pytest

from tests.differential.framework import req
from tests.differential.kept import KEPT_CONFIG_VALUES

pytestmark = pytest.mark.xdist_group("differential")

TOPIC, BROKER = 2, 4
TYPES = {0: "UNKNOWN", 1: "BOOLEAN", 2: "STRING", 3: "INT", 4: "SHORT", 5: "LONG", 6: "DOUBLE", 7: "LIST",
         8: "CLASS", 9: "PASSWORD"}
# bad values of each type (a type's edge cases, and the "gzip" for every key)
BAD = {"BOOLEAN": ["yes", ""], "INT": ["abc", "1.5", "", "-1", "0", "2147483648"], "SHORT": ["abc", "40000", "-1"],
       "LONG": ["abc", "", "-1", "0", "9223372036854775808"], "DOUBLE": ["abc", "", "-1", "0"],
       "LIST": ["", ",", "a,,b"], "STRING": ["", "-1"], "CLASS": ["no.such.Clazz", ""], "PASSWORD": [""],
       "UNKNOWN": []}


def bad_values(config_type: str) -> list[str]:
    return ["gzip", *BAD[config_type]]


def _describe(side, rtype, name):
    r = side.request(32, 4, req(32, 4, resources=[{"resource_type": rtype, "resource_name": name,
                                                   "configuration_keys": None}],
                                include_synonyms=False, include_documentation=False))
    return {c.name: (c.read_only, TYPES[c.config_type]) for c in r.results[0].configs}


def _incremental(rtype, name, key, value):
    return req(44, 1, resources=[{"resource_type": rtype, "resource_name": name, "configs": [
        {"name": key, "config_operation": 0, "value": value}]}], validate_only=True)


def _create(topic, key, value):
    return req(19, 7, topics=[{"name": topic, "num_partitions": 1, "replication_factor": 1, "assignments": [],
                               "configs": [{"name": key, "value": value}]}], timeout_ms=30000, validate_only=True)


def _answer(api, r):
    x = r.responses[0] if api == 44 else r.topics[0]
    return x.error_code, x.error_message


def _unexplained(key: str, k: tuple, h: tuple) -> bool:
    if k == h:
        return False
    kept = KEPT_CONFIG_VALUES.get(key)
    if kept is None:
        return True
    return kept[0] == "message" and k[0] != h[0]


def test_bad_values_of_every_dynamic_broker_config_and_topic_config(ex):
    topic = ex.topic_name()
    ex.create_topic(topic)
    broker = _describe(ex.kafka, BROKER, "1")
    dynamic = {k: t for k, (ro, t) in broker.items() if not ro}
    assert len(dynamic) > 90  # Kafka 4.4 has over a hundred
    topic_types = {k: t for k, (_ro, t) in _describe(ex.kafka, TOPIC, topic).items()}
    cases = [(44, BROKER, rname, key, v) for rname in ("1", "") for key, t in sorted(dynamic.items())
             for v in bad_values(t)]
    cases += [(44, TOPIC, topic, key, v) for key, t in sorted(topic_types.items()) for v in bad_values(t)]
    cases += [(19, TOPIC, ex.topic_name("c"), key, v) for key, t in sorted(topic_types.items())
              for v in bad_values(t)]
    unexplained, refused = [], 0
    for api, rtype, rname, key, value in cases:
        body = _incremental(rtype, rname, key, value) if api == 44 else _create(rname, key, value)
        k, h = ex.send(api, 1 if api == 44 else 7, body, scenario=f"{key}={value!r}", compare_=False)
        k, h = _answer(api, k), _answer(api, h)
        refused += k[0] != 0
        if _unexplained(key, k, h):
            unexplained.append(f"{'IncrementalAlterConfigs' if api == 44 else 'CreateTopics'} "
                               f"{'broker ' + repr(rname) if rtype == BROKER else 'topic'} {key}={value!r}:\n"
                               f"    kafka     {k}\n    hourglass {h}")
    assert refused > len(cases) // 2  # the generated values are mostly bad, as meant
    assert not unexplained, f"{len(unexplained)} of {len(cases)} answers differ from Kafka's:\n" + "\n".join(unexplained)
