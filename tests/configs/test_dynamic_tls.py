"""A listener keystore swapped at run time (listener.name.ssl.ssl.keystore.location, per
broker, as Kafka requires): connections made afterwards get the new certificate, a keystore
that does not load is refused and the old one keeps serving, and the swap survives a restart."""
from __future__ import annotations

import socket
import ssl

import trustme

from tests.configs.test_dynamic_broker_configs import alter


def ssl_address(b) -> tuple[str, int]:
    for line in b.ready_path.read_text().splitlines():
        if line.startswith("SSL://"):
            host, port = line[len("SSL://"):].rsplit(":", 1)
            return host, int(port)
    raise AssertionError("no SSL listener in the ready file")


def handshake_ok(addr, ca: trustme.CA) -> bool:
    ctx = ssl.create_default_context()
    ca.configure_trust(ctx)
    try:
        with socket.create_connection(addr, timeout=5) as s, ctx.wrap_socket(s, server_hostname="127.0.0.1"):
            return True
    except ssl.SSLCertVerificationError:
        return False


def test_keystore_swap_serves_new_connections_with_the_new_certificate(broker_factory, tmp_path):
    ca1, ca2 = trustme.CA(), trustme.CA()
    first, second = tmp_path / "first.pem", tmp_path / "second.pem"
    ca1.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(str(first))
    ca2.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(str(second))
    b = broker_factory({"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", "ssl.keystore.type": "PEM",
                        "ssl.keystore.location": str(first)})
    addr = ssl_address(b)
    assert handshake_ok(addr, ca1) and not handshake_ok(addr, ca2)
    r = alter(b, "1", {"listener.name.ssl.ssl.keystore.location": tmp_path / "missing.pem"})
    assert r["error"] == "InvalidRequestException" and "missing.pem" in r["message"]
    assert handshake_ok(addr, ca1)  # refused: the old keystore keeps serving
    assert alter(b, "1", {"listener.name.ssl.ssl.keystore.location": second}) == {"ok": True}
    assert handshake_ok(addr, ca2) and not handshake_ok(addr, ca1)
    b.restart()
    addr = ssl_address(b)
    assert handshake_ok(addr, ca2) and not handshake_ok(addr, ca1)
