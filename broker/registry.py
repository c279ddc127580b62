"""Handler registry: one module per API in ``broker.handlers``, each registering its function
with ``@handles(API_KEY)``. The ApiVersions answer is built from this registry intersected with
the protocol's declared ranges, so what we advertise is exactly what we serve.
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import Awaitable, Callable, NamedTuple

from protocol.api_keys import APIS


class Handler(NamedTuple):
    api_key: int
    fn: Callable[..., Awaitable]
    min_version: int
    max_version: int


HANDLERS: dict[int, Handler] = {}


def handles(api_key: int, *, min_version: int | None = None, max_version: int | None = None):
    """Register an ``async def fn(ctx, request)`` returning a response object (or None for
    no response, as for acks=0 Produce)."""
    spec = APIS[api_key]

    def deco(fn):
        lo = spec.min_version if min_version is None else max(min_version, spec.min_version)
        hi = spec.max_version if max_version is None else min(max_version, spec.max_version)
        if api_key in HANDLERS:
            raise RuntimeError(f"API key {api_key} has two handlers")
        HANDLERS[api_key] = Handler(api_key, fn, lo, hi)
        return fn
    return deco


def load_handlers() -> dict[int, Handler]:
    import broker.handlers as pkg
    for info in pkgutil.iter_modules(pkg.__path__):
        importlib.import_module(f"broker.handlers.{info.name}")
    return HANDLERS


def supported_ranges() -> list[tuple[int, int, int]]:
    return sorted((h.api_key, h.min_version, h.max_version) for h in HANDLERS.values())
