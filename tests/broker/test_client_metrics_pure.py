"""The pure decisions of client metrics (KIP-714): subscription validation as Kafka 4.4's
ClientMetricsConfigs (Java's ``String.split`` and ConfigDef list rules against brute-force
models), which subscriptions select a client and what it is asked for (against a model of
Kafka's ClientMetricsManager), and the subscription id's invariants."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings, strategies as st

from broker.client_metrics import (MATCH_SELECTORS, ClientMetricsError, Subscription, java_split, parse_list,
                                   validate)
from broker.client_telemetry import (DEFAULT_INTERVAL_MS, ClientMetricsManager, is_match, java_uuid_hash, resolve,
                                     subscription_id)
from protocol.errors import ErrorCode as E


def _java_split_model(text: str, sep: str) -> list[str]:
    """Java's String.split(sep) for a one-character literal, character by character."""
    parts, cur = [], ""
    for ch in text:
        if ch == sep:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    if text == "":
        return [""]
    while parts and parts[-1] == "":
        parts.pop()
    return parts


@given(st.text(alphabet="ab= ", max_size=8))
def test_java_split(text):
    assert java_split(text, "=") == _java_split_model(text, "=")


@given(st.lists(st.sampled_from(["a", "b", "", " c "]), max_size=4))
def test_list_rules(items):
    text = ",".join(items)
    stripped = [i.strip() for i in text.strip().split(",")] if text.strip() else []
    try:
        got = parse_list("metrics", text)
    except ClientMetricsError as exc:
        assert exc.code == E.INVALID_CONFIG
        assert "" in stripped
    else:
        assert got == stripped and "" not in got   # duplicates are kept (Kafka 4.4 accepts them)


@pytest.mark.parametrize("props, code, message", [
    ({"metrics": "a"}, 0, None),
    ({"interval.ms": "100"}, 0, None),
    ({"interval.ms": "3600000"}, 0, None),
    ({"interval.ms": "99"}, E.INVALID_REQUEST,
     "Invalid value 99 for interval.ms, interval must be between 100 and 3600000 (1 hour)"),
    ({"interval.ms": "x"}, E.INVALID_CONFIG, "Invalid value x for configuration interval.ms: Not a number of type INT"),
    ({"nope": "1"}, E.INVALID_REQUEST, "Unknown client metrics configuration: nope"),
    ({"match": "client_id=a=b"}, E.INVALID_CONFIG, "Illegal client matching pattern: client_id=a=b"),
    ({"match": "client_id="}, E.INVALID_CONFIG, "Illegal client matching pattern: client_id="),
    ({"match": "client_idx=a"}, E.INVALID_CONFIG, "Illegal client matching pattern: client_idx=a"),
    ({"match": "client_id=(a"}, E.INVALID_CONFIG, "Illegal client matching pattern: client_id=(a"),
    ({"match": " client_id = a.* , client_software_name=x"}, 0, None),
])
def test_validate(props, code, message):
    if code == 0:
        validate("s", props)
        return
    with pytest.raises(ClientMetricsError) as err:
        validate("s", props)
    assert (err.value.code, err.value.message) == (code, message)
    with pytest.raises(ClientMetricsError, match="Subscription name can't be empty"):
        validate("", {})


ATTRS = st.fixed_dictionaries({k: st.one_of(st.none(), st.sampled_from(["a", "ab", "b1"])) for k in MATCH_SELECTORS})
SUBS = st.lists(st.builds(
    lambda metrics, interval, match: Subscription("s", tuple(dict.fromkeys(metrics)), interval,
                                                  tuple(sorted(match.items()))),
    st.lists(st.sampled_from(["*", "m.a", "m.b", "n."]), max_size=3),
    st.integers(100, 400_000),
    st.dictionaries(st.sampled_from(MATCH_SELECTORS), st.sampled_from(["a", "a.*", "b[0-9]", ".*"]), max_size=2)),
    max_size=4)


@settings(max_examples=300)
@given(SUBS, ATTRS)
def test_resolve_against_model(subs, attrs):
    def selects(sub):   # every selector's regex matches the whole attribute; none: everyone
        return all(attrs.get(k) is not None and re.fullmatch(r, attrs[k]) for k, r in sub.match)
    chosen = [s for s in subs if selects(s)]
    metrics, interval = resolve(subs, attrs)
    assert interval == min([DEFAULT_INTERVAL_MS] + [s.interval_ms for s in chosen])
    if any("*" in s.metrics for s in chosen):
        assert metrics == ["*"]
    else:
        assert sorted(metrics) == sorted({m for s in chosen for m in s.metrics})
    assert all(is_match(attrs, dict(s.match)) == bool(selects(s)) for s in subs)


@given(st.lists(st.sampled_from(["a.", "b.", "org.apache.kafka.producer.", "x"]), unique=True),
       st.integers(100, 3_600_000), st.binary(min_size=16, max_size=16), st.binary(min_size=16, max_size=16))
def test_subscription_id(metrics, interval, u1, u2):
    from broker.java_hash import java_hash_order
    ordered = java_hash_order(metrics)
    assert java_hash_order(list(reversed(metrics))) == ordered   # a HashSet's order: not the insertion's
    a, b = subscription_id(ordered, interval, u1), subscription_id(ordered, interval, u2)
    assert -(2 ** 31) <= a < 2 ** 31
    assert (a ^ b) & 0xFFFFFFFF == (java_uuid_hash(u1) ^ java_uuid_hash(u2)) & 0xFFFFFFFF


def test_manager_push_rules():
    """Kafka's timing rules with a controlled clock: a push right after a get is accepted, the next
    one only a push interval later; a terminating push is accepted at once and ends the instance."""
    now = [1000.0]
    subs = [Subscription("s", ("m.",), 1000, ())]
    m = ClientMetricsManager(lambda: subs, lambda: 1, 100, clock=lambda: now[0])
    g = m.get_subscriptions(bytes(16), {"client_id": "c"})
    iid, sid = g.instance_id, g.subscription_id
    assert (g.error, g.interval_ms, g.metrics) == (0, 1000, ["m."])
    assert m.push(iid, sid, False, 0, b"", {})[0] == 0
    assert m.push(iid, sid, False, 0, b"", {})[0] == E.THROTTLING_QUOTA_EXCEEDED
    now[0] += 1.0
    assert m.push(iid, sid, False, 0, b"", {})[0] == 0
    assert m.get_subscriptions(iid, {}).error == E.THROTTLING_QUOTA_EXCEEDED
    assert m.push(iid, sid, True, 0, b"", {})[0] == 0
    assert m.push(iid, sid, True, 0, b"", {})[0] == E.INVALID_REQUEST
    now[0] += 61.0                                                   # expired: a new instance
    assert m.push(iid, sid, False, 0, b"", {})[0] == 0


def test_kept_as_kafka_keeps_them():
    from broker.client_metrics import normalized
    assert normalized({"metrics": " a , b,a ", "match": "client_id = x ,client_software_name=y", "interval.ms": "500"}) \
        == {"metrics": "a,b,a", "match": "client_id = x,client_software_name=y", "interval.ms": "500"}
