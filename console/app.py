"""``create_app(broker, users)``: the console listener's aiohttp application (``web.services``).

- ``/v3``: Kafka REST v3 (``console.rest_v3``), a sub-application with Confluent's error JSON
  and HTTP basic auth against the broker's own users (``web.http.middlewares``);
- ``/``: the pages of ``console.ui`` when that package is present (``console.ui.setup(app,
  broker, users)`` adds its routes and whatever middlewares it needs); without it, a small
  JSON index.

``app[CONSOLE]`` is a ``ConsoleState``: the broker, its users and the in-memory histories
(produce/fetch rates, group lags) that a background task samples while the app runs.

Without SASL users nothing authenticates the console, so a console listener on a
non-loopback address is logged as a warning at start (the listener's address is the
user's choice: ``console.listeners=http://127.0.0.1:8080`` keeps it local).
"""
from __future__ import annotations

import asyncio
import importlib
import ipaddress
import json
import logging

from aiohttp import web

from console import model

log = logging.getLogger(__name__)


class ConsoleState:
    def __init__(self, broker, users):
        self.broker = broker
        self.users = users
        self.rates = model.RateHistory(broker)
        self.lags = model.LagHistory(broker)
        self.task: asyncio.Task | None = None


CONSOLE = web.AppKey("console", ConsoleState)


def _load_ui():
    """``console.ui`` if it exists (it is built beside this module, and may be absent)."""
    try:
        return importlib.import_module("console.ui")
    except ModuleNotFoundError as e:
        if e.name in ("console.ui",):
            return None
        raise


def _warn_if_open(broker, users) -> None:
    if users.required:
        return
    from broker.http_listeners import parse_http_listeners
    try:
        listeners = parse_http_listeners(broker.cfg["console.listeners"])
    except (KeyError, ValueError):
        return
    for lst in listeners:
        try:
            loopback = ipaddress.ip_address(lst.host).is_loopback
        except ValueError:
            loopback = lst.host == "localhost"
        if not loopback:
            log.warning("console.listeners binds %s:%d with no SASL users to authenticate against: anyone who "
                        "reaches it may read and change topics and groups; bind 127.0.0.1 or add users",
                        lst.host or "*", lst.port)


async def create_app(broker, users):
    from console.rest_v3 import create_v3_app

    state = ConsoleState(broker, users)
    app = web.Application()
    app[CONSOLE] = state
    app.add_subapp("/v3", create_v3_app(broker, users, rate_history=state.rates, lag_history=state.lags))

    async def start_samplers(_app):
        state.task = asyncio.create_task(model.run_samplers(state.rates, state.lags), name="console-samplers")

    async def stop_samplers(_app):
        if state.task is not None:
            state.task.cancel()
            await asyncio.gather(state.task, return_exceptions=True)

    app.on_startup.append(start_samplers)
    app.on_cleanup.append(stop_samplers)
    ui = _load_ui()
    if ui is not None:
        ui.setup(app, broker, users)
    else:
        async def index(_request):
            return web.Response(content_type="application/json",
                                text=json.dumps({"console": "pages not installed", "rest_v3": "/v3/clusters"}))
        app.router.add_get("/", index)
    _warn_if_open(broker, users)
    return app
