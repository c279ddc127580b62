"""A minimal blocking Kafka client over our own codec, for the command line tools that need
APIs the client libraries do not expose (``hourglass probe``, ``hourglass transactions``,
``hourglass groups``, ``hourglass acls list``), and what those tools share: the
``--bootstrap-server``/``--timeout``/``--command-config`` options, Kafka's error names and its
tools' table layout.

One connection, one request at a time: ``request(api_key, version, body)`` sends the request
with header v1/v2 (as the version is flexible or not) and returns the decoded response,
checking the correlation id; ApiVersions responses use header v0 as Kafka's do.

Secured listeners: ``props`` are a Java client's properties (``--command-config``):
``security.protocol`` SSL / SASL_SSL wrap the socket in TLS (``broker.security.tls.client_context``),
SASL_* authenticate with SaslHandshake v1 and SaslAuthenticate (``broker.security.client``)
before the first request.
"""
from __future__ import annotations

import argparse
import os
import socket
import struct

from protocol.header import RequestHeader, encode_request_header, response_header_version

_SIZE = struct.Struct(">i")


class WireError(Exception):
    """The broker could not be reached, or closed the connection."""


class WireClient:
    def __init__(self, bootstrap: str, client_id: str = "hourglass-cli", timeout: float = 10.0,
                 props: dict[str, str] | None = None, tls_context=None):
        host, _, port = bootstrap.rpartition(":")
        self.address = f"{host or 'localhost'}:{port}"
        props = props or {}
        protocol = (props.get("security.protocol") or "PLAINTEXT").upper()
        try:
            self.sock = socket.create_connection((host or "localhost", int(port)), timeout=timeout)
        except (OSError, ValueError) as exc:
            raise WireError(f"cannot reach {bootstrap}: {exc}") from None
        self.client_id = client_id
        self.correlation_id = 0
        if protocol in ("SSL", "SASL_SSL"):
            from broker.security.tls import TlsConfigError, client_context
            try:
                ctx = tls_context or client_context(props.get)  # tls_context: the caller's own (the probe's)
                self.sock = ctx.wrap_socket(self.sock, server_hostname=host or "localhost")
            except TlsConfigError as exc:
                self.sock.close()
                raise WireError(f"{self.address}: {exc}") from None
            except (OSError, ValueError) as exc:
                self.sock.close()
                raise WireError(f"{self.address}: TLS handshake failed: {exc}") from None
        if protocol.startswith("SASL_"):
            self._authenticate(props)

    def _authenticate(self, props) -> None:
        from broker.security.client import SaslClientError, sasl_client
        from protocol.api_keys import APIS
        try:
            client = sasl_client(props.get)
        except SaslClientError as exc:
            raise WireError(str(exc)) from None
        hs = self.request(17, 1, APIS[17].request.cls(mechanism=client.mechanism))
        if hs.error_code:
            raise WireError(f"{self.address}: SASL mechanism {client.mechanism} refused (error {hs.error_code}); "
                            f"the broker offers {', '.join(hs.mechanisms)}")
        token = client.first()
        while token is not None:
            r = self.request(36, 2, APIS[36].request.cls(auth_bytes=token))
            if r.error_code:
                raise WireError(f"{self.address}: SASL authentication failed: {r.error_message}")
            try:
                token = client.step(bytes(r.auth_bytes))
            except Exception as exc:  # e.g. a SCRAM server signature that does not verify
                raise WireError(f"{self.address}: SASL authentication failed: {exc}") from None

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "WireClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def request(self, api_key: int, version: int, body):
        from protocol.api_keys import APIS  # every message schema: only once a request is made
        spec = APIS[api_key]
        self.correlation_id += 1
        flexible = spec.flexible(version)
        hdr = RequestHeader(request_api_key=api_key, request_api_version=version,
                            correlation_id=self.correlation_id, client_id=self.client_id)
        payload = encode_request_header(hdr, 2 if flexible else 1) + spec.request.encode(body, version)
        try:
            self.sock.sendall(_SIZE.pack(len(payload)) + payload)
            (n,) = _SIZE.unpack(self._recv_exact(4))
            frame = memoryview(self._recv_exact(n))
        except OSError as exc:
            raise WireError(f"{self.address}: {exc}") from None
        (cid,) = _SIZE.unpack_from(frame, 0)
        if cid != self.correlation_id:
            raise WireError(f"{self.address}: answer to request {cid}, expected {self.correlation_id}")
        pos = 4 + (1 if response_header_version(api_key, flexible) == 1 else 0)
        return spec.response.decode(frame, version, pos)[0]

    def _recv_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise WireError(f"{self.address}: connection closed by the broker")
            buf += chunk
        return bytes(buf)


# ---- shared by the CLI tools over this client ------------------------------------------------

DEFAULT_BOOTSTRAP = "localhost:9092"


def add_cli_options(p, suppress: bool = False) -> None:
    """``--bootstrap-server`` and ``--timeout``, accepted before or after a sub-command
    (``suppress``: the sub-command's copy keeps the outer value when not repeated)."""
    p.add_argument("--bootstrap-server", "-b", default=argparse.SUPPRESS if suppress else None,
                   help=f"host:port of the broker (default: $HOURGLASS_BOOTSTRAP or {DEFAULT_BOOTSTRAP})")
    p.add_argument("--timeout", type=float, default=argparse.SUPPRESS if suppress else 30.0,
                   help="seconds to wait for the broker (default 30)")
    from hourglass.cli import client_properties
    client_properties.add_option(p, suppress)


class CliError(Exception):
    """A failure a CLI tool reports on stderr with exit code 1."""


def cli_client(args, client_id: str) -> WireClient:
    """A client to the broker the options name (``CliError`` when it cannot be reached)."""
    from hourglass.cli import client_properties
    bootstrap = args.bootstrap_server or os.environ.get("HOURGLASS_BOOTSTRAP") or DEFAULT_BOOTSTRAP
    try:
        return WireClient(bootstrap, client_id, args.timeout, props=client_properties.of(args))
    except (WireError, client_properties.ClientPropertiesError) as exc:
        raise CliError(str(exc)) from None


def run_cli(prog: str, fn, args, out=None, err=None) -> int:
    """Run one CLI command ``fn(args, out)``; a ``CliError`` or ``WireError`` is one line on
    stderr (``hourglass <prog>: error: ...``) and exit code 1."""
    import sys
    try:
        return fn(args, out or sys.stdout)
    except (CliError, WireError) as exc:
        print(f"hourglass {prog}: error: {exc}", file=err or sys.stderr)
        return 1


def error_name(code: int) -> str:
    from protocol.errors import ErrorCode
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


def print_table(out, header: list[str], rows: list[list]) -> None:
    """Kafka's ToolsUtils.prettyPrintTable: left-aligned columns."""
    cells = [header] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    for r in cells:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip(), file=out)
