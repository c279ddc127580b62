"""A broker inside your program, for tests and notebooks.

    with EmbeddedBroker({"log.message.timestamp.type": "LogAppendTime"}) as b:
        producer = KafkaProducer(bootstrap_servers=b.bootstrap_servers)

``mode="thread"`` (default) runs the same server as ``hourglass serve`` on its own event loop
in a daemon thread of this process; ``mode="subprocess"`` runs ``python -m broker serve`` (a
separate process: its own GIL, killable). Either way it listens on 127.0.0.1, port 0 unless
given, with a temporary data dir removed at exit unless ``data_dir`` is given, and
``__enter__`` returns once the broker answers requests.

``security="SSL" | "SASL_SSL" | "SASL_PLAINTEXT"`` (or a dict of ``hourglass.secure.SecureSetup``
options: ``protocol``, ``mechanism``, ``user``, ``password``, ``acls``) serves that one secured
listener instead, with throwaway certificates and a user made for the occasion; then
``client_config`` (confluent-kafka / librdkafka keys), ``kafka_python_config``,
``aiokafka_config`` and ``java_properties`` are ready-made client settings for it:

    with EmbeddedBroker(security="SASL_SSL") as b:
        Producer(b.client_config).produce("t", b"x")

``schema_registry=True`` and ``console=True`` serve the Schema Registry and the console (with
Kafka REST v3) on free loopback ports: ``schema_registry_url`` and ``console_url`` name them.
"""
from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Mapping

# Test-friendly defaults a caller can override: no 3 s wait before the first rebalance.
DEFAULTS = {"group.initial.rebalance.delay.ms": "0"}


def _value(v) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


# what the HTTP services import later from the broker's threads, by service listener key
_HTTP_SERVICE_MODULES = {
    "schema.registry.listeners": ("schema_registry.app", "schema_registry.formats.avro",
                                  "schema_registry.formats.jsonschema", "schema_registry.formats.protobuf"),
    "console.listeners": ("console.app", "console.ui"),
    "iceberg.catalog.listeners": ("lakehouse.rest",),
}


def _preload_http_services(overrides) -> None:
    """Import the HTTP services' modules in the calling thread before the broker's thread runs.

    Under pytest these modules are assertion-rewritten (they ship in the distribution holding
    the pytest plugin), and CPython 3.11's AST builder is not thread-safe: a service module
    rewritten in the broker's executor while the test imported a test module failed one of the
    two with "AST constructor recursion depth mismatch" (the service then did not start)."""
    import importlib
    for key, modules in _HTTP_SERVICE_MODULES.items():
        if overrides.get(key):
            for name in modules:
                try:
                    importlib.import_module(name)
                except ImportError:  # the service reports it when it starts
                    pass


class EmbeddedBroker:
    def __init__(self, overrides: Mapping[str, object] | None = None, *, data_dir: str | os.PathLike | None = None,
                 mode: str = "thread", port: int = 0, host: str = "127.0.0.1", start_timeout: float = 20.0,
                 security: str | Mapping[str, object] | None = None, schema_registry: bool = False,
                 console: bool = False):
        if mode not in ("thread", "subprocess"):
            raise ValueError("mode must be 'thread' or 'subprocess'")
        self.overrides = {**DEFAULTS, **{k: _value(v) for k, v in (overrides or {}).items()}}
        for on, key in ((schema_registry, "schema.registry.listeners"), (console, "console.listeners")):
            if on:
                self.overrides.setdefault(key, f"http://{host}:0")
        self.http_urls: dict[str, list[str]] = {}  # HTTP service name -> its URLs
        self.mode, self.port, self.host, self.start_timeout = mode, port, host, start_timeout
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self.bootstrap_servers: str | None = None
        self.broker = None  # the in-process Broker (thread mode)
        self.startup_seconds: float | None = None
        self._thread = self._loop = self._shutdown = self._proc = None
        self._error: BaseException | None = None
        if isinstance(security, str):
            security = {"protocol": security}
        self._security_opts = dict(security) if security else None
        self.security = None  # hourglass.secure.SecureSetup once started

    # ---- lifecycle --------------------------------------------------------------------------------
    def start(self) -> "EmbeddedBroker":
        if self.data_dir is None:
            self.data_dir = Path(tempfile.mkdtemp(prefix="hourglass-")) / "data"
        if self._security_opts is not None and self.security is None:
            from hourglass.secure import SecureSetup
            opts = dict(self._security_opts)
            self.security = SecureSetup(opts.pop("protocol"), self.data_dir.parent / "tls", **opts)
            self.security.create_user(self.data_dir)
        if self.mode == "thread":
            _preload_http_services(self.overrides)
        t0 = time.perf_counter()
        (self._start_thread if self.mode == "thread" else self._start_subprocess)()
        self.startup_seconds = time.perf_counter() - t0
        return self

    def _overrides(self) -> list[str]:
        listener = {"listeners": f"PLAINTEXT://{self.host}:{self.port}"}
        if self.security is not None:
            listener = self.security.broker_overrides(self.host, self.port)
        return [*(f"{k}={v}" for k, v in listener.items()), f"log.dirs={self.data_dir}",
                *(f"{k}={v}" for k, v in self.overrides.items())]

    @property
    def schema_registry_url(self) -> str | None:
        return (self.http_urls.get("schema-registry") or [None])[0]

    @property
    def console_url(self) -> str | None:
        return (self.http_urls.get("console") or [None])[0]

    # ---- ready-made client settings (secured or not) ---------------------------------------------
    def _clients(self, kind: str, bootstrap_key: str) -> dict:
        if self.security is None:
            return {bootstrap_key: self.bootstrap_servers}
        return getattr(self.security, kind)(self.bootstrap_servers)

    @property
    def client_config(self) -> dict:
        """confluent-kafka / librdkafka configuration for this broker."""
        return self._clients("client_config", "bootstrap.servers")

    @property
    def kafka_python_config(self) -> dict:
        return self._clients("kafka_python_config", "bootstrap_servers")

    @property
    def aiokafka_config(self) -> dict:
        return self._clients("aiokafka_config", "bootstrap_servers")

    @property
    def java_properties(self) -> dict:
        """The Java client's properties (also what ``--command-config`` files hold)."""
        return self._clients("java_properties", "bootstrap.servers")

    def _start_thread(self) -> None:
        from broker.config import BrokerConfig
        from broker.server import run_broker
        from hourglass.app import extensions
        # strict: a misspelled key in a test's overrides fails the test instead of a warning
        cfg = BrokerConfig.load(None, self._overrides(), strict=True)
        ready = threading.Event()

        def on_ready(broker):
            self.broker = broker
            host, port = broker.bound[0]
            self.bootstrap_servers = f"{host}:{port}"
            self.http_urls = {k: list(v) for k, v in broker.http.urls.items()}
            ready.set()

        def run():
            try:
                import uvloop
                loop = uvloop.new_event_loop()
            except ImportError:  # pragma: no cover
                loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            self._shutdown = asyncio.Event()
            try:
                loop.run_until_complete(run_broker(cfg, shutdown=self._shutdown, on_ready=on_ready,
                                                   extensions=extensions()))
            except BaseException as exc:  # surfaced to the caller of start()
                self._error = exc
                ready.set()
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, name="hourglass-broker", daemon=True)
        self._thread.start()
        if not ready.wait(self.start_timeout) or self._error is not None:
            raise RuntimeError(f"embedded broker did not start: {self._error!r}")

    def _start_subprocess(self) -> None:
        ready_file = self.data_dir.parent / (self.data_dir.name + ".ready")
        ready_file.unlink(missing_ok=True)
        cmd = [sys.executable, "-m", "broker", "serve", "--strict-config", "--ready-file", str(ready_file)]
        for o in self._overrides():
            cmd += ["--override", o]
        self._log = open(self.data_dir.parent / (self.data_dir.name + ".broker.log"), "ab")
        self._proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            text = ready_file.read_text() if ready_file.exists() else ""
            if text.strip():
                self.bootstrap_servers = text.split()[0]
                self.http_urls = {}
                for line in text.splitlines():
                    parts = line.split()
                    if len(parts) == 3 and parts[0] == "service":
                        self.http_urls.setdefault(parts[1], []).append(parts[2])
                return
            if self._proc.poll() is not None:
                break
            time.sleep(0.005)
        self.stop()
        raise RuntimeError(f"broker subprocess did not start (exit {self._proc.returncode}); "
                           f"see {self._log.name}")

    def stop(self) -> None:
        """Clean shutdown (checkpoints and the clean-shutdown marker are written)."""
        if self._thread is not None:
            if self._loop is not None and self._shutdown is not None and not self._loop.is_closed():
                try:
                    self._loop.call_soon_threadsafe(self._shutdown.set)
                except RuntimeError:
                    pass
            self._thread.join(30)
            self._thread = None
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.terminate()
                try:
                    self._proc.wait(30)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
                    self._proc.wait()
            self._log.close()
            self._proc = None
        if self._own_dir and self.data_dir is not None:
            shutil.rmtree(self.data_dir.parent, ignore_errors=True)

    def __enter__(self) -> "EmbeddedBroker":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<EmbeddedBroker {self.mode} {self.bootstrap_servers or 'stopped'} data={self.data_dir}>"
