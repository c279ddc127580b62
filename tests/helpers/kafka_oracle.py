"""Apache Kafka itself as a subprocess: the oracle our answers are compared with.

``KafkaProcess`` runs a single-node KRaft broker+controller (``process.roles=broker,controller``)
from the jars ``make jvm`` resolved (``~/.cache/hourglass/kafka-<kafka.version>/libs``, the
version named once in ``tests/jvm/pom.xml``). Its storage is formatted by Kafka's own
``StorageTool``, its log goes to ``<data_dir>.kafka.log`` (log4j2), and it is stopped by PID:
SIGTERM for a controlled shutdown, SIGKILL of the process group for a crash.

The interface mirrors ``tests.helpers.broker.BrokerProcess`` (``bootstrap``, ``listeners``,
``start``/``stop``/``kill``/``restart``, ``log_tail``, ``data_dir`` as ``log.dirs``), so a test
can run the same scenario against both. ``overrides`` are Kafka config keys, laid over
defaults that suit one node (replication factors of 1, no initial rebalance delay).

Extra listeners: ``listeners={"SASL_PLAINTEXT": "SASL_PLAINTEXT", "SSL": "SSL"}`` (name ->
security protocol) bind more loopback ports beside ``PLAINTEXT``; ``listeners[name]`` is then
their ``host:port``. Their SASL/SSL settings go in ``overrides`` with Kafka's own keys
(``listener.name.sasl_plaintext.plain.sasl.jaas.config``, ``ssl.keystore.location``, ...).
"""
from __future__ import annotations

import base64
import os
import random
import socket
import subprocess
import time
import uuid
from pathlib import Path
from typing import Mapping

from tests.helpers import jvm, tool_jvm
from tests.helpers.process import ServerProcess

READY_TIMEOUT_S = 90.0  # a cold JVM on a busy 2-core machine
STOP_TIMEOUT_S = 30.0
NODE_ID = 1

# One node: every internal topic with one replica, and no delays a test would wait out.
DEFAULTS: dict[str, object] = {
    "offsets.topic.replication.factor": 1,
    "offsets.topic.num.partitions": 1,
    "transaction.state.log.replication.factor": 1,
    "transaction.state.log.min.isr": 1,
    "transaction.state.log.num.partitions": 1,
    "share.coordinator.state.topic.replication.factor": 1,
    "share.coordinator.state.topic.min.isr": 1,
    "group.initial.rebalance.delay.ms": 0,
    "num.partitions": 1,
    "auto.create.topics.enable": "true",
}

LOG4J_LEVELS = {"kafka": "INFO", "state.change.logger": "WARN"}


class KafkaStartError(RuntimeError):
    """Kafka exited or did not become ready in time; the message carries its log."""


def kafka_libs() -> Path:
    return jvm.libs(f"kafka-{jvm.version('kafka')}")


def kafka_classpath() -> str:
    return jvm.classpath(kafka_libs())


def random_cluster_id() -> str:
    """A Kafka ``Uuid`` in its base64url form (as ``kafka-storage random-uuid`` prints it)."""
    while True:
        s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not s.startswith("-"):  # Kafka's Uuid.randomUuid avoids ids that read as options
            return s


_GIVEN: set[int] = set()
_PICK = random.SystemRandom()  # never the global generator, which tests seed


def _port_range() -> range:
    """Ports below the kernel's ephemeral range (where outgoing connections take their local
    port), split between pytest-xdist workers so two workers never pick the same one."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    start = max(low - 12000, 1024)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    if worker.startswith("gw") and worker[2:].isdigit() and count > 1:
        width = (low - start) // count
        start += int(worker[2:]) % count * width
        return range(start, start + width)
    return range(start, low)


def free_port() -> int:
    """A loopback port free now, for a server a test starts, never handed out twice by this
    process. Picked below the ephemeral range: a port from binding port 0 is free only until
    the next outgoing connection takes it as its local port, and a broker started on it then
    fails "Address already in use" (seen in parallel runs)."""
    ports = _port_range()
    for _ in range(2000):
        port = _PICK.choice(ports)
        if port in _GIVEN:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _GIVEN.add(port)
        return port
    raise RuntimeError(f"no free port in {ports}")


def _value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def run_tool(main_class: str, *args: str, timeout: float = 120.0, check: bool = True,
             jvm_opts: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """Run one of Kafka's command line tools (its main class) on the oracle's classpath: in the
    test process's tool JVM (tests/helpers/tool_jvm.py), or alone when ``jvm_opts`` are given."""
    if not jvm_opts:
        return tool_jvm.run(main_class, *args, classpath=kafka_classpath(), timeout=timeout, check=check)
    cmd = [jvm.java(), "-Xmx512m", "-Dlog4j2.level=WARN", *jvm_opts, "-cp", kafka_classpath(), main_class, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=check)


class KafkaProcess(ServerProcess):
    """One Apache Kafka node (KRaft, broker+controller) on loopback ports, data in ``data_dir``.

    Invariants: while ``running``, ``bootstrap`` answers Kafka requests; ``data_dir`` (the
    ``log.dirs``), the cluster id and the ports stay the same across ``restart()``.
    """

    kind = "kafka"
    STOP_TIMEOUT_S = STOP_TIMEOUT_S

    def __init__(self, data_dir: str | os.PathLike, overrides: Mapping[str, object] | None = None, *,
                 listeners: Mapping[str, str] | None = None, heap: str = "768m",
                 jvm_opts: tuple[str, ...] = (), ready_timeout: float = READY_TIMEOUT_S,
                 extra_classpath: tuple[str, ...] = ()):
        super().__init__()
        self.extra_classpath = tuple(str(p) for p in extra_classpath)  # plugins (tests/java/classes)
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.home = self.data_dir.with_name(self.data_dir.name + ".kafka")
        self.home.mkdir(parents=True, exist_ok=True)
        self.log_path = self.data_dir.with_name(self.data_dir.name + ".kafka.log")
        self.overrides = dict(overrides or {})
        self.extra_listeners = dict(listeners or {})
        self.heap = heap
        self.jvm_opts = tuple(jvm_opts)
        self.ready_timeout = ready_timeout
        self.cluster_id = random_cluster_id()
        self.host = "127.0.0.1"
        self.port: int | None = None
        self.controller_port: int | None = None
        self.listeners: dict[str, str] = {}
        self._formatted = False

    # ------------------------------------------------------------------ config

    @property
    def bootstrap(self) -> str:
        if self.port is None:
            raise RuntimeError("kafka not started")
        return f"{self.host}:{self.port}"

    def _ports(self) -> None:
        if self.port is None:
            self.port = free_port()
            self.controller_port = free_port()
            self.listeners = {"PLAINTEXT": f"{self.host}:{self.port}"}
            for name in self.extra_listeners:
                self.listeners[name] = f"{self.host}:{free_port()}"

    def properties(self) -> dict[str, str]:
        self._ports()
        names = {**{"PLAINTEXT": "PLAINTEXT"}, **self.extra_listeners}
        listeners = [f"{n}://{self.listeners[n]}" for n in names]
        props: dict[str, object] = {
            "process.roles": "broker,controller",
            "node.id": NODE_ID,
            "controller.quorum.voters": f"{NODE_ID}@{self.host}:{self.controller_port}",
            "controller.listener.names": "CONTROLLER",
            "listeners": ",".join(listeners + [f"CONTROLLER://{self.host}:{self.controller_port}"]),
            "advertised.listeners": ",".join(listeners),
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": ",".join(
                [f"{n}:{p}" for n, p in names.items()] + ["CONTROLLER:PLAINTEXT"]),
            "log.dirs": str(self.data_dir),
            **DEFAULTS,
            **self.overrides,
        }
        return {k: _value(v) for k, v in props.items()}

    def _write_config(self) -> Path:
        path = self.home / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in self.properties().items()))
        (self.home / "log4j2.properties").write_text(jvm.log4j2_properties(self.log_path, LOG4J_LEVELS))
        return path

    def format_storage(self) -> None:
        """Kafka's own ``kafka-storage format`` over ``data_dir`` (once, before the first start)."""
        config = self._write_config()
        r = run_tool("kafka.tools.StorageTool", "format", "-t", self.cluster_id, "-c", str(config),
                     "--ignore-formatted", check=False)
        if r.returncode != 0:
            raise KafkaStartError(f"kafka-storage format failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
        self._formatted = True

    # ------------------------------------------------------------------ lifecycle

    def argv(self, config: Path) -> list[str]:
        classpath = os.pathsep.join([kafka_classpath(), *self.extra_classpath])
        share, self.class_share_dump = jvm.class_share("kafka", classpath)
        return [jvm.java(), "-Xms256m", f"-Xmx{self.heap}", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                "-Djava.awt.headless=true",
                f"-Dlog4j2.configurationFile={self.home / 'log4j2.properties'}",
                *share, *self.jvm_opts, "-cp", classpath, "kafka.Kafka", str(config)]

    def start(self) -> "KafkaProcess":
        if self.running:
            raise RuntimeError("kafka already running")
        if not self._formatted:
            self.format_storage()
        config = self._write_config()
        mark = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.home / "stdout.log", "ab") as out:
            self.proc = subprocess.Popen(self.argv(config), stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, cwd=self.home, start_new_session=True)
        deadline = time.monotonic() + self.ready_timeout
        while True:
            if self._started_since(mark) and self._answers():
                return self
            rc = self._exited_before_ready()
            if rc is not None:
                raise KafkaStartError(f"kafka exited with {rc} before it was ready\n{self.log_tail()}")
            if time.monotonic() > deadline:
                self._kill_group()
                self._reap()
                raise KafkaStartError(f"kafka not ready within {self.ready_timeout:.0f} s\n{self.log_tail()}")
            time.sleep(0.1)

    def _started_since(self, mark: int) -> bool:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(mark)
                return b"Kafka Server started" in f.read()
        except FileNotFoundError:
            return False

    def _answers(self) -> bool:
        try:
            with socket.create_connection((self.host, self.port), timeout=1.0):
                return True
        except OSError:
            return False

    def restart(self) -> "KafkaProcess":
        self.stop()
        return self.start()

    def log_paths(self) -> list[Path]:
        return [self.log_path, self.home / "stdout.log"]

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<KafkaProcess {state} {self.host}:{self.port} data={self.data_dir}>"
