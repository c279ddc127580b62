"""What the benchmark steps read of the processes they start: when a broker first answers,
its CPU-seconds and RSS from /proc, and the ``name value unit`` figures a client prints."""
from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

# imported here, not in answered(): its first import would count in a measured start-up
from hourglass.cli.probe import probe

CLK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answered(proc: subprocess.Popen, port: int, t0: float, timeout: float) -> bool:
    """Polls ``port`` until it answers ApiVersions (True); False once ``proc`` has exited or
    ``timeout`` seconds have passed since ``t0`` (a ``time.perf_counter()`` reading). The
    2 ms between probes keeps the measured start-up time close to the real one."""
    while not probe("127.0.0.1", port, 0.5)[0]:
        if proc.poll() is not None or time.perf_counter() - t0 > timeout:
            return False
        time.sleep(0.002)
    return True


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK  # utime + stime


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def figures_in(stdout: str) -> dict[str, float]:
    """The ``name value ...`` lines of a client's output as {name: value}; other lines skipped."""
    out = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            try:
                out[parts[0]] = float(parts[1])
            except ValueError:
                pass
    return out
