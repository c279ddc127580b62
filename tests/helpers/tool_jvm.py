"""Kafka's command-line tools run in one long-lived JVM per test process (``tests/java/ToolRunner``).

A tool started in a JVM of its own costs about two seconds of CPU before its first request
(class loading, the admin client's JIT), and the suite runs hundreds of them: every Kafka
oracle's storage format, the differential tool tests, kafka-features' steps. ``run`` gives the
same ``subprocess.CompletedProcess`` (exit code, stdout, stderr) as running the tool alone.

Invariants: one run at a time per JVM (runs asked for at once get JVMs of their own); a run
past its timeout kills the JVM (the next run starts another) and raises ``subprocess.TimeoutExpired`` as ``subprocess.run`` would;
a tool that ends the JVM itself (``System.exit`` rather than Kafka's ``Exit``) raises
RuntimeError: it is not run again, since a second run of a tool that writes is not the answer
to the first.
"""
from __future__ import annotations

import atexit
import base64
import os
import queue
import subprocess
import threading
from urllib.parse import quote

from tests.helpers import java, jvm

JVM_OPTS = ("-Xmx512m", "-Dlog4j2.level=WARN", "-XX:+UseSerialGC")


class _Runner:
    def __init__(self, classpath: str):
        java.ensure_compiled()
        # ToolRunner lives in the harness's classes, which the harness's own classpath holds already
        harness = str(java.CLASSES_DIR)
        cp = classpath if harness in classpath.split(os.pathsep) else os.pathsep.join([harness, classpath])
        self.proc = subprocess.Popen([jvm.java(), *JVM_OPTS, "-cp", cp, "ToolRunner"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, encoding="utf-8")
        self.answers: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, name="tool-jvm", daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.answers.put(line)
        self.answers.put(None)  # the JVM ended

    def call(self, main_class: str, args: list[str], timeout: float):
        """(exit code, stdout, stderr), or None when the JVM ended during the run."""
        self.proc.stdin.write("\t".join(quote(f, safe="") for f in [main_class, *args]) + "\n")
        self.proc.stdin.flush()
        line = self.answers.get(timeout=timeout)  # queue.Empty past the timeout
        if line is None:
            return None
        code, out, err = line.rstrip("\n").split("\t")
        return int(code), base64.b64decode(out).decode("utf-8", "replace"), base64.b64decode(err).decode("utf-8", "replace")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


_lock = threading.Lock()
_idle: dict[str, list[_Runner]] = {}  # classpath -> runners waiting for a run
_all: list[_Runner] = []


@atexit.register
def _stop_all() -> None:
    for r in _all:
        r.kill()


def _take(classpath: str) -> _Runner:
    with _lock:
        idle = _idle.setdefault(classpath, [])
        while idle:
            r = idle.pop()
            if r.proc.poll() is None:
                return r
        r = _Runner(classpath)
        _all.append(r)
        return r


def run(main_class: str, *args: str, classpath: str, timeout: float = 120.0,
        check: bool = True) -> subprocess.CompletedProcess:
    """Run one tool (its main class, on ``classpath``) as ``subprocess.run(capture_output=True,
    text=True)`` runs ``java -cp classpath main_class args``. Runs asked for at once (from
    several threads) each get a JVM."""
    argv = [jvm.java(), *JVM_OPTS, "-cp", classpath, main_class, *args]
    runner = _take(classpath)
    try:
        answer = runner.call(main_class, list(args), timeout)
    except queue.Empty:
        runner.kill()
        raise subprocess.TimeoutExpired(argv, timeout) from None
    except OSError:  # the JVM was gone before the request
        answer = None
    if answer is None:  # not run again: a second run of a tool that writes is not the first's answer
        runner.kill()
        raise RuntimeError(f"{main_class} {list(args)} ended its tool JVM (exit code {runner.proc.returncode}): "
                           "a tool run here ends with Kafka's Exit.exit or ToolRunner.exit, never System.exit")
    with _lock:
        _idle[classpath].append(runner)
    code, out, err = answer
    if check and code != 0:
        raise subprocess.CalledProcessError(code, argv, out, err)
    return subprocess.CompletedProcess(argv, code, out, err)
