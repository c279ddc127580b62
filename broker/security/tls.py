"""A server ``ssl.SSLContext`` from Kafka's ``ssl.*`` keys (per listener, prefix already applied).

Keystore (the broker's key and certificate chain), by ``ssl.keystore.type``:
- ``PEM``: ``ssl.keystore.location`` (a file with the private key, possibly encrypted with
  ``ssl.key.password``, and the certificate chain) or inline ``ssl.keystore.key`` +
  ``ssl.keystore.certificate.chain``;
- ``PKCS12``: ``ssl.keystore.location`` + ``ssl.keystore.password``, read with ``cryptography``;
- ``JKS`` (Kafka's default type): a PKCS12 file is read as Kafka's JVM reads it (Java 9+ opens
  PKCS12 under type JKS); a real JKS file is refused with the ``keytool`` line that converts it.
Truststore (who may present a client certificate): ``ssl.truststore.type`` PEM
(``ssl.truststore.location`` or inline ``ssl.truststore.certificates``), PKCS12 or JKS as above;
none: the system CAs. ``ssl.client.auth``: ``none`` | ``requested`` | ``required``.
``ssl.enabled.protocols`` (default ``TLSv1.2,TLSv1.3``) bounds the TLS versions;
``ssl.cipher.suites`` takes Java/IANA names (``TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256``) or
OpenSSL ones; TLS 1.3 suites are all enabled (OpenSSL's Python binding cannot narrow them).

Key material is never logged or put in an error message. Python's ``ssl`` loads keys from
files only: a key taken from PKCS12 or inline PEM passes through a private temporary file,
encrypted with a one-time password, removed as soon as it is loaded.
"""
from __future__ import annotations

import os
import secrets
import ssl
import tempfile
from typing import Callable

Lookup = Callable[[str], "str | None"]

JKS_MAGIC = b"\xfe\xed\xfe\xed"
_PROTOCOLS = {"TLSv1": ssl.TLSVersion.TLSv1, "TLSv1.1": ssl.TLSVersion.TLSv1_1,
              "TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
_KX = {"ECDHE_RSA": "ECDHE-RSA-", "ECDHE_ECDSA": "ECDHE-ECDSA-", "DHE_RSA": "DHE-RSA-", "DHE_DSS": "DHE-DSS-",
       "RSA": "", "ECDH_RSA": "ECDH-RSA-", "ECDH_ECDSA": "ECDH-ECDSA-"}


class TlsConfigError(ValueError):
    """A TLS setting that stops the broker from starting; the message names the key."""


def _jks_refusal(key: str, path: str) -> TlsConfigError:
    return TlsConfigError(
        f"{key}: {path} is a JKS keystore, which Hourglass cannot read; convert it to PKCS12 with "
        f"`keytool -importkeystore -srckeystore {path} -srcstoretype JKS -destkeystore "
        f"{os.path.splitext(path)[0]}.p12 -deststoretype PKCS12` and set the type to PKCS12")


def _read(key: str, path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise TlsConfigError(f"{key}: cannot read {path}: {exc.strerror}") from None


def store_type(get: Lookup, key: str, data: bytes | None, location: str | None) -> str:
    """PEM or PKCS12 for the store type key ``key`` (JKS: PKCS12 as the JVM reads it; a real
    JKS file is refused with the keytool line that converts it)."""
    kind = (get(key) or "JKS").strip().upper()
    if kind not in ("JKS", "PKCS12", "PEM"):
        raise TlsConfigError(f"{key}: unsupported type {kind!r} (PEM, PKCS12, or JKS holding PKCS12)")
    if kind == "JKS" and data is not None:
        if data[:4] == JKS_MAGIC:
            raise _jks_refusal(key.replace(".type", ".location"), location)
        kind = "PKCS12"  # what the JVM's keystore.type.compat does
    return kind


def _password(get: Lookup, key: str) -> bytes | None:
    v = get(key)
    return None if v is None or v == "" else v.encode()


def _load_pkcs12(key: str, data: bytes, password: bytes | None):
    from cryptography.hazmat.primitives.serialization import pkcs12
    try:
        return pkcs12.load_key_and_certificates(data, password)
    except ValueError:
        raise TlsConfigError(f"{key}: cannot open the PKCS12 store (wrong password or not PKCS12)") from None


def _pem_key(key_name: str, pem: bytes, password: bytes | None):
    from cryptography.hazmat.primitives import serialization
    try:
        return serialization.load_pem_private_key(pem, password)
    except TypeError:
        raise TlsConfigError(f"{key_name}: the private key is encrypted: set ssl.key.password") from None
    except ValueError:
        raise TlsConfigError(f"{key_name}: cannot read the private key (wrong ssl.key.password or not a "
                             f"PEM PKCS#8/PKCS#1 key)") from None


def _pem_certs(key_name: str, pem: bytes) -> list:
    from cryptography import x509
    try:
        certs = x509.load_pem_x509_certificates(pem)
    except ValueError:
        certs = []
    if not certs:
        raise TlsConfigError(f"{key_name}: no PEM certificate found")
    return certs


def keystore(get: Lookup):
    """(private key, [leaf certificate, chain...]) from the keystore keys."""
    location = get("ssl.keystore.location")
    inline_key, inline_chain = get("ssl.keystore.key"), get("ssl.keystore.certificate.chain")
    if inline_key or inline_chain:
        if location:
            raise TlsConfigError("ssl.keystore.location cannot be set together with ssl.keystore.key / "
                                 "ssl.keystore.certificate.chain")
        if (get("ssl.keystore.type") or "PEM").strip().upper() != "PEM":
            raise TlsConfigError("ssl.keystore.type must be PEM with ssl.keystore.key / "
                                 "ssl.keystore.certificate.chain")
        if not (inline_key and inline_chain):
            raise TlsConfigError("ssl.keystore.key and ssl.keystore.certificate.chain must be set together")
        return (_pem_key("ssl.keystore.key", inline_key.encode(), _password(get, "ssl.key.password")),
                _pem_certs("ssl.keystore.certificate.chain", inline_chain.encode()))
    if not location:
        raise TlsConfigError("ssl.keystore.location (or ssl.keystore.key and ssl.keystore.certificate.chain) "
                             "is required on an SSL or SASL_SSL listener")
    data = _read("ssl.keystore.location", location)
    kind = store_type(get, "ssl.keystore.type", data, location)
    if kind == "PEM":
        return (_pem_key("ssl.keystore.location", data, _password(get, "ssl.key.password")),
                _pem_certs("ssl.keystore.location", data))
    key, cert, extra = _load_pkcs12("ssl.keystore.location", data,
                                    _password(get, "ssl.keystore.password") or _password(get, "ssl.key.password"))
    if key is None or cert is None:
        raise TlsConfigError("ssl.keystore.location: the PKCS12 store holds no private key entry")
    return key, [cert, *(extra or [])]


def truststore_pem(get: Lookup) -> str | None:
    """The trusted CA certificates as PEM text, or None for the system CAs."""
    from cryptography.hazmat.primitives.serialization import Encoding
    inline = get("ssl.truststore.certificates")
    location = get("ssl.truststore.location")
    if inline:
        return "".join(c.public_bytes(Encoding.PEM).decode() for c in _pem_certs("ssl.truststore.certificates",
                                                                                  inline.encode()))
    if not location:
        return None
    data = _read("ssl.truststore.location", location)
    kind = store_type(get, "ssl.truststore.type", data, location)
    if kind == "PEM":
        certs = _pem_certs("ssl.truststore.location", data)
    else:
        from cryptography.hazmat.primitives.serialization import pkcs12
        try:
            store = pkcs12.load_pkcs12(data, _password(get, "ssl.truststore.password"))
        except ValueError:
            raise TlsConfigError("ssl.truststore.location: cannot open the PKCS12 store (wrong password or "
                                 "not PKCS12)") from None
        certs = [c.certificate for c in store.additional_certs] + ([store.cert.certificate] if store.cert else [])
        if not certs:
            raise TlsConfigError("ssl.truststore.location: the PKCS12 store holds no certificate")
    return "".join(c.public_bytes(Encoding.PEM).decode() for c in certs)


def openssl_cipher(name: str) -> str | None:
    """A Java/IANA TLS 1.2 suite name in OpenSSL's spelling; None for TLS 1.3 suites."""
    n = name.strip()
    if n in ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256",
             "TLS_AES_128_CCM_SHA256", "TLS_AES_128_CCM_8_SHA256"):
        return None
    if not (n.startswith("TLS_") or n.startswith("SSL_")) or "_WITH_" not in n:
        return n  # already OpenSSL's name
    kx, rest = n[4:].split("_WITH_", 1)
    prefix = _KX.get(kx)
    if prefix is None:
        raise TlsConfigError(f"ssl.cipher.suites: unsupported key exchange in {n}")
    parts = rest.split("_")
    if parts[:2] == ["CHACHA20", "POLY1305"]:
        return prefix + "CHACHA20-POLY1305"
    if len(parts) >= 4 and parts[0] in ("AES", "CAMELLIA", "ARIA"):
        cipher = parts[0] + parts[1]
        mode, mac = parts[2], "_".join(parts[3:])
        if mode in ("GCM", "CCM"):
            return f"{prefix}{cipher}-{mode}-{mac}"
        if mode == "CBC":
            return f"{prefix}{cipher}-{mac}"
    raise TlsConfigError(f"ssl.cipher.suites: cannot map {n} to an OpenSSL cipher")


def load_key_and_chain(ctx: ssl.SSLContext, key, chain: list) -> None:
    """Load a private key and certificate chain into ``ctx`` through a private temporary file
    holding the key encrypted with a one-time password (Python's ``ssl`` reads files only)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import Encoding
    one_time = secrets.token_bytes(32).hex().encode()
    pem = key.private_bytes(Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.BestAvailableEncryption(one_time))
    pem += b"".join(c.public_bytes(Encoding.PEM) for c in chain)
    fd, path = tempfile.mkstemp(prefix="hourglass-key-", suffix=".pem")  # created 0600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        ctx.load_cert_chain(path, password=one_time)
    except ssl.SSLError as exc:
        raise TlsConfigError(f"ssl.keystore: the private key does not match the certificate ({exc.reason})") from None
    finally:
        os.unlink(path)


def client_context(get: Lookup) -> ssl.SSLContext:
    """A client's TLS context from Java client properties: the truststore (else the system
    CAs), a keystore when one is given (mutual TLS), ``ssl.endpoint.identification.algorithm``
    (``https`` by default: the broker's name is checked; empty: not)."""
    trusted = truststore_pem(get)
    ctx = ssl.create_default_context(cadata=trusted) if trusted else ssl.create_default_context()
    if (get("ssl.endpoint.identification.algorithm") or "https").strip() == "":
        ctx.check_hostname = False
    if get("ssl.keystore.location") or get("ssl.keystore.key"):
        load_key_and_chain(ctx, *keystore(get))
    return ctx


def server_context(get: Lookup, *, client_auth: str | None = None) -> ssl.SSLContext:
    """``get(key)`` gives the listener's effective value of a ``ssl.*`` key (or None)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    protocols = [p.strip() for p in (get("ssl.enabled.protocols") or "TLSv1.2,TLSv1.3").split(",") if p.strip()]
    unknown = [p for p in protocols if p not in _PROTOCOLS]
    if unknown or not protocols:
        raise TlsConfigError(f"ssl.enabled.protocols: unsupported protocol(s) {unknown or protocols} "
                             f"(supported: {', '.join(_PROTOCOLS)})")
    versions = sorted(_PROTOCOLS[p] for p in protocols)
    ctx.minimum_version, ctx.maximum_version = versions[0], versions[-1]
    suites = [s for s in (get("ssl.cipher.suites") or "").split(",") if s.strip()]
    if suites:
        names = [c for c in (openssl_cipher(s) for s in suites) if c]
        if names:
            try:
                ctx.set_ciphers(":".join(names))
            except ssl.SSLError:
                raise TlsConfigError(f"ssl.cipher.suites: none of {suites} is available in OpenSSL "
                                     f"{ssl.OPENSSL_VERSION}") from None
        elif ssl.TLSVersion.TLSv1_3 not in versions:
            raise TlsConfigError("ssl.cipher.suites lists only TLS 1.3 suites but TLSv1.3 is not enabled")

    load_key_and_chain(ctx, *keystore(get))

    mode = (client_auth if client_auth is not None else get("ssl.client.auth") or "none").strip().lower()
    if mode not in _CLIENT_AUTH:
        raise TlsConfigError(f"ssl.client.auth: invalid value {mode!r} (none, requested or required)")
    ctx.verify_mode = _CLIENT_AUTH[mode]
    if mode != "none":
        trusted = truststore_pem(get)
        if trusted is None:
            ctx.load_default_certs(ssl.Purpose.CLIENT_AUTH)
        else:
            ctx.load_verify_locations(cadata=trusted)
    return ctx
