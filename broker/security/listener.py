"""What one listener needs to secure its connections, built once at start from its settings.

A listener's value of a key is ``listener.name.<name>.<key>`` when set, else the broker-wide
``<key>`` (Kafka's ``valuesWithPrefixOverride``); SASL settings of one mechanism are
``listener.name.<name>.<mechanism>.<key>`` (``plain.sasl.jaas.config``,
``scram-sha-256.connections.max.reauth.ms``, ``oauthbearer.sasl.server.callback.handler.class``).
On a SASL_SSL listener only the listener's own ``ssl.client.auth`` applies (Kafka: mutual TLS
there is opt-in per listener).

- PLAINTEXT: every connection is ``User:ANONYMOUS``.
- SSL: TLS; the principal is the client certificate's mapped DN, or ANONYMOUS without one.
- SASL_PLAINTEXT / SASL_SSL: the principal is the SASL identity (TLS first for SASL_SSL).
"""
from __future__ import annotations

import ssl
from typing import Mapping

from broker.security.principal import ANONYMOUS, NoMatchingRule, SslPrincipalMapper, certificate_dn
from broker.security.sasl import SaslServerFactory, SecurityConfigError
from broker.security.scram import ScramCredentialStore
from broker.security.tls import TlsConfigError, server_context


class ListenerSecurity:
    def __init__(self, name: str, protocol: str, *, ssl_context: ssl.SSLContext | None = None,
                 sasl: SaslServerFactory | None = None, mapper: SslPrincipalMapper | None = None,
                 reauth_ms: dict[str, int] | None = None, max_connections: int | None = None):
        self.name = name
        self.max_connections = max_connections  # listener.name.<l>.max.connections
        self.protocol = protocol
        self.ssl_context = ssl_context
        self.sasl = sasl
        self.mapper = mapper
        self.reauth_ms = reauth_ms or {}

    @classmethod
    def build(cls, name: str, protocol: str, overrides: Mapping[str, str], broker_raw: Mapping[str, str],
              scram: ScramCredentialStore, tokens=None) -> "ListenerSecurity":
        def get(key: str) -> str | None:
            v = overrides.get(key)
            return v if v is not None else broker_raw.get(key)

        def where(exc: Exception) -> SecurityConfigError:
            return SecurityConfigError(f"listener {name} ({protocol}): {exc}")

        ctx = mapper = sasl = None
        reauth: dict[str, int] = {}
        if protocol in ("SSL", "SASL_SSL"):
            client_auth = overrides.get("ssl.client.auth", "none") if protocol == "SASL_SSL" else None
            try:
                ctx = server_context(get, client_auth=client_auth)
                mapper = SslPrincipalMapper(get("ssl.principal.mapping.rules") or "DEFAULT")
            except (TlsConfigError, ValueError) as exc:
                raise where(exc) from None
        if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
            try:
                sasl = SaslServerFactory(name, get, scram, tokens)
            except SecurityConfigError as exc:
                raise where(exc) from None
            for mech in sasl.mechanisms:
                text = get(f"{mech.lower()}.connections.max.reauth.ms") or get("connections.max.reauth.ms") or "0"
                try:
                    reauth[mech] = int(text)
                except ValueError:
                    raise where(ValueError(f"connections.max.reauth.ms: not a number: {text!r}")) from None
        limit = overrides.get("max.connections")
        try:
            max_connections = int(limit) if limit is not None else None
        except ValueError:
            raise where(ValueError(f"max.connections: not a number: {limit!r}")) from None
        return cls(name, protocol, ssl_context=ctx, sasl=sasl, mapper=mapper, reauth_ms=reauth,
                   max_connections=max_connections)

    def tls_principal(self, ssl_object) -> str:
        """The principal of an SSL-listener connection (raises NoMatchingRule when no mapping
        rule applies to the certificate's DN, which fails the connection as in Kafka)."""
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        if der is None:
            return ANONYMOUS
        return "User:" + self.mapper.name(certificate_dn(der))


def per_ip_limits(value: str | None, strict: bool = True) -> dict[str, int]:
    """``max.connections.per.ip.overrides``: ``host:count,...`` parsed as Kafka parses it
    (``broker.listeners.parse_csv_map``, Java's int), host names resolved (Kafka's
    ``InetAddress.getByName``). ``strict`` (at start): a bad entry or a host that does not
    resolve refuses to start; else (a dynamic change, already validated) such a host is left
    out with a warning, so a change that passed validation never fails to apply."""
    import ipaddress
    import logging
    import socket

    from broker.listeners import java_int, parse_csv_map
    out: dict[str, int] = {}
    try:
        entries = parse_csv_map("max.connections.per.ip.overrides", value or "")
        counts = {host: java_int(count) for host, count in entries.items()}
    except ValueError as exc:
        if strict:
            raise SecurityConfigError(f"max.connections.per.ip.overrides: {exc} (expected host:count,...)") from None
        # only a value stored before it was validated gets here
        logging.getLogger(__name__).warning("max.connections.per.ip.overrides=%s: %s; no overrides apply "
                                            "(set a valid value or delete it)", value, exc)
        return out
    for host, n in counts.items():
        host = host.strip("[]")
        try:
            addr = str(ipaddress.ip_address(host))
        except ValueError:
            try:
                addr = socket.gethostbyname(host)
            except OSError as exc:
                if strict:
                    raise SecurityConfigError(f"max.connections.per.ip.overrides: host {host!r} does not "
                                              f"resolve ({exc})") from None
                logging.getLogger(__name__).warning(
                    "max.connections.per.ip.overrides: host %r does not resolve (%s); no override for it", host, exc)
                continue
        out[addr] = n
    return out


def names_hosts(value: str | None) -> bool:
    """``max.connections.per.ip.overrides`` names a host (not only IP addresses): applying it
    takes DNS look-ups. A value that does not parse names none (``per_ip_limits`` says why)."""
    import ipaddress

    from broker.listeners import parse_csv_map
    try:
        hosts = parse_csv_map("max.connections.per.ip.overrides", value or "")
    except ValueError:
        return False
    for host in hosts:
        try:
            ipaddress.ip_address(host.strip("[]"))
        except ValueError:
            return True
    return False


__all__ = ["ListenerSecurity", "NoMatchingRule", "SecurityConfigError", "names_hosts", "per_ip_limits"]
