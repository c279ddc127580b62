"""The wheel a user builds (``python -m build``: an sdist, then the wheel from it) installs into a
clean venv (with uv, which resolves the wheel's dependencies as pip does and links them from its
cache: pip unpacks about 450 MB into each new venv, 38 s here), ``hourglass serve`` starts from it outside the repository and answers ApiVersions,
and every file a package ships (any tracked file under a package, .py or not) is in it."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_first_run", ROOT / "bench" / "first_run.py")
first_run = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(first_run)


NOT_SHIPPED = {"tests", "bench", "scripts", "docs", "docker", "config"}


def shipped_files() -> set[str]:
    """Tracked files under every top-level Python package of the repository (a directory with
    an ``__init__.py``, tests and tools aside): a new package missing from pyproject.toml's
    ``packages.find.include``, or an asset missing from ``package-data``, shows up here."""
    names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    out = set()
    for n in names:
        top = n.split("/", 1)[0]
        if "/" in n and top not in NOT_SHIPPED and (ROOT / top / "__init__.py").exists() and (ROOT / n).exists():
            out.add(n)
    return out


def test_wheel_installs_in_a_clean_venv_and_serves(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    first_run.clone_tracked(ROOT, src)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    r = subprocess.run([sys.executable, "-m", "build", "--outdir", str(tmp_path / "dist"), str(src)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    wheel, = (tmp_path / "dist").glob("hourglass-*.whl")
    in_wheel = set(zipfile.ZipFile(wheel).namelist())
    missing = sorted(shipped_files() - in_wheel)
    assert not missing, f"tracked files under packages left out of the wheel (package-data?): {missing}"

    venv = tmp_path / "venv"
    uv = str(Path(sys.executable).with_name("uv"))
    # uv reads no pip configuration: the CA bundle pip is told to trust is uv's too
    uv_env = {**env, **({"SSL_CERT_FILE": env["PIP_CERT"]} if env.get("PIP_CERT") else {})}
    subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(venv)], check=True, env=uv_env)
    r = subprocess.run([uv, "pip", "install", "-q", "--python", str(venv / "bin" / "python"), str(wheel)],
                       capture_output=True, text=True, env=uv_env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]

    run = tmp_path / "run"  # not the repository: everything comes from the installed wheel
    run.mkdir()
    ready = run / "ready"
    proc = subprocess.Popen([str(venv / "bin" / "hourglass"), "serve", "--port", "0", "--data-dir", str(run / "data"),
                             "--ready-file", str(ready)], cwd=run, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not (ready.exists() and ready.read_text().strip()):
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
            assert time.monotonic() < deadline, "no ready file"
            time.sleep(0.05)
        bootstrap = ready.read_text().split()[0]
        r = subprocess.run([str(venv / "bin" / "hourglass"), "probe", "-b", bootstrap], capture_output=True,
                           text=True, cwd=run, env=env, timeout=30)
        assert r.returncode == 0 and "answers" in r.stdout, r.stderr
        r = subprocess.run([str(venv / "bin" / "python"), "-c", "import broker, hourglass; print(broker.__file__)"],
                           capture_output=True, text=True, cwd=run, env=env)
        assert r.stdout.startswith(str(venv)), r.stdout
    finally:
        proc.terminate()
        assert proc.wait(30) == 0
