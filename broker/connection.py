"""One client connection: size-prefixed frames in, responses out, strictly in request order.

Like Kafka's network layer, a connection processes one request at a time (a long-polling
Fetch holds the next request back), so responses are naturally in request order. The frame
size is checked against ``socket.request.max.bytes`` before a byte of the body is read.

Bad input closes *this* connection only, with one log line naming the peer, client id and
reason: a malformed frame, an unknown API key, or an unsupported version of any API but
ApiVersions (which is answered with UNSUPPORTED_VERSION and our range so clients retry).
"""
from __future__ import annotations

import asyncio
import logging
import struct
import time
from typing import TYPE_CHECKING, Any

from broker.quotas.manager import user_of
from broker.security.api_acls import RequestAuthz
from broker.security.authenticator import SASL_AUTHENTICATE, SASL_HANDSHAKE, SaslAuthenticator, State
from broker.security.principal import ANONYMOUS
from protocol.api_keys import APIS
from protocol.errors import DecodeError, EncodeError, ErrorCode
from protocol.header import decode_request_header, encode_response_header, peek_api, response_header_version
from protocol.messages.api_versions import ApiVersionsResponse

if TYPE_CHECKING:
    from broker.security.listener import ListenerSecurity
    from broker.server import Broker

log = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")
API_VERSIONS = 18
# Answers bounded by the request's own byte limits, on the hot path: encoded in one piece.
# Every other answer (those growing with the cluster: configs, metadata, groups, ACLs...) is
# encoded between turns of the event loop (``encode_response_sliced``).
ONE_PIECE_APIS = frozenset({0, 1})  # Produce, Fetch
ENCODE_SLICE_S = 0.005  # the longest an answer's encoding holds the loop before others run


class RequestContext:
    """What a handler knows about the request beyond its body. ``authz`` is the request's view
    of the authorizer (``broker.security.api_acls.RequestAuthz``): who asks, from where, and
    what this API checks."""
    __slots__ = ("broker", "conn", "api_key", "api_version", "correlation_id", "client_id", "header", "authz",
                 "waited_s", "started", "request_time_recorded")

    @property
    def listener(self) -> str | None:
        """The listener the request came in on (None outside a connection, e.g. unit tests)."""
        return getattr(self.conn, "listener", None)

    @property
    def security_protocol(self) -> str:
        return getattr(self.conn, "security_protocol", "PLAINTEXT")

    @property
    def token_authenticated(self) -> bool:
        """The connection logged in with a delegation token (Kafka's ``tokenAuthenticated``)."""
        auth = getattr(self.conn, "auth", None)
        return auth is not None and auth.token_authenticated

    def __init__(self, broker, conn, api_key, api_version, correlation_id, client_id, header):
        self.broker = broker
        self.conn = conn
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id
        self.header = header
        self.authz = None
        self.waited_s = 0.0  # time the handler spent parked (long-poll): not request-handling time
        self.started = 0.0  # perf_counter() when the handler was called
        self.request_time_recorded = False  # the handler recorded its request time itself (Fetch)


def _now_ms() -> int:
    return int(time.time() * 1000)


class CloseConnection(Exception):
    """Raised by the frame loop to drop the connection after logging why; ``kind`` is the
    reason's category (a metrics label and the log rate-limit key)."""

    def __init__(self, message: str, kind: str = "malformed_request"):
        super().__init__(message)
        self.kind = kind


# A misbehaving client reconnecting in a loop must not flood the log: one line per
# (client id, reason kind) per interval, with the count of the lines held back.
REJECT_LOG_INTERVAL_S = 60.0


class Connection:
    def __init__(self, broker: "Broker", reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 listener: str | None = None, security: "ListenerSecurity | None" = None):
        self.broker = broker
        self.listener = listener  # the listener name it came in on (Metadata advertises that one)
        self.security_protocol = security.protocol if security is not None else "PLAINTEXT"
        self.reader = reader
        self.writer = writer
        peer = writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.host = peer[0] if isinstance(peer, tuple) else str(peer)  # what ACL hosts match
        self.port = peer[1] if isinstance(peer, tuple) else None
        self.client_software: tuple[str | None, str | None] = (None, None)  # ApiVersions v3+ (KIP-511)
        # Who this is (Kafka's principal builder): ANONYMOUS on PLAINTEXT and on SSL without a
        # client certificate, the mapped certificate DN on SSL, the SASL identity once
        # authenticated (None until then).
        self.principal: str | None = ANONYMOUS
        self.auth: SaslAuthenticator | None = None
        self.auth_deadline: float | None = None  # monotonic time by which SASL must be done
        if security is not None and security.sasl is not None:
            self.principal = None
            self.auth = SaslAuthenticator(security.sasl, max_reauth_ms=security.reauth_ms,
                                          max_receive_size=broker.cfg["sasl.server.max.receive.size"])
            self.auth_deadline = time.monotonic() + broker.cfg["hourglass.authentication.timeout.ms"] / 1000
        self.client_id: str | None = None
        self.last_active = time.monotonic()
        self.frame_started: float | None = None  # set while a frame is partially read
        self.closed = False
        self.busy = False  # a request is being handled (shutdown waits for it)
        self.max_request = broker.cfg["socket.request.max.bytes"]
        # KIP-219: after answering a throttled request at once, read nothing more from this
        # connection for this long (ms); the client holds back for the same time.
        self.throttle_ms = 0

    def close(self, reason: str | None = None, kind: str = "malformed_request") -> None:
        if self.closed:
            return
        self.closed = True
        telemetry = getattr(self.broker, "client_telemetry", None)
        if telemetry is not None:  # Kafka's ClientMetricsManager disconnect listener
            telemetry.connection_closed(self)
        share_groups = getattr(self.broker, "share_groups", None)
        if share_groups is not None:  # Kafka 4.2's ShareSessionCache disconnect listener
            share_groups.on_connection_closed(self)
        if reason:
            self.broker.metrics.rejected[kind] += 1
            self._log_rejection(reason, kind)
        try:
            self.writer.close()
        except Exception:  # already gone
            pass

    def _log_rejection(self, reason: str, kind: str) -> None:
        seen = self.broker.rejections_logged
        key = (self.client_id, kind)
        now = time.monotonic()
        last, held = seen.get(key, (None, 0))
        if last is not None and now - last < REJECT_LOG_INTERVAL_S:
            seen[key] = (last, held + 1)
            return
        seen[key] = (now, 0)
        more = f" ({held} more like it in the last {REJECT_LOG_INTERVAL_S:.0f} s)" if held else ""
        log.warning("closing connection from %s (client id %r): %s%s", self.peer, self.client_id, reason, more)

    async def run(self) -> None:
        reader = self.reader
        try:
            while not self.closed:
                try:
                    head = await reader.readexactly(1)
                    # From its first byte a frame must arrive whole within request.read.timeout.ms:
                    # a client stalling inside the size prefix is as slow as one inside the body.
                    self.frame_started = time.monotonic()
                    head += await reader.readexactly(3)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                (size,) = _SIZE.unpack(head)
                if self.auth is not None and self.principal is None and not 0 <= size <= self.auth.max_receive_size:
                    self.close(f"Failing SASL authentication due to invalid receive size ({size} bytes, "
                               f"sasl.server.max.receive.size={self.auth.max_receive_size})", "authentication")
                    return
                if self.auth is not None and self.auth.raw_tokens:
                    pass  # a SaslHandshake v0 token: any size up to the SASL limit
                elif size < 8 or size > self.max_request:
                    self.close(f"request frame of {size} bytes is outside [8, socket.request.max.bytes="
                               f"{self.max_request}]", "oversized_request")
                    return
                try:
                    frame = await reader.readexactly(size)
                except (asyncio.IncompleteReadError, ConnectionError):
                    if not self.closed:
                        log.info("connection from %s (client id %r) closed mid-frame", self.peer, self.client_id)
                    return
                self.frame_started = None
                self.last_active = time.monotonic()
                self.busy = True
                try:
                    parts = await self.handle_frame(frame)
                except CloseConnection as exc:
                    self.close(str(exc), exc.kind)
                    return
                finally:
                    self.busy = False
                if parts is not None and not self.closed:
                    self.writer.writelines(parts)
                    # back-pressure: a client that stops reading stops us, not our memory
                    try:
                        await self.writer.drain()
                    except ConnectionError:
                        self._log_lost_answer(parts)
                        return
                if self.throttle_ms:  # muted: the next request waits in the socket
                    await asyncio.sleep(self.throttle_ms / 1000.0)
                    self.throttle_ms = 0
                self.last_active = time.monotonic()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self.close()

    async def handle_frame(self, frame: bytes) -> list | None:
        auth = self.auth
        if auth is not None and auth.raw_tokens:
            return await self._sasl_step(auth.raw_token(frame, _now_ms()), None, 0, 0)
        buf = memoryview(frame)
        api_key, api_version, correlation_id = peek_api(buf)
        if auth is not None:
            step = auth.admit(api_key, _now_ms())
            if step.close:
                raise CloseConnection(step.reason, "authentication")
        spec = APIS.get(api_key)
        handler = self.broker.handlers.get(api_key)
        if spec is None or handler is None:
            raise CloseConnection(f"unknown API key {api_key} (version {api_version})", "unknown_api")
        if not handler.min_version <= api_version <= handler.max_version:
            if api_key == API_VERSIONS:
                return self._unsupported_api_versions(correlation_id)
            raise CloseConnection(
                f"unsupported version {api_version} of API {spec.name} ({api_key}); "
                f"we serve {handler.min_version}-{handler.max_version}", "unsupported_version")
        flexible = spec.flexible(api_version)
        try:
            header, pos = decode_request_header(buf, 2 if flexible else 1)
            self.client_id = header.client_id
            request, end = spec.request.decode(buf, api_version, pos)
        except DecodeError as exc:
            raise CloseConnection(f"malformed {spec.name} v{api_version} request: {exc}") from None
        if end != len(buf):
            # Kafka tolerates trailing bytes in some old clients; log once at debug level.
            log.debug("%d trailing bytes after %s v%d from %s", len(buf) - end, spec.name, api_version, self.peer)
        if auth is not None and api_key in (SASL_HANDSHAKE, SASL_AUTHENTICATE):
            if api_key == SASL_HANDSHAKE:
                step = auth.handshake(api_version, request.mechanism, _now_ms())
            else:
                step = auth.authenticate(api_version, request.auth_bytes, _now_ms())
            return await self._sasl_step(step, spec, api_version, correlation_id)
        ctx = RequestContext(self.broker, self, api_key, api_version, correlation_id, header.client_id, header)
        ctx.authz = RequestAuthz(self.broker.security.authorizer, self.principal, self.host, api_key, api_version)
        self.broker.metrics.request_started(api_key, api_version)
        t0 = ctx.started = time.perf_counter()
        try:
            response = await handler.fn(ctx, request)
        except CloseConnection:
            raise
        except Exception as exc:
            log.exception("%s v%d handler failed for client %r", spec.name, api_version, self.client_id)
            self.broker.metrics.failed[(api_key, api_version)] += 1
            raise CloseConnection(f"internal error handling {spec.name} v{api_version}: {exc!r}",
                                  "internal_error") from None
        finally:
            elapsed = time.perf_counter() - t0
            self.broker.metrics.request_done(api_key, api_version, elapsed)
        quotas = self.broker.quotas
        if quotas is not None and quotas.active:
            self._account(quotas, ctx, len(frame), elapsed, response)
        if auth is not None and api_key == API_VERSIONS:
            auth.api_versions_answered()
        if response is None:
            return None
        if api_key in ONE_PIECE_APIS:
            return self.encode_response(spec, api_version, correlation_id, response)
        return await self.encode_response_sliced(spec, api_version, correlation_id, response)

    def _log_lost_answer(self, parts: list) -> None:
        """The transport failed while sending an answer: say why, unless the client went away
        (a reset or a close is the client's doing and routine)."""
        cause = self.reader.exception()
        size = sum(map(len, parts))
        if cause is None or isinstance(cause, ConnectionError):
            log.debug("connection from %s (client id %r) closed by the client while a %d-byte answer was sent",
                      self.peer, self.client_id, size)
        else:
            log.warning("connection from %s (client id %r) lost while a %d-byte answer was sent: %r",
                        self.peer, self.client_id, size, cause)

    def _account(self, quotas, ctx, size: int, elapsed: float, response) -> None:
        """Client quotas: record this request and, over a quota, put the throttle time in the
        response and mute the connection for it (Kafka's maxThrottleTimeMs, KIP-219)."""
        prior = getattr(response, "throttle_time_ms", 0) or 0
        throttle = quotas.after_request(user_of(self.principal), ctx.client_id or "", ctx.api_key, size,
                                        max(elapsed - ctx.waited_s, 0.0), prior, ctx.request_time_recorded)
        if throttle > 0:
            self.throttle_ms = max(self.throttle_ms, throttle)
            if response is not None and hasattr(response, "throttle_time_ms"):
                response.throttle_time_ms = throttle

    async def _sasl_step(self, step, spec, api_version: int, correlation_id: int) -> list | None:
        """Answer one step of the SASL exchange: after the failure delay when it failed, then
        close when it says so; on success the connection takes the authenticated principal."""
        auth = self.auth
        if auth.state == State.COMPLETE:
            self.principal = auth.principal
            self.auth_deadline = None
        elif self.auth_deadline is None:  # re-authenticating: the exchange is timed again
            self.auth_deadline = time.monotonic() + self.broker.cfg["hourglass.authentication.timeout.ms"] / 1000
        if step.response is None:
            parts = None
        elif spec is None:  # SaslHandshake v0: a raw, size-prefixed token
            parts = [_SIZE.pack(len(step.response)), bytes(step.response)]
        else:
            parts = self.encode_response(spec, api_version, correlation_id, step.response)
        if step.delayed:
            await asyncio.sleep(self.broker.cfg["connection.failed.authentication.delay.ms"] / 1000)
        if step.close:
            if parts is not None and not self.closed:
                self.writer.writelines(parts)
                try:
                    await self.writer.drain()
                except ConnectionError:
                    pass
            raise CloseConnection(step.reason or "SASL authentication failed", "authentication")
        return parts

    def encode_response(self, spec, api_version: int, correlation_id: int, response: Any) -> list:
        hv = response_header_version(spec.key, spec.flexible(api_version))
        parts: list = [b"", encode_response_header(correlation_id, hv)]
        try:
            spec.response.encode_parts(response, api_version, parts)
        except EncodeError as exc:
            log.error("cannot encode %s v%d: %s", spec.name, api_version, exc)
            raise CloseConnection(f"internal error encoding {spec.name} v{api_version}", "internal_error") from None
        parts[0] = _SIZE.pack(sum(map(len, parts)))
        return parts

    async def encode_response_sliced(self, spec, api_version: int, correlation_id: int, response: Any) -> list:
        """``encode_response`` for answers that grow with the cluster: encoded in slices
        (``CompiledMessage.encode_slices``), letting the event loop run other work every
        ``ENCODE_SLICE_S``, and handed on as chunks of joined parts: the transport gets a few
        hundred buffers, not millions of small ones (uvloop failed the write of the ~1.9 million
        parts of a 21 MB answer with EINVAL and the connection dropped). Each array of structs is
        snapshotted as its count is written and each element encoded in one go, so a list the
        handler shares with live state cannot make the frame inconsistent meanwhile."""
        hv = response_header_version(spec.key, spec.flexible(api_version))
        out: list = [encode_response_header(correlation_id, hv)]
        chunks: list = []
        t0 = time.perf_counter()
        try:
            for _ in spec.response.encode_slices(response, api_version, out):
                chunks.append(b"".join(out))
                out.clear()
                if time.perf_counter() - t0 >= ENCODE_SLICE_S:
                    await asyncio.sleep(0)
                    t0 = time.perf_counter()
        except EncodeError as exc:
            log.error("cannot encode %s v%d: %s", spec.name, api_version, exc)
            raise CloseConnection(f"internal error encoding {spec.name} v{api_version}", "internal_error") from None
        if chunks:
            chunks.append(b"".join(out))
            out = chunks
        return [_SIZE.pack(sum(map(len, out))), *out]

    def _unsupported_api_versions(self, correlation_id: int) -> list:
        h = self.broker.handlers[API_VERSIONS]
        body = ApiVersionsResponse(
            error_code=ErrorCode.UNSUPPORTED_VERSION,
            api_keys=[ApiVersionsResponse.ApiVersion(api_key=API_VERSIONS, min_version=h.min_version,
                                                     max_version=h.max_version)],
        )
        return self.encode_response(APIS[API_VERSIONS], 0, correlation_id, body)
