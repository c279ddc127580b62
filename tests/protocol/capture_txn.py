"""Record the transaction request frames real clients send (test helper, run by hand).

``capture_server.py`` answers too little for a transactional producer to get past
InitProducerId, so this drives the clients against a real Hourglass broker through a
recording TCP proxy (the broker advertises the proxy's port, so every connection goes
through it). Each client runs one committed transaction with ``send_offsets_to_transaction``
and one aborted transaction; the first frame of each API/version among FindCoordinator (key
type 1, transaction), InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and
TxnOffsetCommit is written to ``golden/txn-<client>/<api>_request_v<N>.bin`` (request header +
body, as ``test_golden.py`` reads them), and ``golden/TXN-README.md`` lists them.

    .venv/bin/python tests/protocol/capture_txn.py
"""
from __future__ import annotations

import asyncio
import shutil
import socket
import struct
import sys
import tempfile
import threading
from pathlib import Path

if __name__ == "__main__":  # run as a script from the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from protocol.api_keys import APIS  # noqa: E402
from protocol.header import decode_request_header, peek_api  # noqa: E402

GOLDEN = Path(__file__).parent / "golden"
TXN_APIS = {10, 22, 24, 25, 26, 28}
TOPIC, GROUP = "golden", "golden-group"


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


class Proxy:
    """Forwards 127.0.0.1:<port> to the broker, keeping each client-to-broker frame."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.frames: list[bytes] = []
        self.target: tuple[str, int] | None = None

    def start(self, target: tuple[str, int]) -> None:
        self.target = target
        threading.Thread(target=lambda: asyncio.run(self._serve()), daemon=True).start()

    async def _serve(self) -> None:
        server = await asyncio.start_server(self._conn, sock=self.sock)
        async with server:
            await server.serve_forever()

    async def _conn(self, cr, cw) -> None:
        br, bw = await asyncio.open_connection(*self.target)

        async def upstream():
            try:
                while True:
                    head = await cr.readexactly(4)
                    body = await cr.readexactly(struct.unpack(">i", head)[0])
                    self.frames.append(body)
                    bw.write(head + body)
                    await bw.drain()
            except (asyncio.IncompleteReadError, ConnectionError):
                bw.close()

        async def downstream():
            try:
                while data := await br.read(65536):
                    cw.write(data)
                    await cw.drain()
            except ConnectionError:
                pass
            cw.close()
        await asyncio.gather(upstream(), downstream())


def drive_confluent(bootstrap: str) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "golden-txn-confluent",
                  "client.id": "golden-confluent-kafka"})
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "client.id": "golden-confluent-kafka"})
    p.init_transactions(20)
    p.begin_transaction()
    p.produce(TOPIC, key=b"k", value=b"golden value", partition=0)
    p.send_offsets_to_transaction([TopicPartition(TOPIC, 0, 1)], c.consumer_group_metadata(), 20)
    p.commit_transaction(20)
    p.begin_transaction()
    p.produce(TOPIC, key=b"k", value=b"golden value", partition=0)
    p.flush(20)
    p.abort_transaction(20)
    c.close()


def drive_aiokafka(bootstrap: str) -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.structs import TopicPartition

    async def run():
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="golden-txn-aiokafka",
                             client_id="golden-aiokafka")
        await p.start()
        try:
            async with p.transaction():
                await p.send_and_wait(TOPIC, b"golden value", key=b"k", partition=0)
                await p.send_offsets_to_transaction({TopicPartition(TOPIC, 0): 1}, GROUP)
            await p.begin_transaction()
            await p.send_and_wait(TOPIC, b"golden value", key=b"k", partition=0)
            await p.abort_transaction()
        finally:
            await p.stop()
    asyncio.run(run())


def keep(frames: list[bytes]) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for f in frames:
        key, version, _ = peek_api(f)
        if key not in TXN_APIS:
            continue
        api = APIS[key]
        if key == 10:
            _hdr, pos = decode_request_header(f, 2 if api.flexible(version) else 1)
            if api.request.decode(f, version, pos)[0].key_type != 1:
                continue  # group lookups are in capture_server's set
        out.setdefault(f"{_snake(api.name)}_request_v{version}.bin", f)
    return out


def main() -> int:
    from tests.helpers.broker import BrokerProcess
    rows = []
    for client, drive in (("confluent-kafka", drive_confluent), ("aiokafka", drive_aiokafka)):
        proxy = Proxy()
        data = Path(tempfile.mkdtemp(prefix="golden-txn-")) / "data"
        b = BrokerProcess(data, {"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}",
                                 "group.initial.rebalance.delay.ms": 0}).start()
        try:
            proxy.start(("127.0.0.1", b.port))
            drive(f"127.0.0.1:{proxy.port}")
        finally:
            b.stop()
            shutil.rmtree(data.parent, ignore_errors=True)
        out = GOLDEN / f"txn-{client}"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        for name, frame in sorted(keep(proxy.frames).items()):
            (out / name).write_bytes(frame)
            key, version, _ = peek_api(frame)
            rows.append(f"| txn-{client} | {name} | {key} | {version} | {len(frame)} |")
        print(f"{client}: {len(list(out.iterdir()))} frame(s)")
    (GOLDEN / "TXN-README.md").write_text(
        "# Golden transaction request frames\n\n"
        "Recorded by `tests/protocol/capture_txn.py` (real clients against a real broker through a recording\n"
        "proxy: one committed transaction with `send_offsets_to_transaction`, one aborted), checked by\n"
        "`tests/protocol/test_golden.py` like the others. Transactional ids `golden-txn-*`, topic `golden`,\n"
        "group `golden-group`.\n\n"
        "| dir | file | api key | version | size |\n|---|---|---|---|---|\n" + "\n".join(rows) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
