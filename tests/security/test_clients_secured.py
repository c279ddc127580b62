"""Stock clients over every secured listener of one broker: produce, look up an offset by time,
consume.

One broker, all listeners open at once::

    SSL              TLS, server authentication only
    MTLS (SSL)       TLS with a required client certificate (principal from its DN)
    SASL_PLAINTEXT   PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
    SASL_SSL         PLAIN, SCRAM-SHA-512, OAUTHBEARER (Kafka's unsecured tokens)
    JWT (SASL_SSL)   OAUTHBEARER with signed JWTs checked against a JWKS file

kafka-python, confluent-kafka, aiokafka, kcat and the Java client each run every configuration
they support (kcat has no way to hand over a signed token). Every client reaches the broker only
through the listener it was given: Metadata must advertise that listener's address, not the
first one's, or the clients would fail on a listener of another protocol. The records carry
CreateTime timestamps 1000, 2000, 3000 (kcat: the time it sends), and the lookup for 1500 must
answer offset 1.
"""
from __future__ import annotations

import asyncio
import json
import subprocess
import time
from pathlib import Path

import pytest
import trustme
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from broker.security.client import unsecured_token
from tests.helpers.broker import BrokerProcess
from tests.helpers.java import run_java

USERS = {"alice": "alice-secret"}
PLAIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
TIMESTAMPS = [1000, 2000, 3000]

# configuration name -> (listener, security protocol, SASL mechanism or None, mutual TLS, signed JWT)
CONFIGS = {
    "ssl": ("SSL", "SSL", None, False, False),
    "mtls": ("MTLS", "SSL", None, True, False),
    "plain": ("SASL_PLAINTEXT", "SASL_PLAINTEXT", "PLAIN", False, False),
    "scram256": ("SASL_PLAINTEXT", "SASL_PLAINTEXT", "SCRAM-SHA-256", False, False),
    "scram512": ("SASL_PLAINTEXT", "SASL_PLAINTEXT", "SCRAM-SHA-512", False, False),
    "ssl-scram512": ("SASL_SSL", "SASL_SSL", "SCRAM-SHA-512", False, False),
    "ssl-plain": ("SASL_SSL", "SASL_SSL", "PLAIN", False, False),
    "oauth": ("SASL_SSL", "SASL_SSL", "OAUTHBEARER", False, False),
    "jwt": ("JWT", "SASL_SSL", "OAUTHBEARER", False, True),
}
CLIENTS = ["kafka-python", "confluent-kafka", "aiokafka", "kcat", "java"]
UNSUPPORTED = {("kcat", "jwt")}


class Env:
    """Certificates, keys, tokens and the running broker."""

    def __init__(self, d: Path):
        self.d = d
        ca = trustme.CA()
        self.ca = d / "ca.pem"
        ca.cert_pem.write_to_path(str(self.ca))
        ca.issue_cert("localhost", "127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(d / "broker.pem"))
        client = ca.issue_cert("alice@hourglass.test", common_name="alice")
        self.cert, self.key = d / "client.pem", d / "client.key"
        client.cert_chain_pems[0].write_to_path(str(self.cert))
        client.private_key_pem.write_to_path(str(self.key))
        from cryptography import x509
        from cryptography.hazmat.primitives.serialization import pkcs12
        key = serialization.load_pem_private_key(client.private_key_pem.bytes(), None)
        self.java_keystore = d / "client.p12"  # the JDK reads PKCS12 (its PEM reader lacks PBES2)
        self.java_keystore.write_bytes(pkcs12.serialize_key_and_certificates(
            b"alice", key, x509.load_pem_x509_certificate(client.cert_chain_pems[0].bytes()), None,
            serialization.BestAvailableEncryption(b"store-pass")))
        # a signing key, its JWKS, and a signed token in a file (what Kafka's file token retriever reads)
        import jwt
        sign = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(sign.public_key()))
        (d / "jwks.json").write_text(json.dumps({"keys": [{**jwk, "kid": "k1", "use": "sig", "alg": "RS256"}]}))
        now = int(time.time())
        self.jwt = jwt.encode({"sub": "alice", "iat": now, "exp": now + 3600, "aud": "hourglass", "scope": "kafka"},
                              sign, algorithm="RS256", headers={"kid": "k1"})
        self.jwt_file = d / "token.jwt"
        self.jwt_file.write_text(self.jwt)
        self.broker = BrokerProcess(d / "data", {
            "listeners": ",".join(f"{n}://127.0.0.1:0" for n in ("SSL", "MTLS", "SASL_PLAINTEXT", "SASL_SSL", "JWT")),
            "listener.security.protocol.map": "SSL:SSL,MTLS:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,"
                                              "JWT:SASL_SSL",
            "ssl.keystore.type": "PEM", "ssl.keystore.location": d / "broker.pem",
            "ssl.truststore.type": "PEM", "ssl.truststore.location": self.ca,
            "listener.name.mtls.ssl.client.auth": "required",
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
            "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
            "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
            "listener.name.sasl_ssl.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512,OAUTHBEARER",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
            "listener.name.jwt.sasl.enabled.mechanisms": "OAUTHBEARER",
            "listener.name.jwt.oauthbearer.sasl.server.callback.handler.class": VALIDATOR,
            "sasl.oauthbearer.jwks.endpoint.url": (d / "jwks.json").as_uri(),
            "sasl.oauthbearer.expected.audience": "hourglass",
            "group.initial.rebalance.delay.ms": "0"})

    def start(self):
        from broker.security.scram import ScramCredentialStore, ScramMechanism, credential_from_password
        from broker.security.state import security_dir
        store = ScramCredentialStore(security_dir([self.broker.data_dir]))
        for m in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512):
            store.apply({"alice": (m, credential_from_password(m, "alice-secret"))}, {})
        self.broker.start()
        return self


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    e = Env(tmp_path_factory.mktemp("secured")).start()
    yield e
    e.broker.stop()


# ---- one round trip per client -----------------------------------------------------------------------
def kafka_python(env, cfg, bootstrap, topic):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.net.sasl.oauth import AbstractTokenProvider
    _, protocol, mech, mtls, signed = cfg
    c = {"bootstrap_servers": bootstrap, "security_protocol": protocol}
    if protocol in ("SSL", "SASL_SSL"):
        c["ssl_cafile"] = str(env.ca)
    if mtls:
        c.update(ssl_certfile=str(env.cert), ssl_keyfile=str(env.key))
    if mech == "OAUTHBEARER":
        class Tokens(AbstractTokenProvider):
            def token(self):
                return env.jwt if signed else unsecured_token("alice")
        c.update(sasl_mechanism=mech, sasl_oauth_token_provider=Tokens())
    elif mech:
        c.update(sasl_mechanism=mech, sasl_plain_username="alice", sasl_plain_password="alice-secret")
    p = KafkaProducer(**c)
    for i, ts in enumerate(TIMESTAMPS):
        p.send(topic, f"v{i}".encode(), timestamp_ms=ts).get(timeout=20)
    p.close()
    consumer = KafkaConsumer(**c)
    tp = TopicPartition(topic, 0)
    found = consumer.offsets_for_times({tp: 1500})[tp].offset
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    values = []
    deadline = time.monotonic() + 20
    while len(values) < 3 and time.monotonic() < deadline:
        for recs in consumer.poll(timeout_ms=500).values():
            values += [r.value.decode() for r in recs]
    consumer.close()
    return found, values


def librdkafka_config(env, cfg, bootstrap) -> dict:
    _, protocol, mech, mtls, signed = cfg
    c = {"bootstrap.servers": bootstrap, "security.protocol": protocol}
    if protocol in ("SSL", "SASL_SSL"):
        c["ssl.ca.location"] = str(env.ca)
    if mtls:
        c.update({"ssl.certificate.location": str(env.cert), "ssl.key.location": str(env.key)})
    if mech == "OAUTHBEARER" and not signed:
        c.update({"sasl.mechanism": mech, "enable.sasl.oauthbearer.unsecure.jwt": "true",
                  "sasl.oauthbearer.config": "principal=alice"})
    elif mech and mech != "OAUTHBEARER":
        c.update({"sasl.mechanism": mech, "sasl.username": "alice", "sasl.password": "alice-secret"})
    return c


def confluent(env, cfg, bootstrap, topic):
    from confluent_kafka import Consumer, Producer, TopicPartition
    c = librdkafka_config(env, cfg, bootstrap)
    if cfg[4]:
        c.update({"sasl.mechanism": "OAUTHBEARER", "oauth_cb": lambda _conf: (env.jwt, time.time() + 3600)})
    p = Producer(c)
    for i, ts in enumerate(TIMESTAMPS):
        p.produce(topic, f"v{i}".encode(), timestamp=ts)
    assert p.flush(20) == 0
    consumer = Consumer({**c, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    [found] = consumer.offsets_for_times([TopicPartition(topic, 0, 1500)], timeout=20)
    consumer.assign([TopicPartition(topic, 0, 0)])
    values = []
    deadline = time.monotonic() + 20
    while len(values) < 3 and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is not None and m.error() is None:
            values.append(m.value().decode())
    consumer.close()
    return found.offset, values


def aiokafka(env, cfg, bootstrap, topic):
    import ssl
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.abc import AbstractTokenProvider
    _, protocol, mech, mtls, signed = cfg
    c = {"bootstrap_servers": bootstrap, "security_protocol": protocol}
    if protocol in ("SSL", "SASL_SSL"):
        ctx = ssl.create_default_context(cafile=str(env.ca))
        if mtls:
            ctx.load_cert_chain(str(env.cert), str(env.key))
        c["ssl_context"] = ctx
    if mech == "OAUTHBEARER":
        class Tokens(AbstractTokenProvider):
            async def token(self):
                return env.jwt if signed else unsecured_token("alice")
        c.update(sasl_mechanism=mech, sasl_oauth_token_provider=Tokens())
    elif mech:
        c.update(sasl_mechanism=mech, sasl_plain_username="alice", sasl_plain_password="alice-secret")

    async def go():
        p = AIOKafkaProducer(**c)
        await p.start()
        try:
            for i, ts in enumerate(TIMESTAMPS):
                await p.send_and_wait(topic, f"v{i}".encode(), timestamp_ms=ts)
        finally:
            await p.stop()
        consumer = AIOKafkaConsumer(**c)
        await consumer.start()
        try:
            tp = TopicPartition(topic, 0)
            found = (await consumer.offsets_for_times({tp: 1500}))[tp].offset
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            values = []
            while len(values) < 3:
                values.append((await asyncio.wait_for(consumer.getone(), 20)).value.decode())
            return found, values
        finally:
            await consumer.stop()
    return asyncio.run(go())


def kcat(env, cfg, bootstrap, topic):
    c = librdkafka_config(env, cfg, bootstrap)
    args = ["kcat", "-b", bootstrap]
    for k, v in c.items():
        if k != "bootstrap.servers":
            args += ["-X", f"{k}={v}"]
    t0 = int(time.time() * 1000)
    subprocess.run(args + ["-P", "-t", topic, "-p", "0"], input="v0\nv1\nv2\n", text=True, check=True, timeout=30,
                   capture_output=True)
    q = subprocess.run(args + ["-Q", "-t", f"{topic}:0:{t0 - 60_000}"], text=True, check=True, timeout=30,
                       capture_output=True).stdout
    found = int(q.split("offset")[1].split()[0])  # "<topic> [0] offset 0"
    out = subprocess.run(args + ["-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q"], text=True,
                         check=True, timeout=30, capture_output=True).stdout.split()
    return found + 1, out  # every kcat record is newer than the lookup: offset 0, shifted to the others' 1


def java(env, cfg, bootstrap, topic):
    _, protocol, mech, mtls, signed = cfg
    props = {"security.protocol": protocol}
    if protocol in ("SSL", "SASL_SSL"):
        props.update({"ssl.truststore.type": "PEM", "ssl.truststore.location": str(env.ca)})
    if mtls:
        props.update({"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(env.java_keystore),
                      "ssl.keystore.password": "store-pass"})
    if mech == "OAUTHBEARER" and signed:
        # Kafka's own signed-token login handler needs jose4j: tests/java/TokenFileLoginHandler
        # hands the client the token from the file instead
        props.update({"sasl.mechanism": mech,
                      "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                                          f'tokenFile="{env.jwt_file}" principal="alice";',
                      "sasl.login.callback.handler.class": "TokenFileLoginHandler"})
    elif mech == "OAUTHBEARER":
        props.update({"sasl.mechanism": mech,
                      "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
                                          'required unsecuredLoginStringClaim_sub="alice";'})
    elif mech:
        module = "plain.PlainLoginModule" if mech == "PLAIN" else "scram.ScramLoginModule"
        props.update({"sasl.mechanism": mech, "sasl.jaas.config": f"org.apache.kafka.common.security.{module} "
                                                                  'required username="alice" password="alice-secret";'})
    f = env.d / f"{topic}.properties"
    f.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    lines = run_java(["round-trip", "--bootstrap", bootstrap, "--topic", topic, "--partition", "0",
                      "--timestamps", ",".join(map(str, TIMESTAMPS)), "--value-prefix", "v", "--ts", "1500",
                      "--from-offset", "earliest", "--count", "3", "--props-file", f])
    found = next(line["offset"] for line in lines if "target" in line)
    return found, [line["value"] for line in lines if "value" in line]


RUN = {"kafka-python": kafka_python, "confluent-kafka": confluent, "aiokafka": aiokafka, "kcat": kcat, "java": java}


@pytest.mark.parametrize("config,client", [(cf, cl) for cf in CONFIGS for cl in CLIENTS
                                           if (cl, cf) not in UNSUPPORTED])
def test_round_trip(env, client, config):
    cfg = CONFIGS[config]
    bootstrap = env.broker.listeners[cfg[0]]
    topic = f"rt-{client}-{config}"
    found, values = RUN[client](env, cfg, bootstrap, topic)
    assert (found, values) == (1, ["v0", "v1", "v2"])
