"""Drop-in configuration, the parts that need no client: Kafka's shipped files are understood
key by key, unknown keys warn with a suggestion (and refuse under --strict-config), invalid
values refuse with Kafka's wording, listeners resolve as Kafka resolves them, and the docker
entrypoint turns the apache/kafka image's environment into the same keys its scripts would."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from broker.config import (BrokerConfig, ConfigError, HONOURED, NO_EFFECT_HERE, PER_LISTENER, REMOVED,
                           TOPIC_DEFAULT, UNKNOWN, key_status, parse_properties)
from tests.helpers.kafka_configs import COMMENTED_OUT, KAFKA_DOCKER_DOCS_ENV, SHIPPED

ROOT = Path(__file__).resolve().parents[2]


def hg(*args, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "broker", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT, env=env)


# ---- Kafka's shipped files, key by key ---------------------------------------------------

@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_every_key_of_kafkas_shipped_files_is_known(name):
    keys = list(parse_properties(SHIPPED[name] + COMMENTED_OUT))
    assert [k for k in keys if key_status(k) == UNKNOWN] == []


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_config_check_accepts_kafkas_shipped_files(name, tmp_path):
    f = tmp_path / "server.properties"
    f.write_text(SHIPPED[name])
    r = hg("config", "check", f)
    if "controller.properties" in name:
        # every key is known, but a controller-only node would serve no client
        assert r.returncode == 2, r.stdout
        assert "[unknown]" not in r.stdout and "[invalid]" not in r.stdout
        assert "controller-only node" in r.stdout
        return
    assert r.returncode == 0, r.stdout + r.stderr
    lines = {l.split()[0]: l for l in r.stdout.splitlines()[1:] if l.strip() and not l[0].isdigit()}
    assert set(parse_properties(SHIPPED[name])) <= set(lines)
    assert "server.properties:1" in lines[next(iter(parse_properties(SHIPPED[name])))]
    line = lines["offsets.topic.replication.factor"]
    assert "[no effect here]" in line and "only replica" in line


def test_key_kinds():
    assert key_status("listeners") == HONOURED
    assert key_status("log.retention.hours") == TOPIC_DEFAULT
    assert key_status("zookeeper.connect") == NO_EFFECT_HERE
    assert key_status("replica.selector.class") == NO_EFFECT_HERE  # KIP-392's, set for rack-aware fetching
    assert key_status("listener.name.client.ssl.keystore.location") == PER_LISTENER
    assert key_status("listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config") == PER_LISTENER
    assert key_status("listener.name.client.no.such.key") == UNKNOWN
    assert key_status("log.retention.hourz") == UNKNOWN


def test_config_check_reports_values_sources_and_effects(tmp_path):
    f = tmp_path / "my.properties"
    f.write_text("log.retention.hourz=5\nzookeeper.connect=zk:2181\nssl.keystore.password=s3cret\n"
                 "log.retention.hours=1\n")
    r = hg("config", "check", f, "--override", "num.partitions=3")
    assert r.returncode == 2
    out = r.stdout
    assert "log.retention.hourz" in out and "did you mean `log.retention.hours`?" in out
    assert "my.properties:2" in out and "no ZooKeeper" in out
    assert "--override" in out and "Partitions of an auto-created topic" in out
    assert "s3cret" not in out and "[hidden]" in out
    assert "broker default of topic config `retention.ms`" in out
    f.write_text("log.retention.hours=1\n"
                 "replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector\n")
    r = hg("config", "check", f)
    assert r.returncode == 0, r.stdout
    line = next(l for l in r.stdout.splitlines() if "replica.selector.class" in l)
    assert "[no effect here]" in line and "only replica" in line


def test_config_check_names_invalid_values_and_whole_config_errors(tmp_path):
    f = tmp_path / "server.properties"
    f.write_text("num.io.threads=eight\n")
    r = hg("config", "check", f)
    assert r.returncode == 2 and "Invalid value eight for configuration num.io.threads: Not a number of type INT" in r.stdout
    f.write_text("listeners=PLAINTEXT://:0,SSL://:0\n")  # TLS and SASL settings are checked too
    r = hg("config", "check", f)
    assert r.returncode == 2 and "listener SSL (SSL): ssl.keystore.location" in r.stdout and "is required" in r.stdout


# ---- serve: warn on unknown, refuse on invalid or under --strict-config -----------------

def _serve(tmp_path, *extra, wait_ready: bool) -> tuple[subprocess.Popen, str]:
    ready = tmp_path / "ready"
    log = tmp_path / "broker.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "broker", "serve", *map(str, extra),
                                 "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                                 "--override", f"log.dirs={tmp_path / 'data'}", "--ready-file", str(ready)],
                                stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
    if wait_ready:
        deadline = time.monotonic() + 20
        while not (ready.exists() and ready.read_text().strip()):
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.02)
    return proc, str(log)


def test_misspelled_key_starts_with_a_warning_naming_key_and_suggestion(tmp_path):
    f = tmp_path / "server.properties"
    f.write_text("log.retention.hourz=1\nzookeeper.connect=localhost:2181\nnum.io.threads=8\n")
    proc, log = _serve(tmp_path, f, wait_ready=True)  # positional file, as kafka-server-start.sh
    proc.terminate()
    assert proc.wait(20) == 0
    text = Path(log).read_text()
    warn = [l for l in text.splitlines() if "WARNING" in l and "log.retention.hourz" in l]
    assert len(warn) == 1 and "did you mean `log.retention.hours`?" in warn[0], text
    info = [l for l in text.splitlines() if "INFO" in l and "no effect on this one node" in l]
    assert len(info) == 1 and "zookeeper.connect" in info[0] and "num.io.threads" in info[0], text


def test_strict_config_refuses_the_misspelled_key_with_exit_2(tmp_path):
    f = tmp_path / "server.properties"
    f.write_text("log.retention.hourz=1\n")
    proc, log = _serve(tmp_path, "--config", f, "--strict-config", wait_ready=False)
    assert proc.wait(20) == 2
    text = Path(log).read_text()
    assert "'log.retention.hourz'" in text and "did you mean `log.retention.hours`?" in text


KAFKA_3_REMOVED = "log.message.format.version=2.8\nlog.message.downconversion.enable=false\n"


def test_keys_kafka_4_removed_start_with_a_warning_each_even_under_strict_config(tmp_path):
    """A Kafka 3.x server.properties with the log keys Kafka 4.0 removed (KIP-724) starts, as
    Kafka 4 starts with them: each is ignored (its value not even read) with a warning saying
    why; --strict-config does not refuse them (they are no typo). (KIP-937's
    log.message.timestamp.difference.max.ms is honoured instead, with a deprecation warning:
    tests/integration/test_timestamp_difference.py.)"""
    assert key_status("log.message.format.version") == REMOVED
    f = tmp_path / "server.properties"
    f.write_text(KAFKA_3_REMOVED + "log.retention.hours=1\n")
    proc, log = _serve(tmp_path, "--config", f, "--strict-config", wait_ready=True)
    proc.terminate()
    assert proc.wait(20) == 0
    text = Path(log).read_text()
    for key in ("log.message.format.version", "log.message.downconversion.enable"):
        warn = [l for l in text.splitlines() if "WARNING" in l and f"'{key}'" in l]
        assert len(warn) == 1 and "removed in Kafka 4.0" in warn[0] and "It is ignored." in warn[0], text
    r = hg("config", "check", f)
    assert r.returncode == 0, r.stdout
    line = next(l for l in r.stdout.splitlines() if l.startswith("log.message.format.version"))
    assert "[removed in Kafka 4] ignored, as Kafka 4 ignores it" in line and "KIP-724" in line


def test_invalid_value_of_a_known_key_refuses_naming_key_and_value(tmp_path):
    for line, want in [("num.partitions=many", "Invalid value many for configuration num.partitions: Not a number of type INT"),
                       ("num.partitions=0", "Invalid value 0 for configuration num.partitions: Value must be at least 1"),
                       ("log.retention.hours=soon", "Invalid value soon for configuration log.retention.hours"),
                       ("zookeeper.session.timeout.ms=x", "Invalid value x for configuration zookeeper.session.timeout.ms")]:
        f = tmp_path / "server.properties"
        f.write_text(line + "\n")
        proc, log = _serve(tmp_path, f, wait_ready=False)
        assert proc.wait(20) == 2, line
        assert want in Path(log).read_text(), line


def test_two_different_config_files_is_a_usage_error(tmp_path):
    a, b = tmp_path / "a.properties", tmp_path / "b.properties"
    a.write_text("")
    b.write_text("")
    r = hg("serve", a, "--config", b)
    assert r.returncode == 2 and "two config files" in r.stderr


# ---- listeners, as Kafka resolves them ----------------------------------------------------

def test_controller_listener_is_understood_and_not_bound():
    cfg = BrokerConfig({"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
                        "controller.listener.names": "CONTROLLER"})
    assert [l.uri for l in cfg.listeners] == ["PLAINTEXT://:9092"]
    assert [l.uri for l in cfg.listener_setup.controller] == ["CONTROLLER://:9093"]
    notes = [m for lvl, m in cfg.startup_notes() if "own controller" in m]
    assert len(notes) == 1 and "CONTROLLER://:9093" in notes[0] and "not bound" in notes[0]


def test_4x_advertised_controller_listener_is_left_out_and_named_listeners_advertise_their_own():
    cfg = BrokerConfig({"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093,PLAINTEXT_HOST://0.0.0.0:9094",
                        "advertised.listeners": "PLAINTEXT://broker:9092,CONTROLLER://localhost:9093,PLAINTEXT_HOST://localhost:9094",
                        "controller.listener.names": "CONTROLLER",
                        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT"})
    s = cfg.listener_setup
    assert sorted(s.advertised) == ["PLAINTEXT", "PLAINTEXT_HOST"]
    assert (s.advertised_for("PLAINTEXT_HOST").host, s.advertised_for("PLAINTEXT_HOST").port) == ("localhost", 9094)
    assert s.advertised_for(None).host == "broker"


@pytest.mark.parametrize("raw, fragment", [
    ({"listeners": "CLIENT://:9092"}, "No security protocol defined for listener CLIENT"),
    ({"listeners": "PLAINTEXT://:9092", "advertised.listeners": "OTHER://h:1",
      "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT"},
     "must be equal to or a subset of the ones defined in listeners"),
    ({"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"}, "nonroutable meta-address 0.0.0.0"),
    ({"listeners": "PLAINTEXT://:9092,PLAINTEXT://:9093"}, "Each listener must have a different name"),
    ({"listeners": "A://:9092,B://:9092", "listener.security.protocol.map": "A:PLAINTEXT,B:PLAINTEXT"},
     "Each listener must have a different port"),
    ({"listeners": "CONTROLLER://:9093", "controller.listener.names": "CONTROLLER"},
     "at least one broker advertised listener"),
    ({"process.roles": "controller"}, "controller-only node"),
    ({"listener.security.protocol.map": "PLAINTEXT:TLS"}, "unknown security protocol TLS"),
    ({"node.id": "1", "broker.id": "2"}, "You must set `node.id` to the same value as `broker.id`."),
])
def test_what_kafka_refuses_or_hourglass_does_not_serve_yet(raw, fragment):
    with pytest.raises(ConfigError) as ei:
        BrokerConfig(raw)
    assert fragment in str(ei.value)


def test_custom_listener_names_and_per_listener_overrides_are_carried():
    cfg = BrokerConfig({"listeners": "CLIENT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
                        "listener.security.protocol.map": "CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT",
                        "listener.name.client.max.connections": "10",
                        "listener.name.internal.plain.sasl.jaas.config": "x required;"})
    by = {l.name: l for l in cfg.listeners}
    assert by["CLIENT"].overrides == {"max.connections": "10"}
    assert by["INTERNAL"].overrides == {"plain.sasl.jaas.config": "x required;"}


def test_strict_mode_names_every_unknown_key():
    with pytest.raises(ConfigError) as ei:
        BrokerConfig({"log.retention.hourz": "1", "num.partition": "2"}, strict=True)
    assert "'log.retention.hourz' (did you mean `log.retention.hours`?)" in str(ei.value)
    assert "'num.partition' (did you mean `num.partitions`?)" in str(ei.value)


# ---- the docker entrypoint's environment mapping ------------------------------------------

def _entrypoint():
    spec = importlib.util.spec_from_file_location("hourglass_entrypoint", ROOT / "docker" / "entrypoint.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_entrypoint_converts_names_as_kafkas_docker_wrapper():
    ep = _entrypoint()
    assert ep.key_from_env("KAFKA_LOG_RETENTION_MS") == "log.retention.ms"
    assert ep.key_from_env("KAFKA_ABC__DEF") == "abc_def"
    assert ep.key_from_env("KAFKA_ABC___DEF") == "abc-def"
    assert ep.key_from_env("KAFKA_LISTENER_NAME_SASL__SSL_SCRAM___SHA___256_SASL_JAAS_CONFIG") == \
        "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config"
    assert ep.key_from_env("HOURGLASS_CFG_NUM_PARTITIONS") == "num.partitions"


def test_entrypoint_renders_the_documented_environment(tmp_path):
    ep = _entrypoint()
    env = {**KAFKA_DOCKER_DOCS_ENV, "KAFKA_HEAP_OPTS": "-Xmx1G", "KAFKA_OPTS": "-Dx=y", "PATH": "/bin"}
    props = parse_properties(ep.render(env, str(tmp_path / "none"), str(tmp_path / "none.properties")))
    want = {ep.key_from_env(k): v for k, v in KAFKA_DOCKER_DOCS_ENV.items()}
    assert {k: props[k] for k in want} == want
    assert props["cluster.id"] == "5L6g3nShT-eMCtK--X86sw"  # the image's default CLUSTER_ID
    assert props["log.dirs"] == "/var/lib/hourglass"
    assert "heap.opts" not in props and "opts" not in props
    cfg = BrokerConfig(props, strict=True)  # every key the documented environment sets is known
    assert [l.uri for l in cfg.listeners] == ["PLAINTEXT://localhost:9092"]


def test_entrypoint_derives_listeners_and_layers_a_mounted_file(tmp_path):
    ep = _entrypoint()
    keys = ep.env_keys({"KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://broker:19092,HOST://localhost:9092"})
    assert keys["listeners"] == "PLAINTEXT://0.0.0.0:19092,HOST://0.0.0.0:9092"
    with pytest.raises(ep.EntrypointError, match="not supported on a KRaft controller"):
        ep.env_keys({"KAFKA_PROCESS_ROLES": "controller", "KAFKA_ADVERTISED_LISTENERS": "CONTROLLER://c:9093"})
    mounted = tmp_path / "mnt"
    mounted.mkdir()
    (mounted / "server.properties").write_text("num.partitions=1\nlog.dirs=/data\ncluster.id=fromfile\n")
    props = parse_properties(ep.render({"KAFKA_NUM_PARTITIONS": "4"}, str(mounted), "/nonexistent"))
    assert (props["num.partitions"], props["log.dirs"], props["cluster.id"]) == ("4", "/data", "fromfile")
    props = parse_properties(ep.render({"CLUSTER_ID": "MkU3OEVBNTcwNTJENDM2Qk"}, str(mounted), "/nonexistent"))
    assert props["cluster.id"] == "MkU3OEVBNTcwNTJENDM2Qk"
    default = tmp_path / "default.properties"
    default.write_text("node.id=7\n")
    props = parse_properties(ep.render({}, str(tmp_path / "none"), str(default)))
    assert props["node.id"] == "7"


def test_the_repos_compose_broker_environment_renders_a_valid_configuration(tmp_path):
    import yaml
    ep = _entrypoint()
    import re
    env = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())["services"]["broker"]["environment"]
    # compose's ${VAR:-default} substitution, with the defaults
    env = {k: re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", str(v)) for k, v in env.items()}
    props = parse_properties(ep.render(env, str(tmp_path), "/nonexistent"))
    cfg = BrokerConfig(props, strict=True)
    assert [l.uri for l in cfg.listeners] == ["PLAINTEXT://0.0.0.0:29092", "PLAINTEXT_HOST://0.0.0.0:9092"]
    assert cfg.listener_setup.advertised_for(None).uri == "PLAINTEXT://broker:29092"


def test_entrypoint_configure_then_launch_steps(tmp_path, monkeypatch, capsys):
    """Confluent's configure/launch split (docker/compat/confluent): ``--configure`` only writes
    the configuration, which Testcontainers' start scripts then act on (kafka-storage format),
    and ``--launch`` refuses to start without it."""
    ep = _entrypoint()
    final = tmp_path / "etc"
    for k, v in {"HOURGLASS_FINAL_CONFIG_DIR": str(final), "HOURGLASS_MOUNTED_CONFIG_DIR": str(tmp_path / "none"),
                 "HOURGLASS_DEFAULT_CONFIG": str(tmp_path / "none.properties"),
                 "KAFKA_LISTENERS": "PLAINTEXT://0.0.0.0:9093,BROKER://0.0.0.0:9092",
                 "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "BROKER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                 "KAFKA_BROKER_ID": "1", "KAFKA_ZOOKEEPER_CONNECT": "localhost:2181"}.items():
        monkeypatch.setenv(k, v)
    assert ep.main(["--launch"]) == 1
    assert "run the configure step first" in capsys.readouterr().err
    assert ep.main(["--configure"]) == 0
    props = parse_properties((final / "server.properties").read_text())
    assert props["zookeeper.connect"] == "localhost:2181"  # accepted with no effect: no ZooKeeper here
    cfg = BrokerConfig(props)
    assert cfg.node_id == 1 and "zookeeper.connect" in cfg.no_effect


def test_storage_tool_formats_as_kafka_storage(tmp_path, capsys):
    """``hourglass storage`` (kafka-storage in the image): random-uuid, format and its refusals."""
    from hourglass.cli import storage
    conf = tmp_path / "server.properties"
    conf.write_text(f"log.dirs={tmp_path / 'a'},{tmp_path / 'b'}\nnode.id=3\n")
    assert storage.main(["random-uuid"]) == 0
    cid = capsys.readouterr().out.strip()
    assert len(cid) == 22
    assert storage.main(["format", "-t", cid, "-c", str(conf)]) == 0
    for d in ("a", "b"):
        meta = parse_properties((tmp_path / d / "meta.properties").read_text())
        assert (meta["cluster.id"], meta["node.id"], meta["version"]) == (cid, "3", "1")
    capsys.readouterr()
    assert storage.main(["format", "-t", cid, "-c", str(conf)]) == 1
    assert "is already formatted. Use --ignore-formatted" in capsys.readouterr().err
    assert storage.main(["format", "--ignore-formatted", "-t", cid, "-c", str(conf)]) == 0
    assert "already formatted" in capsys.readouterr().out
    assert storage.main(["format", "-t", "not-a-uuid", "-c", str(conf)]) == 1
    assert "does not appear to be a valid UUID" in capsys.readouterr().err
    assert storage.main(["format", "-t", cid, "-c", str(conf), "--feature", "transaction.version=2"]) == 1
    assert "kafka-features" in capsys.readouterr().err
    # the broker starts on what format wrote: the same cluster id
    from broker.cluster import ClusterMeta
    assert ClusterMeta([tmp_path / "a", tmp_path / "b"], 3).cluster_id == cid


def test_random_uuids_never_read_as_a_command_line_option(capsys):
    """Kafka's ``Uuid.randomUuid`` never prints starting with '-': ``kafka-storage format -t
    "$(kafka-storage random-uuid)"`` would read such an id as an option. One id in 64 would
    start with '-' otherwise, so 2,000 ids without one leave a chance of 1e-14 of a false pass."""
    from hourglass.cli import storage
    for _ in range(2000):
        assert storage.main(["random-uuid"]) == 0
    ids = capsys.readouterr().out.split()
    assert len(ids) == 2000 and not [i for i in ids if i.startswith("-")]
