"""``hourglass acls`` / ``hourglass users`` and ``--command-config`` on every client command,
run as a user runs them (``python -m broker ...``) against a SASL_SSL broker with ACLs on.

The first user is created in the stopped broker's data dir (``users add --data-dir``, as
``kafka-storage.sh format --add-scram`` does); everything else goes over the wire with a Java
client's ``client.properties``.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import trustme

from hourglass.cli.client_properties import ClientPropertiesError, read, to_librdkafka
from tests.helpers.broker import REPO_ROOT, BrokerProcess

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def hg(*args, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run([sys.executable, "-m", "broker", *map(str, args)], input=stdin, capture_output=True,
                          text=True, timeout=60, env=env, cwd=REPO_ROOT)


def properties(path, user: str, password: str, ca_file, **extra) -> str:
    lines = ["security.protocol=SASL_SSL", "sasl.mechanism=SCRAM-SHA-512",
             "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
             f'username="{user}" password="{password}";',
             "ssl.truststore.type=PEM", f"ssl.truststore.location={ca_file}"] + [f"{k}={v}" for k, v in extra.items()]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    ca = trustme.CA()
    ca.issue_cert("localhost", "127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(d / "server.pem"))
    ca.cert_pem.write_to_path(str(d / "ca.pem"))
    data = d / "data"
    r = hg("users", "add", "admin", "--password", "admin-secret", "--data-dir", data)
    assert r.returncode == 0, r.stderr
    assert "admin-secret" not in (data / ".hourglass" / "scram-credentials.json").read_text()
    b = BrokerProcess(data, {"listeners": "SASL_SSL://127.0.0.1:0", "sasl.enabled.mechanisms": "SCRAM-SHA-512",
                             "ssl.keystore.type": "PEM", "ssl.keystore.location": d / "server.pem",
                             "authorizer.class.name": AUTHORIZER, "super.users": "User:admin",
                             "group.initial.rebalance.delay.ms": "0"}).start()
    admin = properties(d / "admin.properties", "admin", "admin-secret", d / "ca.pem")
    alice = properties(d / "alice.properties", "alice", "alice-secret", d / "ca.pem", **{"group.id": "billing"})
    yield b, admin, alice, d
    b.stop()


def test_users_and_acls_commands(setup):
    b, admin, alice, d = setup
    B = ("-b", b.bootstrap)
    r = hg("users", "add", "alice", "--password", "alice-secret", *B, "--command-config", admin)
    assert r.returncode == 0, r.stderr
    r = hg("users", "list", *B, "--command-config", admin)
    assert r.returncode == 0 and "User: alice  SCRAM-SHA-256 (iterations=4096), SCRAM-SHA-512 (iterations=4096)" \
        in r.stdout, r.stdout + r.stderr
    r = hg("acls", "add", "--allow-principal", "User:alice", "--producer", "--consumer", "--topic", "orders",
           "--group", "billing", *B, "--command-config", admin)
    assert r.returncode == 0, r.stderr
    r = hg("acls", "list", "--topic", "orders", *B, "--command-config", admin)
    assert "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`:" \
        in r.stdout
    assert " \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)" in r.stdout
    assert r.stdout.count("principal=User:alice") == 4  # WRITE, DESCRIBE, CREATE, READ
    # alice may not manage ACLs: Kafka's error, exit 1
    r = hg("acls", "list", *B, "--command-config", alice)
    assert r.returncode == 1 and "CLUSTER_AUTHORIZATION_FAILED" in r.stderr
    r = hg("acls", "remove", "--topic", "orders", *B, "--command-config", admin)
    assert r.returncode == 1 and "--force" in r.stderr
    # clients with alice's properties
    assert hg("topics", "create", "orders", *B, "--command-config", admin).returncode == 0
    r = hg("produce", "orders", *B, "--command-config", alice, stdin="a\nb\n")
    assert r.returncode == 0, r.stderr
    r = hg("consume", "orders", "--from-beginning", "-e", *B, "--command-config", alice)
    assert r.returncode == 0 and r.stdout.split() == ["a", "b"], r.stderr
    r = hg("offsets", "orders", "--at", "latest", "--json", *B, "--command-config", alice)
    assert r.returncode == 0 and '"0": 2' in r.stdout
    assert hg("topics", "list", *B, "--command-config", alice).stdout.split() == ["orders"]
    assert hg("probe", *B, "--command-config", alice).returncode == 0
    assert hg("transactions", "list", *B, "--command-config", alice).returncode == 0
    r = hg("acls", "remove", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "orders", *B,
           "--command-config", admin)
    assert r.returncode == 0 and "Removed 1 ACL(s)" in r.stdout
    r = hg("produce", "orders", *B, "--command-config", alice, stdin="c\n")
    assert r.returncode == 1 and "TOPIC_AUTHORIZATION_FAILED" in (r.stdout + r.stderr)
    r = hg("users", "remove", "alice", *B, "--command-config", admin)
    assert r.returncode == 0, r.stderr
    r = hg("topics", "list", *B, "--command-config", alice, "--timeout", "3")
    assert r.returncode == 1  # alice cannot log in any more
    # without --command-config the secured listener does not answer a plaintext client
    assert hg("probe", *B, "--timeout", "2").returncode == 1


def test_client_properties_for_librdkafka(tmp_path):
    f = tmp_path / "c.properties"
    f.write_text("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
                 'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required '
                 'username="u" password="p";\nssl.endpoint.identification.algorithm=\n'
                 f"ssl.truststore.type=PEM\nssl.truststore.location={tmp_path / 'ca.pem'}\nretries=3\n")
    (tmp_path / "ca.pem").write_text(trustme.CA().cert_pem.bytes().decode())
    conf = to_librdkafka(read(str(f)))
    assert conf == {"security.protocol": "SASL_SSL", "sasl.mechanisms": "PLAIN", "sasl.username": "u",
                    "sasl.password": "p", "ssl.endpoint.identification.algorithm": "none",
                    "ssl.ca.location": str(tmp_path / "ca.pem")}
    oauth = to_librdkafka({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
                           "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
                                               'required unsecuredLoginStringClaim_sub="svc" '
                                               'unsecuredLoginListClaim_scope=",read,write";'})
    assert oauth["sasl.oauthbearer.config"] == "principal=svc scope=read,write"
    assert oauth["enable.sasl.oauthbearer.unsecure.jwt"] == "true"
    jks = tmp_path / "trust.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed" + b"\0" * 16)
    with pytest.raises(ClientPropertiesError, match="keytool -importkeystore"):
        to_librdkafka({"ssl.truststore.location": str(jks)})
