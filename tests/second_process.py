"""Run a probe script in a fresh Python process (numba cache tests: the second process must load
the kernels the first one compiled)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run_probe(code: str, *args: str) -> dict:
    """The JSON object the probe prints on its last line (``args``: its ``sys.argv[1:]``)."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                       env=env, cwd=REPO, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])
