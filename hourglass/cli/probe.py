"""``hourglass probe``: is a Kafka endpoint answering? One ApiVersions v0 request over a plain
socket (the container healthcheck; no client library needed, works against any Kafka).

    hourglass probe -b host:port            that endpoint
    hourglass probe --ready-file FILE       the listeners this broker bound (the container's
                                            HEALTHCHECK: it follows KAFKA_LISTENERS, whatever
                                            ports and interfaces they name)

With ``--ready-file`` the listeners are the ``NAME://host:port`` lines ``serve --ready-file``
writes (a wildcard host is probed on loopback); each is probed with its security protocol, from
``--config``'s ``listener.security.protocol.map`` (Kafka's default map otherwise), PLAINTEXT and
SASL_PLAINTEXT listeners first: ApiVersions is answered before SASL authentication (KIP-35), and
TLS listeners get a handshake that checks no certificate (it is our own broker on loopback; a
listener requiring client certificates cannot be probed that way). The first listener that
answers makes the broker healthy.

Exit 0 when the broker answers with error code 0, 1 otherwise, with one line saying why.
"""
from __future__ import annotations

import re
import sys

from hourglass.cli.wire import WireClient, WireError
from protocol.api_keys import APIS

API_VERSIONS = 18
_LISTENER = re.compile(r"^([A-Za-z0-9_.-]+)://(\[[^\]]*\]|[^:\s]*):(\d+)$")
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


def bound_listeners(text: str) -> list[tuple[str, str, int]]:
    """``(name, host, port)`` of each ``NAME://host:port`` line of a ready file, in order;
    other lines (the first ``host:port`` line, ``service ...`` lines) are skipped."""
    out = []
    for line in text.splitlines():
        m = _LISTENER.match(line.strip())
        if m:
            out.append((m.group(1), m.group(2), int(m.group(3))))
    return out


def loopback_for(host: str) -> str:
    """Where to reach a listener bound to ``host`` from inside its own machine."""
    h = host.strip("[]")
    if h in ("", "0.0.0.0"):
        return "127.0.0.1"
    if h == "::":
        return "::1"
    return h


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
    """``(name, host, port, security protocol or None when unknown)`` to probe, in order."""
    pmap = protocol_map(config_text)
    out = []
    for name, host, port in bound_listeners(ready_text):
        proto = pmap.get(name.upper()) or (name.upper() if name.upper() in _STANDARD and not pmap else None)
        out.append((name, loopback_for(host), port, proto))
    out.sort(key=lambda t: _ORDER.get(t[3], 2))  # stable: the broker's order within a protocol
    return out


def _no_verify_context():
    import ssl
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def probe_ready_file(ready_file: str, config_file: str | None, timeout: float) -> tuple[bool, str]:
    try:
        with open(ready_file) as f:
            ready = f.read()
    except OSError as exc:
        return False, f"not ready: {ready_file}: {exc.strerror}"
    config = None
    if config_file:
        try:
            with open(config_file) as f:
                config = f.read()
        except OSError:
            pass  # Kafka's default map then
    targets = plan(ready, config)
    if not targets:
        return False, f"{ready_file} lists no listener"
    failures = []
    for name, host, port, proto in targets:
        tries = [proto] if proto else ["PLAINTEXT", "SSL"]
        for p in tries:
            tls = p in ("SSL", "SASL_SSL")
            ok, detail = probe(host, port, timeout, {"security.protocol": "SSL" if tls else "PLAINTEXT"},
                               _no_verify_context() if tls else None)
            if ok:
                return True, f"{name} {detail}"
            failures.append(f"{name}: {detail}")
    return False, "; ".join(failures)


def main(bootstrap: str, timeout: float, props: dict | None = None, ready_file: str | None = None,
         config_file: str | None = None) -> int:
    if ready_file:
        ok, detail = probe_ready_file(ready_file, config_file, timeout)
    else:
        host, _, port = bootstrap.rpartition(":")
        ok, detail = probe(host or "localhost", int(port), timeout, props)
    print(detail, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1
