"""An OpenAPI 3.0 document of what a running aiohttp application routes, for generated-request
tests (schemathesis). It is Hourglass's own description, read from the router: every path
and method served, path parameters as strings, a JSON body of any shape for the methods that
take one, and each operation's responses as its handler declares them (``web.openapi.responds``:
statuses, content types, body schemas from the service's ``schemas`` module). A route whose
handler declares nothing makes the document fail to build.

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


def _param(name: str, fixed: dict, pinned: dict, real: dict) -> dict:
    """A path parameter: its real value is the example (schemathesis's explicit phase sends
    one request with every parameter at its example, so each operation reaches its handler
    with names that exist at least once), generated values around it."""
    out: dict = {"name": name, "in": "path", "required": True}
    if name in pinned:
        out["schema"] = {"type": "string", "enum": [pinned[name], "unknown-" + name]}
    elif name in fixed:  # the real value sometimes, any other string too
        out["schema"] = {"anyOf": [{"type": "string", "enum": [fixed[name]]}, {"type": "string", "minLength": 1}]}
    else:
        out["schema"] = {"type": "string", "minLength": 1}
    if name in real:
        out["example"] = real[name]
    return out


def document(app: web.Application, title: str, schemas, fixed: dict[str, str] | None = None, prefix: str = "/",
             pinned: dict[str, str] | None = None, bodies: dict[str, list] | None = None,
             doomed: dict[str, str] | None = None, at: dict[str, dict[str, str]] | None = None) -> dict:
    """``schemas``: the service's schemas module (``COMPONENTS``, ``CONTENT_TYPES``, ``ERROR``,
    ``COMMON_ERRORS``). ``prefix``: only the routes under it (the console's ``/v3``, not its
    HTML pages). ``pinned``: path parameters that take their real value or one unknown value
    only; ``fixed``: path parameters that take their real value or any string. ``bodies``:
    example bodies by ``"METHOD /path"`` (sent first, then generated ones). ``doomed``: the
    example path parameters of DELETE operations (names made to be deleted, so that deleting
    them spares what the other operations read). ``at``: example path parameters of the paths
    containing a key (``{"/broker-configs/": {"name": "log.retention.ms"}}``)."""
    from web.openapi import operation_responses
    fixed, pinned, bodies, doomed, at = fixed or {}, pinned or {}, bodies or {}, doomed or {}, at or {}
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
            real = {**pinned, **fixed}
            for part, values in at.items():
                if part in path:
                    real.update(values)
            real.update(doomed if method == "DELETE" else {})
            params = [_param(n, fixed, pinned, real) for n in names]
            op = {"operationId": f"{method} {path}", "parameters": params,
                  "responses": operation_responses(route.handler, content_types=schemas.CONTENT_TYPES,
                                                   common_errors=schemas.COMMON_ERRORS, error_schema=schemas.ERROR)}
            if method in BODY_METHODS:
                media: dict = {"schema": {}}
                examples = bodies.get(f"{method} {path.rstrip('/') or '/'}")
                if examples:
                    media["examples"] = {f"e{i}": {"value": v} for i, v in enumerate(examples)}
                op["requestBody"] = {"required": False, "content": {"application/json": media}}
            ops[method.lower()] = op
    return {"openapi": "3.0.3", "info": {"title": title, "version": "hourglass"},
            "paths": {p: o for p, o in sorted(paths.items()) if o},
            "components": {"schemas": schemas.COMPONENTS}}


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
