"""The generated config reference matches the schemas the broker parses."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_config_reference_is_up_to_date():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_config_reference.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
