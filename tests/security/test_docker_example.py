"""docker/sasl-ssl/compose.yaml, run as scripts (Docker itself cannot run here): its ``certs``
and ``admin-user`` commands, then the broker service's environment through the image's
entrypoint, with only paths and ports moved; a client with docker/sasl-ssl/client.properties
logs in as admin, manages ACLs and users, produces and consumes."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys

import yaml

from broker.config import parse_properties
from tests.helpers.broker import REPO_ROOT, BrokerProcess

EXAMPLE = REPO_ROOT / "docker" / "sasl-ssl"


def hg(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "broker", *map(str, args)], input=stdin, capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, cwd=REPO_ROOT)


def test_the_sasl_ssl_example(tmp_path):
    services = yaml.safe_load((EXAMPLE / "compose.yaml").read_text())["services"]
    secrets, data = tmp_path / "secrets", tmp_path / "data"

    def here(arg: str) -> str:
        return arg.replace("/secrets", str(secrets)).replace("/var/lib/hourglass", str(data))

    for name in ("certs", "admin-user"):
        cmd = services[name]["entrypoint"]
        assert cmd[0] == "hourglass"
        r = hg(*[here(a) for a in cmd[1:]])
        assert r.returncode == 0, r.stderr
    spec = importlib.util.spec_from_file_location("entrypoint", REPO_ROOT / "docker" / "entrypoint.py")
    ep = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ep)
    # compose's ${VAR:-default} substitution (the published port), with the defaults
    env = {k: here(re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", str(v))) for k, v in services["broker"]["environment"].items()}
    props = parse_properties(ep.render(env, str(tmp_path / "no-mount"), "/nonexistent"))
    assert props["listeners"] == "SASL_SSL://0.0.0.0:9093,LOCAL://127.0.0.1:9092"
    config = tmp_path / "server.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    b = BrokerProcess(data, {"listeners": "SASL_SSL://127.0.0.1:0,LOCAL://127.0.0.1:0",
                             "advertised.listeners": "SASL_SSL://localhost:0,LOCAL://127.0.0.1:0",
                             # the image's HTTP services (8081, 8080) on free loopback ports here
                             "schema.registry.listeners": "http://127.0.0.1:0", "console.listeners": "http://127.0.0.1:0"},
                      config=config).start()
    try:
        client = tmp_path / "client.properties"
        client.write_text((EXAMPLE / "client.properties").read_text().replace(
            "docker/sasl-ssl/secrets", str(secrets)))
        B = ("-b", b.listeners["SASL_SSL"].replace("127.0.0.1", "localhost"), "--command-config", client)
        assert hg("probe", "-b", b.listeners["LOCAL"]).returncode == 0  # the healthcheck's probe
        assert hg("topics", "create", "orders", *B).returncode == 0
        assert hg("users", "add", "alice", "--password", "alice-secret", "--mechanism", "SCRAM-SHA-512",
                  *B).returncode == 0
        r = hg("acls", "add", "--allow-principal", "User:alice", "--consumer", "--topic", "orders", "--group",
               "g", *B)
        assert r.returncode == 0, r.stderr
        assert hg("produce", "orders", *B, stdin="x\ny\n").returncode == 0
        r = hg("consume", "orders", "--from-beginning", "-e", *B)
        assert r.stdout.split() == ["x", "y"], r.stderr
        # anyone on the loopback PLAINTEXT listener is ANONYMOUS, with no ACL: refused
        r = hg("topics", "list", "-b", b.listeners["LOCAL"], "--timeout", "5")
        assert "orders" not in r.stdout
    finally:
        b.stop()
