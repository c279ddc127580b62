#!/usr/bin/env python3
"""Hostile bytes against a real broker: the broker must never crash or hang; it answers with
a Kafka error or closes only the offending connection, and other clients carry on.

Usage::

    python scripts/fuzz_broker.py --seconds 600          # make fuzz SECONDS=600
    python scripts/fuzz_broker.py --seconds 10 --seed 3  # a short pass (CI runs one in pytest)

Frames are drawn by hypothesis (``frame_strategy``):

* schema-valid requests of every API and version (random field values, drawn from the
  protocol schema as the codec tests do), sent as they are or mutated (bytes flipped, cut,
  inserted, deleted, a huge count/length planted);
* random bodies behind a valid header, invalid varints (flexible versions), giant array
  counts, unknown API keys and versions;
* lying size prefixes: shorter or longer than the frame, negative, zero, huge;
* Produce requests carrying corrupt record batches: bad CRC, wrong record count, bad magic,
  a control batch from a client, a lying batch length, compressed garbage, a bad
  last-offset delta (these must be *answered* with an error, the connection kept).

Each frame goes out on a fresh connection, followed by a valid ApiVersions request; the
broker must answer both, or answer and close, or close, within a bound (a frame that
claims more bytes than it has must be closed after ``request.read.timeout.ms``). After
every example a canary connection opened at the start produces and fetches one record;
the broker process must still be alive. A failure is shrunk by hypothesis and printed.

Summary line: ``fuzz: frames=.. answered=.. closed=.. crashes=.. hangs=.. canary_failures=..``;
exit status 1 on any crash, hang or canary failure.
"""
from __future__ import annotations

import argparse
import os
import socket
import struct
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from protocol.api_keys import APIS  # noqa: E402
from protocol.header import RequestHeader, encode_request_header  # noqa: E402
from protocol.messages.api_versions import ApiVersionsRequest  # noqa: E402
from protocol.messages.produce import ProduceRequest  # noqa: E402
from protocol.records.batch import rewrite_crc  # noqa: E402
from protocol.records.record import build_batch  # noqa: E402

READ_TIMEOUT_MS = 400
FUZZ_BROKER_CONFIG = {
    "request.read.timeout.ms": READ_TIMEOUT_MS,
    "connections.max.idle.ms": 60000,
    "socket.request.max.bytes": 1 << 20,
}
PROBE_CID = 0x7E57


# ------------------------------------------------------------------------------- frames

def _header(key: int, version: int, cid: int = 1, client_id: str | None = "fuzz") -> bytes:
    spec = APIS.get(key)
    flexible = spec.flexible(version) if spec is not None and spec.min_version <= version <= spec.max_version else False
    return encode_request_header(RequestHeader(request_api_key=key, request_api_version=version,
                                               correlation_id=cid, client_id=client_id), 2 if flexible else 1)


def _sized(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


@st.composite
def valid_request(draw):
    from tests.protocol.test_messages_roundtrip import message_strategy
    key = draw(st.sampled_from(sorted(APIS)), label="api")
    spec = APIS[key]
    v = draw(st.integers(spec.min_version, spec.max_version), label="version")
    msg = draw(message_strategy(key, "request", v, unknown_tags=False), label="message")
    return key, v, _header(key, v) + spec.request.encode(msg, v)


@st.composite
def mutated(draw, payload_strategy):
    key, v, b = draw(payload_strategy)
    b = bytearray(b)
    for _ in range(draw(st.integers(0, 3), label="mutations")):
        op = draw(st.sampled_from(["flip", "cut", "insert", "delete", "big"]), label="op")
        i = draw(st.integers(8, max(8, len(b))), label="at")   # keep the api key/version/cid
        if op == "flip" and i < len(b):
            b[i] = draw(st.integers(0, 255))
        elif op == "cut":
            del b[i:]
        elif op == "insert":
            b[i:i] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del b[i:i + draw(st.integers(1, 8))]
        elif op == "big":
            b[i:i + 4] = draw(st.sampled_from([b"\x7f\xff\xff\xff", b"\xff\xff\xff\xfe", b"\x00\x10\x00\x00",
                                               b"\xff\xff\xff\x0f", b"\x80\x80\x80\x80"]))
    return "mutated", _sized(bytes(b[:max(len(b), 8)]) if len(b) >= 8 else bytes(b) + b"\x00" * (8 - len(b)))


@st.composite
def random_body(draw):
    key = draw(st.one_of(st.sampled_from(sorted(APIS)), st.integers(-2**15, 2**15 - 1)), label="api")
    spec = APIS.get(key)
    if spec is not None and draw(st.booleans()):
        v = draw(st.integers(spec.min_version, spec.max_version))
    else:
        v = draw(st.integers(-2**15, 2**15 - 1))
    body = draw(st.one_of(
        st.binary(max_size=64),
        st.just(b"\xff" * 6 + b"\x01"),                       # invalid (over-long) varint
        st.just(b"\x00\x00" + b"\x7f\xff\xff\xff"),           # giant array count
        st.just(b"\x7f\xff\xff\xff" * 4),
        st.just(b"\xff\xff\xff\xff\x0f" * 3),                 # giant compact length
    ), label="body")
    client = draw(st.one_of(st.just("fuzz"), st.none(), st.text(max_size=5)))
    hdr = struct.pack(">hhi", key, v, 1)
    if client is None:
        hdr += b"\xff\xff"
    else:
        raw = client.encode("utf-8", "surrogatepass")
        hdr += struct.pack(">h", len(raw)) + raw
    if spec is not None and spec.min_version <= v <= spec.max_version and spec.flexible(v):
        hdr += draw(st.sampled_from([b"\x00", b"\x01\x05\x7f", b"\xff\xff\xff\xff\xff"]))
    return "random", _sized(hdr + body)


@st.composite
def lying_size(draw):
    _kind, frame = draw(st.one_of(valid_request().map(lambda t: ("valid", _sized(t[2]))), random_body()))
    payload = frame[4:]
    claim = draw(st.one_of(
        st.integers(len(payload) + 1, len(payload) + 64),    # longer than sent: must time out and close
        st.integers(0, max(0, len(payload) - 1)),            # shorter: the rest is read as a next frame
        st.sampled_from([-1, -2**31, 2**31 - 1, 1 << 20, (1 << 20) + 1, 7])), label="claimed size")
    return "lying", struct.pack(">i", claim) + payload


@st.composite
def corrupt_produce(draw):
    v = draw(st.integers(3, APIS[0].max_version), label="produce version")
    n = draw(st.integers(1, 4))
    batch = bytearray(build_batch([(b"k", b"v" * draw(st.integers(0, 30)), int(time.time() * 1000))
                                   for _ in range(n)],
                                  compression=draw(st.sampled_from([0, 0, 1, 2, 3, 4]))))
    how = draw(st.sampled_from(["crc", "count", "magic", "control", "length", "lastdelta", "codec-garbage",
                                "transactional", "truncated", "trailing"]), label="corruption")
    if how == "crc":
        batch[17] ^= 0xFF
    elif how == "count":
        struct.pack_into(">i", batch, 57, draw(st.sampled_from([0, n + 1, -1, 2**31 - 1])))
        rewrite_crc(batch, 0)
    elif how == "magic":
        batch[16] = draw(st.sampled_from([0, 1, 3, 255]))
    elif how == "control":
        attrs = struct.unpack_from(">h", batch, 21)[0] | 0x20
        struct.pack_into(">h", batch, 21, attrs)
        rewrite_crc(batch, 0)
    elif how == "length":
        struct.pack_into(">i", batch, 8, draw(st.sampled_from([0, 10, len(batch) + 100, 2**31 - 1])))
    elif how == "lastdelta":
        struct.pack_into(">i", batch, 23, draw(st.sampled_from([-1, n + 5, 2**31 - 1])))
        rewrite_crc(batch, 0)
    elif how == "codec-garbage":
        attrs = (struct.unpack_from(">h", batch, 21)[0] & ~7) | draw(st.integers(1, 7))
        struct.pack_into(">h", batch, 21, attrs)
        batch[61:] = draw(st.binary(min_size=1, max_size=40))
        struct.pack_into(">i", batch, 8, len(batch) - 12)
        rewrite_crc(batch, 0)
    elif how == "transactional":
        attrs = struct.unpack_from(">h", batch, 21)[0] | 0x10
        struct.pack_into(">h", batch, 21, attrs)
        rewrite_crc(batch, 0)
    elif how == "truncated":
        del batch[draw(st.integers(12, len(batch) - 1)):]
    elif how == "trailing":
        batch += draw(st.binary(min_size=1, max_size=20))
    req = ProduceRequest(transactional_id=None, acks=draw(st.sampled_from([1, -1])), timeout_ms=1000, topic_data=[
        ProduceRequest.TopicProduceData(name="fuzz-target", partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=bytes(batch))])])
    return "corrupt-produce", _sized(_header(0, v) + APIS[0].request.encode(req, v))


def frame_strategy():
    return st.one_of(
        valid_request().map(lambda t: ("valid", _sized(t[2]))),
        mutated(valid_request()),
        random_body(),
        lying_size(),
        corrupt_produce(),
    )


def _probe() -> bytes:
    body = APIS[18].request.encode(ApiVersionsRequest(), 0)
    return _sized(struct.pack(">hhi", 18, 0, PROBE_CID) + b"\x00\x05probe" + body)


# ------------------------------------------------------------------------------- one exchange

class Outcome:
    ANSWERED, CLOSED, HANG = "answered", "closed", "hang"


def _read_frame(sock: socket.socket, deadline: float) -> bytes | None:
    """One response frame, None when the broker closed the connection; TimeoutError at deadline."""
    def recv_exact(n: int) -> bytes | None:
        buf = bytearray()
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            sock.settimeout(left)
            try:
                chunk = sock.recv(n - len(buf))
            except (ConnectionResetError, BrokenPipeError):
                return None
            except socket.timeout:
                raise TimeoutError from None
            if not chunk:
                return None
            buf += chunk
        return bytes(buf)
    head = recv_exact(4)
    if head is None:
        return None
    (n,) = struct.unpack(">i", head)
    return recv_exact(n)


def exchange(bootstrap: str, kind: str, frame: bytes) -> tuple[str, list[bytes]]:
    """Send ``frame`` then a valid ApiVersions probe; see the module docstring for the bar."""
    host, port = bootstrap.rsplit(":", 1)
    probe = _probe()
    # A lying size prefix that reaches over the whole probe makes the probe part of this frame's
    # body: if that still decodes, the one answer the broker owes is the frame's own.
    swallowed = len(frame) >= 4 and struct.unpack_from(">i", frame, 0)[0] >= len(frame) - 4 + len(probe)
    sock = socket.create_connection((host, int(port)), timeout=5)
    try:
        try:
            sock.sendall(frame + probe)
        except (BrokenPipeError, ConnectionResetError):
            return Outcome.CLOSED, []
        limit = 8.0 + (READ_TIMEOUT_MS / 1000 if kind == "lying" else 0)
        deadline = time.monotonic() + limit
        frames = []
        while True:
            try:
                f = _read_frame(sock, deadline)
            except TimeoutError:
                return Outcome.HANG, frames
            if f is None:
                return Outcome.CLOSED, frames
            frames.append(f)
            if swallowed or struct.unpack_from(">i", f, 0)[0] == PROBE_CID:
                return Outcome.ANSWERED, frames
    finally:
        sock.close()


# ------------------------------------------------------------------------------- driver

class Fuzzer:
    def __init__(self, bp, seconds: float):
        from tests.reliability.wire import Wire
        self.bp = bp
        self.seconds = seconds
        self.counts = {"frames": 0, "answered": 0, "closed": 0, "crashes": 0, "hangs": 0, "canary_failures": 0}
        self.by_kind: dict[str, int] = {}
        self.failures: list[str] = []
        self.canary = Wire(bp.bootstrap, client_id="canary")
        self.canary.create_topic("canary")
        self.canary_n = 0
        self.t_end = time.monotonic() + seconds

    def check_canary(self) -> str | None:
        from tests.reliability.wire import Wire
        try:
            r = self.canary.produce("canary", 0, [b"c%d" % self.canary_n])
            if r.error_code not in (0, 3):     # 3: the fuzzer deleted the topic; it comes back
                return f"canary produce error {r.error_code}"
            p = self.canary.fetch("canary", 0, 0, max_bytes=1024)
            if p.error_code not in (0, 3, 1):
                return f"canary fetch error {p.error_code}"
            self.canary_n += 1
        except (OSError, ConnectionError, AssertionError) as exc:
            try:
                self.canary.close()
                self.canary = Wire(self.bp.bootstrap, client_id="canary")
            except OSError:
                pass
            return f"canary session broken: {exc!r}"
        return None

    def one(self, kind: str, frame: bytes) -> None:
        self.counts["frames"] += 1
        self.by_kind[kind] = self.by_kind.get(kind, 0) + 1
        outcome, frames = exchange(self.bp.bootstrap, kind, frame)
        problems = []
        if not self.bp.running:
            self.counts["crashes"] += 1
            problems.append(f"broker died (exit {self.bp.proc.poll() if self.bp.proc else '?'})")
            self.bp.stop()
            self.bp.start()
            from tests.reliability.wire import Wire
            self.canary = Wire(self.bp.bootstrap, client_id="canary")
        elif outcome == Outcome.HANG:
            self.counts["hangs"] += 1
            problems.append("no answer and no close within the bound")
        else:
            self.counts[outcome] += 1
            if kind == "corrupt-produce" and outcome == Outcome.CLOSED and not frames:
                problems.append("a corrupt record batch closed the connection instead of an error answer")
            if kind == "corrupt-produce" and frames:
                err = _produce_error(frame, frames[0])
                if err == 0:
                    problems.append("a corrupt record batch was accepted")
            c = self.check_canary()
            if c:
                self.counts["canary_failures"] += 1
                problems.append(c)
        if problems:
            msg = f"{kind} frame {frame[:200].hex()}{'...' if len(frame) > 200 else ''}: {'; '.join(problems)}"
            self.failures.append(msg)
            raise AssertionError(msg)

    def run(self, seed: int | None) -> int:
        import hypothesis
        fuzzer = self

        @settings(max_examples=25, deadline=None, database=None, phases=(Phase.generate, Phase.shrink),
                  suppress_health_check=list(HealthCheck), report_multiple_bugs=False)
        @given(frame_strategy())
        def prop(kf):
            fuzzer.one(*kf)

        chunk = 0
        # hypothesis runs fixed-size chunks (a time check inside a run would make it flaky);
        # the time limit is checked between chunks
        while time.monotonic() < self.t_end:
            chunk += 1
            run = prop if seed is None else hypothesis.seed(seed * 100003 + chunk)(prop)
            try:
                run()
            except AssertionError as exc:
                print(f"FAILURE (shrunk): {exc}", flush=True)
                if len(self.failures) > 50:
                    break
        c = self.counts
        print(f"fuzz: frames={c['frames']} answered={c['answered']} closed={c['closed']} crashes={c['crashes']} "
              f"hangs={c['hangs']} canary_failures={c['canary_failures']} kinds={dict(sorted(self.by_kind.items()))}",
              flush=True)
        return 1 if (c["crashes"] or c["hangs"] or c["canary_failures"] or self.failures) else 0


def _produce_error(frame: bytes, resp: bytes) -> int | None:
    """The partition error code of a Produce response to ``frame`` (None if not decodable)."""
    try:
        v = struct.unpack_from(">h", frame, 6)[0]
        spec = APIS[0]
        pos = 4 + (1 if spec.flexible(v) else 0)
        r, _ = spec.response.decode(memoryview(resp), v, pos)
        return r.responses[0].partition_responses[0].error_code
    except Exception:
        return None


def fuzz(seconds: float, seed: int | None = None, data_dir: Path | None = None) -> int:
    from tests.helpers.broker import BrokerProcess
    tmp = Path(tempfile.mkdtemp(prefix="hourglass-fuzz-")) if data_dir is None else data_dir
    bp = BrokerProcess(tmp / "data", FUZZ_BROKER_CONFIG, ready_timeout=60)
    bp.start()
    try:
        rc = Fuzzer(bp, seconds).run(seed)
    finally:
        stop_rc = bp.stop()
    if stop_rc != 0:
        print(f"fuzz: broker exited {stop_rc} on SIGTERM (log {bp.log_path})")
        rc = 1
    if rc:
        print(f"broker log: {bp.log_path}", file=sys.stderr)
    return rc


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--data-dir", type=Path, default=None)
    a = p.parse_args(argv)
    return fuzz(a.seconds, a.seed, a.data_dir)


if __name__ == "__main__":
    raise SystemExit(main())
