"""``make run`` on a fresh clone: it installs only what the broker needs, and the broker answers
ApiVersions within seconds (the figure itself is bench/first_run.py's; the bound here is one a
fresh machine meets with a cold pip cache)."""
from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_first_run", ROOT / "bench" / "first_run.py")
first_run = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(first_run)


def test_make_run_from_a_clean_clone_answers_apiversions_without_the_test_extras(tmp_path):
    figures = first_run.first_run(tmp_path, timeout=300)
    print(f"first_run_clone_to_apiversions {figures['first_run_clone_to_apiversions']:.1f} s")
    venv_python = tmp_path / "hourglass" / ".venv" / "bin" / "python"
    # the broker's dependencies are there; the test extras (pytest, pyspark, ...) are not
    r = subprocess.run([str(venv_python), "-c", "import uvloop, confluent_kafka, cryptography"], capture_output=True)
    assert r.returncode == 0, r.stderr
    for heavy in ("pyspark", "pytest", "matplotlib", "kafka", "aiokafka"):
        r = subprocess.run([str(venv_python), "-c", f"import {heavy}"], capture_output=True)
        assert r.returncode != 0, f"make run installed {heavy}"
    assert not (tmp_path / "hourglass" / ".venv" / ".hourglass-installed").exists()
