"""``hourglass probe``: is a Kafka endpoint answering? One ApiVersions v0 request over a plain
socket (the container healthcheck; no client library needed, works against any Kafka).

Exit 0 when the broker answers with error code 0, 1 otherwise, with one line saying why.

``--ready-file PATH`` (the file ``hourglass serve --ready-file`` writes once it serves) probes
the listeners the broker actually bound, whatever its configuration says: every
``NAME://host:port`` line after the first (a wildcard host is reached on loopback), healthy
when one of them answers. So a container's health check holds on any port or listener name,
not only 127.0.0.1:9092. No ready file yet: not healthy (the broker has not started serving).

Each listener is probed with its security protocol, from ``--config``'s
``listener.security.protocol.map`` (a standard name is its own protocol; an unknown one is tried
in plaintext, then TLS), PLAINTEXT and SASL_PLAINTEXT listeners first: ApiVersions is answered
before SASL authentication (KIP-35), and TLS listeners get a handshake that checks no
certificate (our own broker, on loopback; a listener requiring client certificates cannot be
probed that way). ``--command-config`` properties, when given, are used as they are instead.
"""
from __future__ import annotations

import re
import sys

from hourglass.cli.wire import WireClient, WireError
from protocol.api_keys import APIS

API_VERSIONS = 18
_STANDARD = ("PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL")
# probe order: no TLS first (cheaper, nothing to mis-handshake), then TLS
_ORDER = {"PLAINTEXT": 0, "SASL_PLAINTEXT": 1, None: 2, "SSL": 3, "SASL_SSL": 4}


def probe(host: str, port: int, timeout: float = 3.0, props: dict | None = None,
          tls_context=None) -> tuple[bool, str]:
    spec = APIS[API_VERSIONS]
    try:
        with WireClient(f"{host}:{port}", "hourglass-probe", timeout, props=props, tls_context=tls_context) as c:
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


def protocol_map(config_text: str | None) -> dict[str, str]:
    """``listener.security.protocol.map`` of a server.properties (the last one wins), names
    upper-cased; empty when absent."""
    value = None
    for line in (config_text or "").splitlines():
        m = re.match(r"^\s*listener\.security\.protocol\.map\s*[=:]\s*(.*)$", line)
        if m:
            value = m.group(1).strip()
    out = {}
    for pair in (value or "").split(","):
        name, _, proto = pair.partition(":")
        if name.strip() and proto.strip():
            out[name.strip().upper()] = proto.strip().upper()
    return out


def plan(ready_text: str, config_text: str | None = None) -> list[tuple[str, str, int, str | None]]:
    """``(name, host, port, security protocol or None when unknown)`` to probe, in order: the
    ready file's listeners, those without TLS first (stable: the broker's order otherwise)."""
    pmap = protocol_map(config_text)
    out = []
    for name, host, port in bound_listeners(ready_text):
        key = name.upper()
        proto = pmap.get(key) or (key if key in _STANDARD and not pmap else None)
        out.append((name, host, port, proto))
    out.sort(key=lambda t: _ORDER.get(t[3], 2))
    return out


def _no_verify_context():
    import ssl
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _attempts(proto: str | None, props: dict | None):
    """(props, TLS context) to try on a listener of protocol ``proto``."""
    if props:
        return [(props, None)]
    tries = [proto] if proto else ["PLAINTEXT", "SSL"]
    return [({"security.protocol": "SSL"}, _no_verify_context()) if p in ("SSL", "SASL_SSL")
            else ({"security.protocol": "PLAINTEXT"}, None) for p in tries]


def main(bootstrap: str, timeout: float, props: dict | None = None, ready_file: str | None = None,
         config_file: str | None = None) -> int:
    if ready_file is not None:
        try:
            with open(ready_file) as f:
                ready = f.read()
        except OSError as exc:
            print(f"not serving yet: {exc}", file=sys.stderr)
            return 1
        config = None
        if config_file:
            try:
                with open(config_file) as f:
                    config = f.read()
            except OSError:
                pass  # Kafka's standard names then
        targets = plan(ready, config)
    else:
        host, _, port = bootstrap.rpartition(":")
        targets = [("", host or "localhost", int(port), "given")]
    failures = []
    for name, host, port, proto in targets:
        for p, ctx in (_attempts(proto, props) if proto != "given" else [(props, None)]):
            ok, detail = probe(host, port, timeout, p, ctx)
            if ok:
                print(f"{name} {detail}".strip())
                return 0
            failures.append(f"{name} {host}:{port}: {detail}".strip())
    print("; ".join(failures) or "no listener in the ready file", file=sys.stderr)
    return 1
