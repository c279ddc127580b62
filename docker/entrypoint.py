#!/usr/bin/env python3
"""Container entrypoint: configure the broker from the environment exactly as the apache/kafka
image does, so a compose file written for that image runs with only the image name changed.

What the apache/kafka image does (``docker/resources/common-scripts/configureDefaults``,
``configure`` and ``kafka.docker.KafkaDockerWrapper``, Kafka 3.7+ and 4.x), step by step here:

1. ``CLUSTER_ID`` defaults to ``5L6g3nShT-eMCtK--X86sw`` when unset or empty.
2. With ``KAFKA_PROCESS_ROLES=controller``, ``KAFKA_ADVERTISED_LISTENERS`` is refused.
3. ``KAFKA_LISTENERS``, when unset, is derived from ``KAFKA_ADVERTISED_LISTENERS`` with every
   host replaced by ``0.0.0.0``.
4. Every ``KAFKA_*`` variable but the JVM/launcher ones becomes a key: ``KAFKA_`` removed,
   lower-cased, ``_`` -> ``.``, then ``...`` -> ``-`` and ``..`` -> ``_`` (so ``__`` means ``_``
   and ``___`` means ``-``): ``KAFKA_LOG_RETENTION_MS`` -> ``log.retention.ms``.
5. A mounted ``/mnt/shared/config/server.properties`` is the base and the environment's keys
   are appended (they win); with no mounted file the environment's keys are the whole
   configuration; with neither, the image's default ``server.properties`` is used.
6. The storage is formatted with ``CLUSTER_ID``: here that is ``cluster.id``, which Hourglass
   uses when the data dir has no ``meta.properties`` yet (an existing one keeps its id, as
   Kafka's "already formatted" does).

Hourglass additions: ``log.dirs`` defaults to the image's data volume ``/var/lib/hourglass``
when the configuration names no log dir; the Schema Registry and the console (with Kafka REST
v3) are on at their usual ports, ``http://0.0.0.0:8081`` and ``http://0.0.0.0:8080``, unless the
configuration names their listeners (``KAFKA_SCHEMA_REGISTRY_LISTENERS=`` empty turns one off); ``HOURGLASS_CFG_<KEY>`` works like ``KAFKA_<KEY>``;
the JVM-only variables (``KAFKA_HEAP_OPTS``, ``KAFKA_JMX_PORT``, ...) are ignored rather than
turned into keys. The result is written to ``$HOURGLASS_FINAL_CONFIG_DIR/server.properties``
(readable by the broker's user only: it may hold secrets) and the broker is started on it as
``hourglass serve FILE --ready-file $HOURGLASS_READY_FILE``; extra arguments are passed through
(``--log-format json``). The ready file (``/tmp/hourglass.ready``, removed before the start so a
restarted container never shows the last run's) lists every listener the broker bound; the
image's HEALTHCHECK (``hourglass probe --ready-file``) probes those, so it follows whatever
listeners the configuration names.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

DEFAULT_CLUSTER_ID = "5L6g3nShT-eMCtK--X86sw"   # apache/kafka's configureDefaults
DATA_DIR = "/var/lib/hourglass"
DEFAULT_CONFIG = "/etc/hourglass/docker/server.properties"
MOUNTED_CONFIG_DIR = "/mnt/shared/config"
FINAL_CONFIG_DIR = "/etc/hourglass"
READY_FILE = "/tmp/hourglass.ready"   # the HEALTHCHECK reads it

# KafkaDockerWrapper's ExcludeServerPropsEnv (its "KAFKA_HEAP_OPT" is kept as written there),
# plus variables only kafka-run-class.sh and the image's launch script read.
EXCLUDED = frozenset({
    "KAFKA_VERSION", "KAFKA_HEAP_OPT", "KAFKA_LOG4J_OPTS", "KAFKA_OPTS", "KAFKA_JMX_OPTS",
    "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_GC_LOG_OPTS", "KAFKA_LOG4J_ROOT_LOGLEVEL",
    "KAFKA_LOG4J_LOGGERS", "KAFKA_TOOLS_LOG4J_LOGLEVEL", "KAFKA_JMX_HOSTNAME",
    # Hourglass: JVM/launcher settings, not broker keys
    "KAFKA_HEAP_OPTS", "KAFKA_JMX_PORT", "KAFKA_DEBUG", "KAFKA_GC_LOG_ENABLED",
})
HOURGLASS_PREFIX = "HOURGLASS_CFG_"


class EntrypointError(RuntimeError):
    """What the image's configure script would stop on (it exits 1)."""


def key_from_env(name: str) -> str:
    """KafkaDockerWrapper's conversion of an environment variable name to a key."""
    if name.startswith(HOURGLASS_PREFIX):
        name = name[len(HOURGLASS_PREFIX):]
    return (name.replace("KAFKA_", "").lower().replace("_", ".")
            .replace("...", "-").replace("..", "_"))


def env_keys(env: dict[str, str]) -> dict[str, str]:
    """The keys the environment sets (steps 2-4), in variable-name order."""
    env = dict(env)
    roles = env.get("KAFKA_PROCESS_ROLES", "")
    if roles == "controller":
        if env.get("KAFKA_ADVERTISED_LISTENERS"):
            raise EntrypointError("KAFKA_ADVERTISED_LISTENERS is not supported on a KRaft controller.")
        env.pop("KAFKA_ADVERTISED_LISTENERS", None)
    if not env.get("KAFKA_LISTENERS") and roles != "controller" and env.get("KAFKA_ADVERTISED_LISTENERS"):
        env["KAFKA_LISTENERS"] = re.sub(r"://[^:]*:", "://0.0.0.0:", env["KAFKA_ADVERTISED_LISTENERS"])
    out = {}
    for name in sorted(env):
        if (name.startswith("KAFKA_") and name not in EXCLUDED) or \
                (name.startswith(HOURGLASS_PREFIX) and len(name) > len(HOURGLASS_PREFIX)):
            out[key_from_env(name)] = env[name]
    return out


HTTP_SERVICES = (("schema.registry.listeners", "http://0.0.0.0:8081"), ("console.listeners", "http://0.0.0.0:8080"))


def render(env: dict[str, str], mounted_dir: str = MOUNTED_CONFIG_DIR,
           default_config: str = DEFAULT_CONFIG) -> str:
    """The final ``server.properties`` text for this environment (steps 1-6)."""
    from_env = env_keys(env)
    mounted = Path(mounted_dir) / "server.properties"
    parts = []
    if mounted.exists():
        parts.append(mounted.read_text())
    elif not from_env and Path(default_config).exists():
        parts.append(Path(default_config).read_text())
    parts.append("".join(f"{k}={v}\n" for k, v in from_env.items()))
    text = "\n".join(parts)
    keys = set(_keys(text))
    extra = []
    if "log.dirs" not in keys and "log.dir" not in keys:
        extra.append(f"log.dirs={DATA_DIR}")
    # every interface of the container: only a published port reaches them from outside
    for key, default in HTTP_SERVICES:
        if key not in keys:
            extra.append(f"{key}={default}")
    if env.get("CLUSTER_ID") or "cluster.id" not in keys:
        extra.append(f"cluster.id={env.get('CLUSTER_ID') or DEFAULT_CLUSTER_ID}")
    if extra:
        text += "\n# set by the Hourglass entrypoint\n" + "\n".join(extra) + "\n"
    return text


def _keys(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and line[0] not in "#!":
            out.append(re.split(r"\s*[=:\s]\s*", line, maxsplit=1)[0])
    return out


def command(config_file: str, argv: list[str], ready_file: str | None = None) -> list[str]:
    """``serve`` on the rendered file, with the ready file unless the arguments name one."""
    ready = [] if ready_file is None or any(a == "--ready-file" or a.startswith("--ready-file=") for a in argv) \
        else ["--ready-file", ready_file]
    return [sys.executable, "-m", "broker", "serve", config_file, *ready, *argv]


def write_config(env: dict[str, str]) -> Path:
    """Render this environment's configuration and write it (readable by the broker's user only:
    it may hold secrets); returns its path. Raises EntrypointError as the configure step would."""
    text = render(env, env.get("HOURGLASS_MOUNTED_CONFIG_DIR", MOUNTED_CONFIG_DIR),
                  env.get("HOURGLASS_DEFAULT_CONFIG", DEFAULT_CONFIG))
    final_dir = Path(env.get("HOURGLASS_FINAL_CONFIG_DIR", FINAL_CONFIG_DIR))
    final_dir.mkdir(parents=True, exist_ok=True)
    final = final_dir / "server.properties"
    fd = os.open(final, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return final


def launch(env: dict[str, str], final: Path, argv: list[str]) -> None:
    """exec the broker on ``final`` (never returns)."""
    ready = env.get("HOURGLASS_READY_FILE", READY_FILE)
    cmd = command(str(final), argv, ready)
    if ready in cmd:  # ours, not one the arguments name
        try:
            os.unlink(ready)
        except FileNotFoundError:
            pass
    os.execv(cmd[0], cmd)


def main(argv: list[str]) -> int:
    """No mode: configure, then launch (apache/kafka's ``/etc/kafka/docker/run``).
    ``--configure``: only write the configuration (Confluent's ``/etc/confluent/docker/configure``,
    which Testcontainers' modules extend with lines of their own before the launch);
    ``--launch``: only start the broker on what the configure step wrote (Confluent's ``launch``)."""
    env = dict(os.environ)
    mode = argv[0] if argv[:1] and argv[0] in ("--configure", "--launch") else None
    if mode:
        argv = argv[1:]
    if mode == "--launch":
        final = Path(env.get("HOURGLASS_FINAL_CONFIG_DIR", FINAL_CONFIG_DIR)) / "server.properties"
        if not final.exists():
            print(f"{final} does not exist: run the configure step first", file=sys.stderr)
            return 1
    else:
        try:
            final = write_config(env)
        except EntrypointError as exc:
            print(exc, file=sys.stderr)
            return 1
        if mode == "--configure":
            return 0
    launch(env, final, argv)
    return 0  # not reached


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
