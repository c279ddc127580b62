"""A Java client's ``client.properties`` (``--command-config`` of Kafka's tools) for librdkafka.

The ``hourglass`` client commands run on confluent-kafka (librdkafka), whose security keys
differ from the Java client's. This turns the Java ones into librdkafka's, so the file a
team gives ``kafka-topics.sh --command-config`` works unchanged:

- ``security.protocol``, ``sasl.mechanism``, ``ssl.endpoint.identification.algorithm``
  (``""`` -> ``none``): same meaning;
- ``sasl.jaas.config``: PlainLoginModule / ScramLoginModule ``username`` and ``password`` ->
  ``sasl.username`` / ``sasl.password``; OAuthBearerLoginModule's unsecured-token options
  (``unsecuredLoginStringClaim_sub``, ``unsecuredLoginListClaim_scope``, ...) ->
  librdkafka's unsecured JWT (``sasl.oauthbearer.config``);
- truststore: PEM file -> ``ssl.ca.location``; inline ``ssl.truststore.certificates`` ->
  ``ssl.ca.pem``; PKCS12 -> its certificates written once to a private temporary PEM file;
- keystore: PKCS12 -> ``ssl.keystore.location`` + ``.password``; PEM file ->
  ``ssl.certificate.location`` + ``ssl.key.location`` (+ ``ssl.key.password``); inline ->
  ``ssl.certificate.pem`` + ``ssl.key.pem``;
- librdkafka's own keys pass through; other Java-only keys (``client.id``, timeouts, ...) that
  librdkafka also knows pass through; the rest are dropped.

JKS stores are refused with the ``keytool`` line that converts them.
"""
from __future__ import annotations

import atexit
import os
import tempfile
from pathlib import Path

_PASS_THROUGH = {"bootstrap.servers", "client.id", "group.id", "security.protocol", "sasl.mechanism", "sasl.mechanisms",
                 "request.timeout.ms", "socket.connection.setup.timeout.ms", "metadata.max.age.ms",
                 "sasl.username", "sasl.password", "sasl.oauthbearer.config", "ssl.ca.location", "ssl.ca.pem",
                 "ssl.certificate.location", "ssl.key.location", "ssl.key.password", "ssl.certificate.pem",
                 "ssl.key.pem", "ssl.cipher.suites", "enable.ssl.certificate.verification",
                 "enable.sasl.oauthbearer.unsecure.jwt", "sasl.oauthbearer.method",
                 "sasl.oauthbearer.token.endpoint.url", "sasl.oauthbearer.client.id",
                 "sasl.oauthbearer.client.secret", "sasl.oauthbearer.scope", "sasl.oauthbearer.extensions"}


class ClientPropertiesError(ValueError):
    pass


def read(path: str) -> dict[str, str]:
    from broker.config import parse_properties
    try:
        return parse_properties(Path(path).read_text())
    except OSError as exc:
        raise ClientPropertiesError(f"cannot read {path}: {exc.strerror}") from None


def _temp_pem(data: bytes) -> str:
    fd, path = tempfile.mkstemp(prefix="hourglass-client-", suffix=".pem")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    atexit.register(lambda: os.path.exists(path) and os.unlink(path))
    return path


def _store_kind(props: dict, prefix: str, location: str) -> str:
    from broker.security import tls
    try:
        with open(location, "rb") as f:
            head = f.read(4)
        return tls.store_type(props.get, f"{prefix}.type", head, location)
    except OSError as exc:
        raise ClientPropertiesError(f"{prefix}.location: cannot read {location}: {exc.strerror}") from None
    except tls.TlsConfigError as exc:
        raise ClientPropertiesError(str(exc)) from None


def to_librdkafka(props: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {k: v for k, v in props.items() if k in _PASS_THROUGH}
    if "sasl.mechanism" in out:
        out["sasl.mechanisms"] = out.pop("sasl.mechanism")
    eia = props.get("ssl.endpoint.identification.algorithm")
    if eia is not None:
        out["ssl.endpoint.identification.algorithm"] = eia.strip() or "none"
    jaas_text = props.get("sasl.jaas.config")
    if jaas_text:
        from broker.security.jaas import JaasError, single_module
        try:
            module = single_module(jaas_text)
        except JaasError as exc:
            raise ClientPropertiesError(f"sasl.jaas.config: {exc}") from None
        opts = module.options
        if module.class_name.endswith("OAuthBearerLoginModule"):
            parts = []
            for k, v in opts.items():
                if k == "unsecuredLoginStringClaim_sub":
                    parts.append(f"principal={v}")
                elif k == "unsecuredLoginListClaim_scope":
                    # Kafka: the value's first character is the list's delimiter
                    parts.append("scope=" + ",".join(s for s in v[1:].split(v[0]) if s) if v else "scope=")
                elif k == "unsecuredLoginLifetimeSeconds":
                    parts.append(f"lifeSeconds={v}")
                elif k.startswith("unsecuredLoginExtension_"):
                    parts.append(f"extension_{k[len('unsecuredLoginExtension_'):]}={v}")
            out["sasl.oauthbearer.config"] = " ".join(parts)
            out["enable.sasl.oauthbearer.unsecure.jwt"] = "true"
        else:
            if "username" in opts:
                out["sasl.username"] = opts["username"]
            if "password" in opts:
                out["sasl.password"] = opts["password"]
    # truststore
    if props.get("ssl.truststore.certificates"):
        out["ssl.ca.pem"] = props["ssl.truststore.certificates"]
    elif props.get("ssl.truststore.location"):
        loc = props["ssl.truststore.location"]
        if _store_kind(props, "ssl.truststore", loc) == "PEM":
            out["ssl.ca.location"] = loc
        else:
            from broker.security import tls
            try:
                pem = tls.truststore_pem(props.get)
            except tls.TlsConfigError as exc:
                raise ClientPropertiesError(str(exc)) from None
            out["ssl.ca.location"] = _temp_pem(pem.encode())
    # keystore
    if props.get("ssl.keystore.key") or props.get("ssl.keystore.certificate.chain"):
        out["ssl.key.pem"] = props.get("ssl.keystore.key", "")
        out["ssl.certificate.pem"] = props.get("ssl.keystore.certificate.chain", "")
        if props.get("ssl.key.password"):
            out["ssl.key.password"] = props["ssl.key.password"]
    elif props.get("ssl.keystore.location"):
        loc = props["ssl.keystore.location"]
        if _store_kind(props, "ssl.keystore", loc) == "PEM":
            out["ssl.certificate.location"] = loc
            out["ssl.key.location"] = loc
            if props.get("ssl.key.password"):
                out["ssl.key.password"] = props["ssl.key.password"]
        else:
            out["ssl.keystore.location"] = loc
            if props.get("ssl.keystore.password"):
                out["ssl.keystore.password"] = props["ssl.keystore.password"]
    return out


# ---- the --command-config option of every client command -------------------------------------------
def add_option(p, suppress: bool = False) -> None:
    import argparse
    p.add_argument("--command-config", default=argparse.SUPPRESS if suppress else None, metavar="FILE",
                   help="client properties (security.protocol, sasl.*, ssl.*), as Kafka's tools take them")


def of(args) -> dict[str, str]:
    """The Java client properties of ``--command-config`` (empty when not given)."""
    path = getattr(args, "command_config", None)
    return read(path) if path else {}


def librdkafka(args, consumer: bool = False) -> dict[str, str]:
    conf = to_librdkafka(of(args))
    if not consumer:
        conf.pop("group.id", None)  # librdkafka warns about a consumer key on producers and admins
    return conf
