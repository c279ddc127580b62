"""Generated valid-but-extreme Kafka admin requests (issue 44): every field of every version of
the admin APIs Hourglass serves takes values from its type's extremes (INT32_MAX partitions,
INT64 minimum offsets, empty and 250-character names, the internal topics, null where the
version allows), drawn by hypothesis from the message declarations themselves
(``protocol/messages``), plus a few requests of many entries (10,001 topics, ACLs, configs,
partitions) past and within Kafka's 10,000-per-request bounds.

Checked: every request is answered (the broker never drops the connection of a valid request),
no answer carries UNKNOWN_SERVER_ERROR (a Kafka error code where Kafka gives one), the broker
keeps serving, and -- watched throughout by ``tests.helpers.loop_watch`` -- no request holds
up the event loop or delays another listener's answers past the bound.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from broker.registry import load_handlers
from hourglass.embedded import EmbeddedBroker
from protocol.api_keys import APIS
from protocol.errors import ErrorCode as E
from tests.differential.framework import req
from tests.helpers.loop_watch import LoopWatch
from tests.helpers.raw import RawClient

pytestmark = pytest.mark.xdist_group("generated_admin")

# the admin APIs: topics, records, configs, ACLs, quotas, groups' offsets
ADMIN_APIS = [19, 20, 21, 29, 30, 31, 32, 33, 37, 42, 44, 47, 48, 49, 50, 51]
EXAMPLES = 40  # per (API, version)

TOPICS = ["adm-a", "adm-b"]
# no count of 10,000 or just above it: growing a 1-partition topic by 9,999 is allowed and
# real (thousands of open files): the large-but-allowed work is test_bounded_admin's
INTS = {
    "int8": [-128, -1, 0, 1, 2, 3, 127],
    "int16": [-32768, -1, 0, 1, 2, 3, 32767],
    "uint16": [0, 1, 65535],
    "int32": [-2**31, -1, 0, 1, 3, 20_000, 2**31 - 1],
    "uint32": [0, 1, 2**32 - 1],
    "int64": [-2**63, -2, -1, 0, 1, 2**63 - 1],
}
STRINGS = [*TOPICS, "adm-doomed", "", "a" * 249, "b" * 250, "__consumer_offsets", "__transaction_state",
           "__cluster_metadata", "ü", "*", "User:alice", "retention.ms", "cleanup.policy", "compact",
           "segment.bytes", "9223372036854775807", "-1", "adm-group"]


def _value(f, version: int):
    t = f.elem
    if f.is_struct:
        base = _struct(f.fields, version)
    elif t in INTS:
        base = st.sampled_from(INTS[t])
    elif t == "string":
        base = st.sampled_from(STRINGS)
    elif t == "bool":
        base = st.booleans()
    elif t == "float64":
        base = st.sampled_from([0.0, -1.0, 1e308, 1.5])
    elif t == "bytes":
        base = st.sampled_from([b"", b"x" * 1000])
    elif t == "uuid":
        base = st.sampled_from([bytes(16), b"\xff" * 16])
    else:  # records
        base = st.none()
    if f.is_array:
        base = st.lists(base, max_size=3)
    if version in f.null_v:
        base = st.one_of(st.none(), base)
    return base


def _struct(fields, version: int):
    return st.fixed_dictionaries({f.name: _value(f, version) for f in fields if version in f.v and f.tag is None})


def request_strategy(api: int, version: int):
    return _struct(APIS[api].request.cls._spec_fields, version).map(lambda d: req(api, version, **d))


def error_codes(obj, path="") -> list[tuple[str, int]]:
    """Every ``error_code`` in a response struct, with its path."""
    out = []
    for name in getattr(obj, "__slots__", None) or getattr(obj, "__dict__", {}):
        v = getattr(obj, name, None)
        if name == "error_code" and isinstance(v, int):
            out.append((path + name, v))
        elif isinstance(v, list):
            for i, x in enumerate(v):
                if hasattr(x, "__dict__") or hasattr(x, "__slots__"):
                    out.extend(error_codes(x, f"{path}{name}[{i}]."))
        elif hasattr(v, "__dict__") and not isinstance(v, (bytes, str, int, float)):
            out.extend(error_codes(v, f"{path}{name}."))
    return out


@pytest.fixture(scope="module")
def broker():
    # an authorizer with the anonymous user as super user: the ACL APIs answer, nothing is denied
    with EmbeddedBroker({"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                         "super.users": "User:ANONYMOUS"}) as b:
        c = RawClient(b.bootstrap_servers, timeout=60)
        body = req(19, 7, topics=[{"name": n, "num_partitions": 2, "replication_factor": 1, "assignments": [],
                                   "configs": []} for n in [*TOPICS, "adm-doomed"]], timeout_ms=30000,
                   validate_only=False)
        assert [t.error_code for t in c.request(19, 7, body).topics] == [0, 0, 0]
        c.close()
        yield b


def _send(c: RawClient, api: int, version: int, body):
    r = c.request(api, version, body)
    bad = [(p, code) for p, code in error_codes(r) if code == E.UNKNOWN_SERVER_ERROR]
    assert not bad, (APIS[api].name, version, body, bad)
    return r


def test_generated_admin_requests(broker):
    b = broker
    handlers = load_handlers()
    c = RawClient(b.bootstrap_servers, client_id="generated-admin", timeout=60)
    sent = [0]
    with LoopWatch(b.broker.loop_lag, kafka=[b.bootstrap_servers]) as w:
        for api in ADMIN_APIS:
            h = handlers[api]
            for version in range(h.min_version, h.max_version + 1):
                @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                          suppress_health_check=list(HealthCheck))
                @given(body=request_strategy(api, version))
                def one(body):
                    sent[0] += 1
                    _send(c, api, version, body)
                one()
    print(f"{sent[0]} generated admin requests; {w.summary()}")
    w.assert_no_stall()
    assert sent[0] > 500, sent[0]


def test_admin_requests_of_many_entries(broker):
    """10,001 entries (past Kafka's bound) and a few thousand (within it) in one request."""
    b = broker
    c = RawClient(b.bootstrap_servers, client_id="many-entries", timeout=120)
    many = [f"adm-many-{i}" for i in range(10_001)]

    def topic(n, p=1):
        return {"name": n, "num_partitions": p, "replication_factor": 1, "assignments": [], "configs": []}

    def acl(n):
        return {"resource_type": 2, "resource_name": n, "resource_pattern_type": 3, "principal": "User:alice",
                "host": "*", "operation": 3, "permission_type": 3}
    with LoopWatch(b.broker.loop_lag, kafka=[b.bootstrap_servers]) as w:
        r = _send(c, 19, 7, req(19, 7, topics=[topic(n) for n in many], timeout_ms=30000, validate_only=False))
        assert {(t.error_code, t.error_message) for t in r.topics} == {
            (E.POLICY_VIOLATION, "Excessively large number of partitions per request.")}
        r = _send(c, 19, 7, req(19, 7, topics=[topic(n) for n in many[:3000]], timeout_ms=30000, validate_only=False))
        assert {t.error_code for t in r.topics} == {0}
        r = _send(c, 37, 3, req(37, 3, topics=[{"name": n, "count": 2, "assignments": None} for n in many[:3000]],
                                timeout_ms=30000, validate_only=False))
        assert {t.error_code for t in r.results} == {0}
        # each topic's change is written durably on the loop (~2 ms): the loop serves others between them
        r = _send(c, 44, 1, req(44, 1, resources=[{"resource_type": 2, "resource_name": n, "configs": [
            {"name": "retention.ms", "config_operation": 0, "value": str(2**63 - 1)}]} for n in many[:3000]],
            validate_only=False))
        assert {x.error_code for x in r.responses} == {0}
        r = _send(c, 33, 2, req(33, 2, resources=[{"resource_type": 2, "resource_name": n, "configs": [
            {"name": "retention.ms", "value": "86400000"}]} for n in many[:3000]], validate_only=False))
        assert {x.error_code for x in r.responses} == {0}
        r = _send(c, 21, 2, req(21, 2, topics=[{"name": n, "partitions": [
            {"partition_index": p, "offset": -1} for p in range(2)]} for n in many[:3000]], timeout_ms=30000))
        r = _send(c, 30, 3, req(30, 3, creations=[acl(n) for n in many[:3000]]))
        assert {x.error_code for x in r.results} == {0}
        r = _send(c, 31, 3, req(31, 3, filters=[{"resource_type_filter": 2, "resource_name_filter": n,
                                                 "pattern_type_filter": 3, "principal_filter": None,
                                                 "host_filter": None, "operation": 1, "permission_type": 1}
                                                for n in many[:3000]]))
        assert sum(len(f.matching_acls) for f in r.filter_results) == 3000
        r = _send(c, 20, 6, req(20, 6, topics=[{"name": n, "topic_id": bytes(16)} for n in many[:3000]],
                                timeout_ms=30000))
        assert {x.error_code for x in r.responses} == {0}
    print(w.summary())
    w.assert_no_stall()


# A DescribeConfigs answer grows with the topics named: 1,000 topics with synonyms and
# documentation is ~7 MB in ~600,000 encoded parts, 3,000 is ~21 MB in ~1.9 million. Encoded in
# one piece it held the loop 80-300 ms quiet (0.54 s once in a busy full run, with the full
# collections of the heap its ~200,000 response objects set off); handed to the transport as
# ~1.9 million parts, uvloop's write failed with EINVAL and the connection dropped without a
# word. Sliced (``Connection.encode_response_sliced``), with entries shared between topics of the
# same overrides, the loop's own hold-ups stay at a few ms quiet: the bound here is a fraction of
# the one-piece figures and still many times the sliced ones (busy machine).
DESCRIBE_OWN_LAG_S = 0.25


def thousands_of_topics(c: RawClient, n: int) -> list[str]:
    """``adm-desc-0`` .. ``adm-desc-<n-1>``, created (before any watch: creating them is
    test_bounded_admin's) unless they exist."""
    names = [f"adm-desc-{i}" for i in range(n)]
    for i in range(0, n, 1000):
        r = c.request(19, 7, req(19, 7, topics=[{"name": x, "num_partitions": 1, "replication_factor": 1,
                                                  "assignments": [], "configs": []} for x in names[i:i + 1000]],
                                 timeout_ms=60000, validate_only=False))
        assert {t.error_code for t in r.topics} <= {0, E.TOPIC_ALREADY_EXISTS}
    return names


@pytest.mark.parametrize("n", [1000, 3000])
def test_describe_configs_of_thousands_of_topics(broker, n):
    """Every topic's configs with synonyms and documentation, in one request: answered whole
    (Kafka sends an answer of any size: ``socket.request.max.bytes`` bounds requests), each topic's
    entries the ones a DescribeConfigs of that topic alone gives, while the loop keeps serving."""
    b = broker
    c = RawClient(b.bootstrap_servers, client_id="describe-many", timeout=120)
    names = thousands_of_topics(c, n)
    c.request(44, 1, req(44, 1, resources=[{"resource_type": 2, "resource_name": names[1], "configs": [
        {"name": "retention.ms", "config_operation": 0, "value": "3600000"}]}], validate_only=False))

    def describe(these):
        return req(32, 4, resources=[{"resource_type": 2, "resource_name": x, "configuration_keys": None}
                                     for x in these], include_synonyms=True, include_documentation=True)

    alone = {x: c.request(32, 4, describe([x])).results[0] for x in names[:2]}
    with LoopWatch(b.broker.loop_lag, kafka=[b.bootstrap_servers]) as w:
        r = _send(c, 32, 4, describe(names))
    print(f"DescribeConfigs of {n} topics; {w.summary()}")
    w.assert_no_stall(own_lag_s=DESCRIBE_OWN_LAG_S)
    assert [x.resource_name for x in r.results] == names
    assert {(x.error_code, x.error_message) for x in r.results} == {(0, "")}
    assert r.results[1] == alone[names[1]]  # the one with an override
    assert all(x.configs == alone[names[0]].configs for i, x in enumerate(r.results) if i != 1)
    assert len(alone[names[0]].configs) > 40 and all(e.documentation for e in alone[names[0]].configs)
    c.close()


def test_answers_that_grow_with_the_cluster(broker):
    """The other answers that grow with the cluster, each asked for everything the broker has
    (the thousands of topics the tests above made, every partition, every ACL): answered, and
    the loop keeps serving meanwhile (Metadata of all topics with their authorized operations
    held it ~0.5 s for 5,000 topics before it was built in slices)."""
    b = broker
    c = RawClient(b.bootstrap_servers, client_id="grown", timeout=120)
    thousands_of_topics(c, 3000)  # (made by the test above already when it ran first)
    md = c.request(3, 12, req(3, 12, topics=None, allow_auto_topic_creation=False,
                              include_topic_authorized_operations=False))
    topics = {t.name: len(t.partitions) for t in md.topics}
    assert len(topics) >= 3000, len(topics)
    with LoopWatch(b.broker.loop_lag, kafka=[b.bootstrap_servers]) as w:
        r = _send(c, 3, 12, req(3, 12, topics=None, allow_auto_topic_creation=False,
                                include_topic_authorized_operations=True))
        assert {t.name: len(t.partitions) for t in r.topics} == topics
        assert {t.topic_authorized_operations for t in r.topics} != {-2147483648}
        r = _send(c, 3, 12, req(3, 12, topics=[{"name": n, "topic_id": bytes(16)} for n in topics],
                                allow_auto_topic_creation=False, include_topic_authorized_operations=True))
        assert [t.error_code for t in r.topics] == [0] * len(topics)
        r = _send(c, 75, 0, req(75, 0, topics=[{"name": n} for n in topics], response_partition_limit=2000,
                                cursor=None))
        assert r.topics
        r = _send(c, 2, 9, req(2, 9, replica_id=-1, isolation_level=0, timeout_ms=30000, topics=[
            {"name": n, "partitions": [{"partition_index": p, "current_leader_epoch": -1, "timestamp": -1}
                                       for p in range(k)]} for n, k in topics.items()]))
        assert sum(len(t.partitions) for t in r.topics) == sum(topics.values())
        r = _send(c, 35, 4, req(35, 4, topics=None))
        assert sum(len(t.partitions) for d in r.results for t in d.topics) >= sum(topics.values())
        r = _send(c, 29, 3, req(29, 3, resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                                principal_filter=None, host_filter=None, operation=1, permission_type=1))
        _send(c, 16, 5, req(16, 5, states_filter=[], types_filter=[]))
    print(f"{len(topics)} topics, {sum(topics.values())} partitions; {w.summary()}")
    w.assert_no_stall()
    c.close()
