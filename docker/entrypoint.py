#!/usr/bin/env python3
"""Container entrypoint: ``hourglass serve`` configured from server.properties and the
environment, the way Kafka's images do it.

- ``HOURGLASS_CONFIG`` (default ``/etc/hourglass/server.properties``) is the base file;
- every ``KAFKA_<KEY>`` or ``HOURGLASS_CFG_<KEY>`` variable overrides one key: the name after
  the prefix, lower-cased, ``_`` -> ``.`` and ``__`` -> ``_`` (``KAFKA_LOG_RETENTION_MS=1000``
  -> ``log.retention.ms=1000``), as Confluent's images map them;
- ``log.dirs`` defaults to the data volume ``/var/lib/hourglass``; ``listeners`` to
  ``PLAINTEXT://0.0.0.0:9092`` and ``advertised.listeners`` to ``PLAINTEXT://$HOSTNAME:9092``
  unless given;
- extra arguments are passed through (``docker run image --log-format json``).
"""
from __future__ import annotations

import os
import sys

PREFIXES = ("KAFKA_", "HOURGLASS_CFG_")
DEFAULT_CONFIG = "/etc/hourglass/server.properties"
DATA_DIR = "/var/lib/hourglass"


def key_from_env(name: str) -> str:
    return name.lower().replace("__", "\0").replace("_", ".").replace("\0", "_")


def command_from_env(env: dict, argv: list[str]) -> list[str]:
    cmd = ["hourglass", "serve"]
    config = env.get("HOURGLASS_CONFIG", DEFAULT_CONFIG)
    if config and os.path.exists(config):
        cmd += ["--config", config]
    overrides = {"log.dirs": DATA_DIR, "listeners": "PLAINTEXT://0.0.0.0:9092"}
    if env.get("HOSTNAME"):
        overrides["advertised.listeners"] = f"PLAINTEXT://{env['HOSTNAME']}:9092"
    for name, value in sorted(env.items()):
        for prefix in PREFIXES:
            if name.startswith(prefix) and len(name) > len(prefix):
                overrides[key_from_env(name[len(prefix):])] = value
    for k, v in overrides.items():
        cmd += ["--override", f"{k}={v}"]
    return cmd + list(argv)


if __name__ == "__main__":
    cmd = command_from_env(dict(os.environ), sys.argv[1:])
    os.execvp(cmd[0], cmd)
