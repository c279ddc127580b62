"""The image itself, built and run under podman: it builds from the repository, runs as non-root,
is healthy with the default configuration and with listeners of the user's choosing, serves the
five stock clients (offsets-for-times included), keeps its data across ``podman stop`` and a new
container on the same volume, and starts unchanged on apache/kafka's documented single-node
KRaft environment.

Figures (image size, build time, time to healthy) land in
~/.cache/hourglass/container/figures.json and in the test output (-s)."""
from __future__ import annotations

import asyncio
import json
import time
import uuid

import pytest

from tests.container import podman as P
from tests.helpers.clients import kcat_consume_json, kcat_offsets_for_times, kcat_produce
from tests.helpers.java import run_java
from tests.helpers.kafka_configs import KAFKA_DOCKER_DOCS_ENV

pytestmark = [pytest.mark.container, pytest.mark.timeout(1800)]

T0 = 1_763_800_000_000
N = 5
TS = [T0 + 1000 * i for i in range(N)]  # offsets-for-times(T0 + 2500) -> offset 3


def _topic(name: str) -> str:
    return f"ct-{name}-{uuid.uuid4().hex[:6]}"


def _http_services_env() -> list[str]:
    """On the host network the Schema Registry and the console get free ports of their own."""
    return ["-e", f"KAFKA_SCHEMA_REGISTRY_LISTENERS=http://127.0.0.1:{P.free_port()}",
            "-e", f"KAFKA_CONSOLE_LISTENERS=http://127.0.0.1:{P.free_port()}"]


def _http_urls(c: "P.Container") -> dict[str, str]:
    """Service name -> URL, from the ready file's ``service NAME URL`` lines."""
    lines = c.exec("cat", "/tmp/hourglass.ready").stdout.splitlines()
    return {p[1]: p[2] for p in (l.split() for l in lines) if len(p) == 3 and p[0] == "service"}


@pytest.fixture(scope="module")
def served(image):
    """The image with the user's own listener (host network, a free port), on a named volume."""
    port = P.free_port()
    volume = f"hgtest-{uuid.uuid4().hex[:8]}"
    P.podman("volume", "create", volume)
    listener = f"PLAINTEXT://127.0.0.1:{port}"
    try:
        with P.Container("--network", "host", "-v", f"{volume}:/var/lib/hourglass",
                         "-e", f"KAFKA_LISTENERS={listener}", "-e", f"KAFKA_ADVERTISED_LISTENERS={listener}",
                         *_http_services_env()) as c:
            P.FIGURES["container_time_to_healthy"] = c.healthy()
            yield c, f"127.0.0.1:{port}"
    finally:
        P.podman("volume", "rm", "-f", volume, check=False)


def test_image_keeps_its_healthcheck_and_runs_as_non_root(served):
    c, bootstrap = served
    cfg = P.podman("image", "inspect", P.IMAGE, "--format", "{{json .Config.Healthcheck.Test}}").stdout
    assert "--ready-file" in cfg  # --format docker kept the HEALTHCHECK
    assert c.inspect()["Config"]["User"] == "hourglass"
    assert c.exec("id", "-u").stdout.strip() == "10001"
    status = c.exec("cat", "/proc/1/status").stdout
    uid_line = next(l for l in status.splitlines() if l.startswith("Uid:"))
    assert uid_line.split()[1:] == ["10001"] * 4  # the broker (pid 1) itself
    assert c.exec("stat", "-c", "%u", "/var/lib/hourglass/meta.properties").stdout.strip() == "10001"
    print(f"\ncontainer_image_size {P.FIGURES['container_image_size']:.0f} MB, "
          f"built in {P.FIGURES['container_image_build']:.1f} s")


def test_healthy_on_listeners_of_the_users_choosing(served):
    c, bootstrap = served
    # KAFKA_LISTENERS=PLAINTEXT://127.0.0.1:<port>: nothing on 9092, the probe follows the ready file
    assert c.exec("cat", "/tmp/hourglass.ready").stdout.splitlines()[1] == f"PLAINTEXT://{bootstrap}"
    assert P.podman("healthcheck", "run", c.name).returncode == 0
    assert c.inspect()["State"]["Health"]["Status"] == "healthy"
    print(f"\ncontainer_time_to_healthy {P.FIGURES['container_time_to_healthy']:.1f} s")


def test_healthy_with_the_default_config(image):
    # its own network namespace: the image's default listeners (9092, 29092) as they are
    with P.Container() as c:
        seconds = c.healthy()
        ready = c.exec("cat", "/tmp/hourglass.ready").stdout
        assert "PLAINTEXT_HOST://0.0.0.0:9092" in ready and "PLAINTEXT://127.0.0.1:29092" in ready
        assert c.inspect()["State"]["Health"]["Status"] == "healthy"
        r = c.exec("hourglass", "probe", "-b", "localhost:9092")
        assert "answers" in r.stdout
        # the Schema Registry and the console are on at their usual ports in the image
        assert "service schema-registry http://127.0.0.1:8081" in ready
        assert "service console http://127.0.0.1:8080" in ready
        for url in ("http://127.0.0.1:8081/schemas/types", "http://127.0.0.1:8080/v3/clusters"):
            r = c.exec("python", "-c", f"import urllib.request; print(urllib.request.urlopen({url!r}, timeout=10).status)")
            assert r.stdout.strip() == "200", url
    print(f"\ncontainer_time_to_healthy_default_config {seconds:.1f} s")


def test_unhealthy_when_the_broker_is_gone(image):
    with P.Container("--network", "none", "-e", "KAFKA_LISTENERS=PLAINTEXT://127.0.0.1:39092",
                     "-e", "KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://127.0.0.1:39092") as c:
        c.healthy()
        # the broker stopped but the ready file stays: the probe must fail, not trust the file
        c.exec("sh", "-c", "cp /tmp/hourglass.ready /tmp/keep")
        r = P.podman("exec", c.name, "hourglass", "probe", "--ready-file", "/tmp/keep", "--timeout", "1")
        assert r.returncode == 0
        c.exec("sh", "-c", "sed -i 's/39092/39093/' /tmp/keep")
        r = P.podman("exec", c.name, "hourglass", "probe", "--ready-file", "/tmp/keep", "--timeout", "1", check=False)
        assert r.returncode == 1 and "cannot reach 127.0.0.1:39093" in r.stderr


# ---- the five stock clients, offsets-for-times included ----------------------------------------

def _kafka_python(bootstrap: str, topic: str) -> tuple[list[int], int]:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        offs = [p.send(topic, value=b"v%d" % i, partition=0, timestamp_ms=ts).get(30).offset for i, ts in enumerate(TS)]
    finally:
        p.close()
    c = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        tp = TopicPartition(topic, 0)
        return offs, c.offsets_for_times({tp: T0 + 2500})[tp].offset
    finally:
        c.close()


def _confluent(bootstrap: str, topic: str) -> tuple[list[int], int]:
    from confluent_kafka import Consumer, Producer, TopicPartition
    p, offs = Producer({"bootstrap.servers": bootstrap, "acks": "all"}), []
    for i, ts in enumerate(TS):
        p.produce(topic, b"v%d" % i, partition=0, timestamp=ts, on_delivery=lambda e, m: offs.append(m.offset()))
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "ct"})
    try:
        [r] = c.offsets_for_times([TopicPartition(topic, 0, T0 + 2500)], timeout=30)
        return offs, r.offset
    finally:
        c.close()


def _aiokafka(bootstrap: str, topic: str) -> tuple[list[int], int]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.structs import TopicPartition

    async def go():
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
        await p.start()
        try:
            offs = [(await p.send_and_wait(topic, b"v%d" % i, partition=0, timestamp_ms=ts)).offset
                    for i, ts in enumerate(TS)]
        finally:
            await p.stop()
        c = AIOKafkaConsumer(bootstrap_servers=bootstrap)
        await c.start()
        try:
            tp = TopicPartition(topic, 0)
            return offs, (await c.offsets_for_times({tp: T0 + 2500}))[tp].offset
        finally:
            await c.stop()
    return asyncio.run(go())


def _kcat(bootstrap: str, topic: str) -> tuple[list[int], int]:
    # kcat sets no CreateTime on produce: its records are checked on consume, and -Q answers for
    # records another client gave timestamps
    kcat_produce(bootstrap, topic, [f"k{i}:v{i}" for i in range(N)])
    got = kcat_consume_json(bootstrap, topic, offset=0, count=N)
    assert [m["payload"] for m in got] == [f"v{i}" for i in range(N)]
    timed = topic + "-t"
    _confluent(bootstrap, timed)
    return [m["offset"] for m in got], kcat_offsets_for_times(bootstrap, timed, 0, T0 + 2500)


def _java(bootstrap: str, topic: str) -> tuple[list[int], int]:
    b = ["--bootstrap", bootstrap, "--topic", topic]
    produced = run_java(["produce", *b, "--partition", 0, "--count", N, "--acks", "all",
                         "--timestamps", ",".join(map(str, TS))])
    [found] = run_java(["offsets-for-times", *b, "--partition", 0, "--ts", T0 + 2500])
    return [r["offset"] for r in produced], found["offset"]


CLIENTS = {"kafka-python": _kafka_python, "confluent-kafka": _confluent, "aiokafka": _aiokafka, "kcat": _kcat,
           "java": _java}


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_stock_client_produces_and_finds_offsets_by_time(served, client, client_tools):
    _, bootstrap = served
    offsets, found = CLIENTS[client](bootstrap, _topic(client))
    assert offsets == list(range(N))
    assert found == 3  # the first record whose timestamp is >= T0 + 2500


# ---- data across containers ----------------------------------------------------------------------

def test_data_survives_stop_and_a_new_container_on_the_same_volume(image):
    from confluent_kafka import Consumer, TopicPartition
    volume = f"hgtest-{uuid.uuid4().hex[:8]}"
    P.podman("volume", "create", volume)
    topic = _topic("durable")
    try:
        port = P.free_port()
        env = ["-e", f"KAFKA_LISTENERS=PLAINTEXT://127.0.0.1:{port}",
               "-e", f"KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://127.0.0.1:{port}"]
        with P.Container("--network", "host", "-v", f"{volume}:/var/lib/hourglass", *env,
                         *_http_services_env()) as first:
            first.healthy()
            offsets, _ = _confluent(f"127.0.0.1:{port}", topic)
            assert offsets == list(range(N))
            meta = first.exec("cat", "/var/lib/hourglass/meta.properties").stdout
            assert first.stop() == 0  # SIGTERM: a clean shutdown
            assert "shutdown complete" in first.logs()
        port = P.free_port()  # a new container, another port, the same volume
        env = ["-e", f"KAFKA_LISTENERS=PLAINTEXT://127.0.0.1:{port}",
               "-e", f"KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://127.0.0.1:{port}"]
        with P.Container("--network", "host", "-v", f"{volume}:/var/lib/hourglass", *env,
                         *_http_services_env()) as second:
            second.healthy()
            assert second.exec("cat", "/var/lib/hourglass/meta.properties").stdout == meta
            bootstrap = f"127.0.0.1:{port}"
            c = Consumer({"bootstrap.servers": bootstrap, "group.id": "ct"})
            try:
                c.assign([TopicPartition(topic, 0, 0)])
                got, deadline = [], time.monotonic() + 30
                while len(got) < N and time.monotonic() < deadline:
                    m = c.poll(0.5)
                    if m is not None and m.error() is None:
                        got.append((m.offset(), m.timestamp()[1], m.value()))
                [r] = c.offsets_for_times([TopicPartition(topic, 0, T0 + 2500)], timeout=30)
            finally:
                c.close()
            assert got == [(i, TS[i], b"v%d" % i) for i in range(N)]
            assert r.offset == 3  # the time index came back too
    finally:
        P.podman("volume", "rm", "-f", volume, check=False)


def _offset_of(out: dict, partition: int):
    """``hourglass offsets --json``: {"topic", "at", "offsets": {"<partition>": offset}}."""
    return out["offsets"][str(partition)]


# ---- apache/kafka's documented environment ---------------------------------------------------

def test_apache_kafka_documented_single_node_environment_unchanged(image):
    # Kafka's docker docs' single-node KRaft variables, as they are: localhost:9092 in the
    # container's own network namespace; clients there are the image's own hourglass commands
    env = [a for k, v in KAFKA_DOCKER_DOCS_ENV.items() for a in ("-e", f"{k}={v}")]
    with P.Container(*env) as c:
        c.healthy()
        topic = _topic("docs")
        c.exec("hourglass", "topics", "create", topic, "--partitions", "3")
        lines = "".join(f"{ts}|v{i}\n" for i, ts in enumerate(TS))
        r = P.podman("exec", "-i", c.name, "hourglass", "produce", topic, "-p", "0", "-T", "|", input=lines)
        assert r.returncode == 0, r.stderr
        out = json.loads(c.exec("hourglass", "offsets", topic, "--at", str(T0 + 2500), "--json").stdout)
        assert _offset_of(out, 0) == 3, out
        got = c.exec("hourglass", "consume", topic, "-p", "0", "--from-beginning", "-e", "-f", "%o %T %s\\n").stdout
        assert got.split("\n")[:N] == [f"{i} {TS[i]} v{i}" for i in range(N)]
        log = c.logs()
        assert "Hourglass is its own controller" in log and "ERROR" not in log


def test_schema_registry_and_console_served_to_the_host(served):
    # an Avro producer against the container's registry, the record read back through its REST v3
    from confluent_kafka import Producer
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    c, bootstrap = served
    urls = _http_urls(c)
    topic = _topic("avro")
    registry = SchemaRegistryClient({"url": urls["schema-registry"]})
    schema = '{"type": "record", "name": "Click", "fields": [{"name": "page", "type": "string"}]}'
    ser = AvroSerializer(registry, schema)
    p = Producer({"bootstrap.servers": bootstrap})
    p.produce(topic, ser({"page": "/home"}, SerializationContext(topic, MessageField.VALUE)))
    assert p.flush(30) == 0
    assert json.loads(registry.get_latest_version(f"{topic}-value").schema.schema_str) == json.loads(schema)
    import urllib.request
    with urllib.request.urlopen(f"{urls['console']}/v3/clusters", timeout=10) as r:
        cluster = json.loads(r.read())["data"][0]["cluster_id"]
    with urllib.request.urlopen(f"{urls['console']}/v3/clusters/{cluster}/topics/{topic}/partitions/0", timeout=10) as r:
        part = json.loads(r.read())
    assert part["partition_id"] == 0
