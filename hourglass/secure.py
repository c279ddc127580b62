"""A secured broker in one line, for tests: throwaway certificates, a user, and client configs.

``SecureSetup(protocol, directory)`` makes (with ``trustme``) a CA, a certificate for the broker
(``localhost`` and ``127.0.0.1``) and one for the client (CN = the user), writes them as PEM
files into ``directory``, and knows:

- ``broker_overrides(host, port)``: the broker keys for one listener of that protocol;
- ``create_user(data_dir)``: the SCRAM credentials of the user in the broker's data dir
  (before it starts; PLAIN users live in the JAAS config instead);
- ``client_config(bootstrap)`` for confluent-kafka (librdkafka) and the Java client,
  ``kafka_python_config(bootstrap)``, ``aiokafka_config(bootstrap)`` (an ``ssl_context`` inside).

Protocols: ``"SSL"`` (TLS with a client certificate: the principal is ``User:<user>`` through
``ssl.principal.mapping.rules``), ``"SASL_SSL"`` and ``"SASL_PLAINTEXT"`` (SCRAM-SHA-512 unless
another ``mechanism`` is given: SCRAM-SHA-256, PLAIN, or OAUTHBEARER with Kafka's unsecured
tokens). ``acls=True`` turns the StandardAuthorizer on with the user as a super user.
"""
from __future__ import annotations

import secrets
import ssl
from pathlib import Path

PROTOCOLS = ("SSL", "SASL_SSL", "SASL_PLAINTEXT")
MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN", "OAUTHBEARER")
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


class SecureSetup:
    def __init__(self, protocol: str, directory: str | Path, *, mechanism: str = "SCRAM-SHA-512",
                 user: str = "alice", password: str | None = None, acls: bool = False):
        protocol = protocol.upper()
        if protocol not in PROTOCOLS:
            raise ValueError(f"security protocol must be one of {', '.join(PROTOCOLS)}, not {protocol!r}")
        if mechanism not in MECHANISMS:
            raise ValueError(f"mechanism must be one of {', '.join(MECHANISMS)}, not {mechanism!r}")
        import trustme
        self.protocol, self.mechanism, self.user, self.acls = protocol, mechanism, user, acls
        self.password = password or secrets.token_urlsafe(16)
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.ca = trustme.CA()
        self.ca_file = self.dir / "ca.pem"
        self.server_file = self.dir / "broker.pem"
        self.cert_file, self.key_file = self.dir / "client.pem", self.dir / "client.key"
        self.ca.cert_pem.write_to_path(str(self.ca_file))
        self.ca.issue_cert("localhost", "127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(self.server_file))
        client = self.ca.issue_cert(f"{user}@hourglass.test", common_name=user)
        client.private_key_pem.write_to_path(str(self.key_file))
        client.cert_chain_pems[0].write_to_path(str(self.cert_file))

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    # ---- the broker side ---------------------------------------------------------------------------
    def broker_overrides(self, host: str, port: int) -> dict[str, str]:
        name = self.protocol.lower()
        o = {"listeners": f"{self.protocol}://{host}:{port}"}
        if self.tls:
            o.update({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(self.server_file),
                      "ssl.truststore.type": "PEM", "ssl.truststore.location": str(self.ca_file)})
        if self.protocol == "SSL":
            o["ssl.client.auth"] = "required"
            o["ssl.principal.mapping.rules"] = "RULE:^CN=([^,]*).*$/$1/,DEFAULT"
        if self.sasl:
            o["sasl.enabled.mechanisms"] = self.mechanism
            mech = self.mechanism.lower()
            if self.mechanism == "PLAIN":
                o[f"listener.name.{name}.plain.sasl.jaas.config"] = (
                    "org.apache.kafka.common.security.plain.PlainLoginModule required "
                    f'user_{self.user}="{self.password}";')
            elif self.mechanism.startswith("SCRAM"):
                o[f"listener.name.{name}.{mech}.sasl.jaas.config"] = \
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        if self.acls:
            o.update({"authorizer.class.name": AUTHORIZER, "super.users": f"User:{self.user}"})
        return o

    def create_user(self, data_dir: str | Path) -> None:
        if not (self.sasl and self.mechanism.startswith("SCRAM")):
            return
        from broker.security.scram import ScramCredentialStore, ScramMechanism, credential_from_password
        from broker.security.state import security_dir
        m = ScramMechanism.from_name(self.mechanism)
        ScramCredentialStore(security_dir([Path(data_dir)])).apply(
            {self.user: (m, credential_from_password(m, self.password))}, {})

    # ---- the client side ---------------------------------------------------------------------------
    def client_config(self, bootstrap: str) -> dict[str, str]:
        """librdkafka's keys (confluent-kafka, kcat ``-X``)."""
        c = {"bootstrap.servers": bootstrap, "security.protocol": self.protocol}
        if self.tls:
            c["ssl.ca.location"] = str(self.ca_file)
        if self.protocol == "SSL":
            c.update({"ssl.certificate.location": str(self.cert_file), "ssl.key.location": str(self.key_file)})
        if self.sasl:
            c["sasl.mechanism"] = self.mechanism
            if self.mechanism == "OAUTHBEARER":
                c.update({"enable.sasl.oauthbearer.unsecure.jwt": "true", "sasl.oauthbearer.config": f"principal={self.user}"})
            else:
                c.update({"sasl.username": self.user, "sasl.password": self.password})
        return c

    def java_properties(self, bootstrap: str) -> dict[str, str]:
        """The Java client's keys (also ``--command-config`` of the hourglass tools)."""
        p = {"bootstrap.servers": bootstrap, "security.protocol": self.protocol}
        if self.tls:
            p.update({"ssl.truststore.type": "PEM", "ssl.truststore.location": str(self.ca_file)})
        if self.protocol == "SSL":
            p.update({"ssl.keystore.type": "PEM",
                      "ssl.keystore.certificate.chain": self.cert_file.read_text(),
                      "ssl.keystore.key": self.key_file.read_text()})
        if self.sasl:
            p["sasl.mechanism"] = self.mechanism
            if self.mechanism == "OAUTHBEARER":
                p["sasl.jaas.config"] = ("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                                         f'unsecuredLoginStringClaim_sub="{self.user}";')
            else:
                module = "plain.PlainLoginModule" if self.mechanism == "PLAIN" else "scram.ScramLoginModule"
                p["sasl.jaas.config"] = (f"org.apache.kafka.common.security.{module} required "
                                         f'username="{self.user}" password="{self.password}";')
        return p

    def kafka_python_config(self, bootstrap: str) -> dict:
        c: dict = {"bootstrap_servers": bootstrap, "security_protocol": self.protocol}
        if self.tls:
            c["ssl_cafile"] = str(self.ca_file)
        if self.protocol == "SSL":
            c.update({"ssl_certfile": str(self.cert_file), "ssl_keyfile": str(self.key_file)})
        if self.sasl:
            c["sasl_mechanism"] = self.mechanism
            if self.mechanism == "OAUTHBEARER":
                c["sasl_oauth_token_provider"] = _kafka_python_tokens(self.user)
            else:
                c.update({"sasl_plain_username": self.user, "sasl_plain_password": self.password})
        return c

    def ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.ca_file))
        if self.protocol == "SSL":
            ctx.load_cert_chain(str(self.cert_file), str(self.key_file))
        return ctx

    def aiokafka_config(self, bootstrap: str) -> dict:
        c: dict = {"bootstrap_servers": bootstrap, "security_protocol": self.protocol}
        if self.tls:
            c["ssl_context"] = self.ssl_context()
        if self.sasl:
            c["sasl_mechanism"] = self.mechanism
            if self.mechanism == "OAUTHBEARER":
                c["sasl_oauth_token_provider"] = _aiokafka_tokens(self.user)
            else:
                c.update({"sasl_plain_username": self.user, "sasl_plain_password": self.password})
        return c


def _kafka_python_tokens(user: str):
    from kafka.net.sasl.oauth import AbstractTokenProvider
    from broker.security.client import unsecured_token

    class Unsecured(AbstractTokenProvider):
        def token(self):
            return unsecured_token(user)
    return Unsecured()


def _aiokafka_tokens(user: str):
    from aiokafka.abc import AbstractTokenProvider
    from broker.security.client import unsecured_token

    class Unsecured(AbstractTokenProvider):
        async def token(self):
            return unsecured_token(user)
    return Unsecured()
