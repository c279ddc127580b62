"""The console's aiohttp application (minimal: the pages only; the REST v3 half of issue 26
brings the full create_app with /v3)."""
from __future__ import annotations

from aiohttp import web

from web.http import middlewares


async def create_app(broker, users) -> web.Application:
    app = web.Application(client_max_size=4 << 20,
                          middlewares=middlewares(users, content_type="application/json",
                                                  internal_error_code=50001, realm="Hourglass console"))
    from console import ui
    ui.setup(app, broker, users)
    return app
