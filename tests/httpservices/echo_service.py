"""A tiny HTTP service for the plumbing tests: it echoes the request's principal."""
from aiohttp import web

from web.http import HttpError, json_response, middlewares, read_json

CT = "application/json"


async def create_app(broker, users):
    app = web.Application(client_max_size=1024,
                          middlewares=middlewares(users, content_type=CT, internal_error_code=50001, realm="echo",
                                                  public=lambda r: r.path == "/public"))

    async def whoami(request):
        return json_response({"principal": request["principal"], "cluster": broker.cluster_id}, CT)

    async def echo(request):
        return json_response({"body": await read_json(request)}, CT)

    async def teapot(request):
        raise HttpError(418, 41801, "no coffee here")

    async def boom(request):
        raise RuntimeError("a bug")

    app.router.add_get("/whoami", whoami)
    app.router.add_get("/public", whoami)
    app.router.add_post("/echo", echo)
    app.router.add_get("/teapot", teapot)
    app.router.add_get("/boom", boom)
    return app
