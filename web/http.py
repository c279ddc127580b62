"""aiohttp pieces every service uses: errors as Confluent's JSON, basic auth, JSON bodies.

Confluent's services answer every error as ``{"error_code": N, "message": "..."}`` (the Schema
Registry's codes such as 40401 or 42201 refine the HTTP status; REST v3 uses the status). A
handler raises ``HttpError``; anything unexpected is logged with its stack and answered 500 with
the service's internal error code, and the service keeps serving.
"""
from __future__ import annotations

import json
import logging

from aiohttp import web

from web.auth import BasicAuthError, BrokerUsers

log = logging.getLogger(__name__)


class HttpError(Exception):
    def __init__(self, status: int, error_code: int, message: str):
        super().__init__(message)
        self.status, self.error_code, self.message = status, error_code, message


def error_response(status: int, error_code: int, message: str, content_type: str, **headers) -> web.Response:
    # the Content-Type exactly as given (aiohttp's text= would append "; charset=utf-8", which
    # Confluent's services do not send); the body is UTF-8 JSON
    return web.Response(status=status, headers={**headers, "Content-Type": content_type},
                        body=json.dumps({"error_code": error_code, "message": message}).encode())


def json_response(body, content_type: str, status: int = 200) -> web.Response:
    return web.Response(status=status, headers={"Content-Type": content_type}, body=json.dumps(body).encode())


def add_routes_slash_tolerant(app: web.Application, routes) -> None:
    """Add ``routes``, each also under its path with a trailing slash: Confluent's servers
    (Jersey) answer ``/config/`` as ``/config``, and clients call both."""
    app.add_routes(routes)
    for r in routes:
        if isinstance(r, web.RouteDef) and r.path != "/" and not r.path.endswith("/"):
            web.RouteDef(r.method, r.path + "/", r.handler, r.kwargs).register(app.router)


def middlewares(users: BrokerUsers, *, content_type: str, internal_error_code: int,
                realm: str, public=lambda request: False, required: bool | None = None):
    """[errors, auth]: every error leaves as Confluent's JSON; unless ``public(request)``, the
    request is authenticated and ``request["principal"]`` set (``User:ANONYMOUS`` without auth).
    ``required``: basic auth always (True), never (False), or as ``BrokerUsers.required`` (None)."""

    @web.middleware
    async def errors(request: web.Request, handler):
        try:
            return await handler(request)
        except HttpError as e:
            return error_response(e.status, e.error_code, e.message, content_type)
        except BasicAuthError as e:
            return error_response(401, 401, str(e), content_type,
                                  **{"WWW-Authenticate": f'Basic realm="{realm}"'})
        except web.HTTPException as e:
            if e.status < 400:
                raise
            message = e.text if e.text and not e.text.startswith(f"{e.status}:") else e.reason
            if e.status == 413:
                message = f"Request body too large: {e.reason}"
            headers = {}
            if isinstance(e, web.HTTPMethodNotAllowed):
                # RFC 9110: a 405 names the methods the resource has (Jersey's answer does too)
                headers["Allow"] = ", ".join(sorted(e.allowed_methods))
            return error_response(e.status, e.status, message, content_type, **headers)
        except Exception:
            log.exception("%s %s failed", request.method, request.path)
            return error_response(500, internal_error_code, "Internal server error", content_type)

    @web.middleware
    async def auth(request: web.Request, handler):
        if public(request):
            request["principal"] = None
        else:
            request["principal"] = users.authenticate(request.headers.get("Authorization"), required=required)
        return await handler(request)

    return [errors, auth]


async def read_json(request: web.Request, *, error_status: int = 400, error_code: int = 400):
    """The request body parsed as JSON; HttpError with Confluent's wording when it is not."""
    raw = await request.read()
    try:
        return json.loads(raw) if raw else None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise HttpError(error_status, error_code, f"Unexpected character / malformed JSON: {e}") from None
