"""Writes /etc/kafka/kafka.properties from the KAFKA_* environment with the apache/kafka image's
mapping (docker/entrypoint.py's env_keys, KafkaDockerWrapper's rules), log.dirs on the data dir."""
import os
import sys

sys.path.insert(0, "/opt/kafka")
from entrypoint import env_keys  # noqa: E402

keys = {"log.dirs": "/var/lib/kafka/data", **env_keys(dict(os.environ))}
with open("/etc/kafka/kafka.properties", "w") as f:
    f.write("".join(f"{k}={v}\n" for k, v in keys.items()))
