"""``hourglass probe``: is a Kafka endpoint answering? One ApiVersions v0 request over a plain
socket (the container healthcheck; no client library needed, works against any Kafka).

Exit 0 when the broker answers with error code 0, 1 otherwise, with one line saying why.

``--ready-file PATH`` (the file ``hourglass serve --ready-file`` writes once it serves) probes
the listeners the broker actually bound, whatever its configuration says: every
``NAME://host:port`` line after the first (a wildcard host is reached on loopback), healthy
when one of them answers. So a container's health check holds on any port or listener name,
not only 127.0.0.1:9092. No ready file yet: not healthy (the broker has not started serving).
"""
from __future__ import annotations

import sys

from hourglass.cli.wire import WireClient, WireError
from protocol.api_keys import APIS

API_VERSIONS = 18


def probe(host: str, port: int, timeout: float = 3.0, props: dict | None = None) -> tuple[bool, str]:
    spec = APIS[API_VERSIONS]
    try:
        with WireClient(f"{host}:{port}", "hourglass-probe", timeout, props=props) as c:
            resp = c.request(API_VERSIONS, 0, spec.request.cls())
    except WireError as exc:
        return False, str(exc)
    if resp.error_code != 0:
        return False, f"ApiVersions answered error {resp.error_code}"
    return True, f"{host}:{port} answers {len(resp.api_keys)} APIs"


_LOOPBACK = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1", "[::]": "::1"}


def bound_listeners(ready_text: str) -> list[tuple[str, str, int]]:
    """[(listener name, host to reach, port)] from a ready file's text: the ``NAME://host:port``
    lines after the first; the first line's ``host:port`` alone when there are none."""
    lines = [ln.strip() for ln in ready_text.splitlines() if ln.strip()]
    out = []
    for ln in lines[1:]:
        name, sep, addr = ln.partition("://")
        if not sep or ln.startswith("service "):  # `service NAME URL`: an HTTP service, not Kafka
            continue
        host, _, port = addr.rpartition(":")
        out.append((name, _LOOPBACK.get(host, host.strip("[]")), int(port)))
    if not out and lines:
        host, _, port = lines[0].rpartition(":")
        out.append(("", _LOOPBACK.get(host, host.strip("[]")), int(port)))
    return out


def main(bootstrap: str, timeout: float, props: dict | None = None, ready_file: str | None = None) -> int:
    if ready_file is not None:
        try:
            with open(ready_file) as f:
                targets = bound_listeners(f.read())
        except OSError as exc:
            print(f"not serving yet: {exc}", file=sys.stderr)
            return 1
    else:
        host, _, port = bootstrap.rpartition(":")
        targets = [("", host or "localhost", int(port))]
    failures = []
    for name, host, port in targets:
        ok, detail = probe(host, port, timeout, props)
        if ok:
            print(f"{name} {detail}".strip())
            return 0
        failures.append(f"{name} {host}:{port}: {detail}".strip())
    print("; ".join(failures) or "no listener in the ready file", file=sys.stderr)
    return 1
