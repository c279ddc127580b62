"""Run the Java client harness (``tests/java/ClientHarness.java`` over kafka-clients 3.9.1).

``run_java(["produce", "--bootstrap", b, "--topic", "t", "--count", "10"])`` returns the JSON
lines the harness printed, as dicts. A non-zero exit raises ``JavaHarnessError`` (carrying
those lines and stderr) unless ``check=False``; error lines look like
``{"error": "InvalidTimestampException", "class": "org.apache...", "message": "..."}``.

Jars: ``$HOURGLASS_JARS`` or ``~/.cache/hourglass/jars`` (filled by ``make jars``). Classes:
``tests/java/classes`` (``make java-harness``); compiled here on demand when missing or older
than the source, under a file lock so parallel test workers compile once.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path

JAVA_DIR = Path(__file__).resolve().parents[1] / "java"
CLASSES_DIR = JAVA_DIR / "classes"
MAIN_CLASS = "ClientHarness"
JAR_NAMES = ["kafka-clients.jar", "slf4j-api.jar", "lz4-java.jar", "snappy-java.jar", "zstd-jni.jar",
             "jackson-databind.jar", "jackson-core.jar", "jackson-annotations.jar"]
JAVA_OPTS = ["-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"]


class JavaHarnessError(RuntimeError):
    def __init__(self, args: list[str], returncode: int, lines: list[dict], stderr: str):
        self.returncode = returncode
        self.lines = lines
        self.stderr = stderr
        errors = [l for l in lines if "error" in l]
        super().__init__(f"java harness {args[:1]} exited {returncode}: {errors or lines[-3:]}\n"
                         f"stderr tail:\n{stderr[-3000:]}")


def jar_dir() -> Path:
    env = os.environ.get("HOURGLASS_JARS")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "hourglass" / "jars"


def missing_jars() -> list[str]:
    d = jar_dir()
    return [str(d / j) for j in JAR_NAMES if not (d / j).is_file()]


def classpath(clients: str | None = None) -> str:
    """The harness's classes and kafka-clients 3.9.1 (the jars it compiles against), or with
    ``clients`` a later kafka-clients and its compression libraries from Apache Kafka's
    distribution in the JVM cache (``clients="4.4.0"``: ``~/.cache/hourglass/kafka-4.4.0/libs``,
    filled by ``make jvm``). The harness uses only API both versions have."""
    if clients is None:
        return os.pathsep.join([str(CLASSES_DIR)] + [str(jar_dir() / j) for j in JAR_NAMES])
    from tests.helpers import jvm
    libs = jvm.libs(f"kafka-{clients}")
    jars = [libs / f"kafka-clients-{clients}.jar"]
    for prefix in ("slf4j-api-", "lz4-java-", "snappy-java-", "zstd-jni-"):
        found = sorted(libs.glob(f"{prefix}*.jar"))
        if not found:
            raise RuntimeError(f"no {prefix}*.jar in {libs}: run `make jvm`")
        jars.append(found[-1])
    if not jars[0].is_file():
        raise RuntimeError(f"{jars[0]} missing: run `make jvm`")
    return os.pathsep.join([str(CLASSES_DIR)] + [str(j) for j in jars])


def _stale() -> bool:
    cls = CLASSES_DIR / f"{MAIN_CLASS}.class"
    if not cls.exists():
        return True
    built = cls.stat().st_mtime
    return any(src.stat().st_mtime > built for src in JAVA_DIR.glob("*.java"))


def ensure_compiled() -> None:
    """Compile the harness if its classes are missing or older than the sources."""
    if not _stale():
        return
    if shutil.which("javac") is None:
        raise RuntimeError("javac not found: run `make deps`")
    if missing_jars():
        raise RuntimeError(f"missing jars {missing_jars()}: run `make jars`")
    CLASSES_DIR.mkdir(parents=True, exist_ok=True)
    with open(CLASSES_DIR / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _stale():
            jars = os.pathsep.join(str(jar_dir() / j) for j in JAR_NAMES)
            subprocess.run(["javac", "-nowarn", "-encoding", "UTF-8", "--release", "17", "-cp", jars,
                            "-d", str(CLASSES_DIR), *map(str, sorted(JAVA_DIR.glob("*.java")))],
                           check=True, capture_output=True, text=True)


def run_java(cmd_args: list[str], *, check: bool = True, timeout: float = 90.0, clients: str | None = None) -> list[dict]:
    """Run one harness command (in a ToolRunner JVM that runs one after another); returns its
    JSON lines (non-JSON stdout lines are ignored).
    ``clients``: run it over that later kafka-clients (``classpath``)."""
    from tests.helpers import tool_jvm
    ensure_compiled()
    args = [str(a) for a in cmd_args]
    # in the test process's long-lived JVM for this classpath (tests/helpers/tool_jvm.py)
    proc = tool_jvm.run(MAIN_CLASS, *args, classpath=classpath(clients), timeout=timeout, check=False)
    lines = []
    for raw in proc.stdout.splitlines():
        raw = raw.strip()
        if raw.startswith("{"):
            lines.append(json.loads(raw))
    if check and proc.returncode != 0:
        raise JavaHarnessError(args, proc.returncode, lines, proc.stderr)
    return lines


class JavaProcess:
    """A harness command running in the background (``popen_java``): its JSON lines are
    collected by a reader thread as they are printed."""

    def __init__(self, args: list[str], clients: str | None = None):
        import threading
        self.args = args
        self.lines: list[dict] = []
        self._cond = threading.Condition()
        self.proc = subprocess.Popen(["java", *JAVA_OPTS, "-cp", classpath(clients), MAIN_CLASS, *args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._stderr: list[str] = []
        self._threads = [threading.Thread(target=self._read_stdout, daemon=True),
                         threading.Thread(target=lambda: self._stderr.extend(self.proc.stderr), daemon=True)]
        for t in self._threads:
            t.start()

    def _read_stdout(self) -> None:
        for raw in self.proc.stdout:
            raw = raw.strip()
            if raw.startswith("{"):
                with self._cond:
                    self.lines.append(json.loads(raw))
                    self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def wait_for(self, pred, timeout: float = 30.0) -> dict | None:
        """The first line satisfying ``pred`` (waiting up to ``timeout``), None if the process
        ended or the time ran out first."""
        import time
        deadline = time.monotonic() + timeout
        seen = 0
        with self._cond:
            while True:
                for line in self.lines[seen:]:
                    if pred(line):
                        return line
                seen = len(self.lines)
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._threads[0].is_alive()):
                    return None
                self._cond.wait(min(left, 0.2))

    def finish(self, timeout: float = 90.0) -> list[dict]:
        """Wait for exit; returns all lines, raising ``JavaHarnessError`` on a non-zero exit."""
        rc = self.proc.wait(timeout)
        for t in self._threads:
            t.join(5)
        if rc != 0:
            raise JavaHarnessError(self.args, rc, self.lines, "".join(self._stderr))
        return self.lines

    def send(self, line: str) -> None:
        """One command line on the process's stdin (``group-member``: "stop", "halt")."""
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def popen_java(cmd_args: list, *, clients: str | None = None) -> JavaProcess:
    """Start one harness command in the background (see ``JavaProcess``), over kafka-clients
    3.9.1 or the ``clients`` version (see ``classpath``)."""
    ensure_compiled()
    return JavaProcess([str(a) for a in cmd_args], clients)
