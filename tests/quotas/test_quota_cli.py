"""``hourglass quotas`` and ``hourglass configs`` (kafka-configs.sh) against a running broker."""
from __future__ import annotations

import subprocess
import sys


def hg(*args, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hourglass.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_quotas_add_list_remove(broker):
    b = ["-b", broker.bootstrap]
    r = hg("quotas", *b, "add", "--user", "alice", "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2048")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "Completed updating quota configs for user-principal 'alice'."
    assert hg("quotas", *b, "add", "--user-default", "--client-id", "app", "--add-config",
              "request_percentage=25").returncode == 0
    assert hg("quotas", *b, "add", "--ip-default", "--add-config", "connection_creation_rate=50",
              "--validate-only").stdout.startswith("Validated")
    r = hg("quotas", *b, "list")
    assert r.stdout.splitlines() == [
        "Quota configs for the default user-principal, client-id 'app' are request_percentage=25.0",
        "Quota configs for user-principal 'alice' are consumer_byte_rate=2048.0, producer_byte_rate=1048576.0",
    ]
    # bad input: a value that is not a number (refused before sending), a negative one, an unknown key
    r = hg("quotas", *b, "add", "--user", "bob", "--add-config", "producer_byte_rate=fast")
    assert r.returncode == 1 and "Cannot parse quota configuration value for producer_byte_rate: fast" in r.stderr
    r = hg("quotas", *b, "add", "--user", "bob", "--add-config", "producer_byte_rate=-1")
    assert r.returncode == 1 and "INVALID_REQUEST: Quota producer_byte_rate must be greater than 0" in r.stderr
    r = hg("quotas", *b, "add", "--ip", "10.1.2.3", "--add-config", "producer_byte_rate=5")
    assert r.returncode == 1 and "Invalid configuration key producer_byte_rate" in r.stderr
    r = hg("quotas", *b, "remove", "--user", "alice", "--delete-config", "consumer_byte_rate")
    assert r.returncode == 0, r.stderr
    r = hg("quotas", *b, "remove", "--user-default", "--client-id", "app")
    assert r.returncode == 0, r.stderr
    assert hg("quotas", *b, "list").stdout.splitlines() == [
        "Quota configs for user-principal 'alice' are producer_byte_rate=1048576.0"]


def test_configs_users_and_clients_in_one_command(broker):
    b = ["-b", broker.bootstrap]
    r = hg("configs", *b, "--alter", "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients",
           "--entity-name", "app", "--add-config", "producer_byte_rate=1024")
    assert r.returncode == 0, r.stderr
    r = hg("configs", *b, "--alter", "--entity-type", "clients", "--entity-default", "--add-config",
           "consumer_byte_rate=4096")
    assert r.returncode == 0, r.stderr
    r = hg("configs", *b, "--describe", "--entity-type", "users", "--entity-name", "alice")
    assert r.stdout.splitlines() == [
        "Quota configs for user-principal 'alice', client-id 'app' are producer_byte_rate=1024.0"]
    r = hg("configs", *b, "--describe", "--entity-type", "clients")
    assert len(r.stdout.splitlines()) == 2


def test_configs_brokers_alter_describe_and_refusal(broker):
    b = ["-b", broker.bootstrap]
    r = hg("configs", *b, "--alter", "--entity-type", "brokers", "--entity-default", "--add-config",
           "log.retention.ms=3600000,max.connections=1000")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "Completed updating config for default broker."
    r = hg("configs", *b, "--alter", "--entity-type", "brokers", "--entity-name", "1", "--add-config",
           "log.segment.bytes=1048576")
    assert r.returncode == 0, r.stderr
    r = hg("configs", *b, "--describe", "--entity-type", "brokers", "--entity-name", "1")
    lines = r.stdout.splitlines()
    assert lines[0] == "Dynamic configs for broker 1 are:"
    assert any(l.startswith("  log.segment.bytes=1048576 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:"
                            "log.segment.bytes=1048576") for l in lines), lines
    assert any(l.startswith("  log.retention.ms=3600000 ") for l in lines), lines
    r = hg("configs", *b, "--describe", "--entity-type", "brokers", "--entity-default")
    lines = r.stdout.splitlines()
    assert lines[0] == "Default configs for brokers in the cluster are:"
    assert [line.split("=")[0].strip() for line in lines[1:]] == ["log.retention.ms", "max.connections",
                                                                  "min.insync.replicas"]
    r = hg("configs", *b, "--alter", "--entity-type", "brokers", "--entity-name", "1", "--add-config", "num.partitions=4")
    assert r.returncode == 1
    assert "INVALID_REQUEST: Cannot update these configs dynamically: [num.partitions]" in r.stderr
    r = hg("configs", *b, "--alter", "--entity-type", "brokers", "--entity-default", "--delete-config", "max.connections")
    assert r.returncode == 0, r.stderr
