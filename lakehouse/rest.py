"""The Iceberg REST catalog's read routes (Apache Iceberg's REST OpenAPI, ``/v1``) over the
warehouse's catalog, so Spark, pyiceberg, DuckDB or Trino reach the topics' tables by URL.

Served: ``GET /v1/config``; namespaces listed, loaded and checked (``HEAD``); tables listed,
loaded (``LoadTableResult``: the current metadata file's location and its content, and in
``config`` what a reader needs to reach an S3 warehouse: endpoint, region, addressing; the key
pair in ``storage-credentials`` only when the broker vends it, see ``lakehouse.warehouse``) and
checked; a store that fails answers 503 ``ServiceUnavailableException`` with the reason. The
tables are the broker's to write (``iceberg.mode``): every write by another client (create or
drop a namespace or table, commit, rename, register, transactions) is
refused 403 with the REST catalog's error JSON ``{"error": {"message", "type", "code"}}``, as is
any other error (404 ``NoSuchNamespaceException`` / ``NoSuchTableException``, 401
``NotAuthorizedException`` when the broker's users are required: basic auth as the registry).
"""
from __future__ import annotations

import asyncio
import json
import logging
from urllib.parse import unquote

from aiohttp import web

from lakehouse.tables import open_catalog
from lakehouse.warehouse import ACCESS_DELEGATION, Warehouse, describe_failure, store_config, warehouse_of
from web.auth import BasicAuthError, BrokerUsers

log = logging.getLogger(__name__)

CATALOG_KEY = web.AppKey("catalog", object)
WAREHOUSE_KEY = web.AppKey("warehouse", Warehouse)
READ_ONLY = ("This catalog is read-only: Hourglass writes its tables from the topics (topic config "
             "iceberg.mode); other clients read them")
#: the routes served, as the REST spec's ConfigResponse ``endpoints`` names them
ENDPOINTS = ["GET /v1/{prefix}/namespaces", "GET /v1/{prefix}/namespaces/{namespace}",
             "HEAD /v1/{prefix}/namespaces/{namespace}", "GET /v1/{prefix}/namespaces/{namespace}/tables",
             "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
             "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}"]


class IcebergError(Exception):
    def __init__(self, code: int, type_: str, message: str):
        super().__init__(message)
        self.code, self.type, self.message = code, type_, message


def error_body(code: int, type_: str, message: str) -> dict:
    """The REST catalog's ``ErrorModel`` wrapped in ``IcebergErrorResponse``."""
    return {"error": {"message": message, "type": type_, "code": code}}


def _json(body, status: int = 200) -> web.Response:
    return web.Response(status=status, content_type="application/json", body=json.dumps(body).encode())


def namespace_of(raw: str) -> tuple[str, ...]:
    """A namespace in a path: its levels joined by the unit separator (0x1F)."""
    return tuple(unquote(raw).split("\x1f"))


async def _in_thread(fn, *args):
    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)


def _namespaces(catalog) -> list[tuple[str, ...]]:
    return [tuple(n) for n in catalog.list_namespaces()]


def _check_namespace(catalog, ns: tuple[str, ...]) -> None:
    if ns not in _namespaces(catalog):
        raise IcebergError(404, "NoSuchNamespaceException", f"Namespace does not exist: {'.'.join(ns)}")


def _load(catalog, ns: tuple[str, ...], name: str, warehouse: Warehouse, delegation: str | None = None) -> dict:
    from pyiceberg.exceptions import NoSuchTableError
    # no namespace check: the REST spec's LoadTable 404 is NoSuchTableException, and Iceberg's
    # Spark catalog reads `ns.table.snapshots` (a metadata table) only after that error for table
    # `snapshots` in namespace `ns.table`; NoSuchNamespaceException would end the query there
    try:
        tbl = catalog.load_table((*ns, name))
        # the metadata file as written (through the table's FileIO: local or the object store)
        with tbl.io.new_input(tbl.metadata_location).open() as f:
            metadata = json.loads(f.read())
    except NoSuchTableError:
        raise IcebergError(404, "NoSuchTableException", f"Table does not exist: {'.'.join(ns)}.{name}") from None
    except OSError as exc:  # the store is down or refuses: the REST spec's 503, the reason logged
        line = describe_failure(warehouse, exc)
        log.warning("Iceberg REST catalog: loading %s.%s: %s", ".".join(ns), name, line)
        raise IcebergError(503, "ServiceUnavailableException", line) from None
    config, credentials = warehouse.reader_config(delegation)
    body = {"metadata-location": tbl.metadata_location, "metadata": metadata, "config": config}
    if credentials:
        body["storage-credentials"] = credentials
    return body


def _tables(catalog, ns: tuple[str, ...]) -> list[dict]:
    _check_namespace(catalog, ns)
    return [{"namespace": list(ident[:-1]), "name": ident[-1]} for ident in catalog.list_tables(ns)]


async def config(request: web.Request) -> web.Response:
    # defaults, not overrides: a reader that reaches the store by another address keeps its own
    return _json({"defaults": store_config(request.app[WAREHOUSE_KEY].io), "overrides": {}, "endpoints": ENDPOINTS})


async def list_namespaces(request: web.Request) -> web.Response:
    parent = request.query.get("parent")
    names = await _in_thread(_namespaces, request.app[CATALOG_KEY])
    if parent:
        p = namespace_of(parent)
        names = [n for n in names if len(n) == len(p) + 1 and n[:len(p)] == p]
    return _json({"namespaces": [list(n) for n in names]})


async def load_namespace(request: web.Request) -> web.Response:
    ns = namespace_of(request.match_info["namespace"])
    await _in_thread(_check_namespace, request.app[CATALOG_KEY], ns)
    if request.method == "HEAD":
        return web.Response(status=204)
    return _json({"namespace": list(ns), "properties": {}})


async def list_tables(request: web.Request) -> web.Response:
    ns = namespace_of(request.match_info["namespace"])
    return _json({"identifiers": await _in_thread(_tables, request.app[CATALOG_KEY], ns)})


async def load_table(request: web.Request) -> web.Response:
    ns = namespace_of(request.match_info["namespace"])
    body = await _in_thread(_load, request.app[CATALOG_KEY], ns, unquote(request.match_info["table"]),
                            request.app[WAREHOUSE_KEY], request.headers.get(ACCESS_DELEGATION))
    if request.method == "HEAD":
        return web.Response(status=204)
    return _json(body)


async def refuse_write(request: web.Request) -> web.Response:
    if request.method in ("GET", "HEAD"):  # a read this catalog does not serve (views, metrics, ...)
        raise IcebergError(404, "NoSuchEndpointException", f"No route {request.method} {request.path}")
    raise IcebergError(403, "ForbiddenException", READ_ONLY)


def _middlewares(users: BrokerUsers):
    @web.middleware
    async def errors(request: web.Request, handler):
        try:
            request["principal"] = users.authenticate(request.headers.get("Authorization"), required=None)
            return await handler(request)
        except IcebergError as e:
            return _json(error_body(e.code, e.type, e.message), e.code)
        except BasicAuthError as e:
            resp = _json(error_body(401, "NotAuthorizedException", str(e)), 401)
            resp.headers["WWW-Authenticate"] = 'Basic realm="iceberg"'
            return resp
        except web.HTTPException as e:
            if e.status < 400:
                raise
            kind = {404: "NoSuchEndpointException", 405: "ForbiddenException"}.get(e.status, "BadRequestException")
            return _json(error_body(e.status, kind, e.reason), e.status)
        except Exception:
            log.exception("%s %s failed", request.method, request.path)
            return _json(error_body(500, "InternalServerError", "Internal server error"), 500)
    return [errors]


async def create_app(broker, users: BrokerUsers) -> web.Application:
    app = web.Application(middlewares=_middlewares(users))
    app[WAREHOUSE_KEY] = warehouse_of(broker.cfg)
    app[CATALOG_KEY] = await _in_thread(open_catalog, app[WAREHOUSE_KEY])
    ns, table = "/v1/namespaces/{namespace}", "/v1/namespaces/{namespace}/tables/{table}"
    app.add_routes([
        web.get("/v1/config", config),
        web.get("/v1/namespaces", list_namespaces, allow_head=False),
        web.get(ns, load_namespace),
        web.get(ns + "/tables", list_tables, allow_head=False),
        web.get(table, load_table),
        web.route("*", "/v1/{tail:.*}", refuse_write),
    ])
    return app
