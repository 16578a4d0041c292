"""Worker process for a CS303 ``AI`` file: ``python -m clients.match.cs303_worker PATH``.

JSON lines on stdin/stdout.  Requests: ``{"op": "load", "seed": s}`` (seed ``random`` and
``numpy.random``, import the file), ``{"op": "new", "color": -1|1, "time_out": s}`` (build
``AI(8, color, time_out)``),
``{"op": "go", "board": 8x8 list}``.  Every request gets one reply line; failures are
``{"error": text}``.

``go`` runs the way the course judge runs it, through :mod:`clients.cs303.judge` (the emulation
the local checker uses too): on the main thread, under a SIGALRM timer of ``time_out`` seconds
whose exception subclasses ``AssertionError`` (as ``timeout_decorator``'s does), on a copy of the
board; the reply carries ``candidate_list`` whether ``go`` returned or was interrupted.  The
user's own prints would break the JSON stream, so the real stdout is kept for replies and fd 1
is pointed at stderr.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any

from clients.cs303.judge import (
    BOARD_SIZE,
    DECORATOR_MESSAGE,
    DEFAULT_TIME_OUT,
    judge_go,
    load_ai_class,
    read_candidates,
)

# The module name the student's file is imported under (its ``__name__``).
MODULE_NAME = "cs303_player"


def _error_text(e: BaseException) -> str:
    """The exception and the innermost lines of its traceback: enough for a forfeit detail."""
    lines = "".join(traceback.format_exception(type(e), e, e.__traceback__, limit=4))
    return f"{type(e).__name__}: {e}\n" + "".join(lines.splitlines(True)[-4:])


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path = args[0]
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    ai_class: Any = None
    ai: Any = None
    time_out = DEFAULT_TIME_OUT

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
                ai_class = load_ai_class(path, MODULE_NAME)
                reply({"ok": True})
            elif op == "new":
                time_out = float(req.get("time_out", DEFAULT_TIME_OUT))
                ai = ai_class(BOARD_SIZE, int(req["color"]), time_out)
                reply({"ok": True})
            elif op == "go":
                import numpy as np

                board = np.array(req["board"], dtype=int)
                out = judge_go(ai, board, time_out, DECORATOR_MESSAGE)
                if out.exception is not None:
                    reply({"error": _error_text(out.exception)})
                    continue
                reply({"candidates": read_candidates(ai), "timed_out": out.timed_out,
                       "elapsed": out.elapsed})
            else:
                reply({"error": f"unknown op {op!r}"})
        except Exception as e:
            reply({"error": _error_text(e)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
