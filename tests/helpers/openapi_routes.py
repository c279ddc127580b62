"""An OpenAPI 3.0 document of what a running aiohttp application routes, for generated-request
tests (schemathesis). It is Hourglass's own description, read from the router: every path
and method served, path parameters as strings, a JSON body of any shape for the methods that
take one. It says nothing of response shapes, so what it can check is the HTTP contract
every route must keep whatever it is sent: never a 5xx, always a JSON body on an error.

It is not Confluent's OpenAPI document and does not pretend to be: those are not published
in any package registry this project may use (see tests/console/test_generated_requests.py).
Real values of path parameters (``pinned``, ``fixed``: the cluster id, an existing topic,
subject or group) let generated requests reach past the lookups into the handlers.
"""
from __future__ import annotations

import re

from aiohttp import web

BODY_METHODS = {"POST", "PUT", "PATCH"}


def _resources(router):
    for r in router.resources():
        sub = getattr(r, "_app", None)
        if isinstance(sub, web.Application):  # a sub-application (REST v3 under /v3)
            yield from _resources(sub.router)
        else:
            yield r


def _param(name: str, fixed: dict, pinned: dict) -> dict:
    if name in pinned:
        return {"type": "string", "enum": [pinned[name], "unknown-" + name]}
    if name in fixed:  # the real value often, any other string too
        return {"anyOf": [{"type": "string", "enum": [fixed[name]]}, {"type": "string", "minLength": 1}]}
    return {"type": "string", "minLength": 1}


def document(app: web.Application, title: str, fixed: dict[str, str] | None = None, prefix: str = "/",
             pinned: dict[str, str] | None = None) -> dict:
    """``prefix``: only the routes under it (the console's ``/v3``, not its HTML pages).
    ``pinned``: path parameters that take their real value or one unknown value only;
    ``fixed``: path parameters that take their real value or any string."""
    fixed, pinned = fixed or {}, pinned or {}
    paths: dict[str, dict] = {}
    for res in _resources(app.router):
        path = res.canonical
        if not path.startswith(prefix):
            continue
        names = re.findall(r"{([^}:]+)(?::[^}]*)?}", path)
        path = re.sub(r"{([^}:]+):[^}]*}", r"{\1}", path)
        ops = paths.setdefault(path, {})
        for route in res:
            method = route.method.upper()
            if method in ("HEAD", "*", "OPTIONS"):
                continue
            params = [{"name": n, "in": "path", "required": True, "schema": _param(n, fixed, pinned)} for n in names]
            op = {"operationId": f"{method} {path}", "parameters": params,
                  "responses": {"default": {"description": "any answer but a server error"}}}
            if method in BODY_METHODS:
                op["requestBody"] = {"required": False, "content": {"application/json": {"schema": {}}}}
            ops[method.lower()] = op
    return {"openapi": "3.0.3", "info": {"title": title, "version": "hourglass"},
            "paths": {p: o for p, o in sorted(paths.items()) if o}}


def app_of(broker, service: str) -> web.Application:
    """The running aiohttp application of one HTTP service (``web.services``) of ``broker``,
    told apart by what it routes."""
    import time
    marker = {"console": "/v3/clusters", "schema-registry": "/subjects"}[service]
    deadline = time.monotonic() + 30
    while not broker.http.ready.is_set() and time.monotonic() < deadline:  # they start in the background
        time.sleep(0.05)
    for runner in list(broker.http.runners):
        if any(res.canonical.startswith(marker) for res in _resources(runner.app.router)):
            return runner.app
    raise LookupError(f"no running {service} service")
