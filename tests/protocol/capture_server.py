"""A fake broker that records the request frames real clients send (test helper only).

It listens on 127.0.0.1:0 and answers just enough for a client to get past bootstrap:
- ApiVersions: every range in ``protocol.api_keys.APIS`` (response header v0; an unknown
  version gets UNSUPPORTED_VERSION in a v0 body, as a broker does);
- Metadata: one broker (ourselves, node 0, also the controller) and every topic asked for
  (or ``golden`` when all topics are asked for) with one partition led by node 0;
- FindCoordinator: node 0 is the coordinator (when the API is declared);
- ListOffsets: offset 0 for every partition, so consumers go on to Fetch;
- DescribeConfigs: one dynamic ``retention.ms`` (kafka-python reads them before it sends AlterConfigs).
Every other request is recorded and left unanswered: the client times out, which is fine.

Each frame is stored as the bytes after the 4-byte size prefix (request header + body).

Run ``.venv/bin/python tests/protocol/capture_server.py [--out DIR] [--only CLIENT...]`` from
the repository root to drive kafka-python, confluent-kafka, aiokafka and kcat against it and
write ``DIR/<client>/<api>_request_v<N>.bin`` (first frame of each API/version per client).
"""
from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

if __name__ == "__main__":  # run as a script from the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from protocol.api_keys import APIS  # noqa: E402
from protocol.header import decode_request_header, peek_api, response_header_version  # noqa: E402
from protocol.header import encode_response_header  # noqa: E402
from protocol.codec import CompiledMessage  # noqa: E402
from protocol.schema import F, api  # noqa: E402

# Ranges the broker will serve (the project's table), advertised for APIs whose module is
# not declared yet so that clients still send them (their frames are recorded, unanswered).
PLANNED = {8: (0, 9), 9: (0, 9), 10: (0, 6), 11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5),
           15: (0, 5), 16: (0, 5), 17: (0, 1), 24: (0, 5), 25: (0, 4), 26: (0, 4), 28: (0, 4),
           42: (0, 2), 47: (0, 0)}

# FindCoordinator's response, used only while protocol/messages/find_coordinator.py is
# missing (clients need a coordinator before they send JoinGroup).
_FIND_COORDINATOR = api(10, "FindCoordinator", valid="0-6", flexible="3+", request=[
    F("key", "string", "0-3"),
    F("key_type", "int8", "1+"),
    F("coordinator_keys", "[]string", "4+"),
], response=[
    F("throttle_time_ms", "int32", "1+", ignorable=True),
    F("error_code", "int16", "0-3"),
    F("error_message", "string", "1-3", nullable="1-3", default=None, ignorable=True),
    F("node_id", "int32", "0-3"),
    F("host", "string", "0-3"),
    F("port", "int32", "0-3"),
    F("coordinators", "[]Coordinator", "4+", fields=[
        F("key", "string", "4+"),
        F("node_id", "int32", "4+"),
        F("host", "string", "4+"),
        F("port", "int32", "4+"),
        F("error_code", "int16", "4+"),
        F("error_message", "string", "4+", nullable="4+", default=None, ignorable=True),
    ]),
])

_FALLBACK_FC = (CompiledMessage(_FIND_COORDINATOR.request),
                CompiledMessage(_FIND_COORDINATOR.response))

PLANNED_NAMES = {8: "OffsetCommit", 9: "OffsetFetch", 10: "FindCoordinator", 11: "JoinGroup",
                 12: "Heartbeat", 13: "LeaveGroup", 14: "SyncGroup", 15: "DescribeGroups",
                 16: "ListGroups", 17: "SaslHandshake", 24: "AddPartitionsToTxn",
                 25: "AddOffsetsToTxn", 26: "EndTxn", 28: "TxnOffsetCommit", 42: "DeleteGroups",
                 47: "OffsetDelete"}

TOPIC = "golden"
TOPIC_ID = bytes(range(1, 17))
UNSUPPORTED_VERSION = 35


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class CaptureServer:
    """Records ``(api_key, api_version, frame)`` for every request, in arrival order."""

    def __init__(self) -> None:
        self.frames: list[tuple[int, int, bytes]] = []
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._conns: set[asyncio.StreamWriter] = set()

    # ---- lifecycle (the server runs on its own loop in a thread) ------------------------------
    def start(self) -> int:
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._server = self._loop.run_until_complete(
                asyncio.start_server(self._serve, "127.0.0.1", 0))
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        ready.wait(5)
        return self.port

    def stop(self) -> None:
        async def close() -> None:
            self._server.close()
            for w in list(self._conns):
                w.close()
        asyncio.run_coroutine_threadsafe(close(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    # ---- protocol -----------------------------------------------------------------------------
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._conns.add(writer)
        try:
            while True:
                head = await reader.readexactly(4)
                (n,) = struct.unpack(">i", head)
                frame = await reader.readexactly(n)
                key, version, corr = peek_api(frame)
                self.frames.append((key, version, frame))
                body = self._answer(key, version, frame)
                if body is not None:
                    flexible = (APIS[key].flexible(version) if key in APIS
                                else version in _FIND_COORDINATOR.request.flex_v)
                    hdr = encode_response_header(corr, response_header_version(key, flexible))
                    writer.write(struct.pack(">i", len(hdr) + len(body)) + hdr + body)
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._conns.discard(writer)
            writer.close()

    def _answer(self, key: int, version: int, frame: bytes) -> bytes | None:
        if key == 18:
            return self._api_versions(version)
        make = {3: self._metadata, 10: self._find_coordinator, 2: self._list_offsets,
                32: self._describe_configs}.get(key)
        if make is None:
            return None
        if key in APIS:
            request, response = APIS[key].request, APIS[key].response
        elif key == 10:
            request, response = _FALLBACK_FC
        else:
            return None
        if version not in request.spec.valid_v:
            return None
        hv = 2 if version in request.spec.flex_v else 1
        try:
            _hdr, pos = decode_request_header(frame, hv)
            req, _ = request.decode(frame, version, pos)
        except Exception:  # a frame we cannot decode is still recorded; just stay silent
            return None
        return response.encode(make(response.cls, req, version), version)

    def _api_versions(self, version: int) -> bytes:
        api = APIS[18]
        R = api.response.cls
        table = {k: (a.min_version, a.max_version) for k, a in APIS.items()}
        for k, rng in PLANNED.items():
            table.setdefault(k, rng)
        ranges = [R.ApiVersion(api_key=k, min_version=lo, max_version=hi)
                  for k, (lo, hi) in sorted(table.items())]
        if not api.min_version <= version <= api.max_version:
            return api.response.encode(
                R(error_code=UNSUPPORTED_VERSION, api_keys=[r for r in ranges if r.api_key == 18]), 0)
        return api.response.encode(R(error_code=0, api_keys=ranges), version)

    def _metadata(self, R, req, version: int):
        names = [t.name for t in (req.topics or []) if t.name] or [TOPIC]
        topics = [R.MetadataResponseTopic(
            error_code=0, name=name, topic_id=TOPIC_ID if version >= 10 else bytes(16),
            partitions=[R.MetadataResponsePartition(
                error_code=0, partition_index=0, leader_id=0,
                leader_epoch=0 if version >= 7 else -1, replica_nodes=[0], isr_nodes=[0])])
            for name in names]
        return R(brokers=[R.MetadataResponseBroker(node_id=0, host="127.0.0.1", port=self.port)],
                 cluster_id="golden-cluster" if version >= 2 else None,
                 controller_id=0 if version >= 1 else -1, topics=topics)

    def _find_coordinator(self, R, req, version: int):
        if version >= 4:
            return R(coordinators=[R.Coordinator(key=k, node_id=0, host="127.0.0.1", port=self.port)
                                   for k in req.coordinator_keys])
        return R(node_id=0, host="127.0.0.1", port=self.port)

    def _describe_configs(self, R, req, version: int):
        # kafka-python reads the dynamic configs (and checks the keys exist) before AlterConfigs.
        def configs():
            return [R.DescribeConfigsResourceResult(name="retention.ms", value="604800000",
                                                    config_source=1 if version >= 1 else -1)]
        return R(results=[R.DescribeConfigsResult(error_code=0, error_message=None,
                                                  resource_type=r.resource_type,
                                                  resource_name=r.resource_name,
                                                  configs=configs())
                          for r in req.resources])

    def _list_offsets(self, R, req, version: int):
        return R(topics=[R.ListOffsetsTopicResponse(name=t.name, partitions=[
            R.ListOffsetsPartitionResponse(
                partition_index=p.partition_index, error_code=0,
                old_style_offsets=[0] if version == 0 else [],
                timestamp=-1, offset=0 if version >= 1 else -1)
            for p in t.partitions]) for t in req.topics])


# ---- client scenarios ---------------------------------------------------------------------------
def _quiet(fn, *a, **kw):
    try:
        fn(*a, **kw)
    except Exception:  # the clients fail after their first unanswered request: expected
        pass


def drive_kafka_python(bootstrap: str, api_version=None) -> None:
    import kafka
    from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic
    common = dict(bootstrap_servers=bootstrap, request_timeout_ms=1500, api_version=api_version,
                  client_id="golden-kafka-python")

    def produce() -> None:
        p = kafka.KafkaProducer(max_block_ms=3000, retries=0, linger_ms=0, **common)
        try:
            p.send(TOPIC, key=b"k", value=b"golden value", timestamp_ms=1_700_000_000_000)
            p.flush(timeout=3)
        finally:
            p.close(timeout=0)
    _quiet(produce)
    if api_version is not None:
        return

    def consume_assigned() -> None:
        c = kafka.KafkaConsumer(auto_offset_reset="earliest", enable_auto_commit=False,
                                fetch_max_wait_ms=100, **common)
        try:
            tp = kafka.TopicPartition(TOPIC, 0)
            c.assign([tp])
            c.seek_to_beginning(tp)
            c.poll(timeout_ms=2500)
        finally:
            c.close(autocommit=False)
    _quiet(consume_assigned)

    def consume_group() -> None:
        c = kafka.KafkaConsumer(TOPIC, group_id="golden-group", session_timeout_ms=10000,
                                heartbeat_interval_ms=3000, **common)
        try:
            c.poll(timeout_ms=2500)
        finally:
            c.close(autocommit=False)
    _quiet(consume_group)

    def admin(op) -> None:
        a = kafka.KafkaAdminClient(**common)
        try:
            op(a)
        finally:
            a.close()
    topic_res = ConfigResource(ConfigResourceType.TOPIC, TOPIC)
    for op in (
        lambda a: a.create_topics([NewTopic("golden-new", 3, 1, topic_configs={"retention.ms": "1000"})],
                                  timeout_ms=1000),
        lambda a: a.describe_configs([topic_res]),
        lambda a: a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, TOPIC,
                                                  configs={"retention.ms": "2000"})]),
        lambda a: a.create_partitions({TOPIC: NewPartitions(4)}, timeout_ms=1000),
        lambda a: a.delete_records({kafka.TopicPartition(TOPIC, 0): 5}, timeout_ms=1000),
        lambda a: a.delete_topics(["golden-new"], timeout_ms=1000),
    ):
        _quiet(admin, op)


def drive_confluent(bootstrap: str) -> None:
    import confluent_kafka as ck
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                       NewPartitions, NewTopic)
    common = {"bootstrap.servers": bootstrap, "client.id": "golden-confluent",
              "socket.timeout.ms": 1500, "log_level": 0}

    p = ck.Producer({**common, "message.timeout.ms": 2000, "linger.ms": 0})
    p.produce(TOPIC, key=b"k", value=b"golden value", timestamp=1_700_000_000_000)
    p.flush(3)

    c = ck.Consumer({**common, "group.id": "golden-group", "enable.auto.commit": False,
                     "fetch.wait.max.ms": 100})
    c.assign([ck.TopicPartition(TOPIC, 0, ck.OFFSET_BEGINNING)])
    c.poll(2.5)
    c.close()

    g = ck.Consumer({**common, "group.id": "golden-group", "session.timeout.ms": 10000})
    g.subscribe([TOPIC])
    g.poll(2.5)
    g.close()

    a = AdminClient(common)
    futures = []
    futures += a.create_topics([NewTopic("golden-new", 3, 1, config={"retention.ms": "1000"})],
                               operation_timeout=1, request_timeout=1.5).values()
    futures += a.describe_configs([ConfigResource("topic", TOPIC)], request_timeout=1.5).values()
    futures += a.incremental_alter_configs([ConfigResource("topic", TOPIC, incremental_configs=[
        ConfigEntry("retention.ms", "2000", incremental_operation=AlterConfigOpType.SET)])],
        request_timeout=1.5).values()
    futures += a.create_partitions([NewPartitions(TOPIC, 4)], request_timeout=1.5).values()
    futures += a.delete_records([ck.TopicPartition(TOPIC, 0, 5)], request_timeout=1.5).values()
    futures += a.delete_topics(["golden-new"], operation_timeout=1, request_timeout=1.5).values()
    for f in futures:
        _quiet(f.result, timeout=4)


def drive_aiokafka(bootstrap: str) -> None:
    import aiokafka
    from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic, RecordsToDelete
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    async def produce() -> None:
        p = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=1500,
                                      client_id="golden-aiokafka")
        await p.start()
        try:
            await asyncio.wait_for(p.send_and_wait(TOPIC, b"golden value", key=b"k",
                                                   timestamp_ms=1_700_000_000_000), 3)
        finally:
            await asyncio.wait_for(p.stop(), 3)

    async def consume_assigned() -> None:
        c = aiokafka.AIOKafkaConsumer(bootstrap_servers=bootstrap, request_timeout_ms=1500,
                                      auto_offset_reset="earliest", enable_auto_commit=False,
                                      fetch_max_wait_ms=100, client_id="golden-aiokafka")
        await c.start()
        try:
            c.assign([aiokafka.TopicPartition(TOPIC, 0)])
            await c.getmany(timeout_ms=2500)
        finally:
            await asyncio.wait_for(c.stop(), 3)

    async def consume_group() -> None:
        c = aiokafka.AIOKafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id="golden-group",
                                      request_timeout_ms=1500, client_id="golden-aiokafka")
        await c.start()
        try:
            await c.getmany(timeout_ms=2500)
        finally:
            await asyncio.wait_for(c.stop(), 3)

    async def admin(op) -> None:
        a = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=1500,
                                client_id="golden-aiokafka")
        await a.start()
        try:
            await asyncio.wait_for(op(a), 3)
        finally:
            await a.close()

    async def run(coro_fn, *args) -> None:
        try:
            await asyncio.wait_for(coro_fn(*args), 8)
        except BaseException as exc:  # noqa: BLE001 (timeouts and client errors are expected)
            if isinstance(exc, KeyboardInterrupt):
                raise

    async def main() -> None:
        await run(produce)
        await run(consume_assigned)
        await run(consume_group)
        for op in (
            lambda a: a.create_topics([NewTopic("golden-new", 3, 1,
                                                topic_configs={"retention.ms": "1000"})],
                                      timeout_ms=1000),
            lambda a: a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, TOPIC)]),
            lambda a: a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, TOPIC,
                                                      configs={"retention.ms": "2000"})]),
            lambda a: a.create_partitions({TOPIC: NewPartitions(4)}, timeout_ms=1000),
            lambda a: a.delete_records({aiokafka.TopicPartition(TOPIC, 0): RecordsToDelete(5)},
                                       timeout_ms=1000),
            lambda a: a.delete_topics(["golden-new"], timeout_ms=1000),
        ):
            await run(admin, op)
    asyncio.run(main())


def drive_kcat(bootstrap: str) -> None:
    kcat = "/usr/bin/kcat"
    base = [kcat, "-b", bootstrap, "-X", "client.id=golden-kcat", "-X", "socket.timeout.ms=1500"]
    runs = [
        (base + ["-L", "-t", TOPIC], None),
        (base + ["-P", "-t", TOPIC, "-p", "0", "-X", "message.timeout.ms=2000"], b"golden value\n"),
        (base + ["-C", "-t", TOPIC, "-p", "0", "-o", "beginning", "-e", "-c", "1"], None),
    ]
    for cmd, stdin in runs:
        try:
            subprocess.run(cmd, input=stdin, timeout=5, capture_output=True)
        except subprocess.TimeoutExpired:
            pass


CLIENTS = {
    "kafka-python": lambda b: drive_kafka_python(b),
    "kafka-python-api0.10": lambda b: drive_kafka_python(b, api_version=(0, 10)),
    "kafka-python-api0.9": lambda b: drive_kafka_python(b, api_version=(0, 9)),
    "confluent-kafka": drive_confluent,
    "aiokafka": drive_aiokafka,
    "kcat": drive_kcat,
}


def capture(client: str) -> list[tuple[int, int, bytes]]:
    server = CaptureServer()
    port = server.start()
    try:
        CLIENTS[client](f"127.0.0.1:{port}")
        time.sleep(0.2)
    finally:
        server.stop()
    return list(server.frames)


def api_file_name(key: int, version: int) -> str:
    name = APIS[key].name if key in APIS else PLANNED_NAMES.get(key, f"Api{key}")
    return f"{snake(name)}_request_v{version}.bin"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).parent / "golden"))
    ap.add_argument("--only", nargs="*", default=list(CLIENTS))
    args = ap.parse_args(argv)
    for client in args.only:
        if client == "kcat" and not os.path.exists("/usr/bin/kcat"):
            continue
        frames = capture(client)
        out = Path(args.out) / client
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        seen = set()
        for key, version, frame in frames:
            if (key, version) in seen:
                continue
            seen.add((key, version))
            (out / api_file_name(key, version)).write_bytes(frame)
        print(client, sorted(seen), flush=True)


if __name__ == "__main__":
    main()
