"""Listening sockets accepted by the broker itself, so that running out of descriptors is seen.

``asyncio.start_server`` under uvloop sheds connections silently when ``accept`` fails with
EMFILE (libuv's reserve-descriptor trick), and plain asyncio logs every failed accept. Here:

* accept fails with EMFILE/ENFILE (or ENOBUFS/ENOMEM): the failure is counted and logged at
  most once per interval with the limit and the count open (``storage.files.FD_EXHAUSTION``);
  the file cache gives back an eighth of its idle segment/index descriptors (it reopens
  them on use) and the accept is retried; if nothing could be freed, one waiting connection
  is accepted on a reserve descriptor and closed at once, so the client sees a closed
  connection (and retries with its backoff) instead of hanging in the backlog, and
  accepting pauses for ``PAUSE_S``;
* connections already open are not touched: they keep being served.

Each accepted socket becomes a ``StreamReader``/``StreamWriter`` pair through
``loop.connect_accepted_socket`` (TLS handshake included), exactly what ``start_server``
gives its callback.
"""
from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
from typing import Awaitable, Callable

from storage.files import DEFAULT_FILE_OPS, FD_EXHAUSTION, FileCache

log = logging.getLogger(__name__)

_EXHAUSTED = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
_TRANSIENT = (errno.ECONNABORTED, errno.EPROTO, errno.EPERM, errno.EINTR, errno.EAGAIN)
PAUSE_S = 0.1


class AcceptingServer:
    """The listening sockets of one listener. ``sockets``, ``close()``, ``is_serving()`` as
    ``asyncio.Server``."""

    def __init__(self, loop: asyncio.AbstractEventLoop, sockets: list[socket.socket],
                 cb: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]], *,
                 limit: int, backlog: int, ssl=None, ssl_handshake_timeout: float | None = None,
                 file_cache: FileCache | None = None):
        self._loop = loop
        self.sockets = sockets
        self._cb = cb
        self._limit = limit
        self._backlog = backlog
        self._ssl = ssl
        self._ssl_timeout = ssl_handshake_timeout
        self._cache = file_cache if file_cache is not None else DEFAULT_FILE_OPS.file_cache
        self._serving = False
        self._reserve: int | None = None
        self.shed = 0           # connections closed at once for want of a descriptor

    def start(self) -> None:
        self._reserve = _open_reserve()
        self._serving = True
        for s in self.sockets:
            self._loop.add_reader(s.fileno(), self._on_readable, s)

    def is_serving(self) -> bool:
        return self._serving

    def close(self) -> None:
        if not self._serving:
            return
        self._serving = False
        for s in self.sockets:
            try:
                self._loop.remove_reader(s.fileno())
            except (ValueError, OSError):
                pass
            s.close()
        if self._reserve is not None:
            os.close(self._reserve)
            self._reserve = None

    async def wait_closed(self) -> None:
        return None

    # -- accepting -------------------------------------------------------------------------
    def _on_readable(self, lsock: socket.socket) -> None:
        for _ in range(self._backlog):
            try:
                conn, _addr = lsock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in _EXHAUSTED:
                    if not self._out_of_descriptors(lsock):
                        return
                    continue
                if exc.errno in _TRANSIENT:
                    continue
                log.warning("accept on %s failed: %s", lsock.getsockname(), exc)
                return
            conn.setblocking(False)
            self._loop.create_task(self._serve(conn))

    def _out_of_descriptors(self, lsock: socket.socket) -> bool:
        """True to try accepting again at once (descriptors were freed)."""
        freed = self._cache.shrink()
        FD_EXHAUSTION.note("accepting a connection", self._cache)
        if freed > 0:
            return True
        # nothing to give back: turn one waiting client away cleanly, then pause a little
        if self._reserve is not None:
            os.close(self._reserve)
            self._reserve = None
            try:
                conn, _ = lsock.accept()
                conn.close()
                self.shed += 1
            except OSError:
                pass
            self._reserve = _open_reserve()
        fd = lsock.fileno()
        self._loop.remove_reader(fd)

        def resume() -> None:
            if self._serving:
                if self._reserve is None:
                    self._reserve = _open_reserve()
                self._loop.add_reader(fd, self._on_readable, lsock)
        self._loop.call_later(PAUSE_S, resume)
        return False

    async def _serve(self, conn: socket.socket) -> None:
        loop = self._loop
        reader = asyncio.StreamReader(limit=self._limit, loop=loop)
        protocol = asyncio.StreamReaderProtocol(reader, self._cb, loop=loop)
        kw = {}
        if self._ssl is not None:
            kw = {"ssl": self._ssl, "ssl_handshake_timeout": self._ssl_timeout}
        try:
            await loop.connect_accepted_socket(lambda: protocol, conn, **kw)
        except (OSError, asyncio.TimeoutError, ConnectionError) as exc:
            log.debug("connection dropped before it was set up: %s", exc)
            conn.close()
        except Exception as exc:  # e.g. ssl.SSLError from a failed handshake
            log.debug("connection dropped before it was set up: %r", exc)
            conn.close()


def _open_reserve() -> int | None:
    try:
        return os.open(os.devnull, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None


async def start_server(cb, host: str | None, port: int, *, limit: int, backlog: int = 1024, ssl=None,
                       ssl_handshake_timeout: float | None = None,
                       file_cache: FileCache | None = None) -> AcceptingServer:
    """Bind ``host:port`` as ``asyncio.start_server`` does (every address ``host`` resolves to,
    all interfaces for None/"", SO_REUSEADDR, IPv6 sockets v6-only) and start accepting."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host or None, port, family=socket.AF_UNSPEC, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    socks: list[socket.socket] = []
    seen = set()
    try:
        for af, kind, proto, _canon, addr in infos:
            if (af, addr) in seen:
                continue
            seen.add((af, addr))
            s = socket.socket(af, kind, proto)
            socks.append(s)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if af == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                s.bind(addr)
            except OSError as exc:
                raise OSError(exc.errno, f"error while attempting to bind on address {addr!r}: "
                              f"{exc.strerror.lower()}") from None
            s.listen(backlog)
            s.setblocking(False)
    except BaseException:
        for s in socks:
            s.close()
        raise
    server = AcceptingServer(loop, socks, cb, limit=limit, backlog=backlog, ssl=ssl,
                             ssl_handshake_timeout=ssl_handshake_timeout, file_cache=file_cache)
    server.start()
    return server


__all__ = ["AcceptingServer", "start_server"]
