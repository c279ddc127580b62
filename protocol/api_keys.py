"""Registry of every declared API, discovered from ``protocol.messages``.

``APIS[key]`` gives the ``Api`` declaration with compiled request/response classes; it is the
single source from which the broker builds its ApiVersions answer.
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import NamedTuple

import protocol.messages as _pkg
from protocol.codec import CompiledMessage
from protocol.schema import Api


class CompiledApi(NamedTuple):
    key: int
    name: str
    api: Api
    request: CompiledMessage
    response: CompiledMessage

    @property
    def min_version(self) -> int:
        return self.api.min_version

    @property
    def max_version(self) -> int:
        return self.api.max_version

    def flexible(self, version: int) -> bool:
        return version in self.api.request.flex_v


def _discover() -> dict[int, CompiledApi]:
    apis: dict[int, CompiledApi] = {}
    for info in pkgutil.iter_modules(_pkg.__path__):
        mod = importlib.import_module(f"protocol.messages.{info.name}")
        a = getattr(mod, "API", None)
        if a is None:
            continue
        req = getattr(mod, a.name + "Request")._codec
        resp = getattr(mod, a.name + "Response")._codec
        if a.key in apis:
            raise RuntimeError(f"API key {a.key} declared twice")
        apis[a.key] = CompiledApi(a.key, a.name, a, req, resp)
    return apis


APIS: dict[int, CompiledApi] = _discover()
