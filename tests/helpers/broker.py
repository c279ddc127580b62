"""A broker as a subprocess, for integration tests.

``BrokerProcess`` runs ``<cmd> serve --override listeners=PLAINTEXT://127.0.0.1:<port>
--override log.dirs=<data_dir> --ready-file <file> [--override k=v ...] [--config FILE]`` and
waits until the broker writes ``host:port`` to the ready file (it does so once it answers
requests). ``<cmd>`` is ``python -m broker`` unless ``$HOURGLASS_TEST_BROKER_CMD`` names another
command prefix (shell-split), e.g. ``python scripts/tansu_shim.py`` to check the tests
themselves against another Kafka-compatible broker.

Files: ``data_dir`` is exactly the broker's ``log.dirs`` (partition dirs, checkpoints), so tests
can read it as a Kafka data dir; the broker's stdout+stderr go to ``log_path`` and the ready
file to ``ready_path``, both beside ``data_dir`` (``<data_dir>.broker.log``,
``<data_dir>.ready``), never inside it. The log file is appended to across restarts.

The broker runs in its own process group: ``kill()`` SIGKILLs the whole group so no child
survives it; ``stop()`` sends SIGTERM to the broker and waits for a clean exit.
"""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterable, Mapping

from tests.helpers.process import ServerProcess

READY_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 15.0
REPO_ROOT = Path(__file__).resolve().parents[2]


class BrokerStartError(RuntimeError):
    """The broker exited or did not become ready in time; the message carries its log."""


def broker_command() -> list[str]:
    """The command prefix that starts a broker (before ``serve ...``)."""
    env = os.environ.get("HOURGLASS_TEST_BROKER_CMD")
    if env:
        return shlex.split(env)
    return [sys.executable, "-m", "broker"]


def _override_list(overrides: Mapping[str, object] | Iterable[str] | None) -> list[str]:
    if overrides is None:
        return []
    if isinstance(overrides, Mapping):
        return [f"{k}={_value(v)}" for k, v in overrides.items()]
    return [str(o) for o in overrides]


def _value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


class BrokerProcess(ServerProcess):
    """One broker subprocess bound to a loopback port, with its data in ``data_dir``.

    Invariants: while ``running``, ``bootstrap`` is the ``host:port`` the broker reported in
    its ready file; ``data_dir`` and the overrides stay the same across ``restart()``/``start()``.
    """

    kind = "broker"
    STOP_TIMEOUT_S = STOP_TIMEOUT_S

    def __init__(self, data_dir: str | os.PathLike, overrides: Mapping[str, object] | Iterable[str] | None = None,
                 *, config: str | os.PathLike | None = None, cmd: list[str] | None = None,
                 ready_timeout: float = READY_TIMEOUT_S, env: Mapping[str, str] | None = None):
        super().__init__()
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.data_dir.with_name(self.data_dir.name + ".broker.log")
        self.ready_path = self.data_dir.with_name(self.data_dir.name + ".ready")
        self.overrides = _override_list(overrides)
        self.config = str(config) if config is not None else None
        self.cmd = list(cmd) if cmd is not None else broker_command()
        self.ready_timeout = ready_timeout
        self.env = dict(env) if env is not None else None
        self.port: int | None = None
        self.host = "127.0.0.1"
        self.listeners: dict[str, str] = {}  # listener name -> host:port, from the ready file

    # ------------------------------------------------------------------ lifecycle

    @property
    def bootstrap(self) -> str:
        if self.port is None:
            raise RuntimeError("broker not started")
        return f"{self.host}:{self.port}"

    def argv(self, port: int) -> list[str]:
        args = [*self.cmd, "serve",
                "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                "--override", f"log.dirs={self.data_dir}",
                "--ready-file", str(self.ready_path)]
        if self.config is not None:
            args += ["--config", self.config]
        for o in self.overrides:
            args += ["--override", o]
        return args

    def start(self, port: int | None = None) -> "BrokerProcess":
        """Start the broker and wait until it is ready.

        ``port`` None reuses the previous port when there is one (so clients holding the old
        bootstrap reconnect), else binds port 0. If the old port cannot be had, falls back to 0.
        """
        if self.running:
            raise RuntimeError("broker already running")
        want = self.port if port is None else port
        try:
            self._start_once(want or 0)
        except BrokerStartError:
            if not want:
                raise
            self._start_once(0)  # the old port was taken meanwhile
        return self

    def _start_once(self, port: int) -> None:
        try:
            self.ready_path.unlink()
        except FileNotFoundError:
            pass
        env = dict(os.environ if self.env is None else self.env)
        # `python -m broker` must find the repo's packages whatever the cwd.
        env["PYTHONPATH"] = os.pathsep.join(p for p in [str(REPO_ROOT), env.get("PYTHONPATH", "")] if p)
        env.setdefault("PYTHONUNBUFFERED", "1")
        with open(self.log_path, "ab") as log:
            log.write(f"\n=== start {time.strftime('%H:%M:%S')}: {shlex.join(self.argv(port))}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(self.argv(port), stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, cwd=REPO_ROOT, env=env,
                                         start_new_session=True)
        deadline = time.monotonic() + self.ready_timeout
        while True:
            if self.ready_path.exists():
                lines = self.ready_path.read_text().split()
                if lines:
                    host, port_s = lines[0].rsplit(":", 1)
                    self.host = host if host not in ("", "0.0.0.0", "::") else "127.0.0.1"
                    self.port = int(port_s)
                    # every bound listener, NAME -> host:port (loopback for a wildcard host)
                    self.listeners = {}
                    for line in lines[1:]:
                        name, _, hp = line.partition("://")
                        h, _, p = hp.rpartition(":")
                        self.listeners[name] = f"{h if h not in ('', '0.0.0.0', '::') else '127.0.0.1'}:{p}"
                    return
            rc = self._exited_before_ready()
            if rc is not None:
                raise BrokerStartError(f"broker exited with {rc} before it was ready\n{self.log_tail()}")
            if time.monotonic() > deadline:
                self._kill_group()
                raise BrokerStartError(
                    f"broker not ready within {self.ready_timeout:.0f} s\n{self.log_tail()}")
            time.sleep(0.01)

    def restart(self, port: int | None = None, *, crash: bool = False) -> "BrokerProcess":
        """Clean stop (SIGTERM), or with ``crash`` a SIGKILL (no shutdown code runs), then start
        again on the same data dir (and port, if free)."""
        if crash:
            self.kill()
        else:
            self.stop()
        return self.start(port)

    def log_paths(self) -> list[Path]:
        return [self.log_path]

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<BrokerProcess {state} {self.host}:{self.port} data={self.data_dir}>"
