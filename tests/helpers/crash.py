"""Kill -9 a Python process in the middle of a run of acknowledged writes."""
from __future__ import annotations

import os
import subprocess
import sys


def acked_before_kill_9(code: str, after: int = 40) -> int:
    """Run ``code`` (it prints one number per acknowledged write, counting from 0) in a fresh
    interpreter, SIGKILL it once it has acknowledged ``after`` writes, and return the last
    acknowledged number: everything up to it must be found on disk."""
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                         env={**os.environ, "PYTHONPATH": os.getcwd()})
    acked = -1
    for line in p.stdout:
        acked = int(line)
        if acked >= after:
            break
    p.kill()
    p.wait()
    p.stdout.close()
    return acked
