"""``tools/heartbeat.py``: what ``make setup`` runs its quiet installs under, so that a newcomer
sees a line at least every 10 s (the interval is a parameter here; no clock is asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parent.parent / "tools" / "heartbeat.py"


def test_it_says_the_command_still_works_until_it_ends_then_its_time(tmp_path):
    flag = tmp_path / "go"
    # the command waits for the test: it ends only after the test has seen two beats
    wait = f"import os, time\nwhile not os.path.exists({str(flag)!r}): time.sleep(0.01)"
    proc = subprocess.Popen([sys.executable, str(TOOL), "setup: waiting", "--every", "0.05",
                             "--", sys.executable, "-c", wait],
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    lines = [proc.stderr.readline().rstrip("\n")]
    while sum("still working" in x for x in lines) < 2:
        lines.append(proc.stderr.readline().rstrip("\n"))
    flag.touch()
    _, rest = proc.communicate(timeout=60)
    lines += rest.splitlines()
    assert proc.returncode == 0
    assert lines[0] == "setup: waiting…"
    assert all(x.startswith("setup: waiting: still working (") for x in lines[1:-1])
    assert lines[-1].startswith("setup: waiting: done in ")


def test_it_exits_with_the_commands_status_and_says_it_failed():
    r = subprocess.run([sys.executable, str(TOOL), "x", "--", sys.executable, "-c",
                        "raise SystemExit(3)"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 3 and "x: failed (exit status 3)" in r.stderr
    r = subprocess.run([sys.executable, str(TOOL), "x"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and "no command given" in r.stderr
