"""Client quotas administered as Kafka's users do it: the Java Admin client's alterClientQuotas
and describeClientQuotas over every entity form and default, validate-only, Kafka's refusals
(raw requests for what the Java client would not send), and durability across a restart and
a kill -9."""
from __future__ import annotations

import pytest

from protocol.errors import ErrorCode as E
from protocol.messages.alter_client_quotas import AlterClientQuotasRequest as AQ
from protocol.messages.describe_client_quotas import DescribeClientQuotasRequest as DQ
from tests.helpers.java import run_java
from tests.helpers.raw import RawClient

ALL_FORMS = ";".join([
    "user=alice:producer_byte_rate=1024,consumer_byte_rate=2048",
    "user=<default>:request_percentage=50.5",
    "client-id=c1:producer_byte_rate=4096",
    "client-id=<default>:consumer_byte_rate=8192",
    "user=alice,client-id=c1:producer_byte_rate=100",
    "user=alice,client-id=<default>:controller_mutation_rate=2.5",
    "user=<default>,client-id=c1:consumer_byte_rate=300",
    "user=<default>,client-id=<default>:producer_byte_rate=400",
    "ip=127.0.0.1:connection_creation_rate=30",
    "ip=<default>:connection_creation_rate=100",
])

EXPECTED = [
    ({"client-id": "<default>"}, {"consumer_byte_rate": 8192.0}),
    ({"client-id": "<default>", "user": "<default>"}, {"producer_byte_rate": 400.0}),
    ({"client-id": "<default>", "user": "alice"}, {"controller_mutation_rate": 2.5}),
    ({"client-id": "c1"}, {"producer_byte_rate": 4096.0}),
    ({"client-id": "c1", "user": "<default>"}, {"consumer_byte_rate": 300.0}),
    ({"client-id": "c1", "user": "alice"}, {"producer_byte_rate": 100.0}),
    ({"ip": "127.0.0.1"}, {"connection_creation_rate": 30.0}),
    ({"ip": "<default>"}, {"connection_creation_rate": 100.0}),
    ({"user": "<default>"}, {"request_percentage": 50.5}),
    ({"user": "alice"}, {"consumer_byte_rate": 2048.0, "producer_byte_rate": 1024.0}),
]


def _described(lines):
    return sorted(((l["entity"], l["values"]) for l in lines if "values" in l), key=repr)


def _raw_describe(bootstrap):
    c = RawClient(bootstrap)
    try:
        r = c.request(48, 1, DQ(components=[], strict=False))
    finally:
        c.close()
    assert r.error_code == 0
    out = []
    for e in r.entries:
        ent = {x.entity_type: "<default>" if x.entity_name is None else x.entity_name for x in e.entity}
        out.append((ent, {v.key: v.value for v in e.values}))
    return sorted(out, key=repr)


def test_java_admin_every_entity_form_validate_only_and_filters(broker):
    b = broker.bootstrap
    # validate-only: every entity accepted, nothing stored
    lines = run_java(["admin-quotas", "--bootstrap", b, "--alter", ALL_FORMS, "--validate-only", "true",
                      "--describe", ""])
    assert [l.get("ok") for l in lines if "entity" in l and "values" not in l] == [True] * 10
    assert _described(lines) == []
    lines = run_java(["admin-quotas", "--bootstrap", b, "--alter", ALL_FORMS, "--describe", ""])
    assert [l.get("ok") for l in lines if "ok" in l or "error" in l] == [True] * 10
    assert _described(lines) == sorted(EXPECTED, key=repr)
    # filters: exact (strict and not), default, any specified name; then removals
    lines = run_java(["admin-quotas", "--bootstrap", b, "--describe", "user=alice", "--strict", "true"])
    assert _described(lines) == [({"user": "alice"}, {"consumer_byte_rate": 2048.0, "producer_byte_rate": 1024.0})]
    lines = run_java(["admin-quotas", "--bootstrap", b, "--describe", "user=alice"])
    assert [e for e, _v in _described(lines)] == [{"client-id": "<default>", "user": "alice"},
                                                  {"client-id": "c1", "user": "alice"}, {"user": "alice"}]
    lines = run_java(["admin-quotas", "--bootstrap", b, "--describe", "client-id=<default>,user=*", "--strict", "true"])
    assert [e for e, _v in _described(lines)] == [{"client-id": "<default>", "user": "<default>"},
                                                  {"client-id": "<default>", "user": "alice"}]
    lines = run_java(["admin-quotas", "--bootstrap", b, "--describe", "ip=*",
                      "--alter", "user=alice:-producer_byte_rate;ip=<default>:-connection_creation_rate;"
                                 "user=ghost:producer_byte_rate=5"])
    assert [l.get("ok") for l in lines if "ok" in l] == [True, True, True]
    got = dict((repr(e), v) for e, v in _described(lines))
    assert got == {repr({"ip": "127.0.0.1"}): {"connection_creation_rate": 30.0}}
    after = dict((repr(e), v) for e, v in _raw_describe(b))
    assert after[repr({"user": "alice"})] == {"consumer_byte_rate": 2048.0}
    assert after[repr({"user": "ghost"})] == {"producer_byte_rate": 5.0}  # a user that does not exist: allowed
    assert repr({"ip": "<default>"}) not in after


def test_java_admin_refusals_keep_the_broker_serving(broker):
    b = broker.bootstrap
    lines = run_java(["admin-quotas", "--bootstrap", b, "--alter",
                      "user=u1:producer_byte_rate=-5;user=u2:bogus_key=1;ip=1.2.3.4:producer_byte_rate=10;"
                      "user=u3:producer_byte_rate=1.5;user=u4:consumer_byte_rate=10"])
    res = [(l["entity"], l.get("error"), l.get("message")) for l in lines]
    assert res == [
        ({"user": "u1"}, "InvalidRequestException", "Quota producer_byte_rate must be greater than 0"),
        ({"user": "u2"}, "InvalidRequestException", "Invalid configuration key bogus_key"),
        ({"ip": "1.2.3.4"}, "InvalidRequestException", "Invalid configuration key producer_byte_rate"),
        ({"user": "u3"}, "InvalidRequestException", "producer_byte_rate cannot be a fractional value."),
        ({"user": "u4"}, None, None),
    ]
    lines = run_java(["admin-quotas", "--bootstrap", b, "--describe", "group=g"])
    assert lines[0]["error"] == "UnsupportedVersionException" and "Unsupported entity type group" in lines[0]["message"]
    assert _raw_describe(b) == [({"user": "u4"}, {"consumer_byte_rate": 10.0})]


@pytest.mark.parametrize("version", [0, 1])
def test_raw_refusals(broker, version):
    """What the Java client refuses before sending: unknown entity type, empty entity, an ip
    mixed with a user, a bad match type; each gets Kafka's code and message."""
    c = RawClient(broker.bootstrap)
    try:
        ent = lambda *p: [AQ.EntityData(entity_type=t, entity_name=n) for t, n in p]  # noqa: E731
        op = lambda k, v: [AQ.OpData(key=k, value=v, remove=False)]  # noqa: E731
        r = c.request(49, version, AQ(entries=[
            AQ.EntryData(entity=ent(("topic", "t")), ops=op("producer_byte_rate", 1.0)),
            AQ.EntryData(entity=[], ops=op("producer_byte_rate", 1.0)),
            AQ.EntryData(entity=ent(("user", "u"), ("ip", "1.2.3.4")), ops=op("connection_creation_rate", 1.0)),
            AQ.EntryData(entity=ent(("user", "")), ops=op("producer_byte_rate", 1.0)),
            AQ.EntryData(entity=ent(("client-id", "x")), ops=op("producer_byte_rate", 1.0) + op("producer_byte_rate", 2.0)),
        ], validate_only=False))
        assert [(e.error_code, e.error_message) for e in r.entries] == [
            (E.INVALID_REQUEST, "Unhandled client quota entity type: topic"),
            (E.INVALID_REQUEST, "Invalid empty client quota entity"),
            (E.INVALID_REQUEST, "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"),
            (E.INVALID_REQUEST, "Empty user not supported"),
            (E.INVALID_REQUEST, "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=x})"),
        ]
        d = c.request(48, version, DQ(components=[DQ.ComponentData(entity_type="user", match_type=7, match=None)],
                                      strict=False))
        assert (d.error_code, d.error_message, d.entries) == (E.INVALID_REQUEST, "Unknown match type 7", None)
        d = c.request(48, version, DQ(components=[DQ.ComponentData(entity_type="user", match_type=0, match=None)],
                                      strict=False))
        assert d.error_message == "Request specified MATCH_TYPE_EXACT, but set match string to null."
        assert c.request(48, version, DQ(components=[], strict=False)).entries == []
    finally:
        c.close()


def test_quotas_survive_restart_and_kill_9(broker):
    b = broker
    run_java(["admin-quotas", "--bootstrap", b.bootstrap, "--alter", ALL_FORMS])
    b.restart()
    assert _raw_describe(b.bootstrap) == sorted(EXPECTED, key=repr)
    c = RawClient(b.bootstrap)
    r = c.request(49, 1, AQ(entries=[AQ.EntryData(entity=[AQ.EntityData(entity_type="user", entity_name="zed")],
                                                  ops=[AQ.OpData(key="producer_byte_rate", value=77.0, remove=False)])],
                            validate_only=False))
    c.close()
    assert r.entries[0].error_code == 0
    b.kill()
    b.start()
    got = dict((repr(e), v) for e, v in _raw_describe(b.bootstrap))
    assert got[repr({"user": "zed"})] == {"producer_byte_rate": 77.0} and len(got) == len(EXPECTED) + 1
