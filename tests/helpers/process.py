"""What every server a test runs as a subprocess shares (our broker, Apache Kafka, ...): its
own process group, SIGTERM for a clean stop and SIGKILL of the whole group for a crash, every
exit status kept, and its log for failure reports.

Subclasses set ``proc`` when they start and name their log in ``log_paths()``.
"""
from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from tests.helpers import jvm


class ServerProcess:
    """Invariant: ``proc`` is the running process or None; ``exit_codes`` holds every exit seen,
    in order (negative: killed by that signal)."""

    kind = "server"
    STOP_TIMEOUT_S = 15.0
    LOG_TAIL_CHARS = 8000

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.exit_codes: list[int] = []
        self.class_share_dump: Path | None = None  # a JVM's class-data archive in the writing (jvm.class_share)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float | None = None) -> int:
        """SIGTERM and wait for the exit; past ``timeout`` the group is SIGKILLed. Returns the
        exit status."""
        if self.proc is None:
            return self.exit_codes[-1] if self.exit_codes else 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(self.STOP_TIMEOUT_S if timeout is None else timeout)
            except subprocess.TimeoutExpired:
                self._kill_group()
        return self._reap()

    def kill(self) -> int:
        """SIGKILL the whole process group (a crash: no shutdown code runs)."""
        if self.proc is None:
            return self.exit_codes[-1] if self.exit_codes else 0
        self._kill_group()
        return self._reap()

    def freeze(self) -> None:
        """SIGSTOP the whole process group: nothing it runs moves until ``thaw`` (or a kill, which
        a stopped process takes as any other), so a test can look at the state a kill would land in."""
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGCONT)

    def _kill_group(self) -> None:
        assert self.proc is not None
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()

    def _reap(self) -> int:
        assert self.proc is not None
        rc = self.proc.wait()
        # whatever the server spawned dies with it
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.exit_codes.append(rc)
        self.proc = None
        if self.class_share_dump is not None:
            jvm.settle_class_share(self.class_share_dump, rc)
            self.class_share_dump = None
        return rc

    def _exited_before_ready(self) -> int | None:
        """The exit status when the process has died (recorded, ``proc`` cleared), else None."""
        assert self.proc is not None
        rc = self.proc.poll()
        if rc is not None:
            self.exit_codes.append(rc)
            self.proc = None
        return rc

    # ------------------------------------------------------------------ diagnostics

    def log_paths(self) -> list[Path]:
        raise NotImplementedError

    def log_text(self, since: int = 0) -> str:
        """Every log's text, the first one's from byte ``since`` on (what came after a mark)."""
        parts = []
        for i, p in enumerate(self.log_paths()):
            try:
                with open(p, "rb") as f:
                    f.seek(since if i == 0 else 0)
                    parts.append(f.read().decode(errors="replace"))
            except FileNotFoundError:
                pass
        return "\n".join(parts)

    def log_tail(self, max_chars: int | None = None) -> str:
        text = self.log_text()
        max_chars = self.LOG_TAIL_CHARS if max_chars is None else max_chars
        if len(text) > max_chars:
            text = "...\n" + text[-max_chars:]
        return f"--- {self.kind} log ({self.log_paths()[0]}) ---\n{text}"

    def __enter__(self):
        if not self.running:
            self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self):
        raise NotImplementedError
