"""TLS contexts from Kafka's ssl.* keys, and the principal of a client certificate.

Handshakes run in memory (two ``ssl.MemoryBIO`` pairs), no sockets. The certificate DN and
``ssl.principal.mapping.rules`` are checked against Kafka itself: ``tests/java/PrincipalOracle``
prints what the JVM (``X500Principal.getName()``) and Kafka's ``SslPrincipalMapper`` make of
the same certificates and rules.
"""
from __future__ import annotations

import datetime as dt
import json
import ssl
import subprocess

import pytest
import trustme
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

from broker.security.principal import ANONYMOUS, NoMatchingRule, SslPrincipalMapper, certificate_dn, rfc2253
from broker.security.tls import TlsConfigError, openssl_cipher, server_context
from tests.helpers.java import JAVA_OPTS, classpath, ensure_compiled

PW = "store-secret"


@pytest.fixture(scope="module")
def ca():
    return trustme.CA()


@pytest.fixture(scope="module")
def server_cert(ca):
    return ca.issue_cert("localhost", "127.0.0.1")


def _sign(ca, subject: x509.Name, *, days=(-1, 30)):
    key = ec.generate_private_key(ec.SECP256R1())
    ca_key = serialization.load_pem_private_key(ca.private_key_pem.bytes(), None)
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem.bytes())
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now + dt.timedelta(days=days[0])).not_valid_after(now + dt.timedelta(days=days[1]))
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return key, cert


def _name(*rdns):
    return x509.Name([x509.RelativeDistinguishedName(r if isinstance(r, list) else [r]) for r in rdns])


A = x509.NameAttribute
SUBJECTS = {
    "plain": _name(A(NameOID.COUNTRY_NAME, "FR"), A(NameOID.STATE_OR_PROVINCE_NAME, "IdF"),
                   A(NameOID.LOCALITY_NAME, "Paris"), A(NameOID.ORGANIZATION_NAME, "acme"),
                   A(NameOID.ORGANIZATIONAL_UNIT_NAME, "eng"), A(NameOID.COMMON_NAME, "alice")),
    "escapes": _name(A(NameOID.ORGANIZATION_NAME, 'a,b+c=d;e<f>g"h\\i'), A(NameOID.COMMON_NAME, "#lead trail ")),
    "email_uid_dc": _name(A(NameOID.DOMAIN_COMPONENT, "com"), A(NameOID.DOMAIN_COMPONENT, "acme"),
                          A(NameOID.USER_ID, "u42"), A(NameOID.EMAIL_ADDRESS, "bob@acme.com"),
                          A(NameOID.COMMON_NAME, "bob")),
    "multi_valued": _name(A(NameOID.ORGANIZATION_NAME, "acme"),
                          [A(NameOID.COMMON_NAME, "svc"), A(NameOID.USER_ID, "7")]),
    "unicode_printable": _name(A(NameOID.COUNTRY_NAME, "DE"),
                               A(NameOID.ORGANIZATION_NAME, "Acme Ltd", _type=x509.name._ASN1Type.PrintableString),
                               A(NameOID.COMMON_NAME, "Zoë Ünal")),
    "serial_title": _name(A(NameOID.SERIAL_NUMBER, "123"), A(NameOID.TITLE, "ops"), A(NameOID.COMMON_NAME, "x")),
}
RULES = [
    "DEFAULT",
    "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=.*$/$1@$3/L,RULE:^CN=([^,]*),.*$/$1/U,DEFAULT",
    "RULE:^CN=(?<who>[^,+]*)[,+].*$/${who}-$2/",
    "RULE:^CN=([^,]*),.*$/$1\\/x\\$1/, DEFAULT",
    "RULE:^O=.*$/acme/",
]


@pytest.fixture(scope="module")
def cert_files(ca, tmp_path_factory):
    d = tmp_path_factory.mktemp("certs")
    out = {}
    for name, subject in SUBJECTS.items():
        _, cert = _sign(ca, subject)
        p = d / f"{name}.pem"
        p.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        out[name] = (p, cert)
    return out


def oracle(rules: str, paths) -> list[dict]:
    ensure_compiled()
    proc = subprocess.run(["java", *JAVA_OPTS, "-cp", classpath(), "PrincipalOracle", rules, *map(str, paths)],
                          capture_output=True, text=True, timeout=60, check=True)
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def test_dn_and_mapping_rules_match_kafka(cert_files):
    names = list(cert_files)
    for rules in RULES:
        want = oracle(rules, [cert_files[n][0] for n in names])
        mapper = SslPrincipalMapper(rules)
        for n, w in zip(names, want):
            dn = rfc2253(cert_files[n][1].subject)
            assert dn == w["dn"], n
            assert certificate_dn(cert_files[n][1].public_bytes(serialization.Encoding.DER)) == dn
            if "error" in w:
                with pytest.raises(NoMatchingRule):
                    mapper.name(dn)
            else:
                assert mapper.name(dn) == w["name"], (rules, n)


@pytest.mark.parametrize("rules", ["RULE:^CN=(.*)$/$1", "RULE:^CN=(.*)$/$1/X/", "DEFAULT junk"])
def test_invalid_rules_refused_like_kafka(rules, cert_files):
    assert "rulesError" in oracle(rules, [])[0]
    with pytest.raises(ValueError, match="Invalid rule"):
        SslPrincipalMapper(rules)


# ---- contexts and handshakes ---------------------------------------------------------------------
def handshake(server_ctx: ssl.SSLContext, client_ctx: ssl.SSLContext):
    """Run a TLS handshake in memory; returns the server's SSLObject or raises ssl.SSLError."""
    s_in, s_out, c_in, c_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    server = server_ctx.wrap_bio(s_in, s_out, server_side=True)
    client = client_ctx.wrap_bio(c_in, c_out, server_hostname="localhost")
    done = {"s": False, "c": False}
    for _ in range(20):
        for name, obj in (("c", client), ("s", server)):
            if not done[name]:
                try:
                    obj.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if done["s"] and done["c"]:
            # TLS 1.3 client-auth failures surface on the first read after the handshake
            client.write(b"ping")
            s_in.write(c_out.read())
            assert server.read(4) == b"ping"
            return server
    raise AssertionError("handshake did not finish")


def client_ctx(ca, cert=None, key=None, tmp_path=None, max_version=None):
    ctx = ssl.create_default_context(cafile=None)
    ca.configure_trust(ctx)
    if max_version:
        ctx.maximum_version = max_version
    if cert is not None:
        p = tmp_path / "client.pem"
        p.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                        serialization.NoEncryption()) + cert.public_bytes(serialization.Encoding.PEM))
        ctx.load_cert_chain(p)
    return ctx


def keystores(server_cert, tmp_path):
    """The same key and chain as a PEM file (key encrypted), inline PEM, PKCS12, PKCS12-as-JKS."""
    key = serialization.load_pem_private_key(server_cert.private_key_pem.bytes(), None)
    chain = [x509.load_pem_x509_certificate(b.bytes()) for b in server_cert.cert_chain_pems]
    pem = tmp_path / "server.pem"
    pem.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.BestAvailableEncryption(b"key-secret"))
                    + b"".join(c.public_bytes(serialization.Encoding.PEM) for c in chain))
    p12 = tmp_path / "server.p12"
    p12.write_bytes(pkcs12.serialize_key_and_certificates(b"broker", key, chain[0], chain[1:],
                                                          serialization.BestAvailableEncryption(PW.encode())))
    inline_key = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                   serialization.NoEncryption()).decode()
    inline_chain = "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in chain)
    return {
        "pem-file": {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(pem), "ssl.key.password": "key-secret"},
        "pem-inline": {"ssl.keystore.type": "PEM", "ssl.keystore.key": inline_key,
                       "ssl.keystore.certificate.chain": inline_chain},
        "pkcs12": {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(p12), "ssl.keystore.password": PW},
        "jks-type-holding-pkcs12": {"ssl.keystore.location": str(p12), "ssl.keystore.password": PW},
    }


@pytest.mark.parametrize("kind", ["pem-file", "pem-inline", "pkcs12", "jks-type-holding-pkcs12"])
def test_keystore_kinds_serve_tls(kind, ca, server_cert, tmp_path):
    cfg = keystores(server_cert, tmp_path)[kind]
    server = handshake(server_context(cfg.get), client_ctx(ca))
    assert server.getpeercert() is None  # no client auth asked


def test_keystore_errors_name_the_key_never_the_secret(server_cert, tmp_path):
    ks = keystores(server_cert, tmp_path)
    jks = tmp_path / "broker.keystore.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed" + b"\0" * 64)
    cases = [
        ({"ssl.keystore.location": str(jks), "ssl.keystore.password": PW},
         "is a JKS keystore.*keytool -importkeystore -srckeystore .*broker.keystore.jks"),
        ({**ks["pkcs12"], "ssl.keystore.password": "wrong-pw"}, "ssl.keystore.location: cannot open the PKCS12"),
        ({**ks["pem-file"], "ssl.key.password": "wrong-pw"}, "ssl.keystore.location: cannot read the private key"),
        ({**ks["pem-file"], "ssl.key.password": None}, "the private key is encrypted: set ssl.key.password"),
        ({}, "ssl.keystore.location .* is required"),
        ({"ssl.keystore.location": str(tmp_path / "nope.p12")}, "ssl.keystore.location: cannot read"),
        ({**ks["pkcs12"], "ssl.client.auth": "always"}, "ssl.client.auth: invalid value 'always'"),
        ({**ks["pkcs12"], "ssl.enabled.protocols": "SSLv3"}, "ssl.enabled.protocols: unsupported"),
        ({**ks["pkcs12"], "ssl.cipher.suites": "TLS_FOO_WITH_BAR"}, "ssl.cipher.suites"),
    ]
    for cfg, message in cases:
        with pytest.raises(TlsConfigError, match=message) as e:
            server_context(cfg.get)
        for secret in (PW, "key-secret", "wrong-pw"):
            assert secret not in str(e.value)


def test_client_auth_required_requested_and_trust(ca, server_cert, tmp_path):
    cfg = keystores(server_cert, tmp_path)["pkcs12"]
    trust = tmp_path / "ca.pem"
    trust.write_bytes(ca.cert_pem.bytes())
    required = server_context({**cfg, "ssl.client.auth": "required", "ssl.truststore.type": "PEM",
                               "ssl.truststore.location": str(trust)}.get)
    key, cert = _sign(ca, SUBJECTS["plain"])
    server = handshake(required, client_ctx(ca, cert, key, tmp_path))
    dn = certificate_dn(server.getpeercert(binary_form=True))
    assert dn == "CN=alice,OU=eng,O=acme,L=Paris,ST=IdF,C=FR"
    with pytest.raises(ssl.SSLError):
        handshake(required, client_ctx(ca))                                   # no certificate
    other = trustme.CA()
    okey, ocert = _sign(other, SUBJECTS["plain"])
    with pytest.raises(ssl.SSLError):
        handshake(required, client_ctx(ca, ocert, okey, tmp_path))            # untrusted issuer
    ekey, ecert = _sign(ca, SUBJECTS["plain"], days=(-30, -1))
    with pytest.raises(ssl.SSLError):
        handshake(required, client_ctx(ca, ecert, ekey, tmp_path))            # expired
    requested = server_context({**cfg, "ssl.client.auth": "requested",
                                "ssl.truststore.certificates": ca.cert_pem.bytes().decode()}.get)
    assert handshake(requested, client_ctx(ca)).getpeercert(binary_form=True) is None  # -> ANONYMOUS
    assert ANONYMOUS == "User:ANONYMOUS"
    assert handshake(requested, client_ctx(ca, cert, key, tmp_path)).getpeercert(binary_form=True)
    # a PKCS12 truststore (certificates only)
    p12 = tmp_path / "trust.p12"
    p12.write_bytes(pkcs12.serialize_java_truststore(
        [pkcs12.PKCS12Certificate(x509.load_pem_x509_certificate(ca.cert_pem.bytes()), b"ca")],
        serialization.BestAvailableEncryption(b"trust-pw")))
    by_p12 = server_context({**cfg, "ssl.client.auth": "required", "ssl.truststore.type": "PKCS12",
                             "ssl.truststore.location": str(p12), "ssl.truststore.password": "trust-pw"}.get)
    assert handshake(by_p12, client_ctx(ca, cert, key, tmp_path)).getpeercert(binary_form=True)


def test_protocols_and_cipher_suites(ca, server_cert, tmp_path):
    cfg = keystores(server_cert, tmp_path)["pkcs12"]
    only13 = server_context({**cfg, "ssl.enabled.protocols": "TLSv1.3"}.get)
    assert handshake(only13, client_ctx(ca)).version() == "TLSv1.3"
    with pytest.raises(ssl.SSLError):
        handshake(only13, client_ctx(ca, max_version=ssl.TLSVersion.TLSv1_2))
    suites = server_context({**cfg, "ssl.enabled.protocols": "TLSv1.2",
                             "ssl.cipher.suites": "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,"
                                                  "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}.get)
    s = handshake(suites, client_ctx(ca))  # trustme's keys are EC: the ECDSA suite is the one left
    assert s.version() == "TLSv1.2" and s.cipher()[0] == "ECDHE-ECDSA-AES128-GCM-SHA256"
    assert openssl_cipher("TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384") == "ECDHE-RSA-AES256-SHA384"
    assert openssl_cipher("TLS_RSA_WITH_AES_128_CBC_SHA") == "AES128-SHA"
    assert openssl_cipher("TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256") == "ECDHE-ECDSA-CHACHA20-POLY1305"
    assert openssl_cipher("TLS_AES_128_GCM_SHA256") is None
