"""The console's web pages: server-rendered Jinja2 templates, htmx for live parts, uPlot charts.

``setup(app, broker, users)`` adds the page routes at ``/`` and the static assets (vendored
htmx and uPlot with their licenses, shipped as package data: no CDN at run time) to the
console's aiohttp application, whose middlewares already authenticate the request
(``request["principal"]``) against the broker's users. Pages act as that principal: the
broker's authorizer decides what they show, and a denied request gets a denial page.
"""
from __future__ import annotations


def setup(app, broker, users) -> None:
    from console.ui.pages import Pages
    Pages(broker, users).register(app)
