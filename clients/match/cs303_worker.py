"""Worker process for a CS303 ``AI`` file:
``python -m clients.match.cs303_worker PATH [--memory-mb MB]``.

JSON lines on stdin/stdout.  Requests: ``{"op": "load", "seed": s}`` (seed ``random`` and
``numpy.random``, import the file), ``{"op": "new", "color": -1|1, "time_out": s}`` (build
``AI(8, color, time_out)``),
``{"op": "go", "board": 8x8 list}``.  Every request gets one reply line; failures are
``{"error": text}``, with ``"memory": true`` when the error is a ``MemoryError``.

``go`` runs the way the course judge runs it, through :mod:`clients.cs303.judge` (the emulation
the local checker uses too): on the main thread, under a SIGALRM timer of ``time_out`` seconds
whose exception subclasses ``AssertionError`` (as ``timeout_decorator``'s does), on a copy of the
board; the reply carries ``candidate_list`` whether ``go`` returned or was interrupted.  The
user's own prints would break the JSON stream, so the real stdout is kept for replies and fd 1
is pointed at ``/dev/null``, where the platform sends them; stderr is left to the referee, which
reads the end of it when the process dies.

The memory limit (``--memory-mb``, the course's 100 MB by default in ``othello-match``) is an
``RLIMIT_DATA`` of what the process holds once the interpreter, numpy and the judge emulation are
loaded, plus MB * 2**20 bytes, set before the file is imported.  Why not ``RLIMIT_AS`` at 100
MB: importing numpy alone maps about 100 MB of address space (140 MB with OpenBLAS's second
thread on two cores, more with more cores), so no submission could even start.  Why the data
segment and not the address space over a baseline: the address space also counts what costs no
memory (shared libraries mapped by an import, 64 MB of address space reserved by each new
thread's malloc arena), while ``RLIMIT_DATA`` (Linux 4.7 and later) counts the private writable
mappings, where numpy arrays, Python objects and thread stacks live.  An allocation past it
raises ``MemoryError`` in the submission, as the platform's judge reports it.
"""

from __future__ import annotations

import json
import os
import random
import sys
import traceback
from typing import Any

import numpy as np

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
# The exit status when a MemoryError leaves no room even for its reply; the referee reads it as
# the memory limit exceeded.
MEMORY_EXIT = 86
# Freed on a MemoryError, so that the reply that reports it can still be written.
RESERVE_BYTES = 1 << 20


def data_bytes() -> int | None:
    """The process's data segment as ``RLIMIT_DATA`` counts it (``VmData``); None off Linux."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def limit_memory(mb: float) -> dict:
    """Cap the data segment at what it holds now plus ``mb`` MB (2**20 bytes each): the
    submission's own allocations count, the worker's start-up does not.  What was set, or why
    nothing was."""
    try:
        import resource
    except ImportError:
        return {"applied": False, "why": "no resource module on this platform"}
    base = data_bytes()
    if base is None:
        return {"applied": False, "why": "no /proc/self/status to measure the data segment"}
    limit = base + int(mb * 2**20)
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY and limit > hard:
        return {"applied": False, "why": f"the hard RLIMIT_DATA ({hard} bytes) is lower"}
    try:
        resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    except (ValueError, OSError) as e:
        return {"applied": False, "why": f"setrlimit failed: {e}"}
    return {"applied": True, "mb": mb, "baseline": base, "limit": limit}


def _error_text(e: BaseException) -> str:
    """The exception and the innermost lines of its traceback: enough for a forfeit detail."""
    lines = "".join(traceback.format_exception(type(e), e, e.__traceback__, limit=4))
    return f"{type(e).__name__}: {e}\n" + "".join(lines.splitlines(True)[-4:])


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    path = args[0]
    memory_mb = float(args[args.index("--memory-mb") + 1]) if "--memory-mb" in args else None
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    ai_class: Any = None
    ai: Any = None
    time_out = DEFAULT_TIME_OUT
    reserve: bytearray | None = bytearray(RESERVE_BYTES)
    memory = limit_memory(memory_mb) if memory_mb is not None else {"applied": False}

    def reply(obj: dict) -> None:
        replies.write(json.dumps(obj) + "\n")
        replies.flush()

    def out_of_memory(e: BaseException) -> None:
        nonlocal reserve
        reserve = None
        try:
            reply({"error": _error_text(e), "memory": True})
        except MemoryError:
            os._exit(MEMORY_EXIT)

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
                seed = int(req.get("seed", 0))
                random.seed(seed)
                np.random.seed(seed)
                ai_class = load_ai_class(path, MODULE_NAME)
                reply({"ok": True, "memory": memory})
            elif op == "new":
                time_out = float(req.get("time_out", DEFAULT_TIME_OUT))
                ai = ai_class(BOARD_SIZE, int(req["color"]), time_out)
                reply({"ok": True})
            elif op == "go":
                board = np.array(req["board"], dtype=int)
                out = judge_go(ai, board, time_out, DECORATOR_MESSAGE)
                if isinstance(out.exception, MemoryError):
                    out_of_memory(out.exception)
                    continue
                if out.exception is not None:
                    reply({"error": _error_text(out.exception)})
                    continue
                reply({"candidates": read_candidates(ai), "timed_out": out.timed_out,
                       "elapsed": out.elapsed})
            else:
                reply({"error": f"unknown op {op!r}"})
        except MemoryError as e:
            out_of_memory(e)
        except Exception as e:
            reply({"error": _error_text(e)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
