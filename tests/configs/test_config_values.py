"""Config values validated as Kafka 4.4 validates them (issue 44, item 3).

The pure rules first (Kafka's ``parseCsvMap``, Java's ``parseInt``, 4.x's ``ValidList``, the
``KafkaConfig`` require rules, the thread-pool rule), with hypothesis against brute-force models;
then the reported values through every path that changes a dynamic broker config on a running
broker: IncrementalAlterConfigs and AlterConfigs (confluent-kafka's AdminClient), REST v3 (per
broker and cluster default) and Kafka's own ``kafka-configs`` tool. Each is refused with Kafka's
message, never a 500, and nothing is stored. ``tests/differential/test_config_values.py``
compares a generated set of bad values for every dynamic config with the oracle.
"""
from __future__ import annotations

import re

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
from hypothesis import given, settings, strategies as st

from broker import dynamic_config as dc
from broker.listeners import java_int, kafka_listener_failures, parse_csv_map
from storage.errors import InvalidConfigError
from storage.log_config import DistinctList

# ---- pure rules ------------------------------------------------------------------------------


def _java_split_trailing(text: str) -> list[str]:
    """Model: Java's ``String.split("\\s*,\\s*")`` (trailing empty strings removed)."""
    parts = re.split(r"\s*,\s*", text)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


@given(st.lists(st.text(alphabet="ab:1 ,", max_size=6), max_size=5).map(",".join))
def test_parse_csv_map_is_kafkas(text):
    entries = [] if text == "" else _java_split_trailing(text)
    if any(":" not in e for e in entries):
        bad = next(e for e in entries if ":" not in e)
        with pytest.raises(ValueError) as ei:
            parse_csv_map("k", text)
        assert str(ei.value) == f"Error parsing configuration property 'k': begin 0, end -1, length {len(bad)}"
    else:
        expected = {}
        for e in entries:
            i = max(i for i, c in enumerate(e) if c == ":")
            expected[e[:i].strip()] = e[i + 1:].strip()
        assert parse_csv_map("k", text) == expected


def test_parse_csv_map_reported_values():
    with pytest.raises(ValueError, match=r"^Error parsing configuration property 'max.connections.per.ip.overrides'"
                                         r": begin 0, end -1, length 4$"):
        parse_csv_map("max.connections.per.ip.overrides", "gzip")
    assert parse_csv_map("m", "h:5,") == {"h": "5"}
    assert parse_csv_map("m", "a:1:2") == {"a:1": "2"}  # split at the last colon
    assert parse_csv_map("m", "") == {}


@given(st.one_of(st.integers(min_value=-(2**40), max_value=2**40).map(str), st.text(alphabet="+-0123x ", max_size=5)))
def test_java_int(text):
    ok = re.fullmatch(r"[+-]?\d+", text) is not None and -(2**31) <= int(text) < 2**31
    if ok:
        assert java_int(text) == int(text)
    else:
        with pytest.raises(ValueError, match=re.escape(f'For input string: "{text}"')):
            java_int(text)


@given(st.lists(st.sampled_from(["a", "b", "", " c "]), max_size=4).map(",".join), st.booleans())
def test_distinct_list_model(raw, allow_empty):
    items = [] if raw.strip() == "" else [x.strip() for x in raw.strip().split(",")]
    if not items and not allow_empty:
        expected = "must not be empty. Valid values include"
    elif len(set(items)) != len(items):
        expected = "values must not be duplicated."
    elif "" in items:
        expected = "values must not be empty."
    else:
        expected = None
    if expected is None:
        DistinctList(allow_empty).check("k", items, raw)
    else:
        with pytest.raises(InvalidConfigError) as ei:
            DistinctList(allow_empty).check("k", items, raw)
        assert expected in str(ei.value) and str(ei.value).startswith("Configuration 'k' ")


@settings(max_examples=300)
@given(st.sampled_from(dc.THREAD_COUNT_KEYS), st.integers(1, 64), st.integers(1, 200))
def test_thread_count_rule_is_kafkas(key, old, new):
    """Kafka's DynamicThreadPool: a changed count must be >= old/2 (integer division) and
    <= 2*old (below 1 the key's own validator refuses it first)."""
    failures = list(dc.reconfiguration_failures({key: str(old)}, {key: str(new)}))
    what = f"Dynamic thread count update validation failed for {key}={new}"
    if new == old:
        expected = []
    elif new < old // 2:
        expected = [f"{what}, value should be at least half the current value {old}"]
    elif new > old * 2:
        expected = [f"{what}, value should not be greater than double the current value {old}"]
    else:
        expected = []
    assert failures == expected


@pytest.mark.parametrize("props, message", [
    ({"log.retention.ms": "0"}, "requirement failed: log.retention.ms must be unlimited (-1) or, greater than or "
                                "equal to 1"),
    ({"log.roll.ms": "0"}, "requirement failed: log.roll.ms must be greater than or equal to 1"),
    ({"log.roll.jitter.ms": "-1"}, "requirement failed: log.roll.jitter.ms must be greater than or equal to 0"),
    ({"log.cleaner.dedupe.buffer.size": "1048576"},
     "requirement failed: log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread."),
    ({"max.connections.per.ip": "0"}, "requirement failed: max.connections.per.ip can be set to zero only if "
                                      "max.connections.per.ip.overrides property is set."),
    ({"max.connections.per.ip.overrides": "gzip"},
     "Error parsing configuration property 'max.connections.per.ip.overrides': begin 0, end -1, length 4"),
    ({"max.connections.per.ip.overrides": "127.0.0.1:x"}, 'For input string: "x"'),
    ({"listeners": "gzip"}, "Error creating broker listeners from '[gzip]': Unable to parse gzip to a broker endpoint"),
    ({"listener.security.protocol.map": "gzip"},
     "Error parsing configuration property 'listener.security.protocol.map': begin 0, end -1, length 4"),
    ({"listener.security.protocol.map": "PLAINTEXT:gzip"},
     "Invalid security protocol `gzip` defined in listener.security.protocol.map"),
    ({"cordoned.log.dirs": "/elsewhere"}, "requirement failed: All entries in cordoned.log.dirs must be present in "
                                          "log.dirs or log.dir. Missing entries : /elsewhere"),
])
def test_requirement_failures(props, message):
    base = {"listeners": "PLAINTEXT://127.0.0.1:9092", "log.dirs": "/data"}
    assert next(dc.requirement_failures({**base, **props}), None) == message
    assert next(dc.requirement_failures({**base, "max.connections.per.ip": "0",
                                         "max.connections.per.ip.overrides": "127.0.0.1:5"}), None) is None


def test_listener_failures_name_the_missing_protocol():
    assert list(kafka_listener_failures("PLAINTEXT://:1,EXTRA://:2", None, [])) == [
        "Error creating broker listeners from '[PLAINTEXT://:1, EXTRA://:2]': No security protocol defined for "
        "listener EXTRA"]
    assert list(kafka_listener_failures("", None, [])) == [
        "Configuration 'listeners' must not be empty. Valid values include: any non-empty value"]
    assert list(kafka_listener_failures("SSL://:1", "SSL:ssl", [])) == []


def test_refusal_order_and_wording():
    with pytest.raises(dc.DynamicConfigError, match=r"^Cannot update these configs dynamically: "
                                                    r"\[num.partitions, log.dirs\]$"):
        dc.validate({"num.partitions": "2", "log.dirs": "x"}, per_broker=False)
    with pytest.raises(dc.DynamicConfigError, match=r"^Cannot update these configs dynamically: "
                                                    r"\[advertised.listeners\]$"):
        dc.validate({"advertised.listeners": "PLAINTEXT://h:1"}, per_broker=True)
    # Kafka 4.4 parses the value before it looks at the level
    with pytest.raises(dc.DynamicConfigError, match="Class gzip could not be found"):
        dc.validate({"principal.builder.class": "gzip"}, per_broker=False)
    with pytest.raises(dc.DynamicConfigError, match=r"broker id must be specified: \[listeners\]$"):
        dc.validate({"listeners": "PLAINTEXT://:1"}, per_broker=False)
    with pytest.raises(dc.DynamicConfigError, match="Not a number of type SHORT"):
        dc.validate({"sasl.login.refresh.buffer.seconds": "40000"}, per_broker=True)
    with pytest.raises(dc.DynamicConfigError, match="remote.log.reader.threads: Value must be at least 1"):
        dc.validate({"remote.log.reader.threads": "0"}, per_broker=True)


# ---- every path on a running broker ----------------------------------------------------------

REPORTED = [
    ("max.connections.per.ip.overrides", "gzip",
     "Error parsing configuration property 'max.connections.per.ip.overrides': begin 0, end -1, length 4"),
    ("listeners", "gzip", "Error creating broker listeners from '[gzip]': Unable to parse gzip to a broker endpoint"),
    ("advertised.listeners", "gzip", "Cannot update these configs dynamically: [advertised.listeners]"),
    ("listener.security.protocol.map", "gzip",
     "Error parsing configuration property 'listener.security.protocol.map': begin 0, end -1, length 4"),
]


@pytest.fixture(scope="module")
def hg():
    from hourglass.embedded import EmbeddedBroker
    with EmbeddedBroker(console=True) as b:
        yield b


def _dynamic(b) -> dict:
    dyn = b.broker.dynamic_configs
    return {"broker": dict(dyn.broker), "default": dict(dyn.default)}


@pytest.mark.parametrize("key, value, message", REPORTED)
def test_reported_values_through_the_admin_client(hg, key, value, message):
    admin = AdminClient({"bootstrap.servers": hg.bootstrap_servers})
    before = _dynamic(hg)
    res = ConfigResource(ResourceType.BROKER, "1",
                         incremental_configs=[ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)])
    (fut,) = admin.incremental_alter_configs([res]).values()
    with pytest.raises(Exception) as ei:
        fut.result(timeout=30)
    assert ei.value.args[0].str() == message and ei.value.args[0].name() == "INVALID_REQUEST"
    (fut,) = admin.alter_configs([ConfigResource(ResourceType.BROKER, "1", set_config={key: value})]).values()
    with pytest.raises(Exception) as ei:
        fut.result(timeout=30)
    assert ei.value.args[0].str() == message
    assert _dynamic(hg) == before


@pytest.mark.parametrize("key, value, message", REPORTED)
def test_reported_values_through_rest_v3(hg, key, value, message):
    from tests.helpers.rest_v3 import Rest
    rest = Rest(hg.console_url, hg.broker.cluster_id)
    before = _dynamic(hg)
    for path in (f"{rest.c}/brokers/1/configs/{key}", f"{rest.c}/broker-configs/{key}"):
        status, body, _ = rest.call("PUT", path, {"value": value})
        assert status == 400 and body["error_code"] == 40002, (path, status, body)
        if path.startswith(f"{rest.c}/brokers/"):
            assert body["message"] == message
        status, body, _ = rest.call("POST", path.rsplit("/", 1)[0] + ":alter",
                                    {"data": [{"name": key, "value": value}]})
        assert status == 400, (path, status, body)
    assert _dynamic(hg) == before
    # the broker keeps serving, and a good value of the same key still goes through and applies
    rest.ok("PUT", f"{rest.c}/brokers/1/configs/max.connections.per.ip.overrides", {"value": "127.0.0.1:500"}, 204)
    assert hg.broker.per_ip_limits == {"127.0.0.1": 500}
    rest.ok("DELETE", f"{rest.c}/brokers/1/configs/max.connections.per.ip.overrides", status=204)
    assert hg.broker.per_ip_limits == {}


def test_reported_values_through_kafka_configs_tool(hg):
    """Kafka's own ``kafka-configs`` (ConfigCommand) against Hourglass: it prints Kafka's message
    and exits non-zero; nothing stored."""
    from tests.helpers.kafka_oracle import run_tool
    before = _dynamic(hg)
    for key, value, message in REPORTED:
        p = run_tool("org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", hg.bootstrap_servers,
                     "--entity-type", "brokers", "--entity-name", "1", "--alter", "--add-config",
                     f"{key}={value}", check=False)
        assert p.returncode != 0 and message in p.stdout + p.stderr, (key, p.stdout, p.stderr)
    assert _dynamic(hg) == before


def test_reported_values_through_hourglass_configs(hg):
    """``hourglass configs`` (kafka-configs.sh's twin): the same refusal, exit 1, nothing stored."""
    import subprocess
    import sys
    before = _dynamic(hg)
    for key, value, message in REPORTED:
        p = subprocess.run([sys.executable, "-m", "hourglass.cli.main", "configs", "-b", hg.bootstrap_servers,
                            "--alter", "--entity-type", "brokers", "--entity-name", "1", "--add-config",
                            f"{key}={value}"], capture_output=True, text=True, timeout=60)
        assert p.returncode != 0 and message in p.stderr, (key, p.stdout, p.stderr)
    assert _dynamic(hg) == before


GENERIC_BAD = ["gzip", "", "-1", "0", ",", "a,,b", "99999999999999999999", "1.5"]


def test_rest_v3_never_answers_500_for_any_value_of_any_dynamic_config(hg):
    """Every dynamic broker key (per broker and cluster default) and every topic config, with
    values of every kind: a refusal is a 4xx and stores nothing; an accepted value is applied
    (then deleted again); the broker keeps serving throughout."""
    from storage.log_config import TOPIC_CONFIGS
    from tests.helpers.rest_v3 import Rest
    rest = Rest(hg.console_url, hg.broker.cluster_id)
    rest.ok("POST", rest.c + "/topics", {"topic_name": "values", "partitions_count": 1}, 201)
    keys = sorted(dc.DYNAMIC_KEYS - {"listeners", "listener.security.protocol.map"})
    failures = []
    start = _dynamic(hg)
    for base in (f"{rest.c}/brokers/1/configs", f"{rest.c}/broker-configs"):
        for key in keys:
            for value in GENERIC_BAD:
                before = _dynamic(hg)
                status, body, _ = rest.call("PUT", f"{base}/{key}", {"value": value})
                if status >= 500 or (status >= 400 and _dynamic(hg) != before):
                    failures.append((base, key, value, status, body))
                if status == 204:
                    rest.ok("DELETE", f"{base}/{key}", status=204)
    for key in sorted(TOPIC_CONFIGS):
        for value in GENERIC_BAD:
            status, body, _ = rest.call("PUT", f"{rest.c}/topics/values/configs/{key}", {"value": value})
            if status >= 500:
                failures.append(("topic", key, value, status, body))
            if status == 204:
                rest.ok("DELETE", f"{rest.c}/topics/values/configs/{key}", status=204)
    assert not failures, failures[:20]
    assert _dynamic(hg) == start


def test_per_ip_overrides_parse_as_kafka_and_a_stored_bad_value_never_fails_to_apply():
    from broker.security.listener import per_ip_limits
    from broker.security.sasl import SecurityConfigError
    assert per_ip_limits("127.0.0.1:5, [::1]:7,") == {"127.0.0.1": 5, "::1": 7}
    with pytest.raises(SecurityConfigError, match="begin 0, end -1, length 4"):
        per_ip_limits("gzip")  # at start: refuses to start, with the reason
    # applied from the dynamic layer (a value stored before it was validated): warned, no override
    assert per_ip_limits("gzip", strict=False) == {}
    assert per_ip_limits("no-such-host.invalid:3,127.0.0.1:4", strict=False) == {"127.0.0.1": 4}
