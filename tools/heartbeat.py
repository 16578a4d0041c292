"""Run a command and say that it is still working: ``python3 tools/heartbeat.py LABEL -- CMD``.

``make setup`` installs packages quietly (pip's own output is pages of noise) and a quiet
install of numba, torch and the dev tools takes minutes in which nothing showed.  This prints
``LABEL: still working (20 s)`` to stderr every ``--every`` seconds (10 by default) while the
command runs, then one line with its time, and exits with the command's status.  Standard
library only: it runs before the virtual environment exists.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="run a command, saying every few seconds that it "
                                             "is still working")
    ap.add_argument("label", help="what the command does, as the lines name it")
    ap.add_argument("--every", type=float, default=10.0,
                    help="seconds between two lines (default 10)")
    ap.add_argument("command", nargs="*", help="the command, after --")
    argv = sys.argv[1:] if argv is None else argv
    if "--" not in argv:
        ap.error("no command given (put it after --)")
    cut = argv.index("--")
    args = ap.parse_args(argv[:cut])
    command = argv[cut + 1:]
    if not command:
        ap.error("no command given (put it after --)")
    t0 = time.monotonic()
    print(f"{args.label}…", file=sys.stderr, flush=True)
    proc = subprocess.Popen(command)
    done = threading.Event()

    def beat() -> None:
        while not done.wait(args.every):
            print(f"{args.label}: still working ({time.monotonic() - t0:.0f} s)",
                  file=sys.stderr, flush=True)

    threading.Thread(target=beat, daemon=True).start()
    rc = proc.wait()
    done.set()
    outcome = "done" if rc == 0 else f"failed (exit status {rc})"
    print(f"{args.label}: {outcome} in {time.monotonic() - t0:.0f} s", file=sys.stderr,
          flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
