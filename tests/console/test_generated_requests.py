"""Generated requests (schemathesis) against both HTTP services of a real broker: REST v3 and
the Schema Registry. Every route the running application serves is in the OpenAPI document
(``tests.helpers.openapi_routes``: read from the router, Hourglass's own description), and
each gets requests schemathesis makes up -- path parameters, JSON bodies of any shape,
bounded in examples per route. Checked on every answer:
never a 5xx, and an error is Confluent's JSON ``{"error_code": int, "message": str}``.

Why not Confluent's own OpenAPI documents (kafka-rest's api/v3/openapi.yaml, the registry's
generated spec): no package registry this project may use ships them (Confluent's kafka-rest
and schema-registry artifacts are not on Maven Central; none of the npm or PyPI packages
naming Confluent carries either document), and fetched files may not be committed. So the
response-schema and status-code conformance to Confluent's documents is not checked here;
the hand-written tests beside this one check Confluent's shapes resource by resource.
"""
from __future__ import annotations

import json
import urllib.request

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings

from hourglass.embedded import EmbeddedBroker
from tests.helpers.openapi_routes import app_of, document

pytestmark = pytest.mark.xdist_group("generated_requests")

EXAMPLES = 25  # per operation (68 in /v3, 33 in the registry): bounds the requests


@pytest.fixture(scope="module")
def services():
    """A broker with something to find: a topic with records, a group with committed offsets,
    a registered subject -- so generated requests naming them reach the handlers."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
    with EmbeddedBroker(console=True, schema_registry=True) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})  # held: a collected client fails its futures
        admin.create_topics([NewTopic("gen", 2)])["gen"].result(30)
        p = Producer({"bootstrap.servers": b.bootstrap_servers})
        for i in range(20):
            p.produce("gen", b"v%d" % i, key=b"k%d" % i, partition=i % 2)
        assert p.flush(10) == 0
        c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "gen-g", "enable.auto.commit": False})
        c.commit(offsets=[TopicPartition("gen", 0, 3)], asynchronous=False)
        c.close()
        schema = {"type": "record", "name": "Gen", "fields": [{"name": "n", "type": "int"}]}
        req = urllib.request.Request(b.schema_registry_url + "/subjects/gen-value/versions", method="POST",
                                     data=json.dumps({"schema": json.dumps(schema)}).encode(),
                                     headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 200
        yield b


@pytest.fixture(scope="module")
def console_schema(services):
    doc = document(app_of(services.broker, "console"), "Hourglass REST v3 (from its router)", prefix="/v3/",
                   pinned={"cluster_id": services.broker.cluster_id},
                   fixed={"topic_name": "gen", "partition_id": "0", "broker_id": "1", "group_id": "gen-g",
                          "name": "retention.ms"})
    return schemathesis.openapi.from_dict(doc)


@pytest.fixture(scope="module")
def registry_schema(services):
    return schemathesis.openapi.from_dict(document(
        app_of(services.broker, "schema-registry"), "Hourglass Schema Registry (from its router)",
        fixed={"subject": "gen-value", "version": "1", "id": "1"}))


def confluent_error_json(response) -> None:
    """An error answer is Confluent's error JSON (never an HTML page or a bare string)."""
    if response.status_code < 400:
        return
    body = json.loads(response.content)
    assert isinstance(body, dict) and set(body) == {"error_code", "message"}, body
    assert isinstance(body["error_code"], int) and isinstance(body["message"], str), body


def _run(case, url: str) -> None:
    r = case.call(base_url=url, timeout=30)
    assert r.status_code < 500, (case.method, case.formatted_path, case.body, r.status_code, r.text[:500])
    confluent_error_json(r)


def fuzz(schema, url: str) -> tuple[int, list[str]]:
    """EXAMPLES generated cases of every operation of ``schema``; returns (cases sent,
    failures). Only schemathesis's positive generation: a document whose parameters are any
    string and whose bodies are any JSON has nothing its negative mode could break (it spent
    a minute proving that), and the unknown values it would try are generated anyway. (The
    operations are driven through hypothesis here rather than
    ``schemathesis.pytest.from_fixture``, which reads a private attribute pytest 9 no longer has.)"""
    sent, failures = [0], []
    for result in schema.get_all_operations():
        op = result.ok()

        @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
                  derandomize=True, database=None, phases=[Phase.explicit, Phase.generate])
        @given(case=op.as_strategy())
        def one(case):
            sent[0] += 1
            _run(case, url)
        try:
            one()
        except AssertionError as e:
            failures.append(f"{op.label}: {e}")
    return sent[0], failures


@pytest.mark.timeout(600)  # the time bound; both take about 70 s on a busy 2-core host
def test_rest_v3_generated_requests(services, console_schema):
    sent, failures = fuzz(console_schema, services.console_url)
    assert not failures, "\n".join(failures)
    assert sent > 500, sent


@pytest.mark.timeout(600)
def test_schema_registry_generated_requests(services, registry_schema):
    sent, failures = fuzz(registry_schema, services.schema_registry_url)
    assert not failures, "\n".join(failures)
    assert sent > 400, sent
