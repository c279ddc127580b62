"""``hourglass probe``: is a Kafka endpoint answering? One ApiVersions v0 request over a plain
socket (the container healthcheck; no client library needed, works against any Kafka).

Exit 0 when the broker answers with error code 0, 1 otherwise, with one line saying why.
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


def main(bootstrap: str, timeout: float, props: dict | None = None) -> int:
    host, _, port = bootstrap.rpartition(":")
    ok, detail = probe(host or "localhost", int(port), timeout, props)
    print(detail, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1
