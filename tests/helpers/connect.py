"""Kafka Connect workers and MirrorMaker 2 as subprocesses, against any Kafka-protocol broker.

``ConnectWorker`` runs ``org.apache.kafka.connect.cli.ConnectDistributed`` (distributed mode)
from the jars ``make jvm`` resolved into ``~/.cache/hourglass/connect-<connect.version>/libs``,
with ``plugin.path`` at ``.../plugins`` (Debezium's PostgreSQL connector as Debezium ships
it). Its REST API listens on a free loopback port; ``create``, ``status``, ``wait_running``
and friends speak to it over HTTP as a user's ``curl`` would. Its log goes to
``<work_dir>/connect.log``.

``MirrorMakerProcess`` runs ``org.apache.kafka.connect.mirror.MirrorMaker`` (MirrorMaker 2's
dedicated mode) on an ``mm2.properties``.

Both stop by PID: SIGTERM for a graceful shutdown, SIGKILL of the process group for a crash.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Mapping

from tests.helpers import jvm
from tests.helpers.kafka_oracle import free_port
from tests.helpers.process import ServerProcess

READY_TIMEOUT_S = 120.0  # a cold JVM with Connect's plugin scan, on a busy 2-core machine
STOP_TIMEOUT_S = 30.0

LOG4J_LEVELS = {"org.reflections": "ERROR", "org.apache.kafka.clients": "WARN",
                "org.apache.kafka.common.config.AbstractConfig": "WARN"}
LOG4J_PATTERN = "[%d] %p %X{connector.context}%m (%c:%L)%n"


def connect_home() -> Path:
    return jvm.cache_dir() / f"connect-{jvm.version('connect')}"


def connect_libs() -> Path:
    return jvm.libs(f"connect-{jvm.version('connect')}")


def plugin_path() -> Path:
    d = connect_home() / "plugins"
    if not (d / "debezium-connector-postgres").is_dir():
        raise RuntimeError(f"{d} has no Debezium connector: run `make jvm`")
    return d


def _value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def write_properties(path: Path, props: Mapping[str, object]) -> Path:
    # Java properties: backslashes and the separators in values must be escaped
    def esc(s: str) -> str:
        return s.replace("\\", "\\\\")
    path.write_text("".join(f"{k}={esc(_value(v))}\n" for k, v in props.items()))
    return path


class ConnectError(RuntimeError):
    """A REST call answered with an error; ``status`` and ``body`` are Connect's answer."""

    def __init__(self, status: int, body: object, what: str):
        super().__init__(f"{what}: HTTP {status}: {body}")
        self.status = status
        self.body = body


class _JvmProcess(ServerProcess):
    """A JVM main class in its own process group, its output appended to ``log_path``."""

    name = "jvm"
    STOP_TIMEOUT_S = STOP_TIMEOUT_S
    LOG_TAIL_CHARS = 12000

    def __init__(self, work_dir: Path, heap: str):
        super().__init__()
        self.work_dir = Path(work_dir)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.work_dir / f"{self.name}.log"
        self.heap = heap

    def _spawn(self, main_class: str, *args: str, jvm_opts: tuple[str, ...] = ()) -> int:
        """Start the JVM; returns the log's size before it, to look for lines it writes."""
        log4j = self.work_dir / "log4j2.properties"
        log4j.write_text(jvm.log4j2_properties(self.log_path, LOG4J_LEVELS, LOG4J_PATTERN))
        mark = self.log_path.stat().st_size if self.log_path.exists() else 0
        classpath = jvm.classpath(connect_libs())
        share, self.class_share_dump = jvm.class_share(self.name, classpath)
        argv = [jvm.java(), "-Xms128m", f"-Xmx{self.heap}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={log4j}",
                *share, *jvm_opts, "-cp", classpath, main_class, *args]
        with open(self.work_dir / f"{self.name}.stdout", "ab") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         cwd=self.work_dir, start_new_session=True)
        return mark

    @property
    def kind(self) -> str:  # what log_tail calls the log
        return self.name

    def log_paths(self) -> list[Path]:
        """log4j's file first (``_spawn``'s mark is a position in it), then the JVM's stdout."""
        return [self.log_path, self.work_dir / f"{self.name}.stdout"]


class ConnectWorker(_JvmProcess):
    """One distributed-mode Connect worker on ``bootstrap``, REST on ``url``.

    Invariants: workers with the same ``group_id`` (and the same internal topics) form one
    Connect cluster; the REST port and ``work_dir`` stay the same across ``restart()``.
    """

    name = "connect"

    def __init__(self, work_dir: str | os.PathLike, bootstrap: str, *, group_id: str = "connect-cluster",
                 overrides: Mapping[str, object] | None = None, topic_prefix: str | None = None,
                 heap: str = "512m", ready_timeout: float = READY_TIMEOUT_S):
        super().__init__(Path(work_dir), heap)
        self.bootstrap = bootstrap
        self.group_id = group_id
        prefix = topic_prefix if topic_prefix is not None else group_id
        self.config_topic = f"{prefix}-configs"
        self.offset_topic = f"{prefix}-offsets"
        self.status_topic = f"{prefix}-status"
        self.overrides = dict(overrides or {})
        self.ready_timeout = ready_timeout
        self.port = free_port()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def properties(self) -> dict[str, object]:
        return {
            "bootstrap.servers": self.bootstrap,
            "group.id": self.group_id,
            "config.storage.topic": self.config_topic,
            "offset.storage.topic": self.offset_topic,
            "status.storage.topic": self.status_topic,
            # one broker: the worker creates its internal topics with one replica
            "config.storage.replication.factor": 1,
            "offset.storage.replication.factor": 1,
            "status.storage.replication.factor": 1,
            "offset.storage.partitions": 5,
            "status.storage.partitions": 2,
            "key.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "key.converter.schemas.enable": "false",
            "value.converter.schemas.enable": "false",
            "listeners": f"http://127.0.0.1:{self.port}",
            "rest.advertised.host.name": "127.0.0.1",
            "rest.advertised.port": self.port,
            "plugin.path": str(plugin_path()),
            # every plugin here ships ServiceLoader manifests: skip the ~20 s reflection scan
            "plugin.discovery": "service_load",
            # tests wait for commits and for a departed worker's tasks: seconds, not minutes
            "offset.flush.interval.ms": 1000,
            "scheduled.rebalance.max.delay.ms": 5000,
            "task.shutdown.graceful.timeout.ms": 5000,
            **self.overrides,
        }

    def start(self) -> "ConnectWorker":
        if self.running:
            raise RuntimeError("worker already running")
        config = write_properties(self.work_dir / "worker.properties", self.properties())
        mark = self._spawn("org.apache.kafka.connect.cli.ConnectDistributed", str(config))
        deadline = time.monotonic() + self.ready_timeout
        while True:
            # the REST server answers before the herder joined its group: wait for both
            if "Herder started" in self.log_text(mark) and self._answers():
                return self
            rc = self.proc.poll()
            if rc is not None:
                self.exit_codes.append(rc)
                self.proc = None
                raise RuntimeError(f"connect worker exited with {rc} before it was ready\n{self.log_tail()}")
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"connect worker not ready within {self.ready_timeout:.0f} s\n{self.log_tail()}")
            time.sleep(0.2)

    def restart(self) -> "ConnectWorker":
        self.stop()
        return self.start()

    def _answers(self) -> bool:
        try:
            status, _ = self.request("GET", "/connectors", timeout=5)
            return status == 200
        except OSError:
            return False

    # ------------------------------------------------------------------ REST

    def request(self, method: str, path: str, body: object = None, timeout: float = 60.0) -> tuple[int, object]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                raw = resp.read()
                return resp.status, (json.loads(raw) if raw else None)
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                parsed = json.loads(raw) if raw else None
            except ValueError:
                parsed = raw.decode(errors="replace")
            return exc.code, parsed

    def call(self, method: str, path: str, body: object = None, *, ok=(200, 201, 202, 204),
             timeout: float = 60.0) -> object:
        """A REST call that must succeed; Connect's 409 (a rebalance in progress) is retried."""
        deadline = time.monotonic() + timeout
        while True:
            status, answer = self.request(method, path, body, timeout=timeout)
            if status in ok:
                return answer
            if status == 409 and time.monotonic() < deadline:
                time.sleep(0.5)
                continue
            raise ConnectError(status, answer, f"{method} {path}")

    def put_connector(self, name: str, config: Mapping[str, object]) -> dict:
        """Create or update ``name`` (``PUT /connectors/<name>/config``)."""
        return self.call("PUT", f"/connectors/{name}/config", {k: _value(v) for k, v in config.items()})

    def create_connector(self, name: str, config: Mapping[str, object]) -> dict:
        """``POST /connectors``, as the quick-start guides show it."""
        return self.call("POST", "/connectors", {"name": name, "config": {k: _value(v) for k, v in config.items()}})

    def status(self, name: str) -> dict | None:
        status, answer = self.request("GET", f"/connectors/{name}/status")
        return answer if status == 200 else None

    def wait_running(self, name: str, tasks: int = 1, timeout: float = 120.0) -> dict:
        """Until the connector and ``tasks`` tasks are RUNNING; a FAILED one raises with its trace."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            last = self.status(name)
            if last is not None:
                states = [t["state"] for t in last.get("tasks", [])]
                failed = [t for t in [last["connector"], *last.get("tasks", [])] if t["state"] == "FAILED"]
                if failed:
                    raise RuntimeError(f"{name} failed: {json.dumps(failed, indent=1)[:6000]}")
                if last["connector"]["state"] == "RUNNING" and len(states) >= tasks and all(s == "RUNNING" for s in states):
                    return last
            time.sleep(0.3)
        raise TimeoutError(f"{name} not running with {tasks} tasks within {timeout:.0f} s: {last}\n{self.log_tail()}")

    def delete_connector(self, name: str) -> None:
        self.call("DELETE", f"/connectors/{name}")

    def offsets(self, name: str) -> dict:
        """``GET /connectors/<name>/offsets`` (KIP-875): the committed source offsets."""
        return self.call("GET", f"/connectors/{name}/offsets")

    def __enter__(self) -> "ConnectWorker":
        if not self.running:
            self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<ConnectWorker {'running' if self.running else 'stopped'} {self.url} group={self.group_id}>"


class MirrorMakerProcess(_JvmProcess):
    """MirrorMaker 2 in dedicated mode (``connect-mirror-maker.sh mm2.properties``)."""

    name = "mirror-maker"

    def __init__(self, work_dir: str | os.PathLike, config: Mapping[str, object] | str | os.PathLike, *,
                 heap: str = "512m", clusters: tuple[str, ...] = ()):
        super().__init__(Path(work_dir), heap)
        if isinstance(config, Mapping):
            self.config_path = write_properties(self.work_dir / "mm2.properties", config)
        else:
            self.config_path = Path(config)
        self.clusters = clusters

    def start(self) -> "MirrorMakerProcess":
        if self.running:
            raise RuntimeError("MirrorMaker already running")
        args = [str(self.config_path)]
        if self.clusters:
            args += ["--clusters", *self.clusters]
        self._spawn("org.apache.kafka.connect.mirror.MirrorMaker", *args)
        return self

    def __repr__(self) -> str:
        return f"<MirrorMakerProcess {'running' if self.running else 'stopped'} {self.config_path}>"


# ---------------------------------------------------------------------- reading topics back


def read_topic(bootstrap: str, topic: str, *, isolation: str = "read_committed", timeout: float = 60.0,
               extra: Mapping[str, object] | None = None) -> list:
    """Every record of ``topic`` now below its end (last stable offset when read_committed),
    all partitions, as confluent-kafka ``Message`` objects in partition then offset order."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "hourglass-tests-reader", "enable.auto.commit": False,
                  "isolation.level": isolation, **(extra or {})})
    try:
        md = c.list_topics(topic, timeout=30)
        parts = sorted(md.topics[topic].partitions)
        ends = {}
        for p in parts:
            _, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
            ends[p] = hi
        c.assign([TopicPartition(topic, p, 0) for p in parts])
        got: dict[int, list] = {p: [] for p in parts}
        done = {p for p in parts if ends[p] == 0}
        deadline = time.monotonic() + timeout
        while len(done) < len(parts):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}: read {[len(v) for v in got.values()]} of ends {ends}")
            m = c.poll(0.5)
            if m is None:
                # read_committed stops at the last stable offset, which may be below the high
                # watermark: a partition is done once its position reached that end
                for tp in c.position([TopicPartition(topic, p) for p in parts if p not in done]):
                    if tp.offset >= ends[tp.partition]:
                        done.add(tp.partition)
                continue
            if m.error():
                raise RuntimeError(str(m.error()))
            got[m.partition()].append(m)
            if m.offset() + 1 >= ends[m.partition()]:
                done.add(m.partition())
        return [m for p in parts for m in got[p]]
    finally:
        c.close()


def wait_for_records(bootstrap: str, topic: str, count: int, *, timeout: float = 120.0,
                     isolation: str = "read_committed") -> list:
    """``read_topic`` until it holds at least ``count`` records."""
    deadline = time.monotonic() + timeout
    last: list = []
    while time.monotonic() < deadline:
        try:
            last = read_topic(bootstrap, topic, isolation=isolation)
        except Exception:  # the topic may not exist yet
            last = []
        if len(last) >= count:
            return last
        time.sleep(0.5)
    raise TimeoutError(f"{topic}: {len(last)} of {count} records within {timeout:.0f} s")
