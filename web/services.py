"""The broker's HTTP services: bound at start, served in the background, closed at stop.

``HttpServices.bind()`` runs inside ``Broker.start()``: it only creates the listening sockets
(so the ports, including port 0, are known before the ready file is written, and a bad address
or keystore refuses the start like a bad Kafka listener). ``serve()`` then runs as a background
task: it imports aiohttp and each service in a worker thread (about 170 ms that the Kafka
listeners never wait for) and starts accepting. Until then connections wait in the backlog.
A service that fails to start is logged and closed; the Kafka listeners keep serving.

Each service module offers ``async def create_app(broker, users: BrokerUsers) -> aiohttp.web.Application``.
"""
from __future__ import annotations

import asyncio
import importlib
import logging
import socket
from typing import NamedTuple

from web.auth import BrokerUsers
from broker.http_listeners import HttpListener, parse_http_listeners, url_of

log = logging.getLogger(__name__)


class ServiceSpec(NamedTuple):
    name: str  # as in logs and the ready file
    key: str  # the broker key listing its listeners
    module: str  # the room that builds its aiohttp application


SERVICES = (
    ServiceSpec("schema-registry", "schema.registry.listeners", "schema_registry.app"),
    ServiceSpec("console", "console.listeners", "console.app"),
    ServiceSpec("iceberg-catalog", "iceberg.catalog.listeners", "lakehouse.rest"),
)


class _Bound(NamedTuple):
    spec: ServiceSpec
    listener: HttpListener
    sock: socket.socket
    ssl_context: object
    url: str


class HttpServices:
    def __init__(self, broker):
        self.broker = broker
        self.users = BrokerUsers(broker)
        self.bound: list[_Bound] = []
        self.urls: dict[str, list[str]] = {}  # service name -> its URLs, in listener order
        self.runners: list = []
        self.ready = asyncio.Event()  # set once every service accepts (or failed to start)
        self._task: asyncio.Task | None = None

    def __bool__(self) -> bool:
        return bool(self.bound)

    def bind(self) -> None:
        """Create the listening sockets of every configured service (raises OSError/ValueError)."""
        cfg = self.broker.cfg
        for spec in SERVICES:
            for lst in parse_http_listeners(cfg[spec.key]):
                ctx = None
                if lst.tls:
                    from broker.security.tls import server_context
                    ctx = server_context(cfg.raw.get)
                family = socket.AF_INET6 if ":" in lst.host else socket.AF_INET
                try:
                    sock = socket.create_server((lst.host, lst.port), family=family, backlog=1024,
                                                reuse_port=False)
                except OSError as exc:
                    self.close_sockets()
                    raise OSError(exc.errno, f"{spec.key}: cannot bind {lst.scheme}://{lst.host}:{lst.port}: "
                                             f"{exc.strerror}") from None
                sock.setblocking(False)
                url = url_of(lst, sock.getsockname()[:2])
                self.bound.append(_Bound(spec, lst, sock, ctx, url))
                self.urls.setdefault(spec.name, []).append(url)

    def start(self) -> None:
        """Serve in the background (the broker's start does not wait)."""
        if self.bound:
            self._task = asyncio.create_task(self._serve(), name="http-services")
        else:
            self.ready.set()

    async def _serve(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            web = await loop.run_in_executor(None, importlib.import_module, "aiohttp.web")
            for spec in {b.spec for b in self.bound}:
                sites = [b for b in self.bound if b.spec is spec]
                try:
                    module = await loop.run_in_executor(None, importlib.import_module, spec.module)
                    app = await module.create_app(self.broker, self.users)
                    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
                    await runner.setup()
                    self.runners.append(runner)
                    for b in sites:
                        await web.SockSite(runner, b.sock, ssl_context=b.ssl_context).start()
                        log.info("%s on %s", spec.name, b.url)
                except Exception:
                    log.exception("%s failed to start; its listeners are closed, the broker keeps serving",
                                  spec.name)
                    for b in sites:
                        b.sock.close()
        finally:
            self.ready.set()

    def close_sockets(self) -> None:
        for b in self.bound:
            b.sock.close()

    async def close(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        for runner in reversed(self.runners):
            try:
                await runner.cleanup()
            except Exception:
                log.exception("closing an HTTP service failed")
        self.runners.clear()
        self.close_sockets()

    def ready_lines(self) -> list[str]:
        """Lines for the ready file: ``service <name> <url>`` (after the Kafka listeners' lines)."""
        return [f"service {name} {url}" for name, urls in self.urls.items() for url in urls]
