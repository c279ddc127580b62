"""First run: from a fresh clone to the first answered ApiVersions, through ``make run``.

    python3 bench/first_run.py [--keep DIR]

Prints ``first_run_clone_to_apiversions <s> s`` (and the install part of it). What it measures:
a copy of the repository's tracked files (what ``git clone`` gives: no .venv, no data) in a
temporary directory, then ``make run`` there: a new venv, ``pip install -e .`` (the broker's own
dependencies only, no test extras), the broker starting on a free port; the clock stops at the
first ApiVersions it answers. pip uses this machine's pip configuration and cache, so with a
warm cache this is the time a developer sees on a second clone; a machine that has never
downloaded the wheels adds their download time (about 15 MB).
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def clone_tracked(src: Path, dest: Path) -> None:
    """The tracked files of ``src`` as they are in its work tree (a clone with uncommitted edits)."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=src, capture_output=True, check=True).stdout
    for name in names.decode().split("\0"):
        if not name or not (src / name).exists():
            continue
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / name, dest / name, follow_symlinks=False)


def probe(bootstrap: str) -> bool:
    """One ApiVersions v0 over a plain socket (stdlib only: the clone's venv may not exist yet)."""
    import socket
    import struct
    host, _, port = bootstrap.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=2) as s:
            client = b"first-run"
            body = struct.pack(">hhih", 18, 0, 1, len(client)) + client
            s.sendall(struct.pack(">i", len(body)) + body)
            size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
            resp = s.recv(size, socket.MSG_WAITALL)
            corr, err = struct.unpack(">ih", resp[:6])
            return corr == 1 and err == 0
    except (OSError, struct.error):
        return False


def first_run(workdir: Path, timeout: float = 600.0, serving=None) -> dict[str, float]:
    """Clone into ``workdir``/hourglass, ``make run`` there; seconds to the first ApiVersions.
    ``serving(ready_text)``, when given, runs while that broker serves (the ready file's text:
    its listeners and ``service NAME URL`` lines), before it is stopped."""
    clone = workdir / "hourglass"
    clone.mkdir(parents=True)
    ready = workdir / "ready"
    t0 = time.monotonic()
    clone_tracked(ROOT, clone)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "MAKEFLAGS", "MFLAGS")}
    proc = subprocess.Popen(
        # free ports for the Kafka listener and the HTTP services (the shipped config's 9092,
        # 8081 and 8080 may be taken by a broker the user already runs)
        ["make", "run", f"RUN_ARGS=--port 0 --data-dir {workdir / 'data'} --ready-file {ready} "
                        "--override schema.registry.listeners=http://127.0.0.1:0 "
                        "--override console.listeners=http://127.0.0.1:0"],
        cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        installed = None
        deadline = t0 + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"make run exited {proc.returncode}:\n{proc.stdout.read().decode()}")
            if installed is None and (clone / ".venv" / ".hourglass-run").exists():
                installed = time.monotonic()
            if ready.exists() and ready.read_text().strip() and probe(ready.read_text().split()[0]):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"no ApiVersions answer {timeout:.0f} s after the clone")
            time.sleep(0.05)
        t1 = time.monotonic()
        if serving is not None:
            serving(ready.read_text())
        return {"first_run_clone_to_apiversions": t1 - t0,
                "first_run_install": (installed or t1) - t0}
    finally:
        # make and the broker it started are one process group of ours
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        proc.stdout.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", help="clone into this (new) directory and leave it")
    args = ap.parse_args(argv)
    if args.keep:
        figures = first_run(Path(args.keep))
    else:
        with tempfile.TemporaryDirectory(prefix="hg-first-run-") as tmp:
            figures = first_run(Path(tmp))
    for name, value in figures.items():
        print(f"{name} {value:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
