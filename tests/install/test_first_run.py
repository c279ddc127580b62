"""``make run`` on a fresh clone: it installs only what the broker needs, the broker answers
ApiVersions within seconds (the figure itself is bench/first_run.py's; the bound here is one a
fresh machine meets with a cold pip cache), and that runtime-only install serves every feature:
the Kafka API, the Schema Registry (each format, schema tags, Confluent's built-in Protobuf
imports, the serializers), REST v3 and the console's pages. A served feature whose import is
missing from the runtime dependencies fails here, where ``make test``'s fuller venv would hide it.
The clients run in the test's venv; only the broker runs from the runtime-only one."""
from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
import tomllib
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_first_run", ROOT / "bench" / "first_run.py")
first_run = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(first_run)

# The packages the broker serves from (pipeline/ is the `pipeline` extra's).
SERVED_PACKAGES = ("protocol", "storage", "broker", "hourglass", "web", "schema_registry", "console")
# Imports of the served packages that the runtime install may lack, each with the extra that
# brings it (pyproject.toml's optional-dependencies, checked below) and why it is not a served
# feature: the pytest plugin and the test clients' configs (the test extras), the plot command.
OPTIONAL_IMPORTS = {
    "pytest": ("test", "hourglass/testing.py: the pytest plugin, loaded by pytest only"),
    "kafka": ("test", "hourglass/secure.py: kafka-python's settings, for a test that uses that client"),
    "aiokafka": ("test", "hourglass/secure.py: aiokafka's settings, for a test that uses that client"),
    "matplotlib": ("plot", "hourglass/cli/plot.py: `hourglass plot`"),
}
CT = "application/vnd.schemaregistry.v1+json"


def imported_modules() -> dict[str, set[str]]:
    """Every absolute import in the served packages (nested ones too: lazily imported modules
    are what a feature needs only once it is used) -> the files importing it."""
    out: dict[str, set[str]] = {}
    for pkg in SERVED_PACKAGES:
        for f in (ROOT / pkg).rglob("*.py"):
            for node in ast.walk(ast.parse(f.read_text())):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else []
                for n in names:
                    if n.split(".")[0] not in SERVED_PACKAGES and n.split(".")[0] not in sys.stdlib_module_names:
                        out.setdefault(n, set()).add(str(f.relative_to(ROOT)))
    return out


def call(url: str, method: str = "GET", body=None, ctype: str = CT) -> tuple[int, object]:
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request(url, method=method, data=data)
    if data is not None:
        req.add_header("Content-Type", ctype)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            raw = r.read()
            status = r.status
    except urllib.error.HTTPError as e:
        raw, status = e.read(), e.code
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode(errors="replace")


def ok(url, method="GET", body=None, status=200, ctype=CT):
    s, b = call(url, method, body, ctype)
    assert s == status, (method, url, s, b)
    return b


# A Protobuf schema on Confluent's built-in imports only (ProtobufSchema.KNOWN_DEPENDENCIES: no
# references sent), with a tag through confluent/meta.proto's options.
PROTO_BUILT_INS = '''syntax = "proto3";
package rt;

import "confluent/meta.proto";
import "confluent/type/decimal.proto";
import "confluent/type/variant.proto";
import "google/type/date.proto";
import "google/type/money.proto";
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";

message Order {
  option (confluent.message_meta) = { tags: ["ORDER"] };
  string id = 1 [(confluent.field_meta) = { tags: ["PII"] }];
  confluent.type.Decimal amount = 2;
  google.type.Date day = 3;
  google.type.Money price = 4;
  google.protobuf.Timestamp at = 5;
  google.protobuf.StringValue note = 6;
  confluent.type.Variant extra = 7;
}
'''


def exercise_every_feature(ready_text: str, venv_python: Path) -> None:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    lines = ready_text.split()
    bootstrap = lines[0]
    services = {}
    for line in ready_text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "service":
            services.setdefault(parts[1], parts[2])
    sr_url, console_url = services["schema-registry"], services["console"]
    run = uuid.uuid4().hex[:8]

    # Kafka: a topic, records produced and consumed
    topic = f"rt-{run}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    sr = SchemaRegistryClient({"url": sr_url})
    avro_schema = '{"type":"record","name":"Reading","fields":[{"name":"sensor","type":"string","confluent:tags":["PII"]},{"name":"value","type":"double"}]}'
    json_schema = json.dumps({"type": "object", "properties": {"sensor": {"type": "string", "confluent:tags": ["PII"]},
                                                              "value": {"type": "number"}}})
    avro_ser = AvroSerializer(sr, avro_schema)
    json_ser = JSONSerializer(json_schema, sr)
    jtopic = f"rt-json-{run}"
    p = Producer({"bootstrap.servers": bootstrap})
    value = {"sensor": "t1", "value": 1.5}
    p.produce(topic, value=avro_ser(value, SerializationContext(topic, MessageField.VALUE)))
    p.produce(jtopic, value=json_ser(value, SerializationContext(jtopic, MessageField.VALUE)))
    assert p.flush(30) == 0
    for t, de in ((topic, AvroDeserializer(sr)), (jtopic, JSONDeserializer(json_schema, schema_registry_client=sr))):
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{t}", "auto.offset.reset": "earliest"})
        c.subscribe([t])
        try:
            m = c.poll(30)
            assert m is not None and m.error() is None, m and m.error()
            assert de(m.value(), SerializationContext(t, MessageField.VALUE)) == value
        finally:
            c.close()

    # the registry: Protobuf on Confluent's built-in imports, tags found and edited on each format
    subj = f"rt-pb-{run}-value"
    pb = ok(f"{sr_url}/subjects/{subj}/versions", "POST", {"schema": PROTO_BUILT_INS, "schemaType": "PROTOBUF"})
    found = ok(f"{sr_url}/subjects/{subj}/versions/1?findTags=PII&findTags=ORDER")
    assert [(t["schemaEntity"]["entityPath"], t["tags"]) for t in found["schemaTags"]] == [
        ("Order", ["ORDER"]), ("Order.id", ["PII"])], found
    edited = ok(f"{sr_url}/subjects/{subj}/versions/1/tags", "POST", {"tagsToAdd": [
        {"schemaEntity": {"entityPath": "Order.note", "entityType": "sr_field"}, "tags": ["FREE_TEXT"]}]})
    assert edited["version"] == 2 and edited["id"] != pb["id"]
    for fmt_subject, path in ((f"{topic}-value", "Reading.sensor"), (f"{jtopic}-value", "object.sensor")):
        got = ok(f"{sr_url}/subjects/{fmt_subject}/versions/latest?findTags=PII")
        assert [t["schemaEntity"]["entityPath"] for t in got.get("schemaTags", [])] == [path], got
    for kind, text in (("AVRO", avro_schema), ("JSON", json_schema)):
        s = f"rt-tags-{kind.lower()}-{run}"
        ok(f"{sr_url}/subjects/{s}/versions", "POST", {"schema": text, "schemaType": kind})
        entity = "Reading" if kind == "AVRO" else "object"
        r = ok(f"{sr_url}/subjects/{s}/versions/1/tags", "POST", {"tagsToAdd": [
            {"schemaEntity": {"entityPath": entity, "entityType": "sr_record"}, "tags": ["T"]}]})
        assert r["version"] == 2
    # the serialized (base64 descriptor) form confluent-kafka's Protobuf serializer registers
    ser = ok(f"{sr_url}/subjects/{subj}/versions/1?format=serialized")
    assert ok(f"{sr_url}/subjects/{subj}", "POST", {"schema": ser["schema"], "schemaType": "PROTOBUF"})["version"] == 1

    # REST v3: the cluster, a topic created, a record produced, read back over Kafka
    clusters = ok(f"{console_url}/v3/clusters", ctype="application/json")
    cid = clusters["data"][0]["cluster_id"]
    rtopic = f"rt-rest-{run}"
    ok(f"{console_url}/v3/clusters/{cid}/topics", "POST", {"topic_name": rtopic, "partitions_count": 1}, 201,
       ctype="application/json")
    r = ok(f"{console_url}/v3/clusters/{cid}/topics/{rtopic}/records", "POST",
           {"value": {"type": "JSON", "data": {"a": 1}}}, ctype="application/json")
    assert r["error_code"] == 200 and r["offset"] == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{rtopic}", "auto.offset.reset": "earliest"})
    c.subscribe([rtopic])
    try:
        m = c.poll(30)
        assert m is not None and m.error() is None and m.value() == b'{"a":1}'
    finally:
        c.close()

    # the console's pages: the overview, a topic's records decoded through the registry, schemas
    for path, needle in (("/", "Hourglass"), (f"/topics/{topic}", topic), (f"/topics/{topic}/records", "t1"),
                         ("/schemas", subj), (f"/schemas/{subj}", "confluent.type.Decimal")):
        status, page = call(console_url + path)
        assert status == 200 and needle in page, (path, status, str(page)[:2000])

    # every import of the served packages resolves in the runtime-only venv, but the declared
    # optional ones (each brought by an extra of pyproject.toml)
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert all(extra in extras for extra, _ in OPTIONAL_IMPORTS.values())
    modules = sorted(m for m in imported_modules() if m.split(".")[0] not in OPTIONAL_IMPORTS)
    probe = "import importlib, json, sys\nmissing = []\nfor m in json.loads(sys.argv[1]):\n" \
            "    try:\n        importlib.import_module(m)\n" \
            "    except ImportError as e:\n        missing.append([m, str(e)])\nprint(json.dumps(missing))"
    r = subprocess.run([str(venv_python), "-c", probe, json.dumps(modules)], capture_output=True, text=True,
                       cwd="/", timeout=60)
    assert r.returncode == 0, r.stderr
    missing = json.loads(r.stdout)
    where = imported_modules()
    assert not missing, {m: (why, sorted(where[m])) for m, why in missing}


@pytest.mark.timeout(600)
def test_make_run_from_a_clean_clone_answers_apiversions_and_serves_every_feature(tmp_path):
    venv_python = tmp_path / "hourglass" / ".venv" / "bin" / "python"
    figures = first_run.first_run(tmp_path, timeout=300,
                                  serving=lambda ready: exercise_every_feature(ready, venv_python))
    print(f"first_run_clone_to_apiversions {figures['first_run_clone_to_apiversions']:.1f} s")
    # the broker's dependencies are there; the test extras (pytest, pyspark, ...) are not
    r = subprocess.run([str(venv_python), "-c", "import uvloop, confluent_kafka, cryptography"], capture_output=True)
    assert r.returncode == 0, r.stderr
    for heavy in ("pyspark", "pytest", "matplotlib", "kafka", "aiokafka"):
        r = subprocess.run([str(venv_python), "-c", f"import {heavy}"], capture_output=True)
        assert r.returncode != 0, f"make run installed {heavy}"
    assert not (tmp_path / "hourglass" / ".venv" / ".hourglass-installed").exists()
