"""A broker running in this process (its own event loop in a thread), so a test can hand it a
``storage.faults.FaultyFileOps`` and flip faults while real clients talk to it over TCP."""
from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from broker.config import BrokerConfig
from broker.server import Broker


class InProcessBroker:
    def __init__(self, data_dir: Path, overrides: dict | None = None, *, file_ops=None):
        items = [f"listeners=PLAINTEXT://127.0.0.1:0", f"log.dirs={data_dir}"]
        items += [f"{k}={v}" for k, v in (overrides or {}).items()]
        self.cfg = BrokerConfig.load(None, items)
        self.file_ops = file_ops
        self.broker: Broker | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None
        self.error: BaseException | None = None

    def start(self) -> "InProcessBroker":
        ready = threading.Event()

        async def main():
            self.broker = Broker(self.cfg, file_ops=self.file_ops)
            self._stop = asyncio.Event()
            try:
                await self.broker.start()
            except BaseException as exc:
                self.error = exc
                ready.set()
                raise
            ready.set()
            try:
                await self._stop.wait()
            finally:
                try:
                    await self.broker.stop()
                finally:
                    # as asyncio.run does: let cancelled background tasks finish before the loop closes
                    rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
                    for t in rest:
                        t.cancel()
                    await asyncio.gather(*rest, return_exceptions=True)

        def run():
            self.loop = asyncio.new_event_loop()
            try:
                self.loop.run_until_complete(main())
            except BaseException as exc:  # surfaced by stop()
                self.error = self.error or exc
            finally:
                self.loop.close()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        if not ready.wait(20) or self.error is not None:
            raise RuntimeError(f"in-process broker did not start: {self.error!r}")
        return self

    @property
    def bootstrap(self) -> str:
        host, port = self.broker.bound[0]
        return f"{host}:{port}"

    def call(self, fn, *args):
        """Run ``fn(*args)`` on the broker's loop (storage is not thread-safe) and return it."""
        async def wrap():
            return fn(*args)
        return asyncio.run_coroutine_threadsafe(wrap(), self.loop).result(10)

    def stop(self) -> BaseException | None:
        """Graceful stop; returns the exception shutdown raised, if any."""
        if self._thread is None:
            return None
        self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)
        self._thread = None
        return self.error
