"""``<service>.listeners`` values (the HTTP services' keys in the broker's configuration):
``http://HOST:PORT`` or ``https://HOST:PORT``, comma separated.

Pure parsing, no sockets. An empty value turns the service off. As with Kafka's listeners an
empty host binds every interface; port 0 binds a free port.
"""
from __future__ import annotations

import re
from typing import NamedTuple


class HttpListener(NamedTuple):
    scheme: str  # "http" or "https"
    host: str
    port: int

    @property
    def tls(self) -> bool:
        return self.scheme == "https"


_URL = re.compile(r"^(https?)://(\[[0-9a-fA-F:.]+\]|[^:/\[\]]*):(\d{1,5})/?$")


def parse_http_listeners(value: str | list[str] | None) -> list[HttpListener]:
    """Each ``scheme://host:port`` of ``value``; raises ValueError naming the first bad entry."""
    items = value if isinstance(value, list) else [p.strip() for p in (value or "").split(",")]
    out = []
    for item in items:
        if not item:
            continue
        m = _URL.match(item.strip())
        if m is None or int(m.group(3)) > 65535:
            raise ValueError(f"Invalid listener {item!r}: expected http://HOST:PORT or https://HOST:PORT")
        out.append(HttpListener(m.group(1), m.group(2).strip("[]"), int(m.group(3))))
    return out


def url_of(listener: HttpListener, bound: tuple[str, int]) -> str:
    """The URL clients use for a bound listener (a wildcard host is reached on loopback)."""
    host = bound[0]
    if host in ("0.0.0.0", ""):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host:
        host = f"[{host}]"
    return f"{listener.scheme}://{host}:{bound[1]}"
