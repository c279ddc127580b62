"""What a secured broker refuses, over real sockets: each refusal answers Kafka's error (when
Kafka answers one), closes that connection, and leaves the broker serving everyone else.

- wrong password, unknown user, wrong mechanism: SASL_AUTHENTICATION_FAILED (or
  UNSUPPORTED_SASL_MECHANISM) after ``connection.failed.authentication.delay.ms``, then close;
- a request other than ApiVersions/SaslHandshake before authentication: closed, no answer;
- a stalled SASL exchange or TLS handshake: cut after ``hourglass.authentication.timeout.ms``;
- an untrusted, expired or missing client certificate on a listener that requires one;
- KIP-368: with ``connections.max.reauth.ms`` a client re-authenticates on the same connection,
  and a session past its lifetime is closed on its next request;
- ``max.connections.per.ip`` and its overrides;
- no password or token in the broker's log.
"""
from __future__ import annotations

import datetime as dt
import socket
import ssl
import struct
import time

import pytest
import trustme
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from hourglass.cli.wire import WireClient, WireError
from protocol.api_keys import APIS
from protocol.errors import ErrorCode as E
from protocol.header import RequestHeader, encode_request_header
from tests.helpers.broker import BrokerProcess

DELAY_MS = 300
SECRET = "alice-very-secret"
JAAS = f'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="{SECRET}";'


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    d = tmp_path_factory.mktemp("refusals")
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(d / "ca.pem"))
    ca.issue_cert("localhost", "127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(d / "broker.pem"))
    from broker.security.scram import ScramCredentialStore, ScramMechanism, credential_from_password
    from broker.security.state import security_dir
    m = ScramMechanism.SCRAM_SHA_512
    ScramCredentialStore(security_dir([d / "data"])).apply({"alice": (m, credential_from_password(m, SECRET))}, {})
    b = BrokerProcess(d / "data", {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0,MTLS://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
        "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,MTLS:SSL,PLAINTEXT:PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "ssl.keystore.type": "PEM", "ssl.keystore.location": d / "broker.pem",
        "ssl.truststore.type": "PEM", "ssl.truststore.location": d / "ca.pem", "ssl.client.auth": "required",
        "connection.failed.authentication.delay.ms": str(DELAY_MS),
        "hourglass.authentication.timeout.ms": "700",
        "max.connections.per.ip": "50", "max.connections.per.ip.overrides": "127.0.0.2:1"}).start()
    yield b, ca, d
    b.stop()


def frame(api_key: int, version: int, body, correlation_id: int = 1) -> bytes:
    spec = APIS[api_key]
    hdr = RequestHeader(request_api_key=api_key, request_api_version=version, correlation_id=correlation_id,
                        client_id="raw")
    payload = encode_request_header(hdr, 2 if spec.flexible(version) else 1) + spec.request.encode(body, version)
    return struct.pack(">i", len(payload)) + payload


def read_response(sock, api_key: int, version: int):
    head = sock.recv(4)
    if not head:
        return None
    (n,) = struct.unpack(">i", head)
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    spec = APIS[api_key]
    pos = 4 + (1 if spec.flexible(version) else 0)
    return spec.response.decode(data, version, pos)[0]


def closed(sock, timeout: float = 3.0) -> bool:
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, ssl.SSLError):
        return True


def plain(b, user="alice", password=SECRET, mechanism="PLAIN") -> WireClient:
    module = "plain.PlainLoginModule" if mechanism == "PLAIN" else "scram.ScramLoginModule"
    return WireClient(b.listeners["SASL_PLAINTEXT"], props={
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
        "sasl.jaas.config": f'org.apache.kafka.common.security.{module} required username="{user}" '
                            f'password="{password}";'})


def sasl_attempt(b, mechanism: str, token: bytes):
    """Handshake, one SaslAuthenticate with ``token``: (handshake, authenticate answer, seconds)."""
    host, port = b.listeners["SASL_PLAINTEXT"].split(":")
    s = socket.create_connection((host, int(port)))
    s.sendall(frame(17, 1, APIS[17].request.cls(mechanism=mechanism)))
    hs = read_response(s, 17, 1)
    if hs.error_code:
        t0 = time.monotonic()
        return hs, None, t0, s
    t0 = time.monotonic()
    s.sendall(frame(36, 2, APIS[36].request.cls(auth_bytes=token), 2))
    return hs, read_response(s, 36, 2), t0, s


def test_wrong_password_unknown_user_and_wrong_mechanism(env):
    b, _, _ = env
    hs, r, t0, s = sasl_attempt(b, "PLAIN", "\0alice\0wrong".encode())
    assert time.monotonic() - t0 >= DELAY_MS / 1000 * 0.9  # answered after the failure delay
    assert (r.error_code, r.error_message) == (E.SASL_AUTHENTICATION_FAILED,
                                               "Authentication failed: Invalid username or password")
    assert closed(s)
    hs, r, t0, s = sasl_attempt(b, "PLAIN", f"\0mallory\0{SECRET}".encode())
    assert r.error_code == E.SASL_AUTHENTICATION_FAILED and closed(s)
    with pytest.raises(WireError, match="due to invalid credentials with SASL mechanism SCRAM-SHA-512"):
        plain(b, "nobody", "x", "SCRAM-SHA-512")
    with pytest.raises(WireError, match="due to invalid credentials with SASL mechanism SCRAM-SHA-512"):
        plain(b, "alice", "wrong", "SCRAM-SHA-512")
    hs, r, t0, s = sasl_attempt(b, "GSSAPI", b"")
    assert hs.error_code == E.UNSUPPORTED_SASL_MECHANISM and hs.mechanisms == ["PLAIN", "SCRAM-SHA-512"]
    assert closed(s)
    with plain(b) as ok:  # the broker serves the others all along
        assert ok.request(3, 12, APIS[3].request.cls(topics=[])).brokers[0].port == int(
            b.listeners["SASL_PLAINTEXT"].split(":")[1])


def test_a_request_before_authentication_closes_without_answer(env):
    b, _, _ = env
    host, port = b.listeners["SASL_PLAINTEXT"].split(":")
    for first in (True, False):
        s = socket.create_connection((host, int(port)))
        if not first:
            s.sendall(frame(18, 0, APIS[18].request.cls()))
            assert read_response(s, 18, 0).error_code == 0
        s.sendall(frame(3, 12, APIS[3].request.cls(topics=None), 2))
        assert closed(s)
    # after the handshake, only SaslAuthenticate may come
    s = socket.create_connection((host, int(port)))
    s.sendall(frame(17, 1, APIS[17].request.cls(mechanism="PLAIN")))
    assert read_response(s, 17, 1).error_code == 0
    s.sendall(frame(0, 9, APIS[0].request.cls(acks=1, timeout_ms=1000, topic_data=[]), 2))
    assert closed(s)


def test_stalled_sasl_exchange_and_tls_handshake_are_cut(env):
    b, _, _ = env
    for name in ("SASL_PLAINTEXT", "MTLS"):
        host, port = b.listeners[name].split(":")
        s = socket.create_connection((host, int(port)))
        t0 = time.monotonic()
        assert closed(s, timeout=5)
        assert 0.5 <= time.monotonic() - t0 < 4, name


def _client_ctx(ca, cert_ca=None, days=(-1, 30)):
    ctx = ssl.create_default_context()
    ca.configure_trust(ctx)
    if cert_ca is not None:
        key = ec.generate_private_key(ec.SECP256R1())
        ca_key = serialization.load_pem_private_key(cert_ca.private_key_pem.bytes(), None)
        ca_cert = x509.load_pem_x509_certificate(cert_ca.cert_pem.bytes())
        now = dt.datetime.now(dt.timezone.utc)
        cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "alice")]))
                .issuer_name(ca_cert.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now + dt.timedelta(days=days[0])).not_valid_after(now + dt.timedelta(days=days[1]))
                .sign(ca_key, hashes.SHA256()))
        import tempfile
        with tempfile.NamedTemporaryFile("wb", suffix=".pem", delete=False) as f:
            f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()) + cert.public_bytes(serialization.Encoding.PEM))
        ctx.load_cert_chain(f.name)
    return ctx


def _tls_metadata(b, ctx):
    host, port = b.listeners["MTLS"].split(":")
    with socket.create_connection((host, int(port)), timeout=5) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as s:
            s.sendall(frame(3, 12, APIS[3].request.cls(topics=[])))
            return read_response(s, 3, 12)


def test_client_certificates_untrusted_expired_missing(env):
    b, ca, _ = env
    assert _tls_metadata(b, _client_ctx(ca, ca)) is not None  # a good certificate
    for ctx in (_client_ctx(ca, trustme.CA()), _client_ctx(ca, ca, days=(-30, -1)), _client_ctx(ca)):
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
            r = _tls_metadata(b, ctx)
            assert r is None  # TLS 1.3: the refusal may surface on the first read instead
            raise ConnectionError("closed")


def test_max_connections_per_ip_override(env):
    b, _, _ = env
    port = int(b.listeners["PLAINTEXT"].split(":")[1])
    s1 = socket.socket()
    s1.bind(("127.0.0.2", 0))
    s1.connect(("127.0.0.1", port))
    s1.sendall(frame(18, 0, APIS[18].request.cls()))
    assert read_response(s1, 18, 0).error_code == 0
    s2 = socket.socket()
    s2.bind(("127.0.0.2", 0))
    s2.connect(("127.0.0.1", port))
    assert closed(s2)          # 127.0.0.2 may have one connection
    s1.close()


def test_no_secret_in_the_log(env):
    b, _, _ = env
    for mech in ("PLAIN", "SCRAM-SHA-512"):
        with pytest.raises(WireError):
            plain(b, "alice", "wrong-" + SECRET, mech)
    time.sleep(0.2)
    # the broker's own lines (the test helper's "=== start" line repeats the command line it ran)
    text = "\n".join(line for line in b.log_path.read_text().splitlines() if not line.startswith("=== start"))
    assert "closing connection" in text and SECRET not in text and "wrong-" not in text


def test_reauthentication_keeps_the_connection_and_expiry_closes_it(tmp_path):
    from confluent_kafka import Producer
    from hourglass.embedded import EmbeddedBroker
    with EmbeddedBroker({"connections.max.reauth.ms": 1500},
                        security={"protocol": "SASL_PLAINTEXT", "mechanism": "SCRAM-SHA-512"}) as b:
        p = Producer(b.client_config)
        delivered = []
        for i in range(12):  # ~4 s: two or more session lifetimes
            p.produce("reauth", f"{i}".encode(), on_delivery=lambda err, msg: delivered.append(err))
            p.flush(10)
            time.sleep(0.3)
        assert delivered == [None] * 12
        conns = [c for c in b.broker.connections if c.auth is not None and c.principal == "User:alice"]
        assert conns and all(c.auth.session_expiry_ms is not None for c in conns)
        # the producer re-authenticated on its connections: their sessions reach past the first lifetime
        assert max(c.auth.session_expiry_ms for c in conns) > time.time() * 1000 - 100
        p.flush()
        # a client that never re-authenticates is closed on its first request after expiry
        with WireClient(b.bootstrap_servers, props=b.java_properties) as c:
            c.request(3, 12, APIS[3].request.cls(topics=[]))
            time.sleep(1.7)
            with pytest.raises(WireError):
                c.request(3, 12, APIS[3].request.cls(topics=[]))
