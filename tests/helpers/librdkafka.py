"""More than one librdkafka: confluent-kafka wheels bundle their librdkafka, so a second
release is installed (``pip install --target``, no dependencies) into a cache directory
shared by every checkout, and a scenario runs in a child process with that directory first
on its path. The release in the virtualenv (pyproject's ``[test]`` extras) is the other one.

``make confluent-kafka-versions`` installs them ahead of a test run; a test that needs one
that is missing installs it itself, so a fresh machine's ``make test`` gets it either way.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import confluent_kafka

# confluent-kafka releases whose bundled librdkafka the share-group tests run against, besides
# the virtualenv's own (2.16.x): 2.15 is the first with a GA ShareConsumer.
EXTRA_RELEASES = ("2.15.1",)
CACHE = Path(os.environ.get("HOURGLASS_CACHE", Path.home() / ".cache" / "hourglass"))
SCENARIOS = Path(__file__).resolve().parent.parent / "share" / "ck_scenarios.py"


def installed_release() -> str:
    v = confluent_kafka.version()
    return v if isinstance(v, str) else v[0]


def releases() -> list[str]:
    """The confluent-kafka releases to test: the extra ones, then the installed one."""
    return [r for r in EXTRA_RELEASES if r != installed_release()] + [installed_release()]


def release_dir(release: str) -> Path | None:
    """The directory to put first on a child's path for ``release`` (None: the virtualenv's
    own), installed on first use."""
    if release == installed_release():
        return None
    target = CACHE / f"confluent-kafka-{release}"
    if not (target / "confluent_kafka" / "__init__.py").exists():
        tmp = target.with_name(target.name + f".tmp{os.getpid()}")
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(tmp),
                        f"confluent-kafka=={release}"], check=True)
        try:
            tmp.rename(target)
        except OSError:  # another process installed it meanwhile
            subprocess.run(["rm", "-rf", str(tmp)], check=False)
    return target


def run_scenario(release: str, name: str, timeout: float = 300, **args) -> dict:
    """Run ``ck_scenarios.py <name>`` under ``release``; returns its JSON answer."""
    env = dict(os.environ)
    d = release_dir(release)
    if d is not None:
        env["PYTHONPATH"] = str(d)
    else:
        env.pop("PYTHONPATH", None)
    p = subprocess.run([sys.executable, str(SCENARIOS), name, json.dumps(args)], env=env, capture_output=True,
                       text=True, timeout=timeout)
    if p.returncode != 0:
        raise AssertionError(f"scenario {name} on confluent-kafka {release} failed:\n{p.stderr[-4000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


if __name__ == "__main__":  # make confluent-kafka-versions
    for r in releases():
        print(r, release_dir(r) or "(virtualenv)")
