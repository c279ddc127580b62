"""Spark's Kafka connector reading from Hourglass with a delegation token, the way its executors
use the token the driver obtained (``spark.kafka.clusters.<id>.*``, KafkaTokenUtil).

How Spark gets a token: ``KafkaDelegationTokenProvider`` runs in ``HadoopDelegationTokenManager``,
which Spark starts only in ``CoarseGrainedSchedulerBackend.start`` when Hadoop security is on
(``UserGroupInformation.isSecurityEnabled``) and obtains tokens only for a user with Kerberos
credentials (``hasKerberosCredentials``, a keytab or ticket cache); it logs in to Kafka with
GSSAPI (or a JVM-global JAAS file) to ask for the token. Local mode (the only master here) has no
token manager at all, there is no KDC on this machine, and Hourglass refuses GSSAPI: the
obtaining step cannot run here. What follows it can: the token (id and base64 HMAC, created here
with CreateDelegationToken as the provider does) is put into the current user's Hadoop
credentials under Spark's token kind and service name, exactly as the driver ships it; Spark's
connector then finds it for the matching cluster (``auth.bootstrap.servers``), builds its own
``ScramLoginModule required tokenauth=true ...`` login and reads the topic.
"""
from __future__ import annotations

import uuid

import pytest

from hourglass.cli.wire import WireClient
from protocol.api_keys import APIS
from tests.helpers.broker import BrokerProcess
from tests.pipeline.conftest import SPARK_GROUP

pytestmark = pytest.mark.xdist_group(SPARK_GROUP)

CLUSTER = "hourglass"
PASSWORD = "alice-secret"


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    from broker.security.scram import ScramCredentialStore, ScramMechanism, credential_from_password
    from broker.security.state import security_dir
    d = tmp_path_factory.mktemp("spark-token")
    m = ScramMechanism.SCRAM_SHA_512
    ScramCredentialStore(security_dir([d / "data"])).apply({"alice": (m, credential_from_password(m, PASSWORD))}, {})
    b = BrokerProcess(d / "data", {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512", "delegation.token.secret.key": "spark-token-key"}).start()
    yield b
    b.stop()


def test_spark_reads_with_a_delegation_token(secured, spark):
    from confluent_kafka import Producer
    topic = f"token-{uuid.uuid4().hex[:6]}"
    p = Producer({"bootstrap.servers": secured.bootstrap})
    for i in range(20):
        p.produce(topic, key=str(i).encode(), value=f"v{i}".encode())
    assert p.flush(30) == 0
    sasl = secured.listeners["SASL_PLAINTEXT"]
    with WireClient(sasl, props={
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": f'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                f'username="alice" password="{PASSWORD}";'}) as c:
        r = c.request(38, 3, APIS[38].request.cls(renewers=[], max_lifetime_ms=-1))
    assert r.error_code == 0
    import base64
    jvm = spark._jvm
    conf = jvm.org.apache.spark.SparkEnv.get().conf()  # the SparkConf the connector reads (local mode)
    for k, v in ((f"spark.kafka.clusters.{CLUSTER}.auth.bootstrap.servers", sasl),
                 (f"spark.kafka.clusters.{CLUSTER}.security.protocol", "SASL_PLAINTEXT")):
        conf.set(k, v)
    def read():
        df = (spark.read.format("kafka").option("kafka.bootstrap.servers", sasl)
              .option("kafka.security.protocol", "SASL_PLAINTEXT").option("subscribe", topic)
              .option("startingOffsets", "earliest").load())
        return sorted((bytes(x.key).decode(), bytes(x.value).decode()) for x in df.select("key", "value").collect())

    ugi = jvm.org.apache.hadoop.security.UserGroupInformation.getCurrentUser()
    util = getattr(getattr(jvm.org.apache.spark.kafka010, "KafkaTokenUtil$"), "MODULE$")
    service = util.getTokenService(CLUSTER)
    try:
        with pytest.raises(Exception, match="KafkaClient|JAAS|jaas"):  # no token, no login: nothing to read with
            read()
        # what the driver's KafkaDelegationTokenProvider hands the executors (KafkaTokenUtil.obtainToken)
        ugi.addToken(service, jvm.org.apache.hadoop.security.token.Token(
            r.token_id.encode(), base64.b64encode(r.hmac), util.TOKEN_KIND(), service))
        assert read() == sorted((str(i), f"v{i}") for i in range(20))
    finally:
        # UserGroupInformation.getCredentials() is a copy: the token is removed from the Credentials
        # the user's Subject holds, or every later Kafka read in this Spark session would find a
        # token for a cluster whose settings are gone (NoSuchElementException ...auth.bootstrap.servers)
        held = jvm.java.lang.Class.forName("org.apache.hadoop.security.Credentials")
        for creds in ugi.getSubject().getPrivateCredentials(held).toArray():
            creds.removeToken(service)
        assert ugi.getCredentials().getToken(service) is None
        for k in ("auth.bootstrap.servers", "security.protocol"):
            conf.remove(f"spark.kafka.clusters.{CLUSTER}.{k}")
