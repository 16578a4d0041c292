"""Worker process for a CS303 ``AI`` file: ``python -m clients.match.cs303_worker PATH``.

JSON lines on stdin/stdout.  Requests: ``{"op": "load", "seed": s}`` (seed ``random`` and ``numpy.random``, import the file),
``{"op": "new", "color": -1|1, "time_out": s}`` (build ``AI(8, color, time_out)``),
``{"op": "go", "board": 8x8 list}``.  Every request gets one reply line; failures are
``{"error": text}``.

``go`` runs the way the course judge runs it (judges.md section 1): on the main thread, under a
SIGALRM timer of ``time_out`` seconds that raises a ``TimeoutError`` subclassing
``AssertionError`` (as ``timeout_decorator`` does), on a copy of the board; the reply carries
``candidate_list`` whether ``go`` returned or was interrupted.  The user's own prints would break
the JSON stream, so the real stdout is kept for replies and fd 1 is pointed at stderr.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import sys
import time
import traceback


class JudgeTimeout(AssertionError):
    """What the judge's timer raises inside ``go``."""


def _on_alarm(signum, frame):
    raise JudgeTimeout("Timed Out")


def _load(path: str):
    directory = os.path.dirname(os.path.abspath(path))
    if directory not in sys.path:
        sys.path.insert(0, directory)
    spec = importlib.util.spec_from_file_location("cs303_player", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not hasattr(module, "AI"):
        raise ImportError(f"{path} defines no class AI")
    return module


def _candidates(ai) -> list:
    out = []
    for c in list(getattr(ai, "candidate_list", []) or []):
        try:
            out.append([int(c[0]), int(c[1])])
        except (TypeError, ValueError, IndexError):
            out.append(repr(c))  # the referee rejects it if it is the decision
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path = args[0]
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    signal.signal(signal.SIGALRM, _on_alarm)
    module = None
    ai = None
    time_out = 5.0

    def reply(obj: dict) -> None:
        replies.write(json.dumps(obj) + "\n")
        replies.flush()

    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
        except json.JSONDecodeError:
            reply({"error": f"bad request {line[:100]!r}"})
            continue
        op = req.get("op")
        try:
            if op == "load":
                # Seeded before the import, so that a seed the file sets itself (the template's
                # random.seed(0)) still wins, as on the platform, and an unseeded AI is
                # reproducible from the game's seed.
                import random

                import numpy as np

                seed = int(req.get("seed", 0))
                random.seed(seed)
                np.random.seed(seed)
                module = _load(path)
                reply({"ok": True})
            elif op == "new":
                import numpy as np  # noqa: F401  (the judge's process has numpy loaded)

                time_out = float(req.get("time_out", 5.0))
                ai = module.AI(8, int(req["color"]), time_out)
                reply({"ok": True})
            elif op == "go":
                import numpy as np

                board = np.array(req["board"], dtype=int)
                timed_out = False
                t0 = time.monotonic()
                signal.setitimer(signal.ITIMER_REAL, time_out)
                try:
                    try:
                        ai.go(np.copy(board))
                    finally:
                        signal.setitimer(signal.ITIMER_REAL, 0)
                except JudgeTimeout:  # also when the alarm lands while it is being cancelled
                    timed_out = True
                reply({"candidates": _candidates(ai), "timed_out": timed_out,
                       "elapsed": time.monotonic() - t0})
            else:
                reply({"error": f"unknown op {op!r}"})
        except Exception as e:
            reply({"error": f"{type(e).__name__}: {e}\n"
                            + "".join(traceback.format_exc(limit=4).splitlines(True)[-4:])})
    return 0


if __name__ == "__main__":
    sys.exit(main())
